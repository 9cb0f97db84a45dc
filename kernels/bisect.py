"""Vectorized log-space bisection: where a monotone metric crosses a target.

For a metric monotone in x (the scaling factor grows with bandwidth, utilization
and compression ratio, and falls with latency, overhead, slowdown and jitter),
every cell is bisected at once: ``iterations`` halvings of [low, high] in log space
leave a bracket of ratio (high / low)^(2^-iterations). The answer is the bracket end
whose metric was computed, in the compute dtype, to reach the target: the smallest
such x for a growing metric, the largest for a falling one.

A metric that is not monotone (NCCL's choice of algorithm, protocol and channels steps with the NIC rate and
the message size, so the scaling factor can fall where the rate or the ratio grows) is first scanned
(``scan`` > 0): at the scan + 1 points x_j = low (high / low)^(j / scan), j = 0..scan, the first x_j that
reaches the target (growing; the last, falling) is found, and the range from NEAR (8) times below it to it
(from it to NEAR times above it, falling) is scanned again at as many points; the first point there that
reaches the target (the last, falling) and its neighbour that does not bracket the bisection. The answer
always reaches the target, and is the smallest x that does (the largest, falling) but for what the scans step
over: a window that reaches it narrower than the second scan's step, 8^(1 / scan) (0.41% at 512 points), next
to the answer, or than the first's, further from it. Where no point of the first scan reaches it the cell is
unreachable.
"""

from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax import lax

SOLVED, AT_LIMIT, UNREACHABLE = 0, 1, 2
NEAR = 8.0  # the second scan's range: from the first scan's point found to NEAR times below it (growing)
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
    scan: int = 0,
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """The x in [low, high] where ``metric(x) >= target`` starts (growing) or stops (falling).

    Args:
      metric: function of x [*shape] -> [*shape], monotone in x (else give ``scan``).
      target: scalar.
      low, high: scalars, 0 < low < high.
      shape: the cells' shape.
      dtype: the compute dtype.
      iterations: halvings (static).
      increasing: whether ``metric`` grows with x (static).
      scan: points scanned first, for a metric that is not monotone (static; 0: none, the metric monotone).

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
    start, stop, scanned = lo, hi, None
    if scan:
        start, stop, scanned = _first_bracket(metric, target, lo, hi, scan, increasing)
        # scanned again, at a finer step, over the NEAR-fold range next to the point found (which reaches it)
        if increasing:
            start, stop, _ = _first_bracket(metric, target, jnp.maximum(lo, stop / NEAR), stop, scan, True)
        else:
            start, stop, _ = _first_bracket(metric, target, start, jnp.minimum(hi, start * NEAR), scan, False)

    def halve(_: int, bracket: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        lo, hi = bracket
        mid = jnp.sqrt(lo * hi)
        ok = metric(mid) >= target
        if increasing:  # keep hi reaching the target
            return jnp.where(ok, lo, mid), jnp.where(ok, mid, hi)
        return jnp.where(ok, mid, lo), jnp.where(ok, hi, mid)  # keep lo reaching it

    lo_end, hi_end = lax.fori_loop(0, iterations, halve, (start, stop))
    best = lo if increasing else hi
    at_low, at_high = metric(lo), metric(hi)
    weakest, strongest = (at_low, at_high) if increasing else (at_high, at_low)
    at_limit = weakest >= target
    anywhere = strongest >= target if scanned is None else scanned
    status = jnp.where(at_limit, AT_LIMIT, jnp.where(anywhere, SOLVED, UNREACHABLE)).astype(jnp.int8)
    answer = hi_end if increasing else lo_end
    value = jnp.where(status == UNREACHABLE, jnp.nan, jnp.where(status == AT_LIMIT, best, answer))
    return value, status, at_low, at_high


def _first_bracket(
    metric: Callable[[jax.Array], jax.Array],
    target: jax.Array,
    lo: jax.Array,
    hi: jax.Array,
    scan: int,
    increasing: bool,
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """(start, stop, reached): the bracket around the first scanned point that reaches ``target`` (growing: the
    point before it, which does not, and it) or the last (falling: it and the next, which does not), and whether
    any scanned point reaches it; [lo, hi] where none does. Points as :func:`boundary` says, the last ``hi``."""
    step = (hi / lo) ** (1.0 / scan)

    def point(j: jax.Array) -> jax.Array:
        return jnp.where(j >= scan, hi, lo * step ** j.astype(lo.dtype))

    def visit(j: jax.Array, carry: tuple[jax.Array, ...]) -> tuple[jax.Array, ...]:
        start, stop, reached, before = carry
        x = point(j)
        ok = metric(x) >= target
        if increasing:  # the first that reaches it, and the point before
            first = ok & ~reached
            return jnp.where(first, before, start), jnp.where(first, x, stop), reached | ok, x
        after = point(j + 1)  # the last that reaches it, and the point after (hi for the last point)
        return jnp.where(ok, x, start), jnp.where(ok, after, stop), reached | ok, x

    init = (lo, hi, jnp.zeros(jnp.shape(lo), bool), lo)
    start, stop, reached, _ = lax.fori_loop(0, scan + 1, visit, init)
    return start, stop, reached
