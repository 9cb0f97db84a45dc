"""The layout model's few global constants fitted to large-model runs, and the runs predicted with them.

The constants: the matrix efficiency of each GPU die (a preset's ``die`` maps the H200 and other parts of
one chip to it) and one NIC utilization. :func:`fit` minimizes the mean squared log(predicted / measured)
over the training runs (dense models only) with the project's fitter (:func:`kernels.fit.fit_model`, jitted
as :func:`sweep.engine.compiled.fit_layout_runs`), as ``calibrate`` fits the data-parallel model: each
constant bounded by a sigmoid, the best of several starting points under the model, then Adam steps through
the layout kernel, keeping the constants of the lowest loss. The starting points are a coarse grid's best:
for each utilization of :data:`UTILIZATIONS`, each die's best efficiency of :data:`EFFICIENCIES`. A constant
no training run depends on keeps its documented default (efficiency 0.6, utilization 1). The utilization can
instead be held at a measured value (``sweep validate --llm`` holds it at :data:`NIC_UTILIZATION`).
A :class:`Validation` holds every run's predictions under each model (:data:`MODELS`) and their errors.
"""

import dataclasses
import math
from collections.abc import Sequence

import jax
import numpy as np

from netsweep_jax.kernels import fit as fitter
from netsweep_jax.sweep.analysis.llm_predict import die, metric, metric_terms
from netsweep_jax.sweep.core.layout_axes import (
    BREAKDOWN,
    waits_on,
)
from netsweep_jax.sweep.engine.compiled import (
    fit_layout_runs,
)
from netsweep_jax.sweep.engine.layout_rows import row_columns
from netsweep_jax.sweep.engine.layouts import LayoutRow, evaluate_rows
from netsweep_jax.sweep.io.runs import Run, settings
from netsweep_jax.sweep.model.compute import EFFICIENCY, GPUS

# The starting points' coarse grid (efficiency in steps of 0.02, utilization in 40 log steps from 0.02 to 1),
# whose ranges are the constants' bounds; then STEPS Adam steps of LEARNING_RATE (unconstrained units).
EFFICIENCIES = np.round(np.arange(0.10, 1.0 + 1e-9, 0.02), 6)
UTILIZATIONS = np.geomspace(0.02, 1.0, 40)
STEPS = 300
LEARNING_RATE = 0.02
UTILIZATION_DEFAULT = 1.0
# The share of its NICs' line rate NCCL's collectives reach, as measured and not fitted: NCCL's maintainers expect
# 46-48 GB/s of bus bandwidth per 400 Gbit/s NDR NIC (NVIDIA/nccl-tests#290, 2025-03-03: 0.92-0.96 of 50 GB/s); on
# 3 DGX-like A100 nodes with 4 HDR NICs each, all_reduce_perf averaged 84.8 and peaked at 96 of 100 GB/s
# (NVIDIA/nccl-tests#119, 2022-11-17). The lower end of the maintainers' range.
NIC_UTILIZATION = 0.92
MODELS = ("defaults", "trained", "in-sample")
# The fitted vector: the utilization, then every GPU die's efficiency (a die no training run uses held at its
# default), and the rows padded to a multiple of ROW_QUANTUM: every fit of up to ROW_QUANTUM runs (and every
# fit of a size) shares one compile.
DIES = tuple(sorted({g.die or name for name, g in GPUS.items()}))
ROW_QUANTUM = 64


@dataclasses.dataclass(frozen=True)
class Fit:
    """Constants of one model: efficiency per GPU, one utilization, and which were fitted."""

    name: str
    efficiency: dict[str, float]
    utilization: float
    fitted: tuple[str, ...]
    rows: tuple[str, ...]  # the ids it was fitted on
    held: str = "default"  # what an unfitted utilization is: its default, or a measured value held

    def describe(self) -> str:
        eff = ", ".join(
            f"{g} {e:.4g}{'' if f'efficiency {g}' in self.fitted else ' (default)'}"
            for g, e in sorted(self.efficiency.items())
        )
        util = f"{self.utilization:.3g}{'' if 'utilization' in self.fitted else f' ({self.held})'}"
        return f"efficiency {eff}; utilization {util}"


