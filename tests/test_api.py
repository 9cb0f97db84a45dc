"""The public API: exactly the curated names, each typed, documented and working on a tiny input."""

import dataclasses
import inspect
import json
import re
import subprocess
import sys

import numpy as np
import pytest

import netsweep_jax.sweep as sweep
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.io.cube import write_dataset
from netsweep_jax.sweep.model.fabrics import FABRICS

PUBLIC = {
    "evaluate",
    "solve",
    "calibrate",
    "validate",
    "compare",
    "open_cube",
    "Profile",
    "load_profile",
    "builtin_profile",
    "builtin_names",
    "evaluate_layouts",
    "plan",
    "InputError",
    "Damaged",
}
FUNCTIONS = sorted(PUBLIC - {"Profile", "InputError", "Damaged"})


def test_dir_lists_exactly_the_public_names():
    assert set(dir(sweep)) == PUBLIC | {"__version__"}
    assert set(sweep.__all__) == PUBLIC | {"__version__"}
    for name in PUBLIC:
        assert getattr(sweep, name) is not None
    with pytest.raises(AttributeError):
        sweep.make_grid  # noqa: B018  (internal: not exported)
    # What the API raises is importable from it (a hunt: catching one took a private module's import).
    with pytest.raises(sweep.InputError, match="bandwidth"):
        sweep.evaluate("resnet50", bandwidth=-1)
    assert issubclass(sweep.InputError, ValueError) and issubclass(sweep.Damaged, RuntimeError)


