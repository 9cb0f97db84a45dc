"""kernels/nccl.py: NCCL's tuner as equations, by hand for each algorithm and protocol, and against the float64
reference (tests/reference.py's ``nccl_collective``) on random groups on random fabrics."""

import jax
import numpy as np
import pytest

import reference
from helpers import TOLERANCE
from netsweep_jax.kernels import nccl

H100_NVL = 18 * 20.6  # NVLink as NCCL counts it: 18 links x 20.6 GB/s
B200_NVL = 18 * 40.1
A100_NVL = 12 * 20.0
GIB = 2.0**30
ROWS = 400  # random configurations per dtype; the hand cases are tiled to it


def run(
    coll,
    x,
    g,
    hosts,
    nvlink,
    nics,
    r,
    arch,
    *,
    domain=1,
    nvswitch=True,
    collnet=False,
    lam=0.0,
    algo=-1,
    proto=-1,
    eta=(1.0, 1.0),
    untuned=(0.0, 0.0, 1.0),
    spine=1.0,
    real=np.float64,
):
    """(us, algorithm, protocol) of one configuration, in ``real`` (float64 or float32), through the compiled
    kernel; ``untuned``: o (us), f (us) and X_f (bytes)."""
    args = [
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
        eta[0],
        eta[1],
        lam,
        algo,
        proto,
        *untuned,
        spine,
    ]
    i, f, b = (np.int64, np.float64, bool) if real == np.float64 else (np.int32, real, bool)
    kinds = [i, f, i, i, i, f, i, f, i, b, b, f, f, f, i, i, f, f, f, f]
    with jax.enable_x64(real == np.float64):
        # Tiled to the random test's rows and dtypes: one float64 compile serves both.
        t = compiled(*(np.full(ROWS, v, dtype=k) for v, k in zip(args, kinds)))
    return float(t.seconds[0]) * 1e6, nccl.ALGORITHMS[int(t.algorithm[0])], nccl.PROTOCOLS[int(t.protocol[0])]


# The kernel's inputs in the order of tests/reference.py's nccl_collective (and of a random case's columns).
FIELDS = ("coll", "x", "g", "hosts", "domain", "nvlink", "nics", "r", "arch", "nvswitch", "collnet", "eta_net",
          "eta_nvl", "lam", "algo", "proto", "op", "fill", "fill_bytes", "spine")  # fmt: skip


@jax.jit
def compiled(*columns):
    """The kernel vmapped over rows (what a sweep does), one compile per dtype and shape; ``columns`` in
    :data:`FIELDS`' order."""

    def one(*values):
        c = dict(zip(FIELDS, values))
        fabric = nccl.Fabric(*(c[k] for k in FIELDS[2:11]), spine=c["spine"])
        constants = nccl.Constants(*(c[k] for k in ("eta_net", "eta_nvl", "lam", "op", "fill", "fill_bytes")))
        return nccl.collective(c["coll"], c["x"], fabric, constants, c["algo"], c["proto"])

    return jax.vmap(one)(*columns)


