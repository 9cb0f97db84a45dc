"""The layout model (kernels/layout.py) against the float64 reference and hand-computed cases."""

import math
import random

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from layout_cases import TOLERANCE, gpt3_case, random_case, run_kernel, run_one

import reference
from netsweep_jax.kernels import layout as kernel
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.model.llms import LLMS, parse_arch


@pytest.mark.parametrize("dtype,seed", [("float64", 0), ("float32", 1)])
def test_kernel_matches_reference_on_random_configurations(dtype, seed):
    rng = random.Random(seed)
    cases = [random_case(rng) for _ in range(1800)]  # 1,800: over 200 of them can exist under all 14 rules
    out = run_kernel(cases, dtype)
    valid = 0
    for i, case in enumerate(cases):
        ref = reference.layout_step(*case)
        assert out["status"][i] == ref["status"], (i, case)
        if ref["status"]:
            assert all(np.isnan(out[k][i]) for k in out if k != "status")
            continue
        valid += 1
        for key, value in ref.items():
            assert math.isclose(out[key][i], value, rel_tol=TOLERANCE[dtype], abs_tol=1e-9), (i, key, case)
    assert valid > 200  # enough layouts that can exist to mean something
    every_status = {reference.layout_status(c[0], c[2]) for c in cases}
    assert every_status == set(range(len(kernel.STATUS)))  # every rule is hit


def test_breakdown_adds_up_and_everything_is_finite():
    cases = [random_case(random.Random(2)) for _ in range(1)] + [
        random_case(random.Random(s)) for s in range(400)
    ]
    out = run_kernel(cases, "float64")
    ok = out["status"] == 0
    total = sum(out[k] for k in kernel.BREAKDOWN)
    np.testing.assert_allclose(total[ok], out["iteration_time"][ok], rtol=1e-12)
    for key in kernel.OUTPUTS:
        assert np.isfinite(out[key][ok]).all(), key
    assert ((out["network_fraction"][ok] >= 0) & (out["network_fraction"][ok] <= 1)).all()
    assert (out["mfu"][ok] > 0).all() and (out["mfu"][ok] < 1).all()


def test_tp_all_reduce_on_nvlink_by_hand():
    # GPT-3 175B, TP 8 inside a DGX A100: each all-reduce carries b s h = 1 x 2048 x 12288 two-byte
    # activations, 50.33 MB; a ring of 8 on 300 GB/s NVLink moves 2 x 7/8 of it: 293.6 us. Four per
    # layer (two forward, two backward), 96 layers, one micro-batch.
    out = run_one(gpt3_case())
    per_all_reduce = 2 * 7 / 8 * (2048 * 12288 * 2) / 300e9
    assert per_all_reduce == pytest.approx(293.6e-6, rel=1e-3)
    assert out["tp_exposed"] == pytest.approx(96 * 4 * per_all_reduce, rel=1e-12)
    assert out["network_fraction"] == 0  # NVLink only


def test_gemm_latency_prices_each_matrix_kernel_by_hand():
    # #25: a GEMM of W FLOPs runs at efficiency x W / (W + W_half), W_half = tau x peak x efficiency: each
    # matrix kernel costs tau besides its FLOPs. GPT-3 175B at TP 8 (unfused attention, no recompute, one
    # micro-batch, one stage): per layer forward 4 GEMMs + 2 batched attention GEMMs, backward twice as many:
    # 18 kernels a layer; the logits one forward, two backward.
    tau = 10e-6
    base, slow = run_one(gpt3_case()), run_one(gpt3_case(gemm_latency=tau))
    assert slow["compute"] - base["compute"] == pytest.approx((96 * 18 + 3) * tau, rel=1e-9)
    assert slow["recompute_time"] == base["recompute_time"] == 0
    # Selective recomputation reruns the attention core: its two kernels once more.
    base, slow = run_one(gpt3_case(recompute=1)), run_one(gpt3_case(recompute=1, gemm_latency=tau))
    assert slow["recompute_time"] - base["recompute_time"] == pytest.approx(96 * 2 * tau, rel=1e-9)
    # A MoE layer (flash attention): attention's QKV and output GEMMs, the router, fc1 and fc2 of each of the
    # E / e = 4 local experts and the shared expert's pair: 13 forward kernels, 39 with the backward, plus
    # the flash kernel's 1 forward and 2.5 backward (its backward takes 5 products to the forward's 2).
    moe = dict(layers=1, moe_layers=1, experts=16, top_k=2, expert_ffn=1024, shared_experts=1, tp=1, ep=4)
    moe.update(gpus=4, global_batch=4, attention=1, ffn=4 * 12288)
    base, slow = run_one(gpt3_case(**moe)), run_one(gpt3_case(gemm_latency=tau, **moe))
    assert slow["compute"] - base["compute"] == pytest.approx((39 + 3.5 + 3) * tau, rel=1e-9)
    # Context parallelism runs the attention core as one kernel per step of its ring (one per KV chunk): at
    # CP 2 the selectively recomputed core costs its two kernels twice.
    cp2 = dict(cp=2, gpus=16, recompute=1)
    base, slow = run_one(gpt3_case(**cp2)), run_one(gpt3_case(gemm_latency=tau, **cp2))
    assert slow["recompute_time"] - base["recompute_time"] == pytest.approx(96 * 2 * 2 * tau, rel=1e-9)
    # So a larger micro-batch, whose GEMMs are larger, runs each token faster.
    one, two = (
        run_one(gpt3_case(gemm_latency=tau)),
        run_one(gpt3_case(gemm_latency=tau, micro_batch=2, global_batch=2)),
    )
    assert two["compute"] / 2 < one["compute"]


