"""The layout model's few global constants fitted to large-model runs, and the runs predicted with them.

The constants: the matrix efficiency of each GPU die (a preset's ``die`` maps the H200 and other parts of
one chip to it), or of each stack preset on each die (``by_stack``: ``validate --llm``'s), one NIC utilization
and one memory efficiency (the achieved fraction of HBM bandwidth in memory-bound work). A fit by stack also
fits each die's pooled efficiency (every training run on the die, whatever its stack, the memory efficiency
held at the per-stack fit's), which a stack with no training run on that die takes
(:func:`sweep.analysis.llm_predict.efficiency_of`). :func:`fit` minimizes the mean squared log(predicted / measured)
over the training runs (dense models only) with the project's fitter (:func:`kernels.fit.fit_model`, jitted
as :func:`sweep.engine.compiled.fit_layout_runs`), as ``calibrate`` fits the data-parallel model: each
constant bounded by a sigmoid, the best of several starting points under the model, then Adam steps through
the layout kernel, keeping the constants of the lowest loss. Either shared constant can be held at a value
instead (``sweep validate --llm`` holds the utilization at the measured :data:`NIC_UTILIZATION` and fits the
memory efficiency, the efficiency per stack and die; so does ``calibrate`` of a runs file). The
starting points are a coarse grid's best: for each value of the shared constant fitted (:data:`UTILIZATIONS`
or :data:`MEMORY_EFFICIENCIES`), each die's best efficiency of :data:`EFFICIENCIES`. A constant no training run
depends on keeps its documented default (efficiency 0.6, utilization 1, memory efficiency 1).
A :class:`Validation` holds every run's predictions under each model (:data:`MODELS`) and their errors.
"""

import dataclasses
import math
from collections.abc import Sequence

import jax
import numpy as np

from netsweep_jax.kernels import fit as fitter
from netsweep_jax.sweep.analysis.llm_predict import metric, metric_terms
from netsweep_jax.sweep.core.layout_axes import (
    AXES,
    BREAKDOWN,
    waits_on,
)
from netsweep_jax.sweep.engine.compiled import (
    fit_layout_runs,
)
from netsweep_jax.sweep.engine.layout_rows import row_columns
from netsweep_jax.sweep.engine.layouts import evaluate_rows
from netsweep_jax.sweep.io.runs import Run, settings
from netsweep_jax.sweep.model.compute import EFFICIENCY, GPUS, die
from netsweep_jax.sweep.model.stacks import STACKS

# One source per stack preset, chosen by source on 2026-12-03 before any held-out error of the per-stack fit was
# computed: SC'21 Table 1 (megatron-2021: Megatron-LM on the A100), llm-foundry's MPT tables (fsdp: pure FSDP in
# bf16, 1B to 70B on 128 to 512 H100s, and one A100 run) and Megatron-Bridge's performance tables (megatron-core:
# Llama 3 on H100 and GB200, and B200 and GB300 from 2026-12-04; the source its fill rules are read from). Until
# then: SC'21 Table 1 and llm-foundry, one efficiency per die.
DEFAULT_TRAIN = "sc21-t1,llm-foundry,megatron-bridge"

