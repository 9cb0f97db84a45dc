"""The layout family's settings of one value per sweep (sweep.core.sweep_settings), declared once: each reaches
the kernel's inputs, a cube keeps each, and each option's default is the declaration's."""

import dataclasses

import jax
import numpy as np
import pytest

from netsweep_jax.sweep.core.layout_axes import AXES
from netsweep_jax.sweep.core.sweep_settings import COLUMNS, NUMERIC, SweepSettings
from netsweep_jax.sweep.engine.compiled import GPU_FIELDS, layout_inputs
from netsweep_jax.sweep.engine.layout_rows import LayoutRow, row_columns
from netsweep_jax.sweep.engine.layout_validation import make_layout_grid
from netsweep_jax.sweep.model.llms import resolve_llm

# A value other than the default for each setting. The base run has a capacity (2) above its load (1.25), so
# that padding to the capacity and a lower capacity each change the busiest expert's load.
OTHER = dict(
    usable_memory=0.8,
    gemm_latency=10.0,
    memory_efficiency=0.7,
    moment_bytes=2.0,
    capacity_factor=1.1,
    pad_to_capacity=1.0,
    overlap="none",
    attention_efficiency=0.4,
    dispatch_fp8=1.0,
    moe_dispatcher="flex",
)
BASE = SweepSettings(capacity_factor=2.0)


def _kernel_inputs(settings: SweepSettings) -> dict[str, np.ndarray]:
    """The kernel's input record (every field of Arch, Device and Parallelism) of one MoE run."""
    row = LayoutRow(
        resolve_llm("qwen3-30b-a3b"),
        "h100",
        "bf16",
        16,
        ep=8,
        global_batch=64,
        imbalance=1.25,
        settings=settings,
    )
    cell, layout = row_columns([row])
    arch, dev, lay = layout_inputs(cell, {k: v[None, :] for k, v in layout.items()}, collectives=1)
    leaves = {f"{type(t).__name__}.{k}": v for t in (arch, dev, lay) for k, v in t._asdict().items()}
    return {k: np.asarray(v, np.float64) for k, v in leaves.items() if isinstance(v, jax.Array | np.ndarray)}


def test_every_declared_setting_reaches_the_kernel():
    assert set(OTHER) == set(COLUMNS), "a new setting needs a value here"
    assert set(COLUMNS) <= set(GPU_FIELDS) and set(NUMERIC) <= set(AXES)
    base = _kernel_inputs(BASE)
    for name, value in OTHER.items():
        changed = _kernel_inputs(dataclasses.replace(BASE, **{name: value}))
        moved = [k for k in base if not np.array_equal(base[k], changed[k])]
        assert moved, f"{name} changes no input of the kernel"


def test_a_cube_keeps_every_setting_and_the_defaults_are_the_options():
    # The numeric settings' defaults are their options' (--help shows AXES' default); a grid with nothing given
    # but a dense model's layout holds them, and its cube attributes name each setting once.
    for name in NUMERIC:
        assert getattr(SweepSettings(), name) == float(AXES[name].default), name
    grid = make_layout_grid("llama3-8b", gpus=8, global_batch=8, efficiency=0.6, utilization=1)
    attrs = grid.cube_attrs()
    said = SweepSettings(memory_efficiency=grid.settings.memory_efficiency).attrs()
    assert {k: attrs[k] for k in said} == said and "gemm_latency_us" in said
    given = make_layout_grid(
        "qwen3-30b-a3b", gpus=16, global_batch=64, **{k: str(v) for k, v in OTHER.items()}
    )
    assert given.settings == SweepSettings(**OTHER)
    # The GPU table's columns: the kernel's units (us to s), text as codes.
    row = dict(zip(GPU_FIELDS, given.tables()["gpu"][0]))
    assert (
        row["gemm_latency"] == pytest.approx(10e-6, rel=1e-15)
        and row["overlap"] == 0
        and row["moe_dispatcher"] == 1
    )
