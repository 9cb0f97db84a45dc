"""The layout model with ``--collectives nccl`` (kernels/layout_collectives.py through kernels/nccl.py): against
the float64 reference on random layouts in both dtypes, and a 2-host data-parallel all-reduce by hand."""

import collections
import math
import random

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from layout_cases import LLAMA_8B, NCCL_FABRIC, TOLERANCE, gpt3_case, random_case, run_kernel

import reference
from helpers import invoke
from netsweep_jax import sweep
from netsweep_jax.kernels import layout_collectives, nccl
from netsweep_jax.kernels.layout_inputs import Parallelism
from netsweep_jax.sweep.analysis.planning import ideal_network
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.engine.layouts import make_layout_grid
from netsweep_jax.sweep.model.fabrics import FABRICS


def nccl_cases(seed, count):
    """Random layouts of tests/layout_cases.py priced by NCCL's tuner, each on a random GPU architecture."""
    rng, wiring, forcing = random.Random(seed), random.Random(seed + 1000), random.Random(seed + 2000)
    cases = []
    for _ in range(count):
        arch, dev, lay = random_case(rng)
        lay.update(collectives=1, nccl_arch=rng.choice([0, 1, 2, 3]))
        # A tier above the hosts (0: none) and its spine's oversubscription (below 1 priced as 1).
        lay.update(leaf_hosts=rng.choice([0, 1, 2, 4]), oversubscription=rng.choice([0.5, 1.0, 2.0, 3.0]))
        # SHARP (NCCL's CollNet on) and rail-only wiring, from their own draws (the cases above unchanged).
        lay.update(sharp=float(wiring.random() < 0.5), rail_only=float(wiring.random() < 0.3))
        # NCCL's own choice (3), or an algorithm or protocol forced (3 + kernels.nccl.FORCINGS' index: nccl:ALGO
        # 4 to 10, nccl:PROTO 11 to 13).
        lay.update(collective=forcing.choice([3, 3, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]))
        # SHARP's heads are one a NIC across hosts (NCCL's search), so its own choice seldom takes CollNet: a
        # quarter of SHARP's cases force CollNet direct (6), which runs only with SHARP on
        if lay["sharp"] and wiring.random() < 0.25:
            lay.update(collective=6)
        cases.append((arch, dev, lay))
    return cases


@pytest.mark.parametrize("dtype,seed", [("float64", 10), ("float32", 11)])
def test_nccl_pricing_matches_reference_on_random_layouts(dtype, seed):
    cases = nccl_cases(seed, 400)
    out = run_kernel(cases, dtype)
    valid = spined = sharped = railed = forced = protocols = 0
    for i, case in enumerate(cases):
        ref = reference.layout_step(*case)
        assert out["status"][i] == ref["status"], (i, case)
        if ref["status"]:
            continue
        valid += 1
        for key, value in ref.items():
            assert math.isclose(out[key][i], value, rel_tol=TOLERANCE[dtype], abs_tol=1e-9), (i, key, case)
        arch, dev, lay = case
        step = ref["iteration_time"]
        spined += step != reference.layout_step(arch, dev, {**lay, "oversubscription": 1.0})["iteration_time"]
        sharped += step != reference.layout_step(arch, dev, {**lay, "sharp": 0.0})["iteration_time"]
        railed += step != reference.layout_step(arch, dev, {**lay, "rail_only": 0.0})["iteration_time"]
        unforced = step != reference.layout_step(arch, dev, {**lay, "collective": 3})["iteration_time"]
        forced += unforced
        protocols += unforced and lay["collective"] >= 11
    assert valid > 40  # enough NCCL-priced layouts that can exist to mean something
    # and enough whose groups cross an oversubscribed spine, reduce with SHARP, are wired rail-only or run an
    # algorithm or protocol NCCL would not have chosen
    assert spined >= 5 and sharped >= 2 and railed >= 2 and forced >= 5, (spined, sharped, railed, forced)
    assert protocols >= 2, protocols


