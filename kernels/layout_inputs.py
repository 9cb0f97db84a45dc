"""What the layout step takes, and the rules a layout must keep.

:class:`Arch` (the transformer), :class:`Device` (the GPU and its precision) and :class:`Parallelism` (how the
step is split and what it runs on) hold float arrays of one shape, or scalars that broadcast with them,
in SI units; the notation is :mod:`kernels.layout`'s. :func:`degrees` derives what the layout leaves
implicit,

    D = N / (t p c)  (or D as given, and then N = t p c D),     m = B / (b D),

and each configuration's ``status``: 0 for a layout that can exist, else the first rule of
:data:`STATUS` it breaks (counted from 1).
"""

from typing import Any, NamedTuple

import jax.numpy as jnp

STATUS = (
    "ok",
    "gpus not divisible by tp x pp x cp",
    "heads not divisible by tp",
    "kv heads not divisible by tp",
    "fewer layers than pp x chunks",
    "global batch not divisible by micro-batch x dp",
    "experts not divisible by ep (or ep or expert tp > 1 on a dense model)",
    "tp x dp x cp not divisible by ep x expert tp",
    "sequence not divisible by 2 x cp",
    "interleaved schedule needs micro-batches divisible by pp (and pp > 1)",
    "tp x pp x cp x dp is not the GPU count",
    "a mixture of experts at tp > 1 needs sequence parallelism",
    "moe_a2a overlap needs ep > 1, no full or moe recompute, at most one MTP layer, and interleaving where pp > 1",
    "activation offload needs pp 1 and no recomputation",
    "sequence parallelism needs each cp rank's tokens divisible by tp",
)
Value = Any  # a float array of configurations, or a scalar that broadcasts with them


class Arch(NamedTuple):
    """A transformer (each field a float array). ``q_width`` = heads x the query-key head dimension,
    ``kv_width`` = KV heads x the same (K's width), ``v_width`` = KV heads x V's head dimension (= kv_width
    unless V's heads are narrower); ``q_rank``, ``kv_rank`` > 0: multi-head latent attention (MLA) with
    those down-projection widths and a shared rotary key of ``rope_width`` (0 otherwise); ``experts`` 0 is a
    dense model; ``gated`` 1 is SwiGLU; ``moe_layers`` L_e; ``dropout`` 1 keeps dropout masks; ``mtp_layers`` D, the
    multi-token-prediction depths the run trains (DeepSeek-V3's MTP modules, all on the last pipeline stage:
    :mod:`kernels.layout_pipeline`; 0 none); ``router_groups`` G and ``group_topk`` M: group-limited routing (each
    token's experts from M of G groups of consecutive experts; 0: none)."""

    layers: Value
    hidden: Value
    heads: Value
    kv_heads: Value
    q_width: Value
    kv_width: Value
    v_width: Value
    q_rank: Value
    kv_rank: Value
    rope_width: Value
    ffn: Value
    vocab: Value
    seq: Value
    experts: Value
    top_k: Value
    expert_ffn: Value
    shared_experts: Value
    moe_layers: Value
    gated: Value
    tied: Value
    dropout: Value
    mtp_layers: Value
    router_groups: Value = 0.0
    group_topk: Value = 0.0


class Device(NamedTuple):
    """A GPU and its precision: matrix peak (FLOP/s), HBM (bytes/s: the rate memory-bound work achieves, the
    GPU's bandwidth times the sweep's ``memory_efficiency``), memory (bytes, as the driver reports
    it), bytes per element (gradients as kept and reduced), ``usable``: the fraction of the memory a
    training process can fill (the rest: the driver's reservation, the CUDA context, NCCL's buffers and the
    allocator's fragmentation), ``gemm_latency``: the fixed time of one matrix kernel (s), which sets how
    the efficiency of a GEMM falls with its size, ``moment_bytes``: bytes of each of Adam's two moments
    (4 in fp32; 2 in bf16 or fp16, 1 in fp8: Megatron-Core's precision-aware optimizer), and
    ``main_param_bytes``: bytes of each of the optimizer's main (master) weights (4 in fp32; 2 in fp16, the same
    optimizer's ``--main-params-dtype fp16``)."""

    peak: Value
    hbm: Value
    memory: Value
    param_bytes: Value
    grad_bytes: Value
    act_bytes: Value
    gemm_input_bytes: Value
    half_peak: Value
    usable: Value
    gemm_latency: Value
    moment_bytes: Value
    main_param_bytes: Value


