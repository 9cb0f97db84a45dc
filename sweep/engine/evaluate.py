"""The Python entry point shared by notebooks and the CLI: :func:`evaluate`, whole or reduced."""

from typing import Any

import numpy as np
import xarray as xr
from typing_extensions import Unpack

from netsweep_jax.sweep.core.keywords import refuse_unknown_keywords
from netsweep_jax.sweep.core.schema import DEFAULTS, DIMS, VARIABLES
from netsweep_jax.sweep.engine.blocks import DEFAULT_BLOCK_CONFIGS, Blocking, check_in_memory
from netsweep_jax.sweep.engine.dataset import coordinates
from netsweep_jax.sweep.engine.dispatch import evaluate_arrays, run
from netsweep_jax.sweep.engine.grid import Grid, make_grid
from netsweep_jax.sweep.engine.grid_options import AxisValues, Models, Names, SweepOptions
from netsweep_jax.sweep.engine.reductions import ReducedRun, check_reduced_in_memory


def reduced_in_memory(grid: Any, block_configs: int, kernel: str = DEFAULTS.kernel) -> xr.Dataset:
    """``grid`` (either family's) reduced on the device as its ``reduction`` says, block by block, into
    accumulators the size of the result held in memory: as large a grid as ``sweep grid --reduce`` takes."""
    check_reduced_in_memory(grid)
    blocking = Blocking(grid.sizes, block_configs, grid.family)
    state = ReducedRun(grid, blocking)
    run(grid, blocking, state.add, kernel=kernel)
    return state.dataset()


def evaluated_grid(
    model: Models,
    *,
    bandwidth: AxisValues | None = None,
    block_configs: int = DEFAULT_BLOCK_CONFIGS,
    kernel: str = DEFAULTS.kernel,
    vars: Names | None = None,  # noqa: A002 (the public keyword, as --vars)
    **options: Unpack[SweepOptions],
) -> Grid:
    """The :class:`~sweep.engine.grid.Grid` :func:`evaluate` computes for the same keywords (each checked, none
    computed): what a caller checks first where it evaluates several sweeps (``block_configs`` and ``kernel``
    are the run's, read by :func:`evaluate`)."""
    return make_grid(model, bandwidth=bandwidth, variables=vars, **options)


@refuse_unknown_keywords
def evaluate(
    model: Models,
    *,
    bandwidth: AxisValues | None = None,
    block_configs: int = DEFAULT_BLOCK_CONFIGS,
    kernel: str = DEFAULTS.kernel,
    vars: Names | None = None,  # noqa: A002 (the public keyword, as --vars)
    **options: Unpack[SweepOptions],
) -> xr.Dataset:
    """Predict data-parallel training metrics over the outer product of axis values.

    Args:
      model: built-in name (``"resnet50"``, ``"resnet101"``, ``"vgg16"``, a transformer) or comma
        list, a :class:`~sweep.model.profile.Profile`, or a list of them.
      bandwidth: Gbit/s, a number, sequence or value-syntax string (``"1..100@10"``); None (or not given): a
        ``fabric`` preset's NICs' rate, else the schema's default (``sweep grid``'s without ``--bw``).
      block_configs: configurations per block (memory: 16 B each in float32).
      kernel: ``"auto"`` (Pallas on a GPU where the sweep allows it, the XLA scan elsewhere),
        ``"xla"``, ``"pallas"`` or ``"pallas-interpret"`` (refused for a sweep Pallas cannot run).
      vars: the variables to compute and keep (a comma list or sequence: ``scaling_factor``,
        ``iteration_time``, ``exposed_comm``, ``comm_time``, ``time_to_accuracy``); None: the first
        four, and ``time_to_accuracy`` when some compressor is not ``none``.
      **options: the other axes and settings, the keys of :class:`sweep.engine.grid_options.SweepOptions`
        (each documented there with its units), among them ``store`` (the variables' dtype),
        ``reduce`` (``OP:DIM[,DIM...]`` or a list of them; the Dataset then has only the dims
        not reduced), the numeric axes (``latency`` in us, ``fusion_buffer`` in MiB,
        ``fusion_timeout`` in ms, ...; None: the schema's default), ``collective``, ``bucketing``,
        ``reduce_table``, ``intra_bandwidth`` (Gbit/s), ``dtype`` (``"float32"``/``"float64"``),
        ``gpu``, ``precision``, ``batch``, ``seq_len``, ``compressor``, ``iterations_factor``,
        ``codec_cost``, ``fabric`` and ``oversubscription`` (NCCL's own collective on a fabric).

    Returns:
      ``xarray.Dataset`` with every dim of :data:`sweep.core.schema.DIMS` (each present,
      even with one value) and variables ``scaling_factor``, ``iteration_time``,
      ``exposed_comm``, ``comm_time`` (and ``time_to_accuracy`` when compressing).

    Raises:
      InputError for a value that breaks a rule, or a keyword it does not take.
    """
    grid = evaluated_grid(model, bandwidth=bandwidth, vars=vars, **options)
    attrs = {
        "dtype": grid.dtype,
        "intra_bandwidth_gbps": grid.intra_per_model(),
        "iteration_time_single_gpu_s": np.array([p.t1 for p in grid.profiles]),
        **grid.said_attrs(),  # as a grid's cube keeps them, reduced or not
    }
    if grid.reduction is not None:
        reduced = reduced_in_memory(grid, block_configs, kernel)
        return reduced.assign_attrs({**attrs, **reduced.attrs})
    # kept whole in memory: the rule evaluate_layouts keeps too
    check_in_memory(
        grid.sizes,
        "reduce them on the device as they are computed (reduce='max:...'), or write them to a cube block "
        "by block (sweep grid)",
    )
    arrays = evaluate_arrays(grid, block_configs, kernel)
    data = {
        name: xr.Variable(DIMS, arrays[name], dict(zip(("units", "long_name"), VARIABLES[name])))
        for name in grid.variables
    }
    return xr.Dataset(data, coords=coordinates(grid), attrs=attrs)
