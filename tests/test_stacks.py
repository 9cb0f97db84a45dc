"""Stack presets (sweep.model.stacks): declared once, read by a runs file's ``stack`` column and ``--stack``."""

import json
import re

import h5py
import numpy as np
import pytest

from helpers import FEW_LAYOUTS_BLOCK, TOLERANCE, edited_runs_file, invoke
from netsweep_jax.sweep.analysis import llm_constants, llm_report, llm_validation
from netsweep_jax.sweep.analysis.layout_jobs import layout_grid_from
from netsweep_jax.sweep.analysis.llm_predict import metric, predict
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.core.schema import assumed_line, option_of
from netsweep_jax.sweep.engine.layout_grid import arch_row
from netsweep_jax.sweep.engine.layouts import evaluate_layouts_arrays, make_layout_grid
from netsweep_jax.sweep.io.runs import DATASET, read_runs, settings
from netsweep_jax.sweep.large_models import evaluate_layouts
from netsweep_jax.sweep.model.compute import GPUS, die
from netsweep_jax.sweep.model.llms import LLMS, parse_arch
from netsweep_jax.sweep.model.stacks import (
    CONSTANTS_FILE,
    DEFAULT_STACK,
    STACKS,
    constants,
    stack_of,
    stack_preset,
)


def test_a_rows_stack_and_year_pick_one_preset():
    assert stack_of("", 2021) == stack_of("megatron", 2022) == "megatron-2021"
    assert stack_of("megatron", 2023) == stack_of("", 2025) == "megatron-core"
    assert stack_of("fsdp", 2021) == "fsdp" and stack_of("megatron-2021", 2025) == "megatron-2021"
    with pytest.raises(
        InputError, match="stack 'jax' must be one of megatron-2021, megatron-core, fsdp, megatron "
    ):
        stack_of("jax", 2025)
    by_group = {}
    for run in read_runs(DATASET):
        by_group.setdefault(run.group, set()).add(run.preset)
    assert by_group == {
        "sc21-t1": {"megatron-2021"},
        "sc21-t2": {"megatron-2021"},
        "k23": {"megatron-2021"},
        "megatron-lm": {"megatron-core"},
        "megatron-bridge": {"megatron-core"},
        "torchtitan": {"fsdp"},
        "llm-foundry": {"fsdp"},
    }


def test_each_preset_fills_a_row_as_its_rules_say():
    runs = {r.id: r for r in read_runs(DATASET)}
    # SC'21 (2021): nothing stated but the layout; the 2021-22 stack's defaults, each said.
    row, assumed = settings(runs["SC21-T1-07"])
    old = STACKS["megatron-2021"]
    assert (
        (row.recompute, row.zero, row.attention, row.grad_bytes, row.settings.overlap, row.sequence_parallel)
        == (
            old.recompute,
            old.zero,
            old.attention,
            old.grad_bytes,
            "none",
            0,
        )
        == ("full", 0, "unfused", 0, "none", 0)
    )
    assert "ZeRO 0" in assumed and "overlap none" in assumed and "bf16 gradients" not in assumed
    # A 2025 recipe with TP: SP on, so TP communication overlapped too; bf16 gradients, the distributed optimizer.
    row, assumed = settings(runs["MB-H100-02"])
    assert row.tp > 1 and (row.sequence_parallel, row.settings.overlap, row.grad_bytes, row.zero) == (
        1,
        "grad_reduce+param_gather+tp_comm",
        2,
        1,
    )
    # Without TP no tp_comm: the recipes' switch needs TP >= 2 with SP.
    row, _ = settings(runs["MLM-LLAMA-01"])
    assert row.tp == 1 and row.settings.overlap == "grad_reduce+param_gather"
    # FSDP on an H100 die: FlashAttention-2's efficiency; on an A100, the documented default.
    row, assumed = settings(runs["fsdp-tt_70b_fsdp32_tp8_bf16"])
    assert (
        row.settings.attention_efficiency == 0.33
        and "attention efficiency 0.33 (FlashAttention-2 on Hopper)" in assumed
    )
    (a100,) = [r for r in runs.values() if r.preset == "fsdp" and r.gpu == "a100" and r.pp == 1][:1]
    assert settings(a100)[0].settings.attention_efficiency == 0.5


