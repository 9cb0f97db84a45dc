"""The communication of one layer and micro-batch, and how much of it the step waits on.

The notation is :mod:`kernels.layout`'s; the collectives' times are :mod:`kernels.layout_collectives`'.

Per layer and micro-batch, on the GPU's critical path:
- TP (Shoeybi et al. 2019; Korthikanti et al., MLSys'23): 2 all-reduces forward and
  2 backward (2 more with full recompute) of X = b s h bytes_act / c (with sequence
  parallelism each is a reduce-scatter plus an all-gather: the same time on a ring).
- CP (ring attention): c - 1 exchanges of the K and V chunk, X = 2 b (s / c) w_kv
  bytes_act / t, forward, and twice that backward, hidden behind the attention
  core's compute up to its length: exposed = max(0, exchange - core).
- EP: dispatch and combine all-to-alls forward and backward (4) of X = b s h k
  bytes_act I / (c t) on MoE layers, the (q_e - 1) / e share on NVLink and the rest on
  NICs (the slower sets the time; EP ranks etp apart, so q_e = clip(Q_b / etp, 1, e) share a
  domain of Q at the fewest, Q_b the block's part of one, Q but where the EP block of e etp ranks crosses a
  domain's edge: :func:`kernels.layout_collectives.domain_part`; the NVLink share is the most's, clip(Q_j /
  etp, 1, e), Q_j the job's GPUs a domain: :func:`ep_domains`). Every member sends its off-domain share at
  once, so
  each goes through its own K / G of the node's NICs, K beta u / G bytes/s (under one NIC a GPU the slowest
  GPU's part, beta u / ceil(G / K): :func:`kernels.layout_collectives.nic_fraction`; not a ring's
  q / G: that would credit one GPU with its group's NICs on the node). With expert TP
  (etp > 1) each all-to-all is followed (or preceded) by an all-gather or reduce-scatter of
  etp X bytes over the etp GPUs of the expert TP group (a ring of adjacent ranks). With
  ``dispatch_fp8`` the forward dispatch carries (1 + 1/32) / bytes_act of X (MXFP8: a byte an
  element, a scale a 32); the combines and the backward stay in bf16.
  With ``collectives`` nccl each all-to-all is :func:`kernels.nccl.collective`'s all-to-all of X over
  the EP group (ranks etp apart) as placed, and each CP step its send/recv of the K and V chunk.
  That is Megatron-Core's ``alltoall`` dispatcher (``moe_dispatcher`` 0). Its ``flex`` dispatcher (1:
  DeepEP, or HybridEP on NVL72) dispatches each token once per node, not once per expert: the
  hierarchical all-to-all of :func:`hierarchical_copies`, in both pricings.
- ZeRO-3 (FSDP): each layer's parameters all-gathered forward and backward and its
  gradients reduce-scattered, over the D c data-parallel GPUs, each behind the layer's
  compute: exposed = max(0, ag - t_f) + max(0, ag + rs - t_b).

Overlap switches (``overlap``, a sum of bits named after Megatron-Core's switches,
sweep.core.sweep_settings.OVERLAP_BITS), per layer and micro-batch:
- grad_reduce (1, --overlap-grad-reduce): the data-parallel reduction runs FIFO behind the last
  micro-batch's backward (:mod:`kernels.layout_data_parallel`); off, all of it starts when the stage's
  backward ends: exposed = max(0, n gamma + the embedding's - slack). Under ZeRO-3 it hides the
  reduce-scatters.
- param_gather (2, --overlap-param-gather; FSDP's prefetch): at ZeRO 1/2 the updated parameters'
  all-gather hides behind the first micro-batch's forward (off: all exposed); at ZeRO-3 each layer's
  gathers hide behind its forward and backward:
      exposed = max(0, ag [param] - t_f) + max(0, ag [param] + rs [grad] - t_b - recompute)
                + ag [not param] + rs [not grad]                    (twice ag: forward and backward)
- tp_comm (4, --tp-comm-overlap: Transformer Engine's userbuffers split each TP collective and its
  neighbouring GEMM into chunks): TP's forward collectives hide behind the linear layers' forward
  GEMMs G = b (s / c) (F - core) / (t peak eff), its backward ones behind 2 G (3 G with full
  recomputation): exposed = max(0, tp_f - G) + max(0, tp_b - 2 G); with sequence parallelism
  only (Megatron-LM refuses --tp-comm-overlap without it): off, nothing is hidden.
- moe_a2a (8, --overlap-moe-expert-parallel-comm): a MoE layer's all-to-alls hide behind another
  micro-batch's forward and backward: exposed = max(0, ep - t_f - t_b).
The default, grad_reduce + param_gather, is what the model assumed before the switches existed.

The streams hidden behind one layer's compute (the overlapped TP collectives, CP's exchanges, ZeRO-3's hidden
gathers and reduce-scatters, the overlapped all-to-alls) run side by side, each on its own links: a phase waits
on its slowest stream's excess over its window, and the all-to-alls (behind another micro-batch's forward and
backward) on the slower of theirs and the two phases' (:func:`shared_window`):

    waited = max(a2a, max(forward excesses) + max(backward excesses))

and each stream is charged its excess times waited / (the sum of the excesses). With one exposed stream a
phase, each excess as above.
"""

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp

