"""One training step of a transformer under tensor, pipeline, context, expert and data parallelism.

Pure JAX, elementwise: every argument is an array of one shape (one value per
configuration, or broadcastable scalars), so a block of configurations is one call
with no ``vmap`` and no scan, and every layout parameter (tp, pp, ...) is traced:
a sweep over layouts compiles once. SI units throughout (s, bytes, bytes/s, FLOP/s).
:func:`tests.reference.layout_step` is the same model as a plain float64 loop.

Notation (per configuration). Architecture: L layers, h hidden, a heads, g key/value
heads, w_q = a x head dimension and w_kv = g x head dimension, f feed-forward width,
v vocabulary, s sequence, E experts (0 = dense), k experts per token, f_e expert width,
S shared experts, L_e MoE layers, gated MLP (SwiGLU, 3 matrices) or not (GELU, 2). Layout: N GPUs, t = tp, p = pp,
c = cp, e = ep, D = dp = N / (t p c), micro-batch b, global batch B, V chunks per
pipeline stage (1 = 1F1B), m = B / (b D) micro-batches per step.

Work per token and layer, forward (Narayanan et al., SC'21, section 5.1; the
attention core counted in full, as Megatron counts it):

    attn   = 4 h w_q + 4 h w_kv + 4 s w_q              (projections; scores and context)
    mlp    = (6 or 4) h f                             (dense layer: gated or not)
    moe    = (6 or 4) h f_e (k + S) + 2 h E           (MoE layer: routed and shared experts,
                                                       router; the time takes the routed part
                                                       times I, the load imbalance >= 1)
    F      = attn + ((L - L_e) mlp + L_e moe) / L     (the average layer)
    logits = 2 h v

A GPU of a TP x CP group handles b s / c tokens of each micro-batch and 1 / t of each
layer's work: t_f = b s (F - core) / (c t peak eff) + n_gemm tau + core time + (activation
bytes A + weight bytes + fp8 cast bytes) / hbm, t_b = 2 t_f (+ 1/2 the core's with flash
attention). GEMM efficiency by size: each matrix kernel takes a fixed time tau
(``gemm_latency``) besides its W FLOPs at ``peak eff``, so a GEMM runs at

    eff(W) = eff W / (W + W_half),      W_half = tau peak eff

(eff: the large-GEMM efficiency; with tau = 6.5 us an H100 at eff 0.6 halves its rate at
W_half = 3.9 GFLOP, a 1,250^3 GEMM). n_gemm per layer and micro-batch, forward: 4 on a dense
layer (QKV, output projection, fc1 with SwiGLU's gate and up fused, fc2), and on a MoE layer
3 + 2 E / e + 2 [S > 0] (attention's two, the router, fc1 and fc2 of each of the E / e local
experts, whose grouped GEMM runs at each expert's token count, and the shared experts' pair);
the backward twice as many. The attention core is one kernel with flash attention, two
unfused (scores and context); the logits one.
The GEMMs run at ``peak`` (fp8's under fp8), the attention core at the half-precision
``half_peak``: unfused, its full 4 s w_q FLOPs at the GEMM efficiency; flash (causal),
half of them at ``attention_efficiency``, and its backward 2.5 times its forward (5 products
to 2). fp8 casts every GEMM input: 3 bytes (read 2, write 1) per element of QKV's and fc1's
inputs (h), the output projection's (w_q) and fc2's (f; on MoE layers the k I dispatched
copies and the experts' (k I + S) f_e). The logits' GEMM also stays at ``half_peak``
(Megatron's output layer is not a Transformer Engine module). Recomputation adds to every layer's
backward the forward it re-runs (below).
With flash attention (``flash``, the default of today's stacks) the scores are never
written to memory: no score bytes in time or memory.

Collectives over a group of n GPUs whose members sit ``stride`` ranks apart (Megatron
orders ranks tp, cp, ep, dp, pp: TP stride 1, CP stride t, DP stride t c, PP stride
t c D). The group stays inside one NVLink domain of Q GPUs when stride n <= Q and then
runs at the NVLink bandwidth W (per GPU, one direction); otherwise its traffic leaves
the domain through the node's NICs, which the node's groups share: a group with
q = min(n, max(1, G / stride)) members on a node (G GPUs per node) gets q / G of them, as
the node's G / q such groups communicate at once. A ring over them carries its whole
volume across each node boundary, split over the group's NICs (NCCL's channels), so

    bw(n, stride) = W                                   inside a domain
                  = min(W, K beta u q / G)              across domains (K NICs of beta bit/s
                                                         each, utilization u; W only when q > 1)

which for a group spanning whole nodes (q = G) is netsweep's ``nccl-ring`` with
``--nics-per-node`` K, and for one member per node (TP of 8 on 8-GPU nodes) each GPU's
share of the node's NICs.
    all-reduce    = 2 (n - 1) / n X / bw + 2 (n - 1) lambda      (ring)
                  = 2 X / bw + 2 log2(n) lambda                  (tree; ``nccl`` takes the cheaper)
    reduce-scatter, all-gather, all-to-all = (n - 1) / n X / bw + (n - 1) lambda
    point-to-point = X / bw + lambda

with X each member's buffer in bytes and lambda the per-step latency of traffic that
leaves the domain (0 inside it).

Per layer and micro-batch, on the GPU's critical path:
- TP (Shoeybi et al. 2019; Korthikanti et al., MLSys'23): 2 all-reduces forward and
  2 backward (2 more with full recompute) of X = b s h bytes_act / c (with sequence
  parallelism each is a reduce-scatter plus an all-gather: the same time on a ring).
- CP (ring attention): c - 1 exchanges of the K and V chunk, X = 2 b (s / c) w_kv
  bytes_act / t, forward, and twice that backward, hidden behind the attention
  core's compute up to its length: exposed = max(0, exchange - core).
- EP: dispatch and combine all-to-alls forward and backward (4) of X = b s h k
  bytes_act I / (c t) on MoE layers, the (q_e - 1) / e share on NVLink and the rest on
  NICs (the slower sets the time). Every member sends its off-domain share at once, so
  each goes through its own K / G of the node's NICs, K beta u / G bytes/s (not a ring's
  q / G: that would credit one GPU with its group's NICs on the node).
- ZeRO-3 (FSDP): each layer's parameters all-gathered forward and backward and its
  gradients reduce-scattered, over the D c data-parallel GPUs, each behind the layer's
  compute: exposed = max(0, ag - t_f) + max(0, ag + rs - t_b).

Overlap switches (``overlap``, a sum of bits named after Megatron-Core's switches,
sweep.core.layout_axes.OVERLAP_BITS), per layer and micro-batch:
- grad_reduce (1, --overlap-grad-reduce): the data-parallel reduction runs FIFO behind the last
  micro-batch's backward (below); off, all of it starts when the stage's backward ends:
  exposed = max(0, n gamma + the embedding's - slack). Under ZeRO-3 it hides the reduce-scatters.
- param_gather (2, --overlap-param-gather; FSDP's prefetch): at ZeRO 1/2 the updated parameters'
  all-gather hides behind the first micro-batch's forward (off: all exposed); at ZeRO-3 each layer's
  gathers hide behind its forward and backward:
      exposed = max(0, ag [param] - t_f) + max(0, ag [param] + rs [grad] - t_b - recompute)
                + ag [not param] + rs [not grad]                    (twice ag: forward and backward)
- tp_comm (4, --tp-comm-overlap: Transformer Engine's userbuffers split each TP collective and its
  neighbouring GEMM into chunks): TP's forward collectives hide behind the linear layers' forward
  GEMMs G = b (s / c) (F - core) / (t peak eff), its backward ones behind 2 G (3 G with full
  recomputation): exposed = max(0, tp_f - G) + max(0, tp_b - 2 G).
- moe_a2a (8, --overlap-moe-expert-parallel-comm): a MoE layer's all-to-alls hide behind another
  micro-batch's forward and backward: exposed = max(0, ep - t_f - t_b).
The default, grad_reduce + param_gather, is what the model assumed before the switches existed.

Pipeline (Narayanan et al., SC'21, section 2.2): layers split as evenly as they go
(the first L mod p stages one more), the embedding on the first stage and the logits
on the last. A stage's time per micro-batch T_i = its layers' forward, backward,
recompute and exposed TP/CP/EP/ZeRO-3 time, plus 2 V point-to-point sends of the
b s h bytes_act / (c t) boundary activations (scatter/gather). The slowest stage
sets the pace:

    T_pipe = (m + (p - 1) / V) T_max,      bubble = (p - 1) / V T_max

Data parallelism (the paper's model, per stage): during the last micro-batch's
backward, each layer's gradients (grad_bytes per parameter) become ready in turn and
are reduced in FIFO order over the D c data-parallel GPUs (expert gradients over
D c / e), an all-reduce at ZeRO 0 and a reduce-scatter at ZeRO 1/2. For a run of n
identical layers, ready every beta_b seconds from time s0, with per-layer reduction
time gamma and the previous reduction ending at F, the recurrence
end_i = max(end_{i-1}, s0 + i beta_b) + gamma ends at

    end_n = max(F + n gamma, s0 + beta_b + n gamma, s0 + n beta_b + gamma)

(exact: the max of linear terms in i is reached at i = 1 or i = n). The segments are
the logits (last stage), the stage's layers, and the embedding (first stage); what
ends after the stage's backward is exposed, less the stage's slack in the pipeline
drain (stage i ends its backward i stage-backward times before the first). At
ZeRO 1/2 the updated parameters are all-gathered after the optimizer step, behind the
first micro-batch's forward (exposed: the excess). Optimizer step: 2 (8 + 2 M) bytes per
parameter the GPU updates (Adam reads and writes its fp32 master weight and gradient and its two
moments of M = ``moment_bytes`` each: 32 bytes in fp32, 24 with bf16 moments) at HBM
bandwidth. Stragglers and slowdown stretch every compute term by

    kappa = 1 + multi ((1 + slowdown) (1 + jitter e_N) - 1),     multi = [N > 1]

and ``overhead`` is added once per step when N > 1 (as :mod:`kernels.overlap`):

    iteration_time = T_pipe + dp_exposed + optimizer + multi overhead

Memory per GPU (Korthikanti et al., MLSys'23, section 4, Table 2, generalised to GQA,
gated MLPs and experts): weights, gradients and Adam states of the GPU's parameters
(P_w bytes_param + P grad_bytes + (4 + 2 M) P: 12 with fp32 moments, 8 with bf16 ones; grad_bytes as the
gradients are kept and reduced:
4 in fp32, 2 in bf16), what ZeRO shards divided by its group (optimizer states from 1,
gradients from 2, weights at 3): dense parameters over the D c data-parallel GPUs, expert
parameters over the expert data-parallel group D c t / (e etp) (Megatron-Core's expert
optimizer), and activations per layer and micro-batch of b (s / c) tokens

    A = b (s / c) h (u_ + s_ / t) + 5 a b (s / c) s / t     (no recompute; the score
                                                             term absent with flash attention)
    all  = 4 + (g + d + (2 + g) w_q / h + 4 w_kv / h) + ((L - L_e) mlp + L_e moe) / L
    mlp  = g + d + ((4 or 2) + g) f / h      (fc1's input and the dropout mask; fused SwiGLU
                                              saves only its 2f input, GELU its input, and
                                              fc2 its f input; 34 in all for GPT-3's shape)
    moe  = g + d + (g + 2) k I + ((4 or 2) + g) f_e (k I + S) / h   (k dispatched copies and
                                              expert outputs, the experts' MLPs on the busiest GPU)
    g = 2 bytes per GEMM input kept for the backward (1 under fp8: Transformer Engine keeps the
    fp8 cast), d = 1 for a model trained with dropout (its masks), else 0
    u_ = 4 + 2 (g + d), s_ = all - u_   (TP without SP: norms, block inputs, masks unsplit)
    u_ = 0,  s_ = all          (with SP, or t = 1)
    A_full = 2 b (s / c) h / (t if SP else 1)                       (full recompute)

Activation recomputation (``recompute``, a sum of bits: sweep.core.layout_axes.RECOMPUTE_BITS). Full (2)
keeps A_full and re-runs t_f (and the layer's two TP collectives). Otherwise each part keeps
A less what it drops, D (units of h bytes a token, over t unless said), and re-runs

    rerun = b (s / c) W / (t peak eff) + n tau + b (s / c) h D / hbm   (W FLOPs a token, n kernels)

    part (bit)                        D                                   W, n
    core_attn (1; "selective")        the score term (unfused)            the core's forward, as above
    layernorm (8)                     2 g (unsplit without SP)            0, 0
    up_proj (16; MLA's up-projection) (2 w_q + 4 w_kv) / h                2 h w_q + 4 h w_kv, 1
    mlp (32; dense layers)            (4 or 2 + g) f / h                  (6 or 4) h f, 2
    moe_act (64; MoE layers)          g f_e k I / h                       0, 0
    moe (128; MoE layers)             (g + 2) k I + (4 or 2 + g) f_e (k I + S) / h    the layer's expert
                                      and router work, 1 + 2 E / e + 2 [S > 0]; two more all-to-alls
    op (4; torchtitan)                keeps only 2 (h + 2 w_q + w_kv) + 2 (f + h) (dense) or
                                      2 (k I + S)(f_e + h) (MoE) a token: the block input, wq's, wv's,
                                      the attention kernel's, w1's and w2's outputs (every second
                                      matrix product); re-runs wk, wo, w3: 2 h (w_kv + w_q + f), 3

(mlp, moe and the MoE share weighted by the layers they apply to). up_proj, mlp and moe re-run one
of their layer's TP collectives (half a TP all-reduce's time); moe_act is moot under moe.

Activations are held for min(m, p) micro-batches on the first stage (Narayanan: p in flight under
1F1B), times 1 + (p - 1) / (p V) when interleaved, for all but ``offload_layers`` of a
stage's layers (Megatron-Core's --cpu-offloading-num-layers moves their activations to the
host; at least one layer stays; the copies are taken to hide behind compute), with each
micro-batch's token ids and embedding dropout mask b (s / c) (8 + d h) (/ t with SP) on the
first stage and the fp32
logits and output-layer input 4 b (s / c) (v + h) / t on the last (the terms of
Megatron-LM's theoretical_memory_usage.py). The larger stage must fit the usable memory,
``usable`` x the capacity the driver reports: ``fits``, and ``memory_free_gb`` what it
leaves (negative: what it lacks).

Outputs per configuration: ``iteration_time`` (s), ``tokens_per_s``, ``mfu`` (model
FLOPs 3 B s (L F + logits) over time x peak x N), ``tflops_per_gpu`` (model FLOPs),
``hardware_tflops_per_gpu`` (adds the recomputed forward, as SC'21 counts),
``memory_gb``, ``memory_free_gb``, ``fits``, ``status`` (0 = a layout that can exist, else the first rule
it breaks: :data:`STATUS`), and the breakdown ``compute``, ``recompute_time``,
``bubble``, ``tp_exposed``, ``cp_exposed``, ``ep_exposed``, ``pp_exposed``,
``dp_exposed``, ``optimizer``, ``overhead_time`` (they add up to ``iteration_time``;
the ``_time`` names keep clear of the ``recompute`` and ``overhead`` dims) and
``network_fraction``: the share of the step spent waiting on traffic that leaves the
NVLink domain; ``ep_on_nics`` 1 where the expert all-to-all is paced by the NICs (its group leaves
the NVLink domain and the off-domain share takes longer than the NVLink share), else 0.
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
    "experts not divisible by ep (or ep > 1 on a dense model)",
    "tp x dp x cp not divisible by ep",
    "sequence not divisible by 2 x cp",
    "interleaved schedule needs micro-batches divisible by pp (and pp > 1)",
    "tp x pp x cp x dp is not the GPU count",
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
    "network_fraction",
    "ep_on_nics",
)
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
Value = Any  # a float array of configurations, or a scalar that broadcasts with them
MASTER_BYTES = 4.0  # Adam's fp32 master weights, per parameter (its two moments: Device.moment_bytes each)


class Arch(NamedTuple):
    """A transformer (each field a float array). ``q_width`` = heads x the query-key head dimension,
    ``kv_width`` = KV heads x the same (K's width), ``v_width`` = KV heads x V's head dimension (= kv_width
    unless V's heads are narrower); ``q_rank``, ``kv_rank`` > 0: multi-head latent attention (MLA) with
    those down-projection widths and a shared rotary key of ``rope_width`` (0 otherwise); ``experts`` 0 is a
    dense model; ``gated`` 1 is SwiGLU; ``moe_layers`` L_e; ``dropout`` 1 keeps dropout masks."""

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


class Device(NamedTuple):
    """A GPU and its precision: matrix peak (FLOP/s), HBM (bytes/s), memory (bytes, as the driver reports
    it), bytes per element (gradients as kept and reduced), ``usable``: the fraction of the memory a
    training process can fill (the rest: the driver's reservation, the CUDA context, NCCL's buffers and the
    allocator's fragmentation), ``gemm_latency``: the fixed time of one matrix kernel (s), which sets how
    the efficiency of a GEMM falls with its size, and ``moment_bytes``: bytes of each of Adam's two moments
    (4 in fp32; 2 in bf16, Megatron-Core's precision-aware optimizer)."""

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


class Layout(NamedTuple):
    """How the step is split and what it runs on.

    gpus, tp, pp, cp, ep, dp (0 = gpus / (tp pp cp)), micro_batch, global_batch,
    chunks (V), recompute (0 none, 1 selective, 2 full), sequence_parallel (0/1),
    zero (0-3), flash (1: fused flash attention, scores never stored; 0: unfused), nvlink_domain (GPUs), nvlink_bw (bytes/s per GPU), gpus_per_node,
    nics_per_node, bandwidth (bit/s per NIC), utilization, latency (s), collective
    (0 ring, 1 tree, 2 nccl: the cheaper per message), efficiency (matrix), overhead
    (s), slowdown, straggle (jitter x e_N), imbalance (EP load factor >= 1), offload_layers (layers per stage
    whose activations are offloaded to the host), attention_efficiency (flash kernels), overlap (the stack's
    overlap switches, a sum of bits: 1 gradient reduce, 2 parameter gather, 4 TP communication, 8 expert
    all-to-all).
    """

    gpus: Value
    tp: Value
    pp: Value
    cp: Value
    ep: Value
    dp: Value
    micro_batch: Value
    global_batch: Value
    chunks: Value
    recompute: Value
    sequence_parallel: Value
    zero: Value
    flash: Value
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


def _bit(code: Value, value: float) -> Value:
    """Whether the bit ``value`` (a power of two) is set in a float ``code``."""
    return jnp.mod(jnp.floor(code / value), 2.0) > 0


def _divides(n: Value, d: Value) -> Value:
    return jnp.mod(n, jnp.maximum(d, 1)) == 0


def group_bandwidth(size: Value, stride: Value, lay: Layout) -> tuple[Value, Value]:
    """(bytes/s per member, crosses the NVLink domain) of a group of ``size`` GPUs ``stride`` ranks apart."""
    inside = (size <= 1) | (stride * size <= lay.nvlink_domain)
    on_node = jnp.clip(lay.gpus_per_node / jnp.maximum(stride, 1.0), 1.0, jnp.maximum(size, 1.0))
    nic = lay.nics_per_node * lay.bandwidth / 8.0 * lay.utilization * on_node / lay.gpus_per_node
    # Across domains the ring also takes NVLink hops between the members on one node, if there are several.
    across = jnp.where(on_node > 1, jnp.minimum(lay.nvlink_bw, nic), nic)
    return jnp.where(inside, lay.nvlink_bw, across), ~inside


def nic_per_gpu(lay: Layout) -> Value:
    """Bytes/s of one GPU's share of its node's NICs, when every GPU of the node sends at once."""
    return lay.nics_per_node * lay.bandwidth / 8.0 * lay.utilization / lay.gpus_per_node


def _steps_latency(steps: Value, crosses: Value, lay: Layout) -> Value:
    return jnp.where(crosses, steps * lay.latency, 0.0)


def all_reduce(nbytes: Value, size: Value, stride: Value, lay: Layout, ring_only: Value = False) -> Value:
    """Seconds for each of ``size`` GPUs to all-reduce ``nbytes`` (ring, tree or the cheaper: ``collective``;
    a ring where ``ring_only``)."""
    bw, crosses = group_bandwidth(size, stride, lay)
    n = jnp.maximum(size, 1.0)
    ring = 2.0 * (n - 1.0) / n * nbytes / bw + _steps_latency(2.0 * (n - 1.0), crosses, lay)
    tree = 2.0 * nbytes / bw + _steps_latency(2.0 * jnp.ceil(jnp.log2(n)), crosses, lay)
    chosen = jnp.where(
        lay.collective == 0, ring, jnp.where(lay.collective == 1, tree, jnp.minimum(ring, tree))
    )
    return jnp.where(n > 1, jnp.where(ring_only, ring, chosen), 0.0)


def scatter_or_gather(nbytes: Value, size: Value, stride: Value, lay: Layout) -> Value:
    """Seconds for a reduce-scatter or all-gather of a ``nbytes`` buffer (ring), or an all-to-all of it."""
    bw, crosses = group_bandwidth(size, stride, lay)
    n = jnp.maximum(size, 1.0)
    return jnp.where(n > 1, (n - 1.0) / n * nbytes / bw + _steps_latency(n - 1.0, crosses, lay), 0.0)


def fifo_end(prev_end: Value, start: Value, count: Value, ready_every: Value, duration: Value) -> Value:
    """End of the last of ``count`` identical reductions, ready at start + i ready_every (i = 1..count),
    each taking ``duration``, FIFO after one that ends at ``prev_end``; ``prev_end`` if count is 0."""
    end = jnp.maximum(
        jnp.maximum(prev_end + count * duration, start + ready_every + count * duration),
        start + count * ready_every + duration,
    )
    return jnp.where(count > 0, end, prev_end)


def step(arch: Arch, dev: Device, lay: Layout) -> dict[str, Value]:
    """Every output of :data:`OUTPUTS` for each configuration (the module docstring's equations)."""
    f32 = jnp.result_type(lay.bandwidth)
    L, h, a, g, f, v, s = arch.layers, arch.hidden, arch.heads, arch.kv_heads, arch.ffn, arch.vocab, arch.seq
    E, k, fe, S, Le = arch.experts, arch.top_k, arch.expert_ffn, arch.shared_experts, arch.moe_layers
    t, p, c, e, V = lay.tp, lay.pp, lay.cp, lay.ep, lay.chunks
    b, B = lay.micro_batch, lay.global_batch
    mats = jnp.where(arch.gated > 0, 3.0, 2.0)

    # --- which layouts can exist --------------------------------------------------------------------
    model_parallel = t * p * c
    dp = jnp.where(lay.dp > 0, lay.dp, jnp.floor(lay.gpus / model_parallel))
    gpus = jnp.where(lay.dp > 0, dp * model_parallel, lay.gpus)
    m = jnp.floor(B / jnp.maximum(b * dp, 1.0))
    rules = [
        ~_divides(gpus, model_parallel),
        ~_divides(a, t),
        ~_divides(g, t),
        L < p * V,
        ~_divides(B, b * dp) | (m < 1),
        jnp.where(E > 0, ~_divides(E, e), e > 1),
        ~_divides(t * dp * c, e),
        jnp.where(c > 1, ~_divides(s, 2.0 * c), False),
        (V > 1) & ((p < 2) | ~_divides(m, p)),
        (lay.dp > 0) & (lay.gpus > 0) & (gpus != lay.gpus),
    ]
    status = jnp.zeros(jnp.shape(rules[0]), jnp.int32)
    for code, broken in reversed(list(enumerate(rules, start=1))):
        status = jnp.where(broken, code, status)
    m = jnp.maximum(m, 1.0)
    dp = jnp.maximum(dp, 1.0)

    # --- work per layer and micro-batch on one GPU ----------------------------------------------------
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

    attn_params = attn_matrices + 2.0 * h + latent_norms
    dense_params = attn_params + (dense_layers * mats * h * f + Le * (S * mats * h * fe + h * E)) / L
    expert_params = Le * E * mats * h * fe / L  # per average layer
    # Experts: classic expert parallelism carves EP out of DP x CP and splits each expert over the TP group
    # (expert TP = t); when EP does not divide DP x CP, Megatron-Core's MoE parallel folding spans EP over
    # TP x CP x DP with whole experts (expert TP = 1). Their gradients are reduced over the rest.
    classic = _divides(dp * c, e)
    etp = jnp.where(classic, t, 1.0)
    expert_dp = t * dp * c / (e * etp)
    expert_stride = e * etp
    dense_gpu = (dense_params - down) / t + down  # one GPU's share of a layer's dense parameters
    layer_params = dense_gpu + expert_params / (etp * e)  # on one GPU
    embed_params = v * h / t

    sp = lay.sequence_parallel > 0
    # Activations per token, in units of h bytes. A GEMM's input is kept in g bytes (2; 1 under fp8, as
    # Transformer Engine keeps its fp8 cast for the backward), everything else in 2; dropout masks (1 each)
    # only where the model trains with dropout. MLP: fc1's input and the mask, then per f wide the saved
    # GELU input and fc2's input (2 + g), or fused SwiGLU's one saved input, the 2f-wide gate and up pair,
    # and fc2's input (4 + g: Megatron-Core's fused_bias_swiglu saves only its input).
    g_in, mask = dev.gemm_input_bytes, arch.dropout
    per_width = jnp.where(arch.gated > 0, 4.0, 2.0) + g_in
    mlp_act = g_in + mask + per_width * f / h
    # A MoE layer: each token's k dispatched copies (fc1's inputs) and k expert outputs (kept to combine
    # them), the routed and shared experts' MLPs at their width (imbalance I on the busiest GPU's tokens).
    moe_act = g_in + mask + (g_in + 2.0) * k * lay.imbalance + per_width * fe * (k * lay.imbalance + S) / h
    ffn_act = (dense_layers * mlp_act + Le * moe_act) / L
    # Attention: QKV's input and the mask; Q, K and V as flash attention keeps them; the output projection's input.
    attention_act = g_in + mask + 2.0 * (qw + kvw + vw) / h + g_in * ctx / h
    # MLA's latents, on every GPU of the TP group: each down projection's output (the norm's input, 2 bytes)
    # and the norm's output (the up projection's input, g).
    latent_bytes = tokens * (2.0 + g_in) * latent_norms
    total_lin = 4.0 + attention_act + ffn_act  # the two norms' inputs, attention, MLP: 34 for GPT-3's shape
    unsplit = jnp.where(sp | (t <= 1), 0.0, 4.0 + 2.0 * (g_in + mask))  # norms' and blocks' inputs, masks
    # Attention scores (softmax output, dropout mask and output: 5 a s^2 b bytes) exist only unfused; a
    # flash-attention kernel keeps them on chip (Dao et al., NeurIPS 2022).
    score_bytes = jnp.where(lay.flash > 0, 0.0, 5.0 * a * tokens * s / t)
    lin_bytes = tokens * h * (unsplit + (total_lin - unsplit) / t) + latent_bytes
    act_layer = lin_bytes + score_bytes  # activation bytes written by a layer's forward (no recompute)
    weight_bytes = layer_params * dev.param_bytes

    # The attention core never runs in fp8 in these stacks: at the half-precision peak. Unfused, it is two
    # batched GEMMs over every score (the GEMMs' efficiency); a causal flash kernel computes only the half of
    # the scores below the diagonal, at its own efficiency, and its backward takes 5 products to the
    # forward's 2 (Dao, FlashAttention-2, ICLR 2024, section 3.1).
    flash = lay.flash > 0
    core_rate = dev.half_peak * jnp.where(flash, lay.attention_efficiency, lay.efficiency)
    core_kernels = jnp.where(flash, 1.0, 2.0)  # one fused kernel, or two batched GEMMs (scores, context)
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
    t_f = (
        tokens * ((paced_flops - core_flops) / t + 2.0 * down * (1.0 - 1.0 / t)) / rate
        + layer_kernels * dev.gemm_latency
        + core_run
        + (act_layer + weight_bytes + cast_bytes) / dev.hbm
    ) * kappa
    core_time = (core_run + score_bytes / dev.hbm) * kappa
    t_b = 2.0 * t_f + jnp.where(flash, 0.5 * core_run * kappa, 0.0)

    # --- activation recomputation: what each mode drops from memory and re-runs in the backward ---------
    # A mode is a sum of bits (sweep.core.layout_axes.RECOMPUTE_BITS): 1 the attention core, 2 every layer,
    # 4 torchtitan's per-op policy, then Megatron-Core's --recompute-modules: 8 layernorm, 16 up_proj, 32 mlp,
    # 64 moe_act, 128 moe. Full recomputation overrides the rest.
    full = _bit(lay.recompute, 2.0)
    per_op = _bit(lay.recompute, 4.0) & ~full
    core_rc = _bit(lay.recompute, 1.0) & ~full
    norm_rc = _bit(lay.recompute, 8.0) & ~full
    up_rc = _bit(lay.recompute, 16.0) & ~full
    mlp_rc = _bit(lay.recompute, 32.0) & ~full
    moe_rc = _bit(lay.recompute, 128.0) & ~full
    act_rc = _bit(lay.recompute, 64.0) & ~full & ~moe_rc
    dense_share, moe_share = dense_layers / L, Le / L
    routed = k * lay.imbalance  # expert copies of a token on the busiest GPU
    # Bytes per token (units of h) each module no longer keeps: the two norms' outputs (unsplit under TP
    # without SP), Q, K and V (re-projected from the kept QKV input), the dense MLP's SwiGLU or GELU input and
    # fc2's input, the experts' fc2 inputs, or all of a MoE layer but its input.
    split_share = jnp.where(unsplit > 0, 1.0, 1.0 / t)
    drop_norm = 2.0 * g_in * split_share
    drop_up = 2.0 * (qw + kvw + vw) / h / t
    drop_mlp = dense_share * per_width * f / h / t
    drop_moe = moe_share * ((g_in + 2.0) * routed + per_width * fe * (routed + S) / h) / t
    drop_act = moe_share * g_in * fe * routed / h / t
    dropped = (
        jnp.where(norm_rc, drop_norm, 0.0)
        + jnp.where(up_rc, drop_up, 0.0)
        + jnp.where(mlp_rc, drop_mlp, 0.0)
        + jnp.where(moe_rc, drop_moe, 0.0)
        + jnp.where(act_rc, drop_act, 0.0)
    )
    # torchtitan's per-op policy keeps only the block input, the attention kernel's output and every second
    # matrix product's output (wq, wv, w1, w2 of a Llama block; each expert copy's w1 and w2), all in 2 bytes.
    op_ffn = dense_share * 2.0 * (f + h) / h + moe_share * 2.0 * (routed + S) * (fe + h) / h
    op_total = 2.0 + 2.0 * (qw + vw + ctx) / h + op_ffn
    op_unsplit = jnp.where(unsplit > 0, 2.0, 0.0)
    op_bytes = tokens * h * (op_unsplit + (op_total - op_unsplit) / t)
    module_bytes = lin_bytes - tokens * h * dropped + jnp.where(core_rc, 0.0, score_bytes)

    def rerun(flops: Value, kernels: Value, nbytes: Value) -> Value:  # a recomputed forward piece, in s
        return tokens * flops / t / rate + kernels * dev.gemm_latency + nbytes / dev.hbm

    moe_flops_paced = mats * 2.0 * h * fe * (routed + S) + 2.0 * h * E
    # FLOPs a token that each module re-runs: the up projections; torchtitan's wk, wo and w3 (the busiest
    # expert GPU's routed copies for the time, the model's k for the hardware FLOPs).
    up_flops = 2.0 * (q_up + kv_up)

    def per_op_flops(copies: Value) -> Value:
        return 2.0 * h * (kvw + ctx) + dense_share * 2.0 * h * f + moe_share * 2.0 * h * fe * (copies + S)

    op_flops = per_op_flops(routed)
    module_time = (
        jnp.where(core_rc | (per_op & ~flash), core_time / kappa, 0.0)
        + jnp.where(norm_rc, rerun(0.0, 0.0, tokens * h * drop_norm), 0.0)
        + jnp.where(up_rc, rerun(up_flops, 1.0, tokens * h * drop_up), 0.0)
        + jnp.where(mlp_rc, rerun(dense_share * mlp_flops, 2.0 * dense_share, tokens * h * drop_mlp), 0.0)
        + jnp.where(
            moe_rc,
            rerun(moe_share * moe_flops_paced, moe_share * moe_ffn_kernels, tokens * h * drop_moe),
            0.0,
        )
        + jnp.where(act_rc, rerun(0.0, 0.0, tokens * h * drop_act), 0.0)
        + jnp.where(
            per_op,
            rerun(
                op_flops,
                3.0 * dense_share + moe_share * (2.0 + E / jnp.maximum(e, 1.0)),
                act_layer - op_bytes,
            ),
            0.0,
        )
    )
    recompute = jnp.where(full, t_f, module_time * kappa)
    act_recomputed = jnp.where(per_op, op_bytes, module_bytes)  # kept per layer and micro-batch, unless full

    # --- communication per layer and micro-batch ------------------------------------------------------
    x_tp = tokens * h * dev.act_bytes
    tp_ar = all_reduce(x_tp, t, 1.0, lay, ring_only=sp)  # with SP: reduce-scatter + all-gather, a ring
    tp_forward = 2.0 * tp_ar
    # Full recomputation re-runs a layer's two TP collectives; a recomputed QKV projection, dense MLP or MoE
    # layer re-runs the one at its entry (SP's all-gather) or exit (the all-reduce), half an all-reduce's time.
    tp_reruns = (
        jnp.where(full, 2.0, 0.0)
        + 0.5 * jnp.where(up_rc, 1.0, 0.0)
        + 0.5 * jnp.where(mlp_rc, dense_share, 0.0)
        + 0.5 * jnp.where(moe_rc, moe_share, 0.0)
    )
    tp_backward = tp_ar * (2.0 + tp_reruns)
    # Overlap switches (a sum of bits, sweep.core.layout_axes.OVERLAP_BITS): 1 the gradient reduce behind the
    # backward, 2 the parameter gather behind the forward (Megatron-Core's --overlap-grad-reduce and
    # --overlap-param-gather), 4 TP communication behind the GEMMs beside it (--tp-comm-overlap: Transformer
    # Engine's userbuffers pipeline each collective with its neighbouring GEMM in chunks), 8 the expert
    # all-to-alls behind another micro-batch's compute (--overlap-moe-expert-parallel-comm).
    grad_overlap = _bit(lay.overlap, 1.0)
    param_overlap = _bit(lay.overlap, 2.0)
    tp_overlap = _bit(lay.overlap, 4.0)
    a2a_overlap = _bit(lay.overlap, 8.0)
    linear_forward = tokens * ((paced_flops - core_flops) / t + 2.0 * down * (1.0 - 1.0 / t)) / rate * kappa
    tp_forward = jnp.where(tp_overlap, jnp.maximum(0.0, tp_forward - linear_forward), tp_forward)
    # The backward's GEMMs are twice the forward's; full recomputation adds the recomputed forward's.
    behind_backward = linear_forward * (2.0 + jnp.where(full, 1.0, 0.0))
    tp_backward = jnp.where(tp_overlap, jnp.maximum(0.0, tp_backward - behind_backward), tp_backward)
    tp_layer = tp_forward + tp_backward
    _, tp_cross = group_bandwidth(t, 1.0, lay)

    kv_chunk = tokens * (kvw + vw) * dev.act_bytes / t
    cp_bw, cp_cross = group_bandwidth(c, t, lay)
    cp_step = kv_chunk / cp_bw + jnp.where(cp_cross, lay.latency, 0.0)
    cp_forward = jnp.where(c > 1, jnp.maximum(0.0, (c - 1.0) * cp_step - core_time), 0.0)
    cp_backward = jnp.where(c > 1, jnp.maximum(0.0, 2.0 * (c - 1.0) * cp_step - 2.0 * core_time), 0.0)
    cp_layer = cp_forward + cp_backward

    x_ep = tokens * h * k * dev.act_bytes * lay.imbalance / t
    ep_stride = jnp.where(classic, t * c, 1.0)  # EP after TP and CP in rank order, or spanning them
    ep_near = jnp.clip(lay.nvlink_domain / ep_stride, 1.0, jnp.maximum(e, 1.0))  # members in one domain
    # Unlike a ring's one stream per node boundary, an all-to-all sends every member's off-domain share at
    # once, each GPU through its own share of the node's NICs: K / G of them, however many of its group
    # share the node.
    nic_ep = nic_per_gpu(lay)
    inter_share = (e - ep_near) / jnp.maximum(e, 1.0)
    intra_share = (ep_near - 1.0) / jnp.maximum(e, 1.0)
    a2a_inter = inter_share * x_ep / nic_ep + jnp.where(inter_share > 0, (e - ep_near) * lay.latency, 0.0)
    a2a = jnp.where(e > 1, jnp.maximum(intra_share * x_ep / lay.nvlink_bw, a2a_inter), 0.0)
    ep_layer = (4.0 + jnp.where(moe_rc, 2.0, 0.0)) * a2a * Le / L  # a recomputed MoE layer dispatches again
    ep_layer = jnp.where(a2a_overlap, jnp.maximum(0.0, ep_layer - (t_f + t_b)), ep_layer)
    ep_waits_on_nic = (e > 1) & (inter_share > 0) & (a2a_inter >= intra_share * x_ep / lay.nvlink_bw)

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
    z3_forward = jnp.maximum(0.0, ag_hidden - t_f) + ag3 - ag_hidden
    z3_backward = (
        jnp.maximum(0.0, ag_hidden + rs_hidden - t_b - recompute) + ag3 - ag_hidden + rs3 - rs_hidden
    )
    z3_layer = jnp.where(zero >= 3, z3_forward + z3_backward, 0.0)
    _, dp_cross = group_bandwidth(dp_group, t, lay)

    # --- stages ------------------------------------------------------------------------------------
    base = jnp.floor(L / p)
    extra = L - base * p  # the first `extra` stages hold one more layer
    n_first = base + jnp.where(extra > 0, 1.0, 0.0)
    n_last = jnp.where(p > 1, base + jnp.where(extra >= p, 1.0, 0.0), n_first)
    n_mid = base + jnp.where(extra > 1, 1.0, 0.0)  # stage 1, when p > 2
    embed_time = 3.0 * tokens * h * dev.act_bytes / dev.hbm * kappa
    # The output layer is Megatron's own ColumnParallelLinear, not Transformer Engine's: never in fp8.
    logits_f = (
        tokens * logits_flops / t / (dev.half_peak * lay.efficiency)
        + dev.gemm_latency
        + 4.0 * tokens * v / t * 2.0 / dev.hbm
    ) * kappa
    logits_b = 2.0 * logits_f
    x_pp = tokens * h * dev.act_bytes / t
    pp_bw, pp_cross = group_bandwidth(p, t * c * dp, lay)
    pp_micro = jnp.where(p > 1, 2.0 * V * (x_pp / pp_bw + jnp.where(pp_cross, lay.latency, 0.0)), 0.0)

    per_layer = {
        "compute": t_f + t_b,
        "recompute_time": recompute,
        "tp_exposed": tp_layer,
        "cp_exposed": cp_layer,
        "ep_exposed": ep_layer,
        "dp_exposed": z3_layer,
    }

    def stage(n: Value, first: Value, last: Value) -> dict[str, Value]:
        parts = {key: n * val for key, val in per_layer.items()}
        parts["compute"] = (
            parts["compute"] + jnp.where(first, embed_time, 0.0) + jnp.where(last, logits_f + logits_b, 0.0)
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

    bubble_steps = (p - 1.0) / V
    out = {key: m * val for key, val in slow.items()}
    bubble = bubble_steps * t_max

    # --- data-parallel synchronisation during the last micro-batch's backward -------------------------
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

    dp_sync = exposed(n_first, True, is_one, 0.0)
    dp_sync = jnp.maximum(dp_sync, jnp.where(exists[1], exposed(n_mid, False, False, n_mid * beta), 0.0))
    dp_sync = jnp.maximum(
        dp_sync, jnp.where(exists[2], exposed(n_last, False, True, (p - 1.0) * n_last * beta), 0.0)
    )
    dp_sync = jnp.where((zero >= 3) | (dp_group <= 1), 0.0, dp_sync)
    # The first stage holds the embedding (and, alone in the pipeline, an untied output layer); the last
    # holds the output layer (Megatron keeps a copy of tied embeddings there). Dense parameters are sharded
    # over the dp x cp GPUs, expert parameters over the expert data-parallel group (Megatron-Core's
    # expert optimizer: world / (etp ep pp) GPUs).
    dense_layer, expert_layer = dense_gpu, expert_params / (etp * e)
    first_dense = n_first * dense_layer + embed_params * (1.0 + jnp.where(is_one, untied, 0.0))
    last_dense = n_last * dense_layer + embed_params
    first_is_larger = (first_dense + n_first * expert_layer >= last_dense + n_last * expert_layer) | ~exists[
        2
    ]
    stage_dense = jnp.where(first_is_larger, first_dense, last_dense)
    stage_expert = jnp.where(first_is_larger, n_first, n_last) * expert_layer
    gather = scatter_or_gather(stage_dense * dev.param_bytes, dp_group, t, lay) + scatter_or_gather(
        stage_expert * dev.param_bytes, expert_dp, expert_stride, lay
    )
    hidden_gather = jnp.where(param_overlap, jnp.maximum(0.0, gather - n_first * t_f), gather)
    gather_exposed = jnp.where((zero >= 1) & (zero < 3), hidden_gather, 0.0)
    out["dp_exposed"] = out["dp_exposed"] + dp_sync + gather_exposed

    shard = jnp.where(zero >= 1, dp_group, 1.0)
    expert_shard = jnp.where(zero >= 1, expert_dp, 1.0)
    # Adam reads and writes its master weights, gradient (fp32) and moments: 2 (4 + 4 + 2 moment_bytes) bytes.
    adam_states = MASTER_BYTES + 2.0 * dev.moment_bytes
    optimizer = (
        2.0 * (adam_states + 4.0) * (stage_dense / shard + stage_expert / expert_shard) / dev.hbm * kappa
    )
    overhead = jnp.where(gpus > 1, lay.overhead, 0.0)
    out.update(bubble=bubble, optimizer=optimizer, overhead_time=overhead)
    iteration: Value = sum(out[key] for key in BREAKDOWN)

    # --- what the step achieves --------------------------------------------------------------------
    # Work per GPU in TFLOP: the step's FLOP count of the largest accepted shape (1e7 layers, widths and
    # tokens, a batch of 1e9) is 1e39, past float32's 3.4e38; per GPU in TFLOP it is at most about 1e27.
    step_tokens = B * s
    gpu_tokens = step_tokens / gpus
    model_tflop = 3.0 * gpu_tokens * ((L * layer_flops + logits_flops) / 1e12)
    recompute_tflop = (
        gpu_tokens
        * (L / 1e12)
        * jnp.where(
            full,
            layer_flops,
            jnp.where(core_rc | (per_op & ~flash), core_flops, 0.0)
            + jnp.where(up_rc, up_flops, 0.0)
            + jnp.where(mlp_rc, dense_share * mlp_flops, 0.0)
            + jnp.where(moe_rc, moe_share * moe_flops, 0.0)
            + jnp.where(per_op, per_op_flops(k), 0.0),
        )
    )
    network = (
        jnp.where(tp_cross, out["tp_exposed"], 0.0)
        + jnp.where(cp_cross, out["cp_exposed"], 0.0)
        + jnp.where(ep_waits_on_nic, out["ep_exposed"], 0.0)
        + jnp.where(pp_cross, out["pp_exposed"], 0.0)
        + jnp.where(dp_cross, out["dp_exposed"], 0.0)
    )

    # --- memory per GPU ------------------------------------------------------------------------------
    def states_per_param(group: Value) -> Value:  # bytes per parameter sharded over ``group`` by ZeRO
        return (
            dev.param_bytes / jnp.where(zero >= 3, group, 1.0)
            + dev.grad_bytes / jnp.where(zero >= 2, group, 1.0)
            + adam_states / jnp.where(zero >= 1, group, 1.0)
        )

    states = stage_dense * states_per_param(dp_group) + stage_expert * states_per_param(expert_dp)
    act_full = 2.0 * tokens * h / jnp.where(sp, t, 1.0)
    act_kept = jnp.where(full, act_full, act_recomputed)
    in_flight = jnp.minimum(m, p) * jnp.where(V > 1, 1.0 + (p - 1.0) / (p * V), 1.0)
    # The first stage also keeps each micro-batch's token ids (8 bytes) and embedding dropout mask (h bytes);
    # the last, the fp32 logits and the fp32 input of the output layer.
    embed_act = in_flight * tokens * (8.0 + h * mask) / jnp.where(sp, t, 1.0)
    head_act = 4.0 * tokens * (v + h) / t

    def on_gpu(n: Value) -> Value:  # a stage's layers whose activations stay (the rest offloaded to the CPU)
        return n - jnp.clip(lay.offload_layers, 0.0, jnp.maximum(n - 1.0, 0.0))

    activations = jnp.maximum(
        on_gpu(n_first) * act_kept * in_flight + embed_act,
        on_gpu(n_last) * act_kept * jnp.where(is_one, in_flight, 1.0)
        + head_act
        + jnp.where(is_one, embed_act, 0.0),
    )
    gathered = jnp.where(zero >= 3, 2.0 * layer_params * dev.param_bytes, 0.0)  # this layer's and the next's
    memory = states + gathered + activations

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
        ep_on_nics=ep_waits_on_nic.astype(f32),
    )
    result = {key: jnp.where(ok, val, nan).astype(f32) for key, val in result.items()}
    result["fits"] = jnp.where(ok, (memory <= dev.usable * dev.memory).astype(f32), nan).astype(f32)
    result["status"] = status
    return result
