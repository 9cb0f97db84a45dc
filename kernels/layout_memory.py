"""What one GPU holds: its share of a layer's parameters, the activations a layer keeps, its memory.

The notation is :mod:`kernels.layout`'s.

Memory per GPU (Korthikanti et al., MLSys'23, section 4, Table 2, generalised to GQA,
gated MLPs and experts): weights, gradients and Adam states of the GPU's parameters
(P_w bytes_param + P grad_bytes + (W + 2 M) P: 12 with fp32 main weights and moments, 8 with bf16 moments, 6 with
fp8 ones, W the bytes of each main weight (4, or 2 with ``--main-params-dtype fp16``), M the bytes of each moment as Megatron-Core's precision-aware optimizer keeps them, ``--exp-avg-dtype`` and
``--exp-avg-sq-dtype`` fp32, fp16, bf16 or fp8, NVIDIA/Megatron-LM@d98e8a64 megatron/training/arguments.py;
grad_bytes as the
gradients are kept and reduced:
4 in fp32, 2 in bf16), what ZeRO shards divided by its group (optimizer states from 1,
gradients from 2, weights at 3): dense parameters over the D c data-parallel GPUs, expert
parameters over the expert data-parallel group D c t / (e etp) (Megatron-Core's expert
optimizer; etp the expert TP degree: each expert's matrices split over etp GPUs, its E / e experts per
GPU), and activations per layer and micro-batch of b (s / c) tokens

    A = b (s / c) h (u_ + s_ / t) + (2 + 3 d) a b (s / c) s / t   (no recompute; the score
                                                                   term absent with flash attention)
    all  = 4 + (g + d + (2 + g) w_q / h + 4 w_kv / h) + ((L - L_e) mlp + L_e moe) / L
    mlp  = g + d + ((4 or 2) + g) f / h      (fc1's input and the dropout mask; fused SwiGLU
                                              saves only its 2f input, GELU its input, and
                                              fc2 its f input; 34 in all for GPT-3's shape)
    moe  = g + d + (g etp + 2) k I + ((4 or 2) + g) f_e (k I + S) / h   (k dispatched copies,
                                              gathered over the expert TP group, and expert outputs,
                                              the experts' MLPs on the busiest GPU)
    g = 2 bytes per GEMM input kept for the backward (1 under fp8: Transformer Engine keeps the
    fp8 cast), d = 1 for a model trained with dropout (its masks), else 0
    u_ = 4 + 2 (g + d), s_ = all - u_   (TP without SP: norms, block inputs, masks unsplit)
    u_ = 0,  s_ = all          (with SP, or t = 1)
    A_full = 2 b (s / c) h / (t if SP else 1)                       (full recompute)

What recomputation drops from A is in :mod:`kernels.layout_recompute`.

Activations are held for min(m, p) micro-batches on the first stage (Narayanan: p in flight under
1F1B), times 1 + (p - 1) / (p V) when interleaved, and on the last for one under 1F1B, min(m V, (V - 1) p + 1) / V
interleaved (its (V - 1) p warm-up chunks and the one running, each n / V layers: Megatron-Core's
schedules.py, NVIDIA/Megatron-LM@d98e8a64; its MTP depths, on its last chunk, for one), with
--overlap-moe-expert-parallel-comm on a MoE model one layer more on every stage (each forward layer kept as the previous
micro-batch's backward frees one), for all but ``offload_layers`` of a
stage's layers (Megatron-Core's --cpu-offloading-num-layers moves their activations to the
host; at least one layer stays; the copies are taken to hide behind compute; only at p = 1 without
recomputation, status rule 13, as Megatron-Core allows it), with each
micro-batch's token ids and embedding dropout mask b (s / c) (8 + d h) (/ t with SP) on the
first stage and the fp32
logits and output-layer input 4 b (s / c) (v + h) / t on the last (the terms of
Megatron-LM's theoretical_memory_usage.py). The last stage also runs the D multi-token-prediction depths
(:mod:`kernels.layout_pipeline`): D more layers' kept activations and, per depth, its two norms' inputs, the
projection's 2h-wide input and its final norm's input, (6 + 2 g) b (s / c) h (/ t with SP), and its own fp32
logits and output-layer input, 4 b (s / c) (v + h) / t:

    A_last = (n_last F_last + D + o) A_kept + (1 + D) 4 b (s / c) (v + h) / t
             + D (6 + 2 g) b (s / c) h / (t if SP else 1)      (F_last: the last stage's micro-batches in flight;
                                                               o: 1 with the expert all-to-all's overlap)

Each of the first and the last stage holds its own parameters' states (the embedding on the first, the output
layer and MTP on the last) with its own activations; the larger of the two must fit the usable memory,
``usable`` x the capacity the driver reports: ``fits``, and ``memory_free_gb`` what it
leaves (negative: what it lacks).
"""

