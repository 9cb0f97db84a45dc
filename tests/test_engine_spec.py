"""The typed specification of a sweep, and an explicit kernel that is never switched behind the user's back."""

import inspect

import pytest
from typer.testing import CliRunner

from netsweep_jax.sweep.cli.app import app
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.core.schema import DEFAULTS, FITTABLE, NUMERIC_AXES, SOLVABLE
from netsweep_jax.sweep.engine.evaluate import evaluate
from netsweep_jax.sweep.engine.grid import make_grid


@pytest.mark.parametrize("function", [make_grid, evaluate])
def test_every_axis_and_setting_is_a_typed_keyword(function):
    params = inspect.signature(function).parameters
    for name in list(NUMERIC_AXES) + ["collective", "bucketing", "intra_bandwidth", "dtype", "compressor", "store",
                                      "reduce", "reduce_table", "iterations_factor", "codec_cost"]:
        assert params[name].kind is inspect.Parameter.KEYWORD_ONLY
        assert params[name].annotation is not inspect.Parameter.empty
    assert not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def test_defaults_come_from_the_registry():
    params = inspect.signature(make_grid).parameters
    assert params["collective"].default == DEFAULTS.collective
    assert params["intra_bandwidth"].default == DEFAULTS.intra_bandwidth
    assert all(params[name].default == spec.default for name, spec in NUMERIC_AXES.items())
    assert make_grid("resnet50").values["fusion_buffer"].tolist() == [64.0]
    assert set(SOLVABLE) == {n for n, s in NUMERIC_AXES.items() if s.search} and "utilization" in FITTABLE


@pytest.mark.parametrize("call", [lambda: make_grid("resnet50", bandwith=10),
                                  lambda: evaluate("resnet50", bandwidth=10, variables="comm_time"),
                                  lambda: evaluate("resnet50", bandwidth=10, speed=3)])
def test_unknown_keyword_is_an_input_error(call):
    with pytest.raises(InputError, match="unknown keyword"):
        call()


@pytest.mark.parametrize("kernel", ["pallas", "pallas-interpret"])
@pytest.mark.parametrize("settings", [dict(compressor="topk:0.01"), dict(vars="time_to_accuracy")])
def test_explicit_pallas_is_refused_where_it_cannot_run(kernel, settings):
    with pytest.raises(InputError, match="kernel .*does not model") as e:
        evaluate("resnet50", bandwidth=10, kernel=kernel, **settings)
    assert e.value.param == "kernel"


def test_fsdp_with_explicit_pallas_is_refused():
    with pytest.raises(InputError, match="FSDP"):
        evaluate("gpt2", bandwidth=10, bucketing="fsdp", kernel="pallas")


def test_auto_still_runs_such_a_sweep():
    ds = evaluate("resnet50", bandwidth=10, compressor="none,topk:0.01", kernel="auto")
    assert ds.time_to_accuracy.sel(compressor="none").item() == pytest.approx(1.0)


def test_cli_refuses_before_any_file_is_made(tmp_path):
    out = tmp_path / "c.h5"
    result = CliRunner().invoke(app, ["grid", "--bw", "10", "--compressor", "topk:0.01", "--kernel", "pallas",
                                      "--out", str(out), "--no-compile-cache"])
    assert result.exit_code == 2
    assert "--kernel pallas: the Pallas kernel does not model compression" in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []
