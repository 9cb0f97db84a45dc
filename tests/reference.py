"""The semantics of netsweep as a plain float64 Python loop: no JAX, no numpy tricks.

Independent of ``sweep``/``kernels`` on purpose: the kernels are checked against it.
Units: bytes, seconds, bit/s.
"""

import functools
import math


def interp(x, xs, ys):
    """Piecewise-linear interpolation, clamped below the first point, past the last along the last segment's
    slope (never falling)."""
    if x <= xs[0]:
        return ys[0]
    if x >= xs[-1]:
        if len(xs) < 2:
            return ys[-1]
        return ys[-1] + (x - xs[-1]) * max((ys[-1] - ys[-2]) / (xs[-1] - xs[-2]), 0.0)
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


def parts(collective, s, ratio, eff_bw, latency, nodes, gpus, table, intra_bw, nics=1):
    """One all-reduce of ``s`` bytes split into (transfer s, reduction s, latency s, pipelined?).

    Paper collectives take transfer + reduction + latency; pipelined ones max(stages) + latency,
    where the transfer is given as (inter-node, intra-node) seconds.
    """
    n = nodes * gpus
    if n == 1:
        return (0.0, 0.0), 0.0, 0.0, False
    xs, ys = table
    sc = s / ratio
    p = min(nics, gpus)  # hierarchical's links; NCCL's channels use every NIC (nics)
    per_byte = (ys[-1] - ys[-2]) / (xs[-1] - xs[-2])
    if collective == "nccl-ring":
        inter = 2 * (n - 1) / n * sc * 8 / (nics * eff_bw) if nodes > 1 else 0.0
        intra = 2 * (n - 1) / n * sc * 8 / intra_bw if gpus > 1 else 0.0
        return (inter, intra), (n - 1) / n * s * per_byte, 2 * (n - 1) * latency, True
    if collective == "nccl-tree":
        inter = 2 * sc * 8 / (nics * eff_bw) if nodes > 1 else 0.0
        intra = 2 * sc * 8 / intra_bw if gpus > 1 else 0.0
        return (
            (inter, intra),
            s * per_byte,
            (2 * math.ceil(math.log2(nodes)) + 2 * (gpus - 1)) * latency,
            True,
        )
    if collective == "ring":
        return (
            (2 * (n - 1) / n * sc * 8 / eff_bw, 0.0),
            (n - 1) * interp(s / n, xs, ys),
            2 * (n - 1) * latency,
            False,
        )
    if collective == "tree":
        return (2 * sc * 8 / eff_bw, 0.0), interp(s, xs, ys), 2 * math.ceil(math.log2(n)) * latency, False
    if collective == "ps":
        return (sc * 8 / eff_bw, 0.0), interp(s, xs, ys), 2 * latency, False
    if collective == "hierarchical":
        g, m = gpus, nodes
        transfer = 2 * (g - 1) / g * sc * 8 / intra_bw + 2 * (m - 1) / m * sc * 8 / (eff_bw * p)
        reduction = (g - 1) * interp(s / g, xs, ys) + (m - 1) * interp(s / n, xs, ys)
        return (transfer, 0.0), reduction, 2 * (g - 1) * latency + 2 * (m - 1) * latency, False
    raise ValueError(collective)


def duration(collective, s, ratio, eff_bw, latency, nodes, gpus, table, intra_bw, nics=1):
    """Seconds to all-reduce one bucket of ``s`` bytes."""
    (inter, intra), reduction, lat, piped = parts(
        collective, s, ratio, eff_bw, latency, nodes, gpus, table, intra_bw, nics
    )
    return max(inter, intra, reduction) + lat if piped else inter + intra + reduction + lat


def halves(collective, s, ratio, eff_bw, latency, nodes, gpus, table, intra_bw, nics=1):
    """(all-gather s, reduce-scatter s) of ``s`` bytes: each half an all-reduce's transfer and latency;
    the reduce-scatter also does the reduction."""
    (inter, intra), reduction, lat, piped = parts(
        collective, s, ratio, eff_bw, latency, nodes, gpus, table, intra_bw, nics
    )
    if piped:
        wire = max(inter / 2, intra / 2)
        return wire + lat / 2, max(wire, reduction) + lat / 2
    return (inter + intra) / 2 + lat / 2, (inter + intra) / 2 + lat / 2 + reduction


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


def simulate(
    waits,
    sizes,
    t1,
    *,
    bandwidth,
    utilization=1.0,
    ratio=1.0,
    nodes=8,
    gpus=8,
    latency=0.0,
    collective="ring",
    buffer_bytes=64 * 2**20,
    timeout_s=5e-3,
    table,
    intra_bw=1200e9,
    nics=1,
    overhead=0.0,
    slowdown=0.0,
    jitter=0.0,
    accum=1,
    bucketing="horovod",
    compressor="none",
    shapes=None,
    cost=None,
    factor=1.0,
    accuracy=False,
    arch=0,
    fabric=None,
):
    """One configuration: dict of scaling_factor, iteration_time, exposed_comm, comm_time, time_to_accuracy.

    ``collective`` ``nccl``: each bucket is NCCL's own all-reduce (:func:`nccl_all_reduce`) on GPUs of
    architecture ``arch`` (kernels/nccl.py's index) whose NVLink is ``intra_bw``, on ``fabric`` (as
    :func:`nccl_all_reduce` takes it; None: no ``--fabric``); compressed, its payload's all-reduce or all-gather
    (N payloads), and an empty one for each further round.

    ``bandwidth`` and ``intra_bw`` in bit/s, ``latency`` and ``overhead`` in s.
    With more than one worker, compute is stretched by (1 + slowdown)(1 + jitter e_N)
    and ``overhead`` is added to every iteration. ``accum`` micro-batches of compute
    per step; the all-reduce overlaps the last one's backward.

    ``compressor`` (a spec, :func:`codec`) with ``shapes`` (one tuple per tensor) and
    ``cost`` (dict hbm, peak, me, fe, launch, passes): each tensor compressed on its
    own; a bucket sends the sum of its payloads, all-gathered (a ring: each worker
    receives the other N - 1) for top-k and sign, else all-reduced with the reduction
    over the payload; encoding runs on the compute stream as each bucket becomes
    ready; decoding ends the bucket's communication. With ``accuracy``, also
    ``time_to_accuracy``: ``factor`` x the iteration time over the same run
    uncompressed at ratio 1.
    """
    groups = (
        ddp_groups(waits, sizes) if bucketing == "ddp" else fuse_groups(waits, sizes, buffer_bytes, timeout_s)
    )
    eff = bandwidth * utilization
    n = nodes * gpus
    k = (1 + slowdown) * (1 + jitter * expected_max_normal(n)) if n > 1 else 1.0
    method = compressor.partition(":")[0]
    gather = method in ("topk", "signsgd")
    rounds = 2 if method in ("powersgd", "int8") else 1
    readiness, total = [], 0.0
    for w in waits:  # tensor i is ready at w_0 + ... + w_i
        total += w
        readiness.append(total)
    end, comm, encoded = 0.0, 0.0, 0.0
    for group in groups:
        ready = readiness[group[-1]]
        if method == "none":
            payload, encode, decode, unpack = sum(sizes[i] for i in group), 0.0, 0.0, 0.0
        else:
            terms = [codec(compressor, sizes[i], shapes[i], cost) for i in group]
            payload, encode, decode, unpack = (sum(t[j] for t in terms) for j in range(4))
        if n > 1:
            encoded += encode
        if n == 1:
            d = 0.0
        elif collective.startswith("nccl") and not collective.startswith("nccl-"):
            # NCCL's own (nccl:ALGO: its algorithm forced): one collective of the whole payload, one empty per
            # further round
            coll, x = (1, n * payload) if gather else (0, payload)
            d = (
                sum(
                    nccl_of(collective, fabric, bandwidth, utilization, nodes, gpus, intra_bw, nics, arch)(
                        b / ratio, coll
                    )
                    for b in [x] + [0.0] * (rounds - 1)
                )
                + decode
                + (n * unpack if gather else 0.0)
            )
        elif gather:
            inter, intra, piped = allgather(collective, payload, ratio, eff, nodes, gpus, intra_bw, nics)
            lat = gather_steps(collective, nodes, gpus) * latency
            codec_s = decode + n * unpack
            d = (max(inter, intra) if piped else inter + intra) + rounds * lat + codec_s
        else:
            (inter, intra), reduction, lat, piped = parts(
                collective, payload, ratio, eff, latency, nodes, gpus, table, intra_bw, nics
            )
            d = (max(inter, intra, reduction) if piped else inter + intra + reduction) + rounds * lat + decode
        end = max(k * ready + encoded, end) + d
        comm += d
    r_last = k * sum(waits) + encoded
    exposed = max(r_last, end) - r_last
    it = k * accum * t1 + encoded + exposed + (overhead if n > 1 else 0.0)
    out = {
        "scaling_factor": accum * t1 / it,
        "iteration_time": it,
        "exposed_comm": exposed,
        "comm_time": comm,
    }
    if not accuracy:
        return out
    plain = it
    if method != "none" or ratio != 1.0:
        plain = simulate(
            waits,
            sizes,
            t1,
            bandwidth=bandwidth,
            utilization=utilization,
            nodes=nodes,
            gpus=gpus,
            latency=latency,
            collective=collective,
            buffer_bytes=buffer_bytes,
            timeout_s=timeout_s,
            table=table,
            intra_bw=intra_bw,
            nics=nics,
            overhead=overhead,
            slowdown=slowdown,
            jitter=jitter,
            accum=accum,
            bucketing=bucketing,
            arch=arch,
            fabric=fabric,
        )["iteration_time"]
    out["time_to_accuracy"] = factor * it / plain
    return out


NCCL_ALGORITHM_NAMES = ("tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat")
NCCL_PROTOCOL_NAMES = ("ll", "ll128", "simple")


def forced(collective):
    """(algorithm, protocol) forced by ``nccl:ALGO`` or ``nccl:PROTO`` (indices in kernels/nccl.py's ALGORITHMS
    and PROTOCOLS), -1 for what is not forced (both for ``nccl``): :func:`forcing` of its name's place."""
    names = ("", *NCCL_ALGORITHM_NAMES, *NCCL_PROTOCOL_NAMES)
    return forcing(names.index(collective.partition(":")[2]))