def test_the_flex_dispatchers_rdma_stage_shares_an_oversubscribed_spine():
    # DeepEP's RDMA stage crosses the same leaf uplinks as NCCL's all-to-all: over a spine of oversubscription 4
    # (a leaf of one host, so every EP group of several hosts crosses it) its NICs run at a quarter of their rate.
    flex = [(a, d, lay) for a, d, lay in nccl_cases(10, 400) if lay["moe_dispatcher"] and a["experts"]]
    cases = [
        (a, d, {**lay, "leaf_hosts": 1.0, "oversubscription": o, "rail_only": 0.0})
        for a, d, lay in flex
        for o in (4.0, 1.0)
    ]
    out = run_kernel(cases, "float64")
    slower = 0
    for i in range(0, len(cases), 2):
        spined, flat = (reference.layout_step(*cases[j]) for j in (i, i + 1))
        if spined["status"]:
            continue
        for j, ref in ((i, spined), (i + 1, flat)):
            assert math.isclose(
                out["ep_exposed"][j], ref["ep_exposed"], rel_tol=TOLERANCE["float64"], abs_tol=1e-12
            )
        slower += spined["ep_exposed"] > flat["ep_exposed"]
    assert slower >= 3, slower


def test_nccl_pricing_changes_the_network_terms():
    # The same layouts priced flat and by NCCL: the collectives' terms move, the memory does not.
    cases = [c for c in nccl_cases(12, 200) if reference.layout_status(c[0], c[2]) == 0]
    flat = [(a, d, {**lay, "collectives": 0}) for a, d, lay in cases]
    nccl = [(a, d, {**lay, "collectives": 1}) for a, d, lay in cases]
    out_flat, out_nccl = run_kernel(flat, "float64"), run_kernel(nccl, "float64")
    np.testing.assert_array_equal(out_flat["memory_gb"], out_nccl["memory_gb"])
    moved = out_flat["dp_exposed"] + out_flat["tp_exposed"] != out_nccl["dp_exposed"] + out_nccl["tp_exposed"]
    assert moved.mean() > 0.5


def test_a_step_prices_its_collectives_with_one_tuner_per_kind(monkeypatch):
    # kernels/layout_collectives.priced_together: the step's ~24 collectives go through one tuner loop per kind of
    # collective (all-reduce, all-gather, ...), so the compiled program holds at most five copies of NCCL's
    # tuner, not one per collective (their numbers: the reference test).
    from netsweep_jax.kernels import layout as layout_kernel

    calls = []

    # Only the calls are counted: a stand-in's time, not the tuner's (seconds to trace, 24 times in the second).
    def counted(coll, *args):
        calls.append((coll, *args))
        zeros = jnp.zeros(jnp.broadcast_shapes(*(jnp.shape(v) for v in jax.tree.leaves(args))))
        return nccl.Timing(zeros, zeros.astype(jnp.int32), zeros.astype(jnp.int32))

    monkeypatch.setattr(nccl, "collective", counted)
    (arch, dev, lay) = nccl_cases(13, 1)[0]
    lay = {**lay, "tp": 8, "dp": 4, "pp": 2, "cp": 2, "gpus": 128, "global_batch": 64}
    rec = [kernelize(layout_kernel.Arch, arch), kernelize(layout_kernel.Device, dev),
           kernelize(Parallelism, lay)]  # fmt: skip
    jax.make_jaxpr(lambda *r: layout_kernel.step(*r))(*rec)  # traced afresh (a new function), not run
    kinds = [args[0] for args in calls]
    assert len(kinds) == len(set(kinds)) and set(kinds) == set(range(len(nccl.COLLECTIVES)))
    calls.clear()
    monkeypatch.setattr(layout_kernel, "priced_together", lambda step: step())
    jax.make_jaxpr(lambda *r: layout_kernel.step(*r))(*rec)
    assert len(calls) > 10


def kernelize(record, values):
    return record(**{f: np.asarray(float(values[f])) for f in record._fields})


