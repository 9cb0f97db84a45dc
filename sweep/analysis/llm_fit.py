"""The layout model's few global constants fitted to large-model runs, and the runs predicted with them.

The constants: the matrix efficiency of each GPU die (a preset's ``die`` maps the H200 and other parts of
one chip to it) and one NIC utilization. :func:`fit` minimizes the squared log(predicted / measured) over
the training runs (dense models only) on a grid fine enough that its step changes a prediction by under
0.3%; a constant no training run depends on keeps its documented default (efficiency 0.6, utilization 1).
A :class:`Validation` holds every run's predictions under each model (:data:`MODELS`) and their errors.
"""

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from netsweep_jax.sweep.analysis.llm_predict import die, metric
from netsweep_jax.sweep.core.layout_axes import BREAKDOWN, waits_on
from netsweep_jax.sweep.engine.layouts import LayoutRow, evaluate_rows
from netsweep_jax.sweep.io.runs import Run, settings
from netsweep_jax.sweep.model.compute import EFFICIENCY

# The fit's search: a coarse joint grid (efficiency in steps of 0.02, utilization in 40 log steps from
# 0.02 to 1), then each constant refined on 64 points within one coarse step of its best (steps of about
# 0.0006 in efficiency and 0.3% in utilization: a grid step moves a prediction by well under 1%).
EFFICIENCIES = np.round(np.arange(0.10, 1.0 + 1e-9, 0.02), 6)
UTILIZATIONS = np.geomspace(0.02, 1.0, 40)
REFINE = 64
UTILIZATION_DEFAULT = 1.0
MODELS = ("defaults", "trained", "in-sample")


@dataclasses.dataclass(frozen=True)
class Fit:
    """Constants of one model: efficiency per GPU, one utilization, and which were fitted."""

    name: str
    efficiency: dict[str, float]
    utilization: float
    fitted: tuple[str, ...]
    rows: tuple[str, ...]  # the ids it was fitted on

    def describe(self) -> str:
        eff = ", ".join(
            f"{g} {e:.4g}{'' if f'efficiency {g}' in self.fitted else ' (default)'}"
            for g, e in sorted(self.efficiency.items())
        )
        util = f"{self.utilization:.3g}{'' if 'utilization' in self.fitted else ' (default)'}"
        return f"efficiency {eff}; utilization {util}"


def _loss(
    rows: list[LayoutRow],
    runs: Sequence[Run],
    measured: np.ndarray,
    efficiency: np.ndarray,
    utilization: np.ndarray,
) -> np.ndarray:
    """Squared log errors [R, K] of ``rows`` for K candidate constants ([R, K] each); 1e6 where undefined."""
    out = evaluate_rows(rows, efficiency, utilization, outputs=("iteration_time", "tflops_per_gpu"))
    err = np.log(metric(runs, out["iteration_time"], out["tflops_per_gpu"]) / measured[:, None]) ** 2
    return np.where(np.isfinite(err), err, 1e6)


def _local(grid: np.ndarray, best: float, log: bool = False) -> np.ndarray:
    """REFINE points within one step of ``grid`` around ``best``, inside the grid's range."""
    i = int(np.argmin(np.abs(grid - best)))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    return np.geomspace(lo, hi, REFINE) if log else np.linspace(lo, hi, REFINE)


def fit(runs: Sequence[Run], train: Sequence[bool], name: str) -> Fit:
    """Least squares on log(predicted / measured) over the training rows: efficiency per GPU, one utilization."""
    idx = [i for i, (r, t) in enumerate(zip(runs, train)) if t and r.value is not None and not r.moe]
    gpus = sorted({die(r.gpu) for r in runs})
    efficiency = {g: EFFICIENCY for g in gpus}
    if not idx:
        return Fit(name, efficiency, UTILIZATION_DEFAULT, (), ())
    sub = [runs[i] for i in idx]
    measured = np.array([r.value for r in sub], np.float64)
    rows = [settings(r)[0] for r in sub]
    gpu_of = np.array([die(r.gpu) for r in sub])
    train_gpus = sorted(set(gpu_of))
    u_grid, e_grid = (a.ravel() for a in np.meshgrid(UTILIZATIONS, EFFICIENCIES, indexing="ij"))
    err = _loss(
        rows,
        sub,
        measured,
        np.broadcast_to(e_grid, (len(sub), e_grid.size)),
        np.broadcast_to(u_grid, (len(sub), u_grid.size)),
    )
    per_gpu = {
        g: err[gpu_of == g].sum(axis=0).reshape(len(UTILIZATIONS), len(EFFICIENCIES)) for g in train_gpus
    }
    per_u = sum(loss.min(axis=1) for loss in per_gpu.values())
    # Utilization is identifiable only if some training row's prediction depends on it.
    identifiable_u = bool(np.ptp(per_u) > 1e-9 * max(float(per_u.max()), 1e-30))
    u_index = int(np.argmin(per_u)) if identifiable_u else len(UTILIZATIONS) - 1
    utilization = float(UTILIZATIONS[u_index]) if identifiable_u else UTILIZATION_DEFAULT
    for g in train_gpus:
        efficiency[g] = float(EFFICIENCIES[int(np.argmin(per_gpu[g][u_index]))])
    for _ in range(2):  # refine each constant near its best, the others held
        for g in train_gpus:
            mask = gpu_of == g
            grid = _local(EFFICIENCIES, efficiency[g])
            e2 = _loss(
                [rows[i] for i in np.flatnonzero(mask)],
                [sub[i] for i in np.flatnonzero(mask)],
                measured[mask],
                np.broadcast_to(grid, (mask.sum(), REFINE)),
                np.full((mask.sum(), REFINE), utilization),
            )
            efficiency[g] = float(grid[int(np.argmin(e2.sum(axis=0)))])
        if identifiable_u:
            grid = _local(UTILIZATIONS, utilization, log=True)
            eff = np.array([efficiency[die(r.gpu)] for r in sub])[:, None]
            e2 = _loss(
                rows,
                sub,
                measured,
                np.broadcast_to(eff, (len(sub), REFINE)),
                np.broadcast_to(grid, (len(sub), REFINE)),
            )
            utilization = float(grid[int(np.argmin(e2.sum(axis=0)))])
    fitted = tuple(f"efficiency {g}" for g in train_gpus) + (("utilization",) if identifiable_u else ())
    return Fit(name, efficiency, utilization, fitted, tuple(r.id for r in sub))


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
