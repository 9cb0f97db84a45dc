"""The layer-overlap recurrence: FIFO all-reduce of fused buckets during backward.

Zhang et al., "Is Network the Bottleneck of Distributed Training?" (NetAI 2020),
section 4: gradients become ready layer by layer during the backward pass; fused
buckets are all-reduced one at a time in FIFO order, each starting when it is
ready and the previous one has finished. With the workers' coefficients A (transfer),
B (wire), L (messages), F_b (reduce) of :mod:`sweep.model.collectives`, per bucket b of
S_b bytes:

    alpha          = (A + B / (bandwidth * utilization)) / ratio      (s per byte)
    duration_b     = alpha * S_b + L * latency + F_b                   (the paper's collectives)
    duration_b     = max(B S_b / (ratio bandwidth utilization), A S_b / ratio, F_b) + L * latency
                                                                       (pipelined, NCCL-like: ``piped`` = 1)
    end_b          = max(k * ready_b, end_{b-1}) + duration_b,     end_{-1} = 0
    exposed_comm   = max(k * R_last, end_last) - k * R_last
    iteration_time = k * K * T1 + exposed_comm + multi * overhead
    scaling_factor = K * T1 / iteration_time
    comm_time      = sum_b duration_b

Losses that are not the network, paid only when there is more than one worker
(``multi`` = 1 when N > 1, else 0):

    k = 1 + multi * ((1 + slowdown) * (1 + jitter * e_N) - 1)

``slowdown`` stretches all compute (backward waits and the rest of the iteration);
``jitter`` is the coefficient of variation of each worker's compute time, and a
synchronous step waits for the slowest of N workers, whose expected time is
T (1 + jitter e_N) with e_N the expected maximum of N independent standard normal
variables (``straggle``, computed on the host); ``overhead`` is time per iteration
that nothing overlaps. At their defaults (0) k = 1 and the paper's model is
unchanged. With gradient accumulation over K = ``accum`` micro-batches, a step does
K micro-batches of compute and synchronizes once, during the last one's backward.
The scaling factor stays (K T1) / iteration_time with T1 the single-GPU time of one
micro-batch: K = 1 is the paper's.

Gradient compression (``compress``; :mod:`sweep.model.compressors` computes the per-bucket
terms on the host). A compressor sends P_b bytes for bucket b (its ``payload``) in
``rounds`` collectives; an all-reducible one with the collective's own
coefficients, one that must all-gather (``gather`` = 1) moves ``spread`` times the
all-reduce's bytes (N/2 on a ring) and decodes each of the N payloads. Encoding
(E_b) runs on the compute stream when the bucket is ready, so it delays the send
and every later gradient; decoding (D_b once, U_b per received payload) ends the
bucket's communication:

    n_b            = gather ? N : 1,   m_b = gather ? spread : 1,   L_b = gather ? L_g : L
    ready'_b       = k * ready_b + E_1 + ... + E_b
    duration_b     = alpha * m_b * P_b + rounds * L_b * latency + F_b + D_b + n_b * U_b
                     (pipelined: max(net m_b P_b, intra m_b P_b, F_b) + rounds L_b latency + D_b + n_b U_b)
    iteration_time = k * K * T1 + sum_b E_b + exposed_comm + multi * overhead,
                     exposed_comm from R'_last = k R_last + sum_b E_b

with F_b the reduction of the payload (0 for an all-gather) and L_g the all-gather's own message steps
(``gather_messages``: N - 1 on a ring, half the all-reduce's). ``time_to_accuracy``
is ``factor`` (the iterations the compressor needs relative to none) times the
iteration time over that of the same configuration with no compression at all
(payload = bytes, no codec, ratio 1). With compressor ``none`` every term above is
the plain model's, bit for bit.

NCCL's own collective (``nccl``: :func:`nccl_durations`, the workers' ``fabric``): duration_b is NCCL's time
t(X) of the bucket's all-reduce of X = S_b / ratio bytes as :mod:`kernels.nccl` prices it (its reduction and
latencies included: the workers' A, B, L and F are zeros); compressed, one collective of the whole payload
and an empty one for each further round, then the decode (:func:`_nccl_buckets`):

    duration_b     = t(P'_b) + (rounds - 1) t(0) + D_b + n_b U_b,    P'_b = (gather ? N P_b : P_b) / ratio

with t an all-gather where the compressor gathers; FSDP's g_u and s_u (:func:`fsdp_step`) are its all-gather
and reduce-scatter of S_u / ratio bytes.

With a ``softness`` s > 0 every max is replaced by s * logaddexp(x / s, y / s)
(>= the max, by at most s log 2), so that calibration gets gradients on both sides
of a tie.

:func:`iteration` is written for one configuration, in SI units, and lifted with
named ``jax.vmap`` helpers: :func:`on_grid` (configurations x worker layouts),
:func:`on_table` (a value per cell) and :func:`on_rows` (one configuration, workers
and bucket set per row, for calibration). The engine, ``need`` and ``calibrate``
all call it; :mod:`kernels.pallas_overlap` is the one other implementation, checked
against it. Two static :class:`Features` compile the extra terms in only when a
sweep uses them, so the paper's collectives keep their exact arithmetic.
"""

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from netsweep_jax.kernels import nccl

