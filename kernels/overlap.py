"""The layer-overlap recurrence: FIFO all-reduce of fused buckets during backward.

Zhang et al., "Is Network the Bottleneck of Distributed Training?" (NetAI 2020),
section 4: gradients become ready layer by layer during the backward pass; fused
buckets are all-reduced one at a time in FIFO order, each starting when it is
ready and the previous one has finished:

    end_b = max(ready_b, end_{b-1}) + duration_b,     end_{-1} = 0
    exposed_comm   = max(R_last, end_last) - R_last
    iteration_time = T1 + exposed_comm
    scaling_factor = T1 / iteration_time

with ``duration_b = alpha * S_b + lat + F_b`` (see :mod:`kernels.collectives`).

The kernel is written for one configuration (:func:`last_bucket_end`) and lifted
with ``jax.vmap`` over configurations and over worker-layout groups
(:func:`block_metrics`). Per-bucket constants stay outside the batch, so each scan
step costs one max and two multiply-adds per configuration.
"""

import jax
import jax.numpy as jnp
from jax import lax


def smooth_max(x, y, softness):
    """max(x, y), or softness * logaddexp(x/softness, y/softness) when softness > 0.

    The smooth form (>= the max, by at most softness * log 2) gives gradients on both
    sides of a tie; calibration uses it, sweeps use the exact max (softness = 0).
    """
    if softness == 0.0:
        return jnp.maximum(x, y)
    return softness * jnp.logaddexp(x / softness, y / softness)


def last_bucket_end(alpha, lat, ready, nbytes, fixed, valid, softness=0.0):
    """Finish time of the last bucket's all-reduce, for one configuration.

    Args:
      alpha: scalar, seconds per uncompressed byte (bandwidth, utilization and
        compression ratio folded in).
      lat: scalar, latency seconds per bucket (message steps x per-message latency).
      ready: [Bk] seconds from the start of backward at which each bucket is ready;
        non-decreasing; padded buckets are 0.
      nbytes: [Bk] uncompressed bucket bytes; padded buckets are 0.
      fixed: [Bk] seconds of reduction work per bucket; padded buckets are 0.
      valid: [Bk] 1.0 for a real bucket, 0.0 for padding.
      softness: static seconds; 0 for the exact max (see :func:`smooth_max`).

    Returns:
      scalar seconds from the start of backward to the end of the last all-reduce
      (0 when there are no buckets).
    """

    def step(end, bucket):
        r, s, f, v = bucket
        # A padded bucket has r = s = f = v = 0, so it leaves end (>= 0) unchanged
        # (with softness > 0, padding is masked explicitly).
        new = smooth_max(r, end, softness) + alpha * s + (lat * v + f)
        return (new if softness == 0.0 else jnp.where(v > 0, new, end)), None

    end, _ = lax.scan(step, jnp.zeros_like(alpha), (ready, nbytes, fixed, valid))
    return end


# Inner vmap over configurations sharing a worker layout, outer over layouts.
_end_over_configs = jax.vmap(last_bucket_end, in_axes=(0, 0, None, None, None, None))
_end_over_groups = jax.vmap(_end_over_configs, in_axes=(0, 0, None, None, 0, None))


def metrics(alpha, lat, fixed, ready, nbytes, valid, t1):
    """Iteration metrics from per-configuration coefficients.

    Args:
      alpha: [K, C] seconds per uncompressed byte.
      lat: [K, C] latency seconds per bucket.
      fixed: [K, Bk] reduction seconds per bucket and layout.
      ready, nbytes, valid: [Bk] as in :func:`last_bucket_end`.
      t1: scalar single-GPU iteration time (s).

    Returns:
      dict of [K, C] arrays, as :func:`block_metrics`.
    """
    end = _end_over_groups(alpha, lat, ready, nbytes, fixed, valid)
    r_last = jnp.max(ready)  # ready is non-decreasing; padding is 0
    exposed = jnp.maximum(r_last, end) - r_last
    iteration = t1 + exposed
    comm = alpha * jnp.sum(nbytes) + lat * jnp.sum(valid) + jnp.sum(fixed, axis=1)[:, None]
    return {
        "scaling_factor": t1 / iteration,
        "iteration_time": iteration,
        "exposed_comm": exposed,
        "comm_time": comm,
    }


def block_metrics(
    inv_bandwidth, inv_ratio, latency, a_coef, b_coef, l_coef, fixed, ready, nbytes, valid, t1
):
    """Iteration metrics for a block of K worker layouts x C other configurations.

    Args:
      inv_bandwidth: [C] 1 / effective inter-node bandwidth (s/bit), i.e.
        1 / (bandwidth * utilization).
      inv_ratio: [C] 1 / compression ratio.
      latency: [C] per-message latency (s).
      a_coef, b_coef, l_coef: [K] layout coefficients from
        :func:`kernels.collectives.collective_coefficients`.
      fixed: [K, Bk] reduction seconds per bucket and layout.
      ready: [Bk] bucket ready times (s), padded with 0.
      nbytes: [Bk] bucket bytes, padded with 0.
      valid: [Bk] 1.0 for real buckets, 0.0 for padding.
      t1: scalar single-GPU iteration time (s).

    Returns:
      dict of [K, C] arrays: ``scaling_factor`` (1), ``iteration_time`` (s),
      ``exposed_comm`` (s), ``comm_time`` (s).
    """
    alpha = (a_coef[:, None] + b_coef[:, None] * inv_bandwidth[None, :]) * inv_ratio[None, :]
    lat = l_coef[:, None] * latency[None, :]
    return metrics(alpha, lat, fixed, ready, nbytes, valid, t1)
