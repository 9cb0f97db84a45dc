"""The layout family's settings of one value per sweep (sweep.core.sweep_settings), declared once: each reaches
the kernel's inputs, a cube keeps each, and each option's default is the declaration's; and every numeric option
of a layout sweep (sweep.core.layout_axes.AXES), given as the CLI and the API give it, reaches the kernel."""

import dataclasses

import jax
import numpy as np
import pytest

from netsweep_jax.sweep.core.layout_axes import AXES
from netsweep_jax.sweep.core.sweep_settings import COLUMNS, NUMERIC, SweepSettings
from netsweep_jax.sweep.engine.compiled import GPU_FIELDS, INNER_COLUMNS, OUTER_COLUMNS, layout_inputs
from netsweep_jax.sweep.engine.layout_options import make_layout_grid
from netsweep_jax.sweep.engine.layout_rows import LayoutRow, row_columns
from netsweep_jax.sweep.model.llms import resolve_llm

# A value other than the default for each setting. The base run has a capacity (2) above its load (1.25), so
# that padding to the capacity and a lower capacity each change the busiest expert's load.
OTHER = dict(
    usable_memory=0.8,
    gemm_latency=10.0,
    memory_efficiency=0.7,
    moment_bytes=2.0,
    main_param_bytes=2.0,
    capacity_factor=1.1,
    pad_to_capacity=1.0,
    overlap="none",
    attention_efficiency=0.4,
    dispatch_fp8=1.0,
    moe_dispatcher="flex",
    zero3_gather_once=1.0,
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
        changed = _kernel_inputs(BASE.replace(**{name: value}))
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
    # (the flex dispatcher apart: Megatron-Core's does not pad to capacity, which OTHER turns on)
    padded = {**OTHER, "moe_dispatcher": "alltoall"}
    given = make_layout_grid(
        "qwen3-30b-a3b", gpus=16, global_batch=64, ep=8, **{k: str(v) for k, v in padded.items()}
    )
    assert given.settings == SweepSettings(**padded)
    # The GPU table's columns: the kernel's units (us to s), text as codes.
    row = dict(zip(GPU_FIELDS, given.tables()["gpu"][0]))
    assert row["gemm_latency"] == pytest.approx(10e-6, rel=1e-15) and row["overlap"] == 0
    flex = make_layout_grid("qwen3-30b-a3b", gpus=16, global_batch=64, ep=8, moe_dispatcher="flex")
    assert (row["moe_dispatcher"], dict(zip(GPU_FIELDS, flex.tables()["gpu"][0]))["moe_dispatcher"]) == (0, 1)


# A value other than the grid's for every numeric option of a layout sweep (the base below: a MoE model on 16 GPUs,
# capacity 2 so that padding to it changes the load).
AXIS_VALUES = dict(
    gpus=32, tp=2, pp=2, cp=2, ep=8, expert_tp=2, micro_batch=2, global_batch=128, zero=1, sequence_parallel=0,
    nvlink_domain=4, nvlink_bw=100, efficiency=0.5, attention_efficiency=0.4, grad_bytes=2, offload_layers=1,
    usable_memory=0.8, gemm_latency=10, memory_efficiency=0.7, moment_bytes=2, main_param_bytes=2, mtp_layers=1,
    imbalance=1.5,
    capacity_factor=1.1, dispatch_fp8=1, pad_to_capacity=1, gpus_per_node=4, nics_per_node=2, bandwidth=100,
    utilization=0.5, latency=5, overhead=1, slowdown=0.1, jitter=0.1, zero3_gather_once=1,
)  # fmt: skip


def _grid_inputs(**given) -> dict[str, np.ndarray]:
    """The kernel's input record of a layout grid's first setting cell and first layout, as its blocks build it."""
    from netsweep_jax.sweep.engine.layout_blocks import BlockTables

    base = dict(gpus=16, global_batch=64, ep=4, capacity_factor=2, imbalance=1.25, bandwidth=400)
    grid = make_layout_grid("qwen3-30b-a3b", **{**base, **given}, dtype="float64")
    tables = BlockTables(grid)
    outer, (inner, _) = tables.outer(0, 1), tables.inner(0, 1)
    o = {name: outer[:, k][:, None] for k, name in enumerate(OUTER_COLUMNS)}
    i = {name: inner[:, k][None, :] for k, name in enumerate(INNER_COLUMNS)}
    arch, dev, lay = layout_inputs(o, i)
    leaves = {f"{type(t).__name__}.{k}": v for t in (arch, dev, lay) for k, v in t._asdict().items()}
    return {k: np.asarray(v, np.float64) for k, v in leaves.items() if isinstance(v, jax.Array | np.ndarray)}


def test_every_numeric_option_of_a_layout_sweep_reaches_the_kernel():
    # #39: each declared axis, given through make_layout_grid as the CLI and the API give it, changes the kernel's
    # input record (dp instead of gpus: the same sweep's GPU count given the other way).
    assert set(AXIS_VALUES) == set(AXES) - {"dp"}, "a new axis needs a value here"
    base = _grid_inputs()
    for name, value in {**AXIS_VALUES, "dp": 8}.items():
        changed = _grid_inputs(**({name: value} if name != "dp" else {"gpus": None, "dp": value}))
        moved = [k for k in base if not np.array_equal(base[k], changed[k])]
        assert moved, f"{name} changes no input of the kernel"


def test_the_apis_typed_keywords_are_the_declared_options():
    # A setting declared (an axis of sweep.core.layout_axes.AXES or a TextOption) is a typed keyword of the
    # large-model API, or this fails: the CLI's options are derived from the declarations, the API's TypedDict
    # is checked against them (mypy cannot read a TypedDict built at run time).
    from typing_extensions import get_type_hints

    from netsweep_jax.sweep.core.keywords import accepted_keywords
    from netsweep_jax.sweep.core.layout_axes import LAYOUT_OPTIONS, SHARED_AXES
    from netsweep_jax.sweep.large_models import LayoutOptions, evaluate_layouts, plan

    cli_only = {"launch", "virtual_stages"}  # a launch file and Megatron-LM's spelling of --schedule
    own = {"nodes", "gpu", "precision", "collective", "dtype"}  # the command's own options, typed there too
    declared = (set(LAYOUT_OPTIONS) - {"arch"} - cli_only) | set(SHARED_AXES) | own
    assert set(get_type_hints(LayoutOptions)) == declared
    kept = {"vars", "store", "reduce"}  # what the cube keeps, as sweep grid's --vars, --store and --reduce
    assert set(accepted_keywords(evaluate_layouts)) == declared | {"model", "arch"} | kept
    assert set(accepted_keywords(plan)) == declared | {"model", "arch", "keep"}


def test_each_kernel_field_named_as_a_column_is_that_column_on_a_fabric():
    # compiled.layout_inputs takes every field of the kernel's record named as a column by name: on a fabric
    # preset (tier, SHARP, spine) with NCCL's pricing, each such field is its GPU-table column, and the fabric's
    # constants reach the two renamed ones.
    from netsweep_jax.kernels.layout_inputs import Parallelism
    from netsweep_jax.sweep.engine.layout_blocks import BlockTables
    from netsweep_jax.sweep.model.fabrics import FABRICS

    preset = FABRICS["dgx-h100-superpod-sharp"]
    grid = make_layout_grid(
        "qwen3-30b-a3b", gpus=512, global_batch=1024, ep=8, fabric=preset, oversubscription=2, dtype="float64"
    )
    tables = BlockTables(grid)
    outer, (inner, _) = tables.outer(0, 1), tables.inner(0, 1)
    o = {name: outer[:, k][:, None] for k, name in enumerate(OUTER_COLUMNS)}
    i = {name: inner[:, k][None, :] for k, name in enumerate(INNER_COLUMNS)}
    _, _, lay = layout_inputs(o, i, collectives=1)
    row = dict(zip(GPU_FIELDS, grid.tables()["gpu"][0]))
    by_name = [f for f in Parallelism._fields if f in GPU_FIELDS and f not in ("imbalance",)]
    assert {"leaf_hosts", "oversubscription", "sharp", "rail_only", "nccl_latency", "nccl_fill"} <= set(
        by_name
    )
    for field in by_name:
        assert float(np.ravel(getattr(lay, field))[0]) == row[field], field
    assert (row["leaf_hosts"], row["oversubscription"], row["sharp"]) == (preset.leaf_hosts, 2.0, 1.0)
    assert float(np.ravel(lay.eta_net)[0]) == row["nccl_eta_net"] == preset.constants.eta_net
    assert float(np.ravel(lay.eta_nvl)[0]) == row["nccl_eta_nvl"] == preset.constants.eta_nvl


def test_the_assumed_line_says_each_setting_not_given_as_declared():
    # Each setting with a phrase (sweep.core.sweep_settings' ``said``) is said where it is not given (a MoE model:
    # the MoE ones too) and not where it is; the phrase names the default (a choice by its meaning).
    from netsweep_jax.sweep.core.sweep_settings import SETTINGS
    from netsweep_jax.sweep.model.stacks import CONSTANTS  # said as the default stack's fitted constants

    layout = dict(gpus=16, global_batch=64, ep=8, efficiency=0.6, utilization=1)
    said = "; ".join(make_layout_grid("qwen3-30b-a3b", **layout).assumed)
    assert "Adam moments fp32" in said and "main weights fp32" in said and "GEMM latency 6.5 us" in said
    for name, declaration in SETTINGS.items():
        if not declaration.said or name in CONSTANTS:
            continue
        phrase = declaration.said.format(declaration.shown())
        assert phrase in said, name
        given = make_layout_grid("qwen3-30b-a3b", **layout, **{name: str(OTHER[name])})
        assert phrase not in "; ".join(given.assumed), name
    dense = "; ".join(make_layout_grid("llama3-8b", gpus=8, global_batch=8).assumed)
    assert "MoE dropless" not in dense and "main weights fp32" in dense


def test_settings_are_immutable_and_survive_copy_and_pickle():
    import copy
    import pickle

    given = SweepSettings(**OTHER)
    assert pickle.loads(pickle.dumps(given)) == given and copy.deepcopy(given) == given != SweepSettings()
    assert hash(copy.copy(given)) == hash(given) and given.replace(overlap="none") == given
    with pytest.raises(dataclasses.FrozenInstanceError):
        given.overlap = "tp_comm"  # type: ignore[misc]
    with pytest.raises(TypeError, match="unexpected keyword argument 'overlapp'"):
        SweepSettings(overlapp="none")  # type: ignore[call-arg]
