"""The layout model's memory (kernels/layout_memory.py) and recomputation: Megatron-LM's formula, Korthikanti et al.'s
Table 2 and hand-computed cases."""

import random

import numpy as np
import pytest
from layout_cases import gpt3_case, random_case, run_kernel, run_one

import reference


def test_activation_memory_from_korthikanti_table_2():
    # Korthikanti et al. MLSys'23, Table 2: per layer s b h (34 + 5 a s / h) without parallelism; with TP
    # and sequence parallelism everything divides by t; selective recompute drops the 5 a s / h term.
    s, b, h, a, t = 2048, 1, 12288, 96, 8
    per_layer_sp_selective = s * b * h * 34 / t
    assert per_layer_sp_selective == pytest.approx(106.95e6, rel=1e-3)
    base = run_one(gpt3_case(sequence_parallel=1, recompute=1, pp=1, global_batch=1))
    more = run_one(gpt3_case(sequence_parallel=1, recompute=1, pp=1, global_batch=1, layers=97))
    one_layer_states = (more["memory_gb"] - base["memory_gb"]) * 1e9
    layer_params = (12 * h * h + 2 * h) / t  # matrices and the two norms (biases are not counted)
    states = layer_params * (2 + 2 + 12)
    assert one_layer_states - states == pytest.approx(per_layer_sp_selective, rel=1e-9)
    none = run_one(gpt3_case(sequence_parallel=0, recompute=0, pp=1, global_batch=1))
    none97 = run_one(gpt3_case(sequence_parallel=0, recompute=0, pp=1, global_batch=1, layers=97))
    without_sp = s * b * h * (10 + 24 / t + 5 * a * s / (h * t))
    assert (none97["memory_gb"] - none["memory_gb"]) * 1e9 - states == pytest.approx(without_sp, rel=1e-9)


def test_unfused_scores_keep_dropouts_mask_and_output_only_with_dropout():
    # A review: the score term was Korthikanti's 5 a s^2 b (softmax output 2, dropout mask 1, dropout output 2)
    # on every model; one trained without dropout keeps the softmax output alone (PyTorch's dropout at p = 0
    # returns its input), 2 a s^2 b: Llama-like models with --attention unfused were charged 2.5 times it.
    s, b, a, t, layers = 2048, 1, 96, 8, 96
    case = dict(sequence_parallel=1, recompute=0, pp=1, global_batch=1)
    for dropout, per_score in ((1, 5), (0, 2)):
        unfused = run_one(gpt3_case(**case, attention=0, dropout=dropout))
        flash = run_one(gpt3_case(**case, attention=1, dropout=dropout))
        scores = per_score * a * s * s * b / t * layers
        assert (unfused["memory_gb"] - flash["memory_gb"]) * 1e9 == pytest.approx(scores, rel=1e-9), dropout


def test_interleaving_keeps_the_last_stages_warm_up_chunks_in_flight():
    # A review: the last stage was charged one micro-batch whatever the schedule; Megatron-Core's interleaved
    # schedule runs (V - 1) p warm-up chunks on the last rank before its first backward, so it holds
    # min(m V, (V - 1) p + 1) chunks of n / V layers. A large vocabulary makes the last stage the larger one.
    s, b, h, t, p, V, m = 2048, 1, 12288, 8, 8, 2, 64
    case = dict(layers=16, vocab=256000, gpus=64, pp=p, global_batch=m, sequence_parallel=1, recompute=2)
    one, two = run_one(gpt3_case(**case)), run_one(gpt3_case(**case, schedule=V))
    kept = 2 * s * b * h / t  # full recomputation keeps each layer's input, split by SP
    flight = min(m * V, (V - 1) * p + 1) / V  # 4.5 micro-batches of the stage's two layers, not 1
    assert (two["memory_gb"] - one["memory_gb"]) * 1e9 == pytest.approx(2 * kept * (flight - 1), rel=1e-9)
    # An MTP depth runs on the last chunk alone (Megatron-Core's mtp_on_this_rank): one micro-batch, whatever V
    # (a review: it was charged the stage's 4.5).
    mtp = [run_one(gpt3_case(**case, schedule=v, mtp_layers=1))["memory_gb"] for v in (1, V)]
    assert mtp[1] - two["memory_gb"] == pytest.approx(mtp[0] - one["memory_gb"], rel=1e-12)