# The starting points' coarse grid (efficiency in steps of 0.02, utilization in 40 log steps from 0.02 to 1,
# memory efficiency in 40 from 0.05 to 1), whose ranges are the constants' bounds; then STEPS Adam steps of
# LEARNING_RATE (unconstrained units).
EFFICIENCIES = np.round(np.arange(0.10, 1.0 + 1e-9, 0.02), 6)
UTILIZATIONS = np.geomspace(0.02, 1.0, 40)
MEMORY_EFFICIENCIES = np.geomspace(0.05, 1.0, len(UTILIZATIONS))  # as many: one compiled shape of starts
MEMORY_DEFAULT = float(AXES["memory_efficiency"].default)
STEPS = 300
LEARNING_RATE = 0.02
UTILIZATION_DEFAULT = 1.0
# The share of its NICs' line rate NCCL's collectives reach, as measured and not fitted: NCCL's maintainers expect
# 46-48 GB/s of bus bandwidth per 400 Gbit/s NDR NIC (NVIDIA/nccl-tests#290, 2025-03-03: 0.92-0.96 of 50 GB/s); on
# 3 DGX-like A100 nodes with 4 HDR NICs each, all_reduce_perf averaged 84.8 and peaked at 96 of 100 GB/s
# (NVIDIA/nccl-tests#119, 2022-11-17). The lower end of the maintainers' range.
NIC_UTILIZATION = 0.92
MODELS = ("untrained", "trained", "in-sample")
# The fitted vector: the utilization, the memory efficiency, then the efficiency of every class of CLASSES (each
# GPU die, then each stack preset on each die, "stack/die"; a class no training run is in held at its default),
# and the rows padded to a multiple of ROW_QUANTUM: every fit of up to ROW_QUANTUM runs (and every fit of a
# size), per die or per stack, shares one compile. 128: the shipped file's training fit (29 runs) and its
# in-sample fit (66) are one compile (4 s) where 64 made them two; the padded rows cost the fit far less.
DIES = tuple(sorted({g.die or name for name, g in GPUS.items()}))
CLASSES = DIES + tuple(f"{s}/{d}" for s in STACKS for d in DIES)
ROW_QUANTUM = 128


@dataclasses.dataclass(frozen=True)
class Fit:
    """Constants of one model: efficiency per GPU, one utilization, one memory efficiency, and which were
    fitted."""

    name: str
    efficiency: dict[str, float]
    utilization: float
    fitted: tuple[str, ...]
    rows: tuple[str, ...]  # the ids it was fitted on
    held: str = "default"  # what an unfitted utilization is: its default, or a measured value held
    memory_efficiency: float = MEMORY_DEFAULT
    by_stack: bool = False  # efficiency per stack preset and die ("stack/die" keys), the dies' keys pooled

    def describe(self) -> str:
        pooled = " (pooled)" if self.by_stack else ""

        def origin(key: str) -> str:  # a stack's on a die it has no training run on: the die's pooled, if any
            if f"efficiency {key}" in self.fitted:
                return pooled if "/" not in key else ""
            die = key.rpartition("/")[2]
            return (
                " (the die's pooled)" if "/" in key and f"efficiency {die}" in self.fitted else " (default)"
            )

        eff = ", ".join(
            f"{g} {e:.4g}{origin(g)}"
            for g, e in sorted(self.efficiency.items(), key=lambda item: ("/" not in item[0], item[0]))
        )
        util = f"{self.utilization:.3g}{'' if 'utilization' in self.fitted else f' ({self.held})'}"
        memory = f"{self.memory_efficiency:.3g}{'' if 'memory efficiency' in self.fitted else ' (default)'}"
        return f"efficiency {eff}; utilization {util}; memory efficiency {memory}"


def predicted_over_measured(
    runs: Sequence[Run],
    efficiency: np.ndarray,
    utilization: np.ndarray,
    memory_efficiency: np.ndarray | float = MEMORY_DEFAULT,
) -> np.ndarray:
    """predicted / measured [R, K] of ``runs`` (each with a measured value) for K candidate constants ([R, K]
    each, or broadcast to it); NaN or inf where the prediction is undefined."""
    memory = np.broadcast_to(np.asarray(memory_efficiency, np.float64), np.shape(efficiency))
    out = evaluate_rows(
        [settings(r)[0] for r in runs],
        efficiency,
        utilization,
        outputs=("iteration_time", "tflops_per_gpu"),
        memory_efficiency=memory,
    )
    measured = np.array([r.value for r in runs], np.float64)[:, None]
    return metric(runs, out["iteration_time"], out["tflops_per_gpu"]) / measured


