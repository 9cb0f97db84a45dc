"""Vectorized log-space bisection: where a monotone metric crosses a target.

For a metric monotone in x (the scaling factor grows with bandwidth, utilization
and compression ratio, and falls with latency, overhead, slowdown and jitter),
every cell is bisected at once: ``iterations`` halvings of [low, high] in log space
leave a bracket of ratio (high / low)^(2^-iterations). The answer is the bracket end
whose metric was computed, in the compute dtype, to reach the target: the smallest
such x for a growing metric, the largest for a falling one.
"""

from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax import lax

SOLVED, AT_LIMIT, UNREACHABLE = 0, 1, 2
MET_AT_MIN = AT_LIMIT  # a growing metric reaches the target at the lowest allowed value already


def boundary(
    metric: Callable[[jax.Array], jax.Array],
    target: jax.Array,
    low: jax.Array,
    high: jax.Array,
    shape: tuple[int, ...],
    dtype: jnp.dtype | type,
    iterations: int = 40,
    increasing: bool = True,
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """The x in [low, high] where ``metric(x) >= target`` starts (growing) or stops (falling).

    Args:
      metric: function of x [*shape] -> [*shape], monotone in x.
      target: scalar.
      low, high: scalars, 0 < low < high.
      shape: the cells' shape.
      dtype: the compute dtype.
      iterations: halvings (static).
      increasing: whether ``metric`` grows with x (static).

    Returns:
      (value [*shape]; status [*shape] int8; at_low, at_high [*shape]: the metric at ``low`` and at
      ``high``, what the range's ends give: the least and the most any x gives for a growing metric, the
      most and the least for a falling one). Growing: the smallest x
      reaching the target, ``low`` with AT_LIMIT where even ``low`` reaches it. Falling: the largest
      such x, ``high`` with AT_LIMIT where even ``high`` still reaches it. NaN with
      UNREACHABLE where no x in [low, high] reaches it.
    """
    lo = jnp.full(shape, low, dtype)
    hi = jnp.full(shape, high, dtype)

    def halve(_: int, bracket: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        lo, hi = bracket
        mid = jnp.sqrt(lo * hi)
        ok = metric(mid) >= target
        if increasing:  # keep hi reaching the target
            return jnp.where(ok, lo, mid), jnp.where(ok, mid, hi)
        return jnp.where(ok, mid, lo), jnp.where(ok, hi, mid)  # keep lo reaching it

    lo_end, hi_end = lax.fori_loop(0, iterations, halve, (lo, hi))
    best = lo if increasing else hi
    at_low, at_high = metric(lo), metric(hi)
    weakest, strongest = (at_low, at_high) if increasing else (at_high, at_low)
    at_limit = weakest >= target
    anywhere = strongest >= target
    status = jnp.where(at_limit, AT_LIMIT, jnp.where(anywhere, SOLVED, UNREACHABLE)).astype(jnp.int8)
    answer = hi_end if increasing else lo_end
    value = jnp.where(status == UNREACHABLE, jnp.nan, jnp.where(status == AT_LIMIT, best, answer))
    return value, status, at_low, at_high