from netsweep_jax.kernels import nccl
from netsweep_jax.kernels.layout_collectives import (
    FLEX_RDMA,
    all_reduce,
    exchange,
    group_part,
    job_domain,
    most_in_domain,
    nccl_time,
    nic_per_gpu,
    nic_share,
    priced,
    scatter_or_gather,
    spine_factor,
)
from netsweep_jax.kernels.layout_compute import LayerTimes, LayerWork
from netsweep_jax.kernels.layout_inputs import Arch, Device, Parallelism, Value, has_bit
from netsweep_jax.kernels.layout_memory import LayerActivations, LayerParams
from netsweep_jax.kernels.layout_recompute import Recompute


class LayerCommunication(NamedTuple):
    """One layer's exposed communication per micro-batch (s), what leaves the NVLink domain, and what the
    data-parallel synchronisation takes from here."""

    grad_overlap: Value  # overlap switch 1: the gradient reduce behind the backward
    param_overlap: Value  # overlap switch 2: the parameter gather behind the forward
    tp_backward: Value  # TP's exposed backward collectives
    tp_layer: Value  # TP, forward and backward
    tp_on_nics: Value  # the share of TP's traffic time its NICs add (layout_collectives.nic_share; 0 inside)
    cp_backward: Value
    cp_layer: Value
    cp_on_nics: Value
    ep_layer: Value  # the expert all-to-alls, over the average layer
    ep_waits_on_nic: Value  # the all-to-all is paced by the NICs
    dp_group: Value  # D c: the dense parameters' data-parallel GPUs
    rs3: Value  # the layer's gradients reduce-scattered over their data-parallel groups
    ar_grads: Value  # or all-reduced
    z3_layer: Value  # ZeRO-3's exposed gathers and reduce-scatters
    dp_on_nics: Value  # the share of the data-parallel group's traffic time its NICs add
    hidden_waited: Value  # what the overlapped streams add to the layer (shared_window's waited)


def _none_in(experts: Value, top_k: Value, held: Value) -> Value:
    """C(E - a, k) / C(E, k): the chance that none of a token's k experts, drawn without replacement from E,
    is one of a given ``held`` = a of them: prod_{i<k} max(0, (E - a - i) / (E - i)). A loop over i < max k
    (top-k is traced; a product, not lgamma's difference of large logs, which float32 holds to 1e-4 only)."""
    E = jnp.maximum(experts, jnp.maximum(top_k, 1.0))  # dense models: any finite value (never used)

    def factor(i: Value, p: Value) -> Value:
        i = jnp.asarray(i, E.dtype)
        return p * jnp.where(i < top_k, jnp.maximum(0.0, (E - held - i) / (E - i)), 1.0)

    shape = jnp.broadcast_shapes(jnp.shape(E), jnp.shape(held), jnp.shape(top_k))
    steps = jnp.max(top_k).astype(jnp.int32)
    return jax.lax.fori_loop(0, steps, factor, jnp.ones(shape, E.dtype))


