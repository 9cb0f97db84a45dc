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


def metric(runs: Sequence[Run], time: np.ndarray, model_tflops: np.ndarray) -> np.ndarray:
    """The metric each run's source reports, from predicted iteration times [R, ...]."""
    extra = (1,) * (time.ndim - 1)
    kind = np.array([r.flops for r in runs]).reshape(-1, *extra)
    eq3 = np.array([source_flops(r) / r.gpus / 1e12 for r in runs]).reshape(-1, *extra)
    tokens = np.array([r.global_batch * r.llm.seq / r.gpus for r in runs]).reshape(-1, *extra)
    return np.select(
        [kind == "time", kind == "sc21-eq3", kind == "tokens"],
        [time, eq3 / time, tokens / time],
        model_tflops,
    )