def test_overlapping_the_expert_all_to_all_holds_one_layer_more():
    # Megatron-Core's --overlap-moe-expert-parallel-comm runs each step's forward layer by layer against the previous
    # micro-batch's backward, which frees a layer as the forward keeps one (model_chunk_schedule_plan.py's layer
    # pairs and release_state; its warm-up's extra chunk is the plain schedule's running one): one layer's
    # activations more on every stage (two reviews). GPT-3's shape with 8 experts of top-2 on every layer, TP = EP 8,
    # SP, flash attention, no recompute, one stage, m = 2: a layer keeps, per token in units of h / t, the norms'
    # 4, attention's 2 + 1 + 2 x 3 + 2 (QKV's input, mask, Q K V, the projection's input) and the MoE layer's
    # g + d + (g etp + 2) k + (2 + g) f k / h = 2 + 1 + 8 + 32: 58.
    s, b, h, t = 2048, 1, 12288, 8
    moe = dict(experts=8, top_k=2, moe_layers=96, ep=8, sequence_parallel=1, attention=1, global_batch=2)
    kept = s * b * h * 58 / t
    # one stage, and two interleaved stages of two chunks (the overlap needs interleaving where p > 1)
    for pipeline in (dict(), dict(pp=2, schedule=2, gpus=16, global_batch=4)):
        plain, overlapped = (run_one(gpt3_case(**{**moe, **pipeline}, overlap=o)) for o in (3, 3 + 8))
        assert overlapped["status"] == 0
        assert (overlapped["memory_gb"] - plain["memory_gb"]) * 1e9 == pytest.approx(kept, rel=1e-9), pipeline


def test_each_stage_holds_its_own_parameters_with_its_own_activations():
    # A review: the larger stage's parameters (the last's, with an MTP depth) were added to the larger stage's
    # activations (the first's, p micro-batches in flight), a stage that does not exist. GPT-3 over two stages
    # of 48 layers, one MTP depth: the first stage is the larger, its own states and activations.
    s, b, h, a, t, v, p = 2048, 1, 12288, 96, 8, 51200, 2
    first = run_one(gpt3_case(gpus=16, pp=p, global_batch=16, sequence_parallel=1, mtp_layers=1))
    layer, embed = (12 * h * h + 2 * h) / t, v * h / t  # one GPU's share of a layer and of the embedding
    states = (48 * layer + embed) * (2 + 2 + 4 + 2 * 4)
    kept = s * b * h * (34 / t + 5 * a * s / (h * t))  # Korthikanti's Table 2 with SP, no recompute
    ids_and_masks = s * b * (8 + h) / t  # each micro-batch's token ids and embedding dropout mask
    assert first["memory_gb"] * 1e9 == pytest.approx(states + p * (48 * kept + ids_and_masks), rel=1e-9)


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
            mtp_layers=0,
        )  # Megatron's formula counts dropout masks and 2-byte GEMM inputs, and plain attention, no MTP
        dev.update(gemm_input_bytes=2.0, moment_bytes=4.0, main_param_bytes=4.0)  # and fp32 Adam states
        dp = rng.choice([1, 2, 4, 8])
        b = rng.choice([1, 2])
        m = p * rng.choice([1, 2, 4]) if chunks > 1 else rng.choice([1, 2, 4, 8])
        lay.update(
            tp=t,
            pp=p,
            cp=c,
            ep=1,
            expert_tp=1,
            dp=0,
            gpus=t * p * c * dp,
            micro_batch=b,
            global_batch=b * dp * m,
            schedule=chunks,
            recompute=1,
            sequence_parallel=1,
            zero=1,
            imbalance=1.0,
            offload_layers=0,
        )
        if arch["seq"] % (2 * c) or arch["seq"] % (c * t):  # layouts Megatron runs (status rules 8 and 14)
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
    base = gpt3_case(
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
        attention=1,
    )
    one, two = run_one(base), run_one(gpt3_case(**{**base[0], **base[1], **base[2], "layers": 97}))
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
    out = run_one(gpt3_case(**moe))
    experts = 8 * 3 * h * 1024 / 8  # one GPU's expert parameters
    dense = 4 * h * h + 2 * h + h * 8 + 51200 * h  # attention, norms, router; the (tied) embedding
    states = dense * (2 + 2 + 12 / 16) + experts * (2 + 2 + 12 / 2)
    acts = 2 * s * h + s * (8 + h) + 4 * s * (51200 + h)  # full recompute: the layer's input; ids, mask; head
    assert out["memory_gb"] * 1e9 == pytest.approx(states + acts, rel=1e-9)
    assert out["memory_free_gb"] * 1e9 == pytest.approx(0.5 * 80e9 - states - acts, rel=1e-9)
    # bf16 moments (Megatron-Core's precision-aware optimizer): Adam keeps 4 + 2 x 2 bytes, not 12, and its
    # step moves 2 (4 + 4 + 4) bytes per parameter, not 32.
    bf16 = run_one(gpt3_case(**moe, moment_bytes=2.0))
    states_bf16 = dense * (2 + 2 + 8 / 16) + experts * (2 + 2 + 8 / 2)
    assert bf16["memory_gb"] * 1e9 == pytest.approx(states_bf16 + acts, rel=1e-9)
    assert bf16["optimizer"] / out["optimizer"] == pytest.approx(24 / 32, rel=1e-12)
    # fp8 moments (--exp-avg-dtype fp8 --exp-avg-sq-dtype fp8): 4 + 2 x 1 bytes, and a step of 2 (4 + 4 + 2).
    fp8 = run_one(gpt3_case(**moe, moment_bytes=1.0))
    states_fp8 = dense * (2 + 2 + 6 / 16) + experts * (2 + 2 + 6 / 2)
    assert fp8["memory_gb"] * 1e9 == pytest.approx(states_fp8 + acts, rel=1e-9)
    assert fp8["optimizer"] / out["optimizer"] == pytest.approx(20 / 32, rel=1e-12)
    # fp16 main weights (--main-params-dtype fp16) with fp32 moments: 2 + 2 x 4 bytes kept, a step of
    # 2 (2 + 4 + 8).
    fp16 = run_one(gpt3_case(**moe, main_param_bytes=2.0))
    states_fp16 = dense * (2 + 2 + 10 / 16) + experts * (2 + 2 + 10 / 2)
    assert fp16["memory_gb"] * 1e9 == pytest.approx(states_fp16 + acts, rel=1e-9)
    assert fp16["optimizer"] / out["optimizer"] == pytest.approx(28 / 32, rel=1e-12)


