"""The layout family's sweeps: layout grids, sweep plan and their command lines."""

import json
import re

import numpy as np
import pytest
from layout_cases import LLAMA_8B

from helpers import FEW_LAYOUTS_BLOCK, invoke
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.core.sweep_settings import NUMERIC, SweepSettings
from netsweep_jax.sweep.engine import layouts
from netsweep_jax.sweep.io.reader import open_cube
from netsweep_jax.sweep.model.llms import parse_arch

BLOCK = 8192  # blocks of one setting by 8,192 layouts: the kernel's 8 x 8,192 shape that small sweeps share


def test_grid_masks_what_cannot_exist_and_plan_finds_the_grid_best():
    # 9,216 layouts: two blocks of layouts per setting (8,192 and 1,024: --block-configs 8192), so the device's
    # top-k is merged across blocks; the blocks are the 8 x 8,192 shape every small plan and grid compiles anyway.
    grid = layouts.make_layout_grid(
        "llama3-8b",
        gpu="h100",
        gpus="16,24",
        global_batch="64",
        tp="1,2,3,4",
        pp="1,2,5",
        cp="1,2",
        micro_batch="1..32",
        zero="0,1,2,3",
        recompute="none,selective,full",
        bandwidth="400",
    )
    assert grid.inner_size == 9216
    arrays = layouts.evaluate_layouts_arrays(grid, BLOCK)
    ds = layouts.layouts_dataset(grid, arrays)
    assert set(np.unique(ds.status.values)) >= {0, 1, 2}  # tp 3 breaks the heads rule; 24 / 5 the GPU count
    assert np.isnan(ds.iteration_time.where(ds.status != 0)).all()
    best = layouts.best_layouts(grid, keep=2, block_configs=BLOCK)  # two blocks a setting, merged
    score = np.where((arrays["status"] == 0) & (arrays["fits"] > 0), arrays["tokens_per_s"], -np.inf)
    flat = score.reshape(grid.outer_size, grid.inner_size)
    order = np.argsort(-flat, axis=1, kind="stable")[:, :2]
    found = np.isfinite(np.take_along_axis(flat, order, axis=1))
    assert found.any() and not found.all()  # some cells have fewer than two feasible layouts
    np.testing.assert_array_equal(best["layout"], np.where(found, order, -1))
    np.testing.assert_array_equal(best["score"], np.take_along_axis(flat, order, axis=1))
    assert np.isnan(best["iteration_time"][~found]).all()


def test_layout_grid_refuses_bad_axis_values():
    for kwargs, message in [
        (dict(tp="0"), "tp"),
        (dict(zero="4"), "zero"),
        (dict(schedule="gpipe"), "1f1b"),
        (dict(gpu="tpu"), "gpu"),
        (dict(precision="fp8", gpu="a100"), "fp8"),
        (dict(global_batch=None), "global batch"),
        (dict(gpus=None), "^gpus is needed: the GPU count, as gpus 1024"),  # Python's spelling, not --gpus
    ]:
        args = dict(gpus="8", global_batch="8") | kwargs
        with pytest.raises(InputError, match=message):
            layouts.make_layout_grid("llama3-8b", **args)


def test_cli_plan_and_grid_on_a_large_model(tmp_path):
    out = tmp_path / "plan.h5"
    r = invoke(
        "plan",
        "--model",
        "llama3-8b",
        "--gpus",
        "16,64",
        "--global-batch",
        "128",
        "--tp",
        "1,2,4",
        "--pp",
        "1,2",
        "--cp",
        "1",
        "--keep",
        "2",
        "--bw",
        "100",
        "--out",
        str(out),
    )
    assert r.exit_code == 0, r.output
    assert "assumed: h100: DGX H100" in r.stderr  # the GPU's system, said once
    assert r.stdout.count("tokens/s") == 2 and "network-bound" in r.stdout and f"wrote {out}" in r.stdout
    ds = open_cube(out)
    assert (
        dict(ds.sizes)["rank"] == 2 and ds.attrs["family"] == "layouts" and "DGX H100" in ds.attrs["assumed"]
    )
    assert (ds.tokens_per_s.isel(rank=0) >= ds.tokens_per_s.isel(rank=1)).all()
    # #27: a searched axis is a variable of a plan cube, not a dim; select says where it is.
    r = invoke("select", str(out), "--tp", "1")
    assert (
        r.exit_code == 2
        and "--tp 1: a plan cube has no tp dim: each rank's tp is its variable layout_tp" in r.output
    )
    cube = tmp_path / "grid.h5"
    r = invoke(
        "grid",
        "--arch",
        "layers=8,hidden=1024,heads=8,seq=1024,vocab=32000",
        "--gpus",
        "24",
        "--tp",
        "1,3",
        "--global-batch",
        "24",
        "--gpu",
        "A100",
        "--overlap",
        "tp_comm+grad_reduce",
        "--moment-bytes",
        "2",
        "--out",
        str(cube),
    )
    assert r.exit_code == 0, r.output
    ds = open_cube(cube)
    assert ds.status.sel(tp=3).item() == 2 and "heads not divisible by tp" in ds.status.attrs["rules"]
    # Settings given once per sweep are the cube's attributes, in one spelling; not "assumed".
    assert ds.attrs["overlap"] == "grad_reduce+tp_comm" and float(ds.attrs["moment_bytes"]) == 2
    assert "overlap" not in ds.attrs["assumed"] and "Adam moments" not in ds.attrs["assumed"]
    assert np.isfinite(ds.iteration_time.sel(tp=1)).all()
    r = invoke("select", str(cube), "--tp", "1", "--csv")
    assert r.exit_code == 0 and "iteration_time" in r.stdout