def test_a_preset_named_in_the_stack_column_is_the_year_rules_preset(tmp_path):
    # megatron of 2025 is megatron-core: the same row under the preset's name fills the same settings; under
    # megatron-2021 the old stack's, whatever its year.
    ids = ("MB-H100-02", "MLM-LLAMA-03", "K23-T5-04")
    path = edited_runs_file(
        tmp_path, lambda rows: [{**r, "stack": "megatron-core"} for r in rows if r["id"] in ids[:2]]
    )
    named = read_runs(path)
    shipped = {r.id: r for r in read_runs(DATASET)}
    for run in named:
        assert run.preset == "megatron-core" and run.stack == "megatron"
        assert settings(run) == settings(shipped[run.id])
    path = edited_runs_file(
        tmp_path, lambda rows: [{**r, "stack": "MEGATRON-2021"} for r in rows if r["id"] == "MB-H100-02"]
    )
    (old,) = read_runs(path)
    row, _ = settings(old)
    assert (old.preset, row.recompute, row.zero, row.attention, row.settings.overlap) == (
        "megatron-2021",
        "full",
        0,
        "unfused",
        "none",
    )


def test_an_unknown_stack_is_refused_naming_the_presets():
    with pytest.raises(InputError) as err:
        stack_preset("deepspeed")
    assert str(err.value) == "stack 'deepspeed': not a stack; stacks: megatron-2021, megatron-core, fsdp"
    assert stack_preset(" Megatron-Core ").name == "megatron-core"
    with pytest.raises(InputError, match="fsdp,megatron-core: give one stack"):
        stack_preset("fsdp,megatron-core")


def test_every_preset_says_where_its_defaults_come_from():
    for stack in STACKS.values():
        for name in (
            "micro_batch",
            "recompute",
            "sequence_parallel",
            "zero",
            "attention",
            "grad_bytes",
            "overlap",
        ):
            assert stack.sources.get(name), (stack.name, name)
        assert stack.overlap_with(1, 1) == stack.overlap_with(8, 0) == stack.overlap.replace("+tp_comm", "")


# --stack on the layout sweeps: the preset's defaults and its constants where not given; validate --llm's
# predictions reproduced.


def test_a_stack_sets_what_is_not_given_and_an_option_still_wins():
    grid = make_layout_grid("llama3-8b", gpus=8, global_batch=8, tp="1,2", stack="megatron-2021")
    shipped = json.loads(CONSTANTS_FILE.read_text())
    old = shipped["stacks"]["megatron-2021"]["h100"]
    assert grid.names["recompute"] == ("full",) and grid.names["attention"] == ("unfused",)
    assert [float(grid.values[n][0]) for n in ("zero", "sequence_parallel", "grad_bytes")] == [0, 0, 0]
    assert (
        grid.settings.overlap == "none" and grid.values["efficiency"][0] == old["efficiency"]
    )  # to the last bit
    assert grid.settings.memory_efficiency == shipped["memory_efficiency"]
    assert grid.values["utilization"][0] == shipped["utilization"]
    phrase = grid.assumed[0]
    assert phrase.startswith(
        "stack megatron-2021 (Megatron-LM and DeepSpeed of 2021-22; sweep/model/stacks.py): "
    )
    assert f"h100: {old['from']}; sweep/data/llm_constants.json of {shipped['date']}" in phrase
    assert not any(
        p.startswith(("matrix efficiency", "--zero", "overlap", "gradients")) for p in grid.assumed[1:]
    )
    # Unfused attention reads no flash kernel's efficiency: not said beside it (was "flash-attention efficiency
    # 0.5" after "attention unfused").
    assert not any("flash-attention efficiency" in p for p in grid.assumed)
    given = make_layout_grid(
        "llama3-8b", gpus=8, global_batch=8, stack="megatron-2021", zero=1, recompute="selective", efficiency=0.5,
        overlap="grad_reduce",
    )  # fmt: skip
    assert given.names["recompute"] == ("selective",) and given.values["zero"][0] == 1
    assert given.values["efficiency"][0] == 0.5 and given.settings.overlap == "grad_reduce"
    assert (
        "ZeRO" not in given.assumed[0]
        and "recompute" not in given.assumed[0]
        and "overlap" not in given.assumed[0]
    )
    assert (
        "matrix efficiency" not in given.assumed[0]
        and f"memory efficiency {constants('megatron-2021', 'h100').memory_efficiency:.12g},"
        in given.assumed[0]
    )
    # Without a stack: the default stack's fitted constants (what validate --llm predicts with), said with their
    # source, and nothing else of it: the documented defaults. To the 12 digits an option takes: given back, the
    # same sweep to 1e-12 (rounded to 4, a plan's best layout changed: a hunt).
    plain = make_layout_grid("llama3-8b", gpus=8, global_batch=8)
    core = constants(DEFAULT_STACK, "h100")
    said = (
        f"matrix efficiency {core.efficiency:.12g}, memory efficiency {core.memory_efficiency:.12g}, "
        f"utilization {core.utilization:.12g}: the default stack megatron-core's fitted constants (h100: {core.source}; "
        "--stack names another)"
    )
    assert (
        plain.assumed[0].startswith("h100: DGX H100") and plain.assumed[1] == said
    )  # after the GPU's system
    assert [plain.values[k][0] for k in ("efficiency", "utilization")] == [core.efficiency, core.utilization]
    assert plain.settings.memory_efficiency == core.memory_efficiency and plain.values["zero"].size == 1
    assert not any("stack megatron" in p or "matrix efficiency" in p for p in plain.assumed[2:])
    assert plain.names["recompute"] == ("none",) and plain.settings.overlap == "grad_reduce+param_gather"
    # An option given wins; with every constant given, the default stack is not named.
    given = make_layout_grid(
        "llama3-8b", gpus=8, global_batch=8, efficiency=0.5, memory_efficiency=1, utilization=1
    )
    assert list(given.values["efficiency"]) == [0.5] and not any("default stack" in p for p in given.assumed)
    r = invoke("grid", "--model", "llama3-8b", "--gpu", "a100,h100", "--gpus", "8", "--global-batch", "8")
    assert (
        r.exit_code == 2
        and r.output.startswith(
            "error: --efficiency not given, and the default stack megatron-core's differs by GPU die "
            f"({constants(DEFAULT_STACK, 'a100').efficiency:.4g} on a100"
        )
        and r.output.rstrip().endswith("where a sweep holds one for every GPU; sweep one die, or give it")
    )
    assert make_layout_grid("llama3-8b", gpu="a100,h100", gpus=8, global_batch=8, efficiency=0.6).size == 2


