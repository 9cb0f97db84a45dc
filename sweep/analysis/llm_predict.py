"""Each large-model run's published metric, predicted in its source's own units and FLOP counting.

``s_per_iter`` (``flops`` ``time``): the iteration time. ``tokens_per_s_per_GPU`` (``tokens``): global
tokens per second over the GPUs. ``model_TFLOPs_per_GPU`` and Megatron-LM's ``TFLOPs_per_GPU`` of before
2025-03-06 (``megatron``): model FLOPs as :mod:`kernels.layout` counts them, over time and GPUs. Narayanan et al.'s
``TFLOPs_per_GPU`` (``sc21-eq3``): their eq. 3, ``96 B s l h^2 (1 + s / 6h + v / 16 l h)``, which counts a
recomputed forward (:func:`source_flops`), over time and GPUs. Megatron-Bridge's tables of 2025 and Megatron-LM's
count since 2025-03-06 (``megatron-causal``): its own count (:func:`megatron_causal_flops`: the attention core's causal half, no router),
over time and GPUs. The protocol is
:mod:`sweep.analysis.llm_validation`'s.
"""

from collections.abc import Mapping, Sequence

import numpy as np

from netsweep_jax.sweep.core.layout_axes import AXES
from netsweep_jax.sweep.engine.compiled import LAYOUT_RUN_METRICS
from netsweep_jax.sweep.engine.layouts import evaluate_rows
from netsweep_jax.sweep.io.runs import Run, settings
from netsweep_jax.sweep.model.compute import EFFICIENCY, die

# Models whose gated MLP Megatron-Core runs with an activation other than SiLU (gpt-oss: quick_gelu, Megatron-Bridge's
# GPTOSSProvider), which Megatron-Bridge's FLOP count takes for 2 matrices (its 3/2 factor needs F.silu).
GATED_NOT_SILU = ("gpt-oss-120b",)


def megatron_causal_flops(run: Run) -> float:
    """Forward FLOPs per token as Megatron-Bridge counts them (``megatron-causal``: ``num_floating_point_operations``
    of ``src/megatron/bridge/training/utils/flop_utils.py`` from v0.2.0rc5, 2025-09-27, which the 25.09 and 25.11
    performance tables use; Megatron-LM's since 2025-03-06). The attention core counted for the causal half,
    the router not counted, a gated MLP 3 matrices only with SiLU; each of the D multi-token-prediction depths
    the run trains one more layer (a MoE layer where the model has any: DeepSeek-V3's last layer is), its norms
    and projection, and the logits again (``mtp_num_layers``):

        plain attention   4 h a d (1 + g / a) + 2 s a d
        MLA               2 (q + c (h + a (d_qk + d_v) + 1) + h d_r + a d_v h) + s a (d_qk + d_r + d_v),
                          q = r (h + a (d_qk + d_r) + 1), or h a (d_qk + d_r) without a query down-projection
                          (r = 0: Megatron-LM's ``q_lora_rank`` None, DeepSeek-V2-Lite's shape)
        MLP               2 h f x (3 gated with SiLU, else 2);  MoE: 2 h f_e (k + S) x (3 or 2)
        MTP               2 (3 h + 2 h^2)
        per token         (L + D) attention + (L - L_e) MLP + (L_e + D) MoE + D MTP + (1 + D) 2 h v
                          (a dense model's D layers MLPs)
    """
    m = run.trained
    D = m.mtp_layers
    L, h, a, s, v = m.layers, m.hidden, m.heads, m.seq, m.vocab
    d = m.head_dim or h // a
    if m.q_rank or m.kv_rank:
        dr, dv, r, c = m.rope_dim, m.v_head_dim or d, m.q_rank, m.kv_rank
        dqk = d - dr  # the preset's head_dim includes the rotary part
        # the query's projections: through its down-projection of rank r, or one h x a (d_qk + d_r) matrix (a
        # fact-check: r = 0 had counted no query projection, 22% under Megatron-LM's count)
        query = r * (h + a * (dqk + dr) + 1) if r else h * a * (dqk + dr)
        attention = 2.0 * (query + c * (h + a * (dqk + dv) + 1) + h * dr + a * dv * h) + s * a * (
            dqk + dr + dv
        )
    else:
        g = m.kv_heads or a
        attention = 4.0 * h * a * d * (1 + g / a) + 2.0 * s * a * d
    matrices = 3.0 if m.mlp == "swiglu" and run.model not in GATED_NOT_SILU else 2.0
    dense = 2.0 * h * m.ffn * matrices
    moe = 2.0 * h * m.expert_ffn * (m.top_k + m.shared_experts) * matrices
    last = moe if m.moe_layers else dense  # the layer each MTP depth repeats
    return (
        (L + D) * attention
        + (L - m.moe_layers) * dense
        + m.moe_layers * moe
        + D * (last + 2.0 * (3.0 * h + 2.0 * h * h))
        + (1 + D) * 2.0 * h * v
    )