def test_the_text_settings_defaults_are_one_in_help_api_and_runs_file():
    # #39: sweep plan's --help, the API (make_layout_grid) and a runs file's row take the same defaults, declared
    # once (core/layout_axes.py); they were written out in four modules.
    import dataclasses
    import inspect

    import typer.main

    from netsweep_jax.sweep.cli.app import app
    from netsweep_jax.sweep.core import layout_axes
    from netsweep_jax.sweep.engine.layout_rows import LayoutRow

    shown = {p.name: p.default for p in typer.main.get_command(app).commands["plan"].params}
    api = inspect.signature(layouts.make_layout_grid).parameters
    row = {f.name: f.default for f in dataclasses.fields(LayoutRow)}
    assert shown["gpu"] == api["gpu"].default == layout_axes.DEFAULT_GPU
    # The precision's follows the GPU in the API (None: bf16, fp16 on V100s alone), --help shows bf16.
    assert shown["precision"] == layout_axes.DEFAULT_PRECISION and api["precision"].default is None
    assert layouts.make_layout_grid("llama3-8b", gpus=8, global_batch=8).names["precision"] == ("bf16",)
    volta = layouts.make_layout_grid("llama3-8b", gpu="v100", gpus=8, global_batch=8)
    assert volta.names["precision"] == ("fp16",) and volta.names["attention"] == ("unfused",)
    assert "precision fp16 (the v100 has no bf16 tensor cores)" in volta.assumed
    # What cannot run on a V100 is refused in one line saying where it came from when the user did not type it.
    for kwargs, message in (
        (
            dict(gpu="v100,a100"),
            "bf16 (the default beside newer GPUs; a sweep has one precision: give --precision fp16, or sweep it alone): the v100 has",
        ),
        (dict(gpu="v100", stack="megatron-core"), "flash (stack megatron-core's): the v100 cannot run"),
        (dict(gpu="v100", precision="bf16"), "bf16: the v100 has no bf16 tensor cores"),
    ):
        with pytest.raises(InputError, match=re.escape(message)):
            layouts.make_layout_grid("llama3-8b", gpus=8, global_batch=8, **kwargs)
    # --collective's default follows --fabric (nccl with one, else ring-or-tree): None in both, said in --help.
    assert shown["collective"] is None and api["collective"].default is None
    # --schedule's: None in the API (the default, said in the assumed line with the other layout defaults)
    grid = layouts.make_layout_grid("qwen3-30b-a3b", gpus=8, global_batch=8)
    assert api["schedule"].default is None and grid.names["schedule"] == (layout_axes.DEFAULT_SCHEDULE,)
    for said in ("--ep 1", "--recompute none", f"--schedule {layout_axes.DEFAULT_SCHEDULE}"):
        assert said in grid.assumed, said  # a MoE model's EP, never said before (a hunt)
    assert (
        row["attention"] == layout_axes.DEFAULT_ATTENTION
        and row["collective"] == layout_axes.DEFAULT_COLLECTIVE
    )


def test_megatron_option_names_are_aliases(tmp_path):
    # #27: a Megatron-LM launch line's layout options can be pasted: they set the same dims.
    ours = [
        "--tp",
        "2",
        "--pp",
        "1",
        "--cp",
        "2",
        "--micro-batch",
        "1",
        "--global-batch",
        "8",
        "--schedule",
        "1f1b",
    ]
    theirs = ["--tensor-model-parallel-size", "2", "--pipeline-model-parallel-size", "1"]
    theirs += ["--virtual-pipeline-model-parallel-size", "1"]
    theirs += ["--context-parallel-size", "2", "--micro-batch-size", "1", "--global-batch-size", "8"]
    cubes = []
    for i, (layout, recompute) in enumerate([(ours, "--recompute"), (theirs, "--recompute-granularity")]):
        out = tmp_path / f"{i}.h5"
        r = invoke(
            "grid", "--model", "llama3-8b", "--gpus", "8", *layout, recompute, "selective", "--out", str(out)
        )
        assert r.exit_code == 0, r.output
        cubes.append(open_cube(out))
    assert dict(cubes[0].sizes) == dict(cubes[1].sizes)
    assert float(cubes[0].iteration_time.max()) == float(cubes[1].iteration_time.max())