def test_a_stack_with_tp_overlaps_tp_comm_only_with_sequence_parallelism():
    core = make_layout_grid("llama3-8b", gpus=8, global_batch=8, tp="1,2", stack="megatron-core")
    assert core.settings.overlap == "grad_reduce+param_gather+tp_comm" and core.values["grad_bytes"][0] == 2
    off = make_layout_grid(
        "llama3-8b", gpus=8, global_batch=8, tp=2, sequence_parallel=0, stack="megatron-core"
    )
    assert off.settings.overlap == "grad_reduce+param_gather"
    # at TP 1 alone there is no TP communication: not said as overlapped, as a runs file's row says it (a hunt)
    for tp in ({"tp": 1}, {}):  # given, or left at its default 1 (a review)
        one = make_layout_grid("llama3-8b", gpus=8, global_batch=8, stack="megatron-core", **tp)
        assert one.settings.overlap == "grad_reduce+param_gather" and "tp_comm" not in " ".join(one.assumed)
    with pytest.raises(InputError, match="megatron-core: overlaps TP communication only with sequence"):
        make_layout_grid("llama3-8b", gpus=8, global_batch=8, sequence_parallel="0,1", stack="megatron-core")
    # Given by hand with SP off, tp_comm hides nothing (the kernel's rule, Megatron-LM's), and the line says so.
    said = "overlap tp_comm hides nothing where sequence parallelism is off (Megatron-LM refuses the pair)"
    mine = dict(gpus=8, global_batch=8, tp=2, overlap="grad_reduce+tp_comm")
    assert said in make_layout_grid("llama3-8b", sequence_parallel="0,1", **mine).assumed
    assert said not in make_layout_grid("llama3-8b", sequence_parallel=1, **mine).assumed
    # at ZeRO 0 nothing is gathered: param_gather not said as overlapped (a hunt; Megatron-LM refuses
    # --overlap-param-gather without its distributed optimizer), kept where some ZeRO shards
    for zero, overlap in (("0", "grad_reduce+tp_comm"), ("0,1", "grad_reduce+param_gather+tp_comm")):
        grid = make_layout_grid("llama3-8b", gpus=8, global_batch=8, tp=2, zero=zero, stack="megatron-core")
        assert grid.settings.overlap == overlap


def test_a_stack_of_micro_batches_per_stage_takes_dp_for_the_gpus(tmp_path):
    # A hunt: --dp without --gpus (as the help allows) read the empty --gpus, "--gpus '': give at least one value"
    for pp in ("1", "4"):
        layout = ["--tp", "1", "--pp", pp, "--cp", "1", "--dp", "8", "--global-batch", "64"]
        r = invoke("grid", "--model", "llama3-8b", "--stack", "fsdp", "--gpu", "h100", *layout, "--out",
                   tmp_path / f"{pp}.h5", "-q")  # fmt: skip
        assert r.exit_code == 0, r.output
    assert "micro-batch 2 (as many micro-batches as stages)" in r.output, r.output