def test_recompute_modules_and_torchtitans_per_op_policy_by_hand():
    # Megatron-Core's --recompute-modules (bits: layernorm 8, up_proj 16, mlp 32) on GPT-3 175B at TP 8 with
    # SP, one micro-batch of 2,048 tokens, 96 layers, no GEMM latency: each module drops what it no longer
    # keeps (units of h bytes a token, over t) and re-runs its forward in the backward.
    s, h, t, rate, hbm = 2048, 12288, 8, 312e12 * 0.5, 2.039e12
    tokens_h = s * h / t
    base = dict(sequence_parallel=1, attention=1)
    none = run_one(gpt3_case(**base))
    drops = {8: 2 * 2, 16: 2 + 4, 32: (2 + 2) * 4}  # norm outputs 2 x 2; Q, K, V 2 + 4; GELU and fc2 inputs
    work = {8: 0.0, 16: 2 * h * h + 4 * h * h, 32: 2 * 2 * h * 4 * h}  # FLOPs a token re-runs: none, QKV, MLP
    tp_ar = 2 * 7 / 8 * (s * h * 2) / 300e9  # SP's reduce-scatter and all-gather, a ring on NVLink
    for bit, drop in drops.items():
        out = run_one(gpt3_case(**base, recompute=bit))
        assert (none["memory_gb"] - out["memory_gb"]) * 1e9 == pytest.approx(96 * drop * tokens_h, rel=1e-9)
        again = s * work[bit] / t / rate + drop * tokens_h / hbm
        assert out["recompute_time"] == pytest.approx(96 * again, rel=1e-9)
        reruns = 0.0 if bit == 8 else 0.5  # up_proj and mlp re-run one of their TP collectives
        assert out["tp_exposed"] - none["tp_exposed"] == pytest.approx(96 * reruns * tp_ar, rel=1e-9)
    both = run_one(gpt3_case(**base, recompute=8 + 32))  # a list of modules drops and re-runs what each does
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
    llama.update(tp=1, gpus=1, micro_batch=2, global_batch=2, attention=1, gemm_latency=6.5e-6)
    plain, op = run_one(gpt3_case(**llama)), run_one(gpt3_case(**llama, recompute=4))
    tokens = 2 * 8192
    assert (plain["memory_gb"] - op["memory_gb"]) * 1e9 == pytest.approx(
        96 * tokens * (139264 - 63488), rel=1e-9
    )
    again = tokens * 2 * 4096 * (1024 + 4096 + 14336) / rate + 3 * 6.5e-6 + tokens * (139264 - 63488) / hbm
    assert op["recompute_time"] == pytest.approx(96 * again, rel=1e-9)
    assert plain["recompute_time"] == 0


