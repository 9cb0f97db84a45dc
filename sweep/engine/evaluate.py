"""The Python entry point shared by notebooks and the CLI: :func:`evaluate`, whole or reduced."""

import numpy as np
import xarray as xr

from netsweep_jax.sweep.core.schema import DIMS, VARIABLES
from netsweep_jax.sweep.engine.dataset import coordinates
from netsweep_jax.sweep.engine.dispatch import evaluate_arrays, run
from netsweep_jax.sweep.engine.grid import make_grid
from netsweep_jax.sweep.engine.plan import DEFAULT_BLOCK_CONFIGS, Plan
from netsweep_jax.sweep.engine.reductions import ReducedRun


def evaluate(model, *, bandwidth, block_configs: int = DEFAULT_BLOCK_CONFIGS, kernel: str = "auto",
             **kwargs) -> xr.Dataset:
    """Predict data-parallel training metrics over the outer product of axis values.

    Args:
      model: built-in name (``"resnet50"``, ``"resnet101"``, ``"vgg16"``) or comma
        list, a :class:`~sweep.model.profile.Profile`, or a list of them.
      bandwidth: Gbit/s, a number, sequence or value-syntax string (``"1..100@10"``).
      block_configs: configurations per block (memory: 16 B each in float32).
      kernel: ``"auto"`` (Pallas on a GPU, the XLA scan elsewhere), ``"xla"``,
        ``"pallas"`` or ``"pallas-interpret"``.
      **kwargs: ``vars`` (the outputs to compute and keep) and ``store`` (their dtype),
        other axes (``utilization``, ``ratio``, ``nodes``,
        ``gpus_per_node``, ``latency`` in us, ``fusion_buffer`` in MiB,
        ``fusion_timeout`` in ms), ``collective`` (name or list), ``reduce_table``,
        ``intra_bandwidth`` (Gbit/s), ``dtype`` (``"float32"``/``"float64"``),
        ``compressor``, ``iterations_factor``, ``codec_cost``, ``reduce`` (:func:`sweep.engine.grid.make_grid`;
        with ``reduce`` the Dataset has only the dims not reduced).

    Returns:
      ``xarray.Dataset`` with every dim of :data:`sweep.core.schema.DIMS` (each present,
      even with one value) and variables ``scaling_factor``, ``iteration_time``,
      ``exposed_comm``, ``comm_time`` (and ``time_to_accuracy`` when compressing).
    """
    if "vars" in kwargs:
        kwargs["variables"] = kwargs.pop("vars")
    grid = make_grid(model, bandwidth=bandwidth, **kwargs)
    if grid.reduction is not None:
        plan = Plan(grid.sizes, block_configs)
        state = ReducedRun(grid, plan)
        run(grid, plan, state.add, kernel=kernel)
        return state.dataset()
    arrays = evaluate_arrays(grid, block_configs, kernel)
    data = {name: xr.Variable(DIMS, arrays[name], dict(zip(("units", "long_name"), VARIABLES[name])))
            for name in grid.variables}
    attrs = {"dtype": grid.dtype, "intra_bandwidth_gbps": grid.intra_bandwidth,
             "iteration_time_single_gpu_s": np.array([p.t1 for p in grid.profiles])}
    return xr.Dataset(data, coords=coordinates(grid), attrs=attrs)