def test_a_stacks_constants_follow_the_die_and_one_sweep_takes_one_value():
    same_die = make_layout_grid("llama3-8b", gpu="h100,h200,h100-hbm2e", gpus=8, global_batch=8, stack="fsdp")
    assert same_die.settings.attention_efficiency == 0.33 and same_die.values["zero"][0] == 3
    with pytest.raises(InputError) as err:
        make_layout_grid("llama3-8b", gpu="a100,h100", gpus=8, global_batch=8, stack="megatron-core")
    a100 = constants("megatron-core", "a100").efficiency
    assert str(err.value).startswith(
        f"stack megatron-core: its efficiency differs by GPU die ({a100:.4g} on a100"
    )
    assert str(err.value).endswith("sweep one die, or give --efficiency")
    given = make_layout_grid(
        "llama3-8b", gpu="a100,h100", gpus=8, global_batch=8, stack="megatron-core", efficiency="0.5,0.6"
    )
    assert list(given.values["efficiency"]) == [0.5, 0.6]
    with pytest.raises(InputError, match="stack fsdp: its attention efficiency differs by GPU die"):
        make_layout_grid("llama3-8b", gpu="a100,h100", gpus=8, global_batch=8, stack="fsdp", efficiency=0.5)


def test_the_cli_takes_one_stack_and_refuses_an_unknown_one_in_one_line(tmp_path):
    r = invoke("plan", "--model", "llama3-8b", "--gpus", "8", "--global-batch", "8", "--stack", "deepspeed",
               "--out", tmp_path / "p.h5")  # fmt: skip
    assert r.exit_code == 2 and r.output.strip().splitlines()[-1].endswith(
        "--stack 'deepspeed': not a stack; stacks: megatron-2021, megatron-core, fsdp"
    ), r.output
    assert not (tmp_path / "p.h5").exists()
    r = invoke("grid", "--model", "resnet50", "--bw", "10", "--stack", "fsdp", "--out", tmp_path / "g.h5")
    assert r.exit_code == 2 and "--stack applies to large-model presets" in r.output, r.output
    with pytest.raises(
        InputError, match="stack 'bogus': not a stack"
    ):  # the Python API's keyword, as --stack
        evaluate_layouts("llama3-8b", gpus=8, global_batch=8, stack="bogus")
    helped = invoke("plan", "--help").output
    assert "--stack" in helped and all(name in " ".join(helped.split()) for name in STACKS)


def _arch(m):
    """``--arch`` of a runs file's shape (the GPT shape of a row without a preset, or a preset at another
    sequence length: gpt-oss-120b's MoE at 8192, MB-GB300-01 and MB-GB200-05)."""
    keys = dict(layers=m.layers, hidden=m.hidden, heads=m.heads, seq=m.seq, vocab=m.vocab, ffn=m.ffn,
                kv_heads=m.kv_heads, head_dim=m.head_dim, mlp=m.mlp, tied=int(m.tied), experts=m.experts,
                top_k=m.top_k, expert_ffn=m.expert_ffn if m.experts else 0, shared_experts=m.shared_experts,
                first_dense=m.first_dense)  # fmt: skip
    return ",".join(f"{k}={v}" for k, v in keys.items() if v)


def _layout(run):
    """The options a user gives for a published run: its model, GPU, precision and layout (with the micro-batch
    and schedule the file's rules give where the source does not state them), what its source states, and its
    stack; nothing else."""
    row, _ = settings(run)
    options = dict(
        gpu=run.gpu, precision=run.precision, gpus=run.gpus, tp=run.tp, pp=run.pp, dp=row.dp, cp=run.cp,
        ep=run.ep, micro_batch=row.micro_batch, global_batch=run.global_batch,
        schedule="1f1b" if row.chunks == 1 else f"interleaved:{row.chunks}", stack=run.preset,
    )  # fmt: skip
    stated = dict(
        recompute=run.recompute, sequence_parallel=run.sequence_parallel, zero=run.zero, attention=run.attention,
        overlap=run.overlap, expert_tp=run.expert_tp, offload_layers=run.offload_layers or None,
        moment_bytes=run.moment_bytes if run.moment_bytes != 4 else None, mtp_layers=run.mtp_layers,
        moe_dispatcher=run.moe_dispatcher,
    )  # fmt: skip
    options.update({k: v for k, v in stated.items() if v not in (None, "")})
    if LLMS.get(run.model) == run.llm:
        return {"model": run.model, **options}
    arch = parse_arch(_arch(run.llm))
    assert arch_row(arch) == arch_row(run.llm), run.id  # the shape the row gives, as --arch spells it
    return {"arch": _arch(run.llm), **options}


def test_the_shipped_constants_are_validate_llms_fit():
    shipped = json.loads(CONSTANTS_FILE.read_text())
    fresh = llm_constants.document(llm_validation.run_validation(DATASET), shipped["date"])

    def same(a, b, where):
        if isinstance(a, float):
            # The fit's Adam steps carry the last bits the tests' XLA flags change (conftest.py: no LLVM
            # optimization) to about 1e-8; the CLI's XLA reproduces the file's to the last bit.
            assert b == pytest.approx(a, rel=1e-6), where
        elif isinstance(a, dict):
            assert a.keys() == b.keys(), where
            for key in a:
                same(a[key], b[key], f"{where}.{key}")
        else:
            assert a == b, where

    same(shipped, fresh, "llm_constants.json")
    assert set(shipped["stacks"]) == set(STACKS)


