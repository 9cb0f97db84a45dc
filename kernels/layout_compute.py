"""One layer's work per token, and the time of its forward and backward on one GPU.

The notation is :mod:`kernels.layout`'s.

Work per token and layer, forward (Narayanan et al., SC'21, section 5.1; the
attention core counted in full, as SC'21's eq. 3 and Megatron-LM's count before 2025-03-06 count it, where
Megatron-LM's since and Megatron-Bridge's take its causal half: ``sweep.analysis.llm_predict``):

    attn   = 4 h w_q + 4 h w_kv + 4 s w_q              (projections; scores and context; MLA: its
                                                       projections and 2 s w_q + 2 s a d_v)
    mlp    = (6 or 4) h f                             (dense layer: gated or not)
    moe    = (6 or 4) h f_e (k + S) + 2 h E           (MoE layer: routed and shared experts,
                                                       router; the time takes the routed part
                                                       times I, the load imbalance >= 1)
    F      = attn + ((L - L_e) mlp + L_e moe) / L     (the average layer)
    logits = 2 h v

A GPU of a TP x CP group handles b s / c tokens of each micro-batch and 1 / t of each
layer's work: t_f = b s (F - core) / (c t peak eff) + n_gemm tau + core time + (activation
bytes A + weight bytes + fp8 cast bytes + MoE token movement M) / hbm, t_b = 2 t_f - M / hbm
(+ 1/2 the core's with flash attention). MoE token movement (Megatron-Core's alltoall
dispatcher with fused permutation, as NVIDIA's 2025 recipes run it; counted from
megatron/core/transformer/moe/token_dispatcher.py and moe_utils.py at Megatron-LM a427c479, 2025-12-31:
permute, sort_chunks_by_idxs, unpermute), on the b s / (c t) tokens of a GPU, per forward and again per
backward:

    M = L_e / L  x  2 h bytes_act (k + 1 + 2 k I etp [E / e > 1])  (permute: read h, write k h;
                                                                     unpermute: read k h, write h;
                                                                     the k I copies received (etp
                                                                     times as many, gathered over
                                                                     the expert TP group) sorted
                                                                     to local-expert order and back
                                                                     when a GPU holds several
                                                                     experts: k I h each way, twice)
 GEMM efficiency by size: each matrix kernel takes a fixed time tau
(``gemm_latency``) besides its W FLOPs at ``peak eff``, so a GEMM runs at

    eff(W) = eff W / (W + W_half),      W_half = tau peak eff

(eff: the large-GEMM efficiency; with tau = 6.5 us an H100 at eff 0.6 halves its rate at
W_half = 3.9 GFLOP, a 1,250^3 GEMM). n_gemm per layer and micro-batch, forward: 4 on a dense
layer (QKV, output projection, fc1 with SwiGLU's gate and up fused, fc2), and on a MoE layer
3 + 2 E / e + 2 [S > 0] (attention's two, the router, fc1 and fc2 of each of the E / e local
experts, whose grouped GEMM runs at each expert's token count, and the shared experts' pair);
the backward twice as many. The attention core is one kernel with flash attention, two
unfused (scores and context), for each of the c steps of context parallelism's ring (one
kernel per KV chunk, as Transformer Engine's ring attention runs it); the logits one.
The GEMMs run at ``peak`` (fp8's under fp8), the attention core at the half-precision
``half_peak``: unfused, its full 4 s w_q FLOPs at the GEMM efficiency; flash (causal),
half of them at ``attention_efficiency``, and its backward 2.5 times its forward (5 products
to 2). fp8 casts every GEMM input: 3 bytes (read 2, write 1) per element of QKV's and fc1's
inputs (h), the output projection's (w_q) and fc2's (f; on MoE layers the k I dispatched
copies and the experts' (k I + S) f_e). The logits' GEMM also stays at ``half_peak``
(Megatron's output layer is not a Transformer Engine module). Recomputation adds to every layer's
backward the forward it re-runs (:mod:`kernels.layout_recompute`).
With flash attention (``flash``, the default of today's stacks) the scores are never
written to memory: no score bytes in time or memory.

Stragglers and slowdown stretch every compute term by

    kappa = 1 + multi ((1 + slowdown) (1 + jitter e_N) - 1),     multi = [N > 1]
"""

from typing import NamedTuple

import jax.numpy as jnp

from netsweep_jax.kernels.layout_inputs import Arch, Device, Parallelism, Value