def test_two_host_data_parallel_all_reduce_takes_nvls_tree_by_hand():
    # 16 H100s (NVLink 4, 450 GB/s: 18 links, 20.6 GB/s each as NCCL counts them) on 2 hosts of 8 x 400 Gbit/s
    # NICs, one data-parallel group of 16 (stride 1), all-reducing 1 GiB. NCCL's tuner (kernels/nccl.py's
    # docstring): NVLSTree, c_n = 8 heads, s_n = speed(370.8 / 9 = 41.2) = 40 (Hopper's inter-node list; a
    # head's link carries its channel twice), s_x = speed(min(8 x 50 / 8, 80)) = 48, b_i = 40 x 0.85 x 7/8 x 2 =
    # 59.5, bus B = 8 min(59.5, 96, 57.7) = 461.6 GB/s (the per-channel cap of NVLSTree on 2 Hopper nodes), its
    # NVLink side B_nvl = 8 x 59.5 = 476; algorithm bandwidth A = B 16 / 30. Latency: l_i = 25 us, l_x = 20.9 +
    # 2 lambda, 2 floor(log2 2) l_x; the whole fill f (X > X_f). Each side at its own efficiency:
    # Time = lat + X / A max(1 / eta_net, B / (B_nvl eta_nvl)) + f, NVLink's the slower at the shipped constants.
    lay = {**gpt3_case()[2], "nvlink_bw": 450e9, "nvlink_domain": 8, "gpus_per_node": 8, "nics_per_node": 8}
    lay.update(bandwidth=400e9, utilization=1.0, nccl_arch=2, collectives=1, collective=3)  # 3: NCCL's choice
    x = 2.0**30
    eta_net, eta_nvl, lam, _, fill, fill_bytes = layout_collectives.NCCL_CONSTANTS
    assert x > fill_bytes
    bus, nvlink_side = 8 * 57.7, 8 * 40 * 0.85 * 7 / 8 * 2
    lat = 25.0 + 2 * (20.9 + 2 * lam)
    slower = max(1 / eta_net, bus / (nvlink_side * eta_nvl))
    assert slower == bus / (nvlink_side * eta_nvl)
    expected = (lat + x / (1000 * bus * 16 / 30) * slower + fill) * 1e-6
    group = Parallelism(**{k: np.float64(v) for k, v in lay.items()})
    with jax.enable_x64(True):  # one small compile for both pricings (eager, the NCCL engine takes seconds)
        both = jax.jit(
            lambda lay, x: [
                layout_collectives.all_reduce(x, 16.0, 1.0, lay._replace(collectives=k)) for k in (1, 0)
            ]
        )
        kernel, flat = (float(v) for v in both(group, np.float64(x)))
        forcings = {  # the same compile: the collective's code and the size are inputs
            (code, size): float(both(group._replace(collective=np.float64(code)), np.float64(size))[0])
            for code, size in ((12, x), (13, 8.0), (3, 8.0))
        }
    assert kernel == pytest.approx(expected, rel=1e-9)
    assert reference._collective("allreduce", x, 16, 1, lay) == pytest.approx(expected, rel=1e-12)
    # Its bus bandwidth, 2 (n - 1) / n X / t: NVLSTree sends each byte across the host boundary once, so at the
    # fitted constants it reaches 419.3 GB/s (measured on such hosts: 467-487, tests/test_nccl*.py) where the flat
    # ring at full utilization gives the NICs' 400 GB/s and no latency: NCCL's choice, not a faster link.
    busbw = 30 / 16 * x / expected / 1e9
    assert busbw == pytest.approx(419.34, rel=1e-4)
    assert flat == pytest.approx(30 / 16 * x / 400e9, rel=1e-12)
    # Forced to a ring (--collective nccl:ring, code 4 + RING; as NCCL_ALGO=Ring) every byte crosses the host
    # boundary twice: slower than NVLSTree, as measured on such hosts (NT309B-H100-2x8-RING: 392.7 GB/s busbw at
    # 8 GiB against 466.7 with NCCL's choice). Priced here by the float64 reference, which the kernel matches on
    # random layouts with forced algorithms (test_nccl_pricing_matches_reference_on_random_layouts).
    ring = reference._collective("allreduce", x, 16, 1, {**lay, "collective": 4 + nccl.RING})
    # Its protocol forced to LL128 (--collective nccl:ll128, code 3 + 8 + LL128; as NCCL_PROTO=LL128): NVLSTree
    # runs only Simple, so NCCL takes the fastest LL128: the ring's. Its graph on two hosts: s = speed(min(50,
    # 370.8)) = 48, c = 8 NICs x floor(50 / 48) = 8 channels (not duplicated: Hopper, s < 50, c > 4), each
    # crossing the host's NVLink, so s = min(48, 370.8 / 8) = 46.35; bus B = min(0.92 x 8 x 46.35, 8 x 36.7) =
    # 293.6 GB/s (the per-channel LL128 cap), A = B 16 / 30; latency 14 + 28 x 1.9 (NVLink steps) + 2 (4.0 +
    # lambda) (the two steps across hosts) = 78.82 us; and the whole fill f.
    ll128 = (14.0 + 28 * 1.9 + 2 * (4.0 + lam) + x / (1000 * 8 * 36.7 * 16 / 30 * eta_net) + fill) * 1e-6
    assert forcings[12, x] == pytest.approx(ll128, rel=1e-9)
    assert reference._collective("allreduce", x, 16, 1, {**lay, "collective": 12}) == pytest.approx(
        ll128, rel=1e-12
    )
    # An 8-byte all-reduce: NCCL's choice is the tree's LL (28.82 us); forced to Simple (nccl:simple, code 13, as
    # NCCL_PROTO=Simple) NVLSTree's latency 25 + 2 (20.9 + 2 lambda) = 74.0 us (its bandwidth term and fill
    # under 1e-4 us), 2.6 times as long: what NCCL_PROTO=Simple costs the smallest messages.
    assert forcings[13, 8.0] == pytest.approx((25.0 + 2 * (20.9 + 2 * lam)) * 1e-6, rel=1e-5)
    assert forcings[3, 8.0] == pytest.approx(28.82e-6, rel=1e-3)
    assert 30 / 16 * x / ring / 1e9 < 0.9 * busbw


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--collectives", "ring"], "--collectives 'ring': unknown; known: flat, nccl"),
        (["--collectives", "flat,nccl"], "--collectives flat,nccl: give one value"),
        (["--collectives", "nccl", "--latency", "5"], "--latency 5: --latency is the flat collectives'"),
        (
            ["--collectives", "nccl", "--collective", "ring"],
            "--collective ring: a flat collective (one bandwidth per group); --collectives nccl asks for",
        ),
        (
            ["--collective", "nccl,ring"],
            "--collective nccl,ring: nccl (NCCL's tuner; nccl:ALGO, nccl:PROTO with one",
        ),
        (
            ["--collective", "nccl:ring,tree"],
            "prices every collective of a sweep, so it is not listed with the",
        ),
        (
            ["--collectives", "flat", "--collective", "nccl"],
            "--collective nccl: NCCL's pricing, where --collectives",
        ),
        (
            ["--collective", "nccl:p2p"],
            "--collective 'nccl:p2p': unknown; known: ring, tree, ring-or-tree, nccl,",
        ),
    ],
)
def test_bad_collectives_are_one_line_and_write_nothing(tmp_path, extra, message):
    for command in ("grid", "plan"):
        r = invoke(command, *LLAMA_8B, *extra, "--out", tmp_path / "out.h5")
        assert r.exit_code == 2 and message in r.output, r.output
        assert len(r.output.strip().splitlines()) == 1 and not list(tmp_path.iterdir())