def test_importing_the_package_does_not_import_jax():
    code = (
        "import sys, netsweep_jax.sweep as s; dir(s); s.Profile; s.load_profile; s.builtin_names(); "
        "print(sorted(m for m in ('jax', 'jaxlib', 'optax', 'h5py', 'matplotlib', 'typer') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("name", FUNCTIONS)
def test_typed_documented_keyword_only(name):
    fn = getattr(sweep, name)
    sig = inspect.signature(fn)
    doc = inspect.getdoc(fn)
    assert doc and (name == "builtin_names" or "Returns" in doc or "returns" in doc.lower()), name
    assert sig.return_annotation is not inspect.Signature.empty, name
    params = list(sig.parameters.values())
    for p in params:
        assert p.annotation is not inspect.Parameter.empty, (name, p.name)
    # at most the subject (model, file, name) positionally; every option by keyword
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    assert len(positional) <= 1, (name, [p.name for p in positional])


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """A small measurements file made by the model itself: two frameworks on two networks, nodes 2..8."""
    ds = sweep.evaluate(
        "resnet50",
        bandwidth=[10, 25],
        nodes=[2, 4, 8],
        gpus_per_node=1,
        utilization=[0.3, 0.6],
        dtype="float64",
    )
    lines = ["framework,network,nodes,gpus_per_node,bandwidth,scaling_factor"]
    for framework, network, u in (("a", "tcp", 0.3), ("b", "ib", 0.6)):
        for n in (2, 4, 8):
            for bw in (10, 25):
                v = float(ds.scaling_factor.sel(nodes=n, bandwidth=bw, utilization=u).squeeze())
                lines.append(f"{framework},{network},{n},1,{bw},{v:.6f}")
    path = tmp_path_factory.mktemp("api") / "measured.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_evaluate_solve_and_open_cube(tmp_path):
    ds = sweep.evaluate("resnet50", bandwidth=[10, 100], nodes=2, dtype="float64")
    assert ds.scaling_factor.dims[0] == "model" and ds.sizes["bandwidth"] == 2
    need = sweep.solve("resnet50", target=0.9, axis="bandwidth", nodes=2, dtype="float64")
    bw = float(need.required_bandwidth.squeeze())
    assert int(need.status.squeeze()) == 0 and bw > 0
    at = sweep.evaluate("resnet50", bandwidth=bw, nodes=2, dtype="float64")
    assert float(at.scaling_factor.squeeze()) >= 0.9
    cube = tmp_path / "need.h5"
    write_dataset(need, cube, command="sweep need")
    with sweep.open_cube(cube) as back:
        assert float(back.required_bandwidth.squeeze()) == bw and back.attrs["solved_axis"] == "bandwidth"


def test_iteration_time_is_the_commands_option(tmp_path):
    # A hunt: --iteration-time had no keyword in Python (an unknown keyword, and builtin_profile refuses a
    # transformer, so its compute could not be put on other hardware from Python at all).
    from helpers import invoke

    r = invoke("grid", "-q", "--model", "gpt2-xl", "--iteration-time", "0.5", "--bw", "10,100", "--out",
               tmp_path / "c.h5")  # fmt: skip
    assert r.exit_code == 0, r.output
    ds = sweep.evaluate("gpt2-xl", bandwidth=[10, 100], iteration_time=np.float32(0.5))
    with sweep.open_cube(tmp_path / "c.h5") as cube:
        assert np.array_equal(ds.scaling_factor.values, cube.scaling_factor.values)
    assert ds.attrs["iteration_time_single_gpu_s"].tolist() == [0.5]
    solved = sweep.solve("gpt2-xl", target=0.9, axis="bandwidth", iteration_time=0.5)
    at = sweep.evaluate("gpt2-xl", bandwidth=solved.required_bandwidth.values.ravel(), iteration_time=0.5)
    assert float(at.scaling_factor.min()) >= 0.9 - 1e-6
    with pytest.raises(InputError, match=r"^iteration_time 0: must be a number of seconds in \[1e-6, 1e4\]$"):
        sweep.evaluate("resnet50", iteration_time=0)


def test_calibrate_recovers_the_utilization(measured, tmp_path):
    out = tmp_path / "fit.json"
    result = sweep.calibrate(measured, per={"utilization": "network"}, train="nodes <= 4", out=out)
    fitted = {p["group"]: p["value"] for p in result["fitted"]}
    assert fitted["tcp"] == pytest.approx(0.3, abs=0.01) and fitted["ib"] == pytest.approx(0.6, abs=0.01)
    assert result["heldout_rmse"] < 1e-3
    assert json.loads(out.read_text())["fitted"] == result["fitted"]


def test_calibrates_dict_is_json_ready():
    # a standard error the fit cannot tell (latency at its bound) was NaN: json.dumps wrote NaN, or refused
    result = sweep.calibrate(
        "examples/dlperf_tensorflow.csv", fit=["utilization", "latency"], train="gpus <= 16"
    )
    assert None in [p["stderr"] for p in result["fitted"]]
    json.dumps(result, allow_nan=False)


def test_calibrate_names_the_collectives_it_takes():
    # it listed NCCL's, which it then refused; its --help said a comma list, which it refused (a hunt)
    with pytest.raises(InputError) as e:
        sweep.calibrate("examples/resnet50_measured.csv", collective="ring,tree")
    assert str(e.value).endswith("calibrate takes one of ring, tree, ps, hierarchical, nccl-ring, nccl-tree")


def test_validate_on_a_users_file(measured, tmp_path):
    seen = []
    v = sweep.validate(measured, out=tmp_path / "v", progress=seen.append)
    assert [e.model for e in v.errors] == ["paper", "utilization", "calibrated"]
    # each model as it is fitted, then its fit's warnings (dropped before, a hunt): said, kept and reported
    assert [line.split(":")[0] for line in seen if not line.startswith("warning")] == [
        "model 1/3",
        "model 2/3",
        "model 3/3",
    ]
    warned = [line for line in seen if line.startswith("warning: ")]
    assert (
        warned == [f"warning: the {m} model's fit: {w}" for m, said in v.warnings.items() for w in said]
        and warned
    )
    report = (tmp_path / "v" / "REPORT.md").read_text()
    assert all(f"- {m}: warning: {w}" in report for m, said in v.warnings.items() for w in said)
    assert v.train.sum() == 4 and v.predictions["calibrated"].shape == v.measured.shape == (12,)
    by_model = {e.model: e for e in v.errors}
    assert by_model["utilization"].heldout_rmse < 0.01 < by_model["paper"].heldout_rmse
    assert {p.name for p in v.paths} == {"REPORT.md", "predictions.csv", "measured_vs_predicted.png"}


def test_compare(tmp_path):
    c = sweep.compare("resnet50", bandwidth=[10, 400], compressor="int8,powersgd:4", out=tmp_path / "c")
    slow, fast = c.rows
    assert slow.winner == "compress (powersgd:4)" and fast.winner == "neither"
    assert "powersgd:4" in c.table() and "compressor" in c.dataset.dims
    assert (
        "scaling today (util 0.32)" in c.table()
    )  # as sweep compare prints it (a hunt: the util was left out)
    assert {p.name for p in c.paths} == {"REPORT.md", "compare.csv", "speedups.png"}


def test_a_fabric_file_is_taken_by_its_path_as_the_cli_takes_it(tmp_path):
    # evaluate, solve and compare refused a path, naming a private reader (sweep grid --fabric FILE takes it)
    from test_fabric_file import fabric

    from netsweep_jax.sweep.io.fabric_file import read_fabric

    path = fabric(tmp_path)
    settings = dict(gpu="h100", bandwidth=400, nodes=[2, 4])
    by_path = sweep.evaluate("gpt2-xl", fabric=str(path), **settings)
    assert by_path.equals(sweep.evaluate("gpt2-xl", fabric=read_fabric(path), **settings))
    assert by_path.attrs["fabric"] == str(path)
    with pytest.raises(InputError, match="'no-such.json': not a fabric preset or file; presets: "):
        sweep.evaluate("gpt2-xl", fabric="no-such.json", **settings)


def test_profiles_round_trip(tmp_path):
    assert sweep.builtin_names()[:3] == ("resnet50", "resnet101", "vgg16")
    p = sweep.builtin_profile("vgg16")
    assert isinstance(p, sweep.Profile)
    path = tmp_path / "vgg16.json"
    path.write_text(json.dumps(p.to_json()))
    q = sweep.load_profile(path)
    assert q.model == "vgg16" and q.names == p.names and q.t1 == p.t1 and q.shape == p.shape
    np.testing.assert_array_equal(q.grad_bytes, p.grad_bytes)
    np.testing.assert_allclose(q.wait, p.wait, rtol=1e-12)  # stored in microseconds


@pytest.mark.parametrize(
    "call,param",
    [
        (
            lambda: sweep.solve("resnet50", target=0.9, axis="nodes", bandwidth=10),
            "axis",
        ),  # the keyword (was the CLI's "solve")
        (lambda: sweep.solve("resnet50", target="high", axis="ratio", bandwidth=10), "target"),
        (lambda: sweep.evaluate("resnet50", bandwidth="fast"), "bandwidth"),
        (lambda: sweep.calibrate("no-such.csv"), "no-such.csv"),
        (lambda: sweep.calibrate(3.5), "measurements"),
        (lambda: sweep.calibrate("examples/resnet50_measured.csv", bounds={"utilization": 0.5}), "bounds"),
        (lambda: sweep.validate("no-such.csv"), "no-such.csv"),
        (lambda: sweep.compare("resnet50", utilization=2.0), "utilization"),
        (lambda: sweep.open_cube("no-such.h5"), "no-such.h5"),
        (lambda: sweep.load_profile("no-such.json"), "no-such.json"),
        (lambda: sweep.builtin_profile("alexnet"), "name"),
        # compare prices real compressors at their own bytes: an ideal ratio on top gave times below T1
        (lambda: sweep.compare("resnet50", bandwidth=10, ratio=[1, 10]), "ratio"),
        (lambda: sweep.compare("resnet50", bandwidth=10, speed=3), "of compare()"),  # it named evaluate()
        # need's answer is computed whole: reduce and store were checked, then dropped
        (lambda: sweep.solve("resnet50", target=0.9, axis="bandwidth", reduce="max:nodes"), "reduce"),
        (lambda: sweep.solve("resnet50", target=0.9, axis="bandwidth", store="float16"), "store"),
        # found by a hunt: variables taken and not read; 10^8 answers grew to 8 GB before the kernel was killed;
        # a name or a T1 that is not one failed deep inside the package with a TypeError
        (
            lambda: sweep.solve("resnet50", target=0.9, axis="ratio", bandwidth=10, variables="comm_time"),
            "variables",
        ),
        (
            lambda: sweep.solve(
                "resnet50", target=0.9, axis="bandwidth", latency="0..99999", nodes="1..1000"
            ),
            "too many",
        ),
        (lambda: sweep.load_profile("examples/profile.csv", t1=0.05, model=3), "model"),
        (lambda: sweep.builtin_profile("resnet50").scaled_to("0.064"), "t1 '0.064' must be a number"),
        (lambda: sweep.validate(force="no"), "force"),
        (lambda: sweep.open_cube("no-such.h5", verify="no"), "verify"),
        (lambda: sweep.validate(progress=3), "progress"),
        # a hunt: True was blocks of one configuration; the spine's rule was an empty "()"; compare's empty list
        # was told to give none, which it then refused
        (lambda: sweep.evaluate("gpt2", bandwidth=10, block_configs=True), "block_configs True: must be"),
        (
            lambda: sweep.evaluate("gpt2", bandwidth=10, fabric="aws-p5", oversubscription=True),
            "(must be a number from 1 to 1000)",
        ),
        (lambda: sweep.compare("resnet50", bandwidth=10, compressor=[]), "besides none"),
        # a hunt: 'ring,,tree' ran ring and tree in silence; '1,,2' was said as "'': '' is not a number"
        (
            lambda: sweep.evaluate("gpt2", bandwidth=10, collective="ring,,tree"),
            "'ring,,tree': item 2 is empty",
        ),
        (lambda: sweep.evaluate("gpt2", bandwidth="1,,2"), "'1,,2': item 2 is empty"),
        (
            lambda: sweep.evaluate("gpt2", bandwidth=10, dtype="f16"),
            "dtype 'f16': must be float32 or float64",
        ),
        # a hunt: a batch in its range refused as a profile's "iteration time" (no keyword named); NumPy's fit on a
        # runs file a traceback; calibrate told to give t1, a keyword it has not
        (
            lambda: sweep.evaluate("gpt2-xl", bandwidth=10, batch=10000, precision="fp32"),
            "batch 10000: gpt2-xl on a v100 in fp32 would take 11840 s a step",
        ),
        (
            lambda: sweep.calibrate("sweep/data/llm_runs.csv", fit=np.array(["utilization", "latency"])),
            "fit is for",
        ),
        (
            lambda: sweep.calibrate("examples/resnet50_measured.csv", profile="examples/profile.csv"),
            "iteration_time needed: examples/profile.csv has no single-GPU iteration time",
        ),
        # a hunt: the API's refusal told the caller to use --store, an option it has not
        (
            lambda: sweep.evaluate("resnet50", bandwidth=0.001, utilization=0.0001, store="float16"),
            "; use store float32",
        ),
    ],
)
def test_bad_input_is_one_line(call, param):
    with pytest.raises(InputError) as info:
        call()
    message = str(info.value)
    assert isinstance(info.value, ValueError) and "\n" not in message and param in message, message


def test_reports_from_python_keep_a_users_files_unless_forced(tmp_path):
    (tmp_path / "REPORT.md").write_text("mine")
    with pytest.raises(
        InputError, match="file exists; pass force=True to overwrite it, or give another out$"
    ):
        sweep.compare("resnet50", bandwidth=10, out=tmp_path)  # Python's spelling: it said --force and --out
    # force="no" is truthy: it replaced them (found by a hunt)
    with pytest.raises(InputError, match="'no': expected True or False"):
        sweep.compare("resnet50", bandwidth=10, out=tmp_path, force="no")
    assert (tmp_path / "REPORT.md").read_text() == "mine" and len(list(tmp_path.iterdir())) == 1
    result = sweep.compare("resnet50", bandwidth=10, out=tmp_path, force=True)
    assert len(result.paths) == 3 and (tmp_path / "REPORT.md").read_text().startswith("# Fix the transport")


LLAMA = dict(gpus=8, global_batch=8)


def test_layout_functions_take_numpy_values_as_evaluate_does():
    a = sweep.evaluate_layouts("llama3-8b", tp=np.array([1, 2]), micro_batch=np.int64(2), **LLAMA)
    b = sweep.evaluate_layouts("llama3-8b", tp=[1, 2], micro_batch=2, **LLAMA)
    np.testing.assert_array_equal(a.tokens_per_s.values, b.tokens_per_s.values)
    # A coordinate is the value given, every digit (a hunt: rounded to 12 digits, so .sel of the values the
    # user passed found none), as evaluate's; a range the value syntax generates is still rounded (0.3).
    rates = np.geomspace(25, 400, 4)[1:3]  # 4 settings: the block shape of the calls above, one compile
    c = sweep.evaluate_layouts(
        "llama3-8b", tp=2, micro_batch=2, bandwidth=rates, utilization="0.1..0.3:0.2", **LLAMA
    )
    np.testing.assert_array_equal(c.bandwidth.values, rates)
    assert c.utilization.values.tolist() == [0.1, 0.3]
    assert np.isfinite(c.tokens_per_s.sel(bandwidth=rates[0], utilization=0.3).item())


def test_evaluate_layouts_is_the_layout_grid_the_command_writes(tmp_path):
    from helpers import invoke

    ds = sweep.evaluate_layouts("llama3-8b", tp=[1, 2], micro_batch="1,2", bandwidth=100, **LLAMA)
    r = invoke(
        "grid", "--model", "llama3-8b", "--gpus", "8", "--global-batch", "8", "--tp", "1,2",
        "--micro-batch", "1,2", "--bw", "100", "--out", tmp_path / "g.h5", "-q",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    with sweep.open_cube(tmp_path / "g.h5") as cube:
        for name in ("tokens_per_s", "memory_gb", "status"):
            np.testing.assert_array_equal(ds[name].values, cube[name].values, err_msg=name)
    assert ds.sizes["tp"] == 2 and ds.sizes["micro_batch"] == 2
    assert "DGX H100" in ds.attrs["assumed"]  # the network not given follows the GPU's system, said so
    assert np.isfinite(ds.tokens_per_s.sel(tp=2, micro_batch=2).squeeze().item())


def test_plan_is_the_command_plan(tmp_path):
    from helpers import invoke

    best = sweep.plan(
        "llama3-8b", bandwidth=[100, 400], keep=2.0, **LLAMA
    )  # a whole float, as gpus=8.0 (a hunt)
    r = invoke(
        "plan", "--model", "llama3-8b", "--gpus", "8", "--global-batch", "8", "--bw", "100,400",
        "--keep", "2", "--out", tmp_path / "p.h5", "-q",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    with sweep.open_cube(tmp_path / "p.h5") as cube:
        for name in ("tokens_per_s", "network_cost", "switch_change", "layout_tp"):
            np.testing.assert_array_equal(best[name].values, cube[name].values, err_msg=name)
    assert best.sizes["rank"] == 2 and best.sizes["bandwidth"] == 2


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: sweep.plan("llama3-8b", bandwith=100, **LLAMA), "unknown keyword 'bandwith' of plan()"),
        # the CLI's names where the keyword is shorter: named, not a list of every keyword
        (
            lambda: sweep.plan("llama3-8b", cpu_offloading_num_layers=1, **LLAMA),
            "the CLI's --cpu-offloading-num-layers is the keyword 'offload_layers' here",
        ),
        (
            lambda: sweep.evaluate_layouts("llama3-8b", tensor_model_parallel_size=2, **LLAMA),
            "the CLI's --tensor-model-parallel-size is the keyword 'tp' here",
        ),
        (lambda: sweep.evaluate("resnet50", bw=10), "unknown keyword 'bw' of evaluate(): the CLI's --bw is"),
        # a hunt: the other options' names too, and calibrate, validate, open_cube and load_profile (a TypeError)
        (
            lambda: sweep.evaluate("resnet50", intra_bw=100),
            "unknown keyword 'intra_bw' of evaluate(): the CLI's --intra-bw is the keyword 'intra_bandwidth' here",
        ),
        (
            lambda: sweep.load_profile("examples/profile.csv", iteration_time=0.05),
            "the CLI's --iteration-time is the keyword 't1' here",
        ),
        (
            lambda: sweep.validate(llm=True),
            "unknown keyword 'llm' of validate(); it takes dataset, out, force",
        ),
        (  # a preset changed in Python: named, not its repr (a hunt; the registered one is taken by its name)
            lambda: sweep.evaluate_layouts(
                "llama3-8b", fabric=dataclasses.replace(FABRICS["aws-p5"], leaf_hosts=3), **LLAMA
            ),
            "fabric FabricPreset 'aws-p5' changed in Python: the large-model functions take a preset's name",
        ),
        (
            lambda: sweep.open_cube("x.h5", verfy=False),
            "unknown keyword 'verfy' of open_cube(); it takes path",
        ),
        (lambda: sweep.plan("llama3-8b", keep=0, **LLAMA), "keep 0: an integer from 1 to 100"),
        (lambda: sweep.plan("llama3-8b", keep=2.5, **LLAMA), "keep 2.5: an integer from 1 to 100"),
        (lambda: sweep.plan(**LLAMA), "model name a large-model preset"),
        (lambda: sweep.evaluate_layouts("llama3-8b", tp=True, **LLAMA), "tp True: give a number"),
        (lambda: sweep.evaluate_layouts("llama3-8b", tp=0, **LLAMA), "tp 0"),
        # a hunt: NaN was read back as the text 'nan' and the caller told to write digits
        (
            lambda: sweep.evaluate_layouts("llama3-8b", efficiency=float("nan"), **LLAMA),
            "efficiency nan: must be a number from 0.001 to 1",
        ),
        (lambda: sweep.evaluate_layouts("llama3-8b", dtype="float16", **LLAMA), "dtype 'float16'"),
    ],
)
def test_layout_functions_refuse_bad_input_naming_the_keyword(call, message):
    with pytest.raises(InputError) as e:
        call()
    assert str(e.value).startswith(message) or message in str(e.value), str(e.value)


