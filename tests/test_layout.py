"""The layout model (kernels/layout.py) against the float64 reference, hand-computed cases, and its sweeps."""

import json
import math
import random

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import reference
from helpers import invoke
from netsweep_jax.kernels import layout as kernel
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.core.layout_axes import PER_SWEEP
from netsweep_jax.sweep.engine import layouts
from netsweep_jax.sweep.engine.compiled import layout_rows
from netsweep_jax.sweep.engine.layouts import ROWS_BLOCK
from netsweep_jax.sweep.io.reader import open_cube
from netsweep_jax.sweep.model.llms import LLMS, parse_arch

TOLERANCE = {"float32": 2e-4, "float64": 1e-10}
# The options of a small large-model sweep (the bad-input cases add one bad option to them).
LLAMA_8B = ["--model", "llama3-8b", "--gpus", "8", "--global-batch", "8"]


def random_case(rng):
    heads = rng.choice([8, 12, 16, 32, 64])
    kv = rng.choice([n for n in (1, 2, 4, 8, heads) if heads % n == 0])
    head_dim = rng.choice([64, 128])
    experts = rng.choice([0, 0, 8, 16])
    layers = rng.randint(2, 40)
    mla = rng.random() < 0.3  # multi-head latent attention: one KV head per query head, low-rank K and V
    kv = heads if mla else kv
    v_head = rng.choice([32, head_dim]) if mla else head_dim
    arch = dict(
        layers=layers,
        hidden=heads * head_dim,
        heads=heads,
        kv_heads=kv,
        q_width=heads * head_dim,
        kv_width=kv * head_dim,
        v_width=kv * v_head,
        q_rank=rng.choice([0, 256]) if mla else 0,
        kv_rank=128 if mla else 0,
        rope_width=32 if mla else 0,
        ffn=rng.choice([2, 4]) * heads * head_dim,
        vocab=rng.choice([32000, 50257]),
        seq=rng.choice([512, 1026, 2048]),
        experts=experts,
        top_k=rng.choice([1, 2]) if experts else 1,
        expert_ffn=heads * head_dim,
        shared_experts=rng.choice([0, 1]) if experts else 0,
        moe_layers=rng.randint(1, layers) if experts else 0,
        gated=rng.choice([0, 1]),
        tied=rng.choice([0, 1]),
        dropout=rng.choice([0, 1]),
    )
    dev = dict(
        peak=rng.choice([312e12, 989e12]),
        hbm=rng.choice([2e12, 3.35e12]),
        memory=80e9,
        param_bytes=2.0,
        grad_bytes=rng.choice([2.0, 4.0]),
        act_bytes=2.0,
        usable=rng.choice([0.9, 1.0]),
        gemm_input_bytes=rng.choice([1.0, 2.0]),
        half_peak=rng.choice([312e12, 989e12]),
        gemm_latency=rng.choice([0.0, 6.5e-6, 2e-5]),
        moment_bytes=rng.choice([2.0, 4.0]),
    )
    lay = dict(
        gpus=rng.choice([8, 16, 64, 128, 96]),
        tp=rng.choice([1, 2, 4, 8]),
        pp=rng.choice([1, 2, 3, 4]),
        cp=rng.choice([1, 1, 2]),
        ep=rng.choice([1, 1, 2, 4]),
        dp=rng.choice([0, 0, 0, 0, 2, 4]),
        micro_batch=rng.choice([1, 2, 4]),
        global_batch=rng.choice([64, 128, 256]),
        chunks=rng.choice([1, 1, 2]),
        recompute=rng.choice([0, 1, 2, 4, 8, 16, 32, 64, 128, 33, 96, 248, 34, 192]),  # modes as bit sums
        sequence_parallel=rng.choice([0, 1]),
        zero=rng.choice([0, 1, 2, 3]),
        flash=rng.choice([0, 1]),
        nvlink_domain=rng.choice([8, 16, 72]),
        nvlink_bw=rng.choice([300e9, 450e9]),
        gpus_per_node=rng.choice([4, 8]),
        nics_per_node=rng.choice([1, 4, 8]),
        bandwidth=rng.choice([100e9, 400e9]),
        utilization=rng.uniform(0.3, 1),
        latency=rng.choice([0, 5e-6]),
        collective=rng.choice([0, 1, 2]),
        efficiency=rng.uniform(0.3, 0.7),
        overhead=rng.choice([0, 0.01]),
        slowdown=rng.choice([0, 0.1]),
        straggle=rng.choice([0, 0.05]),
        imbalance=rng.choice([1.0, 1.2]),
        offload_layers=rng.choice([0, 0, 1, 3]),
        attention_efficiency=rng.uniform(0.3, 0.7),
        overlap=rng.choice([0, 1, 2, 3, 4, 8, 15, 7]),
    )
    return arch, dev, lay


def run_kernel(cases, dtype):
    # Padded to the rows kernel's block (the last repeated), through the product's own jitted entry point: in
    # float64 the same compiled function as every fit and validation, one compile per dtype for the suite.
    def stack(i, fields):
        return {
            f: jnp.asarray(
                np.pad([float(c[i][f]) for c in cases], (0, ROWS_BLOCK - len(cases)), "edge"), dtype
            )
            for f in fields
        }

    with jax.enable_x64(dtype == "float64"):
        out = layout_rows(
            kernel.Arch(**stack(0, kernel.Arch._fields)),
            kernel.Device(**stack(1, kernel.Device._fields)),
            kernel.Layout(**stack(2, kernel.Layout._fields)),
        )
        return {k: np.asarray(v, np.float64)[: len(cases)] for k, v in out.items()}


@pytest.mark.parametrize("dtype,seed", [("float64", 0), ("float32", 1)])
def test_kernel_matches_reference_on_random_configurations(dtype, seed):
    rng = random.Random(seed)
    cases = [random_case(rng) for _ in range(1500)]
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


def _gpt3(**changes):
    m = LLMS["gpt3-175b"]
    arch = dict(
        layers=m.layers,
        hidden=m.hidden,
        heads=m.heads,
        kv_heads=m.kv_heads,
        q_width=m.hidden,
        kv_width=m.hidden,
        v_width=m.hidden,
        q_rank=0,
        kv_rank=0,
        rope_width=0,
        ffn=m.ffn,
        vocab=m.vocab,
        seq=m.seq,
        experts=0,
        top_k=1,
        expert_ffn=m.ffn,
        shared_experts=0,
        moe_layers=0,
        gated=0,
        tied=1,
        dropout=1,
    )
    dev = dict(
        peak=312e12,
        hbm=2.039e12,
        memory=80e9,
        param_bytes=2.0,
        grad_bytes=2.0,
        act_bytes=2.0,
        usable=1.0,
        gemm_input_bytes=2.0,
        half_peak=312e12,
        gemm_latency=0.0,
        moment_bytes=4.0,
    )
    lay = dict(
        gpus=8,
        tp=8,
        pp=1,
        cp=1,
        ep=1,
        dp=0,
        micro_batch=1,
        global_batch=1,
        chunks=1,
        recompute=0,
        sequence_parallel=0,
        zero=0,
        flash=0,
        nvlink_domain=8,
        nvlink_bw=300e9,
        gpus_per_node=8,
        nics_per_node=8,
        bandwidth=200e9,
        utilization=1.0,
        latency=0.0,
        collective=0,
        efficiency=0.5,
        overhead=0.0,
        slowdown=0.0,
        straggle=0.0,
        imbalance=1.0,
        offload_layers=0,
        attention_efficiency=0.5,
        overlap=3,
    )
    for key, value in changes.items():
        (arch if key in arch else dev if key in dev else lay)[key] = value
    arch["v_width"] = changes.get("v_width", arch["kv_width"])  # V as wide as K unless said
    return arch, dev, lay