def test_every_shipped_row_is_reproduced_by_its_layout_and_its_stack():
    # Done means (#41): each published run of the runs file validate --llm reads, as sweep grid --stack sees it
    # (its layout given, its stack, nothing else: the grid the API and the CLI build, layout_grid_from),
    # predicts what validate --llm predicts for it. 82 grids of one layout each in float64, in blocks of 1 x 64 lanes
    # (FEW_LAYOUTS_BLOCK): one compile the suite shares, then about 0.01 s a row (the default block's 8 x 8,192
    # lanes cost 0.17 s a row).
    runs = read_runs(DATASET)
    v = llm_validation.run_validation(DATASET)
    shipped = json.loads(CONSTANTS_FILE.read_text())
    efficiency = {
        f"{s}/{d}": e["efficiency"] for s, dies in shipped["stacks"].items() for d, e in dies.items()
    }
    with_file = predict(runs, efficiency, shipped["utilization"], shipped["memory_efficiency"])
    time, tflops, free = np.empty(len(runs)), np.empty(len(runs)), np.empty(len(runs))
    for i, run in enumerate(runs):
        options = {k: str(v) for k, v in _layout(run).items()}
        grid = layout_grid_from({**options, "x64": True}, set(options))
        assert grid.size == 1, run.id
        out = evaluate_layouts_arrays(grid, block_configs=FEW_LAYOUTS_BLOCK)
        time[i], tflops[i] = out["iteration_time"].item(), out["tflops_per_gpu"].item()
        free[i] = out["memory_free_gb"].item()
    predicted = metric(runs, time, tflops)
    np.testing.assert_allclose(time, with_file["iteration_time"], rtol=1e-14)
    np.testing.assert_allclose(predicted, with_file["predicted"], rtol=1e-14)
    np.testing.assert_allclose(predicted, v.outputs["trained"]["predicted"], rtol=1e-6)  # the fit's, as above
    # Every one of them ran: each fits in memory as its stack allocates it (the report's memory line says so).
    np.testing.assert_allclose(free, v.outputs["trained"]["memory_free_gb"], rtol=1e-12)
    assert (free > 0).all(), [r.id for r, f in zip(runs, free) if f <= 0]
    assert {(r.preset, die(r.gpu)) for r in runs} == {  # every stack, and every die of each
        ("megatron-2021", "a100"),
        ("megatron-core", "h100"),
        ("megatron-core", "gb200"),
        ("megatron-core", "b200"),  # gpt-oss-120b's rows (MoE, held out) on the Blackwell systems
        ("megatron-core", "b300"),
        ("megatron-core", "gb300"),
        ("fsdp", "a100"),
        ("fsdp", "h100"),
    }


def test_grid_with_a_stack_gives_a_published_run_as_validate_predicts_it(tmp_path):
    # MB-H100-01 (Llama 3 8B on 8 H100s, a 2025 recipe): sweep grid on its layout and stack, in one process
    # (float32: the layout kernel's default block, which the suite's layout sweeps compile).
    (run,) = [r for r in read_runs(DATASET) if r.id == "MB-H100-01"]
    options = _layout(run)
    args = ["grid", "--model", options.pop("model"), "--stack", options.pop("stack"), "--quiet"]
    for name, value in options.items():
        args += [option_of(name), value]
    r = invoke(*args, "--out", tmp_path / "g.h5")
    assert r.exit_code == 0, r.output
    assumed = next(line for line in r.stderr.splitlines() if line.startswith("assumed: "))
    assert assumed.startswith(
        "assumed: stack megatron-core (Megatron-Core recipes (NeMo, Megatron-Bridge)"
    ), assumed
    assert "sweep/data/llm_constants.json of " in assumed
    with h5py.File(tmp_path / "g.h5") as f:
        step = float(f["iteration_time"][...].item())
        assert "stack megatron-core" in f.attrs["assumed"]
    shipped = json.loads(CONSTANTS_FILE.read_text())  # validate --llm's (the test above)
    efficiency = {"h100": shipped["stacks"]["megatron-core"]["h100"]["efficiency"]}
    expected = predict([run], efficiency, shipped["utilization"], shipped["memory_efficiency"])[
        "iteration_time"
    ][0]
    assert step == pytest.approx(expected, rel=TOLERANCE["layout"]["float32"])