class Parallelism(NamedTuple):
    """How the step is split and what it runs on.

    gpus, tp, pp, cp, ep, expert_tp (each expert's matrices split over that many GPUs: Megatron-Core's
    expert tensor parallelism, its expert grid ETP x EP x expert-DP folded over TP x CP x DP), dp (0 = gpus /
    (tp pp cp)), micro_batch, global_batch,
    schedule (V, the model chunks per pipeline stage: 1 is 1F1B, V >= 2 interleaved, as the sweeps' ``schedule``
    dim codes it), recompute (its code: the sum of the mode's bits), sequence_parallel (0/1),
    zero (0-3), attention (1: fused flash attention, scores never stored; 0: unfused, as the ``attention`` dim
    codes it), nvlink_domain (GPUs), nvlink_bw (bytes/s per GPU), gpus_per_node,
    nics_per_node, bandwidth (bit/s per NIC), utilization, latency (s), collective
    (0 ring, 1 tree, 2 ring-or-tree: the cheaper per message; 3 nccl, NCCL's choice, and 3 + i its forcing i of
    :data:`kernels.nccl.FORCINGS`, an algorithm or a protocol, both read where ``collectives`` is nccl), efficiency (matrix), overhead
    (s), slowdown, straggle (jitter x e_N), imbalance (EP load factor >= 1: the busiest expert's tokens over
    the mean that the step runs, a capacity factor's cap or padding applied by the caller), offload_layers
    (layers per stage whose activations are offloaded to the host), attention_efficiency (flash kernels), overlap (the stack's
    overlap switches, a sum of bits: 1 gradient reduce, 2 parameter gather, 4 TP communication, 8 expert
    all-to-all), dispatch_fp8 (1: MoE tokens dispatched forward in MXFP8, 1 + 1/32 bytes an element),
    nccl_arch (the GPU's architecture as :mod:`kernels.nccl` indexes it: 0 Volta, 1 Ampere, 2 Hopper, 3 Blackwell),
    eta_net, eta_nvl, nccl_latency (the fabric's constants :mod:`kernels.nccl` prices with: transport efficiency
    across hosts and inside an NVLink domain, fractions, and the network's latency lambda, us; read only where
    collectives is nccl: the shipped fit, ``kernels.layout_collectives.NCCL_CONSTANTS``, or a fabric file's;
    with nccl_op_latency (us), nccl_fill (us) and nccl_fill_bytes (bytes), :class:`kernels.nccl.Constants`' o, f
    and X_f: the costs NCCL's tuner leaves out, 0 by default as in a fabric file of version 1),
    collectives (0 flat: :mod:`kernels.layout_collectives`' rings of one bandwidth per group; 1 nccl: each
    collective as NCCL's tuner prices it for its group as placed, :mod:`kernels.nccl`; a Python int compiles
    only the chosen pricing, an array selects per element), leaf_hosts (hosts under one leaf switch, 0: no
    tier above the hosts) and oversubscription (the spine's, o: a group that spans more hosts than a leaf holds
    runs each channel across nodes at most at its NICs' share over max(1, o f), f the share of the leaf's NICs'
    rate its collective sends out of the leaf, :func:`kernels.layout_collectives.spine_factor`; read only where
    collectives
    is nccl), sharp (1: the switches reduce in the network and NCCL's CollNet is on, a fabric's ``-sharp``
    variant; 0: NCCL's default, off), rail_only (1: rail-only wiring, no spine, off-rail bytes forwarded over
    NVLink first; both read only where collectives is nccl: :func:`kernels.layout_collectives.group_fabric`),
    moe_dispatcher (0 alltoall: Megatron-Core's NCCL all-to-all of every dispatched copy; 1 flex:
    DeepEP's hierarchical dispatch, :func:`kernels.layout_communication.hierarchical_copies`),
    zero3_gather_once (1: ZeRO 3 under a pipeline gathers once a step, as PyTorch's pipelining runs FSDP2,
    :func:`kernels.layout_data_parallel.as_pipelines_run_zero3`; 0: every micro-batch, as Megatron-FSDP).
    """

    gpus: Value
    tp: Value
    pp: Value
    cp: Value
    ep: Value
    expert_tp: Value
    dp: Value
    micro_batch: Value
    global_batch: Value
    schedule: Value
    recompute: Value
    sequence_parallel: Value
    zero: Value
    attention: Value
    nvlink_domain: Value
    nvlink_bw: Value
    gpus_per_node: Value
    nics_per_node: Value
    bandwidth: Value
    utilization: Value
    latency: Value
    collective: Value
    efficiency: Value
    overhead: Value
    slowdown: Value
    straggle: Value
    imbalance: Value
    offload_layers: Value
    attention_efficiency: Value
    overlap: Value
    dispatch_fp8: Value
    nccl_arch: Value
    eta_net: Value
    eta_nvl: Value
    nccl_latency: Value
    collectives: Value
    leaf_hosts: Value = 0.0
    oversubscription: Value = 1.0
    moe_dispatcher: Value = 0.0
    zero3_gather_once: Value = 0.0
    sharp: Value = 0.0
    rail_only: Value = 0.0
    nccl_op_latency: Value = 0.0
    nccl_fill: Value = 0.0
    nccl_fill_bytes: Value = 1.0