def test_the_setting_is_the_grids_and_nccl_is_stated_in_the_assumed_line():
    flat = make_layout_grid("llama3-8b", gpus=8, global_batch=8)
    nccl = make_layout_grid("llama3-8b", gpus=8, global_batch=8, collectives="NCCL")
    assert (flat.collectives, flat.collectives_code, nccl.collectives, nccl.collectives_code) == (
        "flat",
        0,
        "nccl",
        1,
    )
    assert nccl.per_sweep()["collectives"] == "nccl" and flat.fingerprint() != nccl.fingerprint()
    assert not any("as NCCL's tuner prices" in a for a in flat.assumed)  # the flat default is said as such
    defaulted = "--collective ring-or-tree (flat"
    assert any(a.startswith(defaulted) for a in flat.assumed)
    (stated,) = [a for a in nccl.assumed if "NCCL" in a]
    assert "eta_net 0.968, eta_nvl 0.905, latency 1.8 us, op 9.71 us, fill 53.5 us from 10.9 MiB" in stated
    # sweep plan's ideal network is flat (NCCL's latencies are no NIC's), the same cells as the plan's.
    ideal = ideal_network(nccl)
    assert ideal.collectives == "flat" and ideal.names == nccl.names
    # #39's one naming: --collective nccl is NCCL's tuner in the layout family as in the data-parallel one (the
    # same grid as the old spelling's); the flat default, the cheaper of ring and tree, is ring-or-tree.
    named = make_layout_grid("llama3-8b", gpus=8, global_batch=8, collective="nccl")
    assert named.collectives == "nccl" and named.fingerprint() == nccl.fingerprint()
    assert flat.names["collective"] == ("ring-or-tree",) and nccl.names["collective"] == ("nccl",)
    listed = make_layout_grid("llama3-8b", gpus=8, global_batch=8, collective="ring,tree,ring-or-tree")
    assert listed.collectives == "flat" and listed.names["collective"] == ("ring", "tree", "ring-or-tree")
    # The default is said only where it was taken: not for a collective given, old spelling or a fabric's.
    old = make_layout_grid("llama3-8b", gpus=8, global_batch=8, collectives="flat")
    fabric = make_layout_grid("llama3-8b", gpus=8, global_batch=8, fabric=FABRICS["dgx-h100-superpod"])
    for grid in (listed, named, nccl, old, fabric):
        assert not any(a.startswith(defaulted) for a in grid.assumed)
    # The Python API takes the same setting and refuses a bad one by name, before any work.
    with pytest.raises(InputError, match="tree"):
        sweep.evaluate_layouts("llama3-8b", gpus=8, global_batch=8, collectives="tree")