def hierarchical_copies(arch: Arch, ep: Value, ep_near: Value) -> tuple[Value, Value]:
    """Copies of each token a GPU's flex dispatch (DeepEP) sends per all-to-all: (over RDMA, over NVLink).

    DeepEP's normal kernels (deepseek-ai/DeepEP README, "Normal kernels with NVLink and RDMA forwarding";
    DeepSeek-V3 Technical Report, arXiv 2412.19437, sec. 3.2.2) send each token once over the scale-out
    network to the GPU of the same local rank in each other NVLink domain that holds at least one of its
    top-k experts, and that GPU forwards it over NVLink to each GPU of its domain holding one (not to itself);
    the tokens for the sender's own domain go over NVLink directly. Megatron-Core's alltoall dispatcher sends
    each of the k copies to its expert's GPU instead. With the EP group of e GPUs over n = e / q_e domains
    (q_e of it in each), E experts, E / n to a domain and E / e to a GPU, and top-k routing uniform over the
    experts (the benchmarks' forced-balanced routing: random scores), a given domain is hit with probability
    1 - C(E - E/n, k) / C(E, k) and a given GPU with 1 - C(E - E/e, k) / C(E, k).

    Group-limited routing (Megatron-Core's --moe-router-num-groups G, --moe-router-group-topk M; DeepSeek-V3's
    node-limited routing, 8 groups and at most 4 a token, arXiv 2412.19437 sec. 2.1.2 and 3.2.2) first picks
    M of the G groups of E / G consecutive experts: a token reaches at most n' = min(n, M max(1, n / G))
    domains, taken as n' uniform of the n, holding E' = E n' / n experts (exact where the groups are the
    domains, G = n, as DeepSeek-V3 on 8 nodes; with groups finer than the domains, G > n, only the cap on
    domains is modelled, not the fewer GPUs a token then reaches inside one: DeepSeek-V3 with EP 32 inside an
    NVL72 domain, 16 of the 32 GPUs eligible, reaches 6.6 of them on average, where this counts 7.3). Then,
    by symmetry over the n domains and e GPUs,

        rdma   = (n - 1) (n' / n) (1 - C(E' - E/n, k) / C(E', k))     copies through the GPU's NICs
        nvlink = (e - n) (n' / n) (1 - C(E' - E/e, k) / C(E', k))     copies over NVLink

    (every GPU hit but the n same-rank GPUs, which receive over RDMA or are the sender). With n = 1 (EP
    inside a domain) the RDMA term is 0 and the NVLink one DeepEP's intranode dispatch, once per GPU. The
    two stages are pipelined (DeepEP's forwarder warps relay each chunk as it lands; "communications via IB
    and NVLink are fully overlapped", arXiv 2412.19437 sec. 3.2.2), so the all-to-all takes the slower:

        flex = max(rdma X / (k K beta u / G_node) + (n - 1) lambda, nvlink X / (k W))

    with X the alltoall dispatcher's bytes (k copies a token), K beta u / G_node the GPU's share of its node's NICs
    and W NVLink (times eta_net and eta_nvl under NCCL's pricing, whose lambda it then takes). ep, ep_near:
    the EP degree and its members in one domain (any shape; Arch's fields broadcast with them)."""
    E, k = arch.experts, arch.top_k
    e = jnp.maximum(ep, 1.0)
    n = e / ep_near
    G, M = arch.router_groups, arch.group_topk
    limited = (G > 1) & (M > 0)
    eligible = jnp.where(limited, jnp.minimum(n, M * jnp.maximum(1.0, n / jnp.maximum(G, 1.0))), n)
    pool = E * eligible / n
    share = eligible / n
    domain_hit = share * (1.0 - _none_in(pool, k, E / n))
    gpu_hit = share * (1.0 - _none_in(pool, k, E / e))
    return (n - 1.0) * domain_hit, (e - n) * gpu_hit


