"""One collective as NCCL runs it: its algorithm, protocol and time, elementwise over arrays.

The model is NCCL's own tuner, read from NVIDIA/nccl@5067397c2676d5aed50042fc39e5c8ee96eb0027
(``src/graph/tuning.cc``: ``ncclTopoTuneModel`` and ``ncclTopoGetAlgoTime``; the channel search it
reads, ``src/graph/search.cc``; constants in ``src/graph/topo.h``, ``src/include/device.h``,
``src/transport/nvls.cc``), written here as equations (no code is copied), plus a transport
efficiency and the collectives the tuner does not price (all-to-all, send/recv).

Notation (every input an array; all broadcast together; float32 or float64 as ``nbytes``):

    X       the message, bytes, as nccl-tests counts it (the whole buffer; all-gather: the output)
    g, H    GPUs per host, hosts;  D hosts per NVLink domain (1: the host; 18: a GB300 NVL72 rack)
    N       NCCL's nodes: NVLink domains spanned, ceil(H / D) (a multi-node NVLink domain is one
            node to NCCL, MNNVL);  p = g H / N ranks per node;  n = g H ranks
    W       NVLink per GPU as NCCL counts it, GB/s: links x NCCL's per-link rate (topo.h: 20 GB/s
            Volta/Ampere, 20.6 Hopper, 40.1 Blackwell), :func:`nvlink_gbs` from a datasheet's rate;
            0: no NVLink (PCIe, NCCL's PCI_BW 12 GB/s)
    K, r    NICs per host and each one's rate, GB/s (Gbit/s / 8), as NCCL sees them: a host of more NICs
            than GPUs as one device a GPU, K = g at r K / g (AWS's plugin groups them, below);  a: 0 Volta, 1 Ampere, 2 Hopper,
            3 Blackwell;  S: NVSwitch (NVLS possible from Hopper on);  C: in-network reduction
            (SHARP, NCCL's CollNet) enabled
    eta_net, eta_nvl, lambda   the fabric's constants: the fraction of NCCL's model bandwidth a
            transport delivers across nodes and inside one, and the network's latency (us), which
            enters where NCCL adds its graph's ``latencyInter`` (twice for Simple: the flush)
    o, f, X_f  the fabric's constants for what the tuner leaves out (below): a collective's fixed cost
            inside one NCCL node (us), the pipeline's whole fill across nodes (us), and the message
            (bytes) from which the fill is whole

Channels (search.cc, simplified: the search's first pass at each speed, its duplication, and the
second pass only as noted). A speed is the largest entry <= the limit of NCCL's per-architecture list
(intra-node lists when N = 1, inter-node lists otherwise; where none fits, the limit itself: NCCL's
search would fall to its slowest entry, 0.12 GB/s across nodes, which a slower NIC cannot carry); a limit
within 1e-5 below an entry takes it, and so does a count's floor below an integer (SNAP: float32's rounding):

    ring, tree   N = 1:  s = speed(W),  c0 = floor(W / s)
                 N > 1:  s = speed(min(r, W)),  c0 = floor(K H / N) floor(r / s)   (each NIC a channel)
                 (K H / N the NICs of one NCCL node: a host's K where a node is a host, a whole NVL72
                 rack's where it is a multi-node NVLink domain, whose ranks NCCL fuses into one system
                 and whose every NIC its ring search may enter by: topo.cc ncclTopoGetSystem,
                 search.cc ncclTopoSearchRecNet, at the commit above; NVIDIA/nccl#1801 measured a ring
                 across NVLink partitions of one tray and of two at 196.7 and 393.7 GB/s)
                 c0 <= 32 (MAXCHANNELS / 2, 64 / 2); duplicated unless s < 25 or (a >= 2, s < 50, c0 > 4):
                 c = min(2 c0, 32), s = s / ceil(c / c0);  across nodes with p > 1 every channel also
                 crosses the node's NVLink once (GPU to GPU) and the search charges each link the speed
                 of every channel it carries: s = min(s, W / c);  the tree on two nodes (N = 2) runs at
                 s_t = max(s, speed(min(2 s, W / c))) (its second pass), elsewhere s_t = s
    NVLS         (a >= 2, S, p >= 2) c_n = min(32, p) heads inside one node; across nodes one head a NIC of
                 the NCCL node, each on its own GPU, c_n = min(32, p, K_n) (ncclTopoSearchRecNet adds a head only
                 while nChannels < netCount; tuning.cc skips NVLS and NVLSTree on a graph of fewer than 2
                 channels: a host of one NIC runs neither across hosts);  s_n = speed(W / (c_n + 1)) (the search
                 charges every GPU's NVLink each channel's speed, and a head's twice: c_n + 1 channels'
                 worth on the link of a GPU that heads one);  across nodes the heads' NICs:
                 s_x = speed(min(K H / N r / c_n, 2 s_n)) (the second pass raises it up to twice s_n);
                 across nodes NCCL's search also starts s_n no higher than the GPU's path to its NIC
                 (search.cc system->maxBw), which the model leaves out: the NVLink side runs at its NVLink
                 and the heads' NICs are priced apart, B_net below (with the cap two DGX B200 hosts' 1 GiB
                 all-reduce would take 4.12 ms, not 2.75, at efficiencies 1; no published row moves);
                 inside one node s_x is left unbounded, where NCCL's second pass raises bwInter only to its
                 intra-node list's top (60 GB/s on Hopper, 90 on Blackwell) and its tuner takes the lesser: on
                 Hopper W / (c_n + 1) is under 60 and nothing changes; on Blackwell the cap would price one
                 B200 host's 1 GiB all-reduce 15% slower, where the measured GB300 rows of ../shared's
                 nccl_tests.csv (about 838 GB/s busbw on 2 x 4 GPUs) run above the capped 720 GB/s
    CollNet      direct: c_d = min(8, p, K_n) heads (one a NIC, as NVLS's) at s_d = speed(min(r, W / c_d)),
                 duplicated as the ring's up to min(8, p) channels;
                 chain: the ring's

The search's speeds set the channels; across nodes (N > 1) the channels then run,
and are priced, at their share of the NICs' rate, not at the list's step (a 40 Gbit/s NIC, 5 GB/s, runs at 5,
not at the step of 3 below it, which priced 25 and 40 Gbit/s alike and 48 at half of it):

    s_run = max(s, min(r K_n / max(c, K_n), W / c [p > 1] or W [p = 1]))   each channel its share of the
                K_n = max(floor(K H / N), 1) NICs of an NCCL node, within its link inside the node
    s_t run = max(s_t, s_run, min(2 s_run, W / c)) on two nodes (the second pass's bound), else max(s_t, s_run)
    s_x run = max(s_x, min(K H / N r / c_n, 2 s_n));  s_d run = max(s_d, min(r K_n / max(c_d, K_n), W / c_d))

then, with a spine in the way (``Fabric.spine`` O_s > 1), each at most the larger of its NICs' share and NCCL's
step over O_s (:func:`_running`); and the bus bandwidths below read these (inside one node NCCL's speeds:
NVLink's list, which eta_nvl covers).
NCCL's own tuner reads the steps, so near a switch between protocols its choice may differ from the one priced
here (not modelled: the step then stays monotone in the NICs' rate, which `sweep need`'s bisection rests on).

Bus bandwidth per (algorithm, protocol), GB/s (LL, LL128, Simple; ll = NCCL's llMaxBws, taken for
an x86 Intel host across nodes; mR, mT, mT128, mNT the per-channel maxima of the rows a, N):

    ring      B = c s;  LL: min(ll, B / 2);  LL128: min(0.92 B, c mR);  Simple: B
    tree      (all-reduce) B = min(0.92 c s_t, c mT);  LL: min(B / 3.8, ll);
              LL128: min(B (7/9 if N = 1 else 120/128), c mT128);  Simple: B
    NVLS      (Simple) b_i = s_n e_a (c_n - 1) / c_n x (2 for all-reduce, (p - 1) / p otherwise),
              e_a = 0.85 Hopper, 0.74 Blackwell;  B = c_n min(b_i, s_x);  across nodes only with C;
              all-gather and reduce-scatter only for p <= 32 (enqueue.cc: NCCL_MAX_NVLS_ARITY) and inside one
              node (across nodes NCCL needs the CollNet plugin's own all-gather and one NIC a GPU: not stated)
    NVLSTree  (all-reduce, N > 1, Simple) B = c_n min(b_i, s_x (2 if N <= 2), mNT)
    CollNet   (all-reduce, N > 1, S and C, p <= 8 (enqueue.cc: NCCL_MAX_DIRECT_ARITY + 1), Simple) direct:
              B = c_d s_d / f_d (x 0.85 from Hopper), f_d = p / c_d - (p / c_d - 1) / 2;  chain: B = c s
    PAT       (all-gather, reduce-scatter, p = 1, Simple) B = 0.75 c s

and the algorithm bandwidth A: ring, NVLS and NVLSTree A = B n / steps (steps 2 (n - 1) for all-reduce,
n - 1 for all-gather and reduce-scatter), tree and CollNet A = B / 2; all-gather and reduce-scatter
over NVLS, CollNet or PAT A = B. Latency, us (base[alg][proto] + hops; hw[link][alg][proto] NCCL's
table, link NVLink or PCI inside a node, NET across; l_i = hw[intra], l_x = hw[NET] (tree's where
p = 1) + lambda (+ lambda again for Simple)):

    ring      base + (steps - s_x) max(l_i, o_s) + s_x l_x,  s_x = 2 (N - 1) all-reduce, N - 1 others,
              o_s = 1 us (x 3 Simple) across nodes;  x 1.4 (1.9 Volta) for a Simple all-reduce across
              nodes once X / (c n) >= 64 B (the ring's plateau)
    tree      base + 2 ((p - 1) l_i + floor(log2 N) l_x)
    NVLS      l_i (+ l_x across nodes);  NVLSTree  l_i + 2 floor(log2 N) l_x
    CollNet   direct: 2 (min(1, p - 1) l_i + 0.4 (p - 1)) + l_x;  chain: 2 (p - 1) l_i + l_x
    PAT       8 + floor(log2 N) l_x / 3.5 + 2.8 n

The tree's bandwidth is scaled by NCCL's correction for medium sizes, by floor(log2(X / 64)) in 0..22.
NCCL's choice is the (algorithm, protocol) of least  T = lat + X / (1000 A)  (us) among those
enabled (LL128 taken as enabled, as NCCL does on NVLink systems; without NVLink between a node's GPUs,
W = 0 with p > 1, NCCL turns it off, not modelled: every GPU preset has NVLink); ``algorithm`` /
``protocol`` >= 0 restrict it (NCCL_ALGO / NCCL_PROTO), and a restriction nothing satisfies falls back to NCCL's
choice. The time that runs is that choice's at the transport's efficiency:

    t = lat + X / (1000 A eta) + u,  eta = eta_net if N > 1 else eta_nvl      (us; returned in seconds)

but for NVLS and NVLSTree across NVLink domains (N > 1), whose bus bandwidth is the least of an NVLink side,
B_nvl = c_n b_i, and a network side, B_net = c_n s_x (NVLS) or c_n min(s_x (2 if N <= 2), mNT) (NVLSTree): each
side runs at its own efficiency and the slower one sets the time,

    t = lat + X / (1000 A) max(B / (B_net eta_net), B / (B_nvl eta_nvl)) + u,   B = min(B_nvl, B_net)

(the rule above where one side binds by more than the efficiencies' ratio: X / (1000 A eta_net) where
B_net eta_net <= B_nvl eta_nvl). Two GB200 NVL72 racks had been priced faster than one: eta_net, fitted on
InfiniBand hosts, applied where the racks' NVLink binds (validation.md, CoreWeave's racks).

where u is what nccl-tests times and NCCL's tuner leaves out (NCCL does not see it when it chooses): inside one
NCCL node a fixed cost per operation, u = o (launching and completing it); across nodes the pipeline's fill,
u = f min(1, X / max(X_f, 1 B)): NCCL cuts a message into chunks that grow with it up to a largest size (enqueue.cc,
``calcCollChunking``), and the first chunk crosses the pipeline's stages before the links run in step, so the
fill grows with X until the chunks are whole (from X_f on) and is f from there. o, f and X_f are the fabric's
constants as eta and lambda are (the defaults o = f = 0 leave u out). Every collective below adds u too.

Not NCCL's tuner (it prices neither), this model's own, with the tuner's ring constants: LL's base latency, 6.6
us, and Simple's hop latencies l (NCCL picks LL for a peer's bytes up to 16 KiB a channel and Simple above;
the label says Simple throughout):

    send/recv   t = 6.6 + l + X / (1000 w eta)           w = W inside a domain (N = 1), K r / (g O_s) across
    all-to-all  t = 6.6 + l_i [p_x > 1] + l_x [N > 1]
                  + max(X (p_x - 1) / n / (W eta_nvl), X (n - p) / n / (K r / (g O_s) eta_net)) / 1000

so an all-to-all that leaves its NVLink domain sends (n - p) / n of its bytes over the hosts' NICs:
the GB300 NVL72 rack edge. p_x (``Fabric.peers``; p unless given) is the most of the group's ranks in one
node, p the fewest: a group whose blocks of ranks cross a domain's edge (EP 32 on 72-GPU racks: 8 and 24) has
members on the larger side sending (p_x - 1) / n over NVLink while the smaller side's send (n - p) / n over
their NICs, and the slower paces them all.

Not modelled (NCCL does them; each a later refinement): the search's timeouts and its second pass for rings
(speeds raised after duplication), the 0.85 of an unbalanced tree pattern, the NVLSTree size correction on
Blackwell x86 hosts, AMD hosts' LL rows, PXN and GPU-NIC path types (LL128 is taken as enabled), and user
tuning (NCCL_MIN_CTAS, QPs per connection, NCCL_NCHANNELS). Two things NCCL reads from the machine are the
caller's to give: K is the NICs the ranks reach (NCCL takes NICs near each rank's GPU: fewer than the host's
where fewer GPUs than the host's hold ranks), and a net plugin's reported latency is part of lambda (NCCL adds
it to ``latencyInter``, as lambda enters here): ``sweep.model.nccl_fabric`` gives both from a measured row.
"""