@pytest.mark.parametrize(
    "args,message",
    [
        (
            ["grid", *LLAMA_8B, "--tp", "0"],
            "--tp 0: tp must be",
        ),
        (["grid", "--model", "llama3-8b", "--gpus", "8"], "--global-batch"),
        (["grid", "--model", "resnet50", "--tp", "2", "--bw", "10"], "--tp applies to large-model presets"),
        (
            ["grid", "--model", "llama3-8b,resnet50", "--gpus", "8", "--global-batch", "8"],
            "cannot share a sweep",
        ),
        (
            ["grid", *LLAMA_8B, "--compressor", "int8"],
            "--compressor applies to data-parallel",
        ),
        # Every data-parallel option a layout sweep does not read is refused, not silently ignored.
        (["grid", *LLAMA_8B, "--ratio", "2"], "--ratio applies to data-parallel"),
        (["grid", *LLAMA_8B, "--fusion-mb", "5"], "--fusion-mb applies to data-parallel"),
        (["grid", *LLAMA_8B, "--accum", "2"], "--accum applies to data-parallel"),
        (["plan", "--gpus", "8", "--global-batch", "8"], "--model name a large-model preset"),
        (
            [
                "plan",
                *LLAMA_8B,
                "--precision",
                "fp8",
                "--gpu",
                "a100",
            ],
            "no fp8",
        ),
        (["plan", "--arch", "layers=2,hidden=8", "--gpus", "8", "--global-batch", "8"], "--arch"),
        (["plan", "--model", "llama3-8b", "--nodes", "2", "--gpus", "8", "--global-batch", "8"], "one way"),
        # Fixes users hit (#27): a non-ASCII digit, an empty name, one schedule spelled twice, a head width that
        # does not divide, an option named in its message.
        (
            [
                "plan",
                "--arch",
                "layers=²,hidden=512,heads=8,seq=64,vocab=100",
                "--gpus",
                "8",
                "--global-batch",
                "8",
            ],
            "--arch layers=²: must be a whole number",
        ),
        (
            [
                "plan",
                *LLAMA_8B,
                "--schedule",
                "interleaved:²",
            ],
            "--schedule 'interleaved:²'",
        ),
        (
            [
                "grid",
                *LLAMA_8B,
                "--schedule",
                "interleaved:2,interleaved:02",
            ],
            "a schedule appears twice",
        ),
        (
            ["plan", *LLAMA_8B, "--schedule", ""],
            "--schedule ''",
        ),
        (
            ["plan", *LLAMA_8B, "--recompute", ""],
            "--recompute ''",
        ),
        (
            ["plan", *LLAMA_8B, "--attention", ""],
            "--attention ''",
        ),
        (
            ["plan", *LLAMA_8B, "--precision", ""],
            "--precision ''",
        ),
        (["plan", *LLAMA_8B, "--gpu", ""], "--gpu ''"),
        (
            ["plan", *LLAMA_8B, "--overlap", "tp_comm+tp"],
            "--overlap 'tp_comm+tp': one mode, none or a + list of grad_reduce",
        ),
        (
            ["grid", *LLAMA_8B, "--recompute", "mlp+foo"],
            "--recompute 'mlp+foo': unknown; known: none, selective, full, op, or a + list",
        ),
        (
            ["grid", *LLAMA_8B, "--moment-bytes", "3"],
            "--moment-bytes 3: must be 4 (fp32), 2 (bf16) or 1 (fp8)",
        ),
        (
            ["grid", *LLAMA_8B, "--mtp-layers", "1.5"],
            "--mtp-layers 1.5: mtp_layers must be an integer from 0 to 16",
        ),
        (["grid", *LLAMA_8B, "--mtp-layers", "1,2"], "--mtp-layers 1,2: give one value"),
        (
            [
                "plan",
                *LLAMA_8B,
                "--pp",
                "2",
                "--virtual-pipeline-model-parallel-size",
                "2",
                "--schedule",
                "1f1b",
            ],
            "--virtual-pipeline-model-parallel-size sets the schedule as --schedule does: give it one way",
        ),
        (
            ["plan", *LLAMA_8B, "--virtual-pipeline-model-parallel-size", "0"],
            "--virtual-pipeline-model-parallel-size '0': give whole numbers from 1",
        ),
        (
            ["plan", *LLAMA_8B, "--attention", "sparse"],
            "--attention 'sparse'",
        ),
        (
            [
                "plan",
                "--arch",
                "layers=2,hidden=500,heads=8,seq=64,vocab=100",
                "--gpus",
                "8",
                "--global-batch",
                "8",
            ],
            "not a multiple of heads=8",
        ),
        (
            ["plan", *LLAMA_8B, "--grad-bytes", "3"],
            "--grad-bytes 3: must be 0",
        ),
        # #27: work too large is refused before any, naming the options that made it large (not --gpus).
        (
            ["plan", *LLAMA_8B, "--bw", "1..1000", "--util", "0.001..1@1000"],
            "1,000,000 settings (--bw 1,000 x --util 1,000) are too many for one plan (at most 100,000",
        ),
        # a layout grid is written block by block, as a data-parallel one: refused only where the disk cannot hold it
        (
            [
                "grid",
                *LLAMA_8B,
                "--bw",
                "1..1000",
                "--util",
                "0.001..1@1000",
                "--latency",
                "0..999",
                "--overhead",
                "0..999",
            ],
            "(1,000,000,000,000 configurations) but only",
        ),
    ],
)
def test_cli_bad_layout_input_is_one_line_and_writes_nothing(tmp_path, args, message):
    out = tmp_path / "o.h5"
    r = invoke(*args, "--out", str(out))
    assert r.exit_code == 2 and message in r.output, r.output
    assert len(r.output.strip().splitlines()) == 1 and not list(tmp_path.iterdir())


def test_cli_arch_and_presets_share_a_sweep_but_not_with_profiles(tmp_path):
    out = tmp_path / "both.h5"
    r = invoke(
        "grid",
        "--model",
        "llama3-8b",
        "--arch",
        "layers=8,hidden=1024,heads=8,seq=1024,vocab=32000",
        "--gpus",
        "8",
        "--global-batch",
        "8",
        "--out",
        out,
    )
    assert r.exit_code == 0, r.output
    assert list(open_cube(out).model.values) == ["arch", "llama3-8b"]
    r = invoke(
        "grid",
        "--model",
        "resnet50",
        "--arch",
        "layers=8,hidden=1024,heads=8,seq=1024,vocab=32000",
        "--gpus",
        "8",
        "--global-batch",
        "8",
        "--out",
        tmp_path / "no.h5",
    )
    assert (
        r.exit_code == 2
        and "(resnet50) cannot share a sweep" in r.output
        and not (tmp_path / "no.h5").exists()
    )