# the spine's rule, one for both families
from netsweep_jax.kernels.layout_collectives import group_spine

METRICS = (
    "scaling_factor",
    "iteration_time",
    "exposed_comm",
    "comm_time",
    "time_to_accuracy",
)  # = schema.OUTPUTS


class Config(NamedTuple):
    """What varies per configuration (each field a scalar for one configuration).

    Fields are arrays: numpy (or floats) on the host, traced ``jax.Array`` s inside the kernels.

    Attributes:
      bandwidth: inter-node link bandwidth (bit/s).
      utilization: fraction of it the transport achieves (1).
      ratio: gradient compression ratio (1).
      latency: per-message latency (s).
      overhead: time per iteration nothing overlaps, paid when N > 1 (s).
      slowdown: compute stretched by 1 + slowdown when N > 1 (1).
      jitter: coefficient of variation of a worker's compute time (1).
      accum: micro-batches of compute per synchronization (gradient accumulation, >= 1).
    """

    bandwidth: jax.Array
    utilization: jax.Array
    ratio: jax.Array
    latency: jax.Array
    overhead: jax.Array
    slowdown: jax.Array
    jitter: jax.Array
    accum: jax.Array


class Workers(NamedTuple):
    """The workers' coefficients: one arrangement of the N workers on nodes and links (:mod:`sweep.model.collectives`).

    Attributes:
      transfer: A, seconds per compressed byte on intra-node links.
      wire: B, bits on the inter-node link per compressed byte.
      messages: L, latency-bound message steps per bucket.
      straggle: e_N, expected maximum of N standard normal variables (0 for N = 1).
      multi: 1.0 when N > 1, else 0.0.
      piped: 1.0 for a pipelined (NCCL-like) collective, else 0.0.
      reduce: [Bk] F, seconds of reduction work per bucket (0 for padding); with
        compression, the reduction of the compressed payload.
      spread: all-gather bytes per all-reduce byte (compression only; N/2 on a ring).
      workers: N when N > 1, else 0 (compression only: payloads to decode).
      plain_reduce: [Bk] F of the uncompressed buckets (for ``time_to_accuracy``).
      nccl: 1.0 where the collective is NCCL's own (:mod:`kernels.nccl`; ``Features.nccl``), 1 + i where it is
        NCCL's with its forcing i (:data:`kernels.nccl.FORCINGS`: an algorithm or a protocol) forced, else 0.0.
      fabric: [16] the workers' fabric for NCCL's collective (:data:`FABRIC_FIELDS`): GPUs a host, hosts,
        NVLink per GPU (GB/s as NCCL counts it), NICs a host, architecture index, GPUs an NVLink domain (NVSwitch
        where above 1), CollNet (1.0: SHARP on), the tier above the hosts (hosts a leaf, 0: none; the spine's
        oversubscription; 1.0: rail-only) and :class:`kernels.nccl.Constants`' six; the NICs' rate is the
        configuration's ``bandwidth`` as NCCL's search reads it, each channel across nodes at most
        ``utilization`` of its share (:func:`nccl_durations`).
      gather_messages: L_g, the all-gather's message steps (compression only; N - 1 on a ring).
    """

    transfer: jax.Array
    wire: jax.Array
    messages: jax.Array
    straggle: jax.Array
    multi: jax.Array
    piped: jax.Array
    reduce: jax.Array
    spread: jax.Array | None = None
    workers: jax.Array | None = None
    plain_reduce: jax.Array | None = None
    nccl: jax.Array | None = None
    fabric: jax.Array | None = None
    gather_messages: jax.Array | None = None