import functools
import operator
from typing import Any, NamedTuple

import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

Array = jnp.ndarray

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "sendrecv")
ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, ALLTOALL, SENDRECV = range(5)
ALGORITHMS = ("tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat", "p2p")
TREE, RING, COLLNET_DIRECT, COLLNET_CHAIN, NVLS, NVLS_TREE, PAT, P2P = range(8)
PROTOCOLS = ("ll", "ll128", "simple")
LL, LL128, SIMPLE = range(3)
# What a user may force, by index: 0 nothing (NCCL's choice), 1 + a the algorithm a (NCCL_ALGO; every one of
# ALGORITHMS but send/recv's p2p, which nothing forces), then 1 + P2P + p the protocol p (NCCL_PROTO).
FORCINGS = (None, *ALGORITHMS[:P2P], *PROTOCOLS)


def forcing(index: ArrayLike) -> tuple[Array, Array]:
    """The (algorithm, protocol) a forcing of :data:`FORCINGS`' ``index`` restricts NCCL's choice to, each -1
    where free: 0 neither, 1 + a the algorithm a, 1 + P2P + p the protocol p (elementwise)."""
    i = jnp.asarray(index)
    algorithm = jnp.where((i >= 1) & (i <= P2P), i - 1, -1)
    protocol = jnp.where(i > P2P, i - 1 - P2P, -1)
    return algorithm, protocol


ARCHS = ("volta", "ampere", "hopper", "blackwell")