def test_tp_across_nodes_is_network_time():
    out = run_one(gpt3_case(tp=16, gpus=16, heads=96 * 2 // 2, nvlink_domain=8))
    # 16 GPUs span two domains, 8 of the group on each node: the group has the node's NICs, 8 x 200 Gbit/s.
    share = 8 * 200e9 / 8
    assert out["tp_exposed"] == pytest.approx(96 * 4 * 2 * 15 / 16 * (2048 * 12288 * 2) / share, rel=1e-12)
    # On NICs: the share of that time the NICs add over NVLink's 300 GB/s, which every hop between the 8 members
    # on a node still takes on an ideal network (a hunt: all of it had been "on NICs", 22% at 10^6 Gbit/s).
    on_nics = out["tp_exposed"] * (1 - share / 300e9) / out["iteration_time"]
    assert out["network_fraction"] == pytest.approx(on_nics, rel=1e-6) and on_nics > 0.04
    # An expert data-parallel group of one GPU (EP 16 over DP 16) has no traffic: the data-parallel term's share
    # is the dense group's alone (a review: the experts' parameters had weighed in at share 0)
    moe = dict(layers=8, moe_layers=8, experts=16, top_k=2, expert_ffn=1024, tp=1, ep=16, gpus=16,
               global_batch=16, nvlink_domain=8, nics_per_node=1, overlap=0)  # fmt: skip
    case = gpt3_case(**moe)
    out_moe = run_one(case)
    lay = case[2]
    dense_share = reference._nic_share(16, 1, lay)  # DP 16 at stride 1 over two nodes
    assert 0 < dense_share < 1 and out_moe["dp_exposed"] > 0
    others = (
        sum(
            out_moe[k] * reference._nic_share(*g, lay)
            for k, g in (("tp_exposed", (1, 1)), ("cp_exposed", (1, 1)), ("pp_exposed", (1, 16)))
        )
        + out_moe["ep_exposed"] * out_moe["ep_on_nics"]
    )
    on_nics = (others + out_moe["dp_exposed"] * dense_share) / out_moe["iteration_time"]
    assert out_moe["network_fraction"] == pytest.approx(on_nics, rel=1e-9)
    fast = run_one(gpt3_case(tp=16, gpus=16, heads=96, nvlink_domain=8, bandwidth=1e15))
    assert fast["network_fraction"] == 0 and fast["tp_exposed"] > 0  # NVLink paces it: nothing on the NICs
    # A group whose members are each alone on their node: every byte crosses a NIC.
    pp = run_one(gpt3_case(tp=8, pp=2, gpus=16, nvlink_domain=8))
    assert pp["pp_exposed"] > 0 and pp["network_fraction"] == pytest.approx(
        pp["pp_exposed"] / pp["iteration_time"], rel=1e-6
    )


def test_expert_all_to_all_takes_each_gpus_own_nic_share_by_hand():
    # One MoE layer, EP 16 over two 8-GPU nodes (TP 1), 8 x 200 Gbit/s NICs per node: each GPU dispatches
    # X = b s h k bytes, 7/16 of it to the peers on its node (NVLink, 300 GB/s) and 8/16 to the other node,
    # all 16 at once, so each through its own 25 GB/s NIC (not the 8 NICs of its group's members on the node).
    h, s, k = 4096, 2048, 2
    case = gpt3_case(
        layers=1,
        moe_layers=1,
        experts=16,
        top_k=k,
        expert_ffn=1024,
        hidden=h,
        heads=32,
        kv_heads=32,
        q_width=h,
        kv_width=h,
        ffn=4 * h,
        seq=s,
        tp=1,
        ep=16,
        gpus=16,
        global_batch=16,
    )
    out = run_one(case)
    x = s * h * k * 2
    nvlink, nic = 7 / 16 * x / 300e9, 8 / 16 * x / (8 * 200e9 / 8 / 8)
    assert nic > nvlink
    assert out["ep_exposed"] == pytest.approx(
        4 * nic, rel=1e-12
    )  # dispatch and combine, forward and backward
    assert out["ep_exposed"] > 0 and out["network_fraction"] > 0 and out["ep_on_nics"] == 1
    inside = run_one(
        gpt3_case(**{**case[0], **case[1], **case[2], "ep": 8, "gpus": 8, "global_batch": 8, "experts": 16})
    )
    assert inside["ep_exposed"] > 0 and inside["ep_on_nics"] == 0  # one node: NVLink only


def test_bubble_by_hand():
    # Narayanan et al. SC'21, section 2.2: the bubble is (p - 1) / V stage-micro-batch times.
    for chunks in (1, 2, 4):
        out = run_one(gpt3_case(pp=8, gpus=64, tp=8, global_batch=32, schedule=chunks))
        stage = (out["iteration_time"] - out["bubble"] - out["dp_exposed"] - out["optimizer"]) / 32
        assert out["bubble"] == pytest.approx(7 / chunks * stage, rel=1e-12)
        assert out["bubble"] / (32 * stage) == pytest.approx(7 / (chunks * 32), rel=1e-12)


def test_zero3_step_by_hand():
    # One layer's parameters (12 h^2 + 2h = 1.812e9, 2 bytes each) all-gathered over 1536 GPUs (8 per node:
    # the group has the node's 8 x 25 Gbit/s NICs, 25 GB/s), forward and backward, and its gradients
    # reduce-scattered: per layer exposed = max(0, ag - t_f) + max(0, ag + rs - t_b).
    case = gpt3_case(tp=1, gpus=1536, global_batch=1536, zero=3, bandwidth=25e9)
    out = run_one(case)
    h = 12288
    params = 2 * h * h + 2 * h * h + 2 * h + 2 * h * 4 * h  # Q, O; K, V; the norms; the MLP
    ag = 1535 / 1536 * params * 2 / 25e9
    flops = 4 * h * h * 2 + 4 * 2048 * h + 4 * h * 4 * h  # projections, attention core, MLP per token
    lin = 2048 * h * (4 + 11 + 19)
    scores = 5 * 96 * 2048 * 2048
    t_f = 2048 * flops / (312e12 * 0.5) + (lin + scores + params * 2) / 2.039e12
    per_layer = max(0, ag - t_f) + max(0, 2 * ag - 2 * t_f)
    assert per_layer > 0.1  # the gathers outlast the layer's compute: ZeRO-3 waits on the network
    assert out["dp_exposed"] == pytest.approx(96 * per_layer, rel=1e-9)


def test_a_send_leaves_by_its_own_gpus_nic_share_a_ring_by_its_members_by_hand():
    # Flat pricing, 16 GPUs on two 8-GPU hosts of 8 x 200 Gbit/s NICs (25 GB/s each), NVLink 300 GB/s. A ring of
    # 16 at stride 1 (8 members a host) leaves a host by the 8 members' NICs: min(300, 8 x 25) = 200 GB/s. A
    # send/recv of the same group (a CP ring's step) goes out by the sending GPU's own NIC, 25 GB/s (a hunt: it
    # had taken all 8, CP 64 at 128k tokens 3.6 times faster than NCCL's pricing), whatever the group's stride.
    from netsweep_jax.kernels.layout import Parallelism
    from netsweep_jax.kernels.layout_collectives import exchange, group_bandwidth

    lay = {
        **gpt3_case(gpus=16)[2],
        "nvlink_bw": 300e9,
        "bandwidth": 200e9,
        "utilization": 1.0,
        "latency": 0.0,
    }
    group = Parallelism(**{k: np.float64(v) for k, v in lay.items()})
    x = 1e9
    with jax.enable_x64(True):
        ring, crosses = (float(v) for v in group_bandwidth(16.0, 1.0, group))
        sends = [float(exchange(x, float(n), float(s), group)) for n, s in ((16, 1), (8, 2), (2, 8))]
    assert ring == pytest.approx(200e9, rel=1e-12) and crosses
    assert sends == pytest.approx([x / 25e9] * 3, rel=1e-12)
    assert reference._group_bw(16, 1, lay) == (pytest.approx(200e9, rel=1e-12), True)
    for (n, s), send in zip(((16, 1), (8, 2), (2, 8)), sends):
        assert reference._group_bw(n, s, lay, ring=False) == (pytest.approx(x / send, rel=1e-12), True)


def test_a_ring_across_nvl72_racks_leaves_them_by_every_trays_nics_by_hand():
    # A hunt: GB200 NVL72's trays of 4 GPUs (4 NICs each) in racks of 72: a DP ring of 144 over two racks was
    # priced as leaving every tray by its 4 NICs (70 s where NCCL's pricing gave 17.9 s). Its hops inside a
    # rack are NVLink's; it leaves a rack by the NICs of its 72 members there, 4 x 72 / 4 = 72, at most NCCL's
    # 32 channels' (a review): 32 NICs of 2.5 Gbit/s, 10 GB/s (under NVLink's 300), where a tray alone (a domain
    # of 4) gives its 4: 1.25 GB/s.
    racks = dict(tp=1, gpus=144, global_batch=144, zero=3, bandwidth=2.5e9, gpus_per_node=4, nics_per_node=4)
    h = 12288
    params = 2 * h * h + 2 * h * h + 2 * h + 2 * h * 4 * h  # Q, O; K, V; the norms; the MLP
    flops = 4 * h * h * 2 + 4 * 2048 * h + 4 * h * 4 * h
    t_f = (
        2048 * flops / (312e12 * 0.5)
        + (2048 * h * (4 + 11 + 19) + 5 * 96 * 2048 * 2048 + params * 2) / 2.039e12
    )
    for domain, nic_bytes in ((72, 32 * 2.5e9 / 8), (4, 4 * 2.5e9 / 8)):
        ag = 143 / 144 * params * 2 / nic_bytes
        per_layer = max(0, ag - t_f) + max(0, 2 * ag - 2 * t_f)
        assert per_layer > 0.1
        out = run_one(gpt3_case(**racks, nvlink_domain=domain))
        assert out["dp_exposed"] == pytest.approx(96 * per_layer, rel=1e-9), domain
    # a send/recv (a pipeline's hand-off) still leaves by its own node's NICs, as before: PP 36 at stride 4 (TP 4
    # a tray) is priced alike in racks and in trays alone
    piped = dict(racks, tp=4, pp=36, zero=0, global_batch=36, layers=36)
    in_racks, in_trays = (run_one(gpt3_case(**piped, nvlink_domain=q)) for q in (72, 4))
    assert in_racks["pp_exposed"] == in_trays["pp_exposed"] > 0
    # A review: the fewest whole members a rack holds pace the ring: a DP group of 30 at stride 8 over 240 GPUs
    # (60 a rack) has 8 and 7 in alternate racks, 7 (not 7.5); 100 GPUs (25 trays: 13 and 12 a rack, placed
    # unevenly) at stride 4, the 12 of 48 GPUs (not 18 of a full rack, nor 1 of a tray)
    from netsweep_jax.kernels.layout import Parallelism
    from netsweep_jax.kernels.layout_collectives import _sharing_nics

    # (a block of part of an unevenly placed job keeps its node's: 200 GPUs, PP 2, a DP block of 50 at stride 2)
    cases = ((240, 30, 8, 7), (100, 25, 4, 12), (576, 144, 4, 18), (144, 9, 16, 4), (200, 50, 2, 2))
    for gpus, size, stride, fewest in cases:
        lay = {**gpt3_case(**racks)[2], "gpus": gpus, "nvlink_domain": 72}
        group = Parallelism(**{k: np.float64(v) for k, v in lay.items()})
        with jax.enable_x64(True):
            assert float(_sharing_nics(float(size), float(stride), group)) == fewest, gpus
        assert reference._sharing_nics(size, stride, lay) == fewest, gpus


def test_zero3_under_a_pipeline_gathers_once_and_reduces_after_the_backward():
    # PyTorch's pipelining runs FSDP2 so under PP (torchtitan: reshard_after_forward = not pp_enabled; the
    # stage reduces and reshards once, after its last backward): each stage's parameters gathered once a step
    # and held whole with their gradients, the reduce-scatters after the stage's backward (--zero3-gather-once
    # 1, which --stack fsdp sets). It had been priced as ZeRO 3 per micro-batch, as Megatron-FSDP runs it.
    piped = dict(gpus=128, global_batch=64, tp=8, pp=8, dp=2)
    three = run_one(gpt3_case(**piped, zero=3, overlap=3, zero3_gather_once=1))
    one_unoverlapped = run_one(gpt3_case(**piped, zero=1, overlap=2))  # the gradient reduce not overlapped
    assert three == one_unoverlapped
    assert three["dp_exposed"] > 3 * run_one(gpt3_case(**piped, zero=1, overlap=3))["dp_exposed"]
    # by hand: only Adam's 12 bytes a parameter are sharded over the two GPUs (ZeRO 0 keeps them whole): the
    # first stage's 12 layers (12 h^2 + 2 h over TP 8) and its embedding (v h / 8) save 6 bytes each
    h = 12288
    stage = 12 * (12 * h * h + 2 * h) / 8 + 51200 * h / 8
    saved = run_one(gpt3_case(**piped, zero=0, overlap=3))["memory_gb"] - three["memory_gb"]
    assert saved * 1e9 == pytest.approx(6 * stage, rel=1e-12)
    # as Megatron-FSDP runs it (0), or without a pipeline, ZeRO 3 stays per micro-batch: parameters sharded too
    per_micro_batch = run_one(gpt3_case(**piped, zero=3, overlap=3))
    # (the 2-byte parameters and gradients of the stage's 2.8e9 sharded, less two layers gathered: 4.7 GB)
    assert per_micro_batch["memory_gb"] < three["memory_gb"] - 4
    flat = dict(gpus=16, global_batch=16, tp=8, dp=2)
    assert run_one(gpt3_case(**flat, zero=3, zero3_gather_once=1)) == run_one(gpt3_case(**flat, zero=3))
    assert run_one(gpt3_case(**flat, zero=3)) != run_one(gpt3_case(**flat, zero=1, overlap=2))


def test_a_dense_model_pays_for_no_expert_collective():
    # A hunt: a dense model's expert-gradient terms (0 bytes over an "expert DP" group of t dp c GPUs) paid
    # (n - 1) lambda a layer, so the latency's cost grew with TP where the DP group (dp GPUs) is the same, and
    # NCCL's latencies (9% of a ZeRO-3 step on a SuperPOD). With no bytes, no collective: lambda's cost is the
    # DP group's alone, the same for every TP, in the kernel and the reference.
    cases = [  # overlap none: every collective of the step exposed
        gpt3_case(tp=t, gpus=64 * t, global_batch=64, zero=1, overlap=0, latency=lat)
        for t in (1, 2, 8)
        for lat in (0, 1e-5)
    ]
    out = run_kernel(cases, "float64")
    added = out["dp_exposed"][1::2] - out["dp_exposed"][0::2]
    assert added[0] > 0 and added == pytest.approx(np.full(3, added[0]), rel=1e-9), added
    for case, got in zip(cases, out["dp_exposed"]):
        assert reference.layout_step(*case)["dp_exposed"] == pytest.approx(got, rel=1e-9)


def test_more_bandwidth_is_never_slower():
    rng = random.Random(5)
    cases = [random_case(rng) for _ in range(300)]
    faster = [(a, d, {**lay, "bandwidth": lay["bandwidth"] * 4}) for a, d, lay in cases]
    slow, fast = run_kernel(cases, "float64"), run_kernel(faster, "float64")
    ok = slow["status"] == 0
    assert (fast["iteration_time"][ok] <= slow["iteration_time"][ok] * (1 + 1e-12)).all()


def test_a_slower_gpu_is_never_a_faster_step():
    # Streams hidden behind one layer's compute (ZeRO-3's gathers, CP's exchanges, TP's overlapped collectives,
    # the overlapped all-to-alls) each subtracted the compute from its own time: with two exposed, a slower GPU
    # hid twice its extra time, and the step fell (CP 4 with ZeRO-3: 2.520 s at efficiency 0.5, 2.456 at 0.3).
    # ZeRO 1/2's parameter gather, behind the first micro-batch's forward, subtracted that forward's compute
    # beside the all-to-alls hidden behind it (Qwen3-30B, EP 16, ZeRO 1 at 100 Gbit/s: 4.771 s at slowdown 0,
    # 4.769 s at 0.6).
    rng = random.Random(11)
    cases = [random_case(rng) for _ in range(300)]
    cases = [  # every stream hidden at once, at ZeRO-3 and at ZeRO 1/2
        (a, d, {**lay, "zero": (3, 1, 3, 2)[i % 4], "overlap": 15}) for i, (a, d, lay) in enumerate(cases)
    ]
    slower = [(a, d, {**lay, "efficiency": lay["efficiency"] * 0.6}) for a, d, lay in cases]
    fast, slow = run_kernel(cases, "float64"), run_kernel(slower, "float64")
    ok = fast["status"] == 0
    assert (slow["iteration_time"][ok] >= fast["iteration_time"][ok] * (1 - 1e-12)).all()


def test_streams_behind_one_window_wait_on_the_slowest_by_hand():
    from netsweep_jax.kernels.layout_communication import hidden_waited, shared_window

    # forward: TP 2 s and ZeRO-3 1 s past their windows, backward: CP 3 s: the layer waits 2 + 3 = 5 s of the 6
    assert float(shared_window((2.0, 0.0, 1.0), (0.0, 3.0, 0.0), 0.0)) == pytest.approx(5 / 6)
    # the all-to-alls behind another micro-batch's forward and backward 7 s past them: 7 s of the 13
    assert float(shared_window((2.0, 0.0, 1.0), (0.0, 3.0, 0.0), 7.0)) == pytest.approx(7 / 13)
    # one stream a phase: each as it is alone; none exposed: 0, nothing to scale
    assert float(shared_window((0.0, 4.0, 0.0), (0.0, 0.0, 2.5), 0.0)) == 1.0
    assert float(shared_window((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 0.0)) == 0.0  # every excess 0: scaled by 0
    # what they add to the layer: 5 s, 7 s (the all-to-alls), nothing
    assert float(hidden_waited((2.0, 0.0, 1.0), (0.0, 3.0, 0.0), 0.0)) == 5.0
    assert float(hidden_waited((2.0, 0.0, 1.0), (0.0, 3.0, 0.0), 7.0)) == 7.0
    assert float(hidden_waited((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 0.0)) == 0.0


def test_arch_parsing_and_presets():
    m = parse_arch("layers=96,hidden=12288,heads=96,seq=2048,vocab=51200")
    assert m.ffn == 4 * 12288 and m.kv_heads == 96 and m.head_dim == 128
    # Published sizes (billions): GPT-3 175B, Llama 3 8B / 70B / 405B, DeepSeek-V3 671B (37B active).
    sizes = {"gpt3-175b": 175, "llama3-8b": 8.0, "llama3-70b": 70.6, "llama3-405b": 405.9}
    for name, size in sizes.items():
        assert LLMS[name].parameters()["total"] / 1e9 == pytest.approx(size, rel=0.02), name
    deepseek = LLMS["deepseek-v3-like"].parameters()
    assert deepseek["total"] / 1e9 == pytest.approx(671, rel=0.005)
    assert deepseek["expert"] / 1e9 == pytest.approx(256 * 58 * 3 * 7168 * 2048 / 1e9, rel=1e-12)
    # Multi-head latent attention (1536 / 512 compressions, 192-wide query-key and 128-wide value heads):
    # 37B active, as published (DeepSeek-V3 Technical Report, section 4.2).
    assert deepseek["active"] / 1e9 == pytest.approx(37, rel=0.02)
    assert (LLMS["deepseek-v3-like"].router_groups, LLMS["deepseek-v3-like"].group_topk) == (8, 4)
    for text, message in [
        ("layers=2", "missing hidden"),
        ("layers=2,hidden=8,heads=2,seq=4,vocab=9,foo=1", "'foo'"),
        ("layers=2,hidden=9,heads=3,kv_heads=2,seq=4,vocab=9", "multiple of kv_heads"),
        ("layers=2,hidden=500,heads=8,seq=4,vocab=9", "not a multiple of heads=8; give head_dim"),
        ("layers=x,hidden=8,heads=2,seq=4,vocab=9", "whole number"),
        ("layers=2,hidden=8,heads=2,seq=4,vocab=9,mlp=relu", "gelu, swiglu"),
        (
            "layers=2,hidden=8,heads=2,seq=0,vocab=9",
            "seq=0: must be a whole number from 1 to",
        ),  # "from 0", then "at least 1"
        ("layers=2,hidden=8,heads=2,seq=4,vocab=9,rope_dim=2", "needs kv_rank"),
        ("layers=2,hidden=8,heads=2,seq=4,vocab=9,kv_rank=4,rope_dim=4", "below head_dim=4"),
        ("layers=2,hidden=8,heads=2,seq=4,vocab=9,experts=8,router_groups=3", "must divide experts=8"),
        ("layers=2,hidden=8,heads=2,seq=4,vocab=9,router_groups=2", "must divide experts=0"),
        ("layers=2,hidden=8,heads=2,seq=4,vocab=9,experts=8,router_groups=2,group_topk=3", "must not exceed"),
        # a hunt: priced, or ignored, in silence
        ("layers=2,hidden=8,heads=2,seq=4,vocab=9,mtp_layers=99", "mtp_layers=99: must be from 0 to 16"),
        (
            "layers=2,hidden=8,heads=2,seq=4,vocab=9,shared_experts=3",
            "shared_experts=3: a mixture-of-experts key",
        ),
    ]:
        with pytest.raises(InputError, match=message):
            parse_arch(text)
    # names in any case, as every name is (mlp=GELU was refused)
    assert parse_arch("Layers=2,hidden=8,heads=2,seq=4,vocab=9,mlp=GELU,tied=True").mlp == "gelu"


def test_the_dp_term_is_the_papers_recurrence_in_closed_form():
    # end_i = max(end_{i-1}, s0 + i beta) + gamma over n identical layers (kernels/overlap.py's FIFO, as
    # tests/reference.py walks it) equals fifo_end's closed form, for any inputs.
    rng = np.random.default_rng(7)
    for _ in range(2000):
        prev, s0, beta, gamma = rng.uniform(0, 2, 4) * rng.choice([1e-3, 1, 1e3])
        n = int(rng.integers(0, 60))
        end, clock = prev, s0
        for _ in range(n):
            clock += beta
            end = max(end, clock) + gamma
        with jax.enable_x64(True):
            closed = float(
                kernel.fifo_end(
                    jnp.float64(prev), jnp.float64(s0), jnp.float64(n), jnp.float64(beta), jnp.float64(gamma)
                )
            )
        assert closed == pytest.approx(end, rel=1e-12, abs=1e-15)


def test_a_data_parallel_group_over_whole_nodes_is_netsweeps_nccl_ring():
    # tp = pp = cp = ep = 1: the data-parallel group holds every GPU of its nodes, and its all-reduce costs what
    # the data-parallel family's nccl-ring charges a bucket (sweep/model/collectives.py), with no reduce cost.
    from netsweep_jax.sweep.model.collectives import coefficients

    rng = np.random.default_rng(3)
    zero_table = (np.array([0.0, 1e12]), np.array([0.0, 0.0]))
    for _ in range(200):
        nodes, per_node = int(rng.integers(2, 64)), int(rng.choice([1, 2, 4, 8]))
        nics = int(rng.integers(1, per_node + 1))
        size, bw, util = rng.uniform(1e6, 1e9), rng.uniform(1e9, 4e11), rng.uniform(0.1, 1)
        latency, nvlink = rng.uniform(0, 1e-5), rng.uniform(1e10, 1e12)
        c = coefficients("nccl-ring", [nodes], [per_node], [size], zero_table, nvlink * 8, nics)
        dp_family = (
            max(c.wire[0] * size / (bw * util), c.transfer[0] * size, c.reduce[0, 0])
            + c.messages[0] * latency
        )
        n = nodes * per_node
        with jax.enable_x64(True):
            lay = kernel.Parallelism(**{f: jnp.float64(0.0) for f in kernel.Parallelism._fields})._replace(
                nvlink_domain=jnp.float64(per_node),
                nvlink_bw=jnp.float64(nvlink),
                gpus_per_node=jnp.float64(per_node),
                nics_per_node=jnp.float64(nics),
                bandwidth=jnp.float64(bw),
                utilization=jnp.float64(util),
                latency=jnp.float64(latency),
                collective=jnp.float64(0),
                collectives=0,  # flat, as a Python int (one per sweep): NCCL's engine is not built eagerly
            )
            layout = float(kernel.all_reduce(jnp.float64(size), jnp.float64(n), jnp.float64(1), lay))
        assert layout == pytest.approx(dp_family, rel=1e-12)


def test_multi_head_latent_attention_by_hand():
    # A DeepSeek-V3 layer (MLA: query and KV compressions 1536 and 512, 128 heads of 192 query-key width
    # with a shared 64-wide rotary key, value heads of 128; a dense SwiGLU MLP of 18,432), TP 2 with SP,
    # 4,096 tokens. Attention's matrices: Q down 7168 x 1536 and up 1536 x 24576, KV down 7168 x (512 + 64)
    # and up 512 x (128 x 128 + 16384), the output projection 16384 x 7168: 187,105,280 weights.
    h, f, s = 7168, 18432, 4096
    mla = dict(hidden=h, heads=128, kv_heads=128, q_width=24576, kv_width=24576, v_width=16384, q_rank=1536)
    mla.update(
        kv_rank=512, rope_width=64, ffn=f, seq=s, gated=1, dropout=0, tp=2, gpus=2, sequence_parallel=1
    )
    mla.update(attention=1, pp=1)
    one, two = run_one(gpt3_case(**mla, layers=1)), run_one(gpt3_case(**mla, layers=2))
    matrices = 7168 * 1536 + 1536 * 24576 + 7168 * 576 + 512 * 32768 + 16384 * 7168
    assert matrices == 187_105_280
    model_flops = [o["tflops_per_gpu"] * 1e12 * o["iteration_time"] * 2 for o in (one, two)]
    per_token = 2 * matrices + 2 * s * (24576 + 16384) + 6 * h * f  # projections, scores and context, MLP
    assert model_flops[1] - model_flops[0] == pytest.approx(3 * s * per_token, rel=1e-9)
    # Memory a layer adds on one GPU: its weights at 2 + 2 + 12 bytes, the down projections on both GPUs
    # (Megatron-Core replicates them), the rest halved; activations split by SP but for the latents, whose
    # down projections' outputs and norms' outputs (2 + 2 bytes each of 1536 + 512) every GPU keeps.
    down = 7168 * 1536 + 7168 * 576
    dense = matrices + 2 * h + 1536 + 512 + 3 * h * f  # with the norms
    weights = 16 * ((dense - down) / 2 + down)
    kept = 4 * h + 2 * h + 2 * (24576 + 24576 + 16384) + 2 * 16384 + 2 * h + 6 * f  # norms' inputs ... fc2's
    acts = s * (kept / 2 + 4 * (1536 + 512))
    assert (two["memory_gb"] - one["memory_gb"]) * 1e9 == pytest.approx(weights + acts, rel=1e-9)


def test_overlap_switches_by_hand():
    # GPT-3 175B at TP 8 (one 2,048-token micro-batch, 96 layers). --tp-comm-overlap: each layer's TP
    # collectives hide behind its linear layers' GEMMs, 24 h^2 FLOPs a token over 8 GPUs at 156 TFLOP/s:
    # 5.95 ms forward, twice that backward, where the four all-reduces take 4 x 293.6 us (with sequence
    # parallelism, which the switch needs: each all-reduce a reduce-scatter and an all-gather, the same bytes).
    h, s = 12288, 2048
    gemms = s * 24 * h * h / 8 / (312e12 * 0.5)
    assert gemms == pytest.approx(5.95e-3, rel=1e-3)
    sp = dict(sequence_parallel=1)
    base, hidden = run_one(gpt3_case(**sp)), run_one(gpt3_case(**sp, overlap=3 + 4))
    assert base["tp_exposed"] > 0 and hidden["tp_exposed"] == 0
    # On a 1 GB/s link the collectives outlast the GEMMs: the excess is exposed, forward and backward.
    slow = dict(nvlink_bw=1e9, **sp)
    ring = 2 * 7 / 8 * (s * h * 2) / 1e9
    exposed = max(0.0, 2 * ring - gemms) + max(0.0, 2 * ring - 2 * gemms)
    assert run_one(gpt3_case(**slow, overlap=7))["tp_exposed"] == pytest.approx(96 * exposed, rel=1e-9)
    assert run_one(gpt3_case(**slow))["tp_exposed"] == pytest.approx(96 * 4 * ring, rel=1e-9)
    # Without sequence parallelism --tp-comm-overlap hides nothing (Megatron-LM refuses the pair; it was priced
    # hidden in full, a hunt): the all-reduces of a TP group without SP are exposed as with the switch off.
    no_sp = dict(slow, sequence_parallel=0)
    assert (
        run_one(gpt3_case(**no_sp, overlap=7))["tp_exposed"]
        == run_one(gpt3_case(**no_sp, overlap=3))["tp_exposed"]
        > 0
    )
    # Without --overlap-grad-reduce every layer's gradients (12 h^2 + 2 h two-byte values over 8) and the
    # tied embedding's (51,200 h over 8) are all-reduced after the backward: TP 8 x DP 2 on two DGX A100s,
    # each GPU's DP pair across nodes through its own 200 Gbit/s NIC (25 GB/s), a ring of two.
    dp2 = dict(gpus=16, global_batch=2)
    layer_grads, embed_grads = (12 * h * h + 2 * h) / 8 * 2, 51200 * h / 8 * 2
    serial = run_one(gpt3_case(**dp2, overlap=2))
    assert serial["dp_exposed"] == pytest.approx((96 * layer_grads + embed_grads) / 25e9, rel=1e-9)
    assert run_one(gpt3_case(**dp2))["dp_exposed"] < serial["dp_exposed"]  # the overlap hides most of it
    # Without --overlap-param-gather (ZeRO 1) the updated parameters' all-gather, (n - 1) / n of the stage's
    # 96 layers and embedding at 2 bytes, is exposed in full; with it, on 400 Gbit/s NICs (50 GB/s), it
    # hides behind the first micro-batch's forward (0.44 s of gather, 0.63 s of forward).
    gathered = run_one(gpt3_case(**dp2, zero=1, overlap=1, bandwidth=400e9))
    overlapped = run_one(gpt3_case(**dp2, zero=1, overlap=3, bandwidth=400e9))
    gather = (96 * layer_grads + embed_grads) / 2 / 50e9
    assert gathered["dp_exposed"] - overlapped["dp_exposed"] == pytest.approx(gather, rel=1e-9)
    # --overlap-moe-expert-parallel-comm: a MoE layer's all-to-alls behind another micro-batch's forward and
    # backward, the excess exposed (one layer more adds its compute and its all-to-all time).
    moe = dict(experts=8, top_k=2, expert_ffn=1024, tp=1, gpus=64, ep=8, global_batch=64)
    moe.update(nvlink_bw=1e9, attention=1)  # EP 8 inside a DGX, on a slow NVLink
    runs = {
        o: [run_one(gpt3_case(**moe, layers=n, moe_layers=n, overlap=o)) for n in (1, 2)] for o in (3, 11)
    }
    compute = runs[3][1]["compute"] - runs[3][0]["compute"]
    a2a = runs[3][1]["ep_exposed"] - runs[3][0]["ep_exposed"]
    assert a2a > compute > 0  # on a slow network the all-to-alls outlast the compute
    hidden_a2a = runs[11][1]["ep_exposed"] - runs[11][0]["ep_exposed"]
    assert hidden_a2a == pytest.approx(a2a - compute, rel=1e-9)


def test_full_recomputation_dispatches_and_combines_again_as_moe_recomputation_does():
    # Full recomputation re-runs the whole layer's forward, its all-to-alls with it: it was priced without them,
    # below --recompute moe, and plans of MoE models chose it. One layer, expert TP 1, no overlap: the forward's
    # dispatch and combine, the backward's two, and with recomputation two more: 6 all-to-alls against 4.
    moe = dict(experts=8, top_k=2, expert_ffn=1024, tp=1, gpus=64, ep=8, global_batch=64, nvlink_bw=1e9)
    moe.update(attention=1, layers=1, moe_layers=1)
    none, moe_rc, full = (run_one(gpt3_case(**moe, recompute=r))["ep_exposed"] for r in (0, 128, 2))
    assert full == moe_rc and full / none == pytest.approx(6 / 4, rel=1e-12)


def test_one_moe_layer_on_two_nodes_by_hand():
    # #26: one MoE layer (16 experts of width 512, top-2, SwiGLU; hidden 1024, 8 heads of 128) on two DGX H100
    # nodes, EP 16 = DP 16, one micro-batch of 1,024 tokens, flash attention, a GEMM latency of 6.5 us.
    h, s, fe, E, k, v = 1024, 1024, 512, 16, 2, 1000
    peak, hbm, tau, lam = 989e12, 3.35e12, 6.5e-6, 5e-6
    arch = dict(layers=1, moe_layers=1, hidden=h, heads=8, kv_heads=8, q_width=h, kv_width=h, seq=s, vocab=v)
    arch.update(experts=E, top_k=k, expert_ffn=fe, shared_experts=0, gated=1, dropout=0, ffn=4 * h)
    dev = dict(peak=peak, half_peak=peak, hbm=hbm, gemm_latency=tau)
    lay = dict(gpus=16, tp=1, ep=16, global_batch=16, attention=1, nvlink_domain=8, nvlink_bw=450e9)
    lay.update(gpus_per_node=8, nics_per_node=8, bandwidth=400e9, latency=lam, attention_efficiency=0.5)
    out = run_one(gpt3_case(**arch, **dev, **lay))
    rate = peak * 0.5
    # Forward work a token: Q, K, V and output projections 8 h^2, the core 4 s h (causal flash: half, at the
    # flash efficiency), the router 2 h E, the two experts' SwiGLU GEMMs 6 h f_e each.
    gemm = s * (8 * h * h + 2 * h * E + k * 6 * h * fe) / rate
    core = s * 4 * s * h * 0.5 / (peak * 0.5)
    # Kernels: QKV and output projection, the router, fc1 and fc2 of the one local expert; the flash kernel.
    kernels = (2 + 1 + 2) * tau + tau
    # Bytes: the activations the layer keeps (units of h a token: 4 norm inputs, QKV's input 2, Q, K, V 6,
    # the projection's input 2; the router's input 2, the 2 dispatched copies and expert outputs 4 each, the
    # experts' SwiGLU and fc2 inputs 6 f_e / h each: 30) and its weights (attention 4 h^2 + 2 h norms, router
    # h E, the local expert 3 h f_e) at 2 bytes.
    acts = s * h * (4 + 2 + 6 + 2 + 2 + 2 * 4 + 2 * 6 * fe / h)
    weights = 2 * (4 * h * h + 2 * h + h * E + 3 * h * fe)
    # Token movement through the dispatcher, at 2 bytes: the permutation reads each token (h) and writes its 2
    # copies (2 h), the unpermutation reads the 2 copies back and writes the token; no sort, one expert a GPU.
    # The backward's mirror kernels move as much again.
    move = s * (h + 2 * h + 2 * h + h) * 2 / hbm
    forward = gemm + kernels + core + (acts + weights) / hbm + move
    backward = 2 * forward - move + 0.5 * (core + tau)  # flash's backward: 5 products to 2
    embed = 3 * s * h * 2 / hbm
    logits = s * 2 * h * v / rate + tau + 8 * s * v / hbm  # the output layer's GEMM and its fp32 logits
    assert out["compute"] == pytest.approx(forward + backward + embed + 3 * logits, rel=1e-9)
    # With 4 experts a GPU (EP 4 over the 16 GPUs), each copy is also sorted into its expert's order and
    # back (read and write 2 h a token, twice), forward and backward; the 3 more local experts add their fc1 and
    # fc2 kernels and weights to each pass (the forward and the backward's two).
    four = run_one(gpt3_case(**arch, **dev, **lay | dict(ep=4)))
    sorts = s * 2 * (2 * h + 2 * h) * 2 / hbm
    experts = 3 * (2 * tau + 3 * h * fe * 2 / hbm)
    assert four["compute"] - out["compute"] == pytest.approx(2 * sorts + 3 * experts, rel=1e-9)
    # With the busiest GPU receiving I = 1.5 times the mean's copies, its experts' GEMMs (6 h f_e a copy), the
    # copies and SwiGLU inputs it keeps (4 h + 6 f_e bytes a copy) and its sorts grow by the extra 0.5 k
    # copies a token; the permutation and unpermutation of its own tokens do not (k copies each).
    busy = run_one(gpt3_case(**arch, **dev, **lay | dict(ep=4, imbalance=1.5)))
    extra = 0.5 * k  # copies a token
    gemms = s * extra * 6 * h * fe / rate
    kept = s * extra * (4 * h + 6 * fe) / hbm
    sorted_more = s * extra * 2 * (2 * h) * 2 / hbm  # read and write, two sorts, 2 bytes
    assert busy["compute"] - four["compute"] == pytest.approx(3 * (gemms + kept) + 2 * sorted_more, rel=1e-9)
    # Dispatch and combine, forward and backward: each GPU sends 1,024 x 2 copies x 2 bytes x h = 4.19 MB, 7/16
    # of it to the 7 others of its node on NVLink, 8/16 to the other node through its own 400 Gbit/s NIC with a
    # per-step latency to each of the 8 peers there: the NICs pace it.
    x = s * k * 2 * h
    nvlink, nics = 7 / 16 * x / 450e9, 8 / 16 * x / 50e9 + 8 * lam
    assert nics > nvlink and out["ep_on_nics"] == 1
    assert out["ep_exposed"] == pytest.approx(4 * nics, rel=1e-9)
    # An fp8 dispatch sends the forward dispatch in MXFP8, a byte an element and a scale a 32: (1 + 1/32) / 2
    # of X; the combine and both backward all-to-alls stay bf16.
    fp8 = run_one(gpt3_case(**arch, **dev, **lay, dispatch_fp8=1))
    x8 = x * (1 + 1 / 32) / 2
    assert fp8["ep_exposed"] == pytest.approx(8 / 16 * x8 / 50e9 + 8 * lam + 3 * nics, rel=1e-9)
    # The flex dispatcher (DeepEP): each token once to the other node if one of its 2 experts is there (8 of the
    # 16: 1 - C(8, 2) / C(16, 2) = 23/30), through the GPU's NIC with one latency; on NVLink each copy for a GPU
    # other than the receiving one, 14 GPUs each hit with 1 - C(15, 2) / C(16, 2) = 1/8. The stages are
    # pipelined: the slower, the RDMA one, is the time, 4 all-to-alls.
    token = s * h * 2
    rdma, nvl = 23 / 30 * token / 50e9 + lam, 14 / 8 * token / 450e9
    flex = run_one(gpt3_case(**arch, **dev, **lay, moe_dispatcher=1))
    assert rdma > nvl and flex["ep_on_nics"] == 1
    assert flex["ep_exposed"] == pytest.approx(4 * rdma, rel=1e-9)
    # Group-limited routing with a group a node, one a token: a token's experts all on one node, the other with
    # probability 1/2; on NVLink each of 14 GPUs hit with (1/2) (1 - C(7, 2) / C(8, 2)) = 1/8, as before.
    limited = run_one(gpt3_case(**arch, **dev, **lay, moe_dispatcher=1, router_groups=2, group_topk=1))
    assert limited["ep_exposed"] == pytest.approx(4 * (1 / 2 * token / 50e9 + lam), rel=1e-9)


def test_the_attention_core_runs_at_half_precision_and_fp8_speeds_only_the_gemms():
    # A causal flash kernel computes half of the 4 s w_q FLOPs a token's scores and context cost, at the
    # half-precision peak times its own efficiency; selective recomputation repeats exactly that.
    case = dict(attention=1, recompute=1, sequence_parallel=1, attention_efficiency=0.4)
    bf16 = run_one(gpt3_case(**case))
    core = 2048 * 4 * 2048 * 12288 * 0.5 / 8 / (312e12 * 0.4)
    assert bf16["recompute_time"] == pytest.approx(96 * core, rel=1e-12)
    fp8 = run_one(gpt3_case(**case, peak=624e12, gemm_input_bytes=1.0))
    assert fp8["recompute_time"] == pytest.approx(bf16["recompute_time"], rel=1e-12)  # the core stays bf16
    # The GEMMs' time halves; the casts add 3 bytes per element of the four GEMM inputs (2h + w_q + f).
    gemm = 2048 * (4 * 12288 * 12288 * 2 + 2 * 2 * 12288 * 4 * 12288) / 8 / (312e12 * 0.5)
    casts = 3 * 2048 * (2 * 12288 + 12288 + 4 * 12288) / 8 / 2.039e12
    saved_bytes = 2048 * 12288 * 7 / 8 / 2.039e12  # the fp8 GEMM inputs kept in 1 byte (written once)
    per_layer_forward = -gemm / 2 + casts - saved_bytes
    forward_and_backward = 3 * per_layer_forward
    assert fp8["compute"] - bf16["compute"] == pytest.approx(96 * forward_and_backward, rel=1e-9)


def test_expert_tensor_parallelism_by_hand():
    # #26: the same MoE layer under TP 2 with sequence parallelism on two DGX H100 nodes, EP 8 x expert TP 2
    # against EP 16 x expert TP 1 (both fold over TP 2 x DP 8). Each GPU dispatches its half of the tokens,
    # X = (s / 2) k h 2 bytes. With expert TP 2 the EP ranks lie 2 apart, so 4 of the 8 share a node: 3/8 of X
    # on NVLink, 4/8 through the GPU's own NIC (4 peers, a latency each); after the all-to-all the copies are
    # all-gathered over the expert TP pair (a 2-GPU ring of 2 X bytes: X on NVLink), and before the combine
    # reduce-scattered, forward and backward (one micro-batch: DP 8, global batch 8).
    h, s, fe, E, k = 1024, 1024, 512, 16, 2
    lam = 5e-6
    arch = dict(
        layers=1, moe_layers=1, hidden=h, heads=8, kv_heads=8, q_width=h, kv_width=h, seq=s, vocab=1000
    )
    arch.update(experts=E, top_k=k, expert_ffn=fe, shared_experts=0, gated=1, dropout=0, ffn=4 * h)
    lay = dict(gpus=16, tp=2, sequence_parallel=1, global_batch=8, attention=1, nvlink_domain=8)
    lay.update(nvlink_bw=450e9, gpus_per_node=8, nics_per_node=8, bandwidth=400e9, latency=lam)
    folded = run_one(gpt3_case(**arch, **lay, ep=16, expert_tp=1))
    split = run_one(gpt3_case(**arch, **lay, ep=8, expert_tp=2))
    assert folded["status"] == 0 and split["status"] == 0
    x = s / 2 * k * h * 2
    a2a = max(3 / 8 * x / 450e9, 4 / 8 * x / 50e9 + 4 * lam)
    gather = 1 / 2 * (2 * x) / 450e9
    assert split["ep_exposed"] == pytest.approx(4 * (a2a + gather), rel=1e-9)
    assert folded["ep_exposed"] == pytest.approx(4 * (8 / 16 * x / 50e9 + 8 * lam), rel=1e-9)
    # Memory: the same expert parameters a GPU (16 experts over 16 GPUs either way), but fc1's input is the
    # gathered copies: (2 - 1) k tokens more of h at 2 bytes, over the TP pair's sequence split.
    more = (2 - 1) * k * 2 * s * h / 2
    assert (split["memory_gb"] - folded["memory_gb"]) * 1e9 == pytest.approx(more, rel=1e-9)
    # Expert TP needs experts, and TP x DP x CP divisible by EP x expert TP.
    dense = dict(arch, experts=0, moe_layers=0, top_k=0)
    assert run_one(gpt3_case(**dense, **lay, ep=1, expert_tp=2))["status"] == 6
    assert run_one(gpt3_case(**arch, **lay, ep=16, expert_tp=2))["status"] == 7


def test_sequence_parallelism_needs_each_cp_ranks_tokens_divisible_by_tp():
    # A hunt: a sequence of 4095 at TP 8 with sequence parallelism was priced; Megatron-Core's reduce-scatter
    # asserts the tokens divide (megatron/core/tensor_parallel/mappings.py).
    codes = {
        (seq, sp): int(run_one(gpt3_case(seq=seq, sequence_parallel=sp))["status"])
        for seq in (4095, 4096, 2052)
        for sp in (0, 1)
    }  # gpt3_case: TP 8, CP 1 on 8 GPUs
    assert codes == {(4095, 0): 0, (4095, 1): 14, (4096, 0): 0, (4096, 1): 0, (2052, 0): 0, (2052, 1): 14}
    assert kernel.STATUS[14] == "sequence parallelism needs each cp rank's tokens divisible by tp"


def test_an_uneven_interleaved_split_is_paced_by_its_largest_chunk():
    # 8 layers a stage as 3 chunks are chunks of 3, 3 and 2: the warm-up and cool-down wait on the chunk of 3,
    # (p - 1) 3/8 of a stage's time, where (p - 1) / V had priced each as 8/3 layers (a hunt). V dividing the
    # layers is as before.
    from netsweep_jax.sweep import evaluate_layouts

    ds = evaluate_layouts("llama3-8b", gpus=4, global_batch=8, tp=1, pp=4, cp=1, micro_batch=1, zero=1,
                          schedule=["interleaved:2", "interleaved:3", "interleaved:4"], recompute="full",
                          dtype="float64")  # fmt: skip
    terms = (
        "compute",
        "recompute_time",
        "tp_exposed",
        "cp_exposed",
        "ep_exposed",
        "dp_exposed",
        "pp_exposed",
    )
    for schedule, steps in (("interleaved:2", 3 / 2), ("interleaved:3", 3 * 3 / 8), ("interleaved:4", 3 / 4)):
        cell = ds.sel(schedule=schedule).squeeze()
        stage = sum(float(cell[k]) for k in terms) / 8  # the slowest stage's time a micro-batch (m = 8)
        assert float(cell["bubble"]) == pytest.approx(steps * stage, rel=1e-12), schedule


def test_the_bubble_never_jumps_where_the_slowest_stage_changes():
    # Paced by the slowest stage's largest chunk, the bubble jumped where a faster NIC made another stage the
    # slowest (Llama 3.1 405B's layout of MB-H100-08, 16 layers on the first stage and 15 on the last in 8
    # chunks, with a vocabulary of 160,000: 0.13% slower at 14.5013 than at 14.5012 Gbit/s, a review). The
    # largest over the stages is continuous: the step falls as the NICs get faster.
    import dataclasses

    from netsweep_jax.sweep.engine.layouts import evaluate_rows
    from netsweep_jax.sweep.io.runs import DATASET, read_runs, settings

    run = next(r for r in read_runs(DATASET) if r.id == "MB-H100-08")
    row = settings(run)[0]
    row = dataclasses.replace(row, global_batch=64, llm=dataclasses.replace(row.llm, vocab=160000))
    rates = np.linspace(14.40, 14.60, 41)
    rows = [dataclasses.replace(row, bandwidth=float(b)) for b in rates]
    out = evaluate_rows(rows, np.full(41, 0.6), np.full(41, 0.92), memory_efficiency=np.full(41, 0.43))
    step = np.asarray(out["iteration_time"]).ravel()
    assert np.all(np.isfinite(step)) and np.all(np.diff(step) <= 0), np.diff(step).max()


def test_what_megatron_core_refuses_of_a_mixture_of_experts_cannot_exist():
    # A hunt: TP without sequence parallelism, and the expert all-to-all's overlap at ep 1, with full
    # recomputation or at pp > 1 without interleaving, had been priced (the all-to-all hidden whole), where
    # Megatron-Core refuses each (its MoE layer's check; overlap_moe_expert_parallel_comm's own checks).
    from netsweep_jax.sweep import evaluate_layouts

    common = dict(gpus=16, global_batch=64, micro_batch=1, zero=1, dtype="float64")
    ds = evaluate_layouts("qwen3-30b-a3b", tp=[1, 2], ep=8, sequence_parallel=[0, 1], **common)
    status = ds["status"].squeeze()
    assert int(status.sel(tp=2, sequence_parallel=0)) == kernel.STATUS.index(
        "a mixture of experts at tp > 1 needs sequence parallelism"
    )
    assert int(status.sel(tp=2, sequence_parallel=1)) == 0 and int(status.sel(tp=1, sequence_parallel=0)) == 0
    rule = kernel.STATUS.index(
        "moe_a2a overlap needs ep > 1, no full or moe recompute, at most one MTP layer, and interleaving where pp > 1"
    )
    ds = evaluate_layouts("qwen3-30b-a3b", ep=[1, 8], pp=[1, 2], recompute=["none", "full", "moe"],
                          overlap="grad_reduce+param_gather+moe_a2a", **common)  # fmt: skip
    status = ds["status"].squeeze()
    assert int(status.sel(ep=8, pp=1, recompute="none")) == 0
    for cell in (dict(ep=1, pp=1, recompute="none"), dict(ep=8, pp=1, recompute="full"),
                 dict(ep=8, pp=2, recompute="none"), dict(ep=8, pp=1, recompute="moe")):  # fmt: skip
        assert int(status.sel(**cell)) == rule, cell


def test_activation_offload_runs_on_one_stage_without_recomputation():
    # Megatron-Core's TransformerConfig refuses --cpu-offloading-num-layers with pipeline parallelism or with
    # recomputation (a hunt: the model had priced both); on one stage without it the layout can exist.
    from netsweep_jax.sweep import evaluate_layouts

    ds = evaluate_layouts("llama3-8b", gpus=8, global_batch=16, micro_batch=1, pp=[1, 2], offload_layers=[0, 4],
                          recompute=["none", "selective"], dtype="float64")  # fmt: skip
    status = ds["status"].squeeze()
    rule = kernel.STATUS.index("activation offload needs pp 1 and no recomputation")
    assert int(status.sel(pp=1, offload_layers=4, recompute="none")) == 0
    for cell in (
        dict(pp=2, recompute="none"),
        dict(pp=1, recompute="selective"),
        dict(pp=2, recompute="selective"),
    ):
        assert int(status.sel(offload_layers=4, **cell)) == rule, cell
        assert int(status.sel(offload_layers=0, **cell)) == 0, cell