class Buckets(NamedTuple):
    """Fused buckets of one profile, real ones first, then padding; or FSDP units.

    Attributes:
      ready: [Bk] seconds from the start of backward; non-decreasing; padding 0.
        FSDP units: each unit's forward compute (s), in forward order.
      nbytes: [Bk] uncompressed bytes; padding 0 (FSDP: each unit's parameter bytes).
      valid: [Bk] 1.0 for a real bucket, 0.0 for padding.
      backward: [Bk] FSDP units' backward compute (s); None for all-reduce buckets.
      fsdp: scalar 1.0 when these are FSDP units (padding first), 0.0 for buckets; or None.
      payload: [Bk] compressed bytes each worker sends (compression only; padding 0).
      encode: [Bk] seconds of encoding on the compute stream.
      decode: [Bk] seconds of decoding once per bucket, after its communication.
      unpack: [Bk] seconds of decoding per received payload (all-gather compressors).
      gather: scalar 1.0 when the compressor all-gathers, else 0.0.
      rounds: scalar collectives per bucket (PowerSGD: 2).
      factor: scalar iterations to the same accuracy relative to no compression.
    """

    ready: jax.Array
    nbytes: jax.Array
    valid: jax.Array
    backward: jax.Array | None = None
    fsdp: jax.Array | None = None
    payload: jax.Array | None = None
    encode: jax.Array | None = None
    decode: jax.Array | None = None
    unpack: jax.Array | None = None
    gather: jax.Array | None = None
    rounds: jax.Array | None = None
    factor: jax.Array | None = None


class Features(NamedTuple):
    """Static switches: terms compiled in only when some configuration of a sweep needs them.

    Attributes:
      piped: some workers' collective is pipelined (``nccl-ring``, ``nccl-tree``).
      compute: some overhead, slowdown or jitter is not 0.
      fsdp: some task is fully sharded (:func:`fsdp_step`).
      compress: some task compresses (the buckets carry payloads and codec times).
      accuracy: compute ``time_to_accuracy`` (a second, uncompressed evaluation).
      nccl: some workers' collective is NCCL's own (``nccl``, ``nccl:ALGO``, ``nccl:PROTO``: :func:`nccl_durations`).
    """

    piped: bool = False
    compute: bool = False
    fsdp: bool = False
    compress: bool = False
    accuracy: bool = False
    nccl: bool = False


PAPER = Features()
# Workers.fabric's columns, in order: GPUs a host, hosts, NVLink (GB/s as NCCL counts it), NICs a host, the
# architecture, the GPUs of one NVLink domain, CollNet on, the tier above the hosts (hosts a leaf, 0: none; the
# spine's oversubscription; rail-only wiring), and kernels.nccl.Constants' six (us, the fill's message in bytes).
FABRIC_FIELDS = (
    "gpus_per_node",
    "nodes",
    "nvlink",
    "nics",
    "arch",
    "nvlink_domain",
    "collnet",
    "leaf_hosts",
    "oversubscription",
    "rail_only",
    *nccl.Constants._fields,
)
# For padding lanes: finite, harmless values (sliced off the outputs). Host floats (``_make`` takes any
# values), so importing this module starts no device.
PAD_CONFIG = Config._make(
    dict(
        bandwidth=1e9,
        utilization=1.0,
        ratio=1.0,
        latency=0.0,
        overhead=0.0,
        slowdown=0.0,
        jitter=0.0,
        accum=1.0,
    )[f]
    for f in Config._fields
)


