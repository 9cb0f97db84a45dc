"""The Python entry point shared by notebooks and the CLI: :func:`evaluate`."""

import numpy as np
import xarray as xr

from sweep.axes import DIMS, LONG_NAMES, NUMERIC_AXES
from sweep.engine import DEFAULT_BLOCK_CONFIGS, evaluate_arrays
from sweep.grid import make_grid

VARIABLES = {
    "scaling_factor": ("1", "scaling factor (T1 / iteration time)"),
    "iteration_time": ("s", "time of one data-parallel training iteration"),
    "exposed_comm": ("s", "communication not hidden behind the backward pass"),
    "comm_time": ("s", "sum of all-reduce durations of all buckets"),
}


def coordinate_attrs(dim):
    """``units`` and ``long_name`` of a dimension's coordinate."""
    if dim in NUMERIC_AXES:
        spec = NUMERIC_AXES[dim]
        return {"units": spec.units, "long_name": spec.long_name}
    return {"units": "", "long_name": LONG_NAMES[dim]}


def evaluate(model, *, bandwidth, block_configs=DEFAULT_BLOCK_CONFIGS, **kwargs):
    """Predict data-parallel training metrics over the outer product of axis values.

    Args:
      model: built-in name (``"resnet50"``, ``"resnet101"``, ``"vgg16"``), a
        :class:`~sweep.profile.Profile`, or a list of them.
      bandwidth: Gbit/s, a number, sequence or value-syntax string (``"1..100@10"``).
      **kwargs: other axes (``utilization``, ``ratio``, ``nodes``,
        ``gpus_per_node``, ``latency`` in us, ``fusion_buffer`` in MiB,
        ``fusion_timeout`` in ms), ``collective`` (name or list), ``reduce_table``,
        ``intra_bandwidth`` (Gbit/s), ``dtype`` (``"float32"``/``"float64"``).

    Returns:
      ``xarray.Dataset`` with dims ``model, collective, fusion_buffer,
      fusion_timeout, nodes, gpus_per_node, bandwidth, utilization, ratio,
      latency`` (each present, even with one value) and variables
      ``scaling_factor``, ``iteration_time``, ``exposed_comm``, ``comm_time``.
    """
    grid = make_grid(model, bandwidth=bandwidth, **kwargs)
    arrays = evaluate_arrays(grid, block_configs)
    coords = {d: xr.Variable(d, v, coordinate_attrs(d)) for d, v in grid.coords().items()}
    data = {
        name: xr.Variable(DIMS, arrays[name], {"units": u, "long_name": ln})
        for name, (u, ln) in VARIABLES.items()
    }
    attrs = {"dtype": grid.dtype, "intra_bandwidth_gbps": grid.intra_bandwidth,
             "iteration_time_single_gpu_s": np.array([p.t1 for p in grid.profiles])}
    return xr.Dataset(data, coords=coords, attrs=attrs)
