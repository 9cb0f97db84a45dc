"""The pipeline: layers split over the stages, the slowest stage's pace, and the bubble.

The notation is :mod:`kernels.layout`'s; a layer's times are :mod:`kernels.layout_compute`'s,
:mod:`kernels.layout_recompute`'s and :mod:`kernels.layout_communication`'s.

Pipeline (Narayanan et al., SC'21, section 2.2): layers split as evenly as they go
(the first L mod p stages one more), the embedding on the first stage and the logits
on the last. A stage's time per micro-batch T_i = its layers' forward, backward,
recompute and exposed TP/CP/EP/ZeRO-3 time, plus 2 V point-to-point sends of the
b s h bytes_act / (c t) boundary activations (:func:`kernels.layout_collectives.exchange`: the PP
group's bandwidth, or NCCL's send/recv with ``collectives`` nccl). The slowest stage
sets the pace:

    T_pipe = m T_max + bubble,      bubble = (p - 1) max_i ceil(n_i / V) / n_i T_i

over the stages i of n_i layers and time T_i a micro-batch: each stage runs its layers as V chunks, the largest
of ceil(n_i / V) layers, which paces the warm-up and the cool-down ((p - 1) / V T_max where V divides every
n_i, as Megatron-Core requires of an even split; an uneven one, as its account_for_embedding/loss_in_pipeline_
split or a custom pipeline layout give, is priced by its largest chunk: 8 layers as chunks of 3, 3 and 2 had
been priced as 8/3 each, a hunt). The largest over the stages, not the slowest stage's alone, so that the
bubble never jumps where the slowest stage changes (a review: a faster NIC had lengthened a step by 0.13%).

The first stage's compute adds the embedding's (b (s / c) h bytes_act moved 3 times at HBM bandwidth),
the last stage's the logits' forward (2 h v FLOPs a token at ``half_peak``, one kernel, and the logits'
bytes) and backward (twice the forward).

Multi-token prediction (DeepSeek-V3 Technical Report, arXiv 2412.19437, section 2.2; Megatron-Core's
``MultiTokenPredictionLayer``, NVIDIA/Megatron-LM@d98e8a64:megatron/core/transformer/multi_token_prediction.py,
every depth on the last stage where no custom pipeline layout places it, ``mtp_on_this_rank``): each of the D
depths normalises the hidden state and the next token's embedding (two RMSNorms of h), projects their 2h-wide
concatenation to h (``eh_proj``, a column-parallel GEMM: 4 h^2 FLOPs a token forward), runs one transformer
layer (priced as the average layer: its forward, backward, recomputation and TP/CP/EP/ZeRO-3 traffic) and the
shared output layer again. The last stage's time per micro-batch adds

    D (T_layer + 3 T_proj + logits forward + backward),    T_proj = b (s / c) 4 h^2 / (t peak eff) + tau
"""

from typing import NamedTuple

import jax.numpy as jnp

from netsweep_jax.kernels.layout_collectives import exchange, nic_share
from netsweep_jax.kernels.layout_communication import LayerCommunication
from netsweep_jax.kernels.layout_compute import LayerTimes, LayerWork
from netsweep_jax.kernels.layout_inputs import Arch, Device, Parallelism, Value
from netsweep_jax.kernels.layout_recompute import Recompute


class Pipeline(NamedTuple):
    """The stages that can be slowest (the first, stage 1, the last) and the step's pipelined time."""

    n_first: Value  # layers on the first stage
    n_mid: Value  # on stage 1 (the fullest middle stage), when p > 2
    n_last: Value  # on the last stage
    is_one: Value  # p = 1: one stage, both first and last
    exists: list[Value]  # whether each of the three stages exists
    embed_time: Value  # the embedding's forward and backward (s)
    logits_b: Value  # the output layer's backward (s)
    pp_on_nics: Value  # the share of the point-to-point sends' time their NICs add
    breakdown: dict[str, Value]  # the slowest stage's terms of BREAKDOWN, times m
    bubble: Value


def _embedding_and_output(
    arch: Arch, dev: Device, lay: Parallelism, work: LayerWork
) -> tuple[Value, Value, Value, Value]:
    """What the end stages add to their layers' time per micro-batch (s): the embedding's forward and backward
    (first stage), the output layer's forward and backward, and the D multi-token-prediction depths' own work
    but their transformer layers (last stage), each stretched by the stragglers' kappa:

        embedding  = 3 b (s / c) h bytes_act / hbm
        logits_f   = b (s / c) 2 h v / (t half_peak eff) + tau + 8 b (s / c) v / (t hbm),   logits_b = 2 logits_f
        mtp_head   = D (3 T_proj + logits_f + logits_b),    T_proj = b (s / c) 4 h^2 / (t peak eff) + tau
    """
    h, v, t, mtp = arch.hidden, arch.vocab, lay.tp, arch.mtp_layers
    tokens, kappa, logits_flops = work.tokens, work.kappa, work.logits_flops
    embed_time = 3.0 * tokens * h * dev.act_bytes / dev.hbm * kappa
    # The output layer is Megatron's own ColumnParallelLinear, not Transformer Engine's: never in fp8.
    logits_f = (
        tokens * logits_flops / t / (dev.half_peak * lay.efficiency)
        + dev.gemm_latency
        + 4.0 * tokens * v / t * 2.0 / dev.hbm
    ) * kappa
    logits_b = 2.0 * logits_f
    # Each MTP depth: its projection of the 2h-wide concatenation to h, forward and backward (one GEMM, twice
    # as much back), and the shared output layer again; its transformer layer is one more layer of the stage.
    mtp_proj = (tokens * 4.0 * h * h / t / work.rate + dev.gemm_latency) * kappa
    mtp_head = mtp * (3.0 * mtp_proj + logits_f + logits_b)
    return embed_time, logits_f, logits_b, mtp_head