def test_a_mixture_of_experts_model_is_priced_by_nccl_too():
    # Refused while each collective inlined NCCL's tuner (the compile did not finish in 14 minutes); with one tuner
    # for all of them a MoE plan compiles in seconds (docs/parallelism.md): its grid is built, not refused.
    grid = make_layout_grid("qwen3-30b-a3b", gpus=64, global_batch=64, collectives="nccl")
    assert grid.collectives == "nccl" and any("NCCL's tuner" in a for a in grid.assumed)


def test_nccl_pricing_keeps_the_links_full_rate_where_a_stacks_utilization_would_count_eta_net_twice():
    # The default stack's utilization (0.92) is fitted with flat collectives; NCCL's pricing has its own fitted
    # transport efficiency, so with --collectives nccl the utilization stays 1 unless given.
    def utilization(**kwargs):
        return list(make_layout_grid("llama3-8b", gpus=64, global_batch=64, **kwargs).coords()["utilization"])

    assert utilization(collectives="flat") == [pytest.approx(0.92)]
    assert utilization(collectives="nccl") == [1.0]
    assert utilization(collectives="nccl", stack="megatron-core") == [1.0]
    assert utilization(collectives="nccl", utilization="0.8") == [pytest.approx(0.8)]
    said = make_layout_grid("llama3-8b", gpus=64, global_batch=64, collectives="nccl").assumed
    assert any("utilization 1 (eta_net is the transport's efficiency)" in a for a in said)


def test_a_forced_algorithms_name_is_its_code_in_the_kernel():
    # --collective nccl:ALGO (as NCCL_ALGO): the names core declares are kernels.nccl's algorithms (send/recv's
    # p2p aside, which no one forces), each coded 4 + its index, which kernels.layout_collectives reads.
    from netsweep_jax.sweep.core.layout_axes import LAYOUT_COLLECTIVES, NCCL_ALGORITHMS, NCCL_PROTOCOLS

    assert NCCL_ALGORITHMS == nccl.ALGORITHMS[: nccl.P2P]
    codes = [LAYOUT_COLLECTIVES.index(f"nccl:{a}") for a in NCCL_ALGORITHMS]
    nccl_code = layout_collectives.NCCL_CHOICE
    assert codes == [nccl_code + nccl.FORCINGS.index(a) for a in NCCL_ALGORITHMS]
    assert LAYOUT_COLLECTIVES.index("nccl") == nccl_code
    # --collective nccl:PROTO (as NCCL_PROTO): kernels.nccl's protocols, after the algorithms.
    assert NCCL_PROTOCOLS == nccl.PROTOCOLS
    codes = [LAYOUT_COLLECTIVES.index(f"nccl:{p}") for p in NCCL_PROTOCOLS]
    assert codes == [nccl_code + nccl.FORCINGS.index(p) for p in NCCL_PROTOCOLS]
    for i, name in enumerate(nccl.FORCINGS):
        algorithm, protocol = (int(v) for v in nccl.forcing(i))
        assert (algorithm, protocol) == reference.forcing(i)
        assert (
            nccl.ALGORITHMS[algorithm]
            if algorithm >= 0
            else nccl.PROTOCOLS[protocol]
            if protocol >= 0
            else None
        ) == name