def test_plan_charges_the_network_what_an_ideal_one_would_save(tmp_path):
    # The paper's question of a plan: the best step against the best step on an ideal network, layout changes
    # included; a slower network never costs less, and the ideal step does not depend on the bandwidth.
    out = tmp_path / "p.h5"
    r = invoke(
        "plan",
        "--model",
        "llama3-8b",
        "--gpus",
        "64",
        "--global-batch",
        "64",
        "--bw",
        "1,1000",
        "--tp",
        "1,8",
        "--pp",
        "1",
        "--cp",
        "1",
        "--keep",
        "2",
        "--out",
        str(out),
        "--json",
    )
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)
    best = {row["bandwidth"]: row for row in rows if row["rank"] == 1}
    # The settings a script reads are what they stand for: the H100 system's where the cube keeps 0 (its
    # NVLink, hosts and NICs), the precision's gradient bytes, counts as integers (was 0.0 and 256.0).
    system = {"gpus_per_node": 8, "nvlink_domain": 8, "nvlink_bw": 450, "nics_per_node": 8, "grad_bytes": 4}
    assert all(rows[0][k] == v and isinstance(rows[0][k], int) for k, v in system.items()), rows[0]
    assert rows[0]["gpus"] == 64 and isinstance(rows[0]["layout_tp"], int)
    # the layout's dp once, as layout_dp (a float "dp" beside it read as the grid's dp, a hunt)
    assert "dp" not in rows[0] and isinstance(rows[0]["layout_dp"], int), rows[0]
    assert best[1.0]["ideal_iteration_time"] == pytest.approx(best[1000.0]["ideal_iteration_time"], rel=1e-6)
    assert best[1.0]["network_cost"] > 0.2 > best[1000.0]["network_cost"] >= 0
    assert best[1.0]["network_cost"] == pytest.approx(
        1 - best[1.0]["ideal_iteration_time"] / best[1.0]["iteration_time"], rel=1e-6
    )
    ds = open_cube(out)
    assert float(ds.network_cost.max()) == pytest.approx(best[1.0]["network_cost"], rel=1e-6)
    # What flipping each overlap switch does to the best step (layouts searched again): turning an overlap
    # off never saves time, turning one on never costs; the expert all-to-all's is moot on a dense model.
    for row in best.values():
        assert row["flip_grad_reduce"] >= -1e-6 and row["flip_param_gather"] >= -1e-6
        assert row["flip_tp_comm"] <= 1e-6 and row["flip_moe_a2a"] is None
    assert best[1.0]["flip_grad_reduce"] > 0.01  # on a 1 Gbit/s network the gradient reduce is hidden
    assert ds.switch_change.attrs["overlap"] == "grad_reduce+param_gather"
    # The one-per-sweep settings are the cube's attributes.
    assert ds.attrs["overlap"] == "grad_reduce+param_gather" and float(ds.attrs["moment_bytes"]) == 4
    assert float(ds.attrs["usable_memory"]) == 0.95 and float(ds.attrs["gemm_latency_us"]) == 6.5
    args = (
        "plan",
        "--model",
        "llama3-8b",
        "--gpus",
        "64",
        "--global-batch",
        "64",
        "--bw",
        "1",
        "--tp",
        "1,8",
    )
    text = invoke(*args, "--out", str(tmp_path / "t.h5"))
    assert text.exit_code == 0 and "  overlap grad_reduce+param_gather: tp_comm on saves" in text.output


@pytest.mark.parametrize(
    "args,message",
    [
        (
            ["--model", "llama3-70b", "--gpus", "1", "--pp", "1,2", "--cp", "1"],
            "none fits: the least hungry lacks",
        ),
        (
            ["--model", "llama3-8b", "--gpus", "64", "--tp", "64", "--cp", "1", "--pp", "1"],
            "most often: heads not divisible by tp",
        ),
        (  # a hunt: said as the search's tp x pp x cp not dividing the GPUs, which most layouts broke first
            ["--model", "llama3-8b", "--gpus", "16", "--micro-batch", "64"],
            "most often by the 540 whose tp x pp x cp divide the GPUs: global batch not divisible by micro-batch x dp",
        ),
    ],
)
def test_plan_without_a_feasible_layout_says_why_and_writes_nothing(tmp_path, args, message):
    # After the search (the lines before it say what was assumed and searched): exit 2, the reason, no cube.
    r = invoke("plan", *args, "--global-batch", "8", "--out", str(tmp_path / "o.h5"))
    assert r.exit_code == 2 and message in r.output.strip().splitlines()[-1], r.output
    assert "error: no feasible layout" in r.output and not list(tmp_path.iterdir())
    # Where no tp x pp x cp divides the GPUs, before anything is said or searched (a hunt: three lines, the
    # value 4096 unnamed).
    r = invoke(
        "plan", "--model", "llama3-8b", "--gpus", "8", "--tp", "4096", "--cp", "1", "--global-batch", "8"
    )
    assert r.output == (
        "error: no tp x pp x cp divides the GPU count 8 (tp 4096, pp 1,2,4,8,16,32, cp 1); every layout would "
        "be masked (gpus not divisible by tp x pp x cp)\n"
    )


def test_every_layout_default_shown_in_help_is_the_one_used():
    # #24: --help shows each option's default from its spec, and the grid uses exactly that value.
    from netsweep_jax.sweep.core.layout_axes import OWN_AXES
    from netsweep_jax.sweep.core.values import parse_values
    from netsweep_jax.sweep.model.stacks import CONSTANTS, DEFAULT_STACK, FITTED_DEFAULT, constants

    grid = layouts.make_layout_grid("llama3-8b", gpus=8, global_batch=8)
    text = " ".join(invoke("plan", "--help").output.split())
    for name in CONSTANTS:  # the fitted constants: the default stack's for the GPU's die (an H100 here)
        used = [getattr(grid.settings, name)] if name in NUMERIC else grid.values[name].tolist()
        assert used == [getattr(constants(DEFAULT_STACK, "h100"), name)], name
        # utilization's: the fitted one, or 1 under NCCL's pricing (whose eta_net is the transport's)
        assert text.count(f"Default: {FITTED_DEFAULT}.") == len(CONSTANTS) - 1
        assert text.count(f"Default: {FITTED_DEFAULT}; 1 with --collective nccl.") == 1
    for name, spec in OWN_AXES.items():
        if not spec.default or name in CONSTANTS:
            continue
        used = [getattr(grid.settings, name)] if name in NUMERIC else grid.values[name].tolist()
        assert used == parse_values(spec.default, spec).tolist(), name
        assert f"Default {spec.default}" in text, name


def test_plans_help_says_what_plan_searches_and_need_what_a_large_model_assumes():
    # A hunt: plan's --help gave grid's defaults for the schedule and recomputation plan searches, called the
    # sequence parallelism it holds at 1 "searched", and need's gave the data-parallel cluster for a large model.
    from netsweep_jax.sweep.analysis.planning import SEARCHED_TEXT, search_space
    from netsweep_jax.sweep.model.llms import LLMS

    plan_help = " ".join(invoke("plan", "--help").output.split())
    for option in ("--schedule", "--recompute"):
        assert f"{option} TEXT" in plan_help or f"{option}," in plan_help
    assert plan_help.count("; sweep plan: searched).") == len(SEARCHED_TEXT)  # after the text's default
    assert "Default 1 (sweep plan: 1 unless given)" in plan_help
    assert search_space((LLMS["llama3-8b"],))["sequence_parallel"] == "1"
    need_help = " ".join(invoke("need", "--help").output.split())
    assert "A large model: that many of its hosts" in need_help
    assert need_help.count("A large model's default: its GPU's system's") == 3  # gpus, NICs per node, bw


