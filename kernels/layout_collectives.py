"""Collectives: the bandwidth of a group of GPUs, and the time of each collective over it.

The notation is :mod:`kernels.layout`'s.

Collectives over a group of n GPUs whose members sit ``stride`` ranks apart (Megatron
orders ranks tp, cp, ep, dp, pp: TP stride 1, CP stride t, DP stride t c, PP stride
t c D). The group stays inside one NVLink domain of Q GPUs when its block of stride n ranks is inside every
domain it meets, stride n <= Q_b (:func:`domain_part`: Q, or gcd(stride n, Q_j) where the job's blocks cross the
edges of its domains of Q_j of its GPUs each, :func:`job_domain`), and then
runs at the NVLink bandwidth W (per GPU, one direction); otherwise its traffic leaves
the domain through the node's NICs, which the node's groups share: a group with
q = min(n, max(1, G / stride)) members on a node (G GPUs per node) gets q / G of them, as
the node's G / q such groups communicate at once. A ring over them carries its whole
volume across each domain boundary, split over the group's NICs (NCCL's channels). Where a domain holds
several nodes (GB200 NVL72: trays of G = 4 in racks of Q = 72) the ring's hops between its nodes are NVLink's
and it leaves the domain by the NICs of every member in it: q = clip(max(G / stride, floor(Q_b / stride)), 1,
n), the whole members in the domain's part of the group's block (Q_b: :func:`domain_part`; a job placed
unevenly: :func:`_sharing_nics`), whose nodes' K q / G NICs it takes, at most
NCCL's 32 channels' (as :mod:`kernels.nccl` takes a domain for one NCCL node), so

    bw(n, stride) = W                                   inside a domain
                  = min(W, beta u f(min(K q / G, 32)))  across domains (K NICs of beta bit/s
                                                         each, utilization u; W only when q > 1)

with f(s) = s from one NIC up and 1 / ceil(1 / s) under one (:func:`nic_fraction`: the host's G / q groups take
the K NICs whole, and the one sharing its NIC most paces them; 5 NICs for 8 GPUs give half a NIC, as 4 do),

which for a group spanning whole nodes (q = G) is netsweep's ``nccl-ring`` with
``--nics-per-node`` K, and for one member per node (a DP group at stride 8 beside TP 8 on 8-GPU nodes) each
GPU's share of the node's NICs.
    all-reduce    = 2 (n - 1) / n X / bw + 2 (n - 1) lambda      (ring)
                  = 2 X / bw + 2 ceil(log2 n) lambda             (tree; ``ring-or-tree`` the cheaper)
    reduce-scatter, all-gather = (n - 1) / n X / bw + (n - 1) lambda
    point-to-point = X / bw_1 + lambda,    bw_1 = beta u f(K / G) across domains (the sending GPU's own share
                                          of its node's NICs: NCCL's send goes by the NIC beside it), W inside

with X each member's buffer in bytes and lambda the per-step latency of traffic that
leaves the domain (0 inside it). EP's all-to-all is not a ring's: it is priced in
:mod:`kernels.layout_communication` (each GPU's off-domain share through its own f(K / G) of the NICs). An all-reduce, reduce-scatter, all-gather or all-to-all of no bytes is
none, under either pricing: 0 s (a dense
model's expert-gradient terms, X = 0 over an "expert DP" group of t dp c GPUs, paid (n - 1) lambda a layer
and NCCL's latencies, about 9% of a ZeRO-3 step on a SuperPOD).

With ``collectives`` 1 (nccl) every collective is instead :func:`kernels.nccl.collective`'s time, NCCL's
algorithm and protocol of least time for the group as placed (:func:`group_fabric`), or of least time with
its algorithm or protocol forced (``lay.collective`` 3 + i: :data:`kernels.nccl.FORCINGS`' i, as ``NCCL_ALGO``
or ``NCCL_PROTO``; see :func:`nccl_time`): a group of n members
``stride`` ranks apart has

    g = q = clip(G / stride, 1, n) members per host,   H = n / q hosts,
    D = max(1, clip(Q_b / stride, 1, n) / q) of its hosts per NVLink domain (Q_b = :func:`domain_part`: a block
        of ranks that crosses a domain's edge, as EP 32 on 72-GPU racks, priced at its smallest part there,
        gcd(stride n, Q_j) ranks, whose members pace the groups; an all-to-all's NVLink side at its most in one
        domain, :func:`most_in_domain`),
    floor(K q / G) of the host's NICs (the host's G / q groups communicate at once, the slowest pacing them),
    each of beta / 8 bytes/s as NCCL's search reads it (fewer than one: one NIC at f(K q / G) of that rate); each
    of its channels across nodes runs at most at u of its share of the NICs, over S where the group crosses the
    spine (kernels.nccl's ``_running``, its divisor S / u; send/recv and all-to-all at K r u / (g S)):

        spine = L > 0  and  stride n > max(L G, Q)   (not rail-only)
        S = max(1, o f)  over the spine, else S = 1;   s_run = min(s_run, the channel's NIC share u / S)

    with L the hosts under one leaf (``lay.leaf_hosts``; 0: no tier above the hosts), o the oversubscription
    (a leaf's L K NIC ports over its uplinks) and f the share of the leaf's NIC ports' rate that the
    collective sends out of the leaf. NCCL does not know the spine: its channels are the 1:1 spine's (dividing
    the NIC rate its channel search reads moved them, and while channels ran at its speed lists' steps fell on
    them: 4.2:1 took 2.5 times 4:1 at 10 Gbit/s, a hunt); its choice of algorithm and protocol is priced at the
    speeds that run, and a channel NVLink already holds below its NIC share slows only once the share over S
    falls below it (S had divided eta_net, all of what crossed nodes, unseen by the choice: a faster NIC ran
    10% slower on a 32:1 spine, a hunt). Megatron's
    groups are aligned blocks of stride n consecutive ranks, so a group fits a leaf of L G consecutive ranks
    when its block does (a block that does not divide the leaf's ranks is taken as inside one: not modelled);
    a group inside the NVLink domain (stride n <= Q) or inside a leaf is unaffected. Every group of a kind runs
    its collective at once (all DP groups reduce together), so a leaf's uplinks carry what all of the leaf's
    groups send out of it:

      - a ring or a tree (:func:`ring_load`) leaves the leaf at its ends only, once a channel: each of the
        leaf's min(s, L G) groups crosses its edge by the c NICs' worth its channels use in one NCCL node
        (:func:`channel_nics`: c = min(32, K_g D_g), its whole NICs a host K_g = floor(K q / G) on each of the
        node's D_g hosts, at most NCCL's 32 channel NICs; under one NIC a host, c = min(32, D_g) f(K q / G): one
        channel a host at its part of a NIC), so f = min(1, min(s, L G) c / (L K))
        (s the stride; NCCL's double binary trees cross a leaf's edge a few times, each edge with half the
        bytes: priced as a ring). A DP ring at stride 1 or 8 on a SuperPOD's 32-host leaves slows only from
        o > 32, one across GB200 NVL72 racks (144 trays a leaf, 32 channel NICs a rack) from o > 18.
      - a send/recv (a PP hand-off, a CP ring step) leaves from the leaf's last s ranks, each by its own NICs:
        f = min(1, s / (L G)) u; a hand-off a leaf or more apart gets S = o.
      - an all-to-all (:func:`exchange_load`) sends every member's bytes to every other at once: of the NIC
        bytes (n - p) / n of each member's buffer, p the group's GPUs in one NCCL node, (n - m) / n go to
        members outside its leaf (m = clip(L G / s, 1, n) in a leaf), so f = (n - max(m, p)) / (n - p) u;
      - u, for a send/recv or an all-to-all: the share of its NICs' rate the sends run at, under one NIC a GPU
        f(K / G) G / K (each GPU by its own part: NCCL's sends and all-to-all, :func:`group_fabric`, and the flex
        dispatcher's RDMA stage, :data:`FLEX_RDMA`), from one up K_g / (K q / G) for NCCL's (its whole NICs a
        host K_g) and 1 for flex's.

    An oversubscription below 1 (more uplink than the leaf's hosts' NICs) is priced as 1: the NICs still pace
    the group. Latencies are unchanged. Not modelled: ECMP's hash collisions on the uplinks (a non-blocking
    spine is taken at its full rate) and groups of different kinds sharing a leaf's uplinks at the same time
    (each kind is priced alone, as each gets its own NICs' share).

    In-network reduction (``lay.sharp`` 1: InfiniBand SHARP with NCCL's CollNet on, ``NCCL_COLLNET_ENABLE=1`` and
    the SHARP plugin; NCCL's default is off) is the group's C: NCCL's CollNet (direct, chain) and NVLS across
    hosts become candidates for its all-reduces (:mod:`kernels.nccl`). Not modelled: the leaf's reduction
    relieving the spine's uplinks (a SHARP all-reduce over the spine is slowed by S as a ring is),
    and SHARP's limit on concurrent reduction trees (every group is taken to get one).

    Rail-only wiring (``lay.rail_only`` 1; Wang et al., "Rail-only: A Low-Cost High-Performance Network for
    Training LLMs with Trillion Parameters", arXiv 2307.12169): no spine; the GPUs at one position of every
    NVLink domain share a rail, each rail a non-blocking fabric of its own. NCCL's rings, trees and send/recv
    run NIC k to NIC k (Megatron's groups are rail-aligned), so they price as above with the spine never
    crossed (o unread). An all-to-all's bytes bound for another rail are forwarded over NVLink inside the
    sender's domain first (NCCL's PXN), so each GPU sends (p - 1) / p of its buffer X over NVLink (p the group's
    GPUs in one NCCL node: p = n / ceil(H / D)) where :mod:`kernels.nccl`'s all-to-all sends (p - 1) / n:

        all-to-all NVLink term = X (p - 1) / p / (W eta_nvl) = X (p - 1) / n / (W' eta_nvl),   W' = W p / n

    priced as NCCL's all-to-all on a fabric of NVLink W' (its NIC term unchanged: every NIC still sends
    (n - p) / n of X).

NVLink W = :func:`kernels.nccl.nvlink_gbs` of the GPU's rate (its links to a thousandth), NVSwitch where Q > 1,
and the fabric's constants the step is given (``lay.eta_net``, ``lay.eta_nvl``, ``lay.nccl_latency``,
``lay.nccl_op_latency``, ``lay.nccl_fill``, ``lay.nccl_fill_bytes``: those ``sweep validate --nccl`` fitted,
:data:`NCCL_CONSTANTS`, or a fabric file's, ``sweep calibrate --nccl-tests``). An all-reduce is
NCCL's all-reduce (with ``ring_only``, sequence parallelism's reduce-scatter plus all-gather: two of
X), a reduce-scatter or all-gather NCCL's, an exchange (CP, PP) its send/recv and the expert dispatch
its all-to-all.

Every NCCL-priced collective of one step is priced by :func:`priced_together`: a step makes about 24 (a dense
one 12 all-gathers, 4 reduce-scatters, 4 all-reduces, 2 all-to-alls and 2 send/recvs), and one call of
:func:`kernels.nccl.collective` inlines NCCL's whole tuner, so a call per collective made the compiled program 24
tuners long (its first search took 28-32 s, a MoE plan's compile did not finish in 14 minutes). The step's
requests are grouped by collective and each group priced by one copy of the tuner in a loop over its requests,
that collective fixed, so that XLA keeps only what it can run: the whole tuner for an all-reduce; ring, NVLS and
PAT for an all-gather or reduce-scatter; none of it for send/recv and all-to-all, which have one algorithm.
Against one loop over every request (each pass the whole tuner), on 2 CPU cores: 8.5-8.8e5 layouts/s against
1.2-1.8e5 searched, its first search 14.7-16.3 s against 11.8-12.8 s (benchmarks/README.md, 2026-12-04). Every
choice of algorithm and protocol is the same, and every time within 3e-7 of one call's in float32 (5e-16 in
float64: XLA orders a few operations differently).
"""