class LayerWork(NamedTuple):
    """What one layer computes per token (FLOPs; matrix sizes in elements), and how fast one GPU runs it."""

    mats: Value  # matrices per MLP: 3 gated (SwiGLU), 2 not
    tokens: Value  # b s / c: a micro-batch's tokens on one CP rank
    kappa: Value  # the stretch of every compute term by stragglers and slowdown
    rate: Value  # the GEMMs' rate, peak eff (FLOP/s)
    ctx: Value  # the attention output's width (heads x V's head width): the output projection's input
    low_q: Value  # MLA's query down-projection (q_rank > 0)
    low_kv: Value  # MLA's key-value down-projection (kv_rank > 0)
    q_up: Value
    kv_up: Value
    down: Value  # MLA's down projections, replicated over the TP group
    attn_matrices: Value
    latent_norms: Value  # MLA's latent widths, each behind a norm
    core_flops: Value  # the attention core: scores and context
    mlp_flops: Value
    moe_flops: Value
    dense_layers: Value  # L - L_e
    layer_flops: Value  # F, the average layer
    paced_flops: Value  # F on the busiest expert GPU (routed work times the imbalance)
    logits_flops: Value


def layer_work(arch: Arch, dev: Device, lay: Parallelism, gpus: Value, mats: Value) -> LayerWork:
    """The work of the average layer per token, a micro-batch's tokens on one GPU, and its rates."""
    L, h, f, v, s = arch.layers, arch.hidden, arch.ffn, arch.vocab, arch.seq
    E, k, fe, S, Le = arch.experts, arch.top_k, arch.expert_ffn, arch.shared_experts, arch.moe_layers
    c, b = lay.cp, lay.micro_batch
    tokens = b * s / c  # tokens of a micro-batch on one CP rank
    kappa = 1.0 + jnp.where(gpus > 1, (1.0 + lay.slowdown) * (1.0 + lay.straggle) - 1.0, 0.0)
    rate = dev.peak * lay.efficiency
    qw, kvw, vw = arch.q_width, arch.kv_width, arch.v_width
    ctx = qw * vw / kvw  # the attention output (heads x V's head width): the output projection's input
    # Attention's matrices. Q from h, or (MLA: q_rank > 0) down to q_rank and up; K and V from h, or (MLA:
    # kv_rank > 0) down to kv_rank plus the one shared rotary key of rope_width, and up to K's rotary-free
    # part and V. Megatron-Core replicates MLA's down projections over the TP group (the rest is split).
    low_q, low_kv = arch.q_rank > 0, arch.kv_rank > 0
    q_down = jnp.where(low_q, h * arch.q_rank, 0.0)
    q_up = jnp.where(low_q, arch.q_rank * qw, h * qw)
    kv_down = jnp.where(low_kv, h * (arch.kv_rank + arch.rope_width), 0.0)
    kv_up = jnp.where(low_kv, arch.kv_rank * (kvw - arch.kv_heads * arch.rope_width + vw), h * (kvw + vw))
    down = q_down + kv_down
    attn_matrices = q_down + q_up + kv_down + kv_up + ctx * h
    latent_norms = jnp.where(low_q, arch.q_rank, 0.0) + jnp.where(low_kv, arch.kv_rank, 0.0)
    core_flops = 2.0 * s * qw + 2.0 * s * ctx  # scores and context
    proj_flops = 2.0 * attn_matrices
    mlp_flops = mats * 2.0 * h * f
    moe_flops = mats * 2.0 * h * fe * (k + S) + 2.0 * h * E  # per token: what the model computes
    dense_layers = L - Le
    layer_flops = proj_flops + core_flops + (dense_layers * mlp_flops + Le * moe_flops) / L
    # The busiest expert's GPU paces its EP group: its routed work is stretched by the imbalance.
    paced_flops = layer_flops + Le * mats * 2.0 * h * fe * k * (lay.imbalance - 1.0) / L
    logits_flops = 2.0 * h * v
    return LayerWork(
        mats=mats,
        tokens=tokens,
        kappa=kappa,
        rate=rate,
        ctx=ctx,
        low_q=low_q,
        low_kv=low_kv,
        q_up=q_up,
        kv_up=kv_up,
        down=down,
        attn_matrices=attn_matrices,
        latent_norms=latent_norms,
        core_flops=core_flops,
        mlp_flops=mlp_flops,
        moe_flops=moe_flops,
        dense_layers=dense_layers,
        layer_flops=layer_flops,
        paced_flops=paced_flops,
        logits_flops=logits_flops,
    )


class LayerTimes(NamedTuple):
    """One layer's forward and backward on one GPU, per micro-batch (s)."""

    flash: Value  # flash attention (bool)
    moe_ffn_kernels: Value  # a MoE layer's forward kernels besides attention's
    t_f: Value  # the forward
    core_time: Value  # the attention core's forward, with its score bytes
    t_b: Value  # the backward (without recomputation)
    token_move: (
        Value  # a MoE layer's token permutation, sorting and unpermutation per forward (s, unstretched)
    )