def test_a_refused_plan_leaves_no_default_results_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = invoke(  # refused after its search: heads not divisible by tp
        "plan",
        "--model",
        "llama3-8b",
        "--gpus",
        "64",
        "--tp",
        "64",
        "--pp",
        "1",
        "--cp",
        "1",
        "--global-batch",
        "8",
    )
    assert r.exit_code == 2 and "no feasible layout" in r.output
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("command", ["plan", "grid"])
def test_a_file_that_appears_at_out_while_computing_is_kept(tmp_path, monkeypatch, command):
    # #27: the output is checked before the work and again at the rename: a file another run (or the user)
    # put at --out meanwhile is kept and this run refused, unless --force.
    from netsweep_jax.sweep.analysis import planning
    from netsweep_jax.sweep.io import job

    out = tmp_path / "o.h5"
    module, name = (planning, "plan") if command == "plan" else (job, "_fill")
    compute = getattr(module, name)

    def and_meanwhile(*args, **kwargs):
        result = compute(*args, **kwargs)
        out.write_text("the user's")
        return result

    monkeypatch.setattr(module, name, and_meanwhile)
    r = invoke(command, *LLAMA_8B, "--tp", "1", "--pp", "1", "--out", out)
    assert r.exit_code == 2 and "file exists; pass --force" in r.output, r.output
    # both keep their finished result for --resume, as a data-parallel sweep does (#42: a plan its searches)
    assert "kept in" in r.output
    assert out.read_text() == "the user's" and sorted(p.name for p in tmp_path.iterdir()) == [
        "o.h5",
        "o.h5.partial",
    ]
    r = invoke(command, *LLAMA_8B, "--tp", "1", "--pp", "1", "--out", out, "--force")
    assert r.exit_code == 0, r.output
    assert out.read_bytes().startswith(b"\x89HDF") and sorted(p.name for p in tmp_path.iterdir()) == ["o.h5"]


# Here, not in test_hostile.py: they use the layout kernel's compiled shapes, which this file has warm.


def test_the_largest_accepted_model_and_layout_give_finite_results_in_both_dtypes(tmp_path):
    # #27: a step's FLOP count at the largest shape (1e39) overflowed float32: mfu NaN, TFLOP/s inf. The grid
    # runs in float32; the same runs through the float64 rows path (validation's compiled shape) check it.
    from netsweep_jax.sweep.engine.layouts import LayoutRow, evaluate_rows
    from netsweep_jax.sweep.model.llms import MAX_SIZE

    arch = f"layers={MAX_SIZE},hidden={MAX_SIZE},heads=1,seq={MAX_SIZE},vocab={MAX_SIZE},ffn={MAX_SIZE}"
    gpus = [1, 2**23]  # the global batch's largest, 2^24, in micro-batches of 2 over 2^23 GPUs
    layout = ["--gpus", ",".join(map(str, gpus)), "--global-batch", str(2**24), "--micro-batch", "2"]
    out = tmp_path / "big.h5"
    constants = ["--efficiency", "0.6", "--util", "1", "--memory-efficiency", "1"]  # the rows' below
    r = invoke("grid", "--arch", arch, *layout, "--tp", "1", "--pp", "1", *constants, "--out", out)
    assert r.exit_code == 0, r.output
    with open_cube(out) as ds:
        f32 = {str(k): ds[k].values.astype(np.float64).ravel() for k in ds.data_vars}
    runs = [
        LayoutRow(
            llm=parse_arch(arch), gpu="h100", precision="bf16", gpus=n, global_batch=2**24, micro_batch=2
        )
        for n in gpus
    ]
    f64 = evaluate_rows(runs, np.full(2, 0.6), np.ones(2))
    for name, v in f32.items():
        assert np.isfinite(v).all() and np.isfinite(f64[name]).all(), name
    for name in ("mfu", "tflops_per_gpu", "hardware_tflops_per_gpu", "tokens_per_s", "iteration_time"):
        np.testing.assert_allclose(f32[name], f64[name], rtol=1e-4, err_msg=name)
    assert 0 < f64["mfu"].min() and f64["mfu"].max() < 1


def test_a_measured_bus_bandwidth_is_the_utilization_it_implies(tmp_path):
    # #27: nccl-tests' busbw enters directly: 9 GB/s over 100 Gbit/s links is utilization 0.72.
    def cube(*args):
        out = tmp_path / f"{len(list(tmp_path.iterdir()))}.h5"
        r = invoke("grid", *args, "--out", out)
        assert r.exit_code == 0, r.output
        with open_cube(out) as ds:
            return r.output, {str(k): ds[k].values for k in ds.data_vars}

    said, by_busbw = cube("--model", "resnet50", "--bw", "100", "--nodes", "2,8", "--busbw", "9")
    assert "from --busbw: utilization 0.72 = 8 x busbw 9 GB/s / 100 Gbit/s links" in said
    _, by_util = cube("--model", "resnet50", "--bw", "100", "--nodes", "2,8", "--util", "0.72")
    for name in by_util:
        np.testing.assert_array_equal(by_busbw[name], by_util[name], err_msg=name)
    # A large model: the link named after @, and the GPU system's default utilization (1) is overridden.
    layout = ["--model", "llama3-8b", "--gpus", "64", "--global-batch", "512", "--tp", "8", "--pp", "1"]
    said, by_busbw = cube(*layout, "--busbw", "40@400")
    assert "utilization 1 (the links' full rate)" not in said
    _, by_util = cube(*layout, "--util", "0.8")
    np.testing.assert_array_equal(by_busbw["iteration_time"], by_util["iteration_time"])
    # NCCL's pricing takes the transport's efficiency from nccl-tests curves: one busbw read as a utilization
    # on top of it would count the transport twice, so it is refused, not silently applied.
    for extra in (["--collectives", "nccl"], ["--fabric", "dgx-h100-superpod", "--collectives", "nccl"]):
        r = invoke("grid", *layout, "--busbw", "40@400", *extra, "--out", tmp_path / "nccl.h5")
        assert r.exit_code == 2 and "sweep calibrate --nccl-tests" in r.output, r.output
        assert "Traceback" not in r.output and not (tmp_path / "nccl.h5").exists()