# (name, arguments, expected us worked by hand from tuning.cc's numbers, algorithm, protocol)
HAND = [
    # One DGX H100: ring speed 60 -> 6 channels, duplicated to 12 x 30 = 360 GB/s; n = 8, 14 steps.
    (
        "ring simple",
        (0, GIB, 8, 1, H100_NVL, 0, 0, 2),
        {"algo": 1, "proto": 2},
        8.4 + 14 * 3.4 + GIB / (1000 * 360 * 8 / 14),
        "ring",
        "simple",
    ),
    (
        "ring ll",
        (0, GIB, 8, 1, H100_NVL, 0, 0, 2),
        {"algo": 1, "proto": 0},
        6.6 + 14 * 0.6 + GIB / (1000 * 141 * 8 / 14),
        "ring",
        "ll",
    ),
    (
        "ring ll128",
        (0, GIB, 8, 1, H100_NVL, 0, 0, 2),
        {"algo": 1, "proto": 1},
        14 + 14 * 1.9 + GIB / (1000 * 331.2 * 8 / 14),
        "ring",
        "ll128",
    ),
    # Two H100 hosts, ring forced: 8 NICs -> 8 channels x 48; 28 NVLink steps at the 1 us post floor, 2 NET.
    (
        "ring ll across",
        (0, 8, 8, 2, H100_NVL, 8, 50, 2),
        {"algo": 1, "proto": 0},
        6.6 + 28 * 1.0 + 2 * 2.7 + 8 / (1000 * 39 * 16 / 30),
        "ring",
        "ll",
    ),
    # Two p4de hosts (A100, 4 x 100 Gbit/s): 4 channels x 12, the tree's second pass at 24, as NCCL prices
    # them; they run at the NICs' 12.5 (x 12.5 / 12: the tree at 25): B = 0.92 x 4 x 25 = 92.
    (
        "tree simple",
        (0, GIB, 8, 2, A100_NVL, 4, 12.5, 1),
        {"algo": 0, "proto": 2},
        8.4 + 2 * (7 * 4.0 + 14) + GIB / (1000 * 92 / 2),
        "tree",
        "simple",
    ),
    (
        "tree ll",
        (0, 4096, 8, 2, A100_NVL, 4, 12.5, 1),
        {"algo": 0, "proto": 0},
        6.8 + 2 * (7 * 0.6 + 5.0) + 4096 / (1000 * 92 / 3.8 / 2 * 0.7),
        "tree",
        "ll",
    ),
    (
        "tree ll128",
        (0, 2**20, 8, 2, A100_NVL, 4, 12.5, 1),
        {"algo": 0, "proto": 1},
        14 + 2 * (7 * 1.25 + 8.5) + 2**20 / (1000 * 80 / 2 * 0.6),
        "tree",
        "ll128",
    ),
    # One H200 host, NVLS: 8 heads at speed 40; 40 x 0.85 x 7/8 x 2 = 59.5 per channel.
    (
        "nvls",
        (0, 8 * GIB, 8, 1, H100_NVL, 0, 0, 2),
        {},
        25 + 8 * GIB / (1000 * 476 * 8 / 14),
        "nvls",
        "simple",
    ),
    # Two H100 hosts, NVLSTree: 8 heads at 40 (NICs 48, doubled on 2 nodes), per-channel cap 57.7.
    (
        "nvls tree",
        (0, 8 * GIB, 8, 2, H100_NVL, 8, 50, 2),
        {},
        25 + 2 * 20.9 + 8 * GIB / (1000 * 461.6 * 16 / 30),
        "nvls_tree",
        "simple",
    ),
    # Eight A100 hosts with SHARP: 8 heads at 24 GB/s as NCCL prices them, one GPU a head (f = 1); each runs at
    # its NIC's 25.
    (
        "collnet direct",
        (0, GIB, 8, 8, A100_NVL, 8, 25, 1),
        {"collnet": True, "algo": 2},
        2 * (3.7 + 0.4 * 7) + 31 + GIB / (1000 * 200 / 2),
        "collnet_direct",
        "simple",
    ),
    (
        "collnet chain",
        (0, GIB, 8, 8, A100_NVL, 8, 25, 1),
        {"collnet": True, "algo": 3},
        2 * 7 * 2.8 + 30 + GIB / (1000 * 200 / 2),
        "collnet_chain",
        "simple",
    ),
    # All-gather at one GPU a host (PCIe only, one 400 Gbit/s NIC): 4 channels x 12, x 0.75; each runs at most
    # at its GPU's link (PCI_BW 12, the limit NCCL's step was taken under), not at a quarter of the NIC's 50.
    (
        "pat",
        (1, 2**20, 1, 8, 0.0, 1, 50, 2),
        {"algo": 6},
        8 + 3 * 14 / 3.5 + 2.8 * 8 + 2**20 / (1000 * 36),
        "pat",
        "simple",
    ),
    # Two GB300 racks: half of each rank's bytes leave the rack at 8 x 50 / 4 = 100 GB/s a GPU.
    (
        "alltoall rack edge",
        (3, GIB, 4, 32, B200_NVL, 8, 50, 3),
        {"domain": 18},
        6.6 + 3.4 + 14 + GIB * 64 / 128 / (1000 * 100),
        "p2p",
        "simple",
    ),
    ("sendrecv", (4, GIB, 8, 2, H100_NVL, 8, 50, 2), {}, 6.6 + 14 + GIB / (1000 * 50), "p2p", "simple"),
    # NCCL's own choice at 8 B on two H100 hosts: tree LL, the 25 us floor.
    (
        "choice 8 B",
        (0, 8, 8, 2, H100_NVL, 8, 50, 2),
        {},
        6.8 + 2 * (7 * 0.6 + 5.0) + 8 / (1000 * 39 / 2),
        "tree",
        "ll",
    ),
]


@pytest.mark.parametrize("case", HAND, ids=[c[0] for c in HAND])
def test_by_hand(case):
    _, args, kw, expected, algo, proto = case
    us, a, p = run(*args, **kw)
    assert (a, p) == (algo, proto)
    assert us == pytest.approx(expected, rel=1e-12)


def test_hand_cases_match_reference():
    for name, (coll, x, g, hosts, nvl, nics, r, arch), kw, expected, algo, proto in HAND:
        sec, a, p = reference.nccl_collective(
            coll,
            x,
            g,
            hosts,
            kw.get("domain", 1),
            nvl,
            nics,
            r,
            arch,
            True,
            kw.get("collnet", False),
            1.0,
            1.0,
            0.0,
            kw.get("algo", -1),
            kw.get("proto", -1),
        )
        assert sec * 1e6 == pytest.approx(expected, rel=1e-12), name
        assert (nccl.ALGORITHMS[a], nccl.PROTOCOLS[p]) == (algo, proto), name


def test_efficiency_and_latency_enter_as_stated():
    """eta divides the bandwidth term only; lambda is added per NET hop (twice for Simple)."""
    base, _, _ = run(0, 8 * GIB, 8, 2, H100_NVL, 8, 50, 2)
    slow, _, _ = run(0, 8 * GIB, 8, 2, H100_NVL, 8, 50, 2, eta=(0.5, 1.0), lam=3.0)
    lat = 25 + 2 * 20.9
    assert slow == pytest.approx(lat + 2 * 6.0 + 2 * (base - lat), rel=1e-12)