# NCCL's per-link NVLink rate (topo.h SM70/SM80/SM90/SM100_NVLINK_BW), GB/s, by architecture.
NVLINK_LINK = (20.0, 20.0, 20.6, 40.1)
# A link's datasheet rate, one direction, GB/s (NVLink 2, 3, 4: 25; NVLink 5: 50).
NVLINK_DATASHEET = (25.0, 25.0, 25.0, 50.0)
PCI_BW = 12.0

# tuning.cc's tables: [algorithm][protocol] base latencies (us) and per-hop latencies per link kind.
BASE_LAT = (
    (6.8, 14.0, 8.4),
    (6.6, 14.0, 8.4),
    (0.0, 0.0, 0.0),
    (0.0, 0.0, 0.0),
    (0.0, 0.0, 0.0),
    (0.0, 0.0, 0.0),
    (8.0, 8.0, 8.0),
)
HW_NVLINK = (
    (0.6, 1.25, 4.0),
    (0.6, 1.9, 3.4),
    (0.0, 0.0, 3.7),
    (0.0, 0.0, 2.8),
    (0.0, 0.0, 25.0),
    (0.0, 0.0, 25.0),
    (0.0, 0.0, 4.0),
)
HW_PCI = (
    (1.0, 1.9, 4.0),
    (1.0, 2.5, 5.7),
    (0.0, 0.0, 3.7),
    (0.0, 0.0, 2.8),
    (0.0, 0.0, 0.0),
    (0.0, 0.0, 0.0),
    (0.0, 0.0, 4.0),
)
HW_NET = (
    (5.0, 8.5, 14.0),
    (2.7, 4.0, 14.0),
    (0.0, 0.0, 31.0),
    (0.0, 0.0, 30.0),
    (0.0, 0.0, 18.0),
    (0.0, 0.0, 20.9),
    (0.0, 0.0, 14.0),
)
# [architecture][N - 1 (1, 2, >2 nodes)]; llMaxBws: one node by architecture, across nodes an Intel host's row.
LL_MAX_ONE_NODE = (39.0, 87.7, 141.0, 282.0)
LL_MAX_INTEL = (39.0, 39.0, 20.4)
PER_CH_RING_LL128 = ((20.0,) * 3, (20.0,) * 3, (36.7,) * 3, (40.0,) * 3)
PER_CH_TREE_LL128 = ((20.0,) * 3, (20.0,) * 3, (36.7, 36.7, 29.0), (55.6, 31.67, 20.0))
PER_CH_TREE = ((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (38.7, 41.4, 36.0), (70.0, 42.8, 24.0))
PER_CH_NVLS_TREE = ((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (0.0, 57.7, 45.5), (0.0, 96.0, 80.0))
NVLS_EFFICIENCY = (0.0, 0.0, 0.85, 0.74)
# The tree's correction by floor(log2(X / 64)), 0..23, per protocol.
TREE_CORRECTION = (
    (
        1.0,
        1.0,
        1.0,
        1.0,
        0.9,
        0.8,
        0.7,
        0.7,
        0.7,
        0.7,
        0.6,
        0.5,
        0.4,
        0.4,
        0.5,
        0.6,
        0.7,
        0.8,
        0.9,
        1.0,
        1.0,
        1.0,
        1.0,
        1.0,
    ),
    (
        1.0,
        1.0,
        1.0,
        1.0,
        1.0,
        0.9,
        0.8,
        0.8,
        0.8,
        0.7,
        0.6,
        0.6,
        0.6,
        0.6,
        0.6,
        0.6,
        0.8,
        0.9,
        0.9,
        0.9,
        0.9,
        1.0,
        1.0,
        1.0,
    ),
    (
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
    ),
)
# search.cc's speed lists (GB/s per channel), [architecture][intra, inter].
_INTRA_OLD = (40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0)
_INTER_OLD = (
    48.0,
    30.0,
    28.0,
    24.0,
    20.0,
    18.0,
    15.0,
    12.0,
    10.0,
    9.0,
    7.0,
    6.0,
    5.0,
    4.0,
    3.0,
    2.4,
    1.2,
    0.24,
    0.12,
)
_INTRA_90 = (60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0)
_INTER_90 = (48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12)
_INTRA_100 = (90.0, 80.0, 70.0, 60.0, 50.0, 45.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0)
_INTER_100 = (96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0) + (
    20.0,
    17.5,
    15.0,
    12.0,
    6.0,
    3.0,
    2.4,
    1.2,
    0.24,
    0.12,
)
SPEEDS = (
    (_INTRA_OLD, _INTER_OLD),
    (_INTRA_OLD, _INTER_OLD),
    (_INTRA_90, _INTER_90),
    (_INTRA_100, _INTER_100),
)
# A link's rate within this fraction below a speed entry (or a channel count's integer) takes it: a rate a user
# types as the entry (10 Gbit/s x 0.96 = 1.2 GB/s) lands a rounding below it in float32, which would halve the
# channel's speed or count there (the next entry down) and part the two dtypes by 2x.
SNAP = 1e-5
# A ring graph's channels, found and after duplication: init.cc's ringGraph->maxChannels, MAXCHANNELS / 2 (64 / 2
# from NCCL 2.25; its search had been capped at 16, the half of 32 before it: an audit against the source).
MAX_CHANNELS = 32
MAX_NVLS_ARITY = 32
MAX_DIRECT_ARITY = 8  # CollNet direct's heads, NCCL_MAX_DIRECT_ARITY (7) + 1: and its ranks a node at most
NET_OVERHEAD = 1.0  # us per inter-node ring step's post, an Intel host (x 3 for Simple)


def nvlink_gbs(datasheet_bytes_s: ArrayLike, arch: ArrayLike) -> Array:
    """NVLink per GPU as NCCL counts it (GB/s) from the datasheet's rate per GPU, one direction (bytes/s):
    the datasheet's links times NCCL's per-link rate."""
    arch = jnp.asarray(arch)
    links = jnp.asarray(datasheet_bytes_s) / 1e9 / jnp.asarray(NVLINK_DATASHEET)[arch]
    return links * jnp.asarray(NVLINK_LINK)[arch]


class Fabric(NamedTuple):
    """A group placed on a fabric (arrays, broadcastable; units in the module's notation).

    Attributes:
      gpus_per_node: g;  nodes: H hosts;  domain: D hosts per NVLink domain (>= 1).
      nvlink: W, GB/s as NCCL counts it (:func:`nvlink_gbs`; 0: PCIe only).
      nics: K per host;  nic_gbs: r, GB/s each.
      arch: 0 Volta, 1 Ampere, 2 Hopper, 3 Blackwell (int).
      nvswitch: S (bool);  collnet: C, in-network reduction enabled (bool).
      spine: O_s >= 1, the divisor of the NICs' rate what crosses nodes gets, which NCCL's search does not
        read: the spine's (1: no spine in its way; :func:`kernels.layout_collectives.spine_divisor`) over the
        transport's utilization u (r is the NICs' nominal rate, as NCCL's search reads it; for send/recv and
        all-to-all, which no search reads, the layout family may set it so that K r / g is each GPU's own part
        of the NICs, above the nominal rate: :func:`kernels.layout_collectives.group_fabric`): each channel
        across nodes runs at most at its share of the NICs over O_s (:func:`_running`), send/recv and
        all-to-all at K r / (g O_s).
      peers: p_x, an all-to-all's most ranks in one node, its NVLink side's (0: p, the ranks a node): a group
        whose blocks of ranks cross a domain's edge has more on the larger side than the fewest that set its
        NODES (:func:`kernels.layout_collectives.group_fabric`).
    """

    gpus_per_node: ArrayLike
    nodes: ArrayLike
    domain: ArrayLike
    nvlink: ArrayLike
    nics: ArrayLike
    nic_gbs: ArrayLike
    arch: ArrayLike
    nvswitch: ArrayLike
    collnet: ArrayLike
    spine: ArrayLike = 1.0
    peers: ArrayLike = 0.0


class Constants(NamedTuple):
    """The fabric's fitted constants: eta_net, eta_nvl (fractions), lambda (us), and the costs NCCL's tuner
    leaves out: o (``op_latency``, us), f (``fill``, us) and X_f (``fill_bytes``, bytes). The defaults (0, 0)
    leave them out too, as fabric files of version 1 did."""

    eta_net: ArrayLike
    eta_nvl: ArrayLike
    latency: ArrayLike
    op_latency: ArrayLike = 0.0
    fill: ArrayLike = 0.0
    fill_bytes: ArrayLike = 1.0


class Timing(NamedTuple):
    """One collective: seconds, and the algorithm and protocol that ran (indices of :data:`ALGORITHMS`,
    :data:`PROTOCOLS`), each of the inputs' broadcast shape."""

    seconds: Array
    algorithm: Array
    protocol: Array


def _speed_list(arch: Array, inter: Array, dt: jnp.dtype) -> tuple[Array, ...]:
    """NCCL's speed list (GB/s per channel) for each configuration's ``arch`` (its inter-node list where
    ``inter``), ascending, as one array per position, each list padded at its start with its smallest entry to
    the longest list's length: a select between the lists' entries at each position, made once for the five
    look-ups of a collective's channel search (:func:`_speed`). Architectures past the table read the first's."""
    inter = jnp.asarray(inter).astype(bool)
    width = max(len(entries) for pair in SPEEDS for entries in pair)

    def padded(entries: tuple[float, ...]) -> list[float]:
        ascending = sorted(entries)
        return [ascending[0]] * (width - len(ascending)) + ascending

    (intra0, inter0), *others = [(padded(lo), padded(hi)) for lo, hi in SPEEDS]
    columns = []
    for k in range(width):
        column = jnp.where(inter, jnp.asarray(inter0[k], dt), jnp.asarray(intra0[k], dt))
        for a, (intra_a, inter_a) in enumerate(others, start=1):
            if (intra_a[k], inter_a[k]) != (intra0[k], inter0[k]):  # else the first's entry stands
                here = jnp.where(inter, jnp.asarray(inter_a[k], dt), jnp.asarray(intra_a[k], dt))
                column = jnp.where(arch == a, here, column)
        columns.append(column)
    return tuple(columns)


def _speed(speed_list: tuple[Array, ...], limit: Array) -> Array:
    """The largest entry <= ``limit`` (1 + :data:`SNAP`) of each configuration's speed list (:func:`_speed_list`), the
    limit itself where none fits (a link slower than NCCL's slowest speed, 0.12 GB/s across nodes: NCCL's search
    would take that speed, which such a link cannot carry, so the model keeps the link's): the list walked in
    ascending order with one comparison and one select per entry (the entry itself where it fits), elementwise work
    XLA fuses into one loop. Gathering each configuration's row of a padded table took 80 times as long on the CPU
    (39 ms against 0.5 ms for 2^18 float32 values, 2026-12-04), and NCCL's channel search reads the list five times
    a collective. The answer is one of the list's entries, exactly, or the limit below the smallest."""
    reach = limit * (1 + SNAP)  # a limit a rounding below an entry takes it (:data:`SNAP`)
    best = jnp.where(reach >= speed_list[0], speed_list[0], limit)
    for entry in speed_list[1:]:
        best = jnp.where(reach >= entry, entry, best)
    return best


def _floor(x: Array) -> Array:
    """floor(x), x a rounding below an integer taken as it (:data:`SNAP`): channels a link carries."""
    return jnp.floor(x * (1 + SNAP))


def _log2i(x: Array) -> Array:
    """floor(log2(x)) for x >= 1, exact at powers of two (frexp's exponent, not a rounded log)."""
    return (jnp.frexp(jnp.maximum(x, 1.0))[1] - 1).astype(x.dtype)


def _entry(table: Any, dt: jnp.dtype, *index: Array) -> Array:
    """``table[index]`` of one of NCCL's small constant tables (nested tuples), for indices of any shape: a
    select between the table's entries, as a gather would give them (indices clipped to the table), where a
    gather of each configuration's entry was the slower on the CPU."""
    entries = np.asarray(table, np.float64)
    index = tuple(jnp.clip(jnp.asarray(i), 0, size - 1) for i, size in zip(index, entries.shape))
    value = jnp.full(jnp.broadcast_shapes(*(jnp.shape(i) for i in index)), entries.flat[0], dt)
    for position in np.ndindex(entries.shape):
        if any(position):
            here = functools.reduce(operator.and_, (i == k for i, k in zip(index, position)))
            value = jnp.where(here, jnp.asarray(entries[position], dt), value)
    return value


class _Group(NamedTuple):
    """One collective's inputs in the model's dtype and notation (module docstring), with the quantities every
    stage reads: N nodes, n ranks, p ranks per node, whether it spans nodes, its row ``i2`` of NCCL's
    per-node-count tables (min(N, 3) - 1), which collective family it is, K_n, an NCCL node's whole NICs, and
    their rate R_n (GB/s)."""

    x: Array
    dt: jnp.dtype
    shape: tuple[int, ...]
    coll: Array
    arch: Array
    g: Array
    hosts: Array
    nics: Array
    r: Array
    nvswitch: Array
    collnet: Array
    has_nvl: Array
    w: Array
    eta_net: Array
    eta_nvl: Array
    lam: Array
    nodes: Array
    n: Array
    p: Array
    multi: Array
    i2: Array
    ar: Array
    agrs: Array
    node_nics: Array
    node_net: Array
    spine: Array
    p_x: Array

    def bc(self, v: Array) -> Array:
        """``v`` broadcast to the inputs' shape, in the model's dtype."""
        return jnp.broadcast_to(v, self.shape).astype(self.dt)


def _group(
    coll: ArrayLike,
    nbytes: ArrayLike,
    fabric: Fabric,
    constants: Constants,
    algorithm: ArrayLike,
    protocol: ArrayLike,
) -> _Group:
    """The inputs as :class:`_Group`: X in its own float dtype (float32 for integer bytes), W the NVLink's
    rate (PCI_BW without NVLink), D >= 1, N = ceil(H / D), n = g H, p = n / N."""
    x = jnp.asarray(nbytes)
    dt = x.dtype if jnp.issubdtype(x.dtype, jnp.floating) else jnp.float32
    x = x.astype(dt)

    def f(v: ArrayLike) -> Array:
        return jnp.asarray(v, dt)

    coll = jnp.asarray(coll, jnp.int32)
    arch = jnp.asarray(fabric.arch, jnp.int32)
    g, hosts, dom = f(fabric.gpus_per_node), f(fabric.nodes), jnp.maximum(f(fabric.domain), 1.0)
    nics, r = f(fabric.nics), f(fabric.nic_gbs)
    # A host of more NICs than GPUs is one network device a GPU to NCCL, its NICs' rates summed: AWS's plugin
    # groups the NICs beside each GPU and reports their summed speed (aws/aws-ofi-nccl@2daf7d30
    # src/nccl_ofi_topo.cpp create_groups_from_info_list, src/nccl_ofi_rdma.cpp ``port_speed *= max_group_size``;
    # a p5's 32 x 100 Gbit/s EFA NICs are 8 devices of 400). The same bytes leave the host; NCCL's channels, NVLS
    # heads and their speeds follow the devices (an InfiniBand host of more NICs than GPUs, which no preset has,
    # is grouped so too: an assumption).
    grouped = nics > g
    r = jnp.where(grouped, r * nics / jnp.where(grouped, g, 1.0), r)
    nics = jnp.where(grouped, g, nics)
    nvswitch = jnp.asarray(fabric.nvswitch, bool)
    collnet = jnp.asarray(fabric.collnet, bool)
    has_nvl = f(fabric.nvlink) > 0
    w = jnp.where(has_nvl, f(fabric.nvlink), PCI_BW)
    eta_net, eta_nvl, lam = f(constants.eta_net), f(constants.eta_nvl), f(constants.latency)
    spine = jnp.maximum(f(fabric.spine), 1.0)  # none below 1: a spine never adds to what the NICs carry
    peers = f(fabric.peers)  # the all-to-all's NVLink side, in the shape too (a review: a wider one failed)
    inputs = (coll, x, g, hosts, dom, w, nics, r, arch, nvswitch, collnet, eta_net, eta_nvl, lam, spine,
              peers)  # fmt: skip
    shape = jnp.broadcast_shapes(*(jnp.shape(v) for v in inputs), jnp.shape(algorithm), jnp.shape(protocol))
    nodes = jnp.ceil(hosts / dom)
    n = g * hosts
    p = n / nodes
    multi = nodes > 1
    i2 = (jnp.minimum(nodes, 3.0) - 1).astype(jnp.int32)
    ar = coll == ALL_REDUCE
    agrs = (coll == ALL_GATHER) | (coll == REDUCE_SCATTER)
    # K_n: the NICs of one NCCL node (a host's, or a multi-node NVLink domain's), whole, at least one
    node_nics = jnp.maximum(jnp.floor(nics * hosts / nodes + 1e-6), 1.0)
    # GB/s all of an NCCL node's NICs carry. Hosts that fill no whole number of NVLink domains are split evenly
    # over the fewest that hold them (19 trays of 18-tray racks as 9.5 a rack, about as 10 and 9 run): the model's
    # placement, said in docs/model.md (a full rack and a lone tray would be paced by the tray's own NICs).
    node_net = nics * hosts / nodes * r
    p_x = jnp.where(peers > 0, peers, p)  # an all-to-all's NVLink side (Fabric.peers)
    return _Group(
        x, dt, shape, coll, arch, g, hosts, nics, r, nvswitch, collnet, has_nvl, w, eta_net, eta_nvl, lam,
        nodes, n, p, multi, i2, ar, agrs, node_nics, node_net, spine, p_x,
    )  # fmt: skip


class _Graphs(NamedTuple):
    """Channels and speeds (GB/s) of NCCL's graphs: ring and tree c, s (the tree's s_t), NVLS c_n, s_n, s_x,
    CollNet direct c_d, s_d."""

    c: Array
    s: Array
    st: Array
    cn: Array
    sn: Array
    sx: Array
    cd: Array
    sd: Array


def _graphs(q: _Group) -> _Graphs:
    """The channels and speeds of NCCL's graphs (search.cc, simplified; module docstring):

    ring, tree   N = 1:  s = speed(W),  c0 = floor(W / s);  N > 1:  s = speed(min(r, W)),
                 c0 = floor(K H / N) floor(r / s) (the NICs of one NCCL node);  c0 <= 32;
                 duplicated unless s < 25 or (a >= 2, s < 50, c0 > 4): c = min(2 c0, 32),
                 s = s / ceil(c / c0);  across nodes with p > 1 s = min(s, W / c) (each channel crosses the
                 node's NVLink once);  s_t = max(s, speed(min(2 s, W / c))) on two nodes, else s
    NVLS         c_n = min(32, p), across nodes min(32, p, K_n);  s_n = speed(W / (c_n + 1));
                 s_x = speed(min(K H / N r / c_n, 2 s_n)) across nodes, unbounded inside one
    CollNet      c_d = min(8, p, K_n);  s_d = speed(min(r, W / c_d)), duplicated as the ring's up to min(8, p)
    """
    arch, multi, w, r, p = q.arch, q.multi, q.w, q.r, q.p
    speeds = _speed_list(arch, multi, q.dt)
    # Channels: ring and tree graphs.
    s0 = _speed(speeds, jnp.where(multi, jnp.minimum(r, w), w))
    # Each of an NCCL node's NICs a channel: a host's, or a multi-node NVLink domain's (an NVL72 rack's 72: NCCL
    # fuses the rack into one system; one tray's 4 priced a ring across GB200 partitions of two trays at half
    # NVIDIA/nccl#1801's measured busbw).
    c0 = jnp.where(multi, q.node_nics * jnp.maximum(_floor(r / s0), 1.0), _floor(w / s0))
    c0 = jnp.clip(c0, 1.0, MAX_CHANNELS)
    c, s = _duplicated(c0, s0, arch, MAX_CHANNELS)
    # Across nodes with several GPUs a node every channel also crosses the node's NVLink once (GPU to GPU), and
    # NCCL's search charges each link the speed of every channel it carries: c s <= W.
    s = jnp.where(multi & (p > 1), jnp.minimum(s, w / c), s)
    # The tree's graph on two nodes: the second pass raises its intra-node speed up to twice the ring's.
    two = multi & (q.nodes <= 2)
    st = jnp.where(two, jnp.maximum(s, _speed(speeds, jnp.minimum(2 * s, w / c))), s)
    # NVLS graph.
    # Across nodes one NVLS head a NIC of the NCCL node, each on its own GPU (search.cc ncclTopoSearchRecNet adds a
    # head only while the graph has fewer channels than NICs): a host of one NIC has one head (a fact-check).
    cn = jnp.clip(jnp.minimum(MAX_NVLS_ARITY, jnp.where(multi, jnp.minimum(p, q.node_nics), p)), 1.0, None)
    # NCCL's search charges each channel's speed to every GPU's link with the NVSwitch, its head's twice (in and
    # out, search.cc's ncclTopoSearchTryNvls), so a GPU heading one of c_n channels carries c_n + 1: on two GB300
    # racks W / c_n had taken the inter-node list's 22 GB/s where 33 x 22 > W, and priced them faster than one
    # rack at the intra-node list's 20 (a hunt). NCCL keeps the most channels (CompareGraphs), at 20 on both.
    sn = _speed(speeds, w / (cn + 1))
    sx = jnp.where(multi, _speed(speeds, jnp.minimum(q.node_net / cn, 2 * sn)), jnp.inf)
    # CollNet direct graph.
    cd0 = jnp.clip(
        jnp.minimum(MAX_DIRECT_ARITY, jnp.minimum(p, q.node_nics)), 1.0, None
    )  # one head a NIC too
    sd0 = _speed(speeds, jnp.minimum(r, w / cd0))
    # duplicated as the ring's (ncclTopoDupChannels skips NVLS alone), up to its most channels, min(8, p): fewer
    # heads than GPUs (fewer NICs) are doubled at half the speed (a review)
    cd, sd = _duplicated(cd0, sd0, arch, jnp.clip(jnp.minimum(MAX_DIRECT_ARITY, p), 1.0, None))
    return _Graphs(c, s, st, cn, sn, sx, cd, sd)


def _duplicated(c0: Array, s0: Array, arch: Array, most: Array | float) -> tuple[Array, Array]:
    """A graph's channels and speed after NCCL's duplication (search.cc ncclTopoDupChannels): doubled, up to
    ``most``, at the speed divided by ceil(c / c0), unless s0 < 25 or (Hopper on, s0 < 50, c0 > 4)."""
    dup = (s0 >= 25.0) & ~((arch >= 2) & (s0 < 50.0) & (c0 > 4))
    c = jnp.where(dup, jnp.minimum(2 * c0, most), c0)
    return c, s0 / jnp.ceil(c / c0)


def _running(q: _Group, gr: _Graphs) -> _Graphs:
    """The graphs' speeds as their channels run across nodes (module docstring): NCCL's search sets a graph's
    channels by the steps of its speed list, but nothing holds a channel to its step; its data runs at its share
    of the NICs' rate (each of the c channels on one of the K_n NICs of an NCCL node, c / K_n a NIC where there
    are more), within its link inside the node (W / c where the node has several ranks: each channel crosses
    its NVLink once; the GPU's W where it has one, the limit NCCL's step was taken under), and the choice is
    priced at these speeds too:

        s_run = max(s, min(r K_n / max(c, K_n), W / c [p > 1] or W [p = 1]))
        s_t run = max(s_t, s_run, min(2 s_run, W / c)) on two nodes (the second pass's bound), else max(s_t, s_run)
        s_x run = max(s_x, min(K H / N r / c_n, 2 s_n));  s_d run = max(s_d, min(r K_n / max(c_d, K_n), W / c_d))

    NCCL's step is the floor (a limit within SNAP below an entry takes it, and never runs slower for it), but for
    a spine in the way (O_s > 1: a group across a leaf's edge, :func:`kernels.layout_collectives.spine_divisor`),
    which delivers each channel at most its NICs' share over O_s, where NVLink or NCCL's step does not already
    hold it below that:

        s_run = min(s_run, max(r K_n / max(c, K_n), s) / O_s)
        s_t run = min(s_t run, max(r K_n / max(c, K_n) x (2 on two nodes, else 1), s_t) / O_s)
        s_x run = min(s_x run, max(K H / N r / c_n, s_x) / O_s);  s_d run = min(s_d run, max(r K_n / max(c_d, K_n), s_d) / O_s)

    (NCCL's step where it runs above the NICs' share, as it does with fewer NICs than channels: continuous at
    O_s = 1).

    NCCL's search does not know the spine (its channels are those of a 1:1 spine), and its choice is priced at
    these speeds, as at the NICs'. Inside one node every speed is NCCL's (NVLink's list, which the fitted eta_nvl
    covers)."""
    multi, w, r, p = q.multi, q.w, q.r, q.p
    c, s, st, cn, sn, sx, cd, sd = gr
    node_nics = q.node_nics
    link = jnp.where(p > 1, w / c, w)

    def nic_share(channels: Array) -> Array:  # a channel's share of the NCCL node's NICs
        return r * node_nics / jnp.maximum(channels, node_nics)

    ring_nics = nic_share(c)  # a ring or tree channel
    share = jnp.maximum(s, jnp.minimum(ring_nics, link))
    second_pass = jnp.where(q.nodes <= 2, jnp.maximum(share, jnp.minimum(2 * share, w / c)), share)
    tree = jnp.maximum(st, second_pass)
    head_nics = q.node_net / cn
    heads = jnp.maximum(sx, jnp.minimum(head_nics, 2 * sn))
    direct_nics = nic_share(cd)
    direct = jnp.maximum(sd, jnp.minimum(direct_nics, w / cd))

    # The spine: each channel at most its NICs' share over O_s (the tree's on two nodes twice the ring's, as its
    # second pass takes), or NCCL's step over O_s where that is the higher (the step runs above the share where a
    # node has fewer NICs than channels: eight CollNet heads on one NIC; the share alone jumped 8x from O_s 1 to
    # 1.0001, a review); where O_s is 1, the speeds as they were, to the bit.
    def capped(speed: Array, nics: Array, step: Array) -> Array:
        return jnp.where(q.spine > 1, jnp.minimum(speed, jnp.maximum(nics, step) / q.spine), speed)

    tree_nics = jnp.where(q.nodes <= 2, 2 * ring_nics, ring_nics)
    share, tree = capped(share, ring_nics, s), capped(tree, tree_nics, st)
    heads, direct = capped(heads, head_nics, sx), capped(direct, direct_nics, sd)
    return gr._replace(
        s=jnp.where(multi, share, s),
        st=jnp.where(multi, tree, st),
        sx=jnp.where(multi, heads, sx),
        sd=jnp.where(multi, direct, sd),
    )


# An algorithm's bus bandwidths (LL, LL128, Simple; GB/s, 0 where it lacks the protocol) and where it is enabled.
_Bus = tuple[tuple[Array, Array, Array], Array]


def _bus_bandwidths(
    q: _Group, gr: _Graphs
) -> tuple[dict[int, _Bus], dict[int, Array | float], Array, dict[int, tuple[Array, Array]]]:
    """Bus bandwidths [7 algorithms][3 protocols] with where each algorithm is enabled, the ratio of each
    algorithm's bandwidth to its bus bandwidth, the ring's steps, and NVLS's and NVLSTree's two sides, (B_nvl,
    B_net) per algorithm (GB/s; the time that runs prices each at its efficiency across domains, :func:`_choice`)
    (module docstring):

        ring      B = c s;  LL: min(ll, B / 2);  LL128: min(0.92 B, c mR);  Simple: B
        tree      B = min(0.92 c s_t, c mT);  LL: min(B / 3.8, ll);  LL128: min(B (7/9 | 120/128), c mT128)
        NVLS      b_i = s_n e_a (c_n - 1) / c_n x (2 | (p - 1) / p);  B = c_n min(b_i, s_x)
        NVLSTree  B = c_n min(b_i, s_x (2 if N <= 2), mNT)
        CollNet   direct: B = c_d s_d / f_d (x 0.85 from Hopper), f_d = p / c_d - (p / c_d - 1) / 2;  chain: B = c s
        PAT       B = 0.75 c s

    ratio A / B: ring, NVLS and NVLSTree n / steps (steps 2 (n - 1) all-reduce, n - 1 otherwise), tree and
    CollNet 1/2; all-gather and reduce-scatter over NVLS, CollNet or PAT 1.
    """
    dt, arch, i2, multi, ar, agrs, p, nodes = q.dt, q.arch, q.i2, q.multi, q.ar, q.agrs, q.p, q.nodes
    c, s, st, cn, sn, sx, cd, sd = gr
    ll = jnp.where(multi, _entry(LL_MAX_INTEL, dt, i2), _entry(LL_MAX_ONE_NODE, dt, arch))
    m_ring128 = _entry(PER_CH_RING_LL128, dt, arch, i2)
    m_tree128 = _entry(PER_CH_TREE_LL128, dt, arch, i2)
    m_tree = _entry(PER_CH_TREE, dt, arch, i2)
    m_nvtree = _entry(PER_CH_NVLS_TREE, dt, arch, i2)
    e_nvls = _entry(NVLS_EFFICIENCY, dt, arch)

    steps = jnp.where(ar, 2 * (q.n - 1), q.n - 1)
    to_alg = q.n / jnp.maximum(steps, 1.0)
    zero = jnp.zeros((), dt)  # a protocol these algorithms lack (a scalar: nothing to fold per configuration)

    ring_b = c * s
    ring = (jnp.minimum(ll, ring_b / 2), jnp.minimum(0.92 * ring_b, c * m_ring128), ring_b)
    tree_b = jnp.minimum(0.92 * c * st, c * m_tree)
    tree = (
        jnp.minimum(tree_b / 3.8, ll),
        jnp.minimum(tree_b * jnp.where(multi, 120.0 / 128.0, 7.0 / 9.0), c * m_tree128),
        tree_b,
    )
    # tuning.cc skips NVLS and NVLSTree on a graph of fewer than two channels: across nodes, fewer than two heads
    nvls_ok = (arch >= 2) & q.nvswitch & (p >= 2) & (~multi | (cn >= 2))
    b_i = sn * e_nvls * (cn - 1) / cn * jnp.where(ar, 2.0, (p - 1) / p)
    # NVLS's and NVLSTree's two sides, (B_nvl, B_net): each bus bandwidth the lesser (c_n min(a, b) is
    # min(c_n a, c_n b) to the bit, rounding being monotone)
    sides = {
        NVLS: (cn * b_i, cn * sx),
        NVLS_TREE: (cn * b_i, cn * jnp.minimum(sx * jnp.where(nodes <= 2, 2.0, 1.0), m_nvtree)),
    }
    nvls_b, nvtree_b = jnp.minimum(*sides[NVLS]), jnp.minimum(*sides[NVLS_TREE])
    f_d = p / cd
    direct_b = cd * sd / (f_d - (f_d - 1) / 2) * jnp.where(arch >= 2, 0.85, 1.0)
    pat_b = 0.75 * c * s

    # NCCL's enqueue.cc skips CollNet above 8 ranks a node (NCCL_MAX_DIRECT_ARITY + 1) and NVLS's all-gather and
    # reduce-scatter above 32 (NCCL_MAX_NVLS_ARITY): an NVL72 domain of 72 (an audit against the source)
    # (NVLS across nodes needs CollNet on, at any ranks a node)
    collnet = q.collnet
    heads = collnet & (p <= MAX_DIRECT_ARITY)
    bus = {
        TREE: (tree, ar),
        RING: (ring, ar | agrs),
        COLLNET_DIRECT: ((zero, zero, direct_b), ar & multi & heads & q.nvswitch),
        COLLNET_CHAIN: ((zero, zero, c * s), ar & multi & heads),
        NVLS: (
            (zero, zero, nvls_b),
            nvls_ok & ((ar & (~multi | collnet)) | (agrs & ~multi & (p <= MAX_NVLS_ARITY))),
        ),
        NVLS_TREE: ((zero, zero, nvtree_b), nvls_ok & ar & multi),
        PAT: ((zero, zero, pat_b), agrs & multi & (p == 1)),
    }
    ratio: dict[int, Array | float] = {
        TREE: 0.5,
        RING: to_alg,
        COLLNET_DIRECT: jnp.where(ar, 0.5, 1.0),
        COLLNET_CHAIN: 0.5,
        NVLS: jnp.where(ar, to_alg, 1.0),
        NVLS_TREE: to_alg,
        PAT: 1.0,
    }
    return bus, ratio, steps, sides


class _Hops(NamedTuple):
    """What the latencies read: NCCL's hardware latencies across nodes (``net`` [7, 3]), its base latencies
    [7, 3], floor(log2 N), and the ring's steps across nodes s_x (2 (N - 1) all-reduce, N - 1 others, 0 inside
    one node), us or counts; and the ring's steps and channels c. The latencies inside a node are
    :func:`_intra_latency`'s."""

    net: Array
    base: Array
    log_nodes: Array
    inter_steps: Array
    steps: Array
    c: Array


def _intra_latency(q: _Group, a: int, pr: int) -> Array:
    """NCCL's hardware latency (us) of algorithm ``a`` with protocol ``pr`` inside a node: NVLink's table where
    the node has NVLink, PCI's elsewhere (one select between two constants, not a table per configuration)."""
    return jnp.where(q.has_nvl, jnp.asarray(HW_NVLINK, q.dt)[a, pr], jnp.asarray(HW_PCI, q.dt)[a, pr])


def _latency(q: _Group, h: _Hops, a: int, pr: int) -> Array:
    """The latency (us) of algorithm ``a`` with protocol ``pr`` (module docstring; l_i = hw[intra],
    l_x = hw[NET] (tree's where p = 1) + lambda (+ lambda again for Simple)):

        ring      base + (steps - s_x) max(l_i, o_s) + s_x l_x  (o_s = 1 us, x 3 Simple, across nodes), x 1.4
                  (1.9 Volta) for a Simple all-reduce across nodes once X / (c n) >= 64 B
        tree      base + 2 ((p - 1) l_i + floor(log2 N) l_x)
        NVLS      l_i (+ l_x across nodes);  NVLSTree  l_i + 2 floor(log2 N) l_x
        CollNet   direct: 2 (min(1, p - 1) l_i + 0.4 (p - 1)) + l_x;  chain: 2 (p - 1) l_i + l_x
        PAT       base + floor(log2 N) l_x / 3.5 + 2.8 n
    """
    p, multi, base, log_nodes = q.p, q.multi, h.base, h.log_nodes
    l_i = _intra_latency(q, a, pr)
    l_x = jnp.where(p == 1, h.net[TREE, pr], h.net[a, pr]) + q.lam * (2.0 if pr == SIMPLE else 1.0)
    if a == RING:
        over = jnp.where(multi, NET_OVERHEAD * (3.0 if pr == SIMPLE else 1.0), 0.0)
        t = base[a, pr] + (h.steps - h.inter_steps) * jnp.maximum(l_i, over) + h.inter_steps * l_x
        if pr == SIMPLE:
            plateau = q.ar & multi & (q.x / (h.c * q.n) >= 64)
            t = t * jnp.where(plateau, jnp.where(q.arch < 1, 1.9, 1.4), 1.0)
        return t
    if a == TREE:
        return base[a, pr] + 2 * ((p - 1) * l_i + log_nodes * l_x)
    if a == COLLNET_DIRECT:
        return 2 * (jnp.minimum(1.0, p - 1) * l_i + 0.4 * (p - 1)) + l_x
    if a == COLLNET_CHAIN:
        return 2 * (p - 1) * l_i + l_x
    if a == NVLS:
        return l_i + jnp.where(multi, l_x, 0.0)
    if a == NVLS_TREE:
        return l_i + 2 * log_nodes * l_x
    return base[a, pr] + log_nodes * l_x / 3.5 + 2.8 * q.n  # PAT


def _choice(
    q: _Group,
    bus: dict[int, _Bus],
    ratio: dict[int, Array | float],
    in_table: Array,
    corr: tuple[Array, Array, Array],
    h: _Hops,
    algorithm: ArrayLike,
    protocol: ArrayLike,
    sides: dict[int, tuple[Array, Array]],
) -> tuple[Array, Array]:
    """NCCL's choice: the index a * 3 + pr of the enabled (algorithm, protocol) of least
    T = lat + X / (1000 A) (us; the tree's A scaled by NCCL's correction ``corr`` (per protocol) for medium sizes,
    ``in_table``), among those ``algorithm`` / ``protocol`` (>= 0) allow where any is, and
    the time that runs, t = lat + X / (1000 A eta) with eta = eta_net if N > 1 else eta_nvl, NVLS's and
    NVLSTree's across domains t = lat + X / (1000 A) max(B / (B_net eta_net), B / (B_nvl eta_nvl)) with their
    ``sides`` (B_nvl, B_net), and an all-reduce across nodes never under its NICs' floor, t >= lat + X O_s / (1000
    R_n eta_net), R_n = K H / N r the NCCL node's NICs (GB/s: every node's X leaves it once at least), O_s the
    spine's divisor (its oversubscription over the transport's utilization) (us)."""
    x, ar, multi = q.x, q.ar, q.multi
    algo_req = jnp.asarray(algorithm, jnp.int32)
    proto_req = jnp.asarray(protocol, jnp.int32)
    nominal, real, wanted = [], [], []
    for a in range(7):
        bws, ok = bus[a]
        for pr in range(3):
            alg_bw = bws[pr] * ratio[a]
            if a == TREE:
                alg_bw = alg_bw * jnp.where(ar & in_table, corr[pr], 1.0)
            # Not broadcast to the configurations' shape: where ``enabled`` and the forced choice are the same
            # for every configuration (a layout sweep's), XLA then folds their test on a few values, not on
            # every configuration of every collective (that folding took most of a minute to compile).
            enabled = ok & (bws[pr] > 0)
            t_lat = q.bc(_latency(q, h, a, pr))
            t_bw = x / (1000.0 * jnp.where(enabled, q.bc(alg_bw), 1.0))
            eta = jnp.where(multi, q.eta_net, q.eta_nvl)
            t_real = t_lat + t_bw / eta
            # NVLS's bandwidth is Simple's alone (the others 0, disabled); across domains each side at its own
            # efficiency, a side of no finite bandwidth (none, or a single node's unbounded heads) at none
            if a in (NVLS, NVLS_TREE) and pr == SIMPLE:
                slow = jnp.maximum(*(_side(bws[pr], b, e) for b, e in zip(sides[a], (q.eta_nvl, q.eta_net))))
                t_real = jnp.where(multi, t_lat + t_bw * slow, t_real)
            # An all-reduce across NCCL nodes sends each node's X through its NICs at least once, whatever
            # reduces it (NVLSTree's 2-node ratio and CollNet heads on fewer NICs had priced it faster: a hunt)
            # (the NICs' rate over the spine's divisor, which carries the transport's utilization too: a review).
            # An all-gather's or reduce-scatter's ring or PAT runs its channels at the NICs' rate at most: at or
            # above its floor, (n - p) / n of X through them, already.
            floor = t_lat + x * q.spine / (1000.0 * q.node_net * q.eta_net)
            t_real = jnp.where(ar & multi, jnp.maximum(t_real, floor), t_real)
            nominal.append(jnp.where(enabled, t_lat + t_bw, jnp.inf))
            real.append(q.bc(t_real))
            wanted.append(
                enabled & ((algo_req < 0) | (algo_req == a)) & ((proto_req < 0) | (proto_req == pr))
            )
    restricted = functools.reduce(operator.or_, wanted)  # any of them, each at its own shape
    # The least T as argmin takes it (the first of equal ones; a NaN wins, the first of them), kept as a
    # running minimum over the 21 candidates: elementwise selects XLA fuses into one loop, where stacking them
    # and taking each configuration's entry back out of the stack took most of the collective's time on the CPU.
    candidates = [
        (jnp.where(ok | ~restricted, t, jnp.inf), t_real) for t, t_real, ok in zip(nominal, real, wanted)
    ]
    least, tuned = candidates[0]
    best = jnp.zeros(jnp.shape(least), jnp.int32)
    for k, (t, t_real) in enumerate(candidates[1:], start=1):
        better = (t < least) | (jnp.isnan(t) & ~jnp.isnan(least))
        least = jnp.where(better, t, least)
        best = jnp.where(better, k, best)
        tuned = jnp.where(better, t_real, tuned)
    return best, tuned


def _side(bus: Array, side: Array, eta: Array) -> Array:
    """B / (B_side eta): how much slower than its bus bandwidth B one side of NVLS runs at its efficiency; 0 where
    the side has no finite bandwidth. The side is replaced before it is used, not after: an infinite side (a single
    node's heads) left in made the gradient NaN (0 x inf), which stopped the fit at its starting point."""
    real = (side > 0) & jnp.isfinite(side)
    return jnp.where(real, bus / (jnp.where(real, side, 1.0) * eta), 0.0)


def _tree_correction(log_size: Array, dt: jnp.dtype) -> tuple[Array, Array, Array]:
    """NCCL's correction of the tree's bandwidth, per protocol, at floor(log2(X / 64)) ``log_size`` (clipped
    to the table's 0..23): each protocol's row walked with one comparison and one select per entry, the
    entry itself where it applies (gathering each configuration's column of the table was the slower)."""
    rows = []
    for row in TREE_CORRECTION:
        value = jnp.full(jnp.shape(log_size), row[0], dt)
        for i, entry in enumerate(row[1:], start=1):
            value = jnp.where(log_size >= i, jnp.asarray(entry, dt), value)
        rows.append(value)
    return rows[0], rows[1], rows[2]


def collective(
    coll: ArrayLike,
    nbytes: ArrayLike,
    fabric: Fabric,
    constants: Constants,
    algorithm: ArrayLike = -1,
    protocol: ArrayLike = -1,
) -> Timing:
    """The time of collective ``coll`` (index of :data:`COLLECTIVES`) of ``nbytes`` X on ``fabric`` with its
    ``constants``, as NCCL chooses it (or restricted to ``algorithm`` / ``protocol`` where >= 0). A ``coll``
    given as a Python int traces only its own pricing: send/recv and all-to-all no tuner (they have one
    algorithm), the others no selection between kinds."""
    q = _group(coll, nbytes, fabric, constants, algorithm, protocol)
    if isinstance(coll, int):
        if coll in (SENDRECV, ALLTOALL):
            us = _point_to_point(q)[0 if coll == SENDRECV else 1] + _untuned(q, constants)
            return Timing(q.bc(us) * 1e-6, *(jnp.full(q.shape, v, jnp.int32) for v in (P2P, SIMPLE)))
        best, tuned = _tuned(q, algorithm, protocol)
        us = tuned + _untuned(q, constants)
        return Timing(q.bc(us) * 1e-6, *(jnp.broadcast_to(v, q.shape) for v in (best // 3, best % 3)))
    send, a2a = _point_to_point(q)
    best, tuned = _tuned(q, algorithm, protocol)
    p2p = (q.coll == SENDRECV) | (q.coll == ALLTOALL)
    priced = jnp.where(q.coll == SENDRECV, send, jnp.where(q.coll == ALLTOALL, a2a, tuned))
    us = priced + _untuned(q, constants)
    algo = jnp.where(p2p, P2P, best // 3)
    proto = jnp.where(p2p, SIMPLE, best % 3)
    return Timing(q.bc(us) * 1e-6, jnp.broadcast_to(algo, q.shape), jnp.broadcast_to(proto, q.shape))


def _untuned(q: _Group, constants: Constants) -> Array:
    """The costs NCCL's tuner leaves out (us; module docstring): o inside one NCCL node, f min(1, X / X_f)
    across nodes. Added to the time that runs, never to the tuner's: NCCL's choice does not see them."""
    o, f, x_f = (jnp.asarray(v, q.dt) for v in (constants.op_latency, constants.fill, constants.fill_bytes))
    # X_f of at least a byte: an empty message (X = 0) has no fill even where X_f is 0.
    return q.bc(jnp.where(q.multi, f * jnp.minimum(1.0, q.x / jnp.maximum(x_f, 1.0)), o))


def _tuned(q: _Group, algorithm: ArrayLike, protocol: ArrayLike) -> tuple[Array, Array]:
    """NCCL's tuner on ``q``: the index a * 3 + pr of its choice and its time (us; :func:`_choice`)."""
    # NCCL's search sets the channels by its speed list's steps; they run at their NICs' rate (:func:`_running`).
    gr = _running(q, _graphs(q))
    bus, ratio, steps, sides = _bus_bandwidths(q, gr)
    # NCCL's correction of the tree's bandwidth for medium sizes, by floor(log2(X / 64)) in 0..22.
    log_size = _log2i(q.x) - 6
    in_table = (q.x >= 64) & (log_size < 23)
    corr = _tree_correction(log_size, q.dt)
    log_nodes = _log2i(q.nodes)
    inter_steps = jnp.where(q.multi, jnp.where(q.ar, 2 * (q.nodes - 1), q.nodes - 1), 0.0)
    hops = _Hops(jnp.asarray(HW_NET, q.dt), jnp.asarray(BASE_LAT, q.dt), log_nodes, inter_steps, steps, gr.c)
    return _choice(q, bus, ratio, in_table, corr, hops, algorithm, protocol, sides)


def _point_to_point(q: _Group) -> tuple[Array, Array]:
    """Send/recv's and all-to-all's times (us): the model's own (module docstring)."""
    x, p, n, multi = q.x, q.p, q.n, q.multi
    nic_gpu = q.nics * q.r / q.g / q.spine  # a GPU's share of the NICs, over a spine in the way
    l_i = _intra_latency(q, RING, SIMPLE)
    l_x = jnp.asarray(HW_NET, q.dt)[RING, SIMPLE] + 2 * q.lam
    w, eta_net, eta_nvl = q.w, q.eta_net, q.eta_nvl
    send = 6.6 + jnp.where(multi, l_x, l_i) + x / (1000.0 * jnp.where(multi, nic_gpu * eta_net, w * eta_nvl))
    inside = (
        x * (q.p_x - 1) / n / (w * eta_nvl)
    )  # the most ranks a node (p_x >= p) on NVLink, the fewest's NICs
    across = x * (n - p) / n / (nic_gpu * eta_net)
    a2a = (
        6.6
        + jnp.where(q.p_x > 1, l_i, 0.0)
        + jnp.where(multi, l_x, 0.0)
        + jnp.maximum(inside, across) / 1000.0
    )
    return send, a2a


def bus_factor(coll: ArrayLike, ranks: ArrayLike) -> Array:
    """nccl-tests' busbw / algbw: 2 (n - 1) / n for all-reduce, (n - 1) / n for all-gather, reduce-scatter
    and all-to-all, 1 for send/recv."""
    coll = jnp.asarray(coll)
    n = jnp.asarray(ranks)
    return jnp.where(coll == ALL_REDUCE, 2 * (n - 1) / n, jnp.where(coll == SENDRECV, 1.0, (n - 1) / n))