def _loss(
    rows: list[LayoutRow],
    runs: Sequence[Run],
    measured: np.ndarray,
    efficiency: np.ndarray,
    utilization: np.ndarray,
) -> np.ndarray:
    """Squared log errors [R, K] of ``rows`` for K candidate constants ([R, K] each); 1e6 where undefined
    (:func:`kernels.fit.mean_square`'s terms)."""
    out = evaluate_rows(rows, efficiency, utilization, outputs=("iteration_time", "tflops_per_gpu"))
    err = np.log(metric(runs, out["iteration_time"], out["tflops_per_gpu"]) / measured[:, None]) ** 2
    return np.where(np.isfinite(err), err, fitter.UNDEFINED)


def fit_inputs(
    runs: Sequence[Run], quantum: int = ROW_QUANTUM
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], np.ndarray, np.ndarray, np.ndarray]:
    """The runs as :func:`~sweep.engine.compiled.fit_layout_runs` takes them: (cell, layout, die [R] (an index
    into :data:`DIES`), metric [R], count [R]), padded to a multiple of ``quantum`` rows by repeating the first
    (the fit gives them weight 0)."""
    total = len(runs) + (-len(runs) % quantum)
    pad = np.where(np.arange(total) < len(runs), np.arange(total), 0)  # the run each padded row repeats
    cell, layout = row_columns([settings(r)[0] for r in runs])
    code, count = metric_terms(runs)
    die_index = np.array([DIES.index(die(r.gpu)) for r in runs], np.int32)
    return (
        {k: v[pad] for k, v in cell.items()},
        {k: v[pad] for k, v in layout.items()},
        die_index[pad],
        code[pad],
        count[pad],
    )


def fit_constants(
    runs: Sequence[Run], starts: np.ndarray, lows: np.ndarray, highs: np.ndarray, steps: int = STEPS
) -> tuple[np.ndarray, float]:
    """The fitter on ``runs`` (each with a measured value): the constants [P] (the utilization, then each die of
    :data:`DIES`' efficiency) of the lowest mean squared log(predicted / measured), and that loss. ``starts``
    [S, P]: starting values; ``lows``, ``highs`` [P]: each constant's bounds (equal: held there)."""
    inputs = fit_inputs(runs)
    weights = (np.arange(len(inputs[2])) < len(runs)).astype(np.float64)
    target = np.ones(len(weights))
    target[: len(runs)] = [r.value for r in runs]
    with jax.enable_x64(True):
        best, loss = fit_layout_runs(
            fitter.unbounded(starts, lows, highs),
            *inputs,
            target,
            weights,
            lows,
            highs,
            steps=steps,
            learning_rate=LEARNING_RATE,
        )
        return np.asarray(fitter.bounded(best, lows, highs), np.float64), float(loss)


def _coarse_grid(runs: Sequence[Run], measured: np.ndarray) -> dict[str, np.ndarray]:
    """Each training die's summed squared log error [U, E] at every (utilization, efficiency) of the coarse
    grid (:data:`UTILIZATIONS` x :data:`EFFICIENCIES`): a die's runs depend on its own efficiency only."""
    rows = [settings(r)[0] for r in runs]
    u_grid, e_grid = (a.ravel() for a in np.meshgrid(UTILIZATIONS, EFFICIENCIES, indexing="ij"))
    shape = (len(runs), e_grid.size)
    err = _loss(rows, runs, measured, np.broadcast_to(e_grid, shape), np.broadcast_to(u_grid, shape))
    dies = np.array([die(r.gpu) for r in runs])
    return {
        g: err[dies == g].sum(axis=0).reshape(len(UTILIZATIONS), len(EFFICIENCIES))
        for g in sorted({die(r.gpu) for r in runs})
    }


