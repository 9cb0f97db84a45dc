"""Inverse queries: the smallest ratio, utilization or bandwidth that reaches a target.

The scaling factor is non-decreasing in each of the three, so for every
combination of the other axes at once we bisect in log space inside one jitted
function: after ``ITERATIONS`` halvings of [low, high] the bracket is far below
the 0.5% asked for. The answer is the bracket's upper end (a value that reaches
the target). Where even the largest allowed value fails the answer is
``unreachable``; where the smallest already reaches it, ``met at the minimum``.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr

from kernels import collective_coefficients, metrics
from sweep.api import coordinate_attrs
from sweep.axes import DIMS, INNER, NUMERIC_AXES
from sweep.engine import Plan, Runner
from sweep.errors import InputError
from sweep.grid import make_grid

# Allowed range of each solvable axis, in stored units (ratio 1, Gbit/s, fraction).
BOUNDS = {"ratio": (1.0, 1e4), "utilization": (1e-4, 1.0), "bandwidth": (1e-3, 1e4)}
ITERATIONS = 40  # bracket ratio (1e7)^(2^-40): exact to float rounding
SOLVED, MET_AT_MIN, UNREACHABLE = 0, 1, 2
STATUS_MEANINGS = "solved met_at_minimum unreachable"


@functools.partial(jax.jit, static_argnums=(0, 1))
def _solve(collective, axis, target, bw, util, ratio, lat, nodes, gpus, ready, nbytes, valid, t1,
           table_bytes, table_seconds, intra_bits, low, high):
    a, b, l_coef, fixed = collective_coefficients(collective, nodes, gpus, nbytes, table_bytes,
                                                  table_seconds, intra_bits)
    shape = (nodes.shape[0], bw.shape[0])

    def scaling(x):
        v = {"bandwidth": bw, "utilization": util, "ratio": ratio}
        v = {k: jnp.broadcast_to(val[None, :], shape) for k, val in v.items()}
        v[axis] = x
        alpha = (a[:, None] + b[:, None] / (v["bandwidth"] * 1e9 * v["utilization"])) / v["ratio"]
        return metrics(alpha, l_coef[:, None] * lat[None, :], fixed, ready, nbytes, valid, t1)["scaling_factor"]

    lo = jnp.full(shape, low, bw.dtype)
    hi = jnp.full(shape, high, bw.dtype)

    def halve(_, bracket):
        lo, hi = bracket
        mid = jnp.sqrt(lo * hi)
        ok = scaling(mid) >= target
        return jnp.where(ok, lo, mid), jnp.where(ok, mid, hi)

    lo, hi = jax.lax.fori_loop(0, ITERATIONS, halve, (lo, hi))
    status = jnp.where(scaling(jnp.full(shape, low, bw.dtype)) >= target, MET_AT_MIN,
                       jnp.where(scaling(jnp.full(shape, high, bw.dtype)) >= target, SOLVED, UNREACHABLE))
    value = jnp.where(status == UNREACHABLE, jnp.nan, jnp.where(status == MET_AT_MIN, low, hi))
    return value, status


def solve(model, *, target, axis, **kwargs):
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
        raise InputError(f"--solve {axis!r}: must be one of {', '.join(BOUNDS)}")
    if not (0 < target <= 1):
        raise InputError(f"--target {target:g}: must be a scaling factor in (0, 1]")
    if axis in kwargs:
        raise InputError(f"--solve {axis}: do not also give values for {NUMERIC_AXES[axis].option}")
    kwargs.setdefault("bandwidth", 1.0)
    grid = make_grid(model, **{**kwargs, axis: NUMERIC_AXES[axis].default.split(",")[0]})
    plan = Plan(grid, block_configs=2**62)  # one block per task: combos are few
    runner = Runner(plan)
    dt = runner.np_dtype
    low, high = BOUNDS[axis]
    value = np.full(grid.shape, np.nan)
    status = np.full(grid.shape, UNREACHABLE, np.int8)
    for block in plan.blocks():
        ready, nbytes, valid, t1 = runner.task_arrays(block.task)
        nodes, gpus = runner.layout_arrays(block.slab)
        inner = [grid.values[d][s] for d, s in zip(INNER, block.slab[2:])]
        bw, util, ratio, lat = (jnp.asarray(a.ravel().astype(dt)) for a in np.meshgrid(*inner, indexing="ij"))
        v, st = _solve(grid.collectives[block.task[1]], axis, jnp.asarray(target, dt), bw, util, ratio,
                       lat * 1e-6, nodes, gpus, ready, nbytes, valid, t1, *runner.table,
                       runner.intra_bits, jnp.asarray(low, dt), jnp.asarray(high, dt))
        sizes = [s.stop - s.start for s in block.region()]
        value[block.region()] = np.asarray(v).reshape(sizes)
        status[block.region()] = np.asarray(st).reshape(sizes)
    dims = tuple(d for d in DIMS if d != axis)
    squeeze = DIMS.index(axis)
    coords = {d: xr.Variable(d, c, coordinate_attrs(d)) for d, c in grid.coords().items() if d != axis}
    spec = NUMERIC_AXES[axis]
    data = {
        f"required_{axis}": xr.Variable(dims, value.squeeze(squeeze).astype(grid.dtype), {
            "units": spec.units, "long_name": f"smallest {spec.long_name} reaching the target scaling factor"}),
        "status": xr.Variable(dims, status.squeeze(squeeze), {
            "flag_values": np.array([0, 1, 2], np.int8), "flag_meanings": STATUS_MEANINGS,
            "long_name": "0: solved, 1: target met at the smallest allowed value, 2: unreachable"}),
    }
    attrs = {"target_scaling_factor": target, "solved_axis": axis, "low": low, "high": high,
             "dtype": grid.dtype}
    return xr.Dataset(data, coords=coords, attrs=attrs)


def answer_text(value, status, axis):
    """One cell of the printed table."""
    units = NUMERIC_AXES[axis].units
    units = "" if units == "1" else f" {units}"
    if status == UNREACHABLE:
        return f"unreachable (> {BOUNDS[axis][1]:g}{units})"
    if status == MET_AT_MIN:
        return f"met at the minimum ({BOUNDS[axis][0]:g}{units})"
    return f"{value:.4g}{units}"
