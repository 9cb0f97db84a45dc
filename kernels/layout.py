"""One training step of a transformer under tensor, pipeline, context, expert and data parallelism.

Pure JAX, elementwise: every argument is an array of one shape (one value per
configuration, or broadcastable scalars), so a block of configurations is one call
with no ``vmap`` and no scan, and every layout parameter (tp, pp, ...) is traced:
a sweep over layouts compiles once. SI units throughout (s, bytes, bytes/s, FLOP/s).
:func:`tests.reference.layout_step` is the same model as a plain float64 loop.

Notation (per configuration). Architecture: L layers, h hidden, a heads, g key/value
heads, w_q = a x head dimension and w_kv = g x head dimension, f feed-forward width,
v vocabulary, s sequence, E experts (0 = dense), k experts per token, f_e expert width,
S shared experts, L_e MoE layers, gated MLP (SwiGLU, 3 matrices) or not (GELU, 2), D multi-token-prediction
depths (0 none). Parallelism: N GPUs, t = tp, p = pp,
c = cp, e = ep, etp = expert TP (the experts' grid etp x e x expert DP folded over t x c x D), D = dp =
N / (t p c), micro-batch b, global batch B, V chunks per
pipeline stage (1 = 1F1B), m = B / (b D) micro-batches per step.

The model, module by module (each module's docstring has the formulas of the terms it computes):

- :mod:`kernels.layout_inputs`: :class:`Arch`, :class:`Device`, :class:`Parallelism`; D, m and the rules a
  layout must keep (:data:`STATUS`).
- :mod:`kernels.layout_compute`: work per token and layer (FLOPs), GEMM efficiency by size, fp8 casts,
  flash attention; the forward t_f and backward t_b of a layer on one GPU; the stragglers' kappa.
- :mod:`kernels.layout_memory`: one GPU's share of a layer's parameters (dense and expert), the
  activations A a layer keeps, and the memory per GPU (states under ZeRO, activations in flight,
  offloading).
- :mod:`kernels.layout_recompute`: activation recomputation, mode by mode: what it drops from A and
  what it re-runs.
- :mod:`kernels.layout_collectives`: a group's bandwidth inside and across NVLink domains, and the
  time of each collective.
- :mod:`kernels.layout_communication`: TP, CP, EP and ZeRO-3 per layer and micro-batch, and the
  overlap switches (``overlap``) that hide them.
- :mod:`kernels.layout_pipeline`: layers over the stages, the slowest stage, T_pipe and the bubble; the
  multi-token-prediction depths on the last stage.
- :mod:`kernels.layout_data_parallel`: the gradients' FIFO reduction behind the last micro-batch's
  backward, the parameter gather at ZeRO 1/2, and the optimizer step.

They add up, and ``overhead`` is added once per step when N > 1 (as :mod:`kernels.overlap`):

    iteration_time = T_pipe + dp_exposed + optimizer + multi overhead,     multi = [N > 1]

Outputs per configuration: ``iteration_time`` (s), ``tokens_per_s``, ``mfu`` (model
FLOPs 3 B s ((L + D) F + D 4 h^2 + (1 + D) logits) over time x peak x N, D the multi-token-prediction depths), ``tflops_per_gpu`` (model FLOPs),
``hardware_tflops_per_gpu`` (adds the recomputed forward, as SC'21 counts),
``memory_gb``, ``memory_free_gb``, ``fits``, ``status`` (0 = a layout that can exist, else the first rule
it breaks: :data:`STATUS`), and the breakdown ``compute``, ``recompute_time``,
``bubble``, ``tp_exposed``, ``cp_exposed``, ``ep_exposed``, ``pp_exposed``,
``dp_exposed``, ``optimizer``, ``overhead_time`` (they add up to ``iteration_time``;
the ``_time`` names keep clear of the ``recompute`` and ``overhead`` dims) and
``network_fraction``: the share of the step spent waiting on the NICs: each exposed term of a group that
leaves the NVLink domain times the share of its traffic time its NICs add (:func:`~kernels.layout_collectives.nic_share`:
1 where each member is alone on its node, else 1 - min(b_nvl, b_nic) / b_nvl; the data-parallel term's the dense
and expert groups' shares weighted by the slowest stage's parameters of each), the expert all-to-all's whole where
the NICs pace it (the bubble, idle behind the other stages and their traffic, is counted in ``bubble`` alone); ``ep_on_nics`` 1 where the expert all-to-all is paced by the NICs (its group leaves
the NVLink domain and the off-domain share takes longer than the NVLink share), else 0.
"""

import jax.numpy as jnp

