"""Inverse queries (``sweep need``): the smallest ratio, utilization or bandwidth reaching a target.

The scaling factor is non-decreasing in each of the three, so for every
combination of the other axes at once we bisect in log space
(:func:`kernels.bisect.smallest_reaching`, jitted in :mod:`sweep.compiled`): after
``ITERATIONS`` halvings of [low, high] the bracket is far below the 0.5% asked for.
The answer is the bracket's upper end, a value that reaches the target. Where even
the largest allowed value fails the answer is ``unreachable``; where the smallest
already reaches it, ``met at the minimum``.
"""

import numpy as np
import xarray as xr

from kernels.bisect import MET_AT_MIN, SOLVED, UNREACHABLE
from sweep.api import coordinates
from sweep.axes import si_values
from sweep.engine import precision
from sweep.errors import InputError
from sweep.grid import make_grid
from sweep.inputs import BlockInputs
from sweep.plan import MAX_BLOCK_CONFIGS, Plan
from sweep.schema import DIMS, NUMERIC_AXES

# Allowed range of each solvable axis, in stored units (ratio 1, Gbit/s, fraction).
BOUNDS = {"ratio": (1.0, 1e4), "utilization": (1e-4, 1.0), "bandwidth": (1e-3, 1e4)}
ITERATIONS = 40  # bracket ratio (1e7)^(2^-40): exact to float rounding
STATUS_MEANINGS = "solved met_at_minimum unreachable"
__all__ = ["BOUNDS", "MET_AT_MIN", "SOLVED", "UNREACHABLE", "answer_table", "solve"]


def solve(model, *, target: float, axis: str, **kwargs) -> xr.Dataset:
    """Smallest value of ``axis`` reaching scaling factor ``target``, for every combination.

    Args:
      model: as :func:`sweep.evaluate`.
      target: scaling factor in (0, 1].
      axis: ``"ratio"``, ``"utilization"`` or ``"bandwidth"``.
      **kwargs: the other axes and settings, as :func:`sweep.evaluate` (``bandwidth``
        is required unless solved for).

    Returns:
      ``xarray.Dataset`` over every dim but ``axis``: ``required_<axis>`` (NaN where
      unreachable) and ``status`` (0 solved, 1 met at the minimum, 2 unreachable).
    """
    if axis not in BOUNDS:
        raise InputError(f"{axis!r}: must be one of {', '.join(BOUNDS)}", param="solve")
    if not (0 < target <= 1):
        raise InputError(f"{target:g}: must be a scaling factor in (0, 1]", param="target")
    if kwargs.get(axis) is not None:
        raise InputError(f"{axis}: do not also give values for that axis", param="solve")
    if axis != "bandwidth" and kwargs.get("bandwidth") is None:
        raise InputError("required: give the bandwidth(s) in Gbit/s (only solving for bandwidth goes without)",
                         param="bandwidth")
    kwargs = {k: v for k, v in kwargs.items() if v is not None}
    grid = make_grid(model, **{**kwargs, axis: 1.0})  # a placeholder value: replaced by the bisection
    plan = Plan(grid.sizes, block_configs=min(grid.size, MAX_BLOCK_CONFIGS))  # a block per task: few combinations
    low, high = BOUNDS[axis]
    value = np.full(grid.shape, np.nan, grid.dtype)
    status = np.full(grid.shape, UNREACHABLE, np.int8)
    with precision(grid.dtype):
        from sweep.compiled import smallest_on_grid

        inputs = BlockInputs(grid, plan)
        dt = inputs.dtype.type
        for block in plan.blocks():
            args = (inputs.configs(block.inner_slab), inputs.layout(block.task, block.layout_slab),
                    inputs.buckets(block.task), inputs.t1(block.task))
            v, st = smallest_on_grid(*args, dt(target), dt(si_values(axis, low)), dt(si_values(axis, high)),
                                     axis=axis, iterations=ITERATIONS)
            k, c = block.layouts, block.size // block.layouts
            v = (np.asarray(v, np.float64)[:k, :c] / NUMERIC_AXES[axis].to_si).astype(grid.dtype)
            st = np.asarray(st)[:k, :c]
            value[block.region()] = _reaching(v, st, args, axis, dt(target)).reshape(block.region_shape())
            status[block.region()] = st.reshape(block.region_shape())
    return _dataset(grid, axis, target, value, status)


def _reaching(value, status, args, axis, target, max_steps=16):
    """Solved answers, stepped up by one ulp at a time until the answer, stored in the
    grid's dtype and fed back as a user would (stored units -> SI -> dtype), reaches the
    target in that dtype too (the conversion can round it just below)."""
    from sweep.compiled import table_metrics

    config = args[0]
    k, c = value.shape
    for _ in range(max_steps):
        cells = {f: np.broadcast_to(np.asarray(getattr(config, f))[None, :c], (k, c)) for f in config._fields}
        cells[axis] = (value.astype(np.float64) * NUMERIC_AXES[axis].to_si).astype(value.dtype)
        reached = np.asarray(table_metrics(type(config)(**cells), *args[1:])["scaling_factor"]) >= target
        short = (status == SOLVED) & ~reached
        if not short.any():
            return value
        value = np.where(short, np.nextafter(value, np.inf, dtype=value.dtype), value)
    return value


def _dataset(grid, axis, target, value, status):
    dims = tuple(d for d in DIMS if d != axis)
    squeeze = DIMS.index(axis)
    spec = NUMERIC_AXES[axis]
    data = {
        f"required_{axis}": xr.Variable(dims, value.squeeze(squeeze), {
            "units": spec.units, "long_name": f"smallest {spec.long_name} reaching the target scaling factor"}),
        "status": xr.Variable(dims, status.squeeze(squeeze), {
            "flag_values": np.array([SOLVED, MET_AT_MIN, UNREACHABLE], np.int8), "flag_meanings": STATUS_MEANINGS,
            "long_name": "0: solved, 1: target met at the smallest allowed value, 2: unreachable"}),
    }
    low, high = BOUNDS[axis]
    attrs = {"target_scaling_factor": target, "solved_axis": axis, "low": low, "high": high, "dtype": grid.dtype}
    return xr.Dataset(data, coords=coordinates(grid, drop=(axis,)), attrs=attrs)


def answer_text(value, status, axis):
    """One cell of the printed table."""
    units = NUMERIC_AXES[axis].units
    units = "" if units == "1" else f" {units}"
    if status == UNREACHABLE:
        return f"unreachable (> {BOUNDS[axis][1]:g}{units})"
    if status == MET_AT_MIN:
        return f"met at the minimum ({BOUNDS[axis][0]:g}{units})"
    return f"{value:.4g}{units}"


def answer_table(ds):
    """The answers of :func:`solve` as a text table over the dims that vary (and model)."""
    axis = ds.attrs["solved_axis"]
    df = ds.to_dataframe().reset_index()
    varying = [d for d in ds.dims if ds.sizes[d] > 1 or d == "model"]
    df["answer"] = [answer_text(v, s, axis) for v, s in zip(df[f"required_{axis}"], df["status"])]
    head = f"smallest {axis} reaching scaling factor {ds.attrs['target_scaling_factor']:g}:"
    return head + "\n" + df[varying + ["answer"]].to_string(index=False)
