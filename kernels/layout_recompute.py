"""Activation recomputation: what each mode drops from memory and re-runs in the backward.

The notation is :mod:`kernels.layout`'s; A and A_full are :mod:`kernels.layout_memory`'s, t_f and the
attention core's forward :mod:`kernels.layout_compute`'s.

Activation recomputation (``recompute``, a sum of bits: sweep.core.layout_axes.RECOMPUTE_BITS). Full (2)
keeps A_full and re-runs t_f (and the layer's two TP collectives). Otherwise each part keeps
A less what it drops, D (units of h bytes a token, over t unless said), and re-runs

    rerun = b (s / c) W / (t peak eff) + n tau + b (s / c) h D / hbm   (W FLOPs a token, n kernels)

    part (bit)                        D                                   W, n
    core_attn (1; "selective")        the score term (unfused)            the core's forward (layout_compute)
    layernorm (8)                     2 g (unsplit without SP)            0, 0
    up_proj (16; MLA's up-projection) 2 (w_q + w_k + w_v) / h             2 (r_q w_q + r_kv (w_k - H_kv w_rope
                                                                          + w_v)), 1 (from the latents)
    mlp (32; dense layers)            (4 or 2 + g) f / h                  (6 or 4) h f, 2
    moe_act (64; MoE layers)          g f_e k I / h                       0, 0
    moe (128; MoE layers)             (g etp + 2) k I + (4 or 2 + g) f_e (k I + S) / h    its expert
                                      and router work, 1 + 2 E / e + 2 [S > 0], and its token
                                      movement M; two more all-to-alls
    op (4; torchtitan)                keeps only 2 (h + 2 w_q + w_kv) + 2 (f + h) (dense) or
                                      2 (k I + S)(f_e + h) (MoE) a token: the block input, wq's, wv's,
                                      the attention kernel's, w1's and w2's outputs (every second
                                      matrix product); re-runs wk, wo, w3: 2 h (w_kv + w_q + f), 3

(mlp, moe and the MoE share weighted by the layers they apply to). up_proj, mlp and moe re-run one
of their layer's TP collectives (half a TP all-reduce's time); moe_act is moot under moe.
"""

from typing import NamedTuple

import jax.numpy as jnp

from netsweep_jax.kernels.layout_compute import LayerTimes, LayerWork
from netsweep_jax.kernels.layout_inputs import Arch, Device, Parallelism, Value, has_bit
from netsweep_jax.kernels.layout_memory import LayerActivations


class Recompute(NamedTuple):
    """What a recompute mode re-runs and keeps, per layer and micro-batch on one GPU."""

    full: Value  # full recomputation (bool; it overrides the other bits)
    per_op: Value  # torchtitan's per-op policy
    core_rc: Value  # the attention core ("selective")
    up_rc: Value  # MLA's up projections (or Q, K and V)
    mlp_rc: Value  # the dense layers' MLPs
    moe_rc: Value  # the MoE layers
    dense_share: Value  # (L - L_e) / L
    moe_share: Value  # L_e / L
    up_flops: Value  # FLOPs a token of the up projections
    recompute: Value  # the forward re-run in the backward (s)
    act_recomputed: Value  # the activation bytes kept, unless full


def per_op_flops(arch: Arch, ctx: Value, dense_share: Value, moe_share: Value, copies: Value) -> Value:
    """FLOPs a token that torchtitan's per-op policy re-runs (wk, wo and w3), with ``copies`` routed expert
    copies of the token (the busiest expert GPU's for the time, the model's k for the hardware FLOPs)."""
    h, kvw, f, fe, S = arch.hidden, arch.kv_width, arch.ffn, arch.expert_ffn, arch.shared_experts
    return 2.0 * h * (kvw + ctx) + dense_share * 2.0 * h * f + moe_share * 2.0 * h * fe * (copies + S)


class _Modes(NamedTuple):
    """The parts a recompute mode re-runs (bools; each off under full recomputation, moe_act also under moe)."""

    full: Value  # 2: every layer
    per_op: Value  # 4: torchtitan's per-op policy
    core_rc: Value  # 1: the attention core ("selective")
    norm_rc: Value  # 8: layernorm
    up_rc: Value  # 16: up_proj
    mlp_rc: Value  # 32: mlp
    moe_rc: Value  # 128: moe
    act_rc: Value  # 64: moe_act


