"""The semantics of netsweep as a plain float64 Python loop: no JAX, no numpy tricks.

Independent of ``sweep``/``kernels`` on purpose: the kernels are checked against it.
Units: bytes, seconds, bit/s.
"""

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


def duration(collective, s, ratio, eff_bw, latency, nodes, gpus, table, intra_bw):
    """Seconds to all-reduce one bucket of ``s`` bytes."""
    n = nodes * gpus
    if n == 1:
        return 0.0
    xs, ys = table
    sc = s / ratio
    if collective == "ring":
        return 2 * (n - 1) / n * sc * 8 / eff_bw + (n - 1) * interp(s / n, xs, ys) + 2 * (n - 1) * latency
    if collective == "tree":
        return 2 * sc * 8 / eff_bw + interp(s, xs, ys) + 2 * math.ceil(math.log2(n)) * latency
    if collective == "ps":
        return sc * 8 / eff_bw + interp(s, xs, ys) + 2 * latency
    if collective == "hierarchical":
        g, m = gpus, nodes
        t = 2 * (g - 1) / g * sc * 8 / intra_bw + (g - 1) * interp(s / g, xs, ys) + 2 * (g - 1) * latency
        t += 2 * (m - 1) / m * sc * 8 / eff_bw + (m - 1) * interp(s / n, xs, ys) + 2 * (m - 1) * latency
        return t
    raise ValueError(collective)


def simulate(waits, sizes, t1, *, bandwidth, utilization=1.0, ratio=1.0, nodes=8, gpus=8,
             latency=0.0, collective="ring", buffer_bytes=64 * 2**20, timeout_s=5e-3,
             table, intra_bw=1200e9):
    """One configuration: dict of scaling_factor, iteration_time, exposed_comm, comm_time.

    ``bandwidth`` and ``intra_bw`` in bit/s, ``latency`` in s.
    """
    buckets = fuse(waits, sizes, buffer_bytes, timeout_s)
    eff = bandwidth * utilization
    end, comm = 0.0, 0.0
    for ready, s in buckets:
        d = duration(collective, s, ratio, eff, latency, nodes, gpus, table, intra_bw)
        end = max(ready, end) + d
        comm += d
    r_last = sum(waits)
    exposed = max(r_last, end) - r_last
    it = t1 + exposed
    return {"scaling_factor": t1 / it, "iteration_time": it, "exposed_comm": exposed, "comm_time": comm}