def fit(
    runs: Sequence[Run],
    train: Sequence[bool],
    name: str,
    steps: int = STEPS,
    utilization: float | None = None,
) -> Fit:
    """Least squares on log(predicted / measured) over the training rows: efficiency per GPU, and one
    utilization unless ``utilization`` holds it at a measured value."""
    idx = [i for i, (r, t) in enumerate(zip(runs, train)) if t and r.value is not None and not r.moe]
    gpus = sorted({die(r.gpu) for r in runs})
    efficiency = {g: EFFICIENCY for g in gpus}
    held = "default" if utilization is None else "measured, held"
    if not idx:
        return Fit(
            name, efficiency, UTILIZATION_DEFAULT if utilization is None else utilization, (), (), held
        )
    sub = [runs[i] for i in idx]
    measured = np.array([r.value for r in sub], np.float64)
    per_die = _coarse_grid(sub, measured)
    per_u = sum(loss.min(axis=1) for loss in per_die.values())
    # Utilization is fitted only if not held at a measured value and some training row's prediction depends on
    # it; else it is held (equal bounds) at that value or its default, as is the efficiency of a die no training
    # run uses.
    identifiable_u = utilization is None and bool(np.ptp(per_u) > 1e-9 * max(float(per_u.max()), 1e-30))
    kept = UTILIZATION_DEFAULT if utilization is None else utilization
    u_bounds = (UTILIZATIONS[0], UTILIZATIONS[-1]) if identifiable_u else (kept,) * 2
    lows = np.array([u_bounds[0]] + [EFFICIENCY] * len(DIES))
    highs = np.array([u_bounds[1]] + [EFFICIENCY] * len(DIES))
    # The starting points [U, P]: at each utilization of the coarse grid, each die's best efficiency there.
    starts = np.full((len(UTILIZATIONS), len(lows)), EFFICIENCY)
    starts[:, 0] = UTILIZATIONS if identifiable_u else kept
    for g, loss in per_die.items():
        d = 1 + DIES.index(g)
        lows[d], highs[d] = EFFICIENCIES[0], EFFICIENCIES[-1]
        starts[:, d] = EFFICIENCIES[np.argmin(loss, axis=1)]  # held, u's bounds keep it; these still vary
    values, _ = fit_constants(sub, starts, lows, highs, steps)
    efficiency.update({g: float(values[1 + DIES.index(g)]) for g in per_die})
    fitted = tuple(f"efficiency {g}" for g in per_die) + (("utilization",) if identifiable_u else ())
    return Fit(
        name, efficiency, float(values[0]) if identifiable_u else kept, fitted, tuple(r.id for r in sub), held
    )


@dataclasses.dataclass
class Validation:
    """Predictions of every run under the three models, with errors and the breakdown."""

    runs: list[Run]
    train: list[bool]
    fits: dict[str, Fit]
    outputs: dict[str, dict[str, np.ndarray]]
    path: str

    def errors(self, model: str) -> np.ndarray:
        """Signed relative error (predicted / measured - 1) per run; NaN without a measured value."""
        measured = np.array([r.value if r.value is not None else np.nan for r in self.runs])
        return self.outputs[model]["predicted"] / measured - 1.0

    def summary(self, model: str, rows: Sequence[bool]) -> tuple[int, float, float]:
        """(count, median |error|, max |error|) over ``rows`` with a measured value."""
        e = np.abs(self.errors(model))[np.asarray(rows, bool)]
        e = e[np.isfinite(e)]
        return (len(e), float(np.median(e)) if len(e) else math.nan, float(e.max()) if len(e) else math.nan)

    def terms(self, model: str, i: int) -> str:
        """The two largest terms of run i's predicted step, as shares (what it waits on)."""
        out = self.outputs[model]
        return waits_on({k: out[k][i] for k in BREAKDOWN}, out["iteration_time"][i])