from typing import NamedTuple

import jax.numpy as jnp

from netsweep_jax.kernels.layout_compute import LayerWork
from netsweep_jax.kernels.layout_inputs import Arch, Device, Parallelism, Value, has_bit


class LayerParams(NamedTuple):
    """The average layer's parameters (elements) and how its experts are split."""

    expert_params: Value  # the layer's expert parameters, all experts
    etp: Value  # expert TP: each expert's matrices split over this many GPUs
    expert_dp: Value  # the expert data-parallel group, D c t / (e etp)
    expert_stride: Value  # its members' distance in ranks, e etp
    dense_gpu: Value  # one GPU's share of the layer's dense parameters
    layer_params: Value  # on one GPU, dense and expert
    embed_params: Value  # one GPU's share of the embedding (v h / t)


def params_per_gpu(arch: Arch, lay: Parallelism, dp: Value, work: LayerWork) -> LayerParams:
    """One GPU's share of the average layer's parameters, and the expert groups that shard them."""
    L, h, f, v = arch.layers, arch.hidden, arch.ffn, arch.vocab
    E, fe, S, Le = arch.experts, arch.expert_ffn, arch.shared_experts, arch.moe_layers
    t, c, e = lay.tp, lay.cp, lay.ep
    mats, down, attn_matrices, latent_norms = work.mats, work.down, work.attn_matrices, work.latent_norms
    dense_layers = work.dense_layers
    attn_params = attn_matrices + 2.0 * h + latent_norms
    dense_params = attn_params + (dense_layers * mats * h * f + Le * (S * mats * h * fe + h * E)) / L
    expert_params = Le * E * mats * h * fe / L  # per average layer
    # Experts: Megatron-Core's MoE parallel folding lays its expert grid, expert TP x EP x expert DP (in that
    # rank order), over the same GPUs as TP x CP x DP: each expert's matrices split over the etp GPUs of its
    # expert TP group, E / e experts per EP rank, and their gradients reduced over the expert DP group.
    etp = lay.expert_tp
    expert_dp = t * dp * c / (e * etp)
    expert_stride = e * etp
    dense_gpu = (dense_params - down) / t + down  # one GPU's share of a layer's dense parameters
    layer_params = dense_gpu + expert_params / (etp * e)  # on one GPU
    embed_params = v * h / t
    return LayerParams(
        expert_params=expert_params,
        etp=etp,
        expert_dp=expert_dp,
        expert_stride=expert_stride,
        dense_gpu=dense_gpu,
        layer_params=layer_params,
        embed_params=embed_params,
    )


class LayerActivations(NamedTuple):
    """The activation bytes the average layer's forward writes for one micro-batch on one GPU."""

    sp: Value  # sequence parallelism (bool)
    per_width: Value  # bytes kept per element of an MLP's width (4 or 2, + g)
    unsplit: Value  # bytes per token (units of h) TP leaves unsplit without SP
    score_bytes: Value  # attention scores (0 with flash attention)
    lin_bytes: Value  # all but the scores
    act_layer: Value  # A: everything the forward writes, kept without recomputation