from netsweep_jax.kernels.layout_collectives import (
    all_reduce,
    group_bandwidth,
    nic_per_gpu,
    nic_share,
    priced_together,
    scatter_or_gather,
)
from netsweep_jax.kernels.layout_communication import LayerCommunication, layer_communication
from netsweep_jax.kernels.layout_compute import LayerTimes, LayerWork, layer_times, layer_work
from netsweep_jax.kernels.layout_data_parallel import (
    DataParallel,
    as_pipelines_run_zero3,
    data_parallel_exposed,
    fifo_end,
    optimizer_step,
)
from netsweep_jax.kernels.layout_inputs import STATUS, Arch, Device, Parallelism, Value, degrees
from netsweep_jax.kernels.layout_memory import (
    LayerParams,
    activations_per_layer,
    memory_per_gpu,
    params_per_gpu,
)
from netsweep_jax.kernels.layout_pipeline import Pipeline, pipeline
from netsweep_jax.kernels.layout_recompute import Recompute, per_op_flops, recomputation

__all__ = [
    "BREAKDOWN",
    "OUTPUTS",
    "STATUS",
    "Arch",
    "Device",
    "Parallelism",
    "Value",
    "all_reduce",
    "fifo_end",
    "group_bandwidth",
    "nic_per_gpu",
    "scatter_or_gather",
    "step",
]

# The step's terms: they sum to its iteration time.
BREAKDOWN = (
    "compute",
    "recompute_time",
    "bubble",
    "tp_exposed",
    "cp_exposed",
    "ep_exposed",
    "pp_exposed",
    "dp_exposed",
    "optimizer",
    "overhead_time",
)
OUTPUTS = (
    "iteration_time",
    "tokens_per_s",
    "mfu",
    "tflops_per_gpu",
    "hardware_tflops_per_gpu",
    "memory_gb",
    "memory_free_gb",
    "fits",
    "status",
    *BREAKDOWN,
    "network_fraction",
    "ep_on_nics",
)


def step(arch: Arch, dev: Device, lay: Parallelism) -> dict[str, Value]:
    """Every output of :data:`OUTPUTS` for each configuration (the equations of this module's docstring and
    of the modules it names), its NCCL-priced collectives priced in one call
    (:func:`kernels.layout_collectives.priced_together`)."""
    return priced_together(lambda: _step(arch, dev, lay))


def _work_tflop(
    arch: Arch, lay: Parallelism, gpus: Value, work: LayerWork, times: LayerTimes, rc: Recompute
) -> tuple[Value, Value, Value]:
    """The step's tokens B s, and the work per GPU in TFLOP it counts, the model's and the recomputation's:

        model     = 3 (B s / gpus) ((L + D) F_layer + 4 D h^2 + (1 + D) F_logits) / 1e12
        recompute = (B s / gpus) (L + D) F_recomputed / 1e12

    F_recomputed the layer's recomputed FLOPs a token (the whole layer with full recomputation, else the
    attention core, QKV projection, dense MLP and MoE shares and per-operation FLOPs that are recomputed).
    Per GPU in TFLOP, not a FLOP count: the step's of the largest accepted shape (1e7 layers, widths and
    tokens, a batch of 1e9) is 1e39, past float32's 3.4e38; per GPU in TFLOP it is at most about 1e27."""
    L, s, k = arch.layers, arch.seq, arch.top_k
    B = lay.global_batch
    step_tokens = B * s
    gpu_tokens = step_tokens / gpus
    # Multi-token prediction's D depths each compute one more layer, their projection (4 h^2 a token) and
    # the logits again (:mod:`kernels.layout_pipeline`).
    D, h = arch.mtp_layers, arch.hidden
    model_tflop = (
        3.0
        * gpu_tokens
        * (((L + D) * work.layer_flops + D * 4.0 * h * h + (1.0 + D) * work.logits_flops) / 1e12)
    )
    recompute_tflop = (
        gpu_tokens
        * ((L + D) / 1e12)
        * jnp.where(
            rc.full,
            work.layer_flops,
            jnp.where(rc.core_rc | (rc.per_op & ~times.flash), work.core_flops, 0.0)
            + jnp.where(rc.up_rc, rc.up_flops, 0.0)
            + jnp.where(rc.mlp_rc, rc.dense_share * work.mlp_flops, 0.0)
            + jnp.where(rc.moe_rc, rc.moe_share * work.moe_flops, 0.0)
            + jnp.where(rc.per_op, per_op_flops(arch, work.ctx, rc.dense_share, rc.moe_share, k), 0.0),
        )
    )
    return step_tokens, model_tflop, recompute_tflop