def test_a_profile_built_in_python_is_checked_as_a_files_is():
    """dataclasses.replace on a Profile: a T1 below its backward pass gave a scaling factor of 0.097, negative
    bytes 1.0, three sizes for six waits were cut short, an empty profile was an IndexError."""
    import dataclasses

    p = sweep.load_profile("examples/profile.csv", t1=0.05)
    for change, message in (
        (dict(t1=0.001), "is shorter than the profile's backward pass"),
        (dict(grad_bytes=-p.grad_bytes), "gradient bytes must be >= 0"),
        (dict(grad_bytes=p.grad_bytes[:3]), "6 names, gradient bytes of shape (3,) and waits of shape (6,)"),
        (dict(names=(), grad_bytes=np.array([]), wait=np.array([])), "profile has no tensors"),
        (dict(model="team/run1"), "must be non-empty, without '/'"),
        (dict(t1=np.float32(1e-9)), "must be a number of seconds in [1e-6, 1e4]"),
        (dict(t1=10**400), "must be a number of seconds in [1e-6, 1e4]"),  # an OverflowError's traceback
    ):
        with pytest.raises(InputError, match=re.escape(message)):
            sweep.evaluate(dataclasses.replace(p, **change), bandwidth=25, nodes=2)


def test_numpy_numbers_and_reduced_results_as_the_cli_takes_and_keeps_them():
    one = sweep.evaluate("gpt2-xl", gpu="h100", bandwidth=25, nodes=[2, 4], intra_bandwidth=np.float32(600))
    reduced = sweep.evaluate(
        "gpt2-xl", gpu="h100", bandwidth=25, nodes=[2, 4], intra_bandwidth=600, reduce="max:nodes"
    )
    assert one.attrs["intra_bandwidth_gbps"] == 600.0
    assert reduced.attrs["assumed"] == one.attrs["assumed"] and "reduced" in reduced.attrs  # it lost them
    assert sweep.compare("resnet50", bandwidth=10, utilization=np.float32(0.3)).rows[0].today > 0
    assert sweep.compare(
        "resnet50", bandwidth=10, ratio=None, store=None, vars=None, dtype=None
    ).rows  # not given
    p = sweep.load_profile("examples/profile.csv", t1=0.05)
    import dataclasses

    assert (
        sweep.evaluate(dataclasses.replace(p, t1=np.float32(0.05)), bandwidth=25, nodes=2).sizes["model"] == 1
    )


