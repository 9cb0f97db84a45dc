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

  With P = nics_per_node NICs the G shards share P links: the inter-node
  transfer 2(M-1)/M * S' * 8 / b is divided by min(P, G) (not its reductions or
  latencies: each shard's ring still takes its M - 1 steps).

Pipelined collectives, like NCCL's (the reduction runs inside the pipelined
transfer, so a bucket takes as long as its slowest stage, not their sum; see
:mod:`kernels.overlap`), with P' = nics_per_node NICs used in parallel (one ring or
tree per NIC, as NCCL's channels; a host with more NICs than GPUs drives every one of
them, several a GPU: two AWS p5 hosts of 8 H100 and 32 x 100 Gbit/s EFA NICs reach an
all-reduce busbw of 487 GB/s at 16 GiB, ``nccl_tests.csv`` row AWSDT-P5-2x8-32, where 8
of their NICs carry 100 GB/s a host) and rho the reduce cost per byte (the slope of the
reduce-cost table's top segment, no launch cost):

- ``nccl-ring``: max(2(N-1)/N * S' * 8 / (P' b),  2(N-1)/N * S' * 8 / b_intra,  (N-1)/N * S * rho)
  + 2(N-1) * a; the inter-node term is 0 on one node and the intra-node term 0 with
  one GPU per node.
- ``nccl-tree`` (double binary tree across nodes, a chain inside each): max(2 * S' * 8 / (P' b),
  2 * S' * 8 / b_intra,  S * rho) + (2 ceil(log2 M) + 2(G-1)) * a, with the same zeros.
- ``nccl``: NCCL's own all-reduce of S' as :mod:`kernels.nccl` prices it (its algorithm and protocol by size,
  channels, latencies, the shipped fabric constants), over G GPUs a host on M hosts with P NICs of b
  (bandwidth, as NCCL's search reads it; each channel across nodes at most utilization x its share of them)
  each and the GPU's NVLink; computed in the kernel
  (:func:`kernels.overlap.nccl_durations`), so its coefficients here are zeros. NCCL's bandwidth includes the
  reduction and its latencies the steps: the reduce table and ``latency`` are not read.

where S' = S / r. With N = 1 every collective costs nothing.

All-gather (the compressors whose payloads cannot be summed, :mod:`sweep.model.compressors`)
runs as a ring, as NCCL's and Horovod's allgather do: each worker receives the other
N-1 payloads, (N-1) P bytes, where an all-reduce of P bytes moves 2(N-1)/N P on a ring,
2 P on a tree and P through a parameter server. ``spread`` is that ratio, the factor on
the layout's own bandwidth terms: N/2 for ``ring``, ``nccl-ring`` and ``hierarchical``
(whose NICs carry G (M-1) P against 2(M-1)/M P), (N-1)/2 for ``tree`` and ``nccl-tree``,
N-1 for ``ps``. Its message steps are a ring's N - 1 (half the all-reduce's 2(N-1), a reduce-scatter and
an all-gather) for ``ring``, ``nccl-ring``, ``tree`` and ``nccl-tree`` (the trees' all-gather is a ring:
NCCL's is a ring only), (G-1) + (M-1) for ``hierarchical`` (inside each node, then across), and 2 for ``ps``
(push, pull).

Each layout also carries e_N, the expected maximum of N independent standard normal
variables (:func:`expected_max_normal`), for the jitter term.
"""

import dataclasses
import functools
import math

import numpy as np
import numpy.typing as npt

from netsweep_jax.sweep.core.layout_axes import is_nccl
from netsweep_jax.sweep.core.schema import COLLECTIVES

# The paper's collectives: every worker has a link of the full bandwidth b, and nics_per_node plays no part.
ONE_LINK_PER_WORKER = ("ring", "tree", "ps")
PIPELINED = ("nccl-ring", "nccl-tree")
# NCCL's own collective (kernels/nccl.py, priced in the kernel: kernels.overlap.nccl_durations): its coefficients
# here are zeros, and its layouts carry their fabric instead.
NCCL_ENGINE = "nccl"


ReduceTable = tuple[np.ndarray, np.ndarray]  # ([T] bytes, [T] seconds)


@dataclasses.dataclass(frozen=True)
class Coefficients:
    """Bucket-duration coefficients of K worker layouts (float64, host).

    Attributes:
      transfer: [K] A, seconds per compressed byte on intra-node links.
      wire: [K] B, bits on the inter-node link per compressed byte.
      messages: [K] L, latency-bound message steps per bucket.
      straggle: [K] e_N, expected maximum of N standard normal variables.
      multi: [K] 1.0 when N > 1, else 0.0.
      piped: [K] 1.0 for a pipelined collective, else 0.0.
      reduce: [K, Bk] F, seconds of reduction work per bucket (0 for padding).
      spread: [K] all-gather bytes per all-reduce byte (see the module docstring).
      workers: [K] N when N > 1, else 0.
      gather_messages: [K] the all-gather's latency-bound message steps (see the module docstring).
    """

    transfer: np.ndarray
    wire: np.ndarray
    messages: np.ndarray
    straggle: np.ndarray
    multi: np.ndarray
    piped: np.ndarray
    reduce: np.ndarray
    spread: np.ndarray
    workers: np.ndarray
    gather_messages: np.ndarray


def reduce_time(nbytes: np.ndarray | float, table: ReduceTable) -> np.ndarray | np.float64:
    """Seconds of one element-wise add over ``nbytes`` (array) bytes.

    Piecewise-linear interpolation of a measured (bytes, seconds) table, clamped below its first row (a launch's
    cost, as the paper's simulator does with ``cuda_vec_add.log``) and past its last row extended along its last
    segment's slope (never falling): an add over more bytes than the table measured takes longer. Clamped there
    too, 8 GiB of one tensor had cost a 1 GiB add, eight 1 GiB tensors eight of them (a hunt).
    """
    xs, ys = table[0], table[1]
    inside = np.interp(nbytes, xs, ys)
    if len(xs) < 2:
        return inside
    size = np.asarray(nbytes)
    past = np.where(size > xs[-1], ys[-1] + (size - xs[-1]) * _per_byte(table), inside)
    return past if np.ndim(nbytes) else np.float64(past)  # a number for a number, as np.interp gives


@functools.lru_cache(maxsize=1)
def _quadrature():
    """x [Q], log phi(x) [Q], log Phi(x) [Q] on [-12, 12] (Phi from erfc: accurate in the upper tail)."""
    x = np.linspace(-12.0, 12.0, 24001)
    log_phi = -0.5 * x * x - 0.5 * math.log(2 * math.pi)
    log_cdf = np.log(np.array([0.5 * math.erfc(-v / math.sqrt(2.0)) for v in x]))
    return x, log_phi, log_cdf


def expected_max_normal(n: npt.ArrayLike) -> np.ndarray:
    """E[max of n independent standard normals], n >= 1 (array): the trapezoid rule on
    integral x n phi(x) Phi(x)^(n-1) dx, in log space so n up to 10^9 stays exact."""
    n = np.atleast_1d(np.asarray(n, np.float64))
    out = np.array([_expected_max_one(float(m)) for m in n.ravel()]).reshape(n.shape)
    return np.where(n > 1, out, 0.0)


@functools.lru_cache(maxsize=4096)
def _expected_max_one(m: float) -> float:
    """:func:`expected_max_normal` of one n, kept: a sweep asks for the same few node counts in every block
    (a 24,001-point integral each time, a few ms)."""
    x, log_phi, log_cdf = _quadrature()
    log_density = np.log(m) + log_phi + (m - 1.0) * log_cdf
    # exp is the cost (a layout sweep's table of 481 N took 0.3 s); below -745.2 it is exactly 0 in float64
    nonzero = log_density > -745.2
    density = np.zeros_like(x)
    density[nonzero] = np.exp(log_density[nonzero])
    return float(np.trapezoid(x * density, x))


def _per_byte(table):
    """Seconds per byte of the reduce-cost table's top segment (its bandwidth part), never below 0 (a falling last
    segment adds nothing: a review; :func:`reduce_time` extends the table along it)."""
    xs, ys = np.asarray(table[0], np.float64), np.asarray(table[1], np.float64)
    return max(float((ys[-1] - ys[-2]) / (xs[-1] - xs[-2])), 0.0) if len(xs) > 1 else 0.0


def coefficients(
    collective: str,
    nodes: npt.ArrayLike,
    gpus_per_node: npt.ArrayLike,
    bucket_bytes: npt.ArrayLike,
    table: ReduceTable,
    intra_bits_per_s: float,
    nics_per_node: npt.ArrayLike = 1,
) -> Coefficients:
    """Coefficients of ``collective`` for each worker layout (see the module docstring).

    Args:
      collective: one of :data:`sweep.core.schema.COLLECTIVES`.
      nodes: [K] node counts M (integral values >= 1).
      gpus_per_node: [K] GPUs per node G (integral values >= 1).
      bucket_bytes: [Bk] uncompressed bucket sizes S (bytes); padded buckets are 0.
      table: ([T] bytes, [T] seconds), the reduce-cost table.
      intra_bits_per_s: intra-node bandwidth (bit/s), used by ``hierarchical`` and ``nccl-*``.
      nics_per_node: [K] or scalar P, NICs per node (``hierarchical`` and ``nccl-*``).

    Returns:
      :class:`Coefficients` for the K layouts.
    """
    if collective not in COLLECTIVES:
        raise ValueError(f"unknown collective {collective!r}; expected one of {COLLECTIVES}")
    m = np.asarray(nodes, np.float64)[:, None]
    g = np.asarray(gpus_per_node, np.float64)[:, None]
    nics = np.broadcast_to(np.asarray(nics_per_node, np.float64), m.shape[:1])[:, None]
    p = np.minimum(nics, g)  # hierarchical: one shard per GPU, each on one link
    n = m * g
    s = np.asarray(bucket_bytes, np.float64)[None, :]
    comm = (n > 1).astype(np.float64)  # N = 1: no communication at all
    across, within = (m > 1).astype(np.float64), (g > 1).astype(np.float64)
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
    elif collective == "hierarchical":
        a = 2.0 * (g - 1.0) / g * 8.0 / intra_bits_per_s
        b = 2.0 * (m - 1.0) / m * 8.0 / p
        steps = 2.0 * (g - 1.0) + 2.0 * (m - 1.0)
        f = (g - 1.0) * reduce_time(s / g, table) + (m - 1.0) * reduce_time(s / n, table)
    elif is_nccl(collective):  # priced by NCCL's tuner in the kernel, from the workers' fabric
        a, b, steps, f = zero, zero, zero, np.zeros_like(n * s)
    elif collective == "nccl-ring":
        share = 2.0 * (n - 1.0) / np.maximum(n, 1.0) * 8.0
        a, b, steps = share / intra_bits_per_s * within, share / nics * across, 2.0 * (n - 1.0)
        f = (n - 1.0) / n * s * _per_byte(table)
    else:  # nccl-tree
        a, b = 2.0 * 8.0 / intra_bits_per_s * within, 2.0 * 8.0 / nics * across
        steps = (2.0 * np.ceil(np.log2(m)) + 2.0 * (g - 1.0)) * comm
        f = s * _per_byte(table) * comm
    f = np.where(s > 0, f, 0.0)  # padded buckets cost nothing
    piped = np.full(n.shape[0], 1.0 if collective in PIPELINED else 0.0)
    if collective in ("tree", "nccl-tree"):
        spread = (n - 1.0) / 2.0
    else:
        spread = n - 1.0 if collective == "ps" else n / 2.0
    spread = np.where(n > 1, spread, 1.0)
    return Coefficients(
        a[:, 0],
        b[:, 0],
        steps[:, 0],
        expected_max_normal(n[:, 0]),
        comm[:, 0],
        piped,
        f,
        spread[:, 0],
        (n * comm)[:, 0],
        _gather_messages(collective, m, g)[:, 0] * comm[:, 0],
    )


def _gather_messages(collective: str, m: np.ndarray, g: np.ndarray) -> np.ndarray:
    """[K, 1] message steps of an all-gather over M nodes of G GPUs (the module docstring): a ring's N - 1 (half
    the all-reduce's, which is a reduce-scatter and an all-gather), the hierarchical's (G - 1) + (M - 1), a tree's
    as a ring's (NCCL's all-gather is a ring only), a parameter server's push and pull; 0 where NCCL prices it."""
    if is_nccl(collective):
        return np.zeros_like(m)
    if collective == "ps":
        return np.full_like(m, 2.0)
    if collective == "hierarchical":
        return (g - 1.0) + (m - 1.0)
    return m * g - 1.0
