"""The layer-overlap recurrence: FIFO all-reduce of fused buckets during backward.

Zhang et al., "Is Network the Bottleneck of Distributed Training?" (NetAI 2020),
section 4: gradients become ready layer by layer during the backward pass; fused
buckets are all-reduced one at a time in FIFO order, each starting when it is
ready and the previous one has finished:

    alpha          = (A + B / (bandwidth * utilization)) / ratio      (s per byte)
    duration_b     = alpha * S_b + L * latency + F_b
    end_b          = max(ready_b, end_{b-1}) + duration_b,     end_{-1} = 0
    exposed_comm   = max(R_last, end_last) - R_last
    iteration_time = T1 + exposed_comm
    scaling_factor = T1 / iteration_time
    comm_time      = sum_b duration_b

with the layout coefficients A, B, L, F of :mod:`sweep.collectives`. With a
``softness`` s > 0 every max is replaced by s * logaddexp(x / s, y / s) (>= the max,
by at most s log 2), so that calibration gets gradients on both sides of a tie.

:func:`iteration` is written for one configuration, in SI units, and lifted with
named ``jax.vmap`` helpers: :func:`on_grid` (configurations x worker layouts),
:func:`on_table` (a value per cell) and :func:`on_rows` (one configuration, layout
and bucket set per row, for calibration). The engine, ``need`` and ``calibrate``
all call it; :mod:`kernels.pallas_overlap` is the one other implementation, checked
against it. Per-bucket constants stay outside the configuration batch, so each scan
step costs one max and two multiply-adds per configuration.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax


class Config(NamedTuple):
    """What varies per configuration (each field a scalar for one configuration).

    Attributes:
      bandwidth: inter-node link bandwidth (bit/s).
      utilization: fraction of it the transport achieves (1).
      ratio: gradient compression ratio (1).
      latency: per-message latency (s).
    """

    bandwidth: jax.Array
    utilization: jax.Array
    ratio: jax.Array
    latency: jax.Array


class Layout(NamedTuple):
    """Bucket-duration coefficients of one worker layout (:mod:`sweep.collectives`).

    Attributes:
      transfer: A, seconds per compressed byte on intra-node links.
      wire: B, bits on the inter-node link per compressed byte.
      messages: L, latency-bound message steps per bucket.
      reduce: [Bk] F, seconds of reduction work per bucket (0 for padding).
    """

    transfer: jax.Array
    wire: jax.Array
    messages: jax.Array
    reduce: jax.Array


class Buckets(NamedTuple):
    """Fused buckets of one profile, real ones first, then padding.

    Attributes:
      ready: [Bk] seconds from the start of backward; non-decreasing; padding 0.
      nbytes: [Bk] uncompressed bytes; padding 0.
      valid: [Bk] 1.0 for a real bucket, 0.0 for padding.
    """

    ready: jax.Array
    nbytes: jax.Array
    valid: jax.Array


METRICS = ("scaling_factor", "iteration_time", "exposed_comm", "comm_time")  # = sweep.schema.OUTPUTS


def smooth_max(x: jax.Array, y: jax.Array, softness: jax.Array | None = None) -> jax.Array:
    """max(x, y); with a ``softness`` s > 0, s * logaddexp(x / s, y / s)."""
    if softness is None:
        return jnp.maximum(x, y)
    return softness * jnp.logaddexp(x / softness, y / softness)


def iteration(config: Config, layout: Layout, buckets: Buckets, t1: jax.Array,
              softness: jax.Array | None = None) -> dict[str, jax.Array]:
    """Iteration metrics of one configuration (the module docstring's recurrence).

    Args:
      config: :class:`Config` of scalars (bit/s, 1, 1, s).
      layout: :class:`Layout`: three scalars and reduce [Bk] (s/byte, bit/byte, 1, s).
      buckets: :class:`Buckets` of [Bk] arrays (s, bytes, 1).
      t1: scalar single-GPU iteration time (s).
      softness: None for the exact max, or a scalar (s) for the smooth one.

    Returns:
      dict of scalars: ``scaling_factor`` (1), ``iteration_time`` (s),
      ``exposed_comm`` (s), ``comm_time`` (s).
    """
    alpha = (layout.transfer + layout.wire / (config.bandwidth * config.utilization)) / config.ratio
    lat = layout.messages * config.latency

    def step(end, bucket):
        ready, nbytes, reduce, valid = bucket
        new = smooth_max(ready, end, softness) + alpha * nbytes + (lat * valid + reduce)
        # A padded bucket (all zeros) leaves end >= 0 unchanged under the exact max;
        # the smooth max would move it, so padding is masked there.
        return (new if softness is None else jnp.where(valid > 0, new, end)), None

    end, _ = lax.scan(step, jnp.zeros_like(alpha), (buckets.ready, buckets.nbytes, layout.reduce, buckets.valid))
    r_last = jnp.max(buckets.ready)
    exposed = smooth_max(r_last, end, softness) - r_last
    total = t1 + exposed
    comm = alpha * jnp.sum(buckets.nbytes) + lat * jnp.sum(buckets.valid) + jnp.sum(layout.reduce)
    return dict(zip(METRICS, (t1 / total, total, exposed, comm)))


# Named lifts (configurations inside, worker layouts outside), as in jax-md's map_product.
_over_configs = jax.vmap(iteration, in_axes=(0, None, None, None, None))
on_grid = jax.vmap(_over_configs, in_axes=(None, 0, None, None, None))
on_grid.__doc__ = "config [C], layout [K] -> dict of [K, C] (every configuration under every layout)."
on_table = jax.vmap(_over_configs, in_axes=(0, 0, None, None, None))
on_table.__doc__ = "config [K, C], layout [K] -> dict of [K, C] (a configuration per cell)."
on_rows = jax.vmap(iteration, in_axes=(0, 0, 0, 0, 0))
on_rows.__doc__ = "config [R], layout [R], buckets [R, Bk], t1 [R], softness [R] or None -> dict of [R]."