import contextvars
import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from netsweep_jax.kernels import nccl
from netsweep_jax.kernels.layout_inputs import Parallelism, Value

FLAT, NCCL = 0, 1  # Parallelism.collectives
# The fabric's constants as `sweep validate --nccl` fitted them on published nccl-tests rows
# (results/validation-nccl/REPORT.md): eta_net, eta_nvl, the network latency lambda (us), and what NCCL's tuner
# leaves out: a collective's fixed cost inside one node (us) and the pipeline's fill across nodes (us, whole from
# 10.9 MiB on); the fit rounded to three significant figures.
NCCL_CONSTANTS = nccl.Constants(
    eta_net=0.968, eta_nvl=0.905, latency=1.80, op_latency=9.71, fill=53.5, fill_bytes=10.9 * 2**20
)


# lay.collective's code of NCCL's own choice (nccl); below it the flat ring, tree and the cheaper of the two, above
# it NCCL's forcings (nccl:ALGO, nccl:PROTO): NCCL_CHOICE + i for kernels.nccl.FORCINGS' i.
NCCL_CHOICE = 3


def priced(lay: Parallelism, as_nccl: Callable[[], Value], flat: Callable[[], Value]) -> Value:
    """``as_nccl()`` where ``lay.collectives`` is nccl, else ``flat()``: a Python int (one per sweep) builds only
    the one chosen, so a flat sweep compiles and runs what it did before; an array selects per element."""
    mode = lay.collectives
    if isinstance(mode, (int, float)):
        return as_nccl() if mode == NCCL else flat()
    return jnp.where(mode == NCCL, as_nccl(), flat())