def _on_nics(
    out: dict[str, Value],
    comm: LayerCommunication,
    pipe: Pipeline,
    dpar: DataParallel,
    params: LayerParams,
    lay: Parallelism,
) -> Value:
    """Seconds of the step spent waiting on the NICs: each group's exposed time times the share of it its NICs
    add (:func:`~kernels.layout_collectives.nic_share`: an ideal network's NICs take it away), the expert
    all-to-all's whole where the NICs pace it; the data-parallel term is two groups', the dense parameters' and
    the experts' (placed otherwise where ep x expert tp is not tp), weighted by their parameters on the slowest
    stage, a group of one GPU (no traffic) weighing nothing (reviews); the dense group's alone where the experts'
    weigh nothing (a dense model)."""
    stage_dense, stage_expert = dpar.larger
    dense = jnp.where(comm.dp_group > 1, stage_dense, 0.0)
    expert = jnp.where(params.expert_dp > 1, stage_expert, 0.0)
    dp_on_nics = jnp.where(
        expert > 0,
        (dense * comm.dp_on_nics + expert * nic_share(params.expert_dp, params.expert_stride, lay))
        / jnp.maximum(dense + expert, 1.0),
        comm.dp_on_nics,
    )
    waits = (
        comm.tp_on_nics * out["tp_exposed"]
        + comm.cp_on_nics * out["cp_exposed"]
        + jnp.where(comm.ep_waits_on_nic, out["ep_exposed"], 0.0)
        + pipe.pp_on_nics * out["pp_exposed"]
        + dp_on_nics * out["dp_exposed"]
    )
    return jnp.maximum(waits, 0.0)  # a share, never the -4e-21 of a term's rounding (a hunt)


def _step(arch: Arch, dev: Device, lay: Parallelism) -> dict[str, Value]:
    f32 = jnp.result_type(lay.bandwidth)
    mats = jnp.where(arch.gated > 0, 3.0, 2.0)  # matrices per MLP: 3 gated (SwiGLU), 2 not

    # The parts run in the order their terms depend on each other, and the traced program keeps that order.
    dp, gpus, m, status = degrees(arch, lay)  # which layouts can exist
    # The job's GPUs as the layout runs them (d t p c where D is given), which the groups' placement reads.
    lay = lay._replace(gpus=gpus)
    # ZeRO 3 under a pipeline, where it gathers once a step (PyTorch's FSDP2), reduces after the stage's backward.
    lay = as_pipelines_run_zero3(lay)

    # One layer and micro-batch on one GPU: work, parameters, activations, time, recomputation, traffic.
    work = layer_work(arch, dev, lay, gpus, mats)
    params = params_per_gpu(arch, lay, dp, work)
    acts = activations_per_layer(arch, dev, lay, work)
    times = layer_times(arch, dev, lay, work, params.layer_params, acts.act_layer, acts.score_bytes)
    rc = recomputation(arch, dev, lay, work, acts, times)
    comm = layer_communication(arch, dev, lay, dp, work, params, acts, times, rc)

    # The step: the slowest stage over the micro-batches, the data-parallel synchronisation, the optimizer.
    pipe = pipeline(arch, dev, lay, dp, m, work, times, rc, comm)
    out = pipe.breakdown
    dpar = data_parallel_exposed(arch, dev, lay, params, times, rc, comm, pipe)
    out["dp_exposed"] = out["dp_exposed"] + dpar.dp_sync + dpar.gather_exposed
    optimizer, adam_states = optimizer_step(
        dev, lay, work.kappa, comm.dp_group, params.expert_dp, *dpar.larger
    )
    overhead = jnp.where(gpus > 1, lay.overhead, 0.0)
    out.update(bubble=pipe.bubble, optimizer=optimizer, overhead_time=overhead)
    iteration: Value = sum(out[key] for key in BREAKDOWN)

    # --- what the step achieves --------------------------------------------------------------------
    step_tokens, model_tflop, recompute_tflop = _work_tflop(arch, lay, gpus, work, times, rc)
    network = _on_nics(out, comm, pipe, dpar, params, lay)

    memory = memory_per_gpu(
        arch,
        dev,
        lay,
        params,
        acts.sp,
        m=m,
        tokens=work.tokens,
        full=rc.full,
        act_recomputed=rc.act_recomputed,
        n_first=pipe.n_first,
        n_last=pipe.n_last,
        is_one=pipe.is_one,
        dp_group=comm.dp_group,
        first=dpar.first,
        last=dpar.last,
        adam_states=adam_states,
    )

    ok = status == 0
    nan = jnp.asarray(jnp.nan, f32)
    result = {key: out[key] for key in BREAKDOWN}
    result.update(
        iteration_time=iteration,
        tokens_per_s=step_tokens / iteration,
        mfu=model_tflop / iteration / (dev.peak / 1e12),
        tflops_per_gpu=model_tflop / iteration,
        hardware_tflops_per_gpu=(model_tflop + recompute_tflop) / iteration,
        memory_gb=memory / 1e9,
        memory_free_gb=(dev.usable * dev.memory - memory) / 1e9,
        network_fraction=network / iteration,
        ep_on_nics=comm.ep_waits_on_nic.astype(f32),
    )
    result = {key: jnp.where(ok, val, nan).astype(f32) for key, val in result.items()}
    result["fits"] = jnp.where(ok, (memory <= dev.usable * dev.memory).astype(f32), nan).astype(f32)
    result["status"] = status
    return result