def test_a_layout_sweep_says_where_a_forced_algorithm_runs():
    grid = make_layout_grid("llama3-8b", gpu="h100", gpus=16, global_batch=16, collective="nccl:nvls,nccl:ll")
    assert "nccl:nvls on each group that can run it (it needs Hopper or newer" in "; ".join(grid.assumed)
    # where no group can (NVLS on A100s, CollNet without SHARP), said so, as a data-parallel sweep says (a hunt)
    for gpu, forced in (("a100", "nccl:nvls"), ("h100", "nccl:collnet_direct")):
        said = make_layout_grid("llama3-8b", gpu=gpu, gpus=16, global_batch=16, collective=forced).assumed
        assert f"{forced} cannot run anywhere in this sweep (it needs " in "; ".join(said), said
    assert "NCCL's own choice on the others and on every all-to-all and send" in "; ".join(grid.assumed)
    assert "nccl:ll on each group" not in "; ".join(grid.assumed)
    # a forced protocol was said nowhere (a hunt): the step moved, the line read as NCCL's own choice
    assert (
        "nccl:ll on every all-reduce, all-gather and reduce-scatter (NCCL's choice of the algorithms that run it), "
        "Simple on every all-to-all and send" in "; ".join(grid.assumed)
    )


def test_a_groups_nics_are_whole_and_more_never_make_a_slower_step():
    # A hunt: 33 NICs over a host's 8 one-GPU DP groups (TP 8) gave each 4.125 NICs, a fraction NCCL's channel
    # rules read, and a slower step than 32 did. Whole NICs: 8 and 9 give each group 1, the same step; 16 give 2.
    cases = [
        gpt3_case(tp=8, gpus=512, global_batch=64, zero=3, overlap=0, bandwidth=25e9, collectives=1, collective=3,
                  nics_per_node=k)
        for k in (8, 9, 16)
    ]  # fmt: skip
    out = run_kernel(cases, "float64")
    step = out["iteration_time"]
    assert (out["status"] == 0).all() and step[0] == step[1] and step[2] < step[1], step
    for case, got in zip(cases, step):
        assert reference.layout_step(*case)["iteration_time"] == pytest.approx(got, rel=1e-9)


def test_a_lower_transport_efficiency_makes_the_network_a_larger_share_of_the_step():
    # The layout kernel priced by NCCL (this file's compile: float64, the rows block) on random
    # layouts, with the shipped constants and with a fabric of half the efficiency across hosts and a longer
    # latency: every layout waits on the network at least as long, those with traffic across hosts longer.
    rng = random.Random(12)
    cases = []
    while len(cases) < 60:
        arch, dev, lay = random_case(rng)
        # NCCL's alltoall dispatcher: the flex one inside an NVLink domain runs DeepEP's NVLink kernels, not
        # NCCL's, and reads neither constant changed here (tests/test_layout.py checks it).
        lay.update(collectives=1, moe_dispatcher=0)
        if reference.layout_status(arch, lay) == 0:
            cases.append((arch, dev, lay))
    slow = [(a, d, {**lay, "eta_net": 0.45, "nccl_latency": 20.0}) for a, d, lay in cases]
    base, worse = run_kernel(cases, "float64"), run_kernel(slow, "float64")
    assert np.all(worse["network_fraction"] >= base["network_fraction"] - 1e-12)
    assert np.all(worse["iteration_time"] >= base["iteration_time"] * (1 - 1e-12))
    crossing = base["network_fraction"] > 0
    assert crossing.sum() > 10 and np.all(
        worse["network_fraction"][crossing] > base["network_fraction"][crossing]
    )
    # The reference prices the same constants the same way (tests/reference.py reads them from the layout).
    for i in (int(np.flatnonzero(crossing)[0]),):
        ref = reference.layout_step(*slow[i])
        assert worse["iteration_time"][i] == pytest.approx(ref["iteration_time"], rel=1e-9)