def group_fabric(size: Value, stride: Value, lay: Parallelism, coll: int = -1) -> nccl.Fabric:
    """The :class:`kernels.nccl.Fabric` of a group of ``size`` GPUs ``stride`` ranks apart (module docstring)
    for collective ``coll`` (:data:`kernels.nccl.COLLECTIVES`; rail-only wiring forwards an all-to-all's
    off-rail bytes over NVLink), and the spine's divisor of its channels' NIC share (:func:`spine_factor`);
    groups of one are priced as two (their time is then discarded) so that every value stays finite. Placed
    as its block meets the domains at the fewest (:func:`placed`); an all-to-all's NVLink side at the most, its
    ``peers`` (:func:`most_in_domain`)."""
    n, on_host, share, domain = placed(
        size, stride, lay.gpus, lay.gpus_per_node, lay.nics_per_node, lay.nvlink_domain
    )
    peers: Value = 0.0  # kernels.nccl's p, the fewest: every collective but the all-to-all reads only that
    arch = jnp.asarray(lay.nccl_arch).astype(jnp.int32)
    # The group's NICs on a host; under one (8 groups of one GPU a host on 1 NIC), one NIC at that fraction of
    # its rate, so that the host's groups share it as they do on the flat rings. Above one, whole NICs: 33 NICs
    # over 8 groups give some 5 and some 4, and the slowest paces the collective (4.125 NICs gave NCCL's
    # channel rules a fraction, and 33 NICs a slower step than 32: a hunt).
    whole = whole_nics(share)
    # NVLink as NCCL counts it (kernels.nccl.nvlink_gbs), its links rounded to a thousandth: 18 links exactly,
    # so that NCCL's channel counts (floors of W over a speed) come out alike in float32 and float64.
    links = jnp.round(lay.nvlink_bw / 1e9 / jnp.asarray(nccl.NVLINK_DATASHEET)[arch] * 1000.0) / 1000.0
    hosts = n / on_host
    nvlink = links * jnp.asarray(nccl.NVLINK_LINK)[arch]
    if coll == nccl.ALLTOALL:
        # Where a block crosses a domain's edge its members on the larger side send the most over NVLink: the
        # all-to-all is bounded by them too (a hunt: EP 32 on 288 GB200s priced every member at 7 NVLink peers,
        # its step below the same layout's inside one rack on a fast network).
        # never below the group's GPUs a host, which NVLink joins (domains smaller than the host are refused
        # under NCCL's pricing: layout_options; a review)
        peers = jnp.maximum(
            most_in_domain(size, stride, lay.gpus, lay.gpus_per_node, lay.nvlink_domain), on_host
        )
        # Rail-only: every byte bound for another rail (a position of the NVLink domain other than the
        # sender's, here or across) crosses NVLink first (NCCL's PXN), (p - 1) / p of the buffer where NCCL's
        # all-to-all sends (p - 1) / n: the same NVLink term at W p / n (p the group's GPUs a domain, the most).
        nvlink = jnp.where(lay.rail_only > 0, nvlink * peers / n, nvlink)
    nic_gbs = lay.bandwidth / 8e9 * jnp.minimum(nic_fraction(share), 1.0)
    if coll in (nccl.ALLTOALL, nccl.SENDRECV):
        # Each GPU sends its own bytes (kernels.nccl._point_to_point: nics r / g a GPU): under one NIC a GPU, the
        # slowest GPU's part of one, f(K / G), whatever the group (a review: a host-wide group's 8 GPUs had run
        # 5 NICs at 5/8 each, where three NICs serve two GPUs).
        own = lay.bandwidth / 8e9 * nic_fraction(lay.nics_per_node / lay.gpus_per_node) * on_host / whole
        nic_gbs = jnp.where(lay.nics_per_node < lay.gpus_per_node, own, nic_gbs)
    return nccl.Fabric(
        gpus_per_node=on_host,
        nodes=hosts,
        domain=domain,
        nvlink=nvlink,
        nics=whole,
        # NCCL's search reads the NICs' nominal rate (for a send or an all-to-all under one NIC a GPU, which no
        # search reads, the rate at which nics r / g is each GPU's own part, above beta where the group's GPUs
        # outnumber its whole NICs); the transport's utilization divides what runs, as the spine
        nic_gbs=nic_gbs,
        arch=arch,
        nvswitch=jnp.asarray(lay.nvlink_domain) > 1,
        # SHARP's in-network reduction where the fabric turns NCCL's CollNet on (NCCL_COLLNET_ENABLE=1).
        collnet=lay.sharp > 0,
        # the group's spine divisor (1 where none is in its way) over the transport's utilization
        spine=spine_factor(size, stride, lay, coll) / lay.utilization,
        peers=peers,
    )


