"""Stack presets (sweep.model.stacks): declared once, read by a runs file's ``stack`` column and ``--stack``."""

import csv

import pytest

from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.io.runs import DATASET, read_runs, settings
from netsweep_jax.sweep.model.stacks import STACKS, stack_of, stack_preset


def _write(tmp_path, edit):
    lines = [line for line in DATASET.read_text().splitlines() if not line.startswith("#")]
    rows = edit(list(csv.DictReader(lines)))
    path = tmp_path / "runs.csv"
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, list(rows[0].keys()), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    return path


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
        "megatron-h100": {"megatron-core"},
        "megatron-gb200": {"megatron-core"},
        "torchtitan": {"fsdp"},
        "llm-foundry": {"fsdp"},
    }


def test_each_preset_fills_a_row_as_its_rules_say():
    runs = {r.id: r for r in read_runs(DATASET)}
    # SC'21 (2021): nothing stated but the layout; the 2021-22 stack's defaults, each said.
    row, assumed = settings(runs["SC21-T1-07"])
    old = STACKS["megatron-2021"]
    assert (
        (row.recompute, row.zero, row.attention, row.grad_bytes, row.overlap, row.sequence_parallel)
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
    assert row.tp > 1 and (row.sequence_parallel, row.overlap, row.grad_bytes, row.zero) == (
        1,
        "grad_reduce+param_gather+tp_comm",
        2,
        1,
    )
    # Without TP no tp_comm: the recipes' switch needs TP >= 2 with SP.
    row, _ = settings(runs["MLM-LLAMA-01"])
    assert row.tp == 1 and row.overlap == "grad_reduce+param_gather"
    # FSDP on an H100 die: FlashAttention-2's efficiency; on an A100, the documented default.
    row, assumed = settings(runs["fsdp-tt_70b_fsdp32_tp8_bf16"])
    assert (
        row.attention_efficiency == 0.33
        and "attention efficiency 0.33 (FlashAttention-2 on Hopper)" in assumed
    )
    (a100,) = [r for r in runs.values() if r.preset == "fsdp" and r.gpu == "a100" and r.pp == 1][:1]
    assert settings(a100)[0].attention_efficiency == 0.5


def test_a_preset_named_in_the_stack_column_is_the_year_rules_preset(tmp_path):
    # megatron of 2025 is megatron-core: the same row under the preset's name fills the same settings; under
    # megatron-2021 the old stack's, whatever its year.
    ids = ("MB-H100-02", "MLM-LLAMA-03", "K23-T5-04")
    path = _write(
        tmp_path, lambda rows: [{**r, "stack": "megatron-core"} for r in rows if r["id"] in ids[:2]]
    )
    named = read_runs(path)
    shipped = {r.id: r for r in read_runs(DATASET)}
    for run in named:
        assert run.preset == "megatron-core" and run.stack == "megatron"
        assert settings(run) == settings(shipped[run.id])
    path = _write(
        tmp_path, lambda rows: [{**r, "stack": "MEGATRON-2021"} for r in rows if r["id"] == "MB-H100-02"]
    )
    (old,) = read_runs(path)
    row, _ = settings(old)
    assert (old.preset, row.recompute, row.zero, row.attention, row.overlap) == (
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