def smooth_max(x: jax.Array, y: jax.Array, softness: jax.Array | None = None) -> jax.Array:
    """max(x, y); with a ``softness`` s > 0, s * logaddexp(x / s, y / s)."""
    if softness is None:
        return jnp.maximum(x, y)
    return softness * jnp.logaddexp(x / softness, y / softness)


def iteration(
    config: Config,
    workers: Workers,
    buckets: Buckets,
    t1: jax.Array,
    softness: jax.Array | None = None,
    features: Features = PAPER,
) -> dict[str, jax.Array]:
    """Iteration metrics of one configuration (the module docstring's recurrence).

    Args:
      config: :class:`Config` of scalars (bit/s, 1, 1, s, s, 1, 1).
      workers: :class:`Workers`: six scalars and reduce [Bk].
      buckets: :class:`Buckets` of [Bk] arrays (s, bytes, 1).
      t1: scalar single-GPU iteration time (s).
      softness: None for the exact max, or a scalar (s) for the smooth one.
      features: static :class:`Features`.

    Returns:
      dict of scalars: ``scaling_factor`` (1), ``iteration_time`` (s),
      ``exposed_comm`` (s), ``comm_time`` (s).
    """
    effective = config.bandwidth * config.utilization
    alpha = (workers.transfer + workers.wire / effective) / config.ratio
    lat = workers.messages * config.latency
    net, intra = workers.wire / effective / config.ratio, workers.transfer / config.ratio
    k = 1.0 + workers.multi * ((1.0 + config.slowdown) * (1.0 + config.jitter * workers.straggle) - 1.0)
    ready = buckets.ready * k if features.compute else buckets.ready
    sent: jax.Array = buckets.nbytes
    rounds: jax.Array | float = 1.0
    extra: tuple[jax.Array, ...] = ()  # the codec terms, when compressing
    if features.compress:
        ready, sent, rounds, encode, codec, lat = _codec_terms(config, workers, buckets, ready)
        extra = (codec,)
    if features.nccl:  # the codec's decode, D_b + n_b U_b, when compressing
        extra = extra + (_nccl_buckets(config, workers, buckets, extra[0] if features.compress else None),)

    def step(
        carry: tuple[jax.Array, jax.Array], bucket: tuple[jax.Array, ...]
    ) -> tuple[tuple[jax.Array, jax.Array], None]:
        end, comm = carry
        ready, nbytes, reduce, valid, *more = bucket  # more: [D_b + n_b U_b] when compressing, NCCL's time
        codec = more[: int(features.compress)]  # NCCL's time holds its own codec terms
        start = smooth_max(ready, end, softness)
        new = start + alpha * nbytes + (lat * rounds * valid + reduce)  # the paper's arithmetic, in its order
        if features.compress:
            new = new + codec[0]
        if features.piped:
            piped = jnp.maximum(jnp.maximum(net * nbytes, intra * nbytes), reduce) + lat * rounds * valid
            if features.compress:
                piped = piped + codec[0]
            new, comm = jnp.where(workers.piped > 0, start + piped, new), comm + piped
        if features.nccl:  # the carried sum is NCCL's alone on its layouts (none is also pipelined)
            assert workers.nccl is not None  # Features.nccl promises NCCL's layouts
            ours = workers.nccl > 0
            new = jnp.where(ours, start + more[-1], new)
            comm = jnp.where(ours, carry[1] + more[-1], comm)  # not the piped sum added above
        # A padded bucket (all zeros) leaves end >= 0 unchanged under the exact max;
        # the smooth max would move it, so padding is masked there.
        return (new if softness is None else jnp.where(valid > 0, new, end), comm), None

    xs = (ready, sent, workers.reduce, buckets.valid) + extra
    (end, piped_comm), _ = lax.scan(step, (jnp.zeros_like(alpha),) * 2, xs)
    r_last = jnp.max(ready)
    exposed = smooth_max(r_last, end, softness) - r_last
    work = t1 * config.accum  # K micro-batches per step; the all-reduce overlaps the last one's backward
    total = work * k + exposed + workers.multi * config.overhead if features.compute else work + exposed
    if features.compress:
        total = total + jnp.sum(encode)
    closed = alpha * jnp.sum(sent) + lat * rounds * jnp.sum(buckets.valid)
    out: tuple[jax.Array, ...] = (work / total, total, exposed)
    out += (_comm_time(workers, buckets, features, closed, extra, piped_comm),)
    if features.fsdp:
        assert buckets.fsdp is not None  # Features.fsdp promises FSDP units
        sharded, fsdp = fsdp_step(config, workers, buckets, t1, k, alpha, lat, features), buckets.fsdp
        out = tuple(jnp.where(fsdp > 0, a, b) for a, b in zip(sharded, out))
    relative = jnp.ones_like(out[1])
    if features.accuracy:
        relative = _relative_to_uncompressed(config, workers, buckets, t1, softness, features, out[1])
    return dict(zip(METRICS, out + (relative,)))