def straddling_cases(seed, count):
    """Random MoE layouts on 4-GPU trays in NVL72 racks of 144, 288 or 240 GPUs (60 a rack), EP 8 or 16 (with
    expert TP 1 or 2) and PP 1 to 4: EP blocks of 16 or 32 ranks and DP blocks of 96 cross the racks' edges (72 is
    no whole number of them), EP 8 and DP 72 or 144 do not."""
    rng = random.Random(seed)
    cases = []
    for arch, dev, lay in nccl_cases(seed, count):
        arch.update(experts=16, moe_layers=max(arch["moe_layers"], 1), top_k=arch["top_k"] or 2)
        lay.update(
            gpus=rng.choice([144, 288, 240]), nvlink_domain=72, gpus_per_node=4, nics_per_node=4, dp=0,
            tp=rng.choice([1, 2]), cp=1, pp=rng.choice([1, 2, 3, 4]), ep=rng.choice([8, 16]),
            expert_tp=rng.choice([1, 2]), global_batch=1152,
        )  # fmt: skip
        cases.append((arch, dev, lay))
    return cases


def test_a_group_whose_block_crosses_a_domains_edge_is_priced_at_its_fewest_gpus_in_one():
    # A hunt: EP 32 on 288 GPUs of 72-GPU racks puts ranks 64-95 on two racks, 8 and 24, and `plan` ranked it first
    # with its all-to-all priced on NVLink; those 8 GPUs send 24/32 of theirs over their NICs. A block of ranks
    # meets the domains at the fewest in gcd(block, Q) of its GPUs where the job fills several whole domains of
    # whole hosts.
    from netsweep_jax.kernels.layout_collectives import domain_part, job_domain, most_in_domain

    extents = [32, 96, 8, 144, 32, 32, 48, 12, 8, 16, 2**33]
    jobs = [288, 288, 288, 288, 64, 304, 288, 72, 48, 48, 72 * 2**28]
    hosts = [4, 4, 4, 4, 4, 4, 4, 4, 8, 8, 4]
    # 64 GPUs: one rack; 304: not whole racks (even placement, said); a domain of 12 on 8-GPU hosts splits a host
    # (a review: TP 8 inside one host had been priced across an edge at rank 12); 2^33 ranks in 32-bit integers
    want = [8, 24, 8, 72, 72, 72, 24, 72, 12, 12, 8]
    for dtype in (np.float32, np.float64):
        domains = np.array([72.0] * 8 + [12.0, 12.0, 72.0], dtype)
        got = domain_part(*(np.array(v, dtype) for v in (extents, jobs, hosts)), domains)
        np.testing.assert_array_equal(np.asarray(got), want)
        lay = [
            {"gpus": g, "gpus_per_node": h, "nvlink_domain": float(q)}
            for g, h, q in zip(jobs, hosts, domains)
        ]
        assert [reference._domain_part(x, one) for x, one in zip(extents, lay)] == want
    # The most of a group in one domain, an all-to-all's NVLink side: EP 96 on 288 GPUs has a whole rack of 72 (a
    # review: NCCL's even spread had given 48); the job's GPUs a domain, 60 for 240 GB200s; domains of 12 on 8-GPU
    # hosts split a host and keep 12 (a review: placed 8 a domain).
    assert float(most_in_domain(96.0, 1.0, 288.0, 4.0, 72.0)) == 72.0
    assert float(most_in_domain(32.0, 1.0, 288.0, 4.0, 72.0)) == 32.0
    jobs = ((240.0, 4.0, 72.0), (16.0, 8.0, 12.0), (76.0, 4.0, 72.0))
    assert [float(job_domain(g, h, q)) for g, h, q in jobs] == [60.0, 12.0, 72.0]
    twin = [reference._job_domain({"gpus": g, "gpus_per_node": h, "nvlink_domain": q})[0] for g, h, q in jobs]
    assert twin == [60.0, 12.0, 72.0]  # a review: the twin had placed the 12-GPU domains 8 a domain
    # By hand, kernel and reference: EP 32's all-to-all on 288 GPUs is NCCL's over racks of its smallest part, 8
    # GPUs (2 trays): the same as on 8-GPU domains, and slower than inside one rack (32 GPUs, one domain).
    arch, dev, lay = gpt3_case()
    moe = dict(arch, experts=32, top_k=2, moe_layers=arch["layers"], expert_ffn=arch["ffn"], shared_experts=0)
    rack = {**lay, **NCCL_FABRIC, "collectives": 1, "collective": 3, "nccl_arch": 3, "nvlink_bw": 900e9}
    rack.update(gpus=288, tp=1, pp=1, cp=1, dp=0, ep=32, expert_tp=1, nvlink_domain=72, gpus_per_node=4)
    rack.update(nics_per_node=4, bandwidth=400e9, global_batch=1152, micro_batch=1, moe_dispatcher=0)
    one_rack = {**rack, "gpus": 64, "global_batch": 256}
    fast = {"bandwidth": 1e15}  # NICs all but free: the NVLink side bounds the all-to-all
    cases = [(moe, dev, lay) for lay in (rack, {**rack, "nvlink_domain": 8}, one_rack)]
    cases += [(moe, dev, {**rack, **fast}), (moe, dev, {**one_rack, **fast})]
    # 240 GPUs, placed 60 a rack: EP 16's blocks cross an edge at 4 GPUs; 256, 64 a rack, they fit (a hunt)
    cases += [(moe, dev, {**rack, "gpus": g, "global_batch": 4 * g, "ep": 16}) for g in (240, 256)]
    out = run_kernel(cases, "float64")
    ref = [reference.layout_step(*case)["ep_exposed"] for case in cases]
    np.testing.assert_allclose(out["ep_exposed"], ref, rtol=TOLERANCE["float64"])
    assert ref[0] == ref[1] > 3 * ref[2], ref
    # A block across the edge is no cheaper than one inside a rack where the NICs cost nothing (a hunt: its larger
    # side's NVLink share had been priced at the smaller side's 7 peers, 4.4 times cheaper); and 240 GPUs' EP 16
    # pays its crossing
    assert ref[3] >= ref[4] * (1 - 1e-12) and ref[5] > 2 * ref[6], ref