def test_the_tuners_omissions_enter_as_stated():
    """o is added once inside one node, f min(1, X / X_f) across nodes; neither changes NCCL's choice."""
    untuned = (9.0, 60.0, 16 * 2.0**20)
    for x in (2.0**10, 2.0**22, 2.0**30):  # below and above X_f = 16 MiB
        for hosts, added in ((1, 9.0), (2, 60.0 * min(1.0, x / untuned[2]))):
            base, a, p = run(0, x, 8, hosts, H100_NVL, 8, 50, 2)
            more, a2, p2 = run(0, x, 8, hosts, H100_NVL, 8, 50, 2, untuned=untuned)
            assert more == pytest.approx(base + added, rel=1e-12) and (a2, p2) == (a, p)
    # All-to-all (NCCL's, not the tuner's) across two hosts at 4 MiB: the fill a quarter of f.
    base, _, _ = run(3, 2.0**22, 8, 2, H100_NVL, 8, 50, 2)
    more, _, _ = run(3, 2.0**22, 8, 2, H100_NVL, 8, 50, 2, untuned=untuned)
    assert more == pytest.approx(base + 15.0, rel=1e-12)


def test_a_nic_slower_than_nccls_slowest_speed_runs_at_its_own():
    """NCCL's slowest speed across nodes is 0.12 GB/s (about 1 Gbit/s): a slower NIC runs at its own rate, so the
    all-reduce of 1 GiB on two hosts of one GPU takes at least the bytes a host sends, 2 (n - 1) / n X, over its
    NIC, and longer as the NIC slows (the ring: 1 channel at r, A = r, chosen over the tree's r / 2)."""
    x = float(GIB)
    times = []
    for gbit in (0.1, 0.4, 0.9):
        r = gbit / 8
        us, a, p = run(0, x, 1, 2, H100_NVL, 1, r, 2)
        assert (a, p) == ("ring", "simple")
        assert x / (1000 * r) < us < x / (1000 * r) + 1000  # the wire, plus NCCL's latencies (< 1 ms)
        times.append(us)
    assert times == sorted(times, reverse=True)


def test_a_channel_runs_at_its_nics_rate_not_at_nccls_step():
    """NCCL's search prices a channel at a step of its speed list; its data runs at the NIC's rate. One GPU on
    each of two Hopper hosts, one NIC of 40 Gbit/s (5 GB/s): NCCL's step is 3 GB/s (the next is 6), one channel,
    and the ring's Simple all-reduce of X more bytes takes X / (1000 x 5) us more, not X / (1000 x 3): 1 GB is
    0.2 s. Swept over the NIC's rate, the time falls with every step up, where 25 and 40 Gbit/s were one price and
    48 half of it (a user's `--bw 25,40,48`)."""
    extra = []
    for x in (GIB, 2 * GIB):
        us, a, p = run(0, float(x), 1, 2, H100_NVL, 1, 5.0, 2, algo=1, proto=2)
        want = reference.nccl_collective(
            0, float(x), 1, 2, 1, H100_NVL, 1, 5.0, 2, True, False, 1.0, 1.0, 0.0, 1, 2
        )
        assert (a, p) == ("ring", "simple") and us == pytest.approx(want[0] * 1e6, rel=1e-12)
        extra.append(us)
    assert extra[1] - extra[0] == pytest.approx(GIB / (1000 * 5.0), rel=1e-9)
    times = [
        run(0, float(GIB), 8, 8, H100_NVL, 1, gbit / 8, 2)[0] for gbit in (25, 40, 48, 60, 100, 200, 400)
    ]
    assert all(later < earlier for earlier, later in zip(times, times[1:])), times