def _loss(
    runs: Sequence[Run],
    efficiency: np.ndarray,
    utilization: np.ndarray,
    memory_efficiency: np.ndarray | float = MEMORY_DEFAULT,
) -> np.ndarray:
    """Squared log errors [R, K] of ``runs`` for K candidate constants ([R, K] each); 1e6 where undefined
    (:func:`kernels.fit.mean_square`'s terms)."""
    err = np.log(predicted_over_measured(runs, efficiency, utilization, memory_efficiency)) ** 2
    return np.where(np.isfinite(err), err, fitter.UNDEFINED)


def class_of(run: Run, by_stack: bool = False) -> str:
    """The efficiency class a run is fitted in: its GPU die, or (``by_stack``) its stack preset on it,
    ``stack/die``."""
    return f"{run.preset}/{die(run.gpu)}" if by_stack else die(run.gpu)


def fit_inputs(
    runs: Sequence[Run], quantum: int = ROW_QUANTUM, by_stack: bool = False
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], np.ndarray, np.ndarray, np.ndarray]:
    """The runs as :func:`~sweep.engine.compiled.fit_layout_runs` takes them: (cell, layout, class [R] (an index
    into :data:`CLASSES`: :func:`class_of`), metric [R], count [R]), padded to a multiple of ``quantum`` rows by
    repeating the first (the fit gives them weight 0)."""
    total = len(runs) + (-len(runs) % quantum)
    pad = np.where(np.arange(total) < len(runs), np.arange(total), 0)  # the run each padded row repeats
    cell, layout = row_columns([settings(r)[0] for r in runs])
    code, count = metric_terms(runs)
    die_index = np.array([CLASSES.index(class_of(r, by_stack)) for r in runs], np.int32)
    return (
        {k: v[pad] for k, v in cell.items()},
        {k: v[pad] for k, v in layout.items()},
        die_index[pad],
        code[pad],
        count[pad],
    )


def fit_constants(
    runs: Sequence[Run],
    starts: np.ndarray,
    lows: np.ndarray,
    highs: np.ndarray,
    steps: int = STEPS,
    by_stack: bool = False,
) -> tuple[np.ndarray, float]:
    """The fitter on ``runs`` (each with a measured value): the constants [P] (the utilization, the memory
    efficiency, then each class of :data:`CLASSES`' efficiency) of the lowest mean squared log(predicted /
    measured), and that loss. ``starts`` [S, P]: starting values; ``lows``, ``highs`` [P]: each constant's bounds
    (equal: held there); ``by_stack``: each run in its stack's class on its die, else its die's."""
    inputs = fit_inputs(runs, by_stack=by_stack)
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


def _coarse_grid(
    runs: Sequence[Run], utilization: np.ndarray, memory: np.ndarray, by_stack: bool = False
) -> dict[str, np.ndarray]:
    """Each training class's (:func:`class_of`) summed squared log error [K, E] at every (shared constant,
    efficiency) of the coarse grid: the K (``utilization``, ``memory``) pairs [K] by :data:`EFFICIENCIES`; a
    class's runs depend on its own efficiency only."""
    pairs = np.arange(len(utilization))
    k_grid, e_grid = (a.ravel() for a in np.meshgrid(pairs, EFFICIENCIES, indexing="ij"))
    shape = (len(runs), e_grid.size)
    err = _loss(
        runs,
        np.broadcast_to(e_grid, shape),
        np.broadcast_to(utilization[k_grid], shape),
        np.broadcast_to(memory[k_grid], shape),
    )
    classes = np.array([class_of(r, by_stack) for r in runs])
    return {
        g: err[classes == g].sum(axis=0).reshape(len(pairs), len(EFFICIENCIES))
        for g in sorted(set(classes.tolist()))
    }


