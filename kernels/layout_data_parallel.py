"""Data parallelism: the gradients' reduction behind the last micro-batch's backward, the parameters'
gather, and the optimizer step.

The notation is :mod:`kernels.layout`'s; gamma is a reduction's time (:mod:`kernels.layout_collectives`),
beta_b one layer's backward as the pipeline paces it (:mod:`kernels.layout_pipeline`).

Data parallelism (the paper's model, per stage): during the last micro-batch's
backward, each layer's gradients (grad_bytes per parameter) become ready in turn and
are reduced in FIFO order over the D c data-parallel GPUs (expert gradients over
their expert data-parallel group, D c t / (e etp); none where neither group holds two GPUs), an all-reduce at
ZeRO 0 and a reduce-scatter at ZeRO 1/2. For a run of n
identical layers, ready every beta_b seconds from time s0, with per-layer reduction
time gamma and the previous reduction ending at F, the recurrence
end_i = max(end_{i-1}, s0 + i beta_b) + gamma ends at

    end_n = max(F + n gamma, s0 + beta_b + n gamma, s0 + n beta_b + gamma)

(exact: the max of linear terms in i is reached at i = 1 or i = n). The segments are
the logits (last stage), the stage's layers, and the embedding (first stage); what
ends after the stage's backward is exposed, less the stage's slack in the pipeline
drain (stage i ends its backward i stage-backward times before the first). At
ZeRO 1/2 the updated parameters are all-gathered after the optimizer step, behind the
first micro-batch's forward (exposed: the excess). ZeRO 3 under a pipeline (p > 1) with ``zero3_gather_once``
is priced as PyTorch's pipelining runs FSDP2 (:func:`as_pipelines_run_zero3`): ZeRO 1, its reduce-scatters
after the stage's backward. That forward takes, per layer, its compute t_f and its part of
what the overlapped streams add to the layer (w, :func:`kernels.layout_communication.hidden_waited`), in
proportion to the compute:

    exposed gather = max(0, gather - n_first (t_f + w t_f / (t_f + t_b + recompute)))

(the layer's time t_f + t_b + recompute + w never falls as the compute grows, so neither does this forward). Optimizer step: 2 (W + 4 + 2 M) bytes per
parameter the GPU updates (Adam reads and writes its main weight of W = ``main_param_bytes`` bytes, its fp32
gradient and its two moments of M = ``moment_bytes`` each: 32 bytes in fp32, 24 with bf16 moments, 20 with fp8
ones, 28 with fp16 main weights and fp32 moments) at HBM bandwidth; the optimizer keeps W + 2 M bytes a
parameter (:mod:`kernels.layout_memory`).

Multi-token prediction (D depths, :mod:`kernels.layout_pipeline`) puts D more layers on the last stage (their
gradients reduced in the same FIFO) and, per depth, its projection and norms, 2 h^2 / t + 3 h parameters a GPU;
a last stage that is not the first also keeps MTP's copy of the embedding, v h / t:

    P_last = (n_last + D) P_layer + D (2 h^2 / t + 3 h) + (1 + [D > 0]) v h / t
"""

from typing import NamedTuple

import jax.numpy as jnp

from netsweep_jax.kernels.layout_collectives import all_reduce, scatter_or_gather
from netsweep_jax.kernels.layout_communication import LayerCommunication
from netsweep_jax.kernels.layout_compute import LayerTimes
from netsweep_jax.kernels.layout_inputs import Arch, Device, Parallelism, Value, has_bit
from netsweep_jax.kernels.layout_memory import LayerParams
from netsweep_jax.kernels.layout_pipeline import Pipeline
from netsweep_jax.kernels.layout_recompute import Recompute


def as_pipelines_run_zero3(lay: Parallelism) -> Parallelism:
    """The layout with ZeRO 3 under a pipeline (p > 1), where ``zero3_gather_once`` is 1, as PyTorch's
    pipelining runs FSDP2: ZeRO 1 with the gradient reduce not overlapped. (At 0, Megatron-FSDP's: it gathers
    and reduce-scatters every micro-batch, as without a pipeline. DeepSpeed's PipelineEngine refuses ZeRO 2
    and 3, deepspeedai/DeepSpeed@03f6f75 deepspeed/runtime/pipe/engine.py.)

    torchtitan keeps the gathered parameters after each forward where PP is on (``reshard_after_forward = not
    pp_enabled``, pytorch/torchtitan@018740b torchtitan/models/llama3/infra/parallelize.py ``apply_fsdp``), and
    PyTorch's pipeline stage turns off FSDP's resharding and gradient reduction in every micro-batch's backward
    and runs FSDP's post-backward (the gradients' reduce-scatter, then the resharding) once, after the stage's
    last backward (pytorch/pytorch@0138610 torch/distributed/pipelining/stage.py ``backward_maybe_with_nosync``,
    ``_post_backward``); FSDP2 accumulates the unsharded gradients in its reduce dtype
    (``FSDPParam.to_accumulated_grad_if_needed``). So a step gathers each stage's parameters once, behind the
    first micro-batch's forward, and holds them and its gradients whole (ZeRO 1's memory: only the optimizer's
    states sharded), and reduce-scatters the gradients once, after the stage's backward."""
    pipelined = (lay.zero >= 3) & (lay.pp > 1) & (lay.zero3_gather_once > 0)
    grad_reduce_bit = jnp.where(has_bit(lay.overlap, 1.0), 1.0, 0.0)
    return lay._replace(
        zero=jnp.where(pipelined, 1.0, lay.zero),
        overlap=jnp.where(pipelined, lay.overlap - grad_reduce_bit, lay.overlap),
    )