def _tensor_parallel_collectives(
    arch: Arch, dev: Device, lay: Parallelism, work: LayerWork, acts: LayerActivations, rc: Recompute
) -> tuple[Value, Value]:
    """TP's collectives per layer and micro-batch, (forward, backward) s, before any overlap: 2 all-reduces of
    X = b s h bytes_act / c each way (with SP a reduce-scatter plus an all-gather, a ring), and the backward's
    reruns of recomputation: 2 more with full recomputation, half an all-reduce for each recomputed QKV
    projection, dense MLP or MoE layer (weighted by the dense and MoE layers' shares)."""
    x_tp = work.tokens * arch.hidden * dev.act_bytes
    tp_ar = all_reduce(
        x_tp, lay.tp, 1.0, lay, ring_only=acts.sp
    )  # with SP: reduce-scatter + all-gather, a ring
    tp_forward = 2.0 * tp_ar
    # Full recomputation re-runs a layer's two TP collectives; a recomputed QKV projection, dense MLP or MoE
    # layer re-runs the one at its entry (SP's all-gather) or exit (the all-reduce), half an all-reduce's time.
    tp_reruns = (
        jnp.where(rc.full, 2.0, 0.0)
        + 0.5 * jnp.where(rc.up_rc, 1.0, 0.0)
        + 0.5 * jnp.where(rc.mlp_rc, rc.dense_share, 0.0)
        + 0.5 * jnp.where(rc.moe_rc, rc.moe_share, 0.0)
    )
    tp_backward = tp_ar * (2.0 + tp_reruns)
    return tp_forward, tp_backward


def _context_parallel(
    arch: Arch, dev: Device, lay: Parallelism, tokens: Value, core_time: Value
) -> tuple[Value, Value, Value]:
    """CP's ring attention per layer and micro-batch: (exposed forward, exposed backward, whether the group
    leaves the NVLink domain). c - 1 exchanges of the K and V chunk X = 2 b (s / c) w_kv bytes_act / t forward,
    twice that backward, hidden behind the attention core's time: exposed = max(0, exchange - core)."""
    t, c = lay.tp, lay.cp
    kv_chunk = tokens * (arch.kv_width + arch.v_width) * dev.act_bytes / t
    cp_on_nics = nic_share(c, t, lay, ring=False)  # its exchanges' (send/recv)
    cp_step = exchange(kv_chunk, c, t, lay)
    cp_forward = jnp.where(c > 1, jnp.maximum(0.0, (c - 1.0) * cp_step - core_time), 0.0)
    cp_backward = jnp.where(c > 1, jnp.maximum(0.0, 2.0 * (c - 1.0) * cp_step - 2.0 * core_time), 0.0)
    return cp_forward, cp_backward, cp_on_nics


