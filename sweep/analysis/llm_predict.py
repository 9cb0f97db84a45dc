"""Each large-model run's published metric, predicted in its source's own units and FLOP counting.

``s_per_iter`` (``flops`` ``time``): the iteration time. ``tokens_per_s_per_GPU`` (``tokens``): global
tokens per second over the GPUs. ``model_TFLOPs_per_GPU`` and Megatron-LM's ``TFLOPs_per_GPU``
(``megatron``): model FLOPs as :mod:`kernels.layout` counts them, over time and GPUs. Narayanan et al.'s
``TFLOPs_per_GPU`` (``sc21-eq3``): their eq. 3, ``96 B s l h^2 (1 + s / 6h + v / 16 l h)``, which counts a
recomputed forward (:func:`source_flops`), over time and GPUs. The protocol is
:mod:`sweep.analysis.llm_validation`'s.
"""

from collections.abc import Sequence

import numpy as np

from netsweep_jax.sweep.engine.compiled import LAYOUT_RUN_METRICS
from netsweep_jax.sweep.engine.layouts import evaluate_rows
from netsweep_jax.sweep.io.runs import Run, settings
from netsweep_jax.sweep.model.compute import EFFICIENCY, GPUS


def die(gpu: str) -> str:
    """The GPU preset whose fitted matrix efficiency ``gpu`` shares (its ``die``, or itself)."""
    return GPUS[gpu].die or gpu


def source_flops(run: Run) -> float:
    """FLOPs per iteration as the run's source counts them (``sc21-eq3``; 0 for other rules)."""
    if run.flops != "sc21-eq3":
        return 0.0
    m = run.llm
    B, s, L, h, v = run.global_batch, m.seq, m.layers, m.hidden, m.vocab
    return 96.0 * B * s * L * h * h * (1 + s / (6 * h) + v / (16 * L * h))


def predict(runs: Sequence[Run], efficiency: dict[str, float], utilization: float) -> dict[str, np.ndarray]:
    """Each run's predicted metric (``predicted``) and the model's outputs, with the given constants."""
    rows = [settings(r)[0] for r in runs]
    eff = np.array([efficiency.get(die(r.gpu), EFFICIENCY) for r in runs])
    out = evaluate_rows(rows, eff, np.full(len(runs), utilization))
    out["predicted"] = metric(runs, out["iteration_time"], out["tflops_per_gpu"])
    return out


def metric_terms(runs: Sequence[Run]) -> tuple[np.ndarray, np.ndarray]:
    """Each run's metric as the layout kernel's outputs give it: ([R] int, an index into
    :data:`~sweep.engine.compiled.LAYOUT_RUN_METRICS`; [R] the count per step ``count_per_s`` divides by the
    iteration time: tokens over the GPUs, or TFLOP per GPU by eq. 3, else 0)."""
    rule = {"time": "iteration_time", "sc21-eq3": "count_per_s", "tokens": "count_per_s"}
    code = np.array([LAYOUT_RUN_METRICS.index(rule.get(r.flops, "tflops_per_gpu")) for r in runs], np.int32)
    count = np.array(
        [
            source_flops(r) / r.gpus / 1e12
            if r.flops == "sc21-eq3"
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