def fifo_end(prev_end: Value, start: Value, count: Value, ready_every: Value, duration: Value) -> Value:
    """End of the last of ``count`` identical reductions, ready at start + i ready_every (i = 1..count),
    each taking ``duration``, FIFO after one that ends at ``prev_end``; ``prev_end`` if count is 0."""
    end = jnp.maximum(
        jnp.maximum(prev_end + count * duration, start + ready_every + count * duration),
        start + count * ready_every + duration,
    )
    return jnp.where(count > 0, end, prev_end)


class DataParallel(NamedTuple):
    """The data-parallel time the step waits on, and the first and the last stage's parameters on one GPU."""

    dp_sync: Value  # the gradients' reduction exposed after the slowest stage's backward (s)
    gather_exposed: Value  # the parameters' all-gather at ZeRO 1/2 (s)
    first: tuple[Value, Value]  # the first stage's (dense, expert) parameters on one GPU
    last: tuple[Value, Value]  # the last stage's (the first's where p = 1)

    @property
    def larger(self) -> tuple[Value, Value]:
        """The (dense, expert) parameters on one GPU of the stage that holds more (the first on a tie)."""
        return larger_stage(self.first, self.last)


def larger_stage(first: tuple[Value, Value], last: tuple[Value, Value]) -> tuple[Value, Value]:
    """Of two stages' (dense, expert) parameters, those of the one that holds more (the first on a tie)."""
    first_is_larger = first[0] + first[1] >= last[0] + last[1]
    return jnp.where(first_is_larger, first[0], last[0]), jnp.where(first_is_larger, first[1], last[1])


def stage_layers(arch: Arch, pipe: Pipeline) -> tuple[Value, Value]:
    """The layers of the first and the last stage, each with the D multi-token-prediction depths it runs (the
    last stage's; the first's where p = 1: :mod:`kernels.layout_pipeline`)."""
    mtp = arch.mtp_layers
    return pipe.n_first + jnp.where(pipe.is_one, mtp, 0.0), pipe.n_last + mtp


def data_parallel_exposed(
    arch: Arch,
    dev: Device,
    lay: Parallelism,
    params: LayerParams,
    times: LayerTimes,
    rc: Recompute,
    comm: LayerCommunication,
    pipe: Pipeline,
) -> DataParallel:
    """The exposed gradient reduction of the stages that can be slowest, and the parameter gather."""
    t, p, zero = lay.tp, lay.pp, lay.zero
    t_f, t_b, recompute = times.t_f, times.t_b, rc.recompute
    embed_params, expert_dp, expert_stride = params.embed_params, params.expert_dp, params.expert_stride
    grad_overlap, param_overlap, dp_group = comm.grad_overlap, comm.param_overlap, comm.dp_group
    rs3, ar_grads, tp_backward = comm.rs3, comm.ar_grads, comm.tp_backward
    cp_backward, ep_layer = comm.cp_backward, comm.ep_layer
    n_first, n_mid, is_one = pipe.n_first, pipe.n_mid, pipe.is_one
    exists, embed_time, logits_b = pipe.exists, pipe.embed_time, pipe.logits_b
    gamma = jnp.where(zero >= 1, rs3, ar_grads)  # a reduce-scatter at ZeRO 1/2, else an all-reduce
    embed_grads = embed_params * dev.grad_bytes
    gamma_embed = jnp.where(
        zero >= 1, scatter_or_gather(embed_grads, dp_group, t, lay), all_reduce(embed_grads, dp_group, t, lay)
    )
    beta = t_b + recompute + tp_backward + cp_backward + ep_layer / 2.0  # one layer's backward, as paced
    untied = 1.0 - arch.tied

    def exposed(n: Value, first: Value, last: Value, slack: Value) -> Value:
        head_ready = jnp.where(last, logits_b, 0.0)
        head_grads = gamma_embed * jnp.where(is_one, untied, 1.0)
        end = jnp.where(last, head_ready + head_grads, 0.0)
        end = fifo_end(end, head_ready, n, beta, gamma)
        backward_end = head_ready + n * beta
        end = jnp.where(first, jnp.maximum(end, backward_end + embed_time / 3.0) + gamma_embed, end)
        backward_end = backward_end + jnp.where(first, embed_time / 3.0, 0.0)
        # Without the overlap, every reduction starts when the stage's backward ends.
        serial = n * gamma + jnp.where(last, head_grads, 0.0) + jnp.where(first, gamma_embed, 0.0)
        return jnp.maximum(0.0, jnp.where(grad_overlap, end - backward_end, serial) - slack)

    n_one, n_end = stage_layers(arch, pipe)
    dp_sync = exposed(n_one, True, is_one, 0.0)
    dp_sync = jnp.maximum(dp_sync, jnp.where(exists[1], exposed(n_mid, False, False, n_mid * beta), 0.0))
    dp_sync = jnp.maximum(
        dp_sync, jnp.where(exists[2], exposed(n_end, False, True, (p - 1.0) * n_end * beta), 0.0)
    )
    # none where neither group has two GPUs (expert DP's alone at dp x cp 1: a review, TP 4 of EP 1 priced none)
    dp_sync = jnp.where((zero >= 3) | ((dp_group <= 1) & (expert_dp <= 1)), 0.0, dp_sync)
    first, last = stage_params(arch, lay, params, pipe)
    stage_dense, stage_expert = larger_stage(first, last)
    gather = scatter_or_gather(stage_dense * dev.param_bytes, dp_group, t, lay) + scatter_or_gather(
        stage_expert * dev.param_bytes, expert_dp, expert_stride, lay
    )
    # Behind the first micro-batch's forward as it runs: its compute and, in proportion to it, its part of what
    # the overlapped streams add to each layer (so a slower GPU never hides more than the layer's time grows).
    compute = t_f + t_b + recompute
    forward = t_f + comm.hidden_waited * t_f / jnp.where(compute > 0, compute, 1.0)
    hidden_gather = jnp.where(param_overlap, jnp.maximum(0.0, gather - n_first * forward), gather)
    gather_exposed = jnp.where((zero >= 1) & (zero < 3), hidden_gather, 0.0)
    return DataParallel(
        dp_sync=dp_sync,
        gather_exposed=gather_exposed,
        first=first,
        last=last,
    )