def _bubble(p: Value, V: Value, layers: tuple[Value, ...], totals: list[Value]) -> Value:
    """The bubble (s): (p - 1) max_i ceil(n_i / V) / n_i T_i over the stages that can pace it (``layers``: their
    layers, MTP depths aside; ``totals``: their times a micro-batch, 0 for a stage that does not exist). A middle
    stage of fewer layers than stage 1 has the last stage's n and less time: these three cover every stage."""

    def largest_chunk(n: Value) -> Value:  # its largest chunk's share of a stage's time, times p - 1
        n = jnp.maximum(n, 1.0)
        return (p - 1.0) * jnp.ceil(n / V) / n

    shares = [largest_chunk(n) * total for n, total in zip(layers, totals)]
    return jnp.maximum(jnp.maximum(shares[0], shares[1]), shares[2])


def pipeline(
    arch: Arch,
    dev: Device,
    lay: Parallelism,
    dp: Value,
    m: Value,
    work: LayerWork,
    times: LayerTimes,
    rc: Recompute,
    comm: LayerCommunication,
) -> Pipeline:
    """The slowest stage's time per micro-batch, each of its terms over the m micro-batches, and the bubble."""
    L, h = arch.layers, arch.hidden
    t, p, c, V = lay.tp, lay.pp, lay.cp, lay.schedule
    tokens = work.tokens
    mtp = arch.mtp_layers  # D: multi-token-prediction depths, on the last stage
    t_f, t_b, recompute = times.t_f, times.t_b, rc.recompute
    tp_layer, cp_layer, ep_layer, z3_layer = comm.tp_layer, comm.cp_layer, comm.ep_layer, comm.z3_layer
    base = jnp.floor(L / p)
    extra = L - base * p  # the first `extra` stages hold one more layer
    n_first = base + jnp.where(extra > 0, 1.0, 0.0)
    n_last = jnp.where(p > 1, base + jnp.where(extra >= p, 1.0, 0.0), n_first)
    n_mid = base + jnp.where(extra > 1, 1.0, 0.0)  # stage 1, when p > 2
    embed_time, logits_f, logits_b, mtp_head = _embedding_and_output(arch, dev, lay, work)
    x_pp = tokens * h * dev.act_bytes / t
    pp_on_nics = nic_share(p, t * c * dp, lay, ring=False)  # its hand-offs' (send/recv)
    pp_micro = jnp.where(p > 1, 2.0 * V * exchange(x_pp, p, t * c * dp, lay), 0.0)

    per_layer = {
        "compute": t_f + t_b,
        "recompute_time": recompute,
        "tp_exposed": tp_layer,
        "cp_exposed": cp_layer,
        "ep_exposed": ep_layer,
        "dp_exposed": z3_layer,
    }

    def stage(n: Value, first: Value, last: Value) -> dict[str, Value]:
        layers = n + jnp.where(last, mtp, 0.0)  # the last stage also runs the MTP depths' layers
        parts = {key: layers * val for key, val in per_layer.items()}
        parts["compute"] = (
            parts["compute"]
            + jnp.where(first, embed_time, 0.0)
            + jnp.where(last, logits_f + logits_b + mtp_head, 0.0)
        )
        parts["pp_exposed"] = pp_micro
        return parts

    is_one = p <= 1
    # The stages that can be slowest, in pipeline order: the first, stage 1 (the fullest middle one), the last.
    stages = [stage(n_first, True, is_one), stage(n_mid, False, False), stage(n_last, False, True)]
    exists = [jnp.ones_like(p, dtype=bool), p > 2, ~is_one]
    totals = [jnp.where(ex, sum(st.values()), 0.0) for st, ex in zip(stages, exists)]
    t_max = jnp.maximum(jnp.maximum(totals[0], totals[1]), totals[2])
    first_is_slowest = totals[0] >= t_max
    mid_is_slowest = ~first_is_slowest & (totals[1] >= t_max)
    slow = {
        key: jnp.where(
            first_is_slowest, stages[0][key], jnp.where(mid_is_slowest, stages[1][key], stages[2][key])
        )
        for key in stages[0]
    }

    out = {key: m * val for key, val in slow.items()}
    bubble = _bubble(p, V, (n_first, n_mid, n_last), totals)
    return Pipeline(
        n_first=n_first,
        n_mid=n_mid,
        n_last=n_last,
        is_one=is_one,
        exists=exists,
        embed_time=embed_time,
        logits_b=logits_b,
        pp_on_nics=pp_on_nics,
        breakdown=out,
        bubble=bubble,
    )