def _expert_parallel(
    arch: Arch,
    dev: Device,
    lay: Parallelism,
    tokens: Value,
    etp: Value,
    moe_rc: Value,
) -> tuple[Value, Value]:
    """EP's all-to-all time over the average layer per micro-batch, and whether the NICs pace it (module
    docstring). Each all-to-all of X = b (s / c) h k bytes_act I / t is the slower of its NVLink share and its
    off-domain share through the GPU's K / G of the node's NICs (or NCCL's; or the flex dispatcher's two
    stages, :func:`hierarchical_copies`); an fp8 dispatch carries (1 + 1/32) / bytes_act of X; expert TP adds
    a ring of etp X bytes over etp GPUs to each (etp_ring). With passes = 2 where the layer is recomputed (moe_rc):

        ep = (passes dispatch + (2 + passes) a2a + (2 + 2 passes) etp_ring) L_moe / L

    (exposed: :func:`layer_communication`, max(0, ep - t_f - t_b) with the moe_a2a overlap switch, ep without).
    """
    k, e = arch.top_k, lay.ep
    x_ep = tokens * arch.hidden * k * dev.act_bytes * lay.imbalance / lay.tp
    ep_near, ep_most, flex_near = ep_domains(e, etp, lay)  # in one domain: the fewest, the most, flex's
    # Unlike a ring's one stream per node boundary, an all-to-all sends every member's off-domain share at
    # once, each GPU through its own share of the node's NICs: K / G of them, however many of its group
    # share the node.
    nic_ep = nic_per_gpu(lay)
    inter_share = (e - ep_near) / jnp.maximum(e, 1.0)
    intra_share = (ep_most - 1.0) / jnp.maximum(e, 1.0)  # the most on NVLink, the fewest on their NICs
    latencies = jnp.where(inter_share > 0, (e - ep_near) * lay.latency, 0.0)

    def on_nics(nbytes: Value) -> Value:  # the off-domain share through the GPU's own NICs
        return inter_share * nbytes / nic_ep + latencies

    # The flex dispatcher's two stages (hierarchical_copies): copies of each token's b s h bytes_act I / t
    # over the GPU's NIC share and over NVLink, run at once (pipelined), so the slower sets the time.
    rdma_copies, nvlink_copies = hierarchical_copies(arch, e, flex_near)
    # DeepEP's kernels are not NCCL's; under NCCL's pricing its links run at the fabric's fitted efficiencies, and
    # its RDMA stage, across the EP group's NVLink domains, at the spine's share where the group crosses it: an
    # all-to-all between the domains (one GPU each), so the spine's load is an all-to-all's (exchange_load).
    rdma_nic = priced(lay, lambda: lay.eta_net / spine_factor(e, etp, lay, FLEX_RDMA), lambda: 1.0)
    rdma_nvl = priced(lay, lambda: lay.eta_nvl, lambda: 1.0)
    flex_latency = priced(lay, lambda: lay.nccl_latency * 1e-6, lambda: lay.latency)
    n_domains = e / flex_near

    def flex_stages(nbytes: Value) -> tuple[Value, Value]:  # (RDMA, NVLink) seconds of one flex all-to-all
        token = nbytes / k
        rdma = rdma_copies * token / (nic_ep * rdma_nic) + jnp.where(
            n_domains > 1, (n_domains - 1.0) * flex_latency, 0.0
        )
        return rdma, nvlink_copies * token / (lay.nvlink_bw * rdma_nvl)

    def all_to_all(nbytes: Value) -> Value:  # the slower of the NVLink and the NIC shares, or NCCL's; or flex
        flat = priced(
            lay,
            lambda: nccl_time(nccl.ALLTOALL, nbytes, e, etp, lay),
            lambda: jnp.where(e > 1, jnp.maximum(intra_share * nbytes / lay.nvlink_bw, on_nics(nbytes)), 0.0),
        )
        flex = jnp.where(e > 1, jnp.maximum(*flex_stages(nbytes)), 0.0)
        return jnp.where(lay.moe_dispatcher > 0, flex, flat)

    a2a = all_to_all(x_ep)
    # An fp8 dispatch (DeepEP's; Megatron-LM's moe_dispatch_fwd_dtype mxfp8) sends the forward dispatch in
    # 1 byte an element and a 1-byte scale per 32 (MXFP8's blocks); its backward, and the combines, in bf16.
    dispatch = jnp.where(lay.dispatch_fp8 > 0, all_to_all(x_ep * (1.0 + 1.0 / 32.0) / dev.act_bytes), a2a)
    # Expert TP: the dispatched tokens all-gathered over the expert TP group after the all-to-all, the experts'
    # outputs reduce-scattered before the combine (Megatron-Core's alltoall dispatcher: A2A, AG, experts, RS,
    # A2A), and their mirrors in the backward: each a ring over etp GPUs etp x_ep bytes long.
    etp_gather = scatter_or_gather(etp * x_ep, etp, 1.0, lay)
    passes = 1.0 + jnp.where(moe_rc, 1.0, 0.0)  # a recomputed MoE layer dispatches and combines again
    Le, L = arch.moe_layers, arch.layers
    ep_layer = (passes * dispatch + (2.0 + passes) * a2a + (2.0 + 2.0 * passes) * etp_gather) * Le / L
    rdma, nvl = flex_stages(x_ep)
    ep_waits_on_nic = (e > 1) & jnp.where(
        lay.moe_dispatcher > 0,
        (n_domains > 1) & (rdma >= nvl),
        (inter_share > 0) & (on_nics(x_ep) >= intra_share * x_ep / lay.nvlink_bw),
    )
    return ep_layer, ep_waits_on_nic


