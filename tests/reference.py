"""The semantics of netsweep as a plain float64 Python loop: no JAX, no numpy tricks.

Independent of ``sweep``/``kernels`` on purpose: the kernels are checked against it.
Units: bytes, seconds, bit/s.
"""

import functools
import math


def interp(x, xs, ys):
    """Piecewise-linear interpolation, clamped at both ends."""
    if x <= xs[0]:
        return ys[0]
    if x >= xs[-1]:
        return ys[-1]
    for i in range(1, len(xs)):
        if x <= xs[i]:
            t = (x - xs[i - 1]) / (xs[i] - xs[i - 1])
            return ys[i - 1] + t * (ys[i] - ys[i - 1])
    raise AssertionError("unreachable")


def fuse(waits, sizes, buffer_bytes, timeout_s):
    """[(ready_s, bytes)] per bucket, Horovod fusion as specified."""
    buckets, ready, acc_w, acc_b, pending = [], 0.0, 0.0, 0.0, False
    for w, b in zip(waits, sizes):
        ready += w
        acc_w += w
        acc_b += b
        pending = True
        if acc_w >= timeout_s or acc_b >= buffer_bytes:
            buckets.append((ready, acc_b))
            acc_w = acc_b = 0.0
            pending = False
    if pending:
        buckets.append((ready, acc_b))
    return buckets


@functools.cache
def expected_max_normal(n, step=0.002):
    """E[max of n standard normals] by Simpson's rule on [-12, 12] (n >= 1)."""
    if n == 1:
        return 0.0
    count = int(round(24 / step))
    total = 0.0
    for i in range(count + 1):
        x = -12 + i * step
        cdf = 0.5 * math.erfc(-x / math.sqrt(2))
        density = n * math.exp(-x * x / 2) / math.sqrt(2 * math.pi) * (cdf ** (n - 1) if cdf > 0 else 0.0)
        weight = 1 if i in (0, count) else (4 if i % 2 else 2)
        total += weight * x * density
    return total * step / 3


def duration(collective, s, ratio, eff_bw, latency, nodes, gpus, table, intra_bw, nics=1):
    """Seconds to all-reduce one bucket of ``s`` bytes."""
    n = nodes * gpus
    if n == 1:
        return 0.0
    xs, ys = table
    sc = s / ratio
    p = min(nics, gpus)
    per_byte = (ys[-1] - ys[-2]) / (xs[-1] - xs[-2])
    if collective == "nccl-ring":
        inter = 2 * (n - 1) / n * sc * 8 / (p * eff_bw) if nodes > 1 else 0.0
        intra = 2 * (n - 1) / n * sc * 8 / intra_bw if gpus > 1 else 0.0
        return max(inter, intra, (n - 1) / n * s * per_byte) + 2 * (n - 1) * latency
    if collective == "nccl-tree":
        inter = 2 * sc * 8 / (p * eff_bw) if nodes > 1 else 0.0
        intra = 2 * sc * 8 / intra_bw if gpus > 1 else 0.0
        return max(inter, intra, s * per_byte) + (2 * math.ceil(math.log2(nodes)) + 2 * (gpus - 1)) * latency
    if collective == "ring":
        return 2 * (n - 1) / n * sc * 8 / eff_bw + (n - 1) * interp(s / n, xs, ys) + 2 * (n - 1) * latency
    if collective == "tree":
        return 2 * sc * 8 / eff_bw + interp(s, xs, ys) + 2 * math.ceil(math.log2(n)) * latency
    if collective == "ps":
        return sc * 8 / eff_bw + interp(s, xs, ys) + 2 * latency
    if collective == "hierarchical":
        g, m = gpus, nodes
        t = 2 * (g - 1) / g * sc * 8 / intra_bw + (g - 1) * interp(s / g, xs, ys) + 2 * (g - 1) * latency
        t += 2 * (m - 1) / m * sc * 8 / (eff_bw * p) + (m - 1) * interp(s / n, xs, ys) + 2 * (m - 1) * latency
        return t
    raise ValueError(collective)


def ddp(waits, sizes, first=2**20, cap=25 * 2**20):
    """[(ready_s, bytes)] per bucket, PyTorch DDP's: backward order, closed at >= its cap, no timeout."""
    buckets, ready, acc, limit, pending = [], 0.0, 0.0, first, False
    for w, b in zip(waits, sizes):
        ready += w
        acc += b
        pending = True
        if acc >= limit:
            buckets.append((ready, acc))
            acc, limit, pending = 0.0, cap, False
    if pending:
        buckets.append((ready, acc))
    return buckets


def simulate(waits, sizes, t1, *, bandwidth, utilization=1.0, ratio=1.0, nodes=8, gpus=8,
             latency=0.0, collective="ring", buffer_bytes=64 * 2**20, timeout_s=5e-3,
             table, intra_bw=1200e9, nics=1, overhead=0.0, slowdown=0.0, jitter=0.0, accum=1,
             bucketing="horovod"):
    """One configuration: dict of scaling_factor, iteration_time, exposed_comm, comm_time.

    ``bandwidth`` and ``intra_bw`` in bit/s, ``latency`` and ``overhead`` in s.
    With more than one worker, compute is stretched by (1 + slowdown)(1 + jitter e_N)
    and ``overhead`` is added to every iteration. ``accum`` micro-batches of compute
    per step; the all-reduce overlaps the last one's backward.
    """
    buckets = ddp(waits, sizes) if bucketing == "ddp" else fuse(waits, sizes, buffer_bytes, timeout_s)
    eff = bandwidth * utilization
    n = nodes * gpus
    k = (1 + slowdown) * (1 + jitter * expected_max_normal(n)) if n > 1 else 1.0
    end, comm = 0.0, 0.0
    for ready, s in buckets:
        d = duration(collective, s, ratio, eff, latency, nodes, gpus, table, intra_bw, nics)
        end = max(k * ready, end) + d
        comm += d
    r_last = k * sum(waits)
    exposed = max(r_last, end) - r_last
    it = k * accum * t1 + exposed + (overhead if n > 1 else 0.0)
    return {"scaling_factor": accum * t1 / it, "iteration_time": it, "exposed_comm": exposed, "comm_time": comm}