class Placed(NamedTuple):
    """A group of n GPUs ``stride`` ranks apart as placed on hosts of G GPUs and K NICs in NVLink domains of Q
    GPUs (module docstring): n (at least 2: a group of one is priced as two, its time then discarded), its GPUs
    a host q = clip(G / stride, 1, n), its share of a host's NICs K q / G, and its hosts an NVLink domain
    D = max(1, clip(Q_b / stride, 1, n) / q), Q_b the domain as its block of ranks meets it (:func:`domain_part`).
    What :func:`group_fabric` and :func:`spine_load` read."""

    size: Value
    on_host: Value
    nic_share: Value
    hosts_a_domain: Value


def placed(
    size: Value, stride: Value, gpus: Value, gpus_per_node: Value, nics_per_node: Value, nvlink_domain: Value
) -> Placed:
    """:class:`Placed` of a group of ``size`` GPUs ``stride`` ranks apart in a job of ``gpus``, as its block meets
    the domains at the fewest (:func:`group_part`: the members whose NICs carry the most)."""
    n, per = jnp.maximum(size, 2.0), jnp.maximum(stride, 1.0)
    on_host = jnp.clip(gpus_per_node / per, 1.0, n)
    part = group_part(size, stride, gpus, gpus_per_node, nvlink_domain)
    hosts_a_domain = jnp.maximum(jnp.clip(part / per, 1.0, n) / on_host, 1.0)
    return Placed(n, on_host, nics_per_node * on_host / gpus_per_node, hosts_a_domain)


# Inside a trace of priced_together's step: group_part's results by the identity of its arguments (kept with them,
# so that no other object takes their ids while the trace lasts).
_PARTS: contextvars.ContextVar[dict[tuple[int, ...], tuple[tuple[Any, ...], Value]] | None] = (
    contextvars.ContextVar("domain_parts", default=None)
)


def group_part(size: Value, stride: Value, gpus: Value, gpus_per_node: Value, nvlink_domain: Value) -> Value:
    """:func:`domain_part` of a group's block of max(size, 2) x max(stride, 1) ranks; inside :func:`priced_together`
    once a trace for the same arguments: a step asks about 50 times of its six kinds of group, and each is a loop
    of Euclid's steps that XLA does not merge (6% of the layout search's rate, 2026-12-07)."""
    memo, arguments = _PARTS.get(), (size, stride, gpus, gpus_per_node, nvlink_domain)
    key = tuple(map(id, arguments))
    if memo is not None and key in memo:
        return memo[key][1]
    part = domain_part(jnp.maximum(size, 2.0) * jnp.maximum(stride, 1.0), gpus, gpus_per_node, nvlink_domain)
    if memo is not None:
        memo[key] = (arguments, part)
    return part


def most_in_domain(
    size: Value, stride: Value, gpus: Value, gpus_per_node: Value, nvlink_domain: Value
) -> Value:
    """The most members of a group of ``size`` GPUs ``stride`` ranks apart in one NVLink domain, clip(Q_j /
    stride, 1, n) (:func:`job_domain`: a block inside one domain, or the larger side of one across an edge, or
    a whole domain of a wider block): an all-to-all's NVLink side, :attr:`kernels.nccl.Fabric.peers`."""
    n, per = jnp.maximum(size, 2.0), jnp.maximum(stride, 1.0)
    return jnp.clip(job_domain(gpus, gpus_per_node, nvlink_domain) / per, 1.0, n)


def job_domain(gpus: Value, gpus_per_node: Value, nvlink_domain: Value) -> Value:
    """Q_j, the job's GPUs in each NVLink domain of Q: a job of more than Q GPUs placed evenly over the fewest
    domains that hold it (as :mod:`kernels.nccl` places a group of them all), gpus / ceil(gpus / Q): Q where it
    fills whole domains, 60 a rack for 240 GB200s on 72-GPU racks; where that is a whole number of GPUs and of
    hosts of G (``gpus_per_node``; or hosts of whole domains). Else Q: a job inside one domain, one whose even
    share is no whole number of hosts (19 trays as 9.5 a rack: its blocks' edges not modelled, said), or domains
    that split a host (12 GPUs on hosts of 8, which no system builds: a review found TP 8 inside one host priced
    as crossing an edge at rank 12). The most of any block of ranks in one domain is min(block, Q_j)."""
    share, laid = _placement(gpus, gpus_per_node, nvlink_domain)
    return jnp.where(laid, share, nvlink_domain)


def _placement(gpus: Value, gpus_per_node: Value, nvlink_domain: Value) -> tuple[Value, Value]:
    """(the job's even share of a domain, gpus / ceil(gpus / Q); whether :func:`job_domain` places it so)."""
    share = gpus / jnp.maximum(jnp.ceil(gpus / nvlink_domain), 1.0)
    # the domains and the share both whole hosts, or hosts of whole ones (a review: 16 GPUs on 8-GPU hosts in
    # domains of 12 had been placed 8 a domain)
    whole = (jnp.mod(nvlink_domain, gpus_per_node) == 0) | (jnp.mod(gpus_per_node, nvlink_domain) == 0)
    aligned = whole & ((jnp.mod(share, gpus_per_node) == 0) | (jnp.mod(gpus_per_node, share) == 0))
    return share, (gpus > nvlink_domain) & (jnp.mod(share, 1.0) == 0) & aligned


def domain_part(extent: Value, gpus: Value, gpus_per_node: Value, nvlink_domain: Value) -> Value:
    """Q_b, the GPUs of an NVLink domain as a group's block of ``extent`` consecutive ranks (stride x n) meets
    them at the fewest. Megatron's blocks tile the job's ranks from rank 0 and the domains hold Q_j of them each
    from rank 0 (:func:`job_domain`), so where the job spans several domains the domains' edges fall inside
    blocks at the multiples of gcd(extent, Q_j), and some block has only

        Q_b = gcd(extent, Q_j)

    of its ranks in one domain (EP 32 on 72-GPU racks: ranks 64-95 are 8 on one rack and 24 on the next; EP 16 on
    240 GB200s, 60 a rack: 4). Every group of a kind runs its collective at once and the slowest paces them, so a
    group is priced as placed in domains of Q_b ranks: the members of its smallest part send what is for the rest
    over their own NICs (an all-to-all is also bounded by the members with the most in one domain on NVLink:
    :func:`most_in_domain`, :func:`kernels.layout_communication.ep_domains`). Where the block divides
    Q_j (no edge inside a block) Q_b is the block, where Q_j divides it whole domains: either places the group as
    Q_j does. A job inside one domain, or one :func:`job_domain` does not place, keeps Q. gcd(extent, Q_j) is
    taken as gcd(extent mod Q_j, Q_j) (gcd(0, Q_j) = Q_j), so that a block of 2^31 ranks or more counts in
    32-bit integers."""
    share, laid = _placement(gpus, gpus_per_node, nvlink_domain)
    ranks = jnp.round(jnp.mod(extent, share)).astype(jnp.int32)
    part = jnp.gcd(ranks, jnp.round(share).astype(jnp.int32))
    return jnp.where(laid, part, nvlink_domain)