def test_plan_columns_stay_aligned_for_long_layouts_and_two_digit_ranks(tmp_path, monkeypatch):
    from netsweep_jax.sweep.analysis import planning

    text = planning._layout_text
    # One layout's text longer than the column's usual 34 characters (as a DeepSeek layout with vpp and
    # recompute gets), and ranks 10 to 12: every row's numbers still end where the header's do.
    monkeypatch.setattr(
        planning, "_layout_text", lambda row: text(row) + (" x" * 10 if row["layout_tp"] == 2 else "")
    )
    r = invoke("plan", *LLAMA_8B, "--keep", "12", "--out", tmp_path / "p.h5")
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    header = next(line for line in lines if "tokens/s" in line)
    rows = [line for line in lines if line[:4].strip().isdigit()]
    assert len(rows) == 12 and any(" x x" in line for line in rows)
    end = header.index("tokens/s") + len("tokens/s")
    for line in rows:
        number = line[:end].split()[-1]
        assert line[end - len(number) : end] == number and line[end] == " ", line


def test_one_precision_table_says_which_gradient_dtype_each_family_keeps():
    # #24: one table (sweep.model.compute.PRECISIONS) for both families. bf16's own gradients are 2 bytes (the
    # data-parallel family's model cast to bf16: tests/test_transformers.py); the large-model family keeps them
    # in Megatron-LM's fp32 main_grad unless --grad-bytes says otherwise, and its assumed line says so.
    from netsweep_jax.sweep.model.compute import PRECISIONS

    assert PRECISIONS["bf16"].grad_bytes == 2 and PRECISIONS["bf16"].main_grad_bytes == 4
    default = layouts.make_layout_grid("llama3-8b", gpus=8, global_batch=8, precision="bf16,fp16")
    assert "gradients fp32 for bf16 (Megatron-LM main_grad), fp16 for fp16" in default.assumed
    kept = {g: layouts.evaluate_layouts_arrays(layouts.make_layout_grid("llama3-8b", gpus=8, global_batch=8,
            grad_bytes=g))["memory_gb"].ravel()[0] for g in (2, 4)}  # fmt: skip
    params = 8.03e9  # Llama 3 8B, every parameter on the one GPU (ZeRO 0, no TP)
    assert kept[4] - kept[2] == pytest.approx(2 * params / 1e9, rel=0.01)


def test_zero_1s_gather_behind_a_forward_the_all_to_alls_wait_in_never_makes_a_slower_gpu_faster():
    # ZeRO 1's parameter gather hid behind the first forward's compute alone, which the overlapped all-to-alls
    # (comm-bound: the layer's time did not grow with its compute) also hid behind: a slower GPU hid more of the
    # gather and the step fell, 4.771 s at slowdown 0 to 4.769 s at 0.6. Now the gather hides behind the forward
    # as it runs, its compute and its part of what the all-to-alls add.
    g = layouts.make_layout_grid(
        "qwen3-30b-a3b", gpus=64, global_batch=256, tp=1, pp=1, ep=16, zero=1, micro_batch=1, bandwidth=100,
        overlap="grad_reduce+param_gather+moe_a2a", slowdown="0,0.3,0.6", dtype="float64",
    )  # fmt: skip
    step = layouts.evaluate_layouts_arrays(g, FEW_LAYOUTS_BLOCK)["iteration_time"].ravel()
    assert len(step) == 3 and (np.diff(step) > 0).all(), step


def test_a_grid_and_measured_rows_share_one_mapping_to_the_kernel_and_gpus_per_node_takes_effect():
    # #24: a block's tables and a measured run's row reach the kernel through one function (compiled.layout_inputs):
    # the same settings give the same step. --gpus-per-node was hidden by the GPU preset's column of that name
    # (2 and 8 gave one step); now 2 GPUs a node sharing 8 NICs give another step.
    from netsweep_jax.sweep.engine.layout_rows import LayoutRow, evaluate_rows
    from netsweep_jax.sweep.model.llms import LLMS

    g = layouts.make_layout_grid(
        "llama3-70b", gpus=64, global_batch=64, tp=8, gpus_per_node="2,8", nvlink_domain=8, dtype="float64",
        efficiency=0.6, utilization=1, memory_efficiency=1, nics_per_node=8,
    )  # fmt: skip
    grid = layouts.evaluate_layouts_arrays(g, FEW_LAYOUTS_BLOCK)["iteration_time"].squeeze()
    assert grid[0] != grid[1]
    rows = [
        LayoutRow(
            LLMS["llama3-70b"], "h100", "bf16", 64, tp=8, global_batch=64, gpus_per_node=n, nvlink_domain=8,
            nics_per_node=8,
        )
        for n in (2, 8)
    ]  # fmt: skip
    measured = evaluate_rows(rows, np.full(2, 0.6), np.ones(2))["iteration_time"]
    np.testing.assert_allclose(measured, grid, rtol=1e-12)