def activations_per_layer(arch: Arch, dev: Device, lay: Parallelism, work: LayerWork) -> LayerActivations:
    """A, in bytes, and its parts (no recomputation)."""
    L, h, a, f, s = arch.layers, arch.hidden, arch.heads, arch.ffn, arch.seq
    k, fe, S, Le = arch.top_k, arch.expert_ffn, arch.shared_experts, arch.moe_layers
    t = lay.tp
    tokens, ctx, latent_norms, dense_layers = work.tokens, work.ctx, work.latent_norms, work.dense_layers
    qw, kvw, vw = arch.q_width, arch.kv_width, arch.v_width
    sp = lay.sequence_parallel > 0
    # Activations per token, in units of h bytes. A GEMM's input is kept in g bytes (2; 1 under fp8, as
    # Transformer Engine keeps its fp8 cast for the backward), everything else in 2; dropout masks (1 each)
    # only where the model trains with dropout. MLP: fc1's input and the mask, then per f wide the saved
    # GELU input and fc2's input (2 + g), or fused SwiGLU's one saved input, the 2f-wide gate and up pair,
    # and fc2's input (4 + g: Megatron-Core's fused_bias_swiglu saves only its input).
    g_in, mask = dev.gemm_input_bytes, arch.dropout
    per_width = jnp.where(arch.gated > 0, 4.0, 2.0) + g_in
    mlp_act = g_in + mask + per_width * f / h
    # A MoE layer: each token's k dispatched copies (fc1's inputs: all-gathered over the expert TP group, so
    # etp times the GPU's own) and k expert outputs (kept to combine them), the routed and shared experts'
    # MLPs at their width (imbalance I on the busiest GPU's tokens; etp times the tokens at 1 / etp the width).
    routed = k * lay.imbalance
    moe_act = g_in + mask + (g_in * lay.expert_tp + 2.0) * routed + per_width * fe * (routed + S) / h
    ffn_act = (dense_layers * mlp_act + Le * moe_act) / L
    # Attention: QKV's input and the mask; Q, K and V as flash attention keeps them; the output projection's input.
    attention_act = g_in + mask + 2.0 * (qw + kvw + vw) / h + g_in * ctx / h
    # MLA's latents, on every GPU of the TP group: each down projection's output (the norm's input, 2 bytes)
    # and the norm's output (the up projection's input, g).
    latent_bytes = tokens * (2.0 + g_in) * latent_norms
    total_lin = 4.0 + attention_act + ffn_act  # the two norms' inputs, attention, MLP: 34 for GPT-3's shape
    unsplit = jnp.where(sp | (t <= 1), 0.0, 4.0 + 2.0 * (g_in + mask))  # norms' and blocks' inputs, masks
    # Attention scores exist only unfused: the softmax output (2 a s^2 b bytes) and, where the model trains with
    # dropout, its mask (1) and output (2): Korthikanti's 5 a s^2 b. Without dropout PyTorch's dropout at p = 0
    # returns its input, so neither exists. A flash-attention kernel keeps them on chip (Dao et al., NeurIPS 2022).
    score_bytes = jnp.where(lay.attention > 0, 0.0, (2.0 + 3.0 * mask) * a * tokens * s / t)
    lin_bytes = tokens * h * (unsplit + (total_lin - unsplit) / t) + latent_bytes
    act_layer = lin_bytes + score_bytes  # activation bytes written by a layer's forward (no recompute)
    return LayerActivations(
        sp=sp,
        per_width=per_width,
        unsplit=unsplit,
        score_bytes=score_bytes,
        lin_bytes=lin_bytes,
        act_layer=act_layer,
    )


def micro_batches_in_flight(
    arch: Arch, lay: Parallelism, m: Value, is_one: Value
) -> tuple[Value, Value, Value]:
    """The micro-batches whose activations the first and the last stage hold at once (units of a stage's layers),
    and the layers more that the expert all-to-all's overlap holds (0 or 1).

    The first stage min(m, p) under 1F1B, times 1 + (p - 1) / (p V) interleaved; the last one under 1F1B, its
    (V - 1) p warm-up chunks and the one running interleaved, each chunk n / V of its layers: min(m V, (V - 1) p
    + 1) / V (Megatron-Core's schedules.py, the last rank's warm-up). --overlap-moe-expert-parallel-comm runs each
    step's forward layer by layer against the previous micro-batch's backward, which frees a layer as the forward
    keeps one (its warm-up's extra chunk is the plain schedule's running one): one layer more on every stage
    (NVIDIA/Megatron-LM@d98e8a64 schedules.py get_pp_rank_microbatches, model_chunk_schedule_plan.py's layer
    pairs and release_state; on a MoE model alone: a dense model has no all-to-all to hide)."""
    p, V = lay.pp, lay.schedule
    first = jnp.where(
        is_one, jnp.minimum(m, 1.0), jnp.minimum(m, p) * jnp.where(V > 1, 1.0 + (p - 1.0) / (p * V), 1.0)
    )
    last = jnp.where(is_one, first, jnp.minimum(m * V, (V - 1.0) * p + 1.0) / V)
    a2a_layer = jnp.where(has_bit(lay.overlap, 8.0) & (arch.experts > 0), 1.0, 0.0)
    return first, last, a2a_layer