def _comm_time(
    workers: Workers,
    buckets: Buckets,
    features: Features,
    sent: jax.Array,
    extra: tuple[jax.Array, ...],
    carried: jax.Array,
) -> jax.Array:
    """``comm_time`` (s), the sum of the buckets' durations: in closed form for the paper's collectives (``sent``:
    alpha sum S_b + rounds L latency sum valid, plus the reductions and the codec terms), the scan's ``carried``
    sum where the workers' collective is pipelined or NCCL's own."""
    comm = sent + jnp.sum(workers.reduce)
    if features.compress:
        comm = comm + jnp.sum(extra[0])
    if features.piped:
        comm = jnp.where(workers.piped > 0, carried, comm)
    if features.nccl:
        assert workers.nccl is not None
        comm = jnp.where(workers.nccl > 0, carried, comm)
    return comm


# workers.nccl's code of NCCL's own choice (nccl); 0 is a flat collective, NCCL_CHOICE + i NCCL's forcing i of
# kernels.nccl.FORCINGS (nccl:ALGO, nccl:PROTO).
NCCL_CHOICE = 1


def nccl_durations(
    config: Config, workers: Workers, buckets: Buckets, op: int | jax.Array = nccl.ALL_REDUCE
) -> jax.Array:
    """[Bk] seconds of NCCL's collective ``op`` (:mod:`kernels.nccl`'s index: an all-reduce of each bucket, or
    FSDP's all-gather or reduce-scatter of each unit) of ``nbytes / ratio`` bytes (nccl-tests' count: the whole
    buffer) on the workers' ``fabric`` (:data:`FABRIC_FIELDS`), its NICs at ``bandwidth`` (bit/s) as NCCL's search
    reads them, each channel across nodes at most ``utilization`` x its share of the NICs over the spine's
    divisor, NCCL's own choice of algorithm and protocol (one of them forced where
    ``workers.nccl`` is 1 + i for :data:`kernels.nccl.FORCINGS`' i: a collective or group it cannot run keeps
    NCCL's choice) and the fabric's constants (the
    shipped fit's, :data:`kernels.layout_collectives.NCCL_CONSTANTS`, or a ``--fabric``'s): NCCL's bandwidth
    includes the reduction and its latencies the message steps, so F and ``latency`` are not added. 0 for
    padding and for a single worker."""
    assert workers.fabric is not None and workers.nccl is not None  # Features.nccl promises both
    g, hosts, nvlink, nics, arch, domain, collnet, leaf, over, rail, *constants = (
        workers.fabric[i] for i in range(len(FABRIC_FIELDS))
    )
    n = g * hosts  # the all-reduce's group: every GPU, one block of ranks
    hosts_a_node = jnp.maximum(jnp.clip(domain, 1.0, n) / g, 1.0)
    # rings and trees over every GPU (stride 1): the layout family's rule for one group of them all
    spine = group_spine(n, 1.0, nccl.ALL_REDUCE, n, g, nics, domain, leaf, over, rail)
    fabric = nccl.Fabric(
        gpus_per_node=g,
        nodes=hosts,
        domain=hosts_a_node,  # hosts an NVLink domain
        nvlink=nvlink,
        nics=nics,
        # NCCL's search reads the NICs' nominal rate; the transport delivers utilization x it, as a divisor of
        # what each channel across nodes runs at (with the spine's, which the search does not read either)
        nic_gbs=config.bandwidth / 8e9,
        arch=arch.astype(jnp.int32),
        nvswitch=domain > 1,
        collnet=collnet > 0,
        # each channel across nodes at most its NICs' share over the spine's divisor, not the rate NCCL's search
        # reads (it does not know the spine)
        spine=spine / config.utilization,
    )
    # workers.nccl: 1 NCCL's choice, 1 + i its forcing i (``--collective nccl:ALGO`` or ``nccl:PROTO``).
    forced = nccl.forcing(workers.nccl - NCCL_CHOICE)  # below 0 (flat): -1, -1
    nbytes = buckets.nbytes / config.ratio
    seconds = nccl.collective(op, nbytes, fabric, nccl.Constants(*constants), *forced).seconds
    return jnp.where((buckets.valid > 0) & (workers.multi > 0), seconds, 0.0)