def test_plan_with_a_stack_searches_the_layout_only():
    # sweep plan's grid (search=True): the stack's settings are set, not searched; on a published run's layout,
    # one layout, the grid sweep grid evaluates.
    (run,) = [r for r in read_runs(DATASET) if r.id == "MB-H100-07"]  # DeepSeek-V3: a MoE, expert TP searched
    options = {k: str(v) for k, v in _layout(run).items()}
    planned = layout_grid_from(dict(options), set(options), search=True)
    gridded = layout_grid_from(dict(options), set(options))
    assert planned.size == 1 and planned.values.keys() == gridded.values.keys()
    assert (
        all((planned.values[k] == gridded.values[k]).all() for k in planned.values)
        and planned.names == gridded.names
    )
    bare = {"model": "qwen3-30b-a3b", "gpus": "64", "global_batch": "512", "stack": "fsdp"}
    searched = layout_grid_from(dict(bare), set(bare), search=True)
    assert searched.names["recompute"] == ("none",) and list(searched.values["zero"]) == [3]
    assert list(searched.values["expert_tp"]) == [1] and list(searched.values["sequence_parallel"]) == [1]
    assert len(searched.values["tp"]) > 1 and len(searched.names["schedule"]) == 2
    plain = layout_grid_from(
        {k: v for k, v in bare.items() if k != "stack"}, set(bare) - {"stack"}, search=True
    )
    assert len(plain.names["recompute"]) == 3 and len(plain.values["zero"]) == 3


def test_the_constants_file_covers_every_stack_and_die_and_its_writer_keeps_a_file(tmp_path, capsys):
    shipped = json.loads(CONSTANTS_FILE.read_text())
    dies = {die(g) for g in GPUS}
    assert all(set(shipped["stacks"][name]) == dies for name in STACKS)  # a new preset's die: write it again
    out = tmp_path / "constants.json"
    assert llm_constants.main(["--out", str(out)]) == 0 and capsys.readouterr().out == f"wrote {out}\n"
    written = json.loads(out.read_text())
    assert written["stacks"] == json.loads(json.dumps(written["stacks"])) and written["loss"] > 0
    assert written["training_groups"] == ["llm-foundry", "megatron-bridge", "sc21-t1"]
    assert len(written["training_rows"]) == 29  # the dense runs of the three sources
    core = written["stacks"]["megatron-core"]
    assert core["h100"]["from"] == "fitted on megatron-bridge (4 megatron-core rows on h100)"
    assert core["a100"]["from"].startswith("the a100's pooled fit: llm-foundry, sc21-t1 (11 a100 rows")
    assert core["b200"]["from"] == "fitted on megatron-bridge (2 megatron-core rows on b200)"
    assert core["b300"] == {"efficiency": 0.6, "from": "default: no training row on b300"}
    out.write_text("mine")
    assert llm_constants.main(["--out", str(out)]) == 2 and out.read_text() == "mine"
    assert capsys.readouterr().err == f"error: --out {out}: file exists; pass --force to overwrite it\n"
    assert llm_constants.main(["--out", str(out), "--force"]) == 0 and json.loads(out.read_text())


def test_the_report_gives_the_held_out_errors_by_stack_and_die():
    v = llm_validation.run_validation(DATASET)
    table = [
        line.split(" | ")
        for line in llm_report.by_stack_and_die(v)
        if line.startswith("| ") and "---" not in line
    ]
    rows = {(cells[0][2:], cells[1]): cells for cells in table[1:]}
    assert set(rows) == {(r.preset, die(r.gpu)) for r in v.runs}
    dense = [int(cells[3].split(",")[0]) for cells in rows.values() if cells[3] != "-"]
    assert sum(dense) == sum(not t and not r.moe for r, t in zip(v.runs, v.train)) == 37
    held = [
        not t and not r.moe and r.preset == "megatron-core" and die(r.gpu) == "h100"
        for r, t in zip(v.runs, v.train)
    ]
    n, med, mx = v.summary("trained", held)
    assert rows[("megatron-core", "h100")][3] == f"{n}, {llm_report.pct(med)} / {llm_report.pct(mx)}"
    assert rows[("megatron-core", "gb200")][2] == f"{v.fits['trained'].efficiency['megatron-core/gb200']:.3f}"
    assert rows[("megatron-core", "gb200")][3] == "-"  # its dense rows are Megatron-Bridge's: training