def forcing(index):
    """(algorithm, protocol) of the kernels' forcing code ``index``: 0 none, 1 + a the algorithm a, 8 + p the
    protocol p (kernels/nccl.py's FORCINGS, written out)."""
    index = int(index)
    if 1 <= index <= len(NCCL_ALGORITHM_NAMES):
        return index - 1, -1
    if index > len(NCCL_ALGORITHM_NAMES):
        return -1, index - 1 - len(NCCL_ALGORITHM_NAMES)
    return -1, -1


def nccl_of(collective, fabric, bandwidth, utilization, nodes, gpus, intra_bw, nics, arch):
    """NCCL's time of one collective of a sweep, as a function of its bytes and :func:`nccl_all_reduce`'s
    ``coll`` (``collective``: ``nccl`` or ``nccl:ALGO``/``nccl:PROTO``, its forcing)."""
    forcing = forced(collective)
    return lambda x, coll: nccl_all_reduce(
        x, bandwidth, nodes, gpus, intra_bw, nics, arch, coll, fabric, *forcing, utilization=utilization
    )


def nccl_all_reduce(
    x, bandwidth, nodes, gpus, intra_bw, nics, arch, coll=0, fabric=None, algo=-1, proto=-1, utilization=1.0
):
    """Seconds of NCCL's all-reduce of ``x`` bytes over ``gpus`` a host on ``nodes`` hosts, ``nics`` NICs of
    ``bandwidth`` bit/s each a host (as NCCL's search reads them; what crosses nodes runs at ``utilization``
    of it, a divisor with the spine's), NVLink ``intra_bw`` bit/s a GPU (as NCCL counts it: its datasheet links at
    NCCL's per-link rate), NVSwitch where a host has several GPUs, the shipped fabric constants. ``coll``: another
    of kernels/nccl.py's collectives (1 all-gather, 2 reduce-scatter) of the whole ``x``-byte buffer.
    ``fabric``: a ``--fabric``'s dict (``nvlink_domain`` GPUs, 0: the host's; ``collnet``; ``leaf_hosts``,
    ``oversubscription``, ``rail_only``: the spine's divisor of eta_net for a world wider than a leaf and than
    the NVLink domain; ``constants``: the six in place of the shipped ones). ``algo``, ``proto``: NCCL's
    algorithm and protocol forced (-1: its choice)."""
    if nodes * gpus == 1:
        return 0.0
    f = fabric or {}
    n = nodes * gpus
    q = f.get("nvlink_domain") or gpus
    # the layout family's rule: one group of every GPU at stride 1, its NICs the host's
    spine = _spine_factor(
        n, 1, {**f, "gpus": n, "gpus_per_node": gpus, "nvlink_domain": q, "nics_per_node": nics}
    )
    spine /= utilization  # NCCL's search reads the nominal rate; the transport delivers utilization of it
    hosts_a_domain = max(min(max(q, 1), n) / gpus, 1.0)
    nvlink = intra_bw / 8e9 / [25.0, 25.0, 25.0, 50.0][arch] * [20.0, 20.0, 20.6, 40.1][arch]
    eta_net, eta_nvl, lam, op, fill, fill_bytes = f.get("constants", NCCL_LAYOUT_CONSTANTS)
    return nccl_collective(
        coll, x, gpus, nodes, hosts_a_domain, nvlink, nics, bandwidth / 8e9, arch, q > 1,
        bool(f.get("collnet")), eta_net, eta_nvl, lam, algo, proto, op=op, fill=fill, fill_bytes=fill_bytes,
        spine=spine,
    )[0]  # fmt: skip


def fuse_groups(waits, sizes, buffer_bytes, timeout_s):
    """Horovod fusion as lists of tensor indices per bucket (the same rule as :func:`fuse`)."""
    groups, current, acc_w, acc_b = [], [], 0.0, 0.0
    for i, (w, b) in enumerate(zip(waits, sizes)):
        current.append(i)
        acc_w += w
        acc_b += b
        if acc_w >= timeout_s or acc_b >= buffer_bytes:
            groups.append(current)
            current, acc_w, acc_b = [], 0.0, 0.0
    return groups + ([current] if current else [])


def ddp_groups(waits, sizes, first=2**20, cap=25 * 2**20):
    """PyTorch DDP's buckets as lists of tensor indices (the same rule as :func:`ddp`)."""
    groups, current, acc, limit = [], [], 0.0, first
    for i, b in enumerate(sizes):
        current.append(i)
        acc += b
        if acc >= limit:
            groups.append(current)
            current, acc, limit = [], 0.0, cap
    return groups + ([current] if current else [])


def gather_steps(collective, nodes, gpus):
    """Latency-bound message steps of an all-gather over ``nodes`` x ``gpus`` workers: a ring's N - 1 (ring,
    nccl-ring, and the trees, whose all-gather is a ring), the hierarchical's (G - 1) + (M - 1), a parameter
    server's push and pull (2)."""
    if collective == "ps":
        return 2
    if collective == "hierarchical":
        return (gpus - 1) + (nodes - 1)
    return nodes * gpus - 1


def allgather(collective, payload, ratio, eff_bw, nodes, gpus, intra_bw, nics=1):
    """(inter-node s, intra-node s, pipelined?) of a ring all-gather of ``payload`` bytes per worker:
    each worker receives the other N - 1 payloads."""
    n, m, g = nodes * gpus, nodes, gpus
    p = min(nics, gpus)
    got = (n - 1) * payload / ratio * 8  # bits each worker receives
    if collective == "ring":
        return got / eff_bw, 0.0, False
    if collective in ("tree", "ps"):
        return got / eff_bw, 0.0, False
    if (
        collective == "hierarchical"
    ):  # G GPUs' (M-1) payloads each through the node's P NICs; M payloads per peer
        return (
            g * (m - 1) * payload / ratio * 8 / (eff_bw * p),
            (g - 1) * m * payload / ratio * 8 / intra_bw,
            False,
        )
    if collective in ("nccl-ring", "nccl-tree"):
        return (got / (nics * eff_bw) if m > 1 else 0.0), (got / intra_bw if g > 1 else 0.0), True
    raise ValueError(collective)


def codec(spec, nbytes, shape, cost):
    """(payload bytes, encode s, decode s, unpack s per payload) of one tensor under compressor ``spec``.

    ``cost``: hbm (bytes/s), peak (FLOP/s), me, fe (efficiencies), launch (s), passes (top-k).
    """
    method, _, arg = spec.partition(":")
    n = math.prod(shape)
    e = nbytes / n

    def mem(b):
        return cost["launch"] + b / (cost["hbm"] * cost["me"])

    def product(flops, b):
        return cost["launch"] + max(flops / (cost["peak"] * cost["fe"]), b / (cost["hbm"] * cost["me"]))

    feedback = 2 * mem(3 * n * e)
    if method == "none" or (method == "fp16" and e <= 2):
        return nbytes, 0.0, 0.0, 0.0
    if method == "fp16":
        return 2 * n, mem(n * e + 2 * n), mem(2 * n + n * e), 0.0
    if method == "int8":
        return n, mem(n * e) + mem(n * e + n), mem(n + n * e), 0.0
    if method == "signsgd":
        return (
            math.ceil(n / 8) + 4,
            feedback + mem(n * e) + mem(n * e + n / 8),
            mem(n * e),
            mem(n / 8 + 2 * n * e),
        )
    if method == "topk":
        k = max(1, math.ceil(float(arg) * n))
        select = cost["launch"] + cost["passes"] * n * e / (cost["hbm"] * cost["me"])
        return k * (e + 4), feedback + select + mem(k * (e + 4)), mem(n * e), mem(k * (2 * e + 4))
    if method == "randomk":
        k = max(1, math.ceil(float(arg) * n))
        return k * e, feedback + mem(2 * k * e), mem(n * e) + mem(2 * k * e), 0.0
    if method == "powersgd":
        if len(shape) < 2:
            return nbytes, 0.0, 0.0, 0.0
        rows, cols = shape[0], math.prod(shape[1:])
        r = min(int(arg), rows, cols)
        if rows * cols < 2 * (rows + cols) * r:
            return nbytes, 0.0, 0.0, 0.0
        flops = 2 * rows * cols * r
        orth = 3 * r * cost["launch"] + 2 * rows * r * r * e / (cost["hbm"] * cost["me"])
        return (
            (rows + cols) * r * e,
            mem(3 * n * e) + product(flops, n * e),
            orth + 2 * product(flops, n * e) + mem(3 * n * e),
            0.0,
        )
    raise ValueError(spec)


def simulate_fsdp(
    waits,
    sizes,
    forward,
    units,
    t1,
    *,
    bandwidth,
    utilization=1.0,
    ratio=1.0,
    nodes=8,
    gpus=8,
    latency=0.0,
    collective="ring",
    table,
    intra_bw=1200e9,
    nics=1,
    overhead=0.0,
    slowdown=0.0,
    jitter=0.0,
    arch=0,
    fabric=None,
):
    """A fully sharded (FSDP) step: the same keys as :func:`simulate`.

    ``collective`` ``nccl``: each unit's all-gather and reduce-scatter are NCCL's own
    (:func:`nccl_all_reduce`'s, on ``fabric``), their reduction and latencies included.

    Tensors are in backward order with their FSDP unit; units run forward in the order the
    forward pass reaches them. One compute stream, one FIFO communication stream, the next
    unit's all-gather issued when a unit's compute starts, its reduce-scatter when its
    backward ends.
    """
    n = nodes * gpus
    k = (1 + slowdown) * (1 + jitter * expected_max_normal(n)) if n > 1 else 1.0
    order = []
    for u in reversed(units):
        if u not in order:
            order.append(u)
    size = {u: 0.0 for u in order}
    fwd = {u: 0.0 for u in order}
    bwd = {u: 0.0 for u in order}
    for w, b, f, u in zip(waits, sizes, forward, units):
        size[u] += b
        fwd[u] += f * k
        bwd[u] += w * k
    eff = bandwidth * utilization
    gather, scatter = {}, {}
    for u in order:
        if collective.startswith("nccl") and not collective.startswith("nccl-"):
            nccl = nccl_of(collective, fabric, bandwidth, utilization, nodes, gpus, intra_bw, nics, arch)
            # kernels/nccl.py's ALL_GATHER, REDUCE_SCATTER
            gather[u], scatter[u] = nccl(size[u] / ratio, 1), nccl(size[u] / ratio, 2)
            continue
        gather[u], scatter[u] = halves(
            collective, size[u], ratio, eff, latency, nodes, gpus, table, intra_bw, nics
        )
    c = m = issued = 0.0
    for u in order:  # forward, prefetching one unit
        m = max(m, issued) + gather[u]
        start = max(c, m)
        c = start + fwd[u]
        issued = start
    m = max(m, c) + gather[order[-1]]
    ready = m
    backward = list(reversed(order))
    for i, u in enumerate(backward):
        start = max(c, ready)
        c = start + bwd[u]
        if i + 1 < len(backward):
            m = max(m, start) + gather[backward[i + 1]]
            ready = m
        m = max(m, c) + scatter[u]
    compute = sum(fwd.values()) + sum(bwd.values())
    total = max(c, m) + (k * t1 - compute) + (overhead if n > 1 else 0.0)
    comm = 2 * sum(gather.values()) + sum(scatter.values())
    return {
        "scaling_factor": t1 / total,
        "iteration_time": total,
        "exposed_comm": max(total - k * t1 - (overhead if n > 1 else 0.0), 0.0),
        "comm_time": comm,
    }


