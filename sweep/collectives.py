"""Cost of all-reducing one fused bucket, as per-layout coefficients, on the host.

Every collective's duration for a bucket of ``S`` bytes, compression ratio ``r`` and
effective inter-node bandwidth ``b`` (bit/s) has the form

    duration = (A + B / b) * S / r  +  L * a  +  F(S)

where ``A`` (s/byte, intra-node transfer), ``B`` (bits sent per byte of compressed
bucket over the inter-node link) and ``L`` (message steps) depend only on the worker
layout, ``a`` is the per-message latency (s), and ``F(S)`` is the reduction work
(element-wise adds, costed by ``reduce(x)``). None of them depends on a swept inner
axis, so they are computed here once per (task, layout) in float64 and handed to
the kernel (:mod:`kernels.overlap`) as arrays: the kernel never branches on the
collective, and one compiled kernel serves every collective of a sweep.

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

import dataclasses

import numpy as np

from sweep.schema import COLLECTIVES


@dataclasses.dataclass(frozen=True)
class Coefficients:
    """Bucket-duration coefficients of K worker layouts (float64, host).

    Attributes:
      transfer: [K] A, seconds per compressed byte on intra-node links.
      wire: [K] B, bits on the inter-node link per compressed byte.
      messages: [K] L, latency-bound message steps per bucket.
      reduce: [K, Bk] F, seconds of reduction work per bucket (0 for padding).
    """

    transfer: np.ndarray
    wire: np.ndarray
    messages: np.ndarray
    reduce: np.ndarray


def reduce_time(nbytes, table):
    """Seconds of one element-wise add over ``nbytes`` (array) bytes.

    Piecewise-linear interpolation of a measured (bytes, seconds) table, clamped at
    both ends (as the paper's simulator does with ``cuda_vec_add.log``).
    """
    return np.interp(nbytes, table[0], table[1])


def coefficients(collective, nodes, gpus_per_node, bucket_bytes, table, intra_bits_per_s):
    """Coefficients of ``collective`` for each worker layout (see the module docstring).

    Args:
      collective: one of :data:`sweep.schema.COLLECTIVES`.
      nodes: [K] node counts M (integral values >= 1).
      gpus_per_node: [K] GPUs per node G (integral values >= 1).
      bucket_bytes: [Bk] uncompressed bucket sizes S (bytes); padded buckets are 0.
      table: ([T] bytes, [T] seconds), the reduce-cost table.
      intra_bits_per_s: intra-node bandwidth (bit/s), used by ``hierarchical``.

    Returns:
      :class:`Coefficients` for the K layouts.
    """
    if collective not in COLLECTIVES:
        raise ValueError(f"unknown collective {collective!r}; expected one of {COLLECTIVES}")
    m = np.asarray(nodes, np.float64)[:, None]
    g = np.asarray(gpus_per_node, np.float64)[:, None]
    n = m * g
    s = np.asarray(bucket_bytes, np.float64)[None, :]
    comm = (n > 1).astype(np.float64)  # N = 1: no communication at all
    zero = np.zeros_like(n)
    if collective == "ring":
        a, b, steps = zero, 2.0 * (n - 1.0) / n * 8.0, 2.0 * (n - 1.0)
        f = (n - 1.0) * reduce_time(s / n, table)
    elif collective == "tree":
        a, b, steps = zero, 2.0 * 8.0 * comm, 2.0 * np.ceil(np.log2(n))
        f = reduce_time(s, table) * comm
    elif collective == "ps":
        a, b, steps = zero, 8.0 * comm, 2.0 * comm
        f = reduce_time(s, table) * comm
    else:  # hierarchical
        a = 2.0 * (g - 1.0) / g * 8.0 / intra_bits_per_s
        b = 2.0 * (m - 1.0) / m * 8.0
        steps = 2.0 * (g - 1.0) + 2.0 * (m - 1.0)
        f = (g - 1.0) * reduce_time(s / g, table) + (m - 1.0) * reduce_time(s / n, table)
    f = np.where(s > 0, f, 0.0)  # padded buckets cost nothing
    return Coefficients(a[:, 0], b[:, 0], steps[:, 0], f)
