"""Cost of all-reducing one fused bucket, split into per-configuration coefficients.

Every collective's duration for a bucket of ``S`` bytes, compression ratio ``r`` and
effective inter-node bandwidth ``b`` (bit/s) has the form

    duration = (A + B / b) * S / r  +  L * a  +  F(S)

where ``A`` (s/byte, intra-node transfer), ``B`` (bits sent per byte of compressed
bucket over the inter-node link), ``L`` (message steps) depend only on the worker
layout, ``a`` is the per-message latency (s), and ``F(S)`` is the reduction work
(element-wise adds, costed by ``reduce(x)``). The engine hoists ``A``, ``B``, ``L``
and ``F`` per (nodes, gpus_per_node) group, so the scan step is one multiply-add.

Formulas, with N = nodes * gpus_per_node workers, M = nodes, G = gpus_per_node
(Zhang et al., "Is Network the Bottleneck of Distributed Training?", NetAI 2020,
use the flat ring):

- ``ring``: 2(N-1)/N * S' * 8 / b + (N-1) * reduce(S/N) + 2(N-1) * a
- ``tree`` (double binary tree, pipelined): 2 * S' * 8 / b + reduce(S) + 2 ceil(log2 N) * a
- ``ps`` (push + pull, full duplex, N server NICs): S' * 8 / b + reduce(S) + 2a
- ``hierarchical``: a ring reduce-scatter + all-gather inside each node over the
  intra-node link (bandwidth ``b_intra``, not scaled by utilization), and between
  them a ring all-reduce across the M nodes of each GPU's 1/G shard; the G shards
  share the node's NIC, so the NIC carries 2(M-1)/M * S' bytes in all:

      2(G-1)/G * S' * 8 / b_intra + (G-1) * reduce(S/G) + 2(G-1) * a
    + 2(M-1)/M * S' * 8 / b      + (M-1) * reduce(S/(G*M)) + 2(M-1) * a

where S' = S / r. With N = 1 every collective costs nothing.
"""

import jax.numpy as jnp

COLLECTIVES = ("ring", "tree", "ps", "hierarchical")


def reduce_time(nbytes, table_bytes, table_seconds):
    """Time of one element-wise add over ``nbytes`` bytes.

    Piecewise-linear interpolation of a measured (bytes, seconds) table, clamped at
    both ends (as the paper's simulator does with ``cuda_vec_add.log``).

    Args:
      nbytes: [...] bytes, any shape.
      table_bytes: [T] increasing bytes.
      table_seconds: [T] seconds.

    Returns:
      [...] seconds.
    """
    return jnp.interp(nbytes, table_bytes, table_seconds)


def collective_coefficients(
    collective, nodes, gpus_per_node, bucket_bytes, table_bytes, table_seconds, intra_bits_per_s
):
    """Per-group coefficients of the bucket duration (see the module docstring).

    Args:
      collective: one of :data:`COLLECTIVES` (static Python string).
      nodes: [K] node counts M (float, integral values >= 1).
      gpus_per_node: [K] GPUs per node G (float, integral values >= 1).
      bucket_bytes: [Bk] uncompressed bucket sizes S (bytes); padded buckets are 0.
      table_bytes, table_seconds: [T] the reduce-cost table.
      intra_bits_per_s: scalar intra-node bandwidth (bit/s), used by ``hierarchical``.

    Returns:
      (A [K] s/byte, B [K] bit/byte, L [K] message steps, F [K, Bk] seconds).
    """
    if collective not in COLLECTIVES:
        raise ValueError(f"unknown collective {collective!r}; expected one of {COLLECTIVES}")
    m = nodes[:, None]
    g = gpus_per_node[:, None]
    n = m * g
    s = bucket_bytes[None, :]
    comm = (n > 1).astype(bucket_bytes.dtype)  # N = 1: no communication at all

    def red(x):
        return reduce_time(x, table_bytes, table_seconds)

    zero = jnp.zeros_like(n)
    if collective == "ring":
        a_coef = zero
        b_coef = 2.0 * (n - 1.0) / n * 8.0
        l_coef = 2.0 * (n - 1.0)
        f = (n - 1.0) * red(s / n)
    elif collective == "tree":
        a_coef = zero
        b_coef = 2.0 * 8.0 * comm
        l_coef = 2.0 * jnp.ceil(jnp.log2(n))
        f = red(s) * comm
    elif collective == "ps":
        a_coef = zero
        b_coef = 8.0 * comm
        l_coef = 2.0 * comm
        f = red(s) * comm
    else:  # hierarchical
        a_coef = 2.0 * (g - 1.0) / g * 8.0 / intra_bits_per_s
        b_coef = 2.0 * (m - 1.0) / m * 8.0
        l_coef = 2.0 * (g - 1.0) + 2.0 * (m - 1.0)
        f = (g - 1.0) * red(s / g) + (m - 1.0) * red(s / n)
    f = jnp.where(s > 0, f, 0.0)  # padded buckets cost nothing
    return a_coef[:, 0], b_coef[:, 0], l_coef[:, 0], f