def test_a_stacks_recipe_sets_adam_moments_for_its_model_and_an_option_still_wins():
    # Megatron-Bridge's DeepSeek-V3 recipe keeps both Adam moments in bf16 (2 bytes); its Llama recipes fp32.
    layout = dict(gpus=256, global_batch=4096, tp=1, pp=4, ep=64, gpu="gb200", stack="megatron-core")
    deepseek = make_layout_grid("deepseek-v3-like", **layout)
    assert deepseek.settings.moment_bytes == 2.0
    assert "Adam moments of 2 bytes (Megatron-Bridge@00b7660's DeepSeek-V3 recipe" in deepseek.assumed[0]
    # Its architecture's multi-token prediction, trained unless --mtp-layers says otherwise, is said too.
    assert (
        "multi-token-prediction depths 1 for deepseek-v3-like (the model's; --mtp-layers 0: none)"
        in deepseek.assumed
    )
    assert make_layout_grid("deepseek-v3-like", **layout, mtp_layers=0).models[0].mtp_layers == 0
    assert not any(
        "multi-token" in a for a in make_layout_grid("deepseek-v3-like", **layout, mtp_layers=0).assumed
    )
    assert (
        make_layout_grid("deepseek-v3-like", **layout, moment_bytes=1).settings.moment_bytes == 1.0
    )  # fp8, as given
    llama = make_layout_grid("llama3-70b", gpus=64, global_batch=64, gpu="gb200", stack="megatron-core")
    assert llama.settings.moment_bytes == 4.0 and "Adam moments" not in llama.assumed[0]
    assert make_layout_grid("deepseek-v3-like", **{**layout, "stack": "fsdp"}).settings.moment_bytes == 4.0
    with pytest.raises(
        InputError, match=r"Adam moments differ by model \(2 bytes for deepseek-v3-like, 4 bytes for "
    ):
        make_layout_grid("deepseek-v3-like,llama3-70b", **{**layout, "ep": 1})


def test_megatron_2021_has_no_context_parallelism_unless_given():
    # Context parallelism came with Megatron-Core: a plan of the 2021 stack searched CP 2 and 4 (a hunt).
    search = {"cp": "1,2,4"}  # sweep plan's search space for the layout dims not given
    old = make_layout_grid("llama3-8b", gpus="64", global_batch="256", stack="megatron-2021", search=search)
    assert list(old.coords()["cp"]) == [1] and "no context parallelism (CP 1)" in old.assumed[0]
    given = make_layout_grid("llama3-8b", gpus="64", global_batch="256", stack="megatron-2021", cp="2")
    assert list(given.coords()["cp"]) == [2]
    core = make_layout_grid("llama3-8b", gpus="64", global_batch="256", stack="megatron-core", search=search)
    assert list(core.coords()["cp"]) == [1, 2, 4]


def test_what_a_stack_never_ran_is_priced_as_asked_and_said():
    # fp8 and FlashAttention came to Megatron-LM in December 2022: a plan of the 2021-22 stack priced them in
    # silence (a hunt); its own defaults say nothing of the kind.
    asked = make_layout_grid(
        "llama3-8b", gpu="h100", gpus="64", global_batch="256", stack="megatron-2021", precision="fp8",
        attention="flash", tp="8", pp="1",
    )  # fmt: skip
    assert asked.assumed[0].count("; what megatron-2021 never ran, priced as asked: precision fp8 (") == 1
    assert "attention flash (FlashAttention came to Megatron-LM in December 2022)" in asked.assumed[0]
    assert list(asked.coords()["precision"]) == ["fp8"]
    own = make_layout_grid(
        "llama3-8b", gpu="h100", gpus="64", global_batch="256", stack="megatron-2021", tp="8"
    )
    core = make_layout_grid(
        "llama3-8b", gpu="h100", gpus="64", global_batch="256", stack="megatron-core", precision="fp8", tp="8"
    )
    assert "never ran" not in own.assumed[0] and "never ran" not in core.assumed[0]
    # context parallelism given to a stack that had none (a hunt: megatron-2021's CP 2 priced unsaid); CP 1 is no news
    cp = make_layout_grid("llama3-8b", gpus="64", global_batch="256", stack="megatron-2021", tp="8", cp="1,2")
    assert "never ran, priced as asked: cp 2 (it came with Megatron-Core)" in cp.assumed[0]
    one = make_layout_grid("llama3-8b", gpus="64", global_batch="256", stack="megatron-2021", tp="8", cp="1")
    assert "never ran" not in one.assumed[0]