def source_flops(run: Run) -> float:
    """FLOPs per iteration as the run's source counts them (``sc21-eq3``, ``megatron-causal``; 0 for other
    rules)."""
    m = run.llm
    B, s, L, h, v = run.global_batch, m.seq, m.layers, m.hidden, m.vocab
    if run.flops == "megatron-causal":
        return 3.0 * B * s * megatron_causal_flops(run)
    if run.flops != "sc21-eq3":
        return 0.0
    return 96.0 * B * s * L * h * h * (1 + s / (6 * h) + v / (16 * L * h))


def efficiency_of(efficiency: Mapping[str, float], stack: str, gpu_die: str) -> float:
    """The matrix efficiency a run of stack preset ``stack`` on GPU die ``gpu_die`` takes from ``efficiency``
    (keys ``stack/die`` or ``die``): its stack's on the die, else the die's, else the documented default."""
    return efficiency.get(f"{stack}/{gpu_die}", efficiency.get(gpu_die, EFFICIENCY))


def predict(
    runs: Sequence[Run],
    efficiency: Mapping[str, float],
    utilization: float,
    memory_efficiency: float = float(AXES["memory_efficiency"].default),
) -> dict[str, np.ndarray]:
    """Each run's predicted metric (``predicted``) and the model's outputs, with the given constants
    (``efficiency``: :func:`efficiency_of` each run's)."""
    rows = [settings(r)[0] for r in runs]
    eff = np.array([efficiency_of(efficiency, r.preset, die(r.gpu)) for r in runs])
    out = evaluate_rows(
        rows, eff, np.full(len(runs), utilization), memory_efficiency=np.full(len(runs), memory_efficiency)
    )
    out["predicted"] = metric(runs, out["iteration_time"], out["tflops_per_gpu"])
    return out


def metric_terms(runs: Sequence[Run]) -> tuple[np.ndarray, np.ndarray]:
    """Each run's metric as the layout kernel's outputs give it: ([R] int, an index into
    :data:`~sweep.engine.compiled.LAYOUT_RUN_METRICS`; [R] the count per step ``count_per_s`` divides by the
    iteration time: tokens over the GPUs, or TFLOP per GPU by eq. 3, else 0)."""
    rule = {
        "time": "iteration_time",
        "sc21-eq3": "count_per_s",
        "megatron-causal": "count_per_s",
        "tokens": "count_per_s",
    }
    code = np.array([LAYOUT_RUN_METRICS.index(rule.get(r.flops, "tflops_per_gpu")) for r in runs], np.int32)
    count = np.array(
        [
            source_flops(r) / r.gpus / 1e12
            if r.flops in ("sc21-eq3", "megatron-causal")
            else r.global_batch * r.llm.seq / r.gpus
            if r.flops == "tokens"
            else 0.0
            for r in runs
        ],
        np.float64,
    )
    return code, count


def metric(runs: Sequence[Run], time: np.ndarray, model_tflops: np.ndarray) -> np.ndarray:
    """The metric each run's source reports, from predicted iteration times [R, ...] (:func:`metric_terms`)."""
    extra = (1,) * (time.ndim - 1)
    code, count = (a.reshape(-1, *extra) for a in metric_terms(runs))
    return np.select(
        [code == LAYOUT_RUN_METRICS.index("iteration_time"), code == LAYOUT_RUN_METRICS.index("count_per_s")],
        [time, count / time],
        model_tflops,
    )