def ep_domains(ep: Value, etp: Value, lay: Parallelism) -> tuple[Value, Value, Value]:
    """The EP group's members in one NVLink domain (its ranks ``etp`` apart: the expert grid's rank order, expert
    TP, EP, expert DP), a block of e etp ranks, the job's Q_j GPUs a domain
    (:func:`kernels.layout_collectives.job_domain`), Q_b of the block in a domain at the fewest
    (:func:`kernels.layout_collectives.domain_part`):

    - the alltoall dispatcher's fewest, clip(Q_b / etp, 1, e), whose members send all the rest's share over
      their NICs (EP 32 on 72-GPU racks: 8 of a block's GPUs on one rack send 24/32 of their all-to-all, a hunt),
      and most, clip(Q_j / etp, 1, e), whose members send the most over NVLink (a block inside one domain, or
      the larger side of one across an edge: the all-to-all is bounded by both, a second hunt);
    - the flex dispatcher's, :func:`hierarchical_copies`' q_e: the most, or where the block crosses a domain's
      edge (Q_b < min(e etp, Q_j)) e / m, its members spread evenly over the m = 1 + ceil((e etp - Q_b) / Q_j)
      domains it spans, as DeepEP sends a token once to each domain holding one of its experts however many
      of the group's GPUs are there (an uneven crossing, 8 and 24, priced as 16 and 16: not modelled)."""
    e = jnp.maximum(ep, 1.0)
    extent = e * etp
    # e etp ranks where e > 1 (e = 1: no all-to-all)
    part = group_part(ep, etp, lay.gpus, lay.gpus_per_node, lay.nvlink_domain)
    domain = job_domain(lay.gpus, lay.gpus_per_node, lay.nvlink_domain)
    most = most_in_domain(ep, etp, lay.gpus, lay.gpus_per_node, lay.nvlink_domain)
    spans = 1.0 + jnp.ceil((extent - part) / domain - 1e-6)
    flex = jnp.where(part < jnp.minimum(extent, domain), e / spans, most)
    return jnp.clip(part / etp, 1.0, e), most, flex


def _zero3(
    dev: Device,
    lay: Parallelism,
    dp: Value,
    params: LayerParams,
    times: LayerTimes,
    recompute: Value,
    grad_overlap: Value,
    param_overlap: Value,
) -> tuple[Value, Value, Value, tuple[Value, Value, Callable[[Value], Value]], Value]:
    """The layer's data-parallel collectives: (D c, its gradients reduce-scattered rs, or all-reduced, ZeRO-3's
    per micro-batch as (the excess of the gathers hidden behind the forward, of those and the reduce-scatters
    behind the backward, its exposed time given :func:`shared_window`'s share), whether the data-parallel
    group leaves the NVLink domain). Dense parameters
    over the D c data-parallel GPUs, experts over their expert data-parallel group. ZeRO-3 gathers each
    layer's parameters forward and backward (ag) and reduce-scatters its gradients, hidden behind its forward
    or backward by the parameter gather's and the gradient reduce's overlap switches:

        exposed = max(0, ag [param] - t_f) + max(0, ag [param] + rs [grad] - t_b - recompute)
                  + ag [not param] + rs [not grad]                    (twice ag: forward and backward)
    """
    t, c, e = lay.tp, lay.cp, lay.ep
    etp, expert_dp, expert_stride = params.etp, params.expert_dp, params.expert_stride
    dense_gpu, expert_params = params.dense_gpu, params.expert_params
    t_f, t_b = times.t_f, times.t_b
    dp_group = dp * c
    dense_grads = dense_gpu * dev.grad_bytes
    expert_grads = expert_params / (etp * e) * dev.grad_bytes
    zero = lay.zero
    # ZeRO-3: gather each layer's parameters forward and backward, reduce-scatter its gradients.
    ag3 = scatter_or_gather(dense_gpu * dev.param_bytes, dp_group, t, lay) + scatter_or_gather(
        expert_params / (etp * e) * dev.param_bytes, expert_dp, expert_stride, lay
    )
    # The layer's gradients reduced over their data-parallel groups: dense over dp x cp, experts over the rest.
    rs3 = scatter_or_gather(dense_grads, dp_group, t, lay) + scatter_or_gather(
        expert_grads, expert_dp, expert_stride, lay
    )
    ar_grads = all_reduce(dense_grads, dp_group, t, lay) + all_reduce(
        expert_grads, expert_dp, expert_stride, lay
    )
    # Each gather hides behind the layer's forward or backward when the parameter gather overlaps (FSDP's
    # prefetch), the reduce-scatter behind the backward when the gradient reduce does; the rest is exposed.
    ag_hidden, rs_hidden = jnp.where(param_overlap, ag3, 0.0), jnp.where(grad_overlap, rs3, 0.0)
    z3 = zero >= 3
    hidden_forward = jnp.where(z3, jnp.maximum(0.0, ag_hidden - t_f), 0.0)
    hidden_backward = jnp.where(z3, jnp.maximum(0.0, ag_hidden + rs_hidden - t_b - recompute), 0.0)

    def exposed(share: Value) -> Value:  # the hidden streams' excess scaled by shared_window's share
        forward = share * hidden_forward + ag3 - ag_hidden
        backward = share * hidden_backward + ag3 - ag_hidden + rs3 - rs_hidden
        return jnp.where(z3, forward + backward, 0.0)

    dp_on_nics = nic_share(dp_group, t, lay)
    return dp_group, rs3, ar_grads, (hidden_forward, hidden_backward, exposed), dp_on_nics