def _nccl_buckets(config: Config, workers: Workers, buckets: Buckets, codec: jax.Array | None) -> jax.Array:
    """[Bk] seconds of each bucket's communication on NCCL's own collectives: its all-reduce
    (:func:`nccl_durations`), or when compressing its payload P_b (per worker) sent in ``rounds`` collectives,
    an all-gather of the N workers' payloads (N P_b bytes, nccl-tests' count) for a compressor that cannot be
    summed, else an all-reduce of P_b, then decoded:

        d_b = t(P'_b) + (rounds - 1) t(0) + D_b + n_b U_b,   P'_b = (gather ? N P_b : P_b) / ratio

    one collective carries the whole payload and each further round (PowerSGD's second matrix, int8's scale)
    adds one more collective's fixed time, as ``rounds`` latencies enter the flat model. ``codec``: D_b + n_b U_b
    (:func:`_codec_terms`'), None without compression."""
    if codec is None:
        return nccl_durations(config, workers, buckets)
    assert buckets.payload is not None and buckets.gather is not None and buckets.rounds is not None
    assert workers.workers is not None  # the all-gather's N payloads (0 for one worker, whose time is 0)
    gather = buckets.gather > 0
    op = jnp.where(gather, nccl.ALL_GATHER, nccl.ALL_REDUCE)
    sent = buckets.payload * jnp.where(gather, workers.workers, 1.0)
    whole = nccl_durations(config, workers, buckets._replace(nbytes=sent), op)
    empty = nccl_durations(config, workers, buckets._replace(nbytes=jnp.zeros_like(sent)), op)
    return whole + (buckets.rounds - 1.0) * empty + codec


def _codec_terms(
    config: Config, workers: Workers, buckets: Buckets, ready: jax.Array
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array, jax.Array, jax.Array]:
    """(ready' [Bk] s, bytes sent [Bk], collectives per bucket, encode E_b [Bk] s, decode D_b + n_b U_b [Bk] s,
    latency of one collective L_b x latency s) of a compressing sweep (the module docstring's compression terms)."""
    # Features.compress promises the codec terms (static: checked once, at trace time).
    assert buckets.encode is not None and buckets.payload is not None and buckets.gather is not None
    assert buckets.rounds is not None and buckets.decode is not None and buckets.unpack is not None
    assert workers.spread is not None and workers.workers is not None and workers.gather_messages is not None
    # Encoding runs on the compute stream: bucket b is ready after the encodes before it.
    encode = buckets.encode * workers.multi
    ready = ready + jnp.cumsum(encode)
    spread = 1.0 + buckets.gather * (workers.spread - 1.0)
    sent, rounds = buckets.payload * spread, buckets.rounds
    payloads = 1.0 + buckets.gather * (workers.workers - 1.0)
    codec = (buckets.decode + payloads * buckets.unpack) * workers.multi
    # an all-gather's own message steps L_g; an all-reduce's L bit for bit (+ 0.0 x the difference)
    steps = workers.messages + buckets.gather * (workers.gather_messages - workers.messages)
    return ready, sent, rounds, encode, codec, steps * config.latency