def spine_factor(size: Value, stride: Value, lay: Parallelism, coll: int = -1) -> Value:
    """The divisor S = max(1, o f) of the bandwidth NCCL's collective ``coll`` (:data:`kernels.nccl.COLLECTIVES`;
    -1: an all-reduce's) delivers across nodes for a group of ``size`` GPUs ``stride`` ranks apart, over the
    spine (its block of ranks wider than a leaf's and than the NVLink domain), f its :func:`spine_load`;
    rail-only wiring has no spine, each rail a non-blocking fabric of its own (Wang et al.); else 1."""
    return group_spine(
        size,
        stride,
        coll,
        lay.gpus,
        lay.gpus_per_node,
        lay.nics_per_node,
        lay.nvlink_domain,
        lay.leaf_hosts,
        lay.oversubscription,
        lay.rail_only,
    )


def group_spine(
    size: Value, stride: Value, coll: int, gpus: Value, gpus_per_node: Value, nics_per_node: Value,
    nvlink_domain: Value, leaf_hosts: Value, oversubscription: Value, rail_only: Value,
) -> Value:  # fmt: skip
    """:func:`spine_factor` from the fabric's fields (the data-parallel family's one group of every GPU, stride
    1, reads them from its workers' fabric): :func:`spine_divisor` of the group's block of ranks (stride x n,
    n at least 2) under its :func:`spine_load`."""
    load = spine_load(size, stride, coll, gpus, gpus_per_node, nics_per_node, nvlink_domain, leaf_hosts)
    extent = jnp.maximum(stride, 1.0) * jnp.maximum(size, 2.0)
    return spine_divisor(extent, load, gpus_per_node, nvlink_domain, leaf_hosts, oversubscription, rail_only)


def spine_load(
    size: Value, stride: Value, coll: int, gpus: Value, gpus_per_node: Value, nics_per_node: Value,
    nvlink_domain: Value, leaf_hosts: Value,
) -> Value:  # fmt: skip
    """The share f of a leaf's NIC ports' rate that collective ``coll`` (-1: an all-reduce's) of groups of
    ``size`` GPUs ``stride`` ranks apart sends out of a leaf of ``leaf_hosts`` hosts (module docstring): a ring's
    or tree's :func:`ring_load`, a send/recv's min(1, s / (L G)) (the leaf's last s ranks, each by its own NICs),
    an all-to-all's :func:`exchange_load`. 1 / f is the oversubscription from which the spine slows it (``sweep
    plan``'s tier lines say it)."""
    per = jnp.maximum(stride, 1.0)
    n, on_host, share, domain = placed(size, stride, gpus, gpus_per_node, nics_per_node, nvlink_domain)
    leaf_gpus = jnp.maximum(leaf_hosts, 1.0) * gpus_per_node
    # The share of the leaf's NIC ports' rate the sends run at: NCCL's, the group's whole NICs at its part of a NIC
    # (group_fabric); flex's RDMA stage, each GPU's own part (nic_per_gpu). A review: the raw K / G had counted a
    # fifth NIC's uplinks as never used; a second, that a group of 8 GPUs a host runs all 5 of its NICs.
    used = jnp.minimum(nic_fraction(nics_per_node / gpus_per_node) * gpus_per_node / nics_per_node, 1.0)
    if coll != FLEX_RDMA:  # NCCL's: its own part under one NIC a GPU too (group_fabric), else its whole NICs
        whole = whole_nics(share) * jnp.minimum(nic_fraction(share), 1.0) / share
        used = jnp.where(nics_per_node < gpus_per_node, used, whole)
    if coll in (nccl.ALLTOALL, FLEX_RDMA):  # p: the group's GPUs a NCCL node, as group_fabric's
        return exchange_load(n, per, on_host * domain, leaf_gpus) * used
    if coll == nccl.SENDRECV:
        return jnp.minimum(per / leaf_gpus, 1.0) * used
    return ring_load(per, channel_nics(share, domain), leaf_hosts, nics_per_node, gpus_per_node)


# spine_load's code of the flex dispatcher's RDMA stage: an all-to-all between NVLink domains whose GPUs send by
# their own parts of the NICs (kernels.layout_communication), not by NCCL's whole NICs of the group.
FLEX_RDMA = -2


def nic_fraction(share: Value) -> Value:
    """A group's NICs a host as it runs them, from its share K q / G of the host's K NICs (q of the host's G GPUs in
    the group): the share itself at one NIC or more (whole NICs where NCCL's channels read it: :func:`whole_nics`),
    and under one the slowest of the host's G / q groups' part of a NIC: they take the K NICs whole, at most
    ceil(G / (K q)) to a NIC, so 1 / ceil(1 / share) (5 NICs for 8 single-GPU groups: three NICs shared by two,
    each at half a NIC as with 4, and those pace their collective; a hunt: 5 / 8 had been priced). Exact where
    the share's inverse is whole (1, 2, 4 or 8 NICs for 8 GPUs): x (1 - 1e-6) keeps a whole inverse computed a
    rounding above it (relative: float32's ulp of 61 is larger than 1e-6, a review)."""
    return jnp.where(share >= 1.0, share, 1.0 / jnp.ceil(1.0 / jnp.maximum(share, 1e-12) * (1.0 - 1e-6)))


def whole_nics(share: Value) -> Value:
    """A group's whole NICs a host from its share ``share`` of them: max(floor(share), 1) (+ 1e-6: a whole share
    computed a rounding below)."""
    return jnp.maximum(jnp.floor(share + 1e-6), 1.0)