def shared_window(forward: tuple[Value, ...], backward: tuple[Value, ...], spanning: Value) -> Value:
    """The factor each exposure of the streams hidden behind one layer's compute is scaled by, so that they add to
    what the layer waits on. The streams run side by side, each on its own links, behind the same compute: a
    phase waits on its slowest stream (forward, then backward), and the all-to-alls hidden behind another
    micro-batch's forward and backward (``spanning``) on the slower of them and the two phases:

        waited = max(spanning, max(forward) + max(backward)),   share = waited / (spanning + sum(forward) + sum(backward))

    (1 where at most one stream is exposed in each phase, and none spans: the exposures as each stream's alone).
    Added stream by stream, a longer compute hid each one's excess at once, and the step fell as the compute
    grew; ``waited`` + the compute never falls as the compute grows."""
    longest = hidden_waited(forward, backward, spanning)
    total = spanning + sum(forward, 0.0) + sum(backward, 0.0)
    # total 0: every excess 0 (so is longest), scaled by 0 all the same; the division by 1 there keeps the fit's
    # gradient finite (a floor of the smallest float divided 0 by its square, 0: NaN, through every fit)
    return longest / jnp.where(total > 0, total, 1.0)


def hidden_waited(forward: tuple[Value, ...], backward: tuple[Value, ...], spanning: Value) -> Value:
    """What the streams hidden behind one layer's compute add to it, per micro-batch (s): :func:`shared_window`'s
    ``waited``, max(spanning, max(forward) + max(backward))."""
    return jnp.maximum(spanning, _largest(forward) + _largest(backward))


def _largest(values: tuple[Value, ...]) -> Value:
    out = values[0]
    for v in values[1:]:
        out = jnp.maximum(out, v)
    return out