def test_the_apis_values_as_its_docstrings_say():
    import warnings

    assert sweep.builtin_profile("ResNet50").model == "resnet50"  # any case, as evaluate takes it
    assert sweep.evaluate("resnet50", bandwidth=None, nodes=2).sizes["bandwidth"] == 5  # None: the default
    # Not given, as sweep grid without --bw: the default, or a fabric preset's NICs' rate (it was a TypeError)
    assert sweep.evaluate("resnet50", nodes=2).equals(sweep.evaluate("resnet50", bandwidth=None, nodes=2))
    on_pod = sweep.evaluate("gpt2-xl", gpu="h100", fabric="dgx-h100-superpod", nodes=2, vars="iteration_time")
    assert list(on_pod.bandwidth.values) == [400.0]
    from netsweep_jax.sweep.large_models import _grid  # evaluate_layouts' grid, not computed

    given, none = ({"gpus": 8, "global_batch": 8, **more} for more in ({}, {"bandwidth": None}))
    assert _grid("llama3-8b", None, none, search=False) == _grid("llama3-8b", None, given, search=False)
    batches = sweep.evaluate("gpt2-xl", bandwidth=25, nodes=2, batch=np.array([4, 8])).model.values
    assert [str(b).rsplit("-", 1)[1] for b in batches] == ["b4", "b8"]
    with pytest.raises(InputError, match="batch True"):  # it was batch 1
        sweep.evaluate("gpt2-xl", bandwidth=25, nodes=2, batch=True)
    with pytest.raises(
        InputError, match=r"unknown keyword 'vars' of solve\(\)"
    ) as refused:  # it named make_grid()
        sweep.solve("resnet50", target=0.9, axis="bandwidth", vars="scaling_factor")
    assert "store" not in str(refused.value) and "variables" not in str(refused.value)  # solve refuses both
    best = sweep.evaluate("resnet50", bandwidth=[10, 100], nodes=2, reduce="argmin:bandwidth")
    assert best.scaling_factor_argmin_bandwidth.attrs["units"] == "Gbit/s"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # JAX warned of a float64 it could not hold, on every block
        assert (
            sweep.evaluate("resnet50", bandwidth=10, nodes=2, store="float64").scaling_factor.dtype
            == "float64"
        )