def has_bit(code: Value, value: float) -> Value:
    """Whether the bit ``value`` (a power of two) is set in a float ``code``."""
    return jnp.mod(jnp.floor(code / value), 2.0) > 0


def divides(n: Value, d: Value) -> Value:
    """Whether ``d`` (at least 1) divides ``n``."""
    return jnp.mod(n, jnp.maximum(d, 1)) == 0


class Degrees(NamedTuple):
    """What a layout leaves implicit, per configuration: the data-parallel degree D (at least 1), the GPU
    count N, the micro-batches per step m (at least 1), and ``status`` (int32: 0 or the rule broken)."""

    dp: Value
    gpus: Value
    m: Value
    status: Value


def degrees(arch: Arch, lay: Parallelism) -> Degrees:
    """D, N, m and the status of each configuration (the rules of :data:`STATUS`, in order)."""
    L, a, g, s, E = arch.layers, arch.heads, arch.kv_heads, arch.seq, arch.experts
    t, p, c, e, V, etp = lay.tp, lay.pp, lay.cp, lay.ep, lay.schedule, lay.expert_tp
    b, B = lay.micro_batch, lay.global_batch
    model_parallel = t * p * c
    dp = jnp.where(lay.dp > 0, lay.dp, jnp.floor(lay.gpus / model_parallel))
    gpus = jnp.where(lay.dp > 0, dp * model_parallel, lay.gpus)
    m = jnp.floor(B / jnp.maximum(b * dp, 1.0))
    rules = [
        ~divides(gpus, model_parallel),
        ~divides(a, t),
        ~divides(g, t),
        L < p * V,
        ~divides(B, b * dp) | (m < 1),
        jnp.where(E > 0, ~divides(E, e), (e > 1) | (etp > 1)),
        ~divides(t * dp * c, e * etp),
        jnp.where(c > 1, ~divides(s, 2.0 * c), False),
        (V > 1) & ((p < 2) | ~divides(m, p)),
        (lay.dp > 0) & (lay.gpus > 0) & (gpus != lay.gpus),
        # Megatron-Core's own checks (its MoE layer's; overlap_moe_expert_parallel_comm's in TransformerConfig): a
        # hunt and a review found each priced where Megatron refuses it, the all-to-all hidden whole
        (E > 0) & (t > 1) & (lay.sequence_parallel < 1),
        (E > 0)
        & has_bit(lay.overlap, 8.0)
        & (
            (e < 2)
            | has_bit(lay.recompute, 2.0)
            | has_bit(lay.recompute, 128.0)
            | (arch.mtp_layers > 1)
            | ((p > 1) & (V < 2))
        ),
        # and TransformerConfig's of --cpu-offloading-num-layers (a hunt: offloading had been priced with either)
        (lay.offload_layers > 0) & ((p > 1) | (lay.recompute > 0)),
        # sequence parallelism's reduce-scatter splits each CP rank's s / c tokens over the TP group, which
        # Megatron-Core asserts divides them (megatron/core/tensor_parallel/mappings.py,
        # _reduce_scatter_along_first_dim: "First dimension of the tensor should be divisible by tensor parallel
        # size"; a hunt: a sequence of 4095 at TP 8 was priced)
        (t > 1) & (lay.sequence_parallel > 0) & ~divides(s, c * t),
    ]
    status = jnp.zeros(jnp.shape(rules[0]), jnp.int32)
    for code, broken in reversed(list(enumerate(rules, start=1))):
        status = jnp.where(broken, code, status)
    m = jnp.maximum(m, 1.0)
    dp = jnp.maximum(dp, 1.0)
    return Degrees(dp=dp, gpus=gpus, m=m, status=status)