def fit(
    runs: Sequence[Run],
    train: Sequence[bool],
    name: str,
    steps: int = STEPS,
    utilization: float | None = None,
    memory_efficiency: float | None = MEMORY_DEFAULT,
    by_stack: bool = False,
) -> Fit:
    """Least squares on log(predicted / measured) over the training rows: efficiency per GPU die (``by_stack``:
    per stack preset on each die, and each die's pooled efficiency, which a stack with no training row on the
    die takes), and the utilization and the memory efficiency unless held (a value: held there; None:
    fitted)."""
    idx = [i for i, (r, t) in enumerate(zip(runs, train)) if t and r.value is not None and not r.moe]
    gpus = sorted({die(r.gpu) for r in runs})
    efficiency = {g: EFFICIENCY for g in gpus}
    if by_stack:
        efficiency.update({class_of(r, True): EFFICIENCY for r in runs})
    held = "default" if utilization is None else "measured, held"
    kept_u = UTILIZATION_DEFAULT if utilization is None else utilization
    kept_m = MEMORY_DEFAULT if memory_efficiency is None else memory_efficiency
    if not idx:
        return Fit(name, efficiency, kept_u, (), (), held, kept_m, by_stack)
    sub = [runs[i] for i in idx]
    # The coarse grid sweeps one shared constant, the utilization if it is fitted, else the memory efficiency
    # if it is (the other held, or starting at its default); each class's best efficiency at each value starts
    # the descent.
    n = len(UTILIZATIONS)
    sweep_u, sweep_m = utilization is None, utilization is not None and memory_efficiency is None
    k = n if sweep_u or sweep_m else 1  # nothing to sweep: one point
    grid_u = UTILIZATIONS if sweep_u else np.full(k, kept_u)
    grid_m = MEMORY_EFFICIENCIES if sweep_m else np.full(k, kept_m)
    per_class = _coarse_grid(sub, grid_u, grid_m, by_stack)
    per_k = sum(loss.min(axis=1) for loss in per_class.values())
    # A shared constant is fitted only if not held and some training row's prediction depends on it (checked on
    # the swept one; one fitted beside it is taken to); else it is held (equal bounds), as is the efficiency of
    # a class no training run is in.
    varies = bool(np.ptp(per_k) > 1e-9 * max(float(per_k.max()), 1e-30))
    fit_u = sweep_u and varies
    fit_m = memory_efficiency is None and (varies or sweep_u)  # swept, or fitted beside the utilization
    lows = np.array(
        [UTILIZATIONS[0] if fit_u else kept_u, MEMORY_EFFICIENCIES[0] if fit_m else kept_m]
        + [EFFICIENCY] * len(CLASSES)
    )
    highs = np.array(
        [UTILIZATIONS[-1] if fit_u else kept_u, MEMORY_EFFICIENCIES[-1] if fit_m else kept_m]
        + [EFFICIENCY] * len(CLASSES)
    )
    starts = np.full((n, len(lows)), EFFICIENCY)
    starts[:, 0], starts[:, 1] = grid_u, grid_m
    for g, loss in per_class.items():
        d = 2 + CLASSES.index(g)
        lows[d], highs[d] = EFFICIENCIES[0], EFFICIENCIES[-1]
        starts[:, d] = EFFICIENCIES[np.argmin(loss, axis=1)]
    values, _ = fit_constants(sub, starts, lows, highs, steps, by_stack)
    efficiency.update({g: float(values[2 + CLASSES.index(g)]) for g in per_class})
    fitted = tuple(f"efficiency {g}" for g in per_class)
    u = float(values[0]) if fit_u else kept_u
    m = float(values[1]) if fit_m else kept_m
    if by_stack:
        # Each die's pooled efficiency, on every training run on it with the shared constants held at this fit's:
        # what a stack with no training run on the die takes (its key keeps the pooled value).
        pooled = fit(runs, train, name, steps, utilization=u, memory_efficiency=m)
        dies = tuple(g for g in gpus if f"efficiency {g}" in pooled.fitted)
        efficiency.update({g: pooled.efficiency[g] for g in dies})
        efficiency.update(
            {g: efficiency[g.split("/")[1]] for g in efficiency if "/" in g and g not in per_class}
        )
        fitted += tuple(f"efficiency {g}" for g in dies)
    fitted += (("utilization",) if fit_u else ()) + (("memory efficiency",) if fit_m else ())
    return Fit(name, efficiency, u, fitted, tuple(r.id for r in sub), held, m, by_stack)