def test_offloaded_layers_leave_one_layer_and_fp8_keeps_gemm_inputs_in_one_byte():
    # --cpu-offloading-num-layers takes a stage's layers' activations to the host, all but one at most (without
    # recomputation, on one stage: Megatron-Core's rules, status rule 13).
    kept = run_one(gpt3_case(recompute=0, sequence_parallel=1, attention=1))
    off = run_one(gpt3_case(recompute=0, sequence_parallel=1, attention=1, offload_layers=500))
    assert kept["status"] == off["status"] == 0
    per_layer = (
        34 * 2048 * 12288 / 8
    )  # Korthikanti's s b h 34 / t: flash attention keeps no scores, SP over 8
    assert (kept["memory_gb"] - off["memory_gb"]) * 1e9 == pytest.approx(95 * per_layer, rel=1e-9)
    # fp8: QKV's, the output projection's, fc1's and fc2's inputs in 1 byte (GPT-3: 1 + 1 + 1 + 4 h bytes
    # a token fewer), dropout-free: the two masks and the embedding's go.
    base = dict(sequence_parallel=1, recompute=1, attention=1)
    bf16 = run_one(gpt3_case(**base)), run_one(gpt3_case(**base, layers=97))
    fp8 = (
        run_one(gpt3_case(**base, gemm_input_bytes=1.0)),
        run_one(gpt3_case(**base, layers=97, gemm_input_bytes=1.0)),
    )
    dry = run_one(gpt3_case(**base, dropout=0)), run_one(gpt3_case(**base, layers=97, dropout=0))

    def layer(pair):
        return (pair[1]["memory_gb"] - pair[0]["memory_gb"]) * 1e9

    tokens_h = 2048 * 12288 / 8
    assert layer(bf16) - layer(fp8) == pytest.approx(7 * tokens_h, rel=1e-9)
    assert layer(bf16) - layer(dry) == pytest.approx(2 * tokens_h, rel=1e-9)


def test_a_multi_token_prediction_depth_by_hand():
    # GPT-3 175B on one stage of 8 GPUs (TP 8, no SP, no recompute, unfused attention, ZeRO 0, fp32 moments):
    # one MTP depth (DeepSeek-V3's module) adds a layer, its 2h-to-h projection and three norms to the stage's
    # parameters, a layer's activations, its own logits and what its norms and projection keep; its time, a
    # layer's forward and backward, the projection's GEMM (three times) and the output layer's (three times).
    s, b, h, a, t, v = 2048, 1, 12288, 96, 8, 51200
    case = dict(sequence_parallel=0, recompute=0, pp=1, global_batch=1, gemm_latency=0.0)
    base, one = run_one(gpt3_case(**case)), run_one(gpt3_case(**case, mtp_layers=1))
    layer = run_one(gpt3_case(**case, layers=97))
    states = ((12 * h * h + 2 * h) / t + 2 * h * h / t + 3 * h) * (2 + 2 + 4 + 2 * 4)
    kept = s * b * h * (10 + 24 / t + 5 * a * s / (h * t))  # Korthikanti's Table 2 without SP (as above)
    logits = 4 * s * b * (v + h) / t  # fp32 logits and the output layer's input
    norms_and_projection = s * b * h * (2 + 2 + 2 * 2 + 2)  # unsplit without SP
    extra = states + kept + logits + norms_and_projection
    assert (one["memory_gb"] - base["memory_gb"]) * 1e9 == pytest.approx(extra, rel=1e-9)
    # Time: GPT-3's case runs at efficiency 0.5 of an A100's 312 TFLOP/s, HBM 2.039 TB/s.
    rate = 312e12 * 0.5
    projection = s * b * 4 * h * h / t / rate
    logits_forward = s * b * 2 * h * v / t / rate + 8 * s * b * v / t / 2.039e12
    own_layer = layer["compute"] - base["compute"]
    assert one["compute"] - base["compute"] == pytest.approx(own_layer + 3 * (projection + logits_forward))
    # Model FLOPs: one more layer (24 h^2 + 4 s h a token), the projection's 4 h^2, the logits' 2 h v again.
    flops = 3 * b * s / 8 * (97 * (24 * h * h + 4 * s * h) + 4 * h * h + 2 * 2 * h * v)
    assert one["tflops_per_gpu"] * one["iteration_time"] * 1e12 == pytest.approx(flops, rel=1e-12)


def test_zero3_gathers_nothing_where_its_group_is_one_gpu():
    # dp x cp = 1 holds every parameter whole: ZeRO-3 charged two gathered layers all the same (+0.1 GB at TP 8,
    # +0.87 GB at PP 8 on Llama 3 8B), so a higher stage took more memory than ZeRO 0.
    lone = dict(gpus=8, global_batch=8, tp=8, dp=1)
    assert run_one(gpt3_case(**lone, zero=3))["memory_gb"] == run_one(gpt3_case(**lone, zero=0))["memory_gb"]
    # over two GPUs, two layers' dense share gathered (gpt3_case's at TP 8, 2 bytes each) on top of the states
    pair = dict(gpus=16, global_batch=16, tp=8, dp=2)
    h = 12288
    layer = (12 * h * h + 2 * h) / 8 * 2  # bytes of a layer's dense share on one GPU (the norms split too)
    three = run_one(gpt3_case(**pair, zero=3))
    states_drop = (12 * h * h + 2 * h) / 8 * 96 * 2 / 2  # ZeRO-3 halves the 2-byte parameters over two GPUs
    assert three["memory_gb"] == pytest.approx(
        run_one(gpt3_case(**pair, zero=2))["memory_gb"] + (2 * layer - states_drop) / 1e9, rel=1e-3
    )