def _modes(lay: Parallelism) -> _Modes:
    """The parts ``lay.recompute`` (a sum of bits) re-runs."""
    # A mode is a sum of bits (sweep.core.layout_axes.RECOMPUTE_BITS): 1 the attention core, 2 every layer,
    # 4 torchtitan's per-op policy, then Megatron-Core's --recompute-modules: 8 layernorm, 16 up_proj, 32 mlp,
    # 64 moe_act, 128 moe. Full recomputation overrides the rest.
    full = has_bit(lay.recompute, 2.0)
    per_op = has_bit(lay.recompute, 4.0) & ~full
    core_rc = has_bit(lay.recompute, 1.0) & ~full
    norm_rc = has_bit(lay.recompute, 8.0) & ~full
    up_rc = has_bit(lay.recompute, 16.0) & ~full
    mlp_rc = has_bit(lay.recompute, 32.0) & ~full
    moe_rc = has_bit(lay.recompute, 128.0) & ~full
    act_rc = has_bit(lay.recompute, 64.0) & ~full & ~moe_rc
    return _Modes(full, per_op, core_rc, norm_rc, up_rc, mlp_rc, moe_rc, act_rc)


class _Kept(NamedTuple):
    """A mode's activations per layer and micro-batch: what each module drops (units of h bytes a token), and
    the bytes kept under the per-op policy and under Megatron-Core's modules."""

    drop_norm: Value
    drop_up: Value
    drop_mlp: Value
    drop_moe: Value
    drop_act: Value
    op_bytes: Value
    module_bytes: Value


def _kept_bytes(
    arch: Arch,
    dev: Device,
    lay: Parallelism,
    work: LayerWork,
    acts: LayerActivations,
    modes: _Modes,
    dense_share: Value,
    moe_share: Value,
    routed: Value,
) -> _Kept:
    """The activation bytes a mode keeps (module docstring's table). Each module it re-runs drops D (units of
    h bytes a token, over t unless unsplit), so the modules keep

        module_bytes = A_lin - b (s / c) h sum(D) + (the score term unless the core is recomputed)

    and the per-op policy only 2 (h + 2 w_q + w_kv) + 2 (f + h) (dense) or 2 (k I + S)(f_e + h) (MoE) a
    token. ``routed``: k I, the expert copies of a token on the busiest GPU."""
    h, f, fe, S = arch.hidden, arch.ffn, arch.expert_ffn, arch.shared_experts
    qw, kvw, vw = arch.q_width, arch.kv_width, arch.v_width
    t, g_in, tokens = lay.tp, dev.gemm_input_bytes, work.tokens
    per_width, unsplit = acts.per_width, acts.unsplit
    # Bytes per token (units of h) each module no longer keeps: the two norms' outputs (unsplit under TP
    # without SP), Q, K and V (re-projected from the kept QKV input), the dense MLP's SwiGLU or GELU input and
    # fc2's input, the experts' fc2 inputs, or all of a MoE layer but its input.
    split_share = jnp.where(unsplit > 0, 1.0, 1.0 / t)
    drop_norm = 2.0 * g_in * split_share
    drop_up = 2.0 * (qw + kvw + vw) / h / t
    drop_mlp = dense_share * per_width * f / h / t
    drop_moe = moe_share * ((g_in * lay.expert_tp + 2.0) * routed + per_width * fe * (routed + S) / h) / t
    drop_act = moe_share * g_in * fe * routed / h / t
    dropped = (
        jnp.where(modes.norm_rc, drop_norm, 0.0)
        + jnp.where(modes.up_rc, drop_up, 0.0)
        + jnp.where(modes.mlp_rc, drop_mlp, 0.0)
        + jnp.where(modes.moe_rc, drop_moe, 0.0)
        + jnp.where(modes.act_rc, drop_act, 0.0)
    )
    # torchtitan's per-op policy keeps only the block input, the attention kernel's output and every second
    # matrix product's output (wq, wv, w1, w2 of a Llama block; each expert copy's w1 and w2), all in 2 bytes.
    op_ffn = dense_share * 2.0 * (f + h) / h + moe_share * 2.0 * (routed + S) * (fe + h) / h
    op_total = 2.0 + 2.0 * (qw + vw + work.ctx) / h + op_ffn
    op_unsplit = jnp.where(unsplit > 0, 2.0, 0.0)
    op_bytes = tokens * h * (op_unsplit + (op_total - op_unsplit) / t)
    module_bytes = acts.lin_bytes - tokens * h * dropped + jnp.where(modes.core_rc, 0.0, acts.score_bytes)
    return _Kept(drop_norm, drop_up, drop_mlp, drop_moe, drop_act, op_bytes, module_bytes)