# --- the layout model (kernels/layout.py), one configuration at a time, every stage and layer walked ---

LAYOUT_STATUS_RULES = 10


def _job_domain(lay):
    """The job's GPUs in each NVLink domain of Q, and whether it is placed so: more than Q GPUs spread evenly over
    the fewest domains, gpus / ceil(gpus / Q), where that is whole GPUs and whole hosts (or hosts of whole
    domains); else (Q, False)."""
    q, gpus, g = lay["nvlink_domain"], lay["gpus"], lay["gpus_per_node"]
    share = gpus / math.ceil(gpus / q)
    whole = q % g == 0 or g % q == 0  # domains of whole hosts, or hosts of whole domains
    laid = gpus > q and share == int(share) and whole and (share % g == 0 or g % share == 0)
    return (share, True) if laid else (q, False)


def _domain_part(extent, lay):
    """The GPUs of a domain as a block of ``extent`` consecutive ranks meets them at the fewest: gcd(extent, Q_j)
    where the job is placed over several domains of Q_j of its GPUs (its blocks from rank 0 and the domains from
    rank 0 meet at the multiples of the gcd), else Q."""
    share, laid = _job_domain(lay)
    return math.gcd(round(extent), round(share)) if laid else lay["nvlink_domain"]


def _group_bw(size, stride, lay, ring=True):
    """(bytes/s per member, leaves the NVLink domain) for a group of ``size`` GPUs ``stride`` ranks apart: a ring's
    by its members in one domain's NICs, a send/recv's (not ``ring``) by the sending GPU's own share."""
    if size <= 1 or stride * size <= _domain_part(stride * size, lay):
        return lay["nvlink_bw"], False
    sharing = _sharing_nics(size, stride, lay) if ring else 1.0
    nics = min(lay["nics_per_node"] * sharing / lay["gpus_per_node"], 32)  # NCCL's channels at most
    nic = lay["bandwidth"] / 8 * lay["utilization"] * nic_fraction(nics)
    return (min(lay["nvlink_bw"], nic) if sharing > 1 else nic), True


def _sharing_nics(size, stride, lay):
    """The group's members whose nodes' NICs its ring leaves a domain by: on one node, or in the domain's part
    of the group's block where a domain holds several nodes (GB200 NVL72's trays), whole ones, where the job is
    placed evenly over its domains (placed unevenly, a block of the whole job at its fewest whole nodes a
    domain; of part of it, its node's)."""
    part = _domain_part(max(size, 2) * max(stride, 1), lay)
    _, laid = _job_domain(lay)
    g, q, gpus = lay["gpus_per_node"], lay["nvlink_domain"], lay["gpus"]
    if laid:
        domain = part
    elif q % g == 0 and gpus > q and max(size, 2) * max(stride, 1) >= gpus:
        # a block of the whole job placed unevenly over domains of whole nodes: the fewest whole nodes of one
        domain = math.floor(gpus / math.ceil(gpus / q) / g) * g
    else:
        domain = 0
    in_domain = math.floor(domain / max(stride, 1))
    return min(max(lay["gpus_per_node"] / max(stride, 1), in_domain, 1.0), max(size, 1))


def _nic_share(size, stride, lay, ring=True):
    """The share of a group's traffic time its NICs add: 0 inside the NVLink domain, 1 where each member is the
    group's only one on its node, else 1 - min(b_nvl, b_nic) / b_nvl."""
    bw, leaves = _group_bw(size, stride, lay, ring)
    if not leaves:
        return 0.0
    sharing = _sharing_nics(size, stride, lay) if ring else 1.0
    return 1.0 - bw / lay["nvlink_bw"] if sharing > 1 else 1.0


def _dp_nic_share(dense, expert, group, stride, expert_dp, expert_stride, lay):
    """The data-parallel term's NIC share: the dense and the expert groups', weighted by the stage's parameters of
    each, a group of one GPU weighing nothing; the dense group's alone where the experts' weigh nothing."""
    dense = dense if group > 1 else 0.0
    expert = expert if expert_dp > 1 else 0.0
    if expert <= 0:
        return _nic_share(group, stride, lay)
    return (dense * _nic_share(group, stride, lay) + expert * _nic_share(expert_dp, expert_stride, lay)) / (
        dense + expert
    )


def nic_fraction(share):
    """A group's NICs a host as it runs them (float64): its share where one or more, else 1 / ceil(1 / share), the
    slowest of the host's groups sharing whole NICs (5 NICs for 8 GPUs: half a NIC, as 4)."""
    return share if share >= 1 else 1 / math.ceil(1 / share * (1 - 1e-6))


# results/validation-nccl's eta_net, eta_nvl, lambda (us), op latency (us), fill (us) and the fill's message
# (bytes): where a layout does not give its own (a fabric file's).
NCCL_LAYOUT_CONSTANTS = (0.968, 0.905, 1.80, 9.71, 53.5, 10.9 * 2**20)
NCCL_LAYOUT_KEYS = ("eta_net", "eta_nvl", "nccl_latency", "nccl_op_latency", "nccl_fill", "nccl_fill_bytes")
# A layout that gives none of the tuner's omissions has none, as kernels/layout_inputs.py's Parallelism defaults.
UNTUNED_DEFAULTS = {"nccl_op_latency": 0.0, "nccl_fill": 0.0, "nccl_fill_bytes": 1.0}
NCCL_KIND = {"allreduce": 0, "scatter": 1, "alltoall": 3, "sendrecv": 4}


def _spine_factor(size, stride, lay, kind="ring"):
    """Over the spine (the group's block of stride x size ranks wider than a leaf of L hosts and than the NVLink
    domain) each channel across nodes runs at most at its share of the NICs over S = max(1, o f) (this
    function's S; :func:`nccl_collective`'s ``spine``), f the share of the leaf's L K
    NIC ports' rate the collective sends out of the leaf: min(1, min(s, L G) c / (L K)) for a ring or a tree
    (each of the leaf's min(s, L G) groups crosses its edge once by c = min(32, its NICs a host x hosts of an
    NCCL node) NICs), min(1, s / (L G)) for a send/recv (``kind`` "sendrecv": the leaf's last s ranks, each by
    its own NICs), (n - max(m, p)) / (n - p) for an all-to-all (``kind`` "alltoall": m = clip(L G / s, 1, n)
    members in a leaf, p in one NCCL node); L = 0: no tier above the hosts; rail-only wiring (lay['rail_only'])
    has no spine."""
    leaf, rail_only = lay.get("leaf_hosts", 0.0), lay.get("rail_only", 0.0) > 0
    g_host, domain, nics = lay["gpus_per_node"], lay["nvlink_domain"], lay["nics_per_node"]
    n, s = max(size, 2), max(stride, 1)
    if leaf <= 0 or rail_only or s * n <= max(leaf * g_host, domain):
        return 1.0
    q = min(max(g_host / s, 1), n)  # the group's GPUs a host
    in_domain = min(max(_domain_part(s * n, lay) / s, 1), n)  # the fewest in one domain
    # the leaf's ports at the rate the sends run: NCCL's whole NICs of the group at its part of a NIC, or (flex's
    # RDMA stage) each GPU's own part
    share = nics * q / g_host
    if kind == "flex" or nics < g_host:  # each GPU by its own part of a NIC
        used = min(nic_fraction(nics / g_host) * g_host / nics, 1.0)
    else:
        used = max(math.floor(share + 1e-6), 1) * min(nic_fraction(share), 1) / share
    if kind in ("alltoall", "flex"):
        p = max(in_domain, q)  # the group's GPUs a NCCL node
        m = min(max(leaf * g_host / s, 1), n)  # the group's GPUs a leaf
        load = (n - max(m, p)) / max(n - p, 1) * used
    elif kind == "sendrecv":
        load = min(s / (leaf * g_host), 1.0) * used
    else:
        hosts_a_node = max(in_domain / q, 1)
        # its channels' whole NICs in one NCCL node, at most 32; under one NIC a host, one channel a host at that share
        crossing = (
            min(math.floor(share + 1e-6) * hosts_a_node, 32)
            if share >= 1
            else min(hosts_a_node, 32) * nic_fraction(share)
        )
        load = min(min(s, leaf * g_host) * crossing / (leaf * nics), 1.0)
    return max(lay.get("oversubscription", 1.0) * load, 1.0)