def _relative_to_uncompressed(
    config: Config,
    workers: Workers,
    buckets: Buckets,
    t1: jax.Array,
    softness: jax.Array | None,
    features: Features,
    total: jax.Array,
) -> jax.Array:
    """``time_to_accuracy``: the compressor's iteration factor times the iteration time ``total`` (s) over that
    of the same configuration with no compression (payload = bytes, no codec, ratio 1)."""
    plain = iteration(
        config._replace(ratio=jnp.ones_like(config.ratio)),
        workers if workers.plain_reduce is None else workers._replace(reduce=workers.plain_reduce),
        buckets,
        t1,
        softness,
        features._replace(compress=False, accuracy=False),
    )
    factor = 1.0 if buckets.factor is None else buckets.factor
    return factor * total / plain["iteration_time"]


def fsdp_step(
    config: Config,
    workers: Workers,
    units: Buckets,
    t1: jax.Array,
    k: jax.Array | float,
    alpha: jax.Array,
    lat: jax.Array,
    features: Features,
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """(scaling factor, iteration time, exposed comm, comm time) of a fully sharded step (FSDP, ZeRO-3).

    Units u = 1..U in forward order (padding first), S_u parameter bytes, F_u and B_u
    forward and backward compute (stretched by k). Each unit's parameters are
    all-gathered before its forward and again before its backward; its gradients
    are reduce-scattered after its backward. Half an all-reduce each (a ring
    all-reduce is a reduce-scatter then an all-gather):

        g_u = alpha S_u / 2 + L a / 2                 (all-gather)
        s_u = alpha S_u / 2 + L a / 2 + F_u(reduce)   (reduce-scatter, with the reduction)

    (pipelined collectives: the max of the halves' stages, as for buckets; NCCL's own,
    ``nccl``: g_u and s_u are NCCL's all-gather and reduce-scatter of S_u bytes,
    :func:`nccl_durations`, their reduction and latencies included). One compute
    stream and one communication stream, FIFO, with one unit prefetched:

        forward, u = 1..U:   m = max(m, f_{u-1}) + g_u;  f_u = max(c, m);  c = f_u + k F_u
        backward: the last unit gathered at the forward's end: m = max(m, c) + g_U; a = m
        u = U..1:            b_u = max(c, a);  c = b_u + k B_u
                             m = max(m, b_u) + g_{u-1};  a = m      (prefetch the next unit)
                             m = max(m, c) + s_u                    (reduce-scatter)
        iteration_time = max(c, m) + k (K T1 - sum F - sum B) + multi * overhead

    with f_0 = 0 and g_0 = 0. The scaling factor is K T1 / iteration_time.
    """
    assert units.backward is not None  # FSDP units carry their backward compute
    gather, scatter = _unit_collectives(config, workers, units, alpha, lat, features)
    forward, backward = units.ready * k, units.backward * k

    def forward_step(
        carry: tuple[jax.Array, jax.Array, jax.Array], unit: tuple[jax.Array, jax.Array]
    ) -> tuple[tuple[jax.Array, jax.Array, jax.Array], None]:
        c, m, issued = carry
        g, f = unit
        m = jnp.maximum(m, issued) + g
        start = jnp.maximum(c, m)
        return (start + f, m, start), None

    zero = jnp.zeros_like(alpha)
    (c, m, _), _ = lax.scan(forward_step, (zero, zero, zero), (gather, forward))
    m = jnp.maximum(m, c) + gather[-1]  # the last unit, gathered again for its backward
    next_gather = jnp.concatenate([jnp.zeros_like(gather[:1]), gather[:-1]])  # g_{u-1}

    def backward_step(
        carry: tuple[jax.Array, jax.Array, jax.Array], unit: tuple[jax.Array, jax.Array, jax.Array]
    ) -> tuple[tuple[jax.Array, jax.Array, jax.Array], None]:
        c, m, ready = carry
        g_prev, b, s = unit
        start = jnp.maximum(c, ready)
        c = start + b
        m = jnp.maximum(m, start) + g_prev
        ready = m
        m = jnp.maximum(m, c) + s
        return (c, m, ready), None

    (c, m, _), _ = lax.scan(backward_step, (c, m, m), (next_gather[::-1], backward[::-1], scatter[::-1]))
    work = t1 * config.accum
    compute = jnp.sum(forward) + jnp.sum(backward)
    total = jnp.maximum(c, m) + (k * work - compute) + workers.multi * config.overhead
    # >= 0 exactly (the compute chain c covers every pass); rounding of total - k * work may dip below
    exposed = jnp.maximum(total - k * work - workers.multi * config.overhead, 0.0)
    comm = 2.0 * jnp.sum(gather) + jnp.sum(scatter)
    return work / total, total, exposed, comm


def _unit_collectives(
    config: Config, workers: Workers, units: Buckets, alpha: jax.Array, lat: jax.Array, features: Features
) -> tuple[jax.Array, jax.Array]:
    """([U] g_u, [U] s_u) seconds: each FSDP unit's all-gather and reduce-scatter (:func:`fsdp_step`), half an
    all-reduce's transfer and latency each (s_u also the reduction), pipelined where the workers' collective is, NCCL's own
    where its collective is (:func:`nccl_durations`, the reduction included)."""
    half_lat = 0.5 * lat
    gather = 0.5 * alpha * units.nbytes + half_lat * units.valid
    scatter = gather + workers.reduce
    if features.piped:
        eff = config.bandwidth * config.utilization
        wire = jnp.maximum(0.5 * workers.wire / eff, 0.5 * workers.transfer) / config.ratio * units.nbytes
        piped_gather = wire + half_lat * units.valid
        piped_scatter = jnp.maximum(wire, workers.reduce) + half_lat * units.valid
        gather = jnp.where(workers.piped > 0, piped_gather, gather)
        scatter = jnp.where(workers.piped > 0, piped_scatter, scatter)
    if features.nccl:
        assert workers.nccl is not None  # Features.nccl promises NCCL's layouts
        ours = workers.nccl > 0
        gather = jnp.where(ours, nccl_durations(config, workers, units, nccl.ALL_GATHER), gather)
        scatter = jnp.where(ours, nccl_durations(config, workers, units, nccl.REDUCE_SCATTER), scatter)
    return gather, scatter


Metrics = dict[str, jax.Array]


def _lift(
    inner: tuple[int | None, ...], outer: tuple[int | None, ...], features: Features
) -> Callable[..., Metrics]:
    """vmap :func:`iteration` over configurations (``inner`` axes) then layouts (``outer``)."""

    def one(
        config: Config, workers: Workers, buckets: Buckets, t1: jax.Array, softness: jax.Array | None
    ) -> Metrics:
        return iteration(config, workers, buckets, t1, softness, features)

    return jax.vmap(jax.vmap(one, in_axes=inner), in_axes=outer)


def on_grid(
    config: Config,
    workers: Workers,
    buckets: Buckets,
    t1: jax.Array,
    softness: jax.Array | None = None,
    features: Features = PAPER,
) -> Metrics:
    """config [C], workers [K] -> dict of [K, C] (every configuration under every workers)."""
    f = _lift((0, None, None, None, None), (None, 0, None, None, None), features)
    return f(config, workers, buckets, t1, softness)


def on_table(
    config: Config,
    workers: Workers,
    buckets: Buckets,
    t1: jax.Array,
    softness: jax.Array | None = None,
    features: Features = PAPER,
) -> Metrics:
    """config [K, C], workers [K] -> dict of [K, C] (a configuration per cell)."""
    f = _lift((0, None, None, None, None), (0, 0, None, None, None), features)
    return f(config, workers, buckets, t1, softness)


def on_rows(
    config: Config,
    workers: Workers,
    buckets: Buckets,
    t1: jax.Array,
    softness: jax.Array | None = None,
    features: Features = PAPER,
) -> Metrics:
    """config [R], workers [R], buckets [R, Bk], t1 [R], softness [R] or None -> dict of [R]."""

    def one(
        config: Config, workers: Workers, buckets: Buckets, t1: jax.Array, softness: jax.Array | None
    ) -> Metrics:
        return iteration(config, workers, buckets, t1, softness, features)

    return jax.vmap(one, in_axes=(0, 0, 0, 0, 0))(config, workers, buckets, t1, softness)