def layer_communication(
    arch: Arch,
    dev: Device,
    lay: Parallelism,
    dp: Value,
    work: LayerWork,
    params: LayerParams,
    acts: LayerActivations,
    times: LayerTimes,
    rc: Recompute,
) -> LayerCommunication:
    """TP, CP, EP and ZeRO-3 time per layer and micro-batch, less what the overlap switches hide."""
    t = lay.tp
    tokens, kappa, rate, down = work.tokens, work.kappa, work.rate, work.down
    t_f, t_b = times.t_f, times.t_b
    tp_forward, tp_backward = _tensor_parallel_collectives(arch, dev, lay, work, acts, rc)
    # Overlap switches (a sum of bits, sweep.core.sweep_settings.OVERLAP_BITS): 1 the gradient reduce behind the
    # backward, 2 the parameter gather behind the forward (Megatron-Core's --overlap-grad-reduce and
    # --overlap-param-gather), 4 TP communication behind the GEMMs beside it (--tp-comm-overlap: Transformer
    # Engine's userbuffers pipeline each collective with its neighbouring GEMM in chunks), 8 the expert
    # all-to-alls behind another micro-batch's compute (--overlap-moe-expert-parallel-comm).
    grad_overlap = has_bit(lay.overlap, 1.0)
    param_overlap = has_bit(lay.overlap, 2.0)
    # --tp-comm-overlap needs sequence parallelism (Megatron-LM's validate_args asserts it: "Tensor parallel
    # communication/GEMM overlap can happen only when sequence parallelism is enabled", as the stacks drop it):
    # without it the switch hides nothing (a hunt saw TP priced fully hidden with SP off).
    tp_overlap = has_bit(lay.overlap, 4.0) & (lay.sequence_parallel > 0)
    a2a_overlap = has_bit(lay.overlap, 8.0)
    # TP's forward collectives hide behind the linear layers' forward GEMMs G, its backward ones behind 2 G.
    linear_forward = (
        tokens * ((work.paced_flops - work.core_flops) / t + 2.0 * down * (1.0 - 1.0 / t)) / rate * kappa
    )
    # The backward's GEMMs are twice the forward's; full recomputation adds the recomputed forward's.
    behind_backward = linear_forward * (2.0 + jnp.where(rc.full, 1.0, 0.0))
    tp_hidden_f = jnp.where(tp_overlap, jnp.maximum(0.0, tp_forward - linear_forward), 0.0)
    tp_hidden_b = jnp.where(tp_overlap, jnp.maximum(0.0, tp_backward - behind_backward), 0.0)
    tp_waited_f, tp_waited_b = jnp.where(tp_overlap, 0.0, tp_forward), jnp.where(tp_overlap, 0.0, tp_backward)
    tp_on_nics = nic_share(t, 1.0, lay)

    cp_forward, cp_backward, cp_on_nics = _context_parallel(arch, dev, lay, tokens, times.core_time)
    # moe_rc: the moe module recomputed, or the whole layer's forward (full), its dispatch and combine with it.
    ep_whole, ep_waits_on_nic = _expert_parallel(arch, dev, lay, tokens, params.etp, rc.moe_rc | rc.full)
    ep_hidden = jnp.where(a2a_overlap, jnp.maximum(0.0, ep_whole - (t_f + t_b)), 0.0)
    ep_waited = jnp.where(a2a_overlap, 0.0, ep_whole)
    dp_group, rs3, ar_grads, (z3_f, z3_b, z3_exposed), dp_on_nics = _zero3(
        dev, lay, dp, params, times, rc.recompute, grad_overlap, param_overlap
    )
    # The streams hidden behind the layer's compute run side by side: each phase waits on its slowest
    # (shared_window); each stream keeps its share of what is waited on, so the breakdown adds up to the step.
    forward, backward = (tp_hidden_f, cp_forward, z3_f), (tp_hidden_b, cp_backward, z3_b)
    share = shared_window(forward, backward, ep_hidden)
    tp_backward = tp_waited_b + share * tp_hidden_b
    cp_backward = share * cp_backward
    return LayerCommunication(
        grad_overlap=grad_overlap,
        param_overlap=param_overlap,
        tp_backward=tp_backward,
        tp_layer=tp_waited_f + share * tp_hidden_f + tp_backward,
        tp_on_nics=tp_on_nics,
        cp_backward=cp_backward,
        cp_layer=share * cp_forward + cp_backward,
        cp_on_nics=cp_on_nics,
        ep_layer=ep_waited + share * ep_hidden,
        ep_waits_on_nic=ep_waits_on_nic,
        dp_group=dp_group,
        rs3=rs3,
        ar_grads=ar_grads,
        z3_layer=z3_exposed(share),
        dp_on_nics=dp_on_nics,
        hidden_waited=hidden_waited(forward, backward, ep_hidden),
    )