def test_a_stack_of_one_micro_batch_a_stage_sets_it_as_a_runs_file_row_gets_it():
    # A hunt: grid --stack fsdp on a run's layout with pp 4 kept micro-batch 1, where validate --llm priced the
    # row at global batch / (dp x pp) = 2: 24% apart. Given one layout with pp > 1, the stack sets it too.
    options = dict(model="llama3-8b", gpu="h100", gpus="64", tp="1", pp="4", global_batch="128", stack="fsdp")
    grid = layout_grid_from(dict(options), set(options))
    assert grid.values["micro_batch"].tolist() == [2.0]
    assert "micro-batch 2 (as many micro-batches as stages)" in assumed_line(grid.assumed)
    # a plan searches the micro-batch (a review: one value fixed from tp 1 for every tp searched)
    searched = layout_grid_from(dict(options), set(options), search=True)
    assert searched.values["micro_batch"].tolist() == [1, 2, 4, 8]
    for other in (
        {"pp": "1", "tp": "1,2"},
        {"micro_batch": "4"},
        {"stack": "megatron-core"},
    ):  # none pipelines, given, no rule
        given = {**options, **other}
        assert layout_grid_from(dict(given), set(given)).values["micro_batch"].tolist() == [
            float(other.get("micro_batch", 1))
        ]
    # layouts of lists that would each run another (a hunt: lists kept micro-batch 1 for every one, a cell 38% off
    # its own grid's): refused, as a sweep holds one micro-batch
    for other, runs in (({"pp": "1,4"}, "1, 2"), ({"tp": "1,2"}, "2, 4")):
        given = {**options, **other}
        with pytest.raises(
            InputError, match=rf"which is {re.escape(runs)} across these layouts.*give --micro-batch"
        ):
            layout_grid_from(dict(given), set(given))
    # lists whose layouts all run one (pp 1 its default, 1; pp 4 at 64 / (16 x 4) = 1): that one (a review)
    given = {**options, "pp": "1,4", "global_batch": "64"}
    assert layout_grid_from(dict(given), set(given)).values["micro_batch"].tolist() == [1.0]


@pytest.mark.parametrize(
    "metric,value,said",
    [
        ("tokens_per_s_per_GPU", "512000", "512000 tokens/s a GPU"),
        ("s_per_iter", "0.0001", "0.0001 s a step"),
    ],
)
def test_a_rate_no_gpu_can_run_at_is_refused_whatever_its_metric(tmp_path, metric, value, said):
    # A hunt: only a TFLOP/s above the peak was refused; a job's tokens/s in the per-GPU column was priced.
    path = tmp_path / "runs.csv"
    path.write_text(
        "id,group,preset,gpu,gpus,tp,pp,global_batch,stack,metric,value\n"
        "r1,mine,llama3-8b,h100,16,1,1,64,fsdp,tokens_per_s_per_GPU,9000\n"
        f"r2,held,llama3-8b,h100,64,1,4,128,fsdp,{metric},{value}\n"
    )
    with pytest.raises(
        InputError, match=f"runs.csv:3 \\(row r2\\): value {said} is .* above the h100's dense"
    ):
        read_runs(path)


def test_a_stacks_sequence_parallelism_at_tp_1_is_said_inert():
    # A hunt: "sequence parallelism on" at TP 1, where it means nothing
    one = make_layout_grid("llama3-8b", gpus=8, global_batch=8, tp=1, stack="fsdp")
    assert "sequence parallelism on (inert at TP 1)" in " ".join(one.assumed)
    wide = make_layout_grid("llama3-8b", gpus=8, global_batch=8, tp="1,2", stack="fsdp")
    assert "sequence parallelism on," in " ".join(wide.assumed) and "inert" not in " ".join(wide.assumed)


def test_fsdp_gathers_once_a_step_under_a_pipeline_and_says_so():
    # PyTorch's pipelining runs FSDP2 so (torchtitan's reshard_after_forward = not pp_enabled): the fsdp stack
    # sets it, says it where a layout pipelines, and its runs file rows take it; Megatron's stacks keep
    # Megatron-FSDP's every micro-batch, and an option still wins
    piped = make_layout_grid(
        "llama3-8b", gpus=16, global_batch=16, tp=2, pp="1,2", micro_batch=1, stack="fsdp"
    )
    said = " ".join(piped.assumed)
    assert piped.settings.zero3_gather_once == 1 and "under PP gathered once a step" in said
    flat = make_layout_grid("llama3-8b", gpus=16, global_batch=16, tp=2, pp=1, stack="fsdp")
    assert flat.settings.zero3_gather_once == 1 and "gathered once" not in " ".join(flat.assumed)
    core = make_layout_grid("llama3-8b", gpus=16, global_batch=16, pp=2, zero=3, stack="megatron-core")
    assert core.settings.zero3_gather_once == 0 and "gathered once" not in " ".join(core.assumed)
    given = make_layout_grid("llama3-8b", gpus=16, global_batch=16, pp=2, stack="fsdp", zero3_gather_once=0)
    assert given.settings.zero3_gather_once == 0 and "gathered once" not in " ".join(given.assumed)
    runs = {r.id: r for r in read_runs(DATASET)}
    assert settings(runs["fsdp-tt_405b_3d_1f1b"])[0].settings.zero3_gather_once == 1
    assert settings(runs["MB-H100-03"])[0].settings.zero3_gather_once == 0
