"""Collectives: the bandwidth of a group of GPUs, and the time of each collective over it.

The notation is :mod:`kernels.layout`'s.

Collectives over a group of n GPUs whose members sit ``stride`` ranks apart (Megatron
orders ranks tp, cp, ep, dp, pp: TP stride 1, CP stride t, DP stride t c, PP stride
t c D). The group stays inside one NVLink domain of Q GPUs when stride n <= Q and then
runs at the NVLink bandwidth W (per GPU, one direction); otherwise its traffic leaves
the domain through the node's NICs, which the node's groups share: a group with
q = min(n, max(1, G / stride)) members on a node (G GPUs per node) gets q / G of them, as
the node's G / q such groups communicate at once. A ring over them carries its whole
volume across each node boundary, split over the group's NICs (NCCL's channels), so

    bw(n, stride) = W                                   inside a domain
                  = min(W, K beta u q / G)              across domains (K NICs of beta bit/s
                                                         each, utilization u; W only when q > 1)

which for a group spanning whole nodes (q = G) is netsweep's ``nccl-ring`` with
``--nics-per-node`` K, and for one member per node (TP of 8 on 8-GPU nodes) each GPU's
share of the node's NICs.
    all-reduce    = 2 (n - 1) / n X / bw + 2 (n - 1) lambda      (ring)
                  = 2 X / bw + 2 log2(n) lambda                  (tree; ``nccl`` takes the cheaper)
    reduce-scatter, all-gather, all-to-all = (n - 1) / n X / bw + (n - 1) lambda
    point-to-point = X / bw + lambda

with X each member's buffer in bytes and lambda the per-step latency of traffic that
leaves the domain (0 inside it).
"""

import jax.numpy as jnp

from netsweep_jax.kernels.layout_inputs import Parallelism, Value


def group_bandwidth(size: Value, stride: Value, lay: Parallelism) -> tuple[Value, Value]:
    """(bytes/s per member, crosses the NVLink domain) of a group of ``size`` GPUs ``stride`` ranks apart."""
    inside = (size <= 1) | (stride * size <= lay.nvlink_domain)
    on_node = jnp.clip(lay.gpus_per_node / jnp.maximum(stride, 1.0), 1.0, jnp.maximum(size, 1.0))
    nic = lay.nics_per_node * lay.bandwidth / 8.0 * lay.utilization * on_node / lay.gpus_per_node
    # Across domains the ring also takes NVLink hops between the members on one node, if there are several.
    across = jnp.where(on_node > 1, jnp.minimum(lay.nvlink_bw, nic), nic)
    return jnp.where(inside, lay.nvlink_bw, across), ~inside


def nic_per_gpu(lay: Parallelism) -> Value:
    """Bytes/s of one GPU's share of its node's NICs, when every GPU of the node sends at once."""
    return lay.nics_per_node * lay.bandwidth / 8.0 * lay.utilization / lay.gpus_per_node


def _steps_latency(steps: Value, crosses: Value, lay: Parallelism) -> Value:
    return jnp.where(crosses, steps * lay.latency, 0.0)


def all_reduce(
    nbytes: Value, size: Value, stride: Value, lay: Parallelism, ring_only: Value = False
) -> Value:
    """Seconds for each of ``size`` GPUs to all-reduce ``nbytes`` (ring, tree or the cheaper: ``collective``;
    a ring where ``ring_only``)."""
    bw, crosses = group_bandwidth(size, stride, lay)
    n = jnp.maximum(size, 1.0)
    ring = 2.0 * (n - 1.0) / n * nbytes / bw + _steps_latency(2.0 * (n - 1.0), crosses, lay)
    tree = 2.0 * nbytes / bw + _steps_latency(2.0 * jnp.ceil(jnp.log2(n)), crosses, lay)
    chosen = jnp.where(
        lay.collective == 0, ring, jnp.where(lay.collective == 1, tree, jnp.minimum(ring, tree))
    )
    return jnp.where(n > 1, jnp.where(ring_only, ring, chosen), 0.0)


def scatter_or_gather(nbytes: Value, size: Value, stride: Value, lay: Parallelism) -> Value:
    """Seconds for a reduce-scatter or all-gather of a ``nbytes`` buffer (ring), or an all-to-all of it."""
    bw, crosses = group_bandwidth(size, stride, lay)
    n = jnp.maximum(size, 1.0)
    return jnp.where(n > 1, (n - 1.0) / n * nbytes / bw + _steps_latency(n - 1.0, crosses, lay), 0.0)