def recomputation(
    arch: Arch, dev: Device, lay: Parallelism, work: LayerWork, acts: LayerActivations, times: LayerTimes
) -> Recompute:
    """The recompute mode's time and kept activation bytes (``lay.recompute``, a sum of bits): full
    recomputation re-runs t_f, each other part its piece of the forward,
    rerun = b (s / c) W / (t peak eff) + n tau + b (s / c) h D / hbm (module docstring)."""
    L, h, E, k = arch.layers, arch.hidden, arch.experts, arch.top_k
    fe, S, Le = arch.expert_ffn, arch.shared_experts, arch.moe_layers
    t, e = lay.tp, lay.ep
    tokens, kappa, rate, ctx, mats = work.tokens, work.kappa, work.rate, work.ctx, work.mats
    q_up, kv_up, mlp_flops, dense_layers = work.q_up, work.kv_up, work.mlp_flops, work.dense_layers
    flash, moe_ffn_kernels, t_f, core_time = times.flash, times.moe_ffn_kernels, times.t_f, times.core_time
    modes = _modes(lay)
    full, per_op, core_rc, norm_rc, up_rc, mlp_rc, moe_rc, act_rc = modes
    dense_share, moe_share = dense_layers / L, Le / L
    routed = k * lay.imbalance  # expert copies of a token on the busiest GPU
    kept = _kept_bytes(arch, dev, lay, work, acts, modes, dense_share, moe_share, routed)
    drop_norm, drop_up, drop_mlp, drop_moe, drop_act, op_bytes, module_bytes = kept

    def rerun(flops: Value, kernels: Value, nbytes: Value) -> Value:  # a recomputed forward piece, in s
        return tokens * flops / t / rate + kernels * dev.gemm_latency + nbytes / dev.hbm

    moe_flops_paced = mats * 2.0 * h * fe * (routed + S) + 2.0 * h * E
    # FLOPs a token that each module re-runs: the up projections; torchtitan's wk, wo and w3 (the busiest
    # expert GPU's routed copies for the time, the model's k for the hardware FLOPs).
    up_flops = 2.0 * (q_up + kv_up)

    op_flops = per_op_flops(arch, ctx, dense_share, moe_share, routed)
    module_time = (
        jnp.where(core_rc | (per_op & ~flash), core_time / kappa, 0.0)
        + jnp.where(norm_rc, rerun(0.0, 0.0, tokens * h * drop_norm), 0.0)
        + jnp.where(up_rc, rerun(up_flops, 1.0, tokens * h * drop_up), 0.0)
        + jnp.where(mlp_rc, rerun(dense_share * mlp_flops, 2.0 * dense_share, tokens * h * drop_mlp), 0.0)
        + jnp.where(
            moe_rc,
            rerun(moe_share * moe_flops_paced, moe_share * moe_ffn_kernels, tokens * h * drop_moe)
            + times.token_move,  # the re-run forward permutes, sorts and unpermutes its tokens again
            0.0,
        )
        + jnp.where(act_rc, rerun(0.0, 0.0, tokens * h * drop_act), 0.0)
        + jnp.where(
            per_op,
            rerun(
                op_flops,
                3.0 * dense_share + moe_share * (2.0 + E / jnp.maximum(e, 1.0)),
                acts.act_layer - op_bytes,
            ),
            0.0,
        )
    )
    recompute = jnp.where(full, t_f, module_time * kappa)
    act_recomputed = jnp.where(per_op, op_bytes, module_bytes)  # kept per layer and micro-batch, unless full
    return Recompute(
        full=full,
        per_op=per_op,
        core_rc=core_rc,
        up_rc=up_rc,
        mlp_rc=mlp_rc,
        moe_rc=moe_rc,
        dense_share=dense_share,
        moe_share=moe_share,
        up_flops=up_flops,
        recompute=recompute,
        act_recomputed=act_recomputed,
    )