def test_two_hosts_all_reduce_never_slows_as_the_nics_rate_rises():
    """A review: the two-node tree's run speed scaled by NCCL's s_t / s, a ratio of its list's gaps, fell as a
    rate crossed an entry (8 A100 a host on 2 hosts, one NIC: 4.012 s at 2.375 GB/s, 4.573 at 2.5). The second
    pass's bound is now taken at the run's speed. 200 rates from 1 to 60 GB/s on two layouts, 8 GiB, NCCL's
    choice, in one call of the compiled kernel (its 400 rows): the time never rises, and matches the twin."""
    rates = np.geomspace(1.0, 60.0, ROWS // 2)
    layouts = ((8, A100_NVL, 1, 1), (2, H100_NVL, 4, 2))  # GPUs a host, NVLink, NICs, architecture
    rows = [(0, 8 * GIB, g, 2, 1, w, k, r, a, True, False, 1.0, 1.0, 0.0, -1, -1, 0.0, 0.0, 1.0, 1.0)
            for g, w, k, a in layouts for r in rates]  # fmt: skip
    kinds = [np.int64, float, np.int64, np.int64, np.int64, float, np.int64, float, np.int64, bool, bool]
    kinds += [float] * 3 + [np.int64] * 2 + [float] * 4
    with jax.enable_x64(True):
        t = compiled(*(np.array(column, dtype=k) for column, k in zip(zip(*rows), kinds)))
    seconds = np.asarray(t.seconds).reshape(len(layouts), -1)
    assert np.all(np.diff(seconds, axis=1) <= 1e-12 * seconds[:, 1:]), np.diff(seconds, axis=1).max()
    for i in range(0, ROWS, 37):
        assert t.seconds[i] == pytest.approx(reference.nccl_collective(*rows[i])[0], rel=1e-12)


def test_a_spine_caps_each_channels_nic_share_and_the_choice_sees_it():
    """A spine's divisor O_s caps each channel's share of the NICs (kernels.nccl._running), where it divided
    eta_net, all that crossed nodes, unseen by NCCL's choice (a hunt: GPT-2 XL on 8 H100 hosts of 8 NICs on a
    32:1 spine, O_s = 8, ran 10% slower at 883 Gbit/s than at 673, the tree taken over NVLSTree as at 1:1, and
    lost 0.5% to an 8:1 spine at 1,000,000 Gbit/s, where NVLink paces every channel). 1 GiB over those hosts:
    the time never rises with the NICs' rate under O_s = 8; at 125,000 GB/s a NIC it is the no-spine time; at
    25 GB/s, where the NICs pace the ring, O_s = 8 costs the ring's bandwidth term eight times."""
    times = [run(0, float(GIB), 8, 8, H100_NVL, 8, r, 2, spine=8.0)[0] for r in (84.1, 110.4, 145.0, 190.0)]
    assert all(later <= earlier for earlier, later in zip(times, times[1:])), times
    fast = 1e6 / 8
    assert run(0, float(GIB), 8, 8, H100_NVL, 8, fast, 2, spine=8.0) == run(
        0, float(GIB), 8, 8, H100_NVL, 8, fast, 2
    )
    ring = dict(algo=nccl.RING, proto=2)

    def per_gib(o):  # the ring's bandwidth term, us a GiB (the time's growth from 1 to 2 GiB)
        one, two = (run(0, float(x), 8, 8, H100_NVL, 8, 3.125, 2, spine=o, **ring)[0] for x in (GIB, 2 * GIB))
        return two - one

    assert per_gib(8.0) == pytest.approx(8 * per_gib(1.0), rel=1e-9)
    # Continuous from O_s = 1: NCCL's step, where it runs above the NICs' share (eight CollNet heads on one NIC),
    # is capped over O_s too; the share alone made 7.06 ms 50.6 ms at O_s 1.0001 (a review). Random groups.
    heads = dict(collnet=True, algo=nccl.COLLNET_DIRECT, proto=2)
    one, past = (run(0, float(GIB), 8, 4, H100_NVL, 1, 50.0, 2, spine=o, **heads)[0] for o in (1.0, 1.0001))
    assert past == pytest.approx(one, rel=1e-3)
    cases = random_cases(np.random.default_rng(11), ROWS)
    with jax.enable_x64(True):
        at_one = np.asarray(evaluate({**cases, "spine": np.ones(ROWS)}, "float64").seconds)
        past_one = np.asarray(evaluate({**cases, "spine": np.full(ROWS, 1 + 1e-9)}, "float64").seconds)
    assert np.max(np.abs(past_one / at_one - 1)) < 1e-6


def test_a_rate_typed_as_a_speed_takes_it_in_both_dtypes():
    """10 Gbit/s at a utilization of 0.96 is 1.2 GB/s, an entry of NCCL's inter-node speed list, and in float32
    it lands a rounding below it, which took the next entry down (0.24 GB/s: 5 times as slow, through every
    graph's speed). The all-reduce of 1 GiB over two H100 hosts of 8 GPUs and 8 such NICs: NVLSTree at 1.2 GB/s
    a channel in both dtypes, the float64 reference's time."""
    r32 = np.float32(10) * np.float32(0.96) / np.float32(8)
    assert r32 < np.float32(1.2)  # the rounding the snap absorbs
    x = float(GIB)
    want = reference.nccl_collective(0, x, 8, 2, 1, H100_NVL, 8, 1.2, 2, True, False, 1.0, 1.0, 0.0)
    us64, a, p = run(0, x, 8, 2, H100_NVL, 8, 10 * 0.96 / 8, 2)
    us32, a32, p32 = run(0, x, 8, 2, H100_NVL, 8, float(r32), 2, real=np.float32)
    assert (
        (a, p) == (a32, p32) == (nccl.ALGORITHMS[want[1]], nccl.PROTOCOLS[want[2]]) == ("nvls_tree", "simple")
    )
    assert us64 == pytest.approx(want[0] * 1e6, rel=1e-9) and us32 == pytest.approx(want[0] * 1e6, rel=1e-5)


def test_a_ring_across_multi_node_nvlink_domains_takes_a_domains_nics():
    """NCCL fuses a multi-node NVLink domain into one system whose every NIC its ring search may enter by
    (topo.cc ncclTopoGetSystem, search.cc ncclTopoSearchRecNet): NVIDIA/nccl#1801 measured the ring NCCL chose
    (NCCL_NVLS_ENABLE=0, NCCL 2.27.3) of 16 GiB across three GB200 NVLink partitions on different racks at
    196.7 GB/s busbw with partitions of one 4-GPU tray (4 NICs) and 393.7 with partitions of two trays (8 NICs):
    twice the channels. One tray's NICs priced both at the first. With the shipped constants the ring comes out
    at 193.3 and 385.6 GB/s (-1.7%, -2.1%), in the kernel as in the float64 twin."""
    x, c = 16 * GIB, reference.NCCL_LAYOUT_CONSTANTS
    gb200_nvl = 18 * 40.1  # NVLink as NCCL counts it on Blackwell: 18 links
    for hosts, trays, measured in ((3, 1, 196.7), (6, 2, 393.7)):
        n = 4 * hosts
        us, a, _ = run(0, x, 4, hosts, gb200_nvl, 4, 50.0, 3, domain=trays, algo=1, eta=c[:2], lam=c[2],
                       untuned=c[3:])  # fmt: skip
        want = reference.nccl_collective(0, x, 4, hosts, trays, gb200_nvl, 4, 50.0, 3, True, False, *c[:3], 1,
                                         -1, op=c[3], fill=c[4], fill_bytes=c[5])  # fmt: skip
        assert a == "ring" and us == pytest.approx(want[0] * 1e6, rel=1e-9)
        busbw = 2 * (n - 1) / n * x / (us * 1e3)
        assert busbw == pytest.approx(measured, rel=0.03), (hosts, busbw)
        assert busbw == pytest.approx({3: 193.3, 6: 385.6}[hosts], abs=0.05)


def random_cases(rng, k):
    arch = rng.integers(0, 4, k)
    cases = dict(
        coll=rng.integers(0, 5, k),
        x=np.exp(rng.uniform(np.log(8), np.log(2.0**34), k)).round(),
        g=rng.choice([1, 2, 4, 8], k),
        hosts=rng.choice([1, 2, 3, 4, 8, 16, 32, 64], k),
        domain=rng.choice([1, 1, 2, 18], k),
        nvlink=np.where(
            rng.random(k) < 0.15, 0.0, rng.choice([6, 12, 18], k) * np.array(nccl.NVLINK_LINK)[arch]
        ),
        nics=rng.choice([1, 2, 4, 8, 16, 32], k),
        r=rng.choice([0.0125, 0.05, 12.5, 25.0, 50.0, 100.0], k),  # 0.1 and 0.4 Gbit/s: below NCCL's speeds
        arch=arch,
        nvswitch=rng.random(k) < 0.7,
        collnet=rng.random(k) < 0.3,
        eta_net=rng.uniform(0.3, 1.0, k),
        eta_nvl=rng.uniform(0.5, 1.0, k),
        lam=rng.uniform(0.0, 20.0, k),
        algo=np.where(rng.random(k) < 0.3, rng.integers(0, 7, k), -1),
        proto=np.where(rng.random(k) < 0.3, rng.integers(0, 3, k), -1),
        op=np.where(rng.random(k) < 0.3, 0.0, rng.uniform(0.0, 20.0, k)),
        fill=np.where(rng.random(k) < 0.3, 0.0, rng.uniform(0.0, 200.0, k)),
        fill_bytes=np.exp(rng.uniform(np.log(2.0**16), np.log(2.0**32), k)),
        spine=np.where(rng.random(k) < 0.5, 1.0, rng.uniform(1.0, 16.0, k)),  # a spine in the way, or none
    )
    return cases


@pytest.mark.parametrize("dtype,seed", [("float64", 0), ("float32", 1)])
def test_random_against_reference(dtype, seed):
    k = ROWS
    c = random_cases(np.random.default_rng(seed), k)
    assert tuple(c) == FIELDS  # the kernel's and the reference's argument order
    with jax.enable_x64(dtype == "float64"):
        t = evaluate(c, dtype)
    assert t.seconds.dtype == dtype
    got = np.asarray(t.seconds, np.float64)
    assert np.all(np.isfinite(got)) and np.all(got > 0)
    seen = set()
    for i in range(k):
        sec, a, p = reference.nccl_collective(*(c[key][i].item() for key in c))
        assert got[i] == pytest.approx(sec, rel=TOLERANCE["overlap"][dtype]), i
        if dtype == "float64":
            assert (int(t.algorithm[i]), int(t.protocol[i])) == (a, p), i
        seen.add((a, p))
    # The draw reaches every algorithm and every protocol.
    assert {a for a, _ in seen} == set(range(8)) and {p for _, p in seen} == {0, 1, 2}


def evaluate(c, dtype):
    floats = ("x", "nvlink", "r", "eta_net", "eta_nvl", "lam", "op", "fill", "fill_bytes", "spine")
    return compiled(*(v.astype(dtype) if key in floats else v for key, v in c.items()))


def test_where_a_forced_algorithm_runs_is_the_twins_choice():
    """sweep.model.nccl_forcing.runs (what a sweep says of a forcing that falls back) against the float64 twin:
    forced, the twin runs the algorithm exactly where the rule says it can."""
    from netsweep_jax.sweep.model.nccl_forcing import NEEDS, domain_nics, runs

    rng = np.random.default_rng(7)
    c = random_cases(rng, 600)
    c["coll"] = rng.integers(
        0, 3, 600
    )  # the collectives NCCL's tuner prices: all-reduce, all-gather, reduce-scatter
    c["proto"] = np.full(600, -1)
    said = {True: set(), False: set()}
    for i in range(600):
        row = {key: c[key][i].item() for key in c}
        domains = -(-row["hosts"] // max(row["domain"], 1))
        for a, name in enumerate(NEEDS):  # kernels.nccl.ALGORITHMS' order
            _, ran, _ = reference.nccl_collective(*{**row, "algo": a}.values())
            rule = runs(
                name,
                all_reduce=row["coll"] == nccl.ALL_REDUCE,
                arch=row["arch"],
                nvswitch=row["nvswitch"],
                gpus_per_domain=row["g"] * row["hosts"] / domains,
                domains=domains,
                collnet=row["collnet"],
                domain_nics=domain_nics(row["nics"], row["hosts"], domains),
            )
            assert (ran == a) == rule, (i, name, row)
            said[rule].add(name)
    # The draw reaches both sides of every rule (the ring runs everywhere).
    assert said[True] == set(NEEDS) and said[False] == set(NEEDS) - {"ring"}


def test_nvlstree_across_nvlink_domains_prices_its_nvlink_side_at_eta_nvl():
    """NVLSTree's bus bandwidth is the least of its NVLink side, B_nvl = c_n b_i, and its network side B_net; each
    runs at its own efficiency: X / (1000 A) max(B / (B_net eta_net), B / (B_nvl eta_nvl)). Two GB200 NVL72 racks,
    where NVLink binds (B = B_nvl, B_net about 2.8 B): the time follows eta_nvl alone, eta_net none, above or below
    it (it took eta_net, fitted on InfiniBand hosts, where NVLink binds, and priced two racks faster than one:
    validation.md, CoreWeave's racks; a review: eta_net below eta_nvl still priced it). By hand: slow 1, 2 and 4
    at eta_nvl 1, 0.5 and 0.25, so the steps between the three times are in the ratio 2."""
    x, nvlink = 16 * GIB, 18 * 40.1  # NVLink as NCCL counts it on Blackwell: 18 links

    def racks_of_two(eta_net, eta_nvl):
        us, a, _ = run(0, x, 4, 36, nvlink, 4, 50.0, 3, domain=18, eta=(eta_net, eta_nvl))
        want = reference.nccl_collective(0, x, 4, 36, 18, nvlink, 4, 50.0, 3, True, False, eta_net, eta_nvl,
                                         0.0, -1, -1)  # fmt: skip
        assert a == "nvls_tree" and us == pytest.approx(want[0] * 1e6, rel=1e-12)
        return us

    assert racks_of_two(0.98, 0.5) == pytest.approx(racks_of_two(0.7, 0.5), rel=1e-12)
    assert racks_of_two(0.98, 0.891) == pytest.approx(racks_of_two(0.5, 0.891), rel=1e-12)
    full, half, quarter = (racks_of_two(0.98, e) for e in (1.0, 0.5, 0.25))
    assert (quarter - half) / (half - full) == pytest.approx(2.0, rel=1e-9)

    # Where the network side binds (its NICs at a tenth of the rate), eta_net sets the time and eta_nvl none.
    def slow_nics(eta_net, eta_nvl):
        return run(0, x, 4, 36, nvlink, 4, 5.0, 3, domain=18, eta=(eta_net, eta_nvl), algo=5)[0]

    assert slow_nics(0.8, 0.9) == pytest.approx(slow_nics(0.8, 0.7), rel=1e-12)
    assert slow_nics(0.4, 0.9) > 1.5 * slow_nics(0.8, 0.9)
    # Inside one rack (NVLS) nothing changed: eta_nvl alone, as before.
    one, _, _ = run(0, x, 4, 18, nvlink, 4, 50.0, 3, domain=18, eta=(0.5, 0.891))
    assert one == pytest.approx(
        run(0, x, 4, 18, nvlink, 4, 50.0, 3, domain=18, eta=(0.98, 0.891))[0], rel=1e-12
    )


def test_an_nvls_heads_link_carries_its_channel_twice_so_two_racks_are_never_faster_than_one():
    """NCCL's search charges each NVLS channel's speed to every GPU's link with the NVSwitch and to its head's
    twice (search.cc, ncclTopoSearchTryNvls), keeping the most channels: s_n = speed(W / (c_n + 1)). A GB300
    rack's 64 GPUs (W = 18 x 40.1 = 721.8): 32 heads, W / 33 = 21.87, so 20 GB/s on one rack (the intra-node
    list) and on two (the inter-node list's 22 would need 33 x 22 = 726 > W). NVLink's side is then one rack's
    on both, B_nvl = 32 x 20 x 0.74 x 31/32 x 2 = 917.6 GB/s, and two racks, NVLSTree, take longer than one at
    the same size (they had priced 896 GB/s of busbw against one rack's 817: a hunt). By hand at eta 1 and no
    latency: one rack t = X / (1000 A), A = 917.6 n / (2 (n - 1)), n = 64, plus NVLS's 25 us inside one node."""
    x, nvlink = 16 * GIB, 18 * 40.1
    one, a1, _ = run(0, x, 4, 16, nvlink, 4, 100.0, 3, domain=18)
    two, a2, _ = run(0, x, 4, 32, nvlink, 4, 100.0, 3, domain=18)
    assert (a1, a2) == ("nvls", "nvls_tree")
    bus = 32 * 20 * 0.74 * 31 / 32 * 2
    assert one == pytest.approx(25.0 + x / (1000 * bus * 64 / 126), rel=1e-12)
    busbw_one, busbw_two = (2 * (n - 1) / n * x / us / 1e3 for n, us in ((64, one), (128, two)))
    assert busbw_two < busbw_one <= bus
    for hosts, us in ((16, one), (32, two)):  # the float64 twin
        want = reference.nccl_collective(0, x, 4, hosts, 18, nvlink, 4, 100.0, 3, True, False, 1.0, 1.0,
                                         0.0, -1, -1)  # fmt: skip
        assert us == pytest.approx(want[0] * 1e6, rel=1e-12)
    # Eight H100s a host (W = 370.8): 8 heads, 370.8 / 9 = 41.2, so 40 GB/s on one host (the intra-node list) and
    # across hosts (the inter-node list's 45 would need 9 x 45 > W): NVLS's NVLink side 8 x 40 x 0.85 x 7/8 x 2.
    host, _, _ = run(0, x, 8, 1, 370.8, 8, 50.0, 2)
    assert host == pytest.approx(25.0 + x / (1000 * 8 * 40 * 0.85 * 7 / 8 * 2 * 8 / 14), rel=1e-12)


def test_the_efficiencies_gradient_is_finite_on_every_random_case():
    """The fit differentiates the time by the constants: a side of NVLS of no finite bandwidth (a single node's
    unbounded heads) left in the time's unused branch made the gradient 0 x inf = NaN, and the fit stopped at its
    starting point (a review). Random cases, forced algorithms among them, all of NCCL's collectives."""
    cases = random_cases(np.random.default_rng(7), 400)
    columns = [
        np.asarray(cases[k], dtype=np.float64 if k not in ("nvswitch", "collnet") else bool) for k in FIELDS
    ]
    kinds = {"coll", "g", "hosts", "domain", "nics", "arch", "algo", "proto"}
    columns = [c.astype(np.int64) if k in kinds else c for k, c in zip(FIELDS, columns)]
    at = {k: i for i, k in enumerate(FIELDS)}

    def total(eta):
        values = list(columns)
        values[at["eta_net"]], values[at["eta_nvl"]] = (
            values[at["eta_net"]] * eta[0],
            values[at["eta_nvl"]] * eta[1],
        )
        t = compiled(*values).seconds
        return jnp.sum(jnp.where(jnp.isfinite(t), jnp.log(t), 0.0))

    with jax.enable_x64(True):
        import jax.numpy as jnp

        grad = jax.grad(total)(jnp.ones(2))
    assert np.all(np.isfinite(np.asarray(grad))), grad


def test_nccl_runs_collnet_up_to_8_ranks_a_node_and_nvls_all_gather_up_to_32():
    """NVIDIA/nccl@5067397c src/enqueue.cc skips CollNet (direct and chain) above NCCL_MAX_DIRECT_ARITY + 1 = 8
    ranks a node and NVLS's all-gather and reduce-scatter above NCCL_MAX_NVLS_ARITY = 32: a GB200 NVL72 rack
    (72 ranks one NCCL node) runs neither, forced or chosen (an audit against the source: its all-gather of
    10 MB had been priced as NVLS, 59 us at the shipped constants where a ring takes 98), where a DGX H100 of 8 runs both."""
    gb200, h100 = 18 * 40.1, 18 * 20.6  # NVLink as NCCL counts it: 18 links
    rack = dict(domain=18, collnet=True)
    for coll in (nccl.ALL_GATHER, nccl.REDUCE_SCATTER):
        assert run(coll, 1e7, 4, 18, gb200, 1, 50.0, 3, **rack)[1] != "nvls"
        assert run(coll, 1e7, 4, 18, gb200, 1, 50.0, 3, algo=nccl.NVLS, **rack)[1] != "nvls"  # falls back
        assert run(coll, 1e7, 8, 1, h100, 8, 50.0, 2, algo=nccl.NVLS)[1] == "nvls"
    for algo in (nccl.COLLNET_DIRECT, nccl.COLLNET_CHAIN):
        name = nccl.ALGORITHMS[algo]
        assert run(0, 1e9, 4, 36, gb200, 4, 50.0, 3, algo=algo, **rack)[1] != name  # two racks
        assert run(0, 1e9, 8, 4, h100, 8, 50.0, 2, algo=algo, collnet=True)[1] == name
    # NVLS across racks needs CollNet on, at any ranks a node
    assert run(0, 1e9, 4, 36, gb200, 4, 50.0, 3, algo=nccl.NVLS, **rack)[1] == "nvls"


def test_a_host_of_more_nics_than_gpus_is_one_device_a_gpu_to_nccl():
    # AWS's plugin groups the NICs beside each GPU into one NCCL device and reports their summed speed
    # (aws/aws-ofi-nccl@2daf7d30 nccl_ofi_topo.cpp, nccl_ofi_rdma.cpp): a p5's 32 x 100 Gbit/s EFA NICs are 8
    # devices of 400 to NCCL's search, so two such hosts are priced as hosts of 8 x 400 Gbit/s NICs, every size
    # (a fact-check: 32 channels of 12 GB/s had been searched where NCCL builds 8 of 48; at 256 KiB to 4 MiB, where
    # the channels' per-channel caps bind, they had differed: 4 MiB by 3%, tree for NVLSTree).
    for x in (2.0**18, 2.0**20, 2.0**22, float(GIB)):
        grouped, eight = run(0, x, 8, 2, H100_NVL, 32, 12.5, 2), run(0, x, 8, 2, H100_NVL, 8, 50.0, 2)
        assert grouped[1:] == eight[1:]
        assert grouped[0] == pytest.approx(eight[0], rel=1e-12)
        twin = reference.nccl_collective(0, x, 8, 2, 1, H100_NVL, 32, 12.5, 2, True, False, 1.0, 1.0, 0.0)
        assert twin[0] * 1e6 == pytest.approx(grouped[0], rel=1e-9)


def test_nvls_and_collnet_direct_take_one_head_a_nic_across_hosts():
    # A fact-check against NCCL's search.cc (ncclTopoSearchRecNet adds an NVLS or CollNet head only while the graph
    # has fewer channels than NICs, each on its own GPU) and tuning.cc (no NVLS or NVLSTree on fewer than two
    # channels): two DGX H100 hosts of one 400 Gbit/s NIC had run NVLSTree with 8 heads; NCCL cannot run it.
    eta = (0.9, 0.95)
    one_nic = run(0, GIB, 8, 2, H100_NVL, 1, 50.0, 2, eta=eta)
    assert one_nic[1] not in ("nvls", "nvls_tree")
    assert (
        run(0, GIB, 8, 2, H100_NVL, 1, 50.0, 2, eta=eta, algo=nccl.NVLS_TREE)[1] == one_nic[1]
    )  # falls back
    assert (
        run(0, GIB, 8, 2, H100_NVL, 2, 25.0, 2, eta=eta, algo=nccl.NVLS_TREE)[1] == "nvls_tree"
    )  # two heads
    # the host-side rule a sweep's fallback says (sweep.model.nccl_forcing) is the twin's, NICs and all
    from netsweep_jax.sweep.model.nccl_forcing import runs

    for nics in (1, 2):
        rule = runs("nvls_tree", all_reduce=True, arch=2, nvswitch=True, gpus_per_domain=8, domains=2, collnet=False,
                    domain_nics=nics)  # fmt: skip
        _, ran, _ = reference.nccl_collective(
            0, GIB, 8, 2, 1, H100_NVL, nics, 50.0, 2, True, False, *eta, 0.0, 5
        )
        assert rule == (nccl.ALGORITHMS[ran] == "nvls_tree") == (nics == 2)
    # CollNet direct with one or two 100 Gbit/s NICs a host: c_d = K heads, each channel at the NIC's 12.5 GB/s
    # (its share; NCCL's step 12), f = 8 / c_d GPUs a head, B = c_d 12.5 / (f - (f - 1) / 2) x 0.85 (Hopper),
    # algbw B / 2: twice the bytes cost X / (1000 algbw eta_net) us more (latencies and the fill cancel). Eight
    # heads on one NIC had been priced at the NIC's floor. One 400 Gbit/s NIC: its head's step, 48, is doubled
    # as NCCL duplicates channels (a review): 2 channels at 24, each run at its share of the NIC, 25, f = 4.
    for nics, rate, channels, speed in ((1, 12.5, 1, 12.5), (2, 12.5, 2, 12.5), (1, 50.0, 2, 25.0)):
        f = 8 / channels
        algbw = channels * speed / (f - (f - 1) / 2) * 0.85 / 2
        kw = dict(eta=eta, collnet=True, algo=2)
        one, algo, _ = run(0, GIB, 8, 2, H100_NVL, nics, rate, 2, **kw)
        two, _, _ = run(0, 2 * GIB, 8, 2, H100_NVL, nics, rate, 2, **kw)
        assert algo == "collnet_direct" and two - one == pytest.approx(
            GIB / (1000 * algbw * eta[0]), rel=1e-9
        )


@pytest.mark.parametrize(
    "name,args,kw",
    [
        # NVLSTree on two hosts of 8 x 200 Gbit/s (its 2-node ratio had run 208 GB/s through 200 GB/s of NICs)
        ("nvls tree, 2 hosts", (0, GIB, 8, 2, H100_NVL, 8, 25, 2), {"algo": 5}),
        # over a spine's divisor (or a utilization below 1): the floor's rate divided too (a review: it was not).
        # CollNet direct no longer reaches the floor: one head a NIC, NCCL's own estimate (a test below).
        ("nvls tree, spine 2", (0, GIB, 8, 2, H100_NVL, 8, 25, 2), {"algo": 5, "spine": 2.0}),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_an_all_reduce_across_hosts_never_runs_under_its_nics_floor(name, args, kw):
    # A hunt: every host's X leaves it through its NICs once at least, whatever reduces it. Where that binds, each
    # further byte costs 1 / (K r eta_net): twice the bytes, X / (1000 K r eta_net) us more (latencies cancel).
    coll, x, g, hosts, nvl, nics, r, arch = args
    eta = (0.9, 0.95)
    one, algo, _ = run(*args, eta=eta, **kw)
    two, again, _ = run(coll, 2 * x, g, hosts, nvl, nics, r, arch, eta=eta, **kw)
    assert algo == again == nccl.ALGORITHMS[kw["algo"]]
    assert two - one == pytest.approx(x * kw.get("spine", 1.0) / (1000 * nics * r * eta[0]), rel=1e-9)
    for size in (x, 2 * x):  # the float64 twin the same
        sec, _, _ = reference.nccl_collective(
            coll, size, g, hosts, 1, nvl, nics, r, arch, True, kw.get("collnet", False), *eta, 0.0,
            kw["algo"], -1, spine=kw.get("spine", 1.0),
        )  # fmt: skip
        assert sec * 1e6 == pytest.approx(
            run(coll, size, g, hosts, nvl, nics, r, arch, eta=eta, **kw)[0], rel=1e-9
        )