def test_random_groups_across_domains_edges_match_the_reference_and_change_the_price(monkeypatch):
    # Random layouts that cross racks' edges and that do not, against the float64 reference in both dtypes and
    # both pricings (NCCL's, flat), both dispatchers and rail-only wiring; the rule moves enough of them (a review:
    # a branch where the kernel and its twin both ignored it would have passed).
    cases = straddling_cases(40, 150)
    flat = [(a, d, {**lay, "collectives": 0, "collective": 2}) for a, d, lay in cases[:60]]
    valid = set()
    for batch, dtype in ((cases, "float32"), (cases, "float64"), (flat, "float64")):
        out = run_kernel(batch, dtype)
        for i, case in enumerate(batch):
            ref = reference.layout_step(*case)
            assert out["status"][i] == ref["status"], (i, case)
            for key, value in ref.items() if not ref["status"] else ():
                assert math.isclose(out[key][i], value, rel_tol=TOLERANCE[dtype], abs_tol=1e-9), (i, key)
            if not ref["status"]:
                valid.add((id(batch), i))
    batches = {id(cases): cases, id(flat): flat}

    def step(key):  # the reference's step of a valid case, and the kind its pricing is
        batch, i = batches[key[0]], key[1]
        lay = batch[i][2]
        kind = (
            "flat"
            if batch is flat
            else "rail-only"
            if lay["rail_only"]
            else ("alltoall", "flex")[lay["moe_dispatcher"]]
        )
        return reference.layout_step(*batch[i])["iteration_time"], kind

    priced = {key: step(key) for key in valid}
    monkeypatch.setattr(reference, "_domain_part", lambda extent, lay: lay["nvlink_domain"])  # the rule off
    moved = collections.Counter(kind for key, (seconds, kind) in priced.items() if step(key)[0] != seconds)
    assert len(valid) >= 40 and all(moved[k] >= 3 for k in ("flat", "rail-only", "alltoall", "flex")), moved