def channel_nics(share: Value, hosts_a_node: Value) -> Value:
    """The NICs' worth by which a group's ring or tree leaves one NCCL node: its whole NICs (``share``, its NICs
    a host, floored) on each of the node's ``hosts_a_node`` hosts (a multi-node NVLink domain's, an NVL72 rack's
    18 trays), at most 32, NCCL's channels before duplication (:mod:`kernels.nccl`: each NIC a channel,
    c0 <= MAXCHANNELS / 2); under one NIC a host, one channel a host at its part of a NIC (:func:`nic_fraction`,
    the slowest sharer's: a review): min(32, D) x f(share)."""
    channels = nccl.MAX_CHANNELS
    return jnp.where(
        share >= 1.0,
        jnp.minimum(whole_nics(share) * hosts_a_node, channels),
        jnp.minimum(hosts_a_node, channels) * nic_fraction(share),
    )


def ring_load(
    stride: Value, crossing: Value, leaf_hosts: Value, nics_per_node: Value, gpus_per_node: Value
) -> Value:
    """The share f = min(1, min(s, L G) c / (L K)) of a leaf's L K NIC ports' rate that groups ``stride`` (s)
    ranks apart send out of the leaf with a ring or a tree: each of the leaf's min(s, L G) groups crosses the
    leaf's edge once, by the ``crossing`` (c, :func:`channel_nics`) NICs of one NCCL node (module docstring).
    ``leaf_hosts`` 0 (no leaf) is read as 1; :func:`spine_divisor` reads the load only where there is a leaf."""
    leaf = jnp.maximum(leaf_hosts, 1.0)
    return jnp.minimum(jnp.minimum(stride, leaf * gpus_per_node) * crossing / (leaf * nics_per_node), 1.0)


def exchange_load(size: Value, stride: Value, per_node: Value, leaf_gpus: Value) -> Value:
    """The share f = (n - max(m, p)) / (n - p) of an all-to-all's NIC bytes that leave a leaf of ``leaf_gpus``
    (L G) GPUs: a group of ``size`` (n) members ``stride`` (s) ranks apart, m = clip(L G / s, 1, n) of them in
    one leaf, p = ``per_node`` of them in one NCCL node (their bytes to each other cross no NIC); every NIC of
    the leaf sends at once, so this is the share of its NIC ports' rate on the uplinks (module docstring)."""
    in_leaf = jnp.clip(leaf_gpus / jnp.maximum(stride, 1.0), 1.0, size)
    return (size - jnp.maximum(in_leaf, per_node)) / jnp.maximum(size - per_node, 1.0)


def spine_divisor(
    extent: Value, load: Value, gpus_per_node: Value, nvlink_domain: Value, leaf_hosts: Value,
    oversubscription: Value, rail_only: Value,
) -> Value:  # fmt: skip
    """The divisor of a channel's share of the NICs across nodes (:attr:`kernels.nccl.Fabric.spine`) of a group
    whose block of ranks spans ``extent`` GPUs and whose
    collective sends ``load`` (f, :func:`spine_load`) of a leaf's NIC ports' rate out of the leaf:
    max(1, o f) where the block is wider than a leaf's hosts' GPUs (L G, L > 0) and than the NVLink domain (Q)
    and the wiring has a spine (not rail-only), else 1 (:func:`spine_factor`; the data-parallel family's
    all-reduce, whose group is every GPU, :func:`kernels.overlap.nccl_durations`)."""
    spine = (
        (leaf_hosts > 0)
        & (extent > jnp.maximum(leaf_hosts * gpus_per_node, nvlink_domain))
        & ~(rail_only > 0)
    )
    return jnp.where(spine, jnp.maximum(oversubscription * load, 1.0), 1.0)


def nccl_time(coll: int, nbytes: Value, size: Value, stride: Value, lay: Parallelism) -> Value:
    """Seconds of NCCL's collective ``coll`` (:data:`kernels.nccl.COLLECTIVES`) of ``nbytes`` (nccl-tests' count:
    the whole buffer) over a group of ``size`` GPUs ``stride`` ranks apart; 0 for a group of one or no bytes. NCCL's
    algorithm and protocol are its choice by size (``lay.collective`` :data:`NCCL_CHOICE`), or one of them forced
    where ``lay.collective`` is NCCL_CHOICE + i for :data:`kernels.nccl.FORCINGS`' i, as ``NCCL_ALGO`` or ``NCCL_PROTO``
    forces it (a collective that algorithm or protocol cannot run, or a group it is not enabled on, keeps
    NCCL's choice: :func:`kernels.nccl.collective`)."""
    x = jnp.asarray(nbytes)
    constants = nccl.Constants(
        lay.eta_net, lay.eta_nvl, lay.nccl_latency, lay.nccl_op_latency, lay.nccl_fill, lay.nccl_fill_bytes
    )
    algorithm, protocol = nccl.forcing(lay.collective - NCCL_CHOICE)  # below 0 (flat): -1, -1
    # The spine caps each channel's share of the NICs (kernels.nccl._running), not the NIC rate NCCL's search
    # reads: NCCL does not know the spine, so its channels are a 1:1 spine's (the rate divided moved them, and
    # while channels ran at NCCL's speed lists' steps fell on them: 4:1 and 4.2:1 were 2.5x apart, a hunt).
    fabric = group_fabric(size, stride, lay, coll)
    seconds = _collective_seconds((coll, x, fabric, constants, algorithm, protocol))
    return jnp.where((size > 1) & (x > 0), seconds, 0.0)


@dataclasses.dataclass
class _Batch:
    """The NCCL-priced collectives of one trace of a step: while ``seconds`` is None each call is recorded
    (its arguments; a placeholder 0 stands for its time), then the calls take their times from ``seconds`` in
    the order they were recorded (``used`` of them so far)."""

    requests: list[tuple[Any, ...]] = dataclasses.field(default_factory=list)
    seconds: list[Value] | None = None
    used: int = 0


_BATCH: contextvars.ContextVar[_Batch | None] = contextvars.ContextVar("nccl_batch", default=None)


def _collective_seconds(args: tuple[Any, ...]) -> Value:
    """:func:`kernels.nccl.collective`'s seconds for ``args`` (coll, nbytes, fabric, constants), or, inside
    :func:`priced_together`, its placeholder while recording, then its time out of the stacked call."""
    batch = _BATCH.get()
    if batch is None:
        return nccl.collective(*args).seconds
    if batch.seconds is None:
        batch.requests.append(args)
        return jnp.zeros(jnp.broadcast_shapes(*(jnp.shape(v) for v in jax.tree.leaves(args))))
    batch.used += 1
    return batch.seconds[batch.used - 1]