def layer_times(
    arch: Arch,
    dev: Device,
    lay: Parallelism,
    work: LayerWork,
    layer_params: Value,
    act_layer: Value,
    score_bytes: Value,
) -> LayerTimes:
    """t_f, t_b and the attention core's time of the average layer (``layer_params`` on one GPU,
    ``act_layer`` activation bytes written by its forward, ``score_bytes`` of them attention scores)."""
    L, h, f, S = arch.layers, arch.hidden, arch.ffn, arch.shared_experts
    E, k, fe, Le = arch.experts, arch.top_k, arch.expert_ffn, arch.moe_layers
    t, e = lay.tp, lay.ep
    tokens, kappa, rate, ctx, down = work.tokens, work.kappa, work.rate, work.ctx, work.down
    low_q, low_kv, latent_norms, dense_layers = work.low_q, work.low_kv, work.latent_norms, work.dense_layers
    core_flops, paced_flops = work.core_flops, work.paced_flops
    weight_bytes = layer_params * dev.param_bytes

    # The attention core never runs in fp8 in these stacks: at the half-precision peak. Unfused, it is two
    # batched GEMMs over every score (the GEMMs' efficiency); a causal flash kernel computes only the half of
    # the scores below the diagonal, at its own efficiency, and its backward takes 5 products to the
    # forward's 2 (Dao, FlashAttention-2, ICLR 2024, section 3.1).
    flash = lay.attention > 0
    core_rate = dev.half_peak * jnp.where(flash, lay.attention_efficiency, lay.efficiency)
    # One fused kernel, or two batched GEMMs (scores, context), per step of context parallelism's ring: each of
    # the c KV chunks a rank sees is its own attention kernel (Transformer Engine's AttnFuncWithCPAndKVP2P).
    core_kernels = jnp.where(flash, 1.0, 2.0) * lay.cp
    core_run = (
        tokens * core_flops * jnp.where(flash, 0.5, 1.0) / t / core_rate + core_kernels * dev.gemm_latency
    )
    # GEMM efficiency by size: every matrix kernel takes a fixed time besides its FLOPs at the large-GEMM rate,
    # so a GEMM of W FLOPs runs at efficiency x W / (W + W_half), W_half = gemm_latency x peak x efficiency.
    # Forward kernels per layer: QKV, output projection, fc1 (SwiGLU's gate and up fused), fc2; a MoE layer
    # has the router and, per local expert (E / e of them: a grouped GEMM runs at each expert's size), fc1
    # and fc2, and the shared experts' pair. The backward runs two kernels (data and weight gradients) per one.
    # MLA's attention runs five (Q down and up, KV down and up, the output projection) where QKV is one.
    attn_kernels = 2.0 + 2.0 * low_q + 2.0 * low_kv - 1.0 * (low_q & low_kv)
    moe_ffn_kernels = 1.0 + 2.0 * E / jnp.maximum(e, 1.0) + jnp.where(S > 0, 2.0, 0.0)
    layer_kernels = attn_kernels + (dense_layers * 2.0 + Le * moe_ffn_kernels) / L
    # fp8 casts each GEMM input (read 2 bytes, write 1): QKV's and fc1's inputs (h), MLA's up projections'
    # (the latents), the output projection's (the attention output), fc2's (f; on MoE layers the k I
    # dispatched copies and the experts' (k I + S) f_e).
    cast_elems = (
        2.0 * h
        + ctx
        + latent_norms
        + (dense_layers * f + Le * ((k * lay.imbalance + S) * fe + (k * lay.imbalance - 1.0) * h)) / L
    )
    cast_bytes = jnp.where(dev.gemm_input_bytes < 2.0, 3.0 * tokens * cast_elems / t, 0.0)
    # MoE token movement (Megatron-Core's alltoall dispatcher with fused permutation, as NVIDIA's 2025 recipes
    # run it): each of the GPU's tokens is permuted into its k routed copies (read h, write k h) and, back from
    # the experts, unpermuted (read k h, write h); the k I copies the busiest GPU receives are sorted into
    # local-expert order and back where it holds more than one expert (read and write k I h, twice). The copies
    # are transient (not in A); the all-to-alls' own buffers move at the network's pace. The backward's mirror
    # kernels move as much again, once (not twice as the rest).
    local_experts = E / jnp.maximum(e, 1.0)
    sorts = jnp.where(local_experts > 1.0, 2.0, 0.0)
    # Under expert TP the sort runs on the copies gathered over the expert TP group: etp times as many.
    move_elems = jnp.where(E > 0, 2.0 * h * (k + 1.0 + k * lay.imbalance * sorts * lay.expert_tp), 0.0)
    token_move = tokens / t * (Le / L) * move_elems * dev.act_bytes / dev.hbm
    t_f = (
        tokens * ((paced_flops - core_flops) / t + 2.0 * down * (1.0 - 1.0 / t)) / rate
        + layer_kernels * dev.gemm_latency
        + core_run
        + (act_layer + weight_bytes + cast_bytes) / dev.hbm
        + token_move
    ) * kappa
    core_time = (core_run + score_bytes / dev.hbm) * kappa
    t_b = 2.0 * t_f - token_move * kappa + jnp.where(flash, 0.5 * core_run * kappa, 0.0)
    return LayerTimes(
        flash=flash,
        moe_ffn_kernels=moe_ffn_kernels,
        t_f=t_f,
        core_time=core_time,
        t_b=t_b,
        token_move=token_move,
    )