@dataclasses.dataclass
class Validation:
    """Predictions of every run under the three models (:data:`MODELS`), and any other constants the report
    gives beside them (the grid's lowest held-out median), with errors and the breakdown."""

    runs: list[Run]
    train: list[bool]
    fits: dict[str, Fit]
    outputs: dict[str, dict[str, np.ndarray]]
    path: str

    def errors(self, model: str) -> np.ndarray:
        """Signed relative error (predicted / measured - 1) per run; NaN without a measured value."""
        measured = np.array([r.value if r.value is not None else np.nan for r in self.runs])
        return self.outputs[model]["predicted"] / measured - 1.0

    def role(self, i: int) -> str:
        """Run i's part in the protocol: ``train``, ``held out``, or ``predict`` (the file's ``value`` is empty:
        it asks for a prediction, which has no error)."""
        return "predict" if self.runs[i].value is None else "train" if self.train[i] else "held out"

    def summary(self, model: str, rows: Sequence[bool]) -> tuple[int, float, float]:
        """(count, median |error|, max |error|) over ``rows`` with a measured value."""
        e = np.abs(self.errors(model))[np.asarray(rows, bool)]
        e = e[np.isfinite(e)]
        return (len(e), float(np.median(e)) if len(e) else math.nan, float(e.max()) if len(e) else math.nan)

    def terms(self, model: str, i: int) -> str:
        """The two largest terms of run i's predicted step, as shares (what it waits on)."""
        out = self.outputs[model]
        return waits_on({k: out[k][i] for k in BREAKDOWN}, out["iteration_time"][i])


def fit_warnings(fitted: Fit) -> list[str]:
    """What a user's fit leaves undetermined: as many constants as training runs or more (each run then fits
    exactly, nothing is left to judge them by), and a constant at an end of its search range (the runs may want
    a value past it, or another cause: a typo, a run the model cannot price)."""
    out = []
    own = _own_constants(fitted)
    if len(own) >= len(fitted.rows):
        out.append(
            f"{len(own)} constants from {len(fitted.rows)} training run{'s' * (len(fitted.rows) != 1)}: the fit "
            "is not determined by them (add runs)"
        )
    for name, value, (low, high) in at_range_ends(fitted):
        out.append(f"{name} {value:.4g} is at an end of its range ({low:g} to {high:g})")
    return out


def _own_constants(fitted: Fit) -> list[str]:
    """The constants a fit chose: the per-stack efficiencies and the memory efficiency and utilization fitted (a
    die's pooled efficiency is fitted again on the same runs: not one more constant)."""
    return [f for f in fitted.fitted if "/" in f or not fitted.by_stack or not f.startswith("efficiency")]


def at_range_ends(fitted: Fit) -> list[tuple[str, float, tuple[float, float]]]:
    """The constants a fit left at an end of their search range: (name, value, (low, high)) each; a die's pooled
    efficiency too, which the die's stacks without a training run take (a hunt: pooled at 1.0, unsaid, it put
    every FSDP run on the die 23-25% fast), though it is not one more constant (:func:`_own_constants`)."""
    ends = {"memory efficiency": MEMORY_EFFICIENCIES, "utilization": UTILIZATIONS}
    values = {f"efficiency {g}": e for g, e in fitted.efficiency.items()}
    values.update({"memory efficiency": fitted.memory_efficiency, "utilization": fitted.utilization})
    out = []
    for name in fitted.fitted:
        grid = ends.get(name, EFFICIENCIES)
        if np.isclose(values[name], grid[0]) or np.isclose(values[name], grid[-1]):
            out.append((name, float(values[name]), (float(grid[0]), float(grid[-1]))))
    return out