def stage_params(
    arch: Arch, lay: Parallelism, params: LayerParams, pipe: Pipeline
) -> tuple[tuple[Value, Value], tuple[Value, Value]]:
    """The first and the last stage's (dense, expert) parameters on one GPU (the last is the first where p = 1).

    The first stage holds the embedding (and, alone in the pipeline, an untied output layer); the last holds the
    output layer (Megatron keeps a copy of tied embeddings there). Each MTP depth adds a layer's parameters, its
    projection's 2 h^2 / t and its three norms' 3 h; on a last stage that is not the first, MTP's embedding is a
    copy of the first stage's (Megatron-Core's GPTModel builds the embedding where ``pre_process or
    mtp_process``), kept and updated as the tied output layer's is. Dense parameters are sharded over the dp x cp
    GPUs, expert parameters over the expert data-parallel group (Megatron-Core's expert optimizer: world /
    (etp ep pp) GPUs)."""
    t, h, mtp, untied = lay.tp, arch.hidden, arch.mtp_layers, 1.0 - arch.tied
    n_first, is_one, exists = pipe.n_first, pipe.is_one, pipe.exists
    n_one, n_end = stage_layers(arch, pipe)
    dense_layer, expert_layer = params.dense_gpu, params.expert_params / (params.etp * lay.ep)
    embed_params = params.embed_params
    mtp_extra = 2.0 * h * h / t + 3.0 * h
    first_dense = (
        n_one * dense_layer
        + (n_one - n_first) * mtp_extra
        + embed_params * (1.0 + jnp.where(is_one, untied, 0.0))
    )
    last_dense = n_end * dense_layer + mtp * mtp_extra + embed_params * (1.0 + jnp.where(mtp > 0, 1.0, 0.0))
    first = (first_dense, n_one * expert_layer)
    last = (jnp.where(exists[2], last_dense, first_dense), jnp.where(exists[2], n_end, n_one) * expert_layer)
    return first, last


def optimizer_step(
    dev: Device,
    lay: Parallelism,
    kappa: Value,
    dp_group: Value,
    expert_dp: Value,
    stage_dense: Value,
    stage_expert: Value,
) -> tuple[Value, Value]:
    """(The optimizer step's time, s; Adam's bytes per parameter of master weight and moments): the larger
    stage's parameters on one GPU, less what ZeRO shards over ``dp_group`` (dense) and ``expert_dp``."""
    zero = lay.zero
    shard = jnp.where(zero >= 1, dp_group, 1.0)
    expert_shard = jnp.where(zero >= 1, expert_dp, 1.0)
    # Adam reads and writes its main weights, gradient (fp32) and moments: 2 (W + 4 + 2 moment_bytes) bytes.
    adam_states = dev.main_param_bytes + 2.0 * dev.moment_bytes
    optimizer = (
        2.0 * (adam_states + 4.0) * (stage_dense / shard + stage_expert / expert_shard) / dev.hbm * kappa
    )
    return optimizer, adam_states