def memory_per_gpu(
    arch: Arch,
    dev: Device,
    lay: Parallelism,
    params: LayerParams,
    sp: Value,
    *,
    m: Value,
    tokens: Value,
    full: Value,
    act_recomputed: Value,
    n_first: Value,
    n_last: Value,
    is_one: Value,
    dp_group: Value,
    first: tuple[Value, Value],
    last: tuple[Value, Value],
    adam_states: Value,
) -> Value:
    """Bytes on one GPU of the stage that holds the most, the first or the last: its parameters' states as ZeRO
    shards them and its activations in flight, each stage its own, and the gathered layers under ZeRO-3.

    ``full``: full recomputation (bool); ``act_recomputed``: activation bytes a layer keeps otherwise;
    ``n_first``, ``n_last``: layers on the first and last stage; ``is_one``: p = 1; ``dp_group``: D c;
    ``first``, ``last``: each stage's (dense, expert) parameters on one GPU (the same where p = 1);
    ``adam_states``: bytes per parameter of Adam's master weight and moments."""
    h, v, mask = arch.hidden, arch.vocab, arch.dropout
    t, zero = lay.tp, lay.zero
    expert_dp = params.expert_dp

    def states_per_param(group: Value) -> Value:  # bytes per parameter sharded over ``group`` by ZeRO
        return (
            dev.param_bytes / jnp.where(zero >= 3, group, 1.0)
            + dev.grad_bytes / jnp.where(zero >= 2, group, 1.0)
            + adam_states / jnp.where(zero >= 1, group, 1.0)
        )

    def states(stage: tuple[Value, Value]) -> Value:
        return stage[0] * states_per_param(dp_group) + stage[1] * states_per_param(expert_dp)

    act_full = 2.0 * tokens * h / jnp.where(sp, t, 1.0)
    act_kept = jnp.where(full, act_full, act_recomputed)
    in_flight, last_flight, a2a_layer = micro_batches_in_flight(arch, lay, m, is_one)
    # The first stage also keeps each micro-batch's token ids (8 bytes) and embedding dropout mask (h bytes);
    # the last, the fp32 logits and the fp32 input of the output layer.
    embed_act = in_flight * tokens * (8.0 + h * mask) / jnp.where(sp, t, 1.0)
    head_act = 4.0 * tokens * (v + h) / t
    # Each multi-token-prediction depth on the last stage: one more layer's activations, its own logits and
    # output-layer input, and what its norms and projection keep: the hidden state's and the embedding's norm
    # inputs (2 bytes each), the projection's 2h-wide input (g) and the final norm's input (2).
    mtp = arch.mtp_layers
    mtp_act = mtp * tokens * h * (6.0 + 2.0 * dev.gemm_input_bytes) / jnp.where(sp, t, 1.0)

    def on_gpu(n: Value) -> Value:  # a stage's layers whose activations stay (the rest offloaded to the CPU)
        return n - jnp.clip(lay.offload_layers, 0.0, jnp.maximum(n - 1.0, 0.0))

    # The last stage's MTP depths run on its last chunk alone (GPTModel's mtp_on_this_rank): one micro-batch.
    first_acts = (on_gpu(n_first) * in_flight + a2a_layer) * act_kept + embed_act
    last_acts = (
        (on_gpu(n_last + mtp) + (last_flight - 1.0) * n_last + a2a_layer) * act_kept
        + (1.0 + mtp) * head_act
        + mtp_act
        + jnp.where(is_one, embed_act, 0.0)
    )
    # Each stage's own parameters with its own activations (p = 1: one stage, the last's terms).
    held = jnp.where(
        is_one,
        states(first) + jnp.maximum(first_acts, last_acts),
        jnp.maximum(states(first) + first_acts, states(last) + last_acts),
    )
    # This layer's gathered parameters and the next's: the dense share over the D c GPUs, the experts' over their
    # expert data-parallel group; a group of one holds its parameters whole, and gathers nothing.
    sharded = jnp.where(dp_group > 1, params.dense_gpu, 0.0) + jnp.where(
        expert_dp > 1, params.expert_params / (params.etp * lay.ep), 0.0
    )
    gathered = jnp.where(zero >= 3, 2.0 * sharded * dev.param_bytes, 0.0)
    memory = held + gathered
    return memory