def _one(case):
    return {k: v[0] for k, v in run_kernel([case], "float64").items()}


def test_tp_all_reduce_on_nvlink_by_hand():
    # GPT-3 175B, TP 8 inside a DGX A100: each all-reduce carries b s h = 1 x 2048 x 12288 two-byte
    # activations, 50.33 MB; a ring of 8 on 300 GB/s NVLink moves 2 x 7/8 of it: 293.6 us. Four per
    # layer (two forward, two backward), 96 layers, one micro-batch.
    out = _one(_gpt3())
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
    base, slow = _one(_gpt3()), _one(_gpt3(gemm_latency=tau))
    assert slow["compute"] - base["compute"] == pytest.approx((96 * 18 + 3) * tau, rel=1e-9)
    assert slow["recompute_time"] == base["recompute_time"] == 0
    # Selective recomputation reruns the attention core: its two kernels once more.
    base, slow = _one(_gpt3(recompute=1)), _one(_gpt3(recompute=1, gemm_latency=tau))
    assert slow["recompute_time"] - base["recompute_time"] == pytest.approx(96 * 2 * tau, rel=1e-9)
    # A MoE layer (flash attention): attention's QKV and output GEMMs, the router, fc1 and fc2 of each of the
    # E / e = 4 local experts and the shared expert's pair: 13 forward kernels, 39 with the backward, plus
    # the flash kernel's 1 forward and 2.5 backward (its backward takes 5 products to the forward's 2).
    moe = dict(layers=1, moe_layers=1, experts=16, top_k=2, expert_ffn=1024, shared_experts=1, tp=1, ep=4)
    moe.update(gpus=4, global_batch=4, flash=1, ffn=4 * 12288)
    base, slow = _one(_gpt3(**moe)), _one(_gpt3(gemm_latency=tau, **moe))
    assert slow["compute"] - base["compute"] == pytest.approx((39 + 3.5 + 3) * tau, rel=1e-9)
    # So a larger micro-batch, whose GEMMs are larger, runs each token faster.
    one, two = _one(_gpt3(gemm_latency=tau)), _one(_gpt3(gemm_latency=tau, micro_batch=2, global_batch=2))
    assert two["compute"] / 2 < one["compute"]