def test_numpy_floats_of_fewer_bits_are_the_values_typed():
    # A hunt: float32's 0.1 widened to 0.10000000149, and .sel(bandwidth=0.1) found no coordinate.
    ds = sweep.evaluate(
        "resnet50", bandwidth=np.array([0.1, 1.0], np.float32), nodes=2, utilization=np.float32(0.3)
    )
    assert ds.sel(bandwidth=0.1).bandwidth.item() == 0.1 and ds.utilization.values.tolist() == [0.3]
    assert sweep.evaluate(
        "resnet50", bandwidth=[np.float16(0.5), 2.0], nodes=2
    ).bandwidth.values.tolist() == [0.5, 2.0]


def test_a_dtype_is_a_name_in_any_case_as_store_is():
    # A hunt: dtype="FLOAT64" was refused where store="Float16" and kernel="XLA" were taken.
    assert sweep.evaluate("gpt2", bandwidth=10, dtype="FLOAT64").scaling_factor.dtype == np.float64


def test_an_empty_path_or_an_array_for_a_name_is_refused_by_name():
    # A hunt: codec_cost='' read the current folder ("codec_cost .: a directory"), as Path('') is; dtype= and
    # store= given a NumPy array raised NumPy's TypeError.
    for keyword, what in (("codec_cost", "a codec cost file"), ("reduce_table", "a reduce-cost file")):
        with pytest.raises(InputError, match=rf"^{keyword} '': an empty path names no file; give {what}$"):
            sweep.evaluate("resnet50", bandwidth=10, **{keyword: ""})
    for keyword in ("dtype", "store"):
        with pytest.raises(InputError, match=rf"^{keyword} array\(\['float32'\]"):
            sweep.evaluate("resnet50", bandwidth=10, **{keyword: np.array(["float32"])})