def _nccl_group(kind, nbytes, size, stride, lay):
    """Seconds of NCCL's collective over a group of ``size`` GPUs ``stride`` ranks apart, as placed: its GPUs a
    host, hosts, hosts a domain, floor(K q / G) of the host's NICs (under one: one NIC at that fraction of its rate);
    0 for a group of one or no bytes. An all-to-all's NVLink side: the most of the group in one domain (the job's
    GPUs a domain over the stride)."""
    if size <= 1 or nbytes <= 0:
        return 0.0
    if kind == "ring_allreduce":  # sequence parallelism: a reduce-scatter and an all-gather
        return 2 * _nccl_group("scatter", nbytes, size, stride, lay)
    g_host, domain = lay["gpus_per_node"], lay["nvlink_domain"]
    q = min(max(g_host / max(stride, 1), 1), size)  # the group's GPUs on one host
    # the fewest of the group in one domain (its block across a domain's edge: the smallest part there)
    in_domain = min(max(_domain_part(max(stride, 1) * max(size, 2), lay) / max(stride, 1), 1), size)
    most = min(max(_job_domain(lay)[0] / max(stride, 1), 1), max(size, 2))  # never below its GPUs a host
    peers = max(most, q) if kind == "alltoall" else 0.0
    share = lay["nics_per_node"] * q / g_host
    arch = int(lay["nccl_arch"])
    links = round(lay["nvlink_bw"] / 1e9 / [25.0, 25.0, 25.0, 50.0][arch] * 1000) / 1000  # to a thousandth
    nvlink = links * [20.0, 20.0, 20.6, 40.1][arch]
    rate = lay["bandwidth"] / 8e9  # as NCCL's search reads it; utilization divides what runs, as the spine
    hosts, per_domain = size / q, max(in_domain / q, 1)
    if kind == "alltoall" and lay.get("rail_only", 0.0) > 0:
        # Every byte for another rail crosses NVLink first: (p - 1) / p of the buffer, p the group's GPUs a
        # domain (the most), where NCCL's all-to-all sends (p - 1) / n: NVLink W p / n.
        nvlink *= peers / size
    # whole NICs a group (the slowest of the host's groups paces them); under one, one at that fraction; a send's
    # or an all-to-all's GPU under one NIC a GPU at its own part of one
    whole = max(math.floor(share + 1e-6), 1)
    nic_rate = rate * min(nic_fraction(share), 1)
    if kind in ("alltoall", "sendrecv") and lay["nics_per_node"] < g_host:
        nic_rate = rate * nic_fraction(lay["nics_per_node"] / g_host) * q / whole
    args = (
        q,
        hosts,
        per_domain,
        nvlink,
        whole,
        nic_rate,
        arch,
        domain > 1,
    )
    eta_net, eta_nvl, lam, op, fill, fill_bytes = (
        lay.get(k, UNTUNED_DEFAULTS.get(k, c)) for k, c in zip(NCCL_LAYOUT_KEYS, NCCL_LAYOUT_CONSTANTS)
    )
    # each channel's share of the NICs over the spine, at the transport's utilization
    spine = _spine_factor(size, stride, lay, kind) / lay["utilization"]
    sharp = lay.get("sharp", 0.0) > 0  # NCCL's CollNet on: SHARP's in-network reduction
    # lay["collective"] 3: NCCL's choice; 3 + i: its forcing i (nccl:ALGO as NCCL_ALGO, nccl:PROTO as NCCL_PROTO)
    algo, proto = forcing(lay.get("collective", 3) - 3)
    return nccl_collective(
        NCCL_KIND[kind],
        nbytes,
        *args,
        sharp,
        eta_net,
        eta_nvl,
        lam,
        algo,
        proto,
        op=op,
        fill=fill,
        fill_bytes=fill_bytes,
        spine=spine,
        peers=peers,
    )[0]


def _collective(kind, nbytes, size, stride, lay):
    """Seconds for one collective: ``allreduce`` (ring/tree/nccl by lay['collective']), ``ring_allreduce``,
    ``scatter`` (reduce-scatter, all-gather or all-to-all); NCCL's where lay['collectives'] is 1. A collective of
    no bytes (a dense model's expert terms) is none: 0."""
    if size <= 1 or nbytes <= 0:
        return 0.0
    if lay["collectives"]:
        return _nccl_group(kind, nbytes, size, stride, lay)
    bw, leaves = _group_bw(size, stride, lay)
    lat = lay["latency"] if leaves else 0.0
    ring = 2 * (size - 1) / size * nbytes / bw + 2 * (size - 1) * lat
    if kind == "scatter":
        return (size - 1) / size * nbytes / bw + (size - 1) * lat
    if kind == "ring_allreduce":
        return ring
    tree = 2 * nbytes / bw + 2 * math.ceil(math.log2(size)) * lat
    # codes as LAYOUT_COLLECTIVES: ring, tree, else the cheaper (ring-or-tree; nccl, priced flat as the ideal network)
    return {0: ring, 1: tree}.get(int(lay["collective"]), min(ring, tree))


def layout_status(arch, lay):
    """The first layout rule broken (1-based, as kernels.layout.STATUS), or 0."""
    t, p, c, e, V = lay["tp"], lay["pp"], lay["cp"], lay["ep"], lay["schedule"]
    mp = t * p * c
    dp = lay["dp"] if lay["dp"] > 0 else lay["gpus"] // mp
    gpus = dp * mp if lay["dp"] > 0 else lay["gpus"]
    m = lay["global_batch"] // max(lay["micro_batch"] * dp, 1)
    if gpus % mp:
        return 1
    if arch["heads"] % t:
        return 2
    if arch["kv_heads"] % t:
        return 3
    if arch["layers"] < p * V:
        return 4
    if lay["global_batch"] % (lay["micro_batch"] * dp) or m < 1:
        return 5
    etp = lay["expert_tp"]
    if (arch["experts"] > 0 and arch["experts"] % e) or (arch["experts"] == 0 and (e > 1 or etp > 1)):
        return 6
    if (t * dp * c) % (e * etp):
        return 7
    if c > 1 and arch["seq"] % (2 * c):
        return 8
    if V > 1 and (p < 2 or m % p):
        return 9
    if lay["dp"] > 0 and lay["gpus"] > 0 and gpus != lay["gpus"]:
        return 10
    if arch["experts"] > 0 and t > 1 and not lay["sequence_parallel"]:
        return 11
    overlap, recompute = int(lay.get("overlap", 0)), int(lay["recompute"])
    unhidable = e < 2 or recompute & (2 | 128) or arch.get("mtp_layers", 0) > 1 or (p > 1 and V < 2)
    if arch["experts"] > 0 and overlap & 8 and unhidable:
        return 12
    if lay.get("offload_layers", 0) > 0 and (p > 1 or recompute):
        return 13
    if t > 1 and lay["sequence_parallel"] and arch["seq"] % (c * t):
        return 14
    return 0


# An overlap mode's code is a sum of these bits (as sweep.core.layout_axes spells them).
OVERLAP_BITS = {"grad_reduce": 1, "param_gather": 2, "tp_comm": 4, "moe_a2a": 8}

# A recompute mode's code is a sum of these bits (as sweep.core.layout_axes spells them).
RECOMPUTE_BITS = {
    "core_attn": 1,
    "full": 2,
    "op": 4,
    "layernorm": 8,
    "up_proj": 16,
    "mlp": 32,
    "moe_act": 64,
    "moe": 128,
}


def none_in(experts, k, held):
    """C(E - a, k) / C(E, k) for real a (a float64 loop): none of k experts drawn from E is one of a held. E at
    least k, as the kernel holds it (a pool that group-limited routing narrows below k: every draw hits)."""
    experts = max(experts, k, 1.0)
    p = 1.0
    for i in range(int(k)):
        p *= max(0.0, (experts - held - i) / (experts - i))
    return p


def hierarchical_copies(experts, k, groups, group_topk, e, near):
    """(RDMA, NVLink) copies of each token a GPU's flex (DeepEP) dispatch sends (float64): n = e / near
    domains; with group-limited routing a token reaches n' = min(n, M max(1, n / G)) of them, taken uniform,
    holding E n' / n experts; each remote domain hit once over RDMA, each GPU hit but the n same-rank ones over
    NVLink."""
    n = e / near
    eligible = min(n, group_topk * max(1.0, n / groups)) if groups > 1 and group_topk > 0 else n
    pool = experts * eligible / n
    domain = eligible / n * (1.0 - none_in(pool, k, experts / n))
    gpu = eligible / n * (1.0 - none_in(pool, k, experts / e))
    return (n - 1) * domain, (e - n) * gpu


def busiest_expert(imbalance, capacity, pad, ep):
    """The load the busiest GPU of an EP group runs (float64): the busiest expert's imbalance, capped at a
    capacity factor > 0 where tokens are dropped, or the capacity itself where every expert's input is padded to
    it; at EP 1 (each GPU every expert) the mean, 1, or the capacity where padded."""
    if capacity > 0 and pad:
        return float(capacity)
    if ep <= 1:
        return 1.0
    return float(imbalance) if capacity <= 0 else min(float(imbalance), float(capacity))