def test_tp_across_nodes_is_network_time():
    out = _one(_gpt3(tp=16, gpus=16, heads=96 * 2 // 2, nvlink_domain=8))
    # 16 GPUs span two domains, 8 of the group on each node: the group has the node's NICs, 8 x 200 Gbit/s.
    share = 8 * 200e9 / 8
    assert out["tp_exposed"] == pytest.approx(96 * 4 * 2 * 15 / 16 * (2048 * 12288 * 2) / share, rel=1e-12)
    assert out["network_fraction"] > 0.1


def test_expert_all_to_all_takes_each_gpus_own_nic_share_by_hand():
    # One MoE layer, EP 16 over two 8-GPU nodes (TP 1), 8 x 200 Gbit/s NICs per node: each GPU dispatches
    # X = b s h k bytes, 7/16 of it to the peers on its node (NVLink, 300 GB/s) and 8/16 to the other node,
    # all 16 at once, so each through its own 25 GB/s NIC (not the 8 NICs of its group's members on the node).
    h, s, k = 4096, 2048, 2
    case = _gpt3(
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
    out = _one(case)
    x = s * h * k * 2
    nvlink, nic = 7 / 16 * x / 300e9, 8 / 16 * x / (8 * 200e9 / 8 / 8)
    assert nic > nvlink
    assert out["ep_exposed"] == pytest.approx(
        4 * nic, rel=1e-12
    )  # dispatch and combine, forward and backward
    assert out["ep_exposed"] > 0 and out["network_fraction"] > 0 and out["ep_on_nics"] == 1
    inside = _one(
        _gpt3(**{**case[0], **case[1], **case[2], "ep": 8, "gpus": 8, "global_batch": 8, "experts": 16})
    )
    assert inside["ep_exposed"] > 0 and inside["ep_on_nics"] == 0  # one node: NVLink only


def test_bubble_by_hand():
    # Narayanan et al. SC'21, section 2.2: the bubble is (p - 1) / V stage-micro-batch times.
    for chunks in (1, 2, 4):
        out = _one(_gpt3(pp=8, gpus=64, tp=8, global_batch=32, chunks=chunks))
        stage = (out["iteration_time"] - out["bubble"] - out["dp_exposed"] - out["optimizer"]) / 32
        assert out["bubble"] == pytest.approx(7 / chunks * stage, rel=1e-12)
        assert out["bubble"] / (32 * stage) == pytest.approx(7 / (chunks * 32), rel=1e-12)


def test_zero3_step_by_hand():
    # One layer's parameters (12 h^2 + 2h = 1.812e9, 2 bytes each) all-gathered over 1536 GPUs (8 per node:
    # the group has the node's 8 x 25 Gbit/s NICs, 25 GB/s), forward and backward, and its gradients
    # reduce-scattered: per layer exposed = max(0, ag - t_f) + max(0, ag + rs - t_b).
    case = _gpt3(tp=1, gpus=1536, global_batch=1536, zero=3, bandwidth=25e9)
    out = _one(case)
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


def test_activation_memory_from_korthikanti_table_2():
    # Korthikanti et al. MLSys'23, Table 2: per layer s b h (34 + 5 a s / h) without parallelism; with TP
    # and sequence parallelism everything divides by t; selective recompute drops the 5 a s / h term.
    s, b, h, a, t = 2048, 1, 12288, 96, 8
    per_layer_sp_selective = s * b * h * 34 / t
    assert per_layer_sp_selective == pytest.approx(106.95e6, rel=1e-3)
    base = _one(_gpt3(sequence_parallel=1, recompute=1, pp=1, global_batch=1))
    more = _one(_gpt3(sequence_parallel=1, recompute=1, pp=1, global_batch=1, layers=97))
    one_layer_states = (more["memory_gb"] - base["memory_gb"]) * 1e9
    layer_params = (12 * h * h + 2 * h) / t  # matrices and the two norms (biases are not counted)
    states = layer_params * (2 + 2 + 12)
    assert one_layer_states - states == pytest.approx(per_layer_sp_selective, rel=1e-9)
    none = _one(_gpt3(sequence_parallel=0, recompute=0, pp=1, global_batch=1))
    none97 = _one(_gpt3(sequence_parallel=0, recompute=0, pp=1, global_batch=1, layers=97))
    without_sp = s * b * h * (10 + 24 / t + 5 * a * s / (h * t))
    assert (none97["memory_gb"] - none["memory_gb"]) * 1e9 - states == pytest.approx(without_sp, rel=1e-9)


def test_more_bandwidth_is_never_slower():
    rng = random.Random(5)
    cases = [random_case(rng) for _ in range(300)]
    faster = [(a, d, {**lay, "bandwidth": lay["bandwidth"] * 4}) for a, d, lay in cases]
    slow, fast = run_kernel(cases, "float64"), run_kernel(faster, "float64")
    ok = slow["status"] == 0
    assert (fast["iteration_time"][ok] <= slow["iteration_time"][ok] * (1 + 1e-12)).all()


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
    for text, message in [
        ("layers=2", "missing hidden"),
        ("layers=2,hidden=8,heads=2,seq=4,vocab=9,foo=1", "'foo'"),
        ("layers=2,hidden=9,heads=3,kv_heads=2,seq=4,vocab=9", "multiple of kv_heads"),
        ("layers=2,hidden=500,heads=8,seq=4,vocab=9", "not a multiple of heads=8; give head_dim"),
        ("layers=x,hidden=8,heads=2,seq=4,vocab=9", "whole number"),
        ("layers=2,hidden=8,heads=2,seq=4,vocab=9,mlp=relu", "gelu, swiglu"),
        ("layers=2,hidden=8,heads=2,seq=4,vocab=9,rope_dim=2", "needs kv_rank"),
        ("layers=2,hidden=8,heads=2,seq=4,vocab=9,kv_rank=4,rope_dim=4", "below head_dim=4"),
    ]:
        with pytest.raises(InputError, match=message):
            parse_arch(text)


def test_grid_masks_what_cannot_exist_and_plan_finds_the_grid_best():
    # 1,152 layouts: two blocks of 1,024 columns per setting, so the device's top-k is merged across blocks.
    grid = layouts.make_layout_grid(
        "llama3-8b",
        gpu="h100",
        gpus="16,24",
        global_batch="64",
        tp="1,2,3,4",
        pp="1,2,5",
        cp="1,2",
        micro_batch="1,2,4,8",
        zero="0,1,2,3",
        recompute="none,selective,full",
        bandwidth="100,400",
    )
    assert grid.inner_size == 1152
    arrays = layouts.evaluate_layouts_arrays(grid)
    ds = layouts.layouts_dataset(grid, arrays)
    assert set(np.unique(ds.status.values)) >= {0, 1, 2}  # tp 3 breaks the heads rule; 24 / 5 the GPU count
    assert np.isnan(ds.iteration_time.where(ds.status != 0)).all()
    best = layouts.best_layouts(grid, keep=2, columns=1024)  # two blocks of layouts per setting, merged
    score = np.where((arrays["status"] == 0) & (arrays["fits"] > 0), arrays["tokens_per_s"], -np.inf)
    flat = score.reshape(grid.outer_size, grid.inner_size)
    order = np.argsort(-flat, axis=1, kind="stable")[:, :2]
    found = np.isfinite(np.take_along_axis(flat, order, axis=1))
    assert found.any() and not found.all()  # some cells have fewer than two feasible layouts
    np.testing.assert_array_equal(best["layout"], np.where(found, order, -1))
    np.testing.assert_array_equal(best["score"], np.take_along_axis(flat, order, axis=1))
    assert np.isnan(best["iteration_time"][~found]).all()


def test_layout_grid_refuses_bad_axis_values():
    for kwargs, message in [
        (dict(tp="0"), "tp"),
        (dict(zero="4"), "zero"),
        (dict(schedule="gpipe"), "1f1b"),
        (dict(gpu="tpu"), "gpu"),
        (dict(precision="fp8", gpu="a100"), "fp8"),
        (dict(global_batch=None), "global batch"),
        (dict(gpus=None), "--gpus"),
    ]:
        args = dict(gpus="8", global_batch="8") | kwargs
        with pytest.raises(InputError, match=message):
            layouts.make_layout_grid("llama3-8b", **args)


def test_cli_plan_and_grid_on_a_large_model(tmp_path):
    out = tmp_path / "plan.h5"
    r = invoke(
        "plan",
        "--model",
        "llama3-8b",
        "--gpus",
        "16,64",
        "--global-batch",
        "128",
        "--tp",
        "1,2,4",
        "--pp",
        "1,2",
        "--cp",
        "1",
        "--keep",
        "2",
        "--bw",
        "100",
        "--out",
        str(out),
    )
    assert r.exit_code == 0, r.output
    assert "assumed: h100: DGX H100" in r.stderr  # the GPU's system, said once
    assert r.stdout.count("tokens/s") == 2 and "network-bound" in r.stdout and f"wrote {out}" in r.stdout
    ds = open_cube(out)
    assert (
        dict(ds.sizes)["rank"] == 2 and ds.attrs["family"] == "layouts" and "DGX H100" in ds.attrs["assumed"]
    )
    assert (ds.tokens_per_s.isel(rank=0) >= ds.tokens_per_s.isel(rank=1)).all()
    # #27: a searched axis is a variable of a plan cube, not a dim; select says where it is.
    r = invoke("select", str(out), "--tp", "1")
    assert (
        r.exit_code == 2
        and "--tp 1: a plan cube has no tp dim: each rank's tp is its variable layout_tp" in r.output
    )
    cube = tmp_path / "grid.h5"
    r = invoke(
        "grid",
        "--arch",
        "layers=8,hidden=1024,heads=8,seq=1024,vocab=32000",
        "--gpus",
        "24",
        "--tp",
        "1,3",
        "--global-batch",
        "24",
        "--gpu",
        "A100",
        "--overlap",
        "tp_comm+grad_reduce",
        "--moment-bytes",
        "2",
        "--out",
        str(cube),
    )
    assert r.exit_code == 0, r.output
    ds = open_cube(cube)
    assert ds.status.sel(tp=3).item() == 2 and "heads not divisible by tp" in ds.status.attrs["rules"]
    # Settings given once per sweep are the cube's attributes, in one spelling; not "assumed".
    assert ds.attrs["overlap"] == "grad_reduce+tp_comm" and float(ds.attrs["moment_bytes"]) == 2
    assert "overlap" not in ds.attrs["assumed"] and "Adam moments" not in ds.attrs["assumed"]
    assert np.isfinite(ds.iteration_time.sel(tp=1)).all()
    r = invoke("select", str(cube), "--tp", "1", "--csv")
    assert r.exit_code == 0 and "iteration_time" in r.stdout


def test_megatron_option_names_are_aliases(tmp_path):
    # #27: a Megatron-LM launch line's layout options can be pasted: they set the same dims.
    ours = [
        "--tp",
        "2",
        "--pp",
        "1",
        "--cp",
        "2",
        "--micro-batch",
        "1",
        "--global-batch",
        "8",
        "--schedule",
        "1f1b",
    ]
    theirs = ["--tensor-model-parallel-size", "2", "--pipeline-model-parallel-size", "1"]
    theirs += ["--virtual-pipeline-model-parallel-size", "1"]
    theirs += ["--context-parallel-size", "2", "--micro-batch-size", "1", "--global-batch-size", "8"]
    cubes = []
    for i, (layout, recompute) in enumerate([(ours, "--recompute"), (theirs, "--recompute-granularity")]):
        out = tmp_path / f"{i}.h5"
        r = invoke(
            "grid", "--model", "llama3-8b", "--gpus", "8", *layout, recompute, "selective", "--out", str(out)
        )
        assert r.exit_code == 0, r.output
        cubes.append(open_cube(out))
    assert dict(cubes[0].sizes) == dict(cubes[1].sizes)
    assert float(cubes[0].iteration_time.max()) == float(cubes[1].iteration_time.max())


@pytest.mark.parametrize(
    "args,message",
    [
        (
            ["grid", *LLAMA_8B, "--tp", "0"],
            "--tp 0: tp must be",
        ),
        (["grid", "--model", "llama3-8b", "--gpus", "8"], "--global-batch"),
        (["grid", "--model", "resnet50", "--tp", "2", "--bw", "10"], "--tp applies to large-model presets"),
        (
            ["grid", "--model", "llama3-8b,resnet50", "--gpus", "8", "--global-batch", "8"],
            "cannot share a sweep",
        ),
        (
            ["grid", *LLAMA_8B, "--compressor", "int8"],
            "--compressor applies to data-parallel",
        ),
        # Every data-parallel option a layout sweep does not read is refused, not silently ignored.
        (["grid", *LLAMA_8B, "--ratio", "2"], "--ratio applies to data-parallel"),
        (["grid", *LLAMA_8B, "--fusion-mb", "5"], "--fusion-mb applies to data-parallel"),
        (["grid", *LLAMA_8B, "--accum", "2"], "--accum applies to data-parallel"),
        (["plan", "--gpus", "8", "--global-batch", "8"], "--model name a large-model preset"),
        (
            [
                "plan",
                *LLAMA_8B,
                "--precision",
                "fp8",
                "--gpu",
                "a100",
            ],
            "no fp8",
        ),
        (["plan", "--arch", "layers=2,hidden=8", "--gpus", "8", "--global-batch", "8"], "--arch"),
        (["plan", "--model", "llama3-8b", "--nodes", "2", "--gpus", "8", "--global-batch", "8"], "one way"),
        # Fixes users hit (#27): a non-ASCII digit, an empty name, one schedule spelled twice, a head width that
        # does not divide, an option named in its message.
        (
            [
                "plan",
                "--arch",
                "layers=²,hidden=512,heads=8,seq=64,vocab=100",
                "--gpus",
                "8",
                "--global-batch",
                "8",
            ],
            "--arch layers=²: must be a whole number",
        ),
        (
            [
                "plan",
                *LLAMA_8B,
                "--schedule",
                "interleaved:²",
            ],
            "--schedule 'interleaved:²'",
        ),
        (
            [
                "grid",
                *LLAMA_8B,
                "--schedule",
                "interleaved:2,interleaved:02",
            ],
            "a schedule appears twice",
        ),
        (
            ["plan", *LLAMA_8B, "--schedule", ""],
            "--schedule ''",
        ),
        (
            ["plan", *LLAMA_8B, "--recompute", ""],
            "--recompute ''",
        ),
        (
            ["plan", *LLAMA_8B, "--attention", ""],
            "--attention ''",
        ),
        (
            ["plan", *LLAMA_8B, "--precision", ""],
            "--precision ''",
        ),
        (["plan", *LLAMA_8B, "--gpu", ""], "--gpu ''"),
        (
            ["plan", *LLAMA_8B, "--overlap", "tp_comm+tp"],
            "--overlap 'tp_comm+tp': one mode, none or a + list of grad_reduce",
        ),
        (
            ["grid", *LLAMA_8B, "--recompute", "mlp+foo"],
            "--recompute 'mlp+foo': unknown; known: none, selective, full, op, or a + list",
        ),
        (
            ["grid", *LLAMA_8B, "--moment-bytes", "3"],
            "--moment-bytes 3: must be 4 (fp32) or 2 (bf16)",
        ),
        (
            [
                "plan",
                *LLAMA_8B,
                "--pp",
                "2",
                "--virtual-pipeline-model-parallel-size",
                "2",
                "--schedule",
                "1f1b",
            ],
            "--virtual-pipeline-model-parallel-size give the schedule one way",
        ),
        (
            ["plan", *LLAMA_8B, "--virtual-pipeline-model-parallel-size", "0"],
            "--virtual-pipeline-model-parallel-size '0': give whole numbers from 1",
        ),
        (
            ["plan", *LLAMA_8B, "--attention", "sparse"],
            "--attention 'sparse'",
        ),
        (
            [
                "plan",
                "--arch",
                "layers=2,hidden=500,heads=8,seq=64,vocab=100",
                "--gpus",
                "8",
                "--global-batch",
                "8",
            ],
            "not a multiple of heads=8",
        ),
        (
            ["plan", *LLAMA_8B, "--grad-bytes", "3"],
            "--grad-bytes 3: must be 0",
        ),
        # #27: work too large is refused before any, naming the options that made it large (not --gpus).
        (
            ["plan", *LLAMA_8B, "--bw", "1..1000", "--util", "0.001..1@1000"],
            "1,000,000 settings (--bw 1,000 x --util 1,000) are too many for one plan (at most 100,000",
        ),
        (
            ["grid", *LLAMA_8B, "--bw", "1..1000", "--util", "0.001..1@1000", "--latency", "0..99"],
            "100,000,000 configurations (--bw 1,000 x --util 1,000 x --latency 100) are too many to keep",
        ),
    ],
)
def test_cli_bad_layout_input_is_one_line_and_writes_nothing(tmp_path, args, message):
    out = tmp_path / "o.h5"
    r = invoke(*args, "--out", str(out))
    assert r.exit_code == 2 and message in r.output, r.output
    assert len(r.output.strip().splitlines()) == 1 and not list(tmp_path.iterdir())


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
            lay = kernel.Layout(**{f: jnp.float64(0.0) for f in kernel.Layout._fields})._replace(
                nvlink_domain=jnp.float64(per_node),
                nvlink_bw=jnp.float64(nvlink),
                gpus_per_node=jnp.float64(per_node),
                nics_per_node=jnp.float64(nics),
                bandwidth=jnp.float64(bw),
                utilization=jnp.float64(util),
                latency=jnp.float64(latency),
                collective=jnp.float64(0),
            )
            layout = float(kernel.all_reduce(jnp.float64(size), jnp.float64(n), jnp.float64(1), lay))
        assert layout == pytest.approx(dp_family, rel=1e-12)


def test_cli_arch_and_presets_share_a_sweep_but_not_with_profiles(tmp_path):
    out = tmp_path / "both.h5"
    r = invoke(
        "grid",
        "--model",
        "llama3-8b",
        "--arch",
        "layers=8,hidden=1024,heads=8,seq=1024,vocab=32000",
        "--gpus",
        "8",
        "--global-batch",
        "8",
        "--out",
        out,
    )
    assert r.exit_code == 0, r.output
    assert list(open_cube(out).model.values) == ["arch", "llama3-8b"]
    r = invoke(
        "grid",
        "--model",
        "resnet50",
        "--arch",
        "layers=8,hidden=1024,heads=8,seq=1024,vocab=32000",
        "--gpus",
        "8",
        "--global-batch",
        "8",
        "--out",
        tmp_path / "no.h5",
    )
    assert (
        r.exit_code == 2
        and "(resnet50) cannot share a sweep" in r.output
        and not (tmp_path / "no.h5").exists()
    )


def test_memory_agrees_with_megatrons_formula_on_random_layouts():
    # Megatron-LM's theoretical_memory_usage.py (distributed optimizer, SP, selective recompute) with the terms
    # it lacks added on both sides (reference.megatron_memory): the kernel's first stage within 2%.
    rng = random.Random(11)
    cases, twins = [], []
    while len(cases) < 1000:
        arch, dev, lay = random_case(rng)
        heads = arch["heads"]
        t = rng.choice([n for n in (1, 2, 4, 8) if heads % n == 0 and arch["kv_heads"] % n == 0])
        p, c = rng.choice([1, 2, 4]), rng.choice([1, 2])
        chunks = rng.choice([1, 2]) if p > 1 else 1
        arch.update(
            experts=0,
            moe_layers=0,
            shared_experts=0,
            top_k=1,
            layers=rng.randint(8, 48) * p * chunks,
            dropout=1,
            q_rank=0,
            kv_rank=0,
            rope_width=0,
            v_width=arch["kv_width"],
        )  # Megatron's formula counts dropout masks and 2-byte GEMM inputs, and plain attention
        dev.update(gemm_input_bytes=2.0, moment_bytes=4.0)  # and fp32 Adam moments
        dp = rng.choice([1, 2, 4, 8])
        b = rng.choice([1, 2])
        m = p * rng.choice([1, 2, 4]) if chunks > 1 else rng.choice([1, 2, 4, 8])
        lay.update(
            tp=t,
            pp=p,
            cp=c,
            ep=1,
            dp=0,
            gpus=t * p * c * dp,
            micro_batch=b,
            global_batch=b * dp * m,
            chunks=chunks,
            recompute=1,
            sequence_parallel=1,
            zero=1,
            imbalance=1.0,
            offload_layers=0,
        )
        if arch["seq"] % (2 * c):
            continue
        cases.append((arch, dev, lay))
        twins.append(reference.megatron_memory(arch, lay, dev["grad_bytes"]))
    out = run_kernel(cases, "float64")
    assert (out["status"] == 0).all()
    ratio = out["memory_gb"] * 1e9 / np.array(twins)
    assert np.abs(ratio - 1).max() < 0.02, np.abs(ratio - 1).max()


def test_memory_terms_by_hand():
    # Llama-style layer (SwiGLU, f = 3.5 h): fused SwiGLU keeps 3 + 6 f / h bytes per token and h, not 3 + 8 f / h.
    h, f, s = 4096, 14336, 2048
    base = _gpt3(
        hidden=h,
        heads=32,
        kv_heads=32,
        q_width=h,
        kv_width=h,
        ffn=f,
        gated=1,
        seq=s,
        tp=1,
        gpus=1,
        sequence_parallel=1,
        recompute=1,
        flash=1,
    )
    one, two = _one(base), _one(_gpt3(**{**base[0], **base[1], **base[2], "layers": 97}))
    params = 4 * h * h + 2 * h + 3 * h * f
    per_layer = s * h * (4 + 11 + 3 + 6 * f / h) + params * (2 + 2 + 12)
    assert (two["memory_gb"] - one["memory_gb"]) * 1e9 == pytest.approx(per_layer, rel=1e-9)
    # Expert states over the expert data-parallel group: EP 8 of 16 GPUs leaves 2 copies of each expert,
    # whose Adam states ZeRO-1 splits 2 ways, not over the 16 dense data-parallel GPUs.
    moe = dict(
        layers=1,
        moe_layers=1,
        experts=8,
        top_k=2,
        expert_ffn=1024,
        shared_experts=0,
        hidden=h,
        heads=32,
        kv_heads=32,
        q_width=h,
        kv_width=h,
        ffn=f,
        gated=1,
        seq=s,
        tp=1,
        gpus=16,
        ep=8,
        zero=1,
        global_batch=16,
        recompute=2,
        usable=0.5,
    )
    out = _one(_gpt3(**moe))
    experts = 8 * 3 * h * 1024 / 8  # one GPU's expert parameters
    dense = 4 * h * h + 2 * h + h * 8 + 51200 * h  # attention, norms, router; the (tied) embedding
    states = dense * (2 + 2 + 12 / 16) + experts * (2 + 2 + 12 / 2)
    acts = 2 * s * h + s * (8 + h) + 4 * s * (51200 + h)  # full recompute: the layer's input; ids, mask; head
    assert out["memory_gb"] * 1e9 == pytest.approx(states + acts, rel=1e-9)
    assert out["memory_free_gb"] * 1e9 == pytest.approx(0.5 * 80e9 - states - acts, rel=1e-9)
    # bf16 moments (Megatron-Core's precision-aware optimizer): Adam keeps 4 + 2 x 2 bytes, not 12, and its
    # step moves 2 (4 + 4 + 4) bytes per parameter, not 32.
    bf16 = _one(_gpt3(**moe, moment_bytes=2.0))
    states_bf16 = dense * (2 + 2 + 8 / 16) + experts * (2 + 2 + 8 / 2)
    assert bf16["memory_gb"] * 1e9 == pytest.approx(states_bf16 + acts, rel=1e-9)
    assert bf16["optimizer"] / out["optimizer"] == pytest.approx(24 / 32, rel=1e-12)


def test_recompute_modules_and_torchtitans_per_op_policy_by_hand():
    # Megatron-Core's --recompute-modules (bits: layernorm 8, up_proj 16, mlp 32) on GPT-3 175B at TP 8 with
    # SP, one micro-batch of 2,048 tokens, 96 layers, no GEMM latency: each module drops what it no longer
    # keeps (units of h bytes a token, over t) and re-runs its forward in the backward.
    s, h, t, rate, hbm = 2048, 12288, 8, 312e12 * 0.5, 2.039e12
    tokens_h = s * h / t
    base = dict(sequence_parallel=1, flash=1)
    none = _one(_gpt3(**base))
    drops = {8: 2 * 2, 16: 2 + 4, 32: (2 + 2) * 4}  # norm outputs 2 x 2; Q, K, V 2 + 4; GELU and fc2 inputs
    work = {8: 0.0, 16: 2 * h * h + 4 * h * h, 32: 2 * 2 * h * 4 * h}  # FLOPs a token re-runs: none, QKV, MLP
    tp_ar = 2 * 7 / 8 * (s * h * 2) / 300e9  # SP's reduce-scatter and all-gather, a ring on NVLink
    for bit, drop in drops.items():
        out = _one(_gpt3(**base, recompute=bit))
        assert (none["memory_gb"] - out["memory_gb"]) * 1e9 == pytest.approx(96 * drop * tokens_h, rel=1e-9)
        again = s * work[bit] / t / rate + drop * tokens_h / hbm
        assert out["recompute_time"] == pytest.approx(96 * again, rel=1e-9)
        reruns = 0.0 if bit == 8 else 0.5  # up_proj and mlp re-run one of their TP collectives
        assert out["tp_exposed"] - none["tp_exposed"] == pytest.approx(96 * reruns * tp_ar, rel=1e-9)
    both = _one(_gpt3(**base, recompute=8 + 32))  # a list of modules drops and re-runs what each does
    assert (none["memory_gb"] - both["memory_gb"]) * 1e9 == pytest.approx(96 * 20 * tokens_h, rel=1e-9)
    # torchtitan's per-op policy (bit 4) on a Llama 3 8B layer (gated, 8 KV heads, no dropout), 2 x 8,192
    # tokens, one GPU: it keeps the block input, wq's, wv's, the attention kernel's, w1's and w2's outputs,
    # 2 (4096 + 4096 + 1024 + 4096 + 14336 + 4096) = 63,488 bytes a token; the rest of the 139,264 that a
    # layer keeps without recomputation (4 h + 2 h + 4 w_q + 4 w_kv + 2 h + 6 f) is re-written, and wk, wo
    # and w3 re-run (three kernels of tau each).
    llama = dict(
        hidden=4096,
        heads=32,
        kv_heads=8,
        q_width=4096,
        kv_width=1024,
        ffn=14336,
        seq=8192,
        gated=1,
        dropout=0,
    )
    llama.update(tp=1, gpus=1, micro_batch=2, global_batch=2, flash=1, gemm_latency=6.5e-6)
    plain, op = _one(_gpt3(**llama)), _one(_gpt3(**llama, recompute=4))
    tokens = 2 * 8192
    assert (plain["memory_gb"] - op["memory_gb"]) * 1e9 == pytest.approx(
        96 * tokens * (139264 - 63488), rel=1e-9
    )
    again = tokens * 2 * 4096 * (1024 + 4096 + 14336) / rate + 3 * 6.5e-6 + tokens * (139264 - 63488) / hbm
    assert op["recompute_time"] == pytest.approx(96 * again, rel=1e-9)
    assert plain["recompute_time"] == 0


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
    mla.update(flash=1, pp=1)
    one, two = _one(_gpt3(**mla, layers=1)), _one(_gpt3(**mla, layers=2))
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
    # 5.95 ms forward, twice that backward, where the four all-reduces take 4 x 293.6 us.
    h, s = 12288, 2048
    gemms = s * 24 * h * h / 8 / (312e12 * 0.5)
    assert gemms == pytest.approx(5.95e-3, rel=1e-3)
    base, hidden = _one(_gpt3()), _one(_gpt3(overlap=3 + 4))
    assert base["tp_exposed"] > 0 and hidden["tp_exposed"] == 0
    # On a 1 GB/s link the collectives outlast the GEMMs: the excess is exposed, forward and backward.
    slow = dict(nvlink_bw=1e9)
    ring = 2 * 7 / 8 * (s * h * 2) / 1e9
    exposed = max(0.0, 2 * ring - gemms) + max(0.0, 2 * ring - 2 * gemms)
    assert _one(_gpt3(**slow, overlap=7))["tp_exposed"] == pytest.approx(96 * exposed, rel=1e-9)
    assert _one(_gpt3(**slow))["tp_exposed"] == pytest.approx(96 * 4 * ring, rel=1e-9)
    # Without --overlap-grad-reduce every layer's gradients (12 h^2 + 2 h two-byte values over 8) and the
    # tied embedding's (51,200 h over 8) are all-reduced after the backward: TP 8 x DP 2 on two DGX A100s,
    # each GPU's DP pair across nodes through its own 200 Gbit/s NIC (25 GB/s), a ring of two.
    dp2 = dict(gpus=16, global_batch=2)
    layer_grads, embed_grads = (12 * h * h + 2 * h) / 8 * 2, 51200 * h / 8 * 2
    serial = _one(_gpt3(**dp2, overlap=2))
    assert serial["dp_exposed"] == pytest.approx((96 * layer_grads + embed_grads) / 25e9, rel=1e-9)
    assert _one(_gpt3(**dp2))["dp_exposed"] < serial["dp_exposed"]  # the overlap hides most of it
    # Without --overlap-param-gather (ZeRO 1) the updated parameters' all-gather, (n - 1) / n of the stage's
    # 96 layers and embedding at 2 bytes, is exposed in full; with it, on 400 Gbit/s NICs (50 GB/s), it
    # hides behind the first micro-batch's forward (0.44 s of gather, 0.63 s of forward).
    gathered = _one(_gpt3(**dp2, zero=1, overlap=1, bandwidth=400e9))
    overlapped = _one(_gpt3(**dp2, zero=1, overlap=3, bandwidth=400e9))
    gather = (96 * layer_grads + embed_grads) / 2 / 50e9
    assert gathered["dp_exposed"] - overlapped["dp_exposed"] == pytest.approx(gather, rel=1e-9)
    # --overlap-moe-expert-parallel-comm: a MoE layer's all-to-alls behind another micro-batch's forward and
    # backward, the excess exposed (one layer more adds its compute and its all-to-all time).
    moe = dict(experts=8, top_k=2, expert_ffn=1024, tp=1, gpus=64, ep=8, global_batch=64)
    moe.update(nvlink_bw=1e9, flash=1)  # EP 8 inside a DGX, on a slow NVLink
    runs = {o: [_one(_gpt3(**moe, layers=n, moe_layers=n, overlap=o)) for n in (1, 2)] for o in (3, 11)}
    compute = runs[3][1]["compute"] - runs[3][0]["compute"]
    a2a = runs[3][1]["ep_exposed"] - runs[3][0]["ep_exposed"]
    assert a2a > compute > 0  # on a slow network the all-to-alls outlast the compute
    hidden_a2a = runs[11][1]["ep_exposed"] - runs[11][0]["ep_exposed"]
    assert hidden_a2a == pytest.approx(a2a - compute, rel=1e-9)


def test_one_moe_layer_on_two_nodes_by_hand():
    # #26: one MoE layer (16 experts of width 512, top-2, SwiGLU; hidden 1024, 8 heads of 128) on two DGX H100
    # nodes, EP 16 = DP 16, one micro-batch of 1,024 tokens, flash attention, a GEMM latency of 6.5 us.
    h, s, fe, E, k, v = 1024, 1024, 512, 16, 2, 1000
    peak, hbm, tau, lam = 989e12, 3.35e12, 6.5e-6, 5e-6
    arch = dict(layers=1, moe_layers=1, hidden=h, heads=8, kv_heads=8, q_width=h, kv_width=h, seq=s, vocab=v)
    arch.update(experts=E, top_k=k, expert_ffn=fe, shared_experts=0, gated=1, dropout=0, ffn=4 * h)
    dev = dict(peak=peak, half_peak=peak, hbm=hbm, gemm_latency=tau)
    lay = dict(gpus=16, tp=1, ep=16, global_batch=16, flash=1, nvlink_domain=8, nvlink_bw=450e9)
    lay.update(gpus_per_node=8, nics_per_node=8, bandwidth=400e9, latency=lam, attention_efficiency=0.5)
    out = _one(_gpt3(**arch, **dev, **lay))
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
    forward = gemm + kernels + core + (acts + weights) / hbm
    backward = 2 * forward + 0.5 * (core + tau)  # flash's backward: 5 products to 2
    embed = 3 * s * h * 2 / hbm
    logits = s * 2 * h * v / rate + tau + 8 * s * v / hbm  # the output layer's GEMM and its fp32 logits
    assert out["compute"] == pytest.approx(forward + backward + embed + 3 * logits, rel=1e-9)
    # Dispatch and combine, forward and backward: each GPU sends 1,024 x 2 copies x 2 bytes x h = 4.19 MB, 7/16
    # of it to the 7 others of its node on NVLink, 8/16 to the other node through its own 400 Gbit/s NIC with a
    # per-step latency to each of the 8 peers there: the NICs pace it.
    x = s * k * 2 * h
    nvlink, nics = 7 / 16 * x / 450e9, 8 / 16 * x / 50e9 + 8 * lam
    assert nics > nvlink and out["ep_on_nics"] == 1
    assert out["ep_exposed"] == pytest.approx(4 * nics, rel=1e-9)


def test_offloaded_layers_leave_one_layer_and_fp8_keeps_gemm_inputs_in_one_byte():
    # --cpu-offloading-num-layers takes a stage's layers' activations to the host, all but one at most.
    kept = _one(_gpt3(recompute=2, sequence_parallel=1))
    off = _one(_gpt3(recompute=2, sequence_parallel=1, offload_layers=500))
    per_layer = 2 * 2048 * 12288 / 8  # full recompute: each layer's input, split by SP over 8
    assert (kept["memory_gb"] - off["memory_gb"]) * 1e9 == pytest.approx(95 * per_layer, rel=1e-9)
    # fp8: QKV's, the output projection's, fc1's and fc2's inputs in 1 byte (GPT-3: 1 + 1 + 1 + 4 h bytes
    # a token fewer), dropout-free: the two masks and the embedding's go.
    base = dict(sequence_parallel=1, recompute=1, flash=1)
    bf16 = _one(_gpt3(**base)), _one(_gpt3(**base, layers=97))
    fp8 = _one(_gpt3(**base, gemm_input_bytes=1.0)), _one(_gpt3(**base, layers=97, gemm_input_bytes=1.0))
    dry = _one(_gpt3(**base, dropout=0)), _one(_gpt3(**base, layers=97, dropout=0))

    def layer(pair):
        return (pair[1]["memory_gb"] - pair[0]["memory_gb"]) * 1e9

    tokens_h = 2048 * 12288 / 8
    assert layer(bf16) - layer(fp8) == pytest.approx(7 * tokens_h, rel=1e-9)
    assert layer(bf16) - layer(dry) == pytest.approx(2 * tokens_h, rel=1e-9)


def test_plan_charges_the_network_what_an_ideal_one_would_save(tmp_path):
    # The paper's question of a plan: the best step against the best step on an ideal network, layout changes
    # included; a slower network never costs less, and the ideal step does not depend on the bandwidth.
    out = tmp_path / "p.h5"
    r = invoke(
        "plan",
        "--model",
        "llama3-8b",
        "--gpus",
        "64",
        "--global-batch",
        "64",
        "--bw",
        "1,1000",
        "--tp",
        "1,8",
        "--pp",
        "1",
        "--cp",
        "1",
        "--keep",
        "2",
        "--out",
        str(out),
        "--json",
    )
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)
    best = {row["bandwidth"]: row for row in rows if row["rank"] == 1}
    assert best[1.0]["ideal_iteration_time"] == pytest.approx(best[1000.0]["ideal_iteration_time"], rel=1e-6)
    assert best[1.0]["network_cost"] > 0.2 > best[1000.0]["network_cost"] >= 0
    assert best[1.0]["network_cost"] == pytest.approx(
        1 - best[1.0]["ideal_iteration_time"] / best[1.0]["iteration_time"], rel=1e-6
    )
    ds = open_cube(out)
    assert float(ds.network_cost.max()) == pytest.approx(best[1.0]["network_cost"], rel=1e-6)
    # What flipping each overlap switch does to the best step (layouts searched again): turning an overlap
    # off never saves time, turning one on never costs; the expert all-to-all's is moot on a dense model.
    for row in best.values():
        assert row["flip_grad_reduce"] >= -1e-6 and row["flip_param_gather"] >= -1e-6
        assert row["flip_tp_comm"] <= 1e-6 and row["flip_moe_a2a"] is None
    assert best[1.0]["flip_grad_reduce"] > 0.01  # on a 1 Gbit/s network the gradient reduce is hidden
    assert ds.switch_change.attrs["overlap"] == "grad_reduce+param_gather"
    # The one-per-sweep settings are the cube's attributes.
    assert ds.attrs["overlap"] == "grad_reduce+param_gather" and float(ds.attrs["moment_bytes"]) == 4
    assert float(ds.attrs["usable_memory"]) == 0.95 and float(ds.attrs["gemm_latency_us"]) == 6.5
    args = (
        "plan",
        "--model",
        "llama3-8b",
        "--gpus",
        "64",
        "--global-batch",
        "64",
        "--bw",
        "1",
        "--tp",
        "1,8",
    )
    text = invoke(*args, "--out", str(tmp_path / "t.h5"))
    assert text.exit_code == 0 and "  overlap grad_reduce+param_gather: tp_comm on saves" in text.output


def test_the_attention_core_runs_at_half_precision_and_fp8_speeds_only_the_gemms():
    # A causal flash kernel computes half of the 4 s w_q FLOPs a token's scores and context cost, at the
    # half-precision peak times its own efficiency; selective recomputation repeats exactly that.
    case = dict(flash=1, recompute=1, sequence_parallel=1, attention_efficiency=0.4)
    bf16 = _one(_gpt3(**case))
    core = 2048 * 4 * 2048 * 12288 * 0.5 / 8 / (312e12 * 0.4)
    assert bf16["recompute_time"] == pytest.approx(96 * core, rel=1e-12)
    fp8 = _one(_gpt3(**case, peak=624e12, gemm_input_bytes=1.0))
    assert fp8["recompute_time"] == pytest.approx(bf16["recompute_time"], rel=1e-12)  # the core stays bf16
    # The GEMMs' time halves; the casts add 3 bytes per element of the four GEMM inputs (2h + w_q + f).
    gemm = 2048 * (4 * 12288 * 12288 * 2 + 2 * 2 * 12288 * 4 * 12288) / 8 / (312e12 * 0.5)
    casts = 3 * 2048 * (2 * 12288 + 12288 + 4 * 12288) / 8 / 2.039e12
    saved_bytes = 2048 * 12288 * 7 / 8 / 2.039e12  # the fp8 GEMM inputs kept in 1 byte (written once)
    per_layer_forward = -gemm / 2 + casts - saved_bytes
    forward_and_backward = 3 * per_layer_forward
    assert fp8["compute"] - bf16["compute"] == pytest.approx(96 * forward_and_backward, rel=1e-9)


@pytest.mark.parametrize(
    "args,message",
    [
        (
            ["--model", "llama3-70b", "--gpus", "1", "--pp", "1,2", "--cp", "1"],
            "none fits: the least hungry lacks",
        ),
        (
            ["--model", "llama3-8b", "--gpus", "8", "--tp", "4096", "--cp", "1"],
            "most often: gpus not divisible",
        ),
    ],
)
def test_plan_without_a_feasible_layout_says_why_and_writes_nothing(tmp_path, args, message):
    # After the search (the lines before it say what was assumed and searched): exit 2, the reason, no cube.
    r = invoke("plan", *args, "--global-batch", "8", "--out", str(tmp_path / "o.h5"))
    assert r.exit_code == 2 and message in r.output.strip().splitlines()[-1], r.output
    assert "error: no feasible layout" in r.output and not list(tmp_path.iterdir())


def test_every_layout_default_shown_in_help_is_the_one_used():
    # #24: --help shows each option's default from its spec, and the grid uses exactly that value.
    from netsweep_jax.sweep.core.schema import LAYOUT_AXES
    from netsweep_jax.sweep.core.values import parse_values

    grid = layouts.make_layout_grid("llama3-8b", gpus=8, global_batch=8)
    text = " ".join(invoke("plan", "--help").output.split())
    for name, spec in LAYOUT_AXES.items():
        if not spec.default:
            continue
        used = [getattr(grid, name)] if name in PER_SWEEP else grid.values[name].tolist()
        assert used == parse_values(spec.default, spec).tolist(), name
        assert f"Default {spec.default}" in text, name


def test_a_refused_plan_leaves_no_default_results_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = invoke(
        "plan", "--model", "llama3-8b", "--gpus", "8", "--tp", "4096", "--cp", "1", "--global-batch", "8"
    )
    assert r.exit_code == 2 and "no feasible layout" in r.output
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("command", ["plan", "grid"])
def test_a_file_that_appears_at_out_while_computing_is_kept(tmp_path, monkeypatch, command):
    # #27: the output is checked before the work and again at the rename: a file another run (or the user)
    # put at --out meanwhile is kept and this run refused, unless --force.
    from netsweep_jax.sweep.analysis import planning

    out = tmp_path / "o.h5"
    module, name = (planning, "plan") if command == "plan" else (layouts, "evaluate_layouts_arrays")
    compute = getattr(module, name)

    def and_meanwhile(*args, **kwargs):
        result = compute(*args, **kwargs)
        out.write_text("the user's")
        return result

    monkeypatch.setattr(module, name, and_meanwhile)
    r = invoke(command, *LLAMA_8B, "--tp", "1", "--pp", "1", "--out", out)
    assert r.exit_code == 2 and "file exists; pass --force" in r.output, r.output
    assert out.read_text() == "the user's" and sorted(p.name for p in tmp_path.iterdir()) == ["o.h5"]
    r = invoke(command, *LLAMA_8B, "--tp", "1", "--pp", "1", "--out", out, "--force")
    assert r.exit_code == 0, r.output
    assert out.read_bytes().startswith(b"\x89HDF")


# Here, not in test_hostile.py: they use the layout kernel's compiled shapes, which this file has warm.


def test_the_largest_accepted_model_and_layout_give_finite_results_in_both_dtypes(tmp_path):
    # #27: a step's FLOP count at the largest shape (1e39) overflowed float32: mfu NaN, TFLOP/s inf. The grid
    # runs in float32; the same runs through the float64 rows path (validation's compiled shape) check it.
    import xarray as xr

    from netsweep_jax.sweep.engine.layouts import LayoutRow, evaluate_rows
    from netsweep_jax.sweep.model.llms import MAX_SIZE, parse_arch

    arch = f"layers={MAX_SIZE},hidden={MAX_SIZE},heads=1,seq={MAX_SIZE},vocab={MAX_SIZE},ffn={MAX_SIZE}"
    gpus = [1, 10_000_000]
    layout = ["--gpus", ",".join(map(str, gpus)), "--global-batch", "1000000000", "--micro-batch", "100"]
    out = tmp_path / "big.h5"
    r = invoke("grid", "--arch", arch, *layout, "--tp", "1", "--pp", "1", "--out", out)
    assert r.exit_code == 0, r.output
    with xr.open_dataset(out, engine="h5netcdf") as ds:
        f32 = {str(k): ds[k].values.astype(np.float64).ravel() for k in ds.data_vars}
    runs = [
        LayoutRow(
            llm=parse_arch(arch), gpu="h100", precision="bf16", gpus=n, global_batch=10**9, micro_batch=100
        )
        for n in gpus
    ]
    f64 = evaluate_rows(runs, np.full(2, 0.6), np.ones(2))
    for name, v in f32.items():
        assert np.isfinite(v).all() and np.isfinite(f64[name]).all(), name
    for name in ("mfu", "tflops_per_gpu", "hardware_tflops_per_gpu", "tokens_per_s", "iteration_time"):
        np.testing.assert_allclose(f32[name], f64[name], rtol=1e-4, err_msg=name)
    assert 0 < f64["mfu"].min() and f64["mfu"].max() < 1


def test_a_measured_bus_bandwidth_is_the_utilization_it_implies(tmp_path):
    # #27: nccl-tests' busbw enters directly: 9 GB/s over 100 Gbit/s links is utilization 0.72.
    import xarray as xr

    def cube(*args):
        out = tmp_path / f"{len(list(tmp_path.iterdir()))}.h5"
        r = invoke("grid", *args, "--out", out)
        assert r.exit_code == 0, r.output
        with xr.open_dataset(out, engine="h5netcdf") as ds:
            return r.output, {str(k): ds[k].values for k in ds.data_vars}

    said, by_busbw = cube("--model", "resnet50", "--bw", "100", "--nodes", "2,8", "--busbw", "9")
    assert "from --busbw: utilization 0.72 = 8 x busbw 9 GB/s / 100 Gbit/s links" in said
    _, by_util = cube("--model", "resnet50", "--bw", "100", "--nodes", "2,8", "--util", "0.72")
    for name in by_util:
        np.testing.assert_array_equal(by_busbw[name], by_util[name], err_msg=name)
    # A large model: the link named after @, and the GPU system's default utilization (1) is overridden.
    layout = ["--model", "llama3-8b", "--gpus", "64", "--global-batch", "512", "--tp", "8", "--pp", "1"]
    said, by_busbw = cube(*layout, "--busbw", "40@400")
    assert "utilization 1 (the links' full rate)" not in said
    _, by_util = cube(*layout, "--util", "0.8")
    np.testing.assert_array_equal(by_busbw["iteration_time"], by_util["iteration_time"])
