"""The typed specification of a sweep, and an explicit kernel that is never switched behind the user's back."""

import inspect
from typing import Any, get_args, get_origin

import pytest
from typer.testing import CliRunner
from typing_extensions import Unpack, get_type_hints, is_typeddict

from netsweep_jax.sweep.cli.app import app
from netsweep_jax.sweep.core.axes import NUMERIC_AXES
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.core.keywords import accepted_keywords
from netsweep_jax.sweep.core.schema import DEFAULTS, FITTABLE, SOLVABLE
from netsweep_jax.sweep.core.values import coerce_axis
from netsweep_jax.sweep.engine.evaluate import evaluate
from netsweep_jax.sweep.engine.grid import make_grid
from netsweep_jax.sweep.engine.grid_options import GridOptions, SweepOptions
from netsweep_jax.sweep.io.job import run_grid

SETTINGS = [
    "collective",
    "bucketing",
    "intra_bandwidth",
    "dtype",
    "compressor",
    "store",
    "reduce",
    "reduce_table",
    "iterations_factor",
    "codec_cost",
    "gpu",
    "precision",
    "batch",
    "seq_len",
    "fabric",
    "oversubscription",
]
NAMED = {
    make_grid: {"model"},
    evaluate: {"model", "bandwidth", "vars", "block_configs", "kernel"},
}  # in the signature
OWN = {
    make_grid: {"variables", "iteration_time"},
    evaluate: {"vars", "block_configs", "kernel", "iteration_time"},
}  # beyond every axis and setting


def options_of(function):
    """The TypedDict of ``function``'s ``**options: Unpack[...]`` (PEP 692)."""
    hint = get_type_hints(function, include_extras=True)["options"]
    assert get_origin(hint) is Unpack
    (options,) = get_args(hint)
    assert is_typeddict(options) and not options.__required_keys__
    return options


@pytest.mark.parametrize("function", [make_grid, evaluate])
def test_every_axis_and_setting_is_a_typed_keyword(function):
    """The accepted keywords are the named ones and the TypedDict's keys: every axis and setting,
    each typed for mypy, none twice, and exactly the ones refuse_unknown_keywords lets through."""
    params = inspect.signature(function).parameters
    options = options_of(function)
    named = {n for n, p in params.items() if p.kind is not p.VAR_KEYWORD}
    assert named == NAMED[function] and not named & set(options.__annotations__)
    assert set(options.__annotations__) | named == {"model", *NUMERIC_AXES, *SETTINGS, *OWN[function]}
    assert accepted_keywords(function) == [n for n in params if n in named] + list(options.__annotations__)
    for name, hint in get_type_hints(options).items():
        assert hint is not Any, name
    for name in named - {"model"}:
        assert params[name].kind is inspect.Parameter.KEYWORD_ONLY
        assert params[name].annotation is not inspect.Parameter.empty


def test_evaluate_and_make_grid_share_one_specification():
    assert options_of(evaluate) is SweepOptions and options_of(make_grid) is GridOptions
    shared, grid = get_type_hints(SweepOptions), get_type_hints(GridOptions)
    assert {k: grid[k] for k in shared} == shared and set(grid) - set(shared) == {"bandwidth", "variables"}
    assert "bandwidth" not in SweepOptions.__annotations__  # evaluate names it first, its own keyword
    # Not given: a fabric preset's NICs' rate, else the schema's default, as sweep grid without --bw (it was
    # required, so evaluate(model, fabric=...) was a TypeError where the command took the preset's rate)
    assert inspect.signature(evaluate).parameters["bandwidth"].default is None


def test_defaults_come_from_the_registry():
    grid = make_grid("resnet50")
    default = make_grid("resnet50", **{name: None for name in NUMERIC_AXES})
    for name, spec in NUMERIC_AXES.items():
        assert (
            grid.values[name].tolist()
            == default.values[name].tolist()
            == coerce_axis(name, spec.default).tolist()
        )
    assert grid.values["fusion_buffer"].tolist() == [64.0]
    assert [p.model for p in grid.profiles] == [DEFAULTS.model] == [p.model for p in make_grid().profiles]
    assert grid.collectives == (DEFAULTS.collective,) and grid.bucketings == (DEFAULTS.bucketing,)
    assert grid.intra_bandwidth == DEFAULTS.intra_bandwidth and grid.dtype == DEFAULTS.dtype
    assert [c.name for c in grid.compressors] == [DEFAULTS.compressor]
    assert inspect.signature(evaluate).parameters["kernel"].default == DEFAULTS.kernel
    assert set(SOLVABLE) == {n for n, s in NUMERIC_AXES.items() if s.search} and "utilization" in FITTABLE


@pytest.mark.parametrize(
    "call",
    [
        lambda: make_grid("resnet50", bandwith=10),
        lambda: evaluate("resnet50", bandwidth=10, variables="comm_time"),
        lambda: evaluate("resnet50", bandwidth=10, speed=3),
    ],
)
def test_unknown_keyword_is_an_input_error(call):
    with pytest.raises(InputError, match="unknown keyword") as e:
        call()
    assert "codec_cost" in str(e.value) and "fusion_buffer" in str(e.value)  # it lists what it takes


def test_bandwidth_not_given_is_the_commands_default():
    default = coerce_axis("bandwidth", NUMERIC_AXES["bandwidth"].default).tolist()
    assert make_grid("resnet50").values["bandwidth"].tolist() == default
    assert (
        evaluate("resnet50", nodes=2).bandwidth.values.tolist()
        == make_grid("resnet50").values["bandwidth"].tolist()
    )


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
    result = CliRunner().invoke(
        app,
        [
            "grid",
            "--bw",
            "10",
            "--compressor",
            "topk:0.01",
            "--kernel",
            "pallas",
            "--out",
            str(out),
            "--no-compile-cache",
        ],
    )
    assert result.exit_code == 2
    assert "--kernel pallas: the Pallas kernel does not model compression" in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("settings", [dict(compressor="topk:0.01"), dict(bucketing="fsdp")])
def test_run_grid_refuses_explicit_pallas_before_any_file_is_made(tmp_path, settings):
    """The Python path (run_grid) refuses as the CLI does: no cube, no .partial, no directory."""
    grid = make_grid("gpt2" if "bucketing" in settings else "resnet50", bandwidth=10, **settings)
    out = tmp_path / "sub" / "c.h5"
    with pytest.raises(InputError, match="kernel") as e:
        run_grid(grid, out, command="test", kernel="pallas")
    assert e.value.param == "kernel"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("kernel", [None, 3, "cuda"])
def test_a_kernel_that_is_not_a_name_is_refused(kernel):
    # #27: kernel=None was an AttributeError.
    with pytest.raises(InputError, match="must be one of auto, xla, pallas, pallas-interpret") as e:
        evaluate("resnet50", bandwidth=10, kernel=kernel)
    assert e.value.param == "kernel"


def test_compiled_pallas_without_a_gpu_plugin_is_refused_before_any_file(tmp_path):
    # #27: --kernel pallas on a CPU ended in JAX's traceback ("Only interpret mode is supported on CPU").
    from netsweep_jax.sweep.engine.dispatch import _gpu_installed

    if _gpu_installed():
        pytest.skip("this JAX has a GPU plugin: compiled Pallas may run here")
    out = tmp_path / "sub" / "c.h5"
    result = CliRunner().invoke(app, ["grid", "--bw", "10", "--kernel", "pallas", "--out", str(out)])
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
    assert "--kernel pallas: compiled Pallas kernels run on a GPU" in result.output
    assert list(tmp_path.iterdir()) == []