def priced_together(step: Callable[[], dict[str, Value]]) -> dict[str, Value]:
    """``step()`` with every NCCL-priced collective in it priced by one call of :func:`kernels.nccl.collective`
    (the module docstring). ``step`` is traced twice: first to record the calls (that trace's outputs are
    dropped, and XLA removes what only they used), then with their times. A step with no NCCL-priced
    collective (a flat sweep) is traced once."""
    batch = _Batch()
    token = _BATCH.set(batch)
    try:
        first = _traced(step)
        if not batch.requests:
            return first
        batch.seconds = _stacked_seconds(batch.requests)
        out = _traced(step)
        assert batch.used == len(batch.requests), "the two traces of a step made different collectives"
        return out
    finally:
        _BATCH.reset(token)


def _traced(step: Callable[[], dict[str, Value]]) -> dict[str, Value]:
    """``step()`` with a memo of :func:`group_part` of its own (one trace's values are not another's)."""
    token = _PARTS.set({})
    try:
        return step()
    finally:
        _PARTS.reset(token)


def _stacked_seconds(requests: list[tuple[Any, ...]]) -> list[Value]:
    """The seconds of n requests (coll, nbytes, fabric, constants, forced algorithm and protocol), one array each, in their order: the requests of
    each collective run in one loop over them (``lax.map`` of :func:`kernels.nccl.collective` with that
    collective fixed, so that XLA keeps only the algorithms it can run: the whole tuner for an all-reduce, the
    ring, NVLS and PAT for an all-gather or reduce-scatter, none of it for send/recv and all-to-all)."""
    by_collective: dict[int, list[int]] = {}
    for i, request in enumerate(requests):
        by_collective.setdefault(request[0], []).append(i)
    seconds: list[Value] = [jnp.zeros(())] * len(requests)
    for coll, members in by_collective.items():
        looped = _looped_seconds(coll, [requests[i][1:] for i in members])
        for j, i in enumerate(members):
            seconds[i] = looped[j]
    return seconds


def _looped_seconds(coll: int, requests: list[tuple[Any, ...]]) -> Value:
    """The seconds [n, ...] of n requests (nbytes, fabric, constants, forced algorithm and protocol) of collective ``coll``, from one
    :func:`kernels.nccl.collective` run in a loop over them (``lax.map``: one tuner in the compiled program,
    each pass at the requests' shapes): each argument stacked over the requests on a new first axis, each leaf
    broadcast only to that leaf's largest shape among them (right-aligned, as NumPy broadcasts)."""
    columns = list(zip(*(jax.tree.leaves(r) for r in requests)))
    ndim = max(jnp.ndim(v) for column in columns for v in column)
    stacked = []
    for column in columns:
        shape = jnp.broadcast_shapes(*(jnp.shape(v) for v in column))
        shape = (1,) * (ndim - len(shape)) + shape
        stacked.append(jnp.stack([jnp.broadcast_to(jnp.asarray(v), shape) for v in column]))
    args = jax.tree.unflatten(jax.tree.structure(requests[0]), stacked)
    return jax.lax.map(lambda one: nccl.collective(coll, *one).seconds, args)


def group_bandwidth(size: Value, stride: Value, lay: Parallelism, ring: bool = True) -> tuple[Value, Value]:
    """(bytes/s per member, crosses the NVLink domain) of a group of ``size`` GPUs ``stride`` ranks apart: inside
    where its block of ranks is inside every domain it meets (:func:`domain_part`). A ring's (``ring``: an
    all-reduce, reduce-scatter or all-gather) leaves a domain by the NICs of its members in it
    (:func:`_sharing_nics`); a send/recv's (a pipeline's hand-off, a CP ring's step) by the sending GPU's own
    share of its node's NICs, f(K / G) (NCCL's send/recv goes out by the NIC beside the GPU and splits no send
    over its neighbours': a hunt found a CP ring step leaving an 8-GPU host priced at all 8 NICs, CP 64 at
    128k tokens 3.6 times faster than NCCL's pricing)."""
    bw, crosses, _ = _rate(size, stride, lay, ring)
    return bw, crosses


def _rate(size: Value, stride: Value, lay: Parallelism, ring: bool) -> tuple[Value, Value, Value]:
    """:func:`group_bandwidth`'s (bytes/s per member, crosses), and the members whose NICs it takes (q)."""
    inside = (size <= 1) | (
        stride * size <= group_part(size, stride, lay.gpus, lay.gpus_per_node, lay.nvlink_domain)
    )
    sharing = _sharing_nics(size, stride, lay) if ring else 1.0
    # at most NCCL's 32 channels' NICs (:func:`channel_nics`: a review, a ring at stride 1 over NVL72 racks took 72)
    nics = jnp.minimum(lay.nics_per_node * sharing / lay.gpus_per_node, nccl.MAX_CHANNELS)
    nic = lay.bandwidth / 8.0 * lay.utilization * nic_fraction(nics)
    # Across domains the ring also takes NVLink hops between its members in one domain, if there are several.
    across = jnp.where(sharing > 1, jnp.minimum(lay.nvlink_bw, nic), nic)
    return jnp.where(inside, lay.nvlink_bw, across), ~inside, sharing