def layout_step(arch, dev, lay):
    """Every output of kernels.layout for one configuration (dicts of floats), in float64 Python."""
    status = layout_status(arch, lay)
    if status:
        return {"status": status}
    L, h, a, v, s = arch["layers"], arch["hidden"], arch["heads"], arch["vocab"], arch["seq"]
    qw, kvw, f = arch["q_width"], arch["kv_width"], arch["ffn"]
    E, k, fe, S, Le = (
        arch["experts"],
        arch["top_k"],
        arch["expert_ffn"],
        arch["shared_experts"],
        arch["moe_layers"],
    )
    t, p, c, e, V = lay["tp"], lay["pp"], lay["cp"], lay["ep"], lay["schedule"]
    b, B, zero, rec = lay["micro_batch"], lay["global_batch"], lay["zero"], lay["recompute"]
    # ZeRO 3 under a pipeline gathering once a step, as PyTorch's pipelining runs FSDP2: kept whole with the
    # gradients (ZeRO 1's memory and gather), the gradients reduce-scattered after the stage's backward
    reduce_after_backward = zero >= 3 and p > 1 and lay.get("zero3_gather_once", 0) > 0
    if reduce_after_backward:
        zero = 1
    mp = t * p * c
    dp = lay["dp"] if lay["dp"] > 0 else lay["gpus"] // mp
    gpus = dp * mp
    lay = {**lay, "gpus": gpus}  # the job's GPUs, which the groups' placement reads
    m = B // (b * dp)
    mats = 3 if arch["gated"] else 2
    sp = bool(lay["sequence_parallel"])
    kappa = (1 + lay["slowdown"]) * (1 + lay["straggle"]) if gpus > 1 else 1.0

    # one average layer of one micro-batch on one GPU
    tokens = b * s / c
    rate = dev["peak"] * lay["efficiency"]
    vw, rq, rkv, rope = arch["v_width"], arch["q_rank"], arch["kv_rank"], arch["rope_width"]
    out_w = qw * vw / kvw  # heads x V's head width
    # attention's matrices: Q direct or through MLA's latent, K and V direct or through theirs
    mats_q = (h * rq, rq * qw) if rq > 0 else (0.0, h * qw)
    mats_kv = (
        (h * (rkv + rope), rkv * (kvw - arch["kv_heads"] * rope + vw)) if rkv > 0 else (0.0, h * (kvw + vw))
    )
    replicated = mats_q[0] + mats_kv[0]  # MLA's down projections: on every GPU of the TP group
    up = mats_q[1] + mats_kv[1]
    attn = replicated + up + out_w * h
    lat = (rq if rq > 0 else 0) + (rkv if rkv > 0 else 0)
    flops = {"core": 2 * s * qw + 2 * s * out_w, "proj": 2 * attn}
    flops["mlp"] = ((L - Le) * mats * 2 * h * f + Le * (mats * 2 * h * fe * (k + S) + 2 * h * E)) / L
    per_token = sum(flops.values())  # what the model computes
    paced = per_token + Le * mats * 2 * h * fe * k * (lay["imbalance"] - 1) / L  # the busiest expert's GPU
    dense = attn + 2 * h + lat + ((L - Le) * mats * h * f + Le * (S * mats * h * fe + h * E)) / L
    experts = Le * E * mats * h * fe / L
    etp = lay["expert_tp"]  # each expert's matrices over etp GPUs (the expert grid: ETP x EP x expert DP)
    expert_dp, expert_stride = t * dp * c / (e * etp), e * etp
    dense_gpu = (dense - replicated) / t + replicated
    params = dense_gpu + experts / (etp * e)
    embed = v * h / t
    g, d = dev["gemm_input_bytes"], arch["dropout"]  # bytes of a GEMM input kept; 1 for dropout masks
    width = (4 if arch["gated"] else 2) + g  # fused SwiGLU keeps its 2f input, GELU its input; fc2's input
    mlp_act = g + d + width * f / h
    moe_act = g + d + (g * etp + 2) * k * lay["imbalance"] + width * fe * (k * lay["imbalance"] + S) / h
    lin = 4 + (g + d + 2 * (qw + kvw + vw) / h + g * out_w / h) + ((L - Le) * mlp_act + Le * moe_act) / L
    unsplit = 0 if (sp or t <= 1) else 4 + 2 * (g + d)
    # MLA's latents are not split over the TP group
    lin_bytes = tokens * h * (unsplit + (lin - unsplit) / t) + tokens * (2 + g) * lat
    # softmax output, and the dropout mask and output where the model has dropout; flash keeps none
    score_bytes = 0.0 if lay["attention"] else (2 + 3 * d) * a * tokens * s / t
    flash = bool(lay["attention"])
    core_rate = dev["half_peak"] * (lay["attention_efficiency"] if flash else lay["efficiency"])
    tau = dev["gemm_latency"]  # fixed time of one matrix kernel
    core_run = (
        tokens * flops["core"] * (0.5 if flash else 1.0) / t / core_rate + (1 if flash else 2) * c * tau
    )  # causal flash: half the scores, one kernel per ring step of CP; unfused: two batched GEMMs
    # matrix kernels per layer, forward: QKV, out, fc1, fc2; MoE: attention's 2, router, 2 per local expert,
    # the shared experts' 2
    attn_kernels = {(False, False): 2, (True, False): 4, (False, True): 4, (True, True): 5}[(rq > 0, rkv > 0)]
    kernels = attn_kernels + ((L - Le) * 2 + Le * (1 + 2 * E / max(e, 1) + (2 if S > 0 else 0))) / L
    if dev["gemm_input_bytes"] < 2:  # fp8 casts of the GEMM inputs: read 2 bytes, write 1
        io = (
            2 * h
            + out_w
            + lat
            + ((L - Le) * f + Le * ((k * lay["imbalance"] + S) * fe + (k * lay["imbalance"] - 1) * h)) / L
        )
        cast = 3 * tokens * io / t
    else:
        cast = 0.0
    # a MoE layer's tokens through the alltoall dispatcher: each permuted into its k copies and unpermuted back,
    # the k I copies received sorted to local-expert order and back (several local experts); as much again in
    # the backward
    if E > 0:
        sorts = 2 if E / max(e, 1) > 1 else 0
        moved = 2 * h * (k + 1) + 2 * h * k * lay["imbalance"] * sorts * etp  # elements a token (gathered)
        move = tokens / t * Le / L * moved * dev["act_bytes"] / dev["hbm"]
    else:
        move = 0.0
    fwd = (
        tokens * ((paced - flops["core"]) / t + 2 * replicated * (1 - 1 / t)) / rate
        + kernels * tau
        + core_run
        + (lin_bytes + score_bytes + params * dev["param_bytes"] + cast) / dev["hbm"]
        + move
    ) * kappa
    core = (core_run + score_bytes / dev["hbm"]) * kappa
    bwd = (
        2 * fwd - move * kappa + (0.5 * core_run * kappa if flash else 0.0)
    )  # flash's backward: 5 products to 2
    bits = {name: bool(int(rec) // value % 2) for name, value in RECOMPUTE_BITS.items()}
    full = bits["full"]
    per_op = bits["op"] and not full
    mods = {name: bits[name] and not full for name in ("core_attn", "layernorm", "up_proj", "mlp", "moe")}
    mods["moe_act"] = bits["moe_act"] and not full and not bits["moe"]
    dense_share, moe_share, routed = (L - Le) / L, Le / L, k * lay["imbalance"]
    # bytes per token (units of h) a recomputed module no longer keeps
    drops = {
        "layernorm": 2 * g * (1 if unsplit else 1 / t),
        "up_proj": 2 * (qw + kvw + vw) / h / t,
        "mlp": dense_share * width * f / h / t,
        "moe": moe_share * ((g * etp + 2) * routed + width * fe * (routed + S) / h) / t,
        "moe_act": moe_share * g * fe * routed / h / t,
    }
    dropped = sum(drops[name] for name in drops if mods[name])
    op_total = (
        2
        + 2 * (qw + vw + out_w) / h
        + dense_share * 2 * (f + h) / h
        + moe_share * 2 * (routed + S) * (fe + h) / h
    )
    op_unsplit = 2 if unsplit else 0
    op_bytes = tokens * h * (op_unsplit + (op_total - op_unsplit) / t)

    def rerun(work, n, nbytes):  # FLOPs per token at the GEMM rate, n kernels, bytes re-written
        return tokens * work / t / rate + n * tau + nbytes / dev["hbm"]

    moe_kernels = 3 + 2 * E / max(e, 1) + (2 if S > 0 else 0)
    moe_paced = mats * 2 * h * fe * (routed + S) + 2 * h * E
    op_work = 2 * h * (kvw + out_w) + dense_share * 2 * h * f + moe_share * 2 * h * fe * (routed + S)
    again = {
        "layernorm": rerun(0, 0, tokens * h * drops["layernorm"]),
        "up_proj": rerun(2 * up, 1, tokens * h * drops["up_proj"]),
        "mlp": rerun(dense_share * mats * 2 * h * f, 2 * dense_share, tokens * h * drops["mlp"]),
        "moe": rerun(moe_share * moe_paced, moe_share * (moe_kernels - 2), tokens * h * drops["moe"]) + move,
        "moe_act": rerun(0, 0, tokens * h * drops["moe_act"]),
    }
    module_time = sum(again[name] for name in again if mods[name])
    if mods["core_attn"] or (per_op and not flash):
        module_time += core / kappa
    if per_op:
        dense_frac = L - Le
        module_time += rerun(
            op_work,
            (3 * dense_frac + Le * (2 + E / max(e, 1))) / L,
            lin_bytes + score_bytes - op_bytes,
        )
    recompute = fwd if full else module_time * kappa

    x = tokens * h * dev["act_bytes"]
    tp_one = _collective("ring_allreduce" if sp else "allreduce", x, t, 1, lay)
    reruns = (2 if full else 0) + 0.5 * (
        mods["up_proj"] + dense_share * mods["mlp"] + moe_share * mods["moe"]
    )  # each recomputed module re-runs one of its two TP collectives
    tp_fwd, tp_bwd = 2 * tp_one, (2 + reruns) * tp_one
    switch = {name: bool(int(lay["overlap"]) // value % 2) for name, value in OVERLAP_BITS.items()}
    switch["tp_comm"] = switch["tp_comm"] and sp  # --tp-comm-overlap needs sequence parallelism
    gemms = (
        tokens * ((paced - flops["core"]) / t + 2 * replicated * (1 - 1 / t)) / rate * kappa
    )  # linear layers
    hidden = {"fwd": [], "bwd": [], "span": 0.0}  # each overlapped stream's excess over its window, by phase
    if switch["tp_comm"]:  # TP collectives behind the GEMMs beside them: forward, backward (and recomputed)
        tp_fwd = max(0.0, tp_fwd - gemms)
        tp_bwd = max(0.0, tp_bwd - gemms * (3 if full else 2))
        hidden["fwd"].append(tp_fwd)
        hidden["bwd"].append(tp_bwd)
    cp_fwd = cp_bwd = 0.0
    if c > 1:
        bw, leaves = _group_bw(c, t, lay, ring=False)
        one = tokens * (kvw + vw) * dev["act_bytes"] / t / bw + (lay["latency"] if leaves else 0.0)
        if lay["collectives"]:  # NCCL's send/recv of the chunk on the CP group
            one = _nccl_group("sendrecv", tokens * (kvw + vw) * dev["act_bytes"] / t, c, t, lay)
        cp_fwd, cp_bwd = max(0.0, (c - 1) * one - core), max(0.0, 2 * (c - 1) * one - 2 * core)
        hidden["fwd"].append(cp_fwd)
        hidden["bwd"].append(cp_bwd)
    ep_layer, ep_nic = 0.0, False
    if e > 1 or etp > 1:
        xe = tokens * h * k * dev["act_bytes"] * lay["imbalance"] / t
        # EP ranks etp apart; a block across a domain's edge at its smallest part there
        part = _domain_part(e * etp, lay)
        near = min(max(part / etp, 1), e)  # the fewest in one domain (their NICs), and the most (NVLink)
        most = min(max(_job_domain(lay)[0] / etp, 1), e)
        # own NIC share (the slowest's, under one NIC a GPU)
        bw = (
            lay["bandwidth"]
            / 8
            * lay["utilization"]
            * nic_fraction(lay["nics_per_node"] / lay["gpus_per_node"])
        )

        # flex: a block across a domain's edge spreads its members evenly over the domains it spans
        domain = _job_domain(lay)[0]
        spans = 1 + math.ceil((e * etp - part) / domain - 1e-6)
        flex_near = e / spans if part < min(e * etp, domain) else most
        rdma_copies, nvl_copies = hierarchical_copies(
            E, k, arch.get("router_groups", 0), arch.get("group_topk", 0), e, flex_near
        )
        domains = e / flex_near

        def flex_stages(nbytes):  # (RDMA, NVLink) seconds of the flex dispatcher's all-to-all
            nccl = bool(lay["collectives"])
            # under NCCL's pricing, the fitted efficiencies, and the spine's share for the RDMA stage
            net, nvl = (
                (lay["eta_net"] / _spine_factor(e, etp, lay, "flex"), lay["eta_nvl"]) if nccl else (1.0, 1.0)
            )
            lam = lay["nccl_latency"] * 1e-6 if nccl else lay["latency"]
            rdma = rdma_copies * nbytes / k / (bw * net) + ((domains - 1) * lam if domains > 1 else 0.0)
            return rdma, nvl_copies * nbytes / k / (lay["nvlink_bw"] * nvl)

        def shares(nbytes):  # the NVLink share's time and the NIC share's
            intra = (most - 1) / e * nbytes / lay["nvlink_bw"]
            inter = (e - near) / e * nbytes / bw + ((e - near) * lay["latency"] if near < e else 0.0)
            return intra, inter

        def a2a_of(nbytes):  # the slower of the two, or NCCL's all-to-all over the EP group (ranks etp apart)
            if lay.get("moe_dispatcher", 0) and e > 1:  # flex: DeepEP's two stages, pipelined
                rdma, nvl = flex_stages(nbytes)
                return max(rdma, nvl)
            if lay["collectives"]:
                return _nccl_group("alltoall", nbytes, e, etp, lay)
            return max(shares(nbytes)) if e > 1 else 0.0

        intra, inter = shares(xe)
        a2a = a2a_of(xe)
        # the forward dispatch in MXFP8 (a byte an element, a scale a 32) when asked; the rest bf16
        dispatch = a2a_of(xe * (1 + 1 / 32) / dev["act_bytes"]) if lay["dispatch_fp8"] else a2a
        gather = _collective("scatter", etp * xe, etp, 1, lay)  # expert TP's all-gather / reduce-scatter
        # A recomputed MoE layer dispatches and combines again, under full recomputation too (the whole layer).
        passes = 2 if mods["moe"] or full else 1
        ep_layer = (passes * dispatch + (2 + passes) * a2a + (2 + 2 * passes) * gather) * Le / L
        if switch["moe_a2a"]:  # behind another micro-batch's forward and backward
            ep_layer = max(0.0, ep_layer - (fwd + bwd))
            hidden["span"] = ep_layer
        ep_nic = near < e and inter >= intra
        if lay.get("moe_dispatcher", 0):
            rdma, nvl = flex_stages(xe)
            ep_nic = e > 1 and domains > 1 and rdma >= nvl
    group = dp * c
    grads = dense_gpu * dev["grad_bytes"], experts / (etp * e) * dev["grad_bytes"]
    z3 = 0.0
    if zero >= 3:
        ag = _collective("scatter", dense_gpu * dev["param_bytes"], group, t, lay) + _collective(
            "scatter", experts / (etp * e) * dev["param_bytes"], expert_dp, expert_stride, lay
        )
        rs = _collective("scatter", grads[0], group, t, lay) + _collective(
            "scatter", grads[1], expert_dp, expert_stride, lay
        )
        hide_ag = ag if switch["param_gather"] else 0.0  # FSDP's prefetch
        hide_rs = rs if switch["grad_reduce"] else 0.0
        z3_f, z3_b = max(0.0, hide_ag - fwd), max(0.0, hide_ag + hide_rs - bwd - recompute)
        hidden["fwd"].append(z3_f)
        hidden["bwd"].append(z3_b)
        z3 = 2 * (ag - hide_ag) + (rs - hide_rs)  # not overlapped: waited on whole
    # The overlapped streams run side by side behind the layer's compute: each phase waits on its slowest, the
    # all-to-alls behind another micro-batch's forward and backward on the slower of them and the two phases';
    # each stream keeps its share of that.
    total = hidden["span"] + sum(hidden["fwd"]) + sum(hidden["bwd"])
    waited = max(hidden["span"], max(hidden["fwd"], default=0.0) + max(hidden["bwd"], default=0.0))
    share = waited / total if total > 0 else 1.0
    if switch["tp_comm"]:
        tp_fwd, tp_bwd = share * tp_fwd, share * tp_bwd
    cp_fwd, cp_bwd = share * cp_fwd, share * cp_bwd
    if switch["moe_a2a"]:
        ep_layer = share * ep_layer
    if zero >= 3:
        z3 += share * (z3_f + z3_b)
    layer = {
        "compute": fwd + bwd,
        "recompute_time": recompute,
        "tp_exposed": tp_fwd + tp_bwd,
        "cp_exposed": cp_fwd + cp_bwd,
        "ep_exposed": ep_layer,
        "dp_exposed": z3,
    }

    # every stage, its layers as evenly as they go (the first L mod p one more)
    counts = [L // p + (1 if i < L % p else 0) for i in range(p)]
    embed_time = 3 * tokens * h * dev["act_bytes"] / dev["hbm"] * kappa
    # the output layer never runs in fp8 (Megatron's ColumnParallelLinear)
    logits_fwd = (
        tokens * 2 * h * v / t / (dev["half_peak"] * lay["efficiency"])
        + dev["gemm_latency"]
        + 8 * tokens * v / t / dev["hbm"]
    ) * kappa
    bw, pp_leaves = _group_bw(p, t * c * dp, lay, ring=False)
    pp_micro = (
        2 * V * (tokens * h * dev["act_bytes"] / t / bw + (lay["latency"] if pp_leaves else 0.0))
        if p > 1
        else 0
    )
    if p > 1 and lay["collectives"]:  # NCCL's send/recv on the PP group
        pp_micro = 2 * V * _nccl_group("sendrecv", tokens * h * dev["act_bytes"] / t, p, t * c * dp, lay)
    # multi-token prediction: D more layers on the last stage, and per depth its projection of 2h to h (a GEMM,
    # forward and twice back) and the output layer again
    D = arch["mtp_layers"]
    proj = (tokens * 2 * (2 * h) * h / t / rate + tau) * kappa
    stages = []
    for i, n in enumerate(counts):
        n = n + (D if i == p - 1 else 0)
        parts = {key: n * value for key, value in layer.items()}
        parts["compute"] += (embed_time if i == 0 else 0.0) + (
            3 * logits_fwd + D * (3 * proj + 3 * logits_fwd) if i == p - 1 else 0.0
        )
        parts["pp_exposed"] = pp_micro
        stages.append(parts)
    slowest = max(stages, key=lambda st: sum(st.values()))  # the first of equals
    out = {key: m * value for key, value in slowest.items()}
    # each stage's layers in V chunks: the largest over the stages of its largest chunk's share of its time
    out["bubble"] = max(
        (p - 1) * math.ceil(max(n, 1) / V) / max(n, 1) * sum(st.values()) for n, st in zip(counts, stages)
    )

    # data-parallel reduction of the last micro-batch's gradients, layer by layer, FIFO
    def reduce(nbytes, n_group, stride):
        kind = "scatter" if zero >= 1 else "allreduce"
        return _collective(kind, nbytes, n_group, stride, lay)

    gamma = reduce(grads[0], group, t) + reduce(grads[1], expert_dp, expert_stride)
    gamma_embed = reduce(embed * dev["grad_bytes"], group, t)
    beta = bwd + recompute + tp_bwd + cp_bwd + ep_layer / 2
    dp_sync = 0.0
    if zero < 3 and (group > 1 or expert_dp > 1):
        for i, n in enumerate(counts):
            n = n + (D if i == p - 1 else 0)  # the MTP depths' layers
            clock, end = 0.0, 0.0
            if i == p - 1:  # the logits' backward comes first
                clock = 2 * logits_fwd
                end = clock + (gamma_embed if (p > 1 or not arch["tied"]) else 0.0)
            for _ in range(n):
                clock += beta
                end = max(end, clock) + gamma
            if i == 0:
                clock += embed_time / 3
                end = max(end, clock) + gamma_embed
            if (
                not switch["grad_reduce"] or reduce_after_backward
            ):  # every reduction after the stage's backward
                head = gamma_embed if (i == p - 1 and (p > 1 or not arch["tied"])) else 0.0
                end = clock + n * gamma + head + (gamma_embed if i == 0 else 0.0)
            slack = i * n * beta
            dp_sync = max(dp_sync, end - clock - slack)
    # (dense, expert) parameters of the first and the last stage; the larger one is kept
    # each MTP depth: a layer, its projection (2h x h over t) and three norms; MTP's embedding copy where p > 1
    mtp_params = D * (dense_gpu + 2 * h * h / t + 3 * h)
    first = (
        counts[0] * dense_gpu
        + embed * (2 if p == 1 and not arch["tied"] else 1)
        + (mtp_params if p == 1 else 0),
        (counts[0] + (D if p == 1 else 0)) * experts / (etp * e),
    )
    last = (
        (
            counts[-1] * dense_gpu + embed + mtp_params + (embed if D > 0 else 0),
            (counts[-1] + D) * experts / (etp * e),
        )
        if p > 1
        else (0.0, 0.0)
    )
    stage_dense, stage_expert = first if sum(first) >= sum(last) else last
    gather = 0.0
    if 1 <= zero < 3:
        gather = _collective("scatter", stage_dense * dev["param_bytes"], group, t, lay) + _collective(
            "scatter", stage_expert * dev["param_bytes"], expert_dp, expert_stride, lay
        )
        if switch[
            "param_gather"
        ]:  # behind the next step's first forward, with its part of the hidden streams'
            compute = fwd + bwd + recompute
            gather = max(0.0, gather - counts[0] * (fwd + waited * fwd / compute if compute > 0 else fwd))
    out["dp_exposed"] += dp_sync + gather
    shard, expert_shard = (group, expert_dp) if zero >= 1 else (1, 1)
    adam = dev["main_param_bytes"] + 2 * dev["moment_bytes"]  # the main (master) weights and the two moments
    out["optimizer"] = (
        2 * (adam + 4) * (stage_dense / shard + stage_expert / expert_shard) / dev["hbm"] * kappa
    )
    out["overhead_time"] = lay["overhead"] if gpus > 1 else 0.0
    time = sum(out.values())

    model_flops = 3 * B * s * ((L + D) * per_token + D * 4 * h * h + (1 + D) * 2 * h * v)
    if full:
        again_flops = per_token
    else:
        again_flops = (
            (flops["core"] if mods["core_attn"] or (per_op and not flash) else 0.0)
            + (2 * up if mods["up_proj"] else 0.0)
            + (dense_share * mats * 2 * h * f if mods["mlp"] else 0.0)
            + (moe_share * (mats * 2 * h * fe * (k + S) + 2 * h * E) if mods["moe"] else 0.0)
            + (
                2 * h * (kvw + out_w) + dense_share * 2 * h * f + moe_share * 2 * h * fe * (k + S)
                if per_op
                else 0.0
            )
        )
    extra = B * s * (L + D) * again_flops
    on_nics = {  # the share of each exposed term its NICs add (kernels.layout_collectives.nic_share)
        "tp_exposed": _nic_share(t, 1, lay),
        "cp_exposed": _nic_share(c, t, lay, ring=False),
        "ep_exposed": float(ep_nic),
        "pp_exposed": _nic_share(p, t * c * dp, lay, ring=False),
        "dp_exposed": _dp_nic_share(stage_dense, stage_expert, group, t, expert_dp, expert_stride, lay),
    }
    network = max(0.0, sum(out[key] * share for key, share in on_nics.items()))

    def per_param(n):  # bytes per parameter that ZeRO shards over n GPUs
        return (
            dev["param_bytes"] / (n if zero >= 3 else 1)
            + dev["grad_bytes"] / (n if zero >= 2 else 1)
            + adam / (n if zero >= 1 else 1)
        )

    def states(stage):  # a stage's (dense, expert) parameters' bytes as ZeRO shards them
        return stage[0] * per_param(group) + stage[1] * per_param(expert_dp)

    if full:
        kept = 2 * tokens * h / (t if sp else 1)
    elif per_op:
        kept = op_bytes
    else:
        kept = lin_bytes - tokens * h * dropped + (0.0 if mods["core_attn"] else score_bytes)
    flight = min(m, p) * (1 + (p - 1) / (p * V) if V > 1 else 1)
    # the last rank's in flight: one under 1F1B; interleaved its (V - 1) p warm-up chunks and one, n / V layers each
    last_flight = flight if p == 1 else min(m * V, (V - 1) * p + 1) / V
    # --overlap-moe-expert-parallel-comm: each forward layer kept as the previous backward frees one: a layer more
    a2a = 1 if switch["moe_a2a"] and arch["experts"] > 0 else 0  # a dense model runs the plain schedule
    ids_and_mask = flight * tokens * (8 + h * d) / (t if sp else 1)
    head = 4 * tokens * (v + h) / t

    def kept_layers(n):  # all but the offloaded ones, at least one
        return n - min(max(lay["offload_layers"], 0), max(n - 1, 0))

    # each MTP depth keeps a layer's, its logits', and its norms' and projection's inputs (2 + 2 + 2 g + 2 bytes)
    mtp_kept = D * (head + tokens * h * (6 + 2 * g) / (t if sp else 1))
    first_acts = (kept_layers(counts[0]) * flight + a2a) * kept + ids_and_mask
    # the MTP depths on the last chunk alone: one micro-batch in flight
    last_acts = (
        (kept_layers(counts[-1] + D) + (last_flight - 1) * counts[-1] + a2a) * kept
        + head
        + mtp_kept
        + (ids_and_mask if p == 1 else 0.0)
    )
    # each stage's own states with its own activations; one stage (p = 1) holds both
    held = (
        states(first) + max(first_acts, last_acts)
        if p == 1
        else max(states(first) + first_acts, states(last) + last_acts)
    )
    # ZeRO-3's gathered layers (this one and the next): a group of one holds its parameters whole, gathers none
    sharded = (dense_gpu if group > 1 else 0.0) + (experts / (etp * e) if expert_dp > 1 else 0.0)
    memory = held + (2 * sharded * dev["param_bytes"] if zero >= 3 else 0.0)
    out["ep_on_nics"] = float(ep_nic)
    out.update(
        iteration_time=time,
        tokens_per_s=B * s / time,
        mfu=model_flops / (time * dev["peak"] * gpus),
        tflops_per_gpu=model_flops / (time * gpus) / 1e12,
        hardware_tflops_per_gpu=(model_flops + extra) / (time * gpus) / 1e12,
        memory_gb=memory / 1e9,
        memory_free_gb=(dev["usable"] * dev["memory"] - memory) / 1e9,
        fits=float(memory <= dev["usable"] * dev["memory"]),
        network_fraction=network / time,
        status=0,
    )
    return out


def megatron_memory(arch, lay, grad_bytes):
    """Bytes per GPU on the first pipeline stage as Megatron-LM's ``theoretical_memory_usage.py`` counts them
    (distributed optimizer, sequence parallelism, selective recomputation), with the terms it lacks added:
    CP (b s / c tokens per GPU; the optimizer shards over dp x cp, as Megatron-Core's does), GQA and SwiGLU
    in the activations (fused SwiGLU saves its 2f input), bf16 gradients (``grad_bytes`` 2). Dense models.

    Weights and optimizer: (2 + grad_bytes + 12 / (dp cp)) bytes per parameter of the stage: its L / p
    layers (attention 2 h w_q + 2 h w_kv and the MLP (3 or 2) h f over t; two norms of h replicated) and the
    embedding v h / t (twice when p = 1 and untied). Activations: per layer s b h (18 + 4 f / h) / t,
    generalised to 4 + (3 + 4 w_q / h + 4 w_kv / h) + (3 + (6 or 4) f / h), times L / p layers and p
    micro-batches in flight (min(1, m / p) of them under 1F1B, 1 + (p - 1) / (p V) interleaved), plus
    8 s b p + s b h p of token ids and embedding dropout, and when p = 1 the output layer's 4 s b h (1 + v / h),
    all over t. Megatron counts the first stage only; the last stage is added (below), with its interleaved
    warm-up as Megatron-Core's schedule runs it."""
    L, h, v, f = arch["layers"], arch["hidden"], arch["vocab"], arch["ffn"]
    qw, kvw = arch["q_width"], arch["kv_width"]
    t, p, c, V, b = lay["tp"], lay["pp"], lay["cp"], lay["schedule"], lay["micro_batch"]
    dp = lay["gpus"] // (t * p * c)
    m = lay["global_batch"] // (b * dp)
    mats = 3 if arch["gated"] else 2
    per_layer = (2 * h * qw + 2 * h * kvw + mats * h * f) / t + 2 * h
    layers = -(-L // p)  # the first stage holds the extra layer
    params = layers * per_layer + v * h / t * (2 if p == 1 and not arch["tied"] else 1)
    weights = params * (2 + grad_bytes + 12 / (dp * c))
    s = arch["seq"] / c
    width = 6 if arch["gated"] else 4
    act_layer = s * b * h * (4 + (3 + 4 * qw / h + 4 * kvw / h) + (3 + width * f / h))
    flight = (1 + (p - 1) / (p * V)) * p if V > 1 else min(m, p)
    acts = layers * flight * act_layer + flight * (8 * s * b + s * b * h)
    if p == 1:
        acts += 4 * s * b * h * (1 + v / h)
        return weights + acts / t
    # Megatron's formula is the first stage's; the last stage (L // p layers, one micro-batch under 1F1B and its
    # (V - 1) p warm-up chunks and one interleaved, schedules.py; the output layer's 4 s b h (1 + v / h)) is
    # added, and the larger taken, as a planner must.
    last_layers = L // p if L % p else layers
    last_params = last_layers * per_layer + v * h / t
    last_flight = min(m * V, (V - 1) * p + 1) / V
    last = (
        last_params * (2 + grad_bytes + 12 / (dp * c))
        + (last_layers * last_flight * act_layer + 4 * s * b * h * (1 + v / h)) / t
    )
    return max(weights + acts / t, last)


# ---- One collective as NCCL's tuner prices it (kernels/nccl.py), float64, one configuration at a time.
# NCCL's tables written again (NVIDIA/nccl@5067397c:src/graph/tuning.cc, search.cc), by hand, so a slip in
# the kernel's copy shows.
NCCL_BASE = [[6.8, 14.0, 8.4], [6.6, 14.0, 8.4], [0, 0, 0], [0, 0, 0], [0, 0, 0], [0, 0, 0], [8.0, 8.0, 8.0]]
NCCL_HW = {
    "nvlink": [
        [0.6, 1.25, 4.0],
        [0.6, 1.9, 3.4],
        [0, 0, 3.7],
        [0, 0, 2.8],
        [0, 0, 25],
        [0, 0, 25],
        [0, 0, 4.0],
    ],
    "pci": [[1.0, 1.9, 4.0], [1.0, 2.5, 5.7], [0, 0, 3.7], [0, 0, 2.8], [0, 0, 0], [0, 0, 0], [0, 0, 4.0]],
    "net": [[5.0, 8.5, 14], [2.7, 4.0, 14.0], [0, 0, 31], [0, 0, 30], [0, 0, 18], [0, 0, 20.9], [0, 0, 14]],
}
NCCL_SPEEDS = {
    "old": (
        [40, 30, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3],
        [48, 30, 28, 24, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3, 2.4, 1.2, 0.24, 0.12],
    ),
    "sm90": (
        [60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3],
        [48, 45, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12],
    ),
    "sm100": (
        [90, 80, 70, 60, 50, 45, 40, 30, 24, 20, 19, 18],
        [96, 86, 80, 48, 45.1, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12],
    ),
}
NCCL_TREE_CORR = [
    [1, 1, 1, 1, 0.9, 0.8, 0.7, 0.7, 0.7, 0.7, 0.6, 0.5, 0.4, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1, 1, 1, 1, 1],
    [1, 1, 1, 1, 1, 0.9, 0.8, 0.8, 0.8, 0.7, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.8, 0.9, 0.9, 0.9, 0.9, 1, 1, 1],
    [
        0.9,
        0.9,
        0.9,
        0.9,
        0.9,
        0.9,
        0.9,
        0.8,
        0.7,
        0.6,
        0.6,
        0.5,
        0.5,
        0.5,
        0.5,
        0.6,
        0.7,
        0.8,
        0.7,
        0.7,
        0.8,
        0.9,
        0.9,
        0.9,
    ],
]


def nccl_speed(arch, inter, limit):
    """Largest entry <= limit of NCCL's speed list (the limit itself if none fits: a link slower than NCCL's
    slowest speed runs at its own)."""
    speeds = NCCL_SPEEDS[["old", "old", "sm90", "sm100"][arch]][1 if inter else 0]
    fits = [v for v in speeds if v <= limit * (1 + 1e-5)]  # kernels/nccl.py's SNAP
    return max(fits) if fits else limit


def nccl_collective(
    coll,
    x,
    g,
    hosts,
    domain,
    nvlink,
    nics,
    r,
    arch,
    nvswitch,
    collnet,
    eta_net,
    eta_nvl,
    lam,
    algo=-1,
    proto=-1,
    op=0.0,
    fill=0.0,
    fill_bytes=1.0,
    spine=1.0,
    peers=0.0,
):
    """(seconds, algorithm, protocol) of one collective (indices as kernels/nccl.py's tuples); ``op``, ``fill``,
    ``fill_bytes``: o, f and X_f, what the tuner leaves out, added to the time and not to NCCL's choice;
    ``spine``: the spine's divisor of each channel's share of the NICs across nodes (1: none); ``peers``: an
    all-to-all's most ranks in one node, its NVLink side (0: p)."""
    spine = max(spine, 1.0)
    if nics > g:  # one network device a GPU, the NICs beside it summed (aws-ofi-nccl's grouping)
        nics, r = g, r * nics / g
    nodes = math.ceil(hosts / max(domain, 1))
    n = g * hosts
    p = n / nodes
    multi = nodes > 1
    untuned = fill * min(1.0, x / max(fill_bytes, 1.0)) if multi else op
    i2 = min(nodes, 3) - 1
    w = nvlink if nvlink > 0 else 12.0
    hw_intra = NCCL_HW["nvlink" if nvlink > 0 else "pci"]
    if coll in (3, 4):  # all-to-all, send/recv
        nic_gpu = nics * r / g / spine
        l_i = hw_intra[1][2]
        l_x = NCCL_HW["net"][1][2] + 2 * lam
        if coll == 4:
            bw = nic_gpu * eta_net if multi else w * eta_nvl
            us = 6.6 + (l_x if multi else l_i) + x / (1000 * bw)
        else:
            p_x = peers if peers > 0 else p  # the most ranks a node on NVLink, the fewest's on their NICs
            t = max(x * (p_x - 1) / n / (w * eta_nvl), x * (n - p) / n / (nic_gpu * eta_net))
            us = 6.6 + (l_i if p_x > 1 else 0) + (l_x if multi else 0) + t / 1000
        return (us + untuned) * 1e-6, 7, 2
    ar = coll == 0
    s0 = nccl_speed(arch, multi, min(r, w) if multi else w)
    node_nics = max(math.floor(nics * hosts / nodes + 1e-6), 1)  # an NCCL node's NICs: a host's, or a rack's
    c0 = node_nics * max(math.floor(r / s0 * (1 + 1e-5)), 1) if multi else math.floor(w / s0 * (1 + 1e-5))
    c0 = min(max(c0, 1), 32)  # init.cc: MAXCHANNELS / 2, MAXCHANNELS 64
    c, s = c0, s0
    if s0 >= 25 and not (arch >= 2 and s0 < 50 and c0 > 4):
        c = min(2 * c0, 32)
        s = s0 / math.ceil(c / c0)
    if multi and p > 1:  # every channel crosses the node's NVLink once: c s <= W
        s = min(s, w / c)
    st = max(s, nccl_speed(arch, multi, min(2 * s, w / c))) if multi and nodes <= 2 else s
    cn = max(min(32, p, node_nics) if multi else min(32, p), 1)  # across nodes one head a NIC (search.cc)
    sn = nccl_speed(arch, multi, w / (cn + 1))  # a head's link carries its channel twice (search.cc)
    sx = nccl_speed(arch, multi, min(nics * hosts / nodes * r / cn, 2 * sn)) if multi else math.inf
    cd = max(min(8, p, node_nics), 1)
    sd = nccl_speed(arch, multi, min(r, w / cd))
    if sd >= 25 and not (
        arch >= 2 and sd < 50 and cd > 4
    ):  # duplicated as the ring's, up to min(8, p) channels
        dup = min(2 * cd, max(min(8, p), 1))
        sd, cd = sd / math.ceil(dup / cd), dup
    ll = [39.0, 39.0, 20.4][i2] if multi else [39.0, 87.7, 141.0, 282.0][arch]
    step_speeds = (
        s,
        st,
        sx,
        sd,
    )  # NCCL's steps, which a spine's cap does not go below where they pass the share
    if multi:  # the channels run, and are priced, at their share of the NICs: never below NCCL's step
        s = max(s, min(r * node_nics / max(c, node_nics), w / c if p > 1 else w))
        st = max(st, max(s, min(2 * s, w / c)) if nodes <= 2 else s)
        sx = max(sx, min(nics * hosts / nodes * r / cn, 2 * sn))
        sd = max(sd, min(r * node_nics / max(cd, node_nics), w / cd))
        if spine > 1:  # a spine in the way: each channel at most its NICs' share (or NCCL's step) over it
            ring_nics = r * node_nics / max(c, node_nics)
            s = min(s, max(ring_nics, step_speeds[0]) / spine)
            st = min(st, max(2 * ring_nics if nodes <= 2 else ring_nics, step_speeds[1]) / spine)
            sx = min(sx, max(nics * hosts / nodes * r / cn, step_speeds[2]) / spine)
            sd = min(sd, max(r * node_nics / max(cd, node_nics), step_speeds[3]) / spine)
    m_ring128 = [20.0, 20.0, 36.7, 40.0][arch]
    m_tree128 = [[20.0] * 3, [20.0] * 3, [36.7, 36.7, 29.0], [55.6, 31.67, 20.0]][arch][i2]
    m_tree = [[26.5, 18.5, 10.0], [24.0, 23.6, 17.8], [38.7, 41.4, 36.0], [70.0, 42.8, 24.0]][arch][i2]
    m_nvtree = [[26.5, 18.5, 10.0], [24.0, 23.6, 17.8], [0.0, 57.7, 45.5], [0.0, 96.0, 80.0]][arch][i2]
    e_nvls = [0.0, 0.0, 0.85, 0.74][arch]
    steps = 2 * (n - 1) if ar else n - 1
    to_alg = n / max(steps, 1)
    agrs = coll in (1, 2)
    bus = {}
    rb = c * s
    bus[1] = [min(ll, rb / 2), min(0.92 * rb, c * m_ring128), rb] if (ar or agrs) else [0, 0, 0]
    if ar:
        tb = min(0.92 * c * st, c * m_tree)
        bus[0] = [min(tb / 3.8, ll), min(tb * (120 / 128 if multi else 7 / 9), c * m_tree128), tb]
    else:
        bus[0] = [0, 0, 0]
    nvls_ok = (
        arch >= 2 and nvswitch and p >= 2 and (not multi or cn >= 2)
    )  # tuning.cc: no NVLS on one channel
    b_i = sn * e_nvls * (cn - 1) / cn * (2.0 if ar else (p - 1) / p)
    heads = collnet and p <= 8  # NCCL runs CollNet up to 8 ranks a node, NVLS's all-gather up to 32
    use_nvls = nvls_ok and ((ar and (not multi or collnet)) or (agrs and not multi and p <= 32))
    bus[4] = [0, 0, cn * min(b_i, sx) if use_nvls else 0]
    nvtree_net = cn * min(sx * (2 if nodes <= 2 else 1), m_nvtree)  # NVLSTree's network side
    bus[5] = [0, 0, min(cn * b_i, nvtree_net) if nvls_ok and ar and multi else 0]
    sides = {4: (cn * b_i, cn * sx), 5: (cn * b_i, nvtree_net)}
    f = p / cd
    direct = cd * sd / (f - (f - 1) / 2) * (0.85 if arch >= 2 else 1.0)
    bus[2] = [0, 0, direct if ar and multi and heads and nvswitch else 0]
    bus[3] = [0, 0, c * s if ar and multi and heads else 0]
    bus[6] = [0, 0, 0.75 * c * s if agrs and multi and p == 1 else 0]
    ratio = {0: 0.5, 1: to_alg, 2: 0.5 if ar else 1.0, 3: 0.5, 4: to_alg if ar else 1.0, 5: to_alg, 6: 1.0}
    log_nodes = math.frexp(nodes)[1] - 1
    inter_steps = (2 * (nodes - 1) if ar else nodes - 1) if multi else 0
    log_size = math.frexp(x)[1] - 1 - 6 if x >= 64 else -1

    def latency(a, pr):
        l_i = hw_intra[a][pr]
        l_x = NCCL_HW["net"][0 if p == 1 else a][pr] + lam * (2 if pr == 2 else 1)
        if a == 1:
            over = (3.0 if pr == 2 else 1.0) if multi else 0.0
            t = NCCL_BASE[1][pr] + (steps - inter_steps) * max(l_i, over) + inter_steps * l_x
            if pr == 2 and ar and multi and x / (c * n) >= 64:
                t *= 1.9 if arch < 1 else 1.4
            return t
        if a == 0:
            return NCCL_BASE[0][pr] + 2 * ((p - 1) * l_i + log_nodes * l_x)
        if a == 2:
            return 2 * (min(1, p - 1) * l_i + 0.4 * (p - 1)) + l_x
        if a == 3:
            return 2 * (p - 1) * l_i + l_x
        if a == 4:
            return l_i + (l_x if multi else 0)
        if a == 5:
            return l_i + 2 * log_nodes * l_x
        return NCCL_BASE[6][pr] + log_nodes * l_x / 3.5 + 2.8 * n

    cands = []
    for a in range(7):
        for pr in range(3):
            if bus[a][pr] <= 0:
                continue
            bw = bus[a][pr] * ratio[a]
            if a == 0 and ar and 0 <= log_size < 23:
                bw *= NCCL_TREE_CORR[pr][log_size]
            lat = latency(a, pr)
            cands.append((lat + x / (1000 * bw), a, pr, lat, bw))
    wanted = [k for k in cands if (algo < 0 or k[1] == algo) and (proto < 0 or k[2] == proto)]
    _, a, pr, lat, bw = min(wanted or cands)
    eta = eta_net if multi else eta_nvl
    if multi and a in (
        4,
        5,
    ):  # NVLS's two sides across domains, each at its own efficiency (a side of 0: none)
        b_nvl, b_net = sides[a]
        slow = max(
            bus[a][pr] / (b_net * eta_net) if 0 < b_net < math.inf else 0.0,
            bus[a][pr] / (b_nvl * eta_nvl) if 0 < b_nvl < math.inf else 0.0,
        )
        t = lat + x / (1000 * bw) * slow
    else:
        t = lat + x / (1000 * bw * eta)
    if ar and multi:  # every NCCL node's X leaves it through its NICs once at least
        t = max(t, lat + x * spine / (1000 * nics * hosts / nodes * r * eta_net))
    return (t + untuned) * 1e-6, a, pr


def host_system(domain, preset_gpus, nics, gpus):
    """sweep.model.compute.host_system for one host, in float64 Python: the NVLink domain (GPUs) and NICs of a host
    of ``gpus`` GPUs built as its GPU preset's system (``domain`` GPUs a domain, ``preset_gpus`` GPUs and ``nics``
    NICs a host): the host's NVSwitch up to the system's domain (a rack's domain stays), the system's NICs a GPU."""
    built = min(domain, gpus) if domain <= preset_gpus else domain
    return float(built), float(max(math.ceil(nics * gpus / preset_gpus), 1))