def test_a_capacity_factor_caps_or_pads_the_busiest_experts_load():
    # Megatron-Core's --moe-expert-capacity-factor C drops the busiest expert's tokens beyond C (it runs
    # min(I, C)); --moe-pad-expert-input-to-capacity pads every expert's input to C: each output is the run at
    # that load imbalance. Dropless (C = 0) leaves the imbalance as given. At EP 1 each GPU runs every expert:
    # the imbalance paces nothing (a hunt), padding still does.
    from netsweep_jax.sweep.engine.layouts import LayoutRow, evaluate_rows
    from netsweep_jax.sweep.model.llms import resolve_llm

    def row(imbalance, ep=8, **settings):
        return LayoutRow(
            resolve_llm("qwen3-30b-a3b"), "h100", "bf16", 16, pp=2, ep=ep, global_batch=512, zero=1,
            imbalance=imbalance, settings=SweepSettings(**settings),
        )  # fmt: skip

    rows = [
        row(imbalance=2.0, capacity_factor=1.25),
        row(imbalance=1.25),
        row(imbalance=1.0, capacity_factor=1.5, pad_to_capacity=1),
        row(imbalance=1.5),
        row(imbalance=2.0),
        row(imbalance=2.0, capacity_factor=3.0),
        row(imbalance=2.0, ep=1),
        row(imbalance=1.0, ep=1),
        row(imbalance=2.0, ep=1, capacity_factor=1.5, pad_to_capacity=1),
        row(imbalance=1.0, ep=1, capacity_factor=1.5, pad_to_capacity=1),
    ]
    out = evaluate_rows(rows, np.full(len(rows), 0.6), np.ones(len(rows)))
    for k, v in out.items():
        np.testing.assert_array_equal(v[[0, 2, 4, 6, 8]], v[[1, 3, 5, 7, 9]], err_msg=k)
    assert out["iteration_time"][8] > out["iteration_time"][7]
    assert out["iteration_time"][1] < out["iteration_time"][4] and out["ep_exposed"][0] < out["ep_exposed"][4]


def test_busiest_expert_matches_the_reference_on_random_loads():
    # engine.compiled.busiest_expert against tests/reference.py's float64 twin: random loads, capacities (0 or
    # >= 1), padding and EP sizes, and by hand at EP 8: I 2, C 1.25 dropping -> 1.25; I 1, C 1.5 padded -> 1.5;
    # dropless -> I; at EP 1 (every GPU every expert) dropless I 3 -> 1, padded to C 1.5 -> 1.5.
    import reference
    from netsweep_jax.sweep.engine.compiled import busiest_expert

    rng = np.random.default_rng(0)
    imbalance = rng.uniform(1.0, 4.0, 200)
    capacity = np.where(rng.random(200) < 0.3, 0.0, rng.uniform(1.0, 4.0, 200))
    pad = (rng.random(200) < 0.5).astype(np.float64)
    ep = rng.choice([1.0, 2.0, 8.0], 200)
    got = np.asarray(busiest_expert(imbalance, capacity, pad, ep))
    want = [reference.busiest_expert(*x) for x in zip(imbalance, capacity, pad, ep)]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    hand = ((2, 1.25, 0, 8), (1, 1.5, 1, 8), (3, 0, 1, 8), (3, 0, 0, 1), (3, 1.5, 1, 1), (3, 1.5, 0, 1))
    assert [float(busiest_expert(*map(np.float32, x))) for x in hand] == [1.25, 1.5, 3.0, 1.0, 1.5, 1.0]
    # and a grid where an imbalance meets EP 1 says it is not read there (built, not run)
    from netsweep_jax.sweep.engine.layouts import make_layout_grid

    said = "read at EP > 1 alone (at EP 1 each GPU runs every expert, sending no token)"
    grid = {"gpus": 16, "global_batch": 64, "imbalance": 1.5}
    assert f"MoE load imbalance {said}" in make_layout_grid("qwen3-30b-a3b", ep="1,8", **grid).assumed
    both = make_layout_grid("qwen3-30b-a3b", ep=1, dispatch_fp8=1, **grid).assumed
    assert f"MoE load imbalance and --moe-dispatch-fp8 {said}" in both
    assert not [p for p in make_layout_grid("qwen3-30b-a3b", ep=8, **grid).assumed if said in p]


def test_a_capacity_below_one_or_padding_without_one_is_refused_by_name(tmp_path):
    out = tmp_path / "plan.h5"
    for args, message in (
        (
            ["--moe-expert-capacity-factor", "0.5"],
            "--moe-expert-capacity-factor 0.5: must be 0 (dropless) or at",
        ),
        (["--moe-pad-expert-input-to-capacity", "1"], "padding needs a capacity"),
        (["--moe-expert-capacity-factor", "1,2"], "give one value"),
    ):
        r = invoke(
            "plan", "--model", "qwen3-30b-a3b", "--gpus", "16", "--global-batch", "512", *args, "--out", out
        )
        assert r.exit_code == 2 and message in r.output and "Traceback" not in r.output, r.output
        assert not list(tmp_path.iterdir())  # nothing written, no OUT.partial