def _sharing_nics(size: Value, stride: Value, lay: Parallelism) -> Value:
    """q, the members of a group of ``size`` GPUs ``stride`` ranks apart whose nodes' NICs its ring leaves an
    NVLink domain by (1 to ``size``): those on one node, or where a domain holds several nodes those in its part
    of one (:func:`group_part`'s Q_b; GB200 NVL72's trays of 4 in racks of 72), whose ring hops between nodes
    are NVLink's (a hunt: a DP ring over 8 racks was priced as leaving every tray, 3.9 times NCCL's step): its
    whole members, floor(Q_b / stride), where the domain's part of the group holds more than a node's G / stride,
    the fewest of any domain paces the ring (a review: 7.5 of a DP group of 30 at stride 8 over 60-GPU racks
    alternate 8 and 7). A group whose block spans a job :func:`job_domain` does not place evenly over domains of
    whole nodes (100 GB200s on 72-GPU racks: 25 trays, 13 and 12) is priced at the job's fewest whole nodes a
    domain, floor(gpus / ceil(gpus / Q) / G) G (48 GPUs; a review: priced as full racks, and before, as leaving
    every tray: 183 s a step where NCCL's pricing gives 15.2 s); a block of part of such a job, whose parts in a
    domain its edges set (a DP block of stage 0 of 200 GB200s, 68 and 32 GPUs), keeps its node's (a review:
    the job's fewest, 64, had priced 200 GPUs faster than 192; NCCL's pricing takes the job's share there)."""
    part = group_part(size, stride, lay.gpus, lay.gpus_per_node, lay.nvlink_domain)
    share, laid = _placement(lay.gpus, lay.gpus_per_node, lay.nvlink_domain)
    fewest = jnp.floor(share / lay.gpus_per_node) * lay.gpus_per_node
    spans = (
        jnp.maximum(stride, 1.0) * jnp.maximum(size, 2.0) >= lay.gpus
    )  # the group's block is the whole job
    nodes_whole = (
        (jnp.mod(lay.nvlink_domain, lay.gpus_per_node) == 0) & (lay.gpus > lay.nvlink_domain) & spans
    )
    per = jnp.maximum(stride, 1.0)
    in_domain = jnp.floor(jnp.where(laid, part, jnp.where(nodes_whole, fewest, 0.0)) / per)
    return jnp.clip(jnp.maximum(lay.gpus_per_node / per, in_domain), 1.0, jnp.maximum(size, 1.0))


def nic_share(size: Value, stride: Value, lay: Parallelism, ring: bool = True) -> Value:
    """The share of a group's traffic time that its NICs add, which NICs of unbounded rate (the ideal network)
    take away: 0 inside the NVLink domain; across it 1 where each member is the group's only one on its node
    (every byte crosses a NIC; of one domain, where a domain holds several nodes: :func:`_sharing_nics`), else

        1 - b / b_nvl,    b = min(b_nvl, b_nic)  (:func:`group_bandwidth`'s rate across domains)

    (the ring's NVLink hops between a domain's members carry every byte at b_nvl on any network). A review of the
    plan's table: TP 16 over two 8-GPU nodes, 8 NICs of 400 Gbit/s a node (b 368 GB/s against NVLink's 450),
    was "27% on NICs" beside a network that cost 6% of the step, and 22% at 10^6 Gbit/s."""
    bw, crosses, sharing = _rate(size, stride, lay, ring)
    return jnp.where(crosses, jnp.where(sharing > 1, 1.0 - bw / lay.nvlink_bw, 1.0), 0.0)


def nic_per_gpu(lay: Parallelism) -> Value:
    """Bytes/s of one GPU's share of its node's NICs, when every GPU of the node sends at once (the slowest's, under
    one NIC a GPU: :func:`nic_fraction`)."""
    return lay.bandwidth / 8.0 * lay.utilization * nic_fraction(lay.nics_per_node / lay.gpus_per_node)


def _steps_latency(steps: Value, crosses: Value, lay: Parallelism) -> Value:
    return jnp.where(crosses, steps * lay.latency, 0.0)


def all_reduce(
    nbytes: Value, size: Value, stride: Value, lay: Parallelism, ring_only: Value = False
) -> Value:
    """Seconds for each of ``size`` GPUs to all-reduce ``nbytes`` (ring, tree or the cheaper: ``collective``;
    a ring where ``ring_only``; NCCL's where ``lay.collectives`` is nccl)."""
    return priced(
        lay,
        lambda: jnp.where(
            ring_only,
            nccl_time(nccl.REDUCE_SCATTER, nbytes, size, stride, lay)
            + nccl_time(nccl.ALL_GATHER, nbytes, size, stride, lay),
            nccl_time(nccl.ALL_REDUCE, nbytes, size, stride, lay),
        ),
        lambda: _flat_all_reduce(nbytes, size, stride, lay, ring_only),
    )


def _flat_all_reduce(nbytes: Value, size: Value, stride: Value, lay: Parallelism, ring_only: Value) -> Value:
    bw, crosses = group_bandwidth(size, stride, lay)
    n = jnp.maximum(size, 1.0)
    ring = 2.0 * (n - 1.0) / n * nbytes / bw + _steps_latency(2.0 * (n - 1.0), crosses, lay)
    tree = 2.0 * nbytes / bw + _steps_latency(2.0 * jnp.ceil(jnp.log2(n)), crosses, lay)
    chosen = jnp.where(
        lay.collective == 0, ring, jnp.where(lay.collective == 1, tree, jnp.minimum(ring, tree))
    )
    return jnp.where((n > 1) & (nbytes > 0), jnp.where(ring_only, ring, chosen), 0.0)


def scatter_or_gather(nbytes: Value, size: Value, stride: Value, lay: Parallelism) -> Value:
    """Seconds for a reduce-scatter or all-gather of a ``nbytes`` buffer (ring; NCCL's all-gather where
    ``lay.collectives`` is nccl: its reduce-scatter is priced the same)."""

    def flat() -> Value:
        bw, crosses = group_bandwidth(size, stride, lay)
        n = jnp.maximum(size, 1.0)
        return jnp.where(
            (n > 1) & (nbytes > 0), (n - 1.0) / n * nbytes / bw + _steps_latency(n - 1.0, crosses, lay), 0.0
        )

    return priced(lay, lambda: nccl_time(nccl.ALL_GATHER, nbytes, size, stride, lay), flat)


def exchange(nbytes: Value, size: Value, stride: Value, lay: Parallelism) -> Value:
    """Seconds for one member of a group of ``size`` GPUs ``stride`` ranks apart to send ``nbytes`` to the next
    (a ring attention step, a pipeline stage's hand-off): the group's bandwidth plus lambda where it leaves the
    domain, or NCCL's send/recv on the group's fabric."""

    def flat() -> Value:
        bw, crosses = group_bandwidth(size, stride, lay, ring=False)
        return nbytes / bw + jnp.where(crosses, lay.latency, 0.0)

    return priced(lay, lambda: nccl_time(nccl.SENDRECV, nbytes, size, stride, lay), flat)
