"""Vectorized log-space bisection: the smallest x in [low, high] whose metric reaches a target.

For a metric non-decreasing in x (the scaling factor in bandwidth, utilization and
compression ratio), every cell is bisected at once: ``iterations`` halvings of
[low, high] in log space leave a bracket of ratio (high / low)^(2^-iterations). The
answer is the bracket's upper end, a value whose metric was computed, in the
compute dtype, to reach the target.
"""

from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax import lax

SOLVED, MET_AT_MIN, UNREACHABLE = 0, 1, 2


def smallest_reaching(metric: Callable[[jax.Array], jax.Array], target: jax.Array, low: jax.Array,
                      high: jax.Array, shape: tuple[int, ...], dtype, iterations: int = 40
                      ) -> tuple[jax.Array, jax.Array]:
    """Smallest x in [low, high] with ``metric(x) >= target``, per cell.

    Args:
      metric: function of x [*shape] -> [*shape], non-decreasing in x.
      target: scalar.
      low, high: scalars, 0 < low < high.
      shape: the cells' shape.
      dtype: the compute dtype.
      iterations: halvings (static).

    Returns:
      (value [*shape]: the answer, ``low`` where met at the minimum, NaN where
      unreachable; status [*shape] int8: SOLVED, MET_AT_MIN or UNREACHABLE).
    """
    lo = jnp.full(shape, low, dtype)
    hi = jnp.full(shape, high, dtype)

    def halve(_, bracket):
        lo, hi = bracket
        mid = jnp.sqrt(lo * hi)
        ok = metric(mid) >= target
        return jnp.where(ok, lo, mid), jnp.where(ok, mid, hi)

    _, hi_end = lax.fori_loop(0, iterations, halve, (lo, hi))
    at_low = metric(lo) >= target
    at_high = metric(hi) >= target
    status = jnp.where(at_low, MET_AT_MIN, jnp.where(at_high, SOLVED, UNREACHABLE)).astype(jnp.int8)
    value = jnp.where(status == UNREACHABLE, jnp.nan, jnp.where(status == MET_AT_MIN, lo, hi_end))
    return value, status