def test_expert_tp_is_a_layout_dim_plan_searches_for_moe_models(tmp_path):
    # #26: --expert-tp (Megatron-Core's --expert-tensor-parallel-size) is a layout dim: a grid's cells equal the
    # measured-row path's at each value, a dense model refuses it above 1 (status 6), and sweep plan searches
    # it beside EP for MoE models only.
    from netsweep_jax.sweep.analysis.planning import search_space
    from netsweep_jax.sweep.engine.layout_rows import LayoutRow, evaluate_rows
    from netsweep_jax.sweep.model.llms import LLMS, resolve_llm

    qwen = resolve_llm("qwen3-30b-a3b")
    g = layouts.make_layout_grid(
        "qwen3-30b-a3b", gpus=16, global_batch=64, tp=2, ep=4, expert_tp="1,2", zero=1, dtype="float64",
        efficiency=0.6, utilization=1, memory_efficiency=1,
    )  # fmt: skip
    grid = layouts.evaluate_layouts_arrays(g, FEW_LAYOUTS_BLOCK)["iteration_time"].squeeze()
    rows = [
        LayoutRow(qwen, "h100", "bf16", 16, tp=2, ep=4, expert_tp=n, global_batch=64, zero=1) for n in (1, 2)
    ]
    np.testing.assert_allclose(
        evaluate_rows(rows, np.full(2, 0.6), np.ones(2))["iteration_time"], grid, rtol=1e-12
    )
    assert grid[0] != grid[1]
    dense = LayoutRow(LLMS["llama3-8b"], "h100", "bf16", 8, expert_tp=2, global_batch=8)
    assert evaluate_rows([dense], np.full(1, 0.6), np.ones(1), outputs=("status",))["status"][0] == 6
    assert search_space((qwen,))["expert_tp"] == "1,2,4,8" and "expert_tp" not in search_space(
        (LLMS["llama3-8b"],)
    )
    # Powers of two up to the expert count and the depth: EP 128 and 256 were capped away at 64.
    assert search_space((qwen,))["ep"].endswith(",64,128") and qwen.experts == 128
    assert search_space((LLMS["deepseek-v3-like"],))["ep"].endswith(",128,256")
    assert search_space((LLMS["llama3-405b"],))["pp"] == "1,2,4,8,16,32,64"
    said = layouts.make_layout_grid(
        "qwen3-30b-a3b", gpus=16, global_batch=64, search=search_space((qwen,))
    ).assumed
    assert "MoE dispatch bf16" in said and any("expert-tp 1,2,4,8" in phrase for phrase in said)
    assert "MoE dispatcher alltoall (NCCL's all-to-all of every copy)" in said
    flex = layouts.make_layout_grid("qwen3-30b-a3b", gpus=16, global_batch=64, ep=8, moe_dispatcher="FLEX")
    assert flex.settings.moe_dispatcher == "flex" and flex.per_sweep()["moe_dispatcher"] == "flex"
    assert not any("dispatcher" in phrase for phrase in flex.assumed)
    for args, message in (
        (["--expert-tp", "0"], "--expert-tp 0: expert_tp must be an integer from 1"),
        (["--attention-efficiency", "0.4,0.5"], "give one value"),
        (["--moe-dispatch-fp8", "2"], "--moe-dispatch-fp8 2: dispatch_fp8 must be"),
        (["--moe-dispatcher", "deepep"], "--moe-dispatcher 'deepep': unknown; known: alltoall, flex"),
        (["--moe-token-dispatcher-type", "alltoall,flex"], "--moe-dispatcher alltoall,flex: give one value"),
    ):
        out = tmp_path / "plan.h5"
        r = invoke(
            "plan", "--model", "qwen3-30b-a3b", "--gpus", "16", "--global-batch", "512", *args, "--out", out
        )
        assert r.exit_code == 2 and message in r.output and "Traceback" not in r.output, r.output
        assert not list(tmp_path.iterdir())


def test_rows_status_is_the_kernels_status_without_its_compile():
    # A runs file is checked as it is read by engine.layout_rows.rows_status (the rules alone, a small compile):
    # on random layouts of a dense and a MoE model it gives the whole kernel's status output, row for row.
    from netsweep_jax.sweep.engine.layout_rows import LayoutRow, evaluate_rows, rows_status
    from netsweep_jax.sweep.model.llms import LLMS, resolve_llm

    rng = np.random.default_rng(3)
    models = (LLMS["llama3-8b"], resolve_llm("qwen3-30b-a3b"))
    rows = [
        LayoutRow(
            models[i % 2],
            "h100",
            "bf16",
            int(rng.choice([8, 16, 24, 64])),
            tp=int(rng.choice([1, 2, 3, 8])),
            pp=int(rng.choice([1, 2, 4, 64])),
            cp=int(rng.choice([1, 2])),
            ep=int(rng.choice([1, 4, 5])),
            micro_batch=int(rng.choice([1, 2, 3])),
            global_batch=int(rng.choice([8, 30, 64])),
            chunks=int(rng.choice([1, 2])),
        )  # fmt: skip
        for i in range(120)
    ]
    got = rows_status(rows)
    want = evaluate_rows(rows, np.full(len(rows), 0.6), np.ones(len(rows)), outputs=("status",))["status"]
    np.testing.assert_array_equal(got, want.astype(int))
    assert len(set(got)) >= 5 and 0 in got


def test_attention_efficiency_without_a_flash_kernel_is_refused(tmp_path):
    """Only the flash kernel's speed reads it: with unfused attention (or a stack that sets it) it was accepted
    and changed nothing."""
    out = tmp_path / "a.h5"
    for given in (["--attention", "unfused"], ["--stack", "megatron-2021"]):
        r = invoke("grid", *LLAMA_8B, *given, "--attention-efficiency", "0.1", "--out", out)
        assert (
            r.exit_code == 2
            and "--attention-efficiency 0.1: the flash-attention kernel's efficiency" in r.output
        )
    assert not out.exists()


def test_a_plans_step_keeps_three_significant_digits_and_no_exponent():
    from netsweep_jax.sweep.analysis.planning import _seconds

    # 3.5 beside 3.48 read as less precise, and a 1234 s step as 1.23e+03.
    cases = {3.5: "3.50", 3.48: "3.48", 10.0: "10.0", 1234.4: "1234", 0.0123: "0.0123", 0.5: "0.500"}
    assert {value: _seconds(value) for value in cases} == cases


def test_a_mixture_of_experts_at_dp_one_still_reduces_its_expert_gradients():
    # A review: TP 4 of EP 1 on 4 GPUs (dp x cp 1, expert DP 4 over 2 hosts) priced no gradient reduction at all,
    # the dense group's size masking the expert one's.
    from netsweep_jax.sweep import evaluate_layouts

    one = dict(tp=4, ep=1, expert_tp=1, gpus=4, global_batch=8, gpus_per_node=2, sequence_parallel=1, pp=1,
               cp=1, micro_batch=1, recompute="none", bandwidth="100,400")  # fmt: skip
    ds = evaluate_layouts("qwen3-30b-a3b", zero=0, **one)
    synced = ds.dp_exposed.squeeze().values
    assert synced[0] > synced[1] > 0  # its all-reduce, slower on slower links
