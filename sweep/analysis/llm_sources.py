"""How far the published runs agree with each other, measured through the layout model: what the model's
constants cannot remove (``sweep validate --llm``'s findings on issue #25's targets). On dense runs with a
measured value, the NIC utilization held at the protocol's measured value throughout:

- **Rows of one setup in two sources** (:func:`same_setup_pairs`): runs with the same model (its whole
  architecture, :func:`_architecture`), GPU, TP, PP and recomputation, from different source groups. They differ in what the model
  prices (batch, data parallelism, interleaving), so each pair's

      relative = (measured_b / predicted_b) / (measured_a / predicted_a)      (rates; a time metric inverted)

  is how much faster row b ran than row a beyond what the model says their differences are worth. Every
  prediction scales with the constants about alike, so ``relative`` barely depends on them, and constants
  that put row a at error e_a put row b near (1 + e_a) / relative - 1: one of the two errs by about
  ``1 - exp(-|log relative| / 2)`` or more. The report gives, for the pair furthest apart, the exact lowest
  over the fit's grid (:func:`lowest_worst` of the two rows).
- **One model on one GPU die in two stacks** (:func:`cross_stack_pairs`): the same model, sequence, die and
  precision under Megatron and under PyTorch FSDP, whatever their layouts (the model prices those), as above:
  what one stack's software runs faster than the other's, which one efficiency per die cannot hold.
- **The grid's lowest median** (:func:`lowest_median`): an exhaustive search of the fit's grid
  (:data:`~sweep.analysis.llm_fit.EFFICIENCIES` for each GPU die, one memory efficiency of
  :data:`~sweep.analysis.llm_fit.MEMORY_EFFICIENCIES`) for the per-GPU constants of the lowest median
  absolute error over the rows given: run on the held-out rows themselves, which no prediction may use, it
  says what the model's constants could do there at best (to the grid's step), and with them the training
  rows' errors (what those constants cost the sources they would be fitted on).
- **The grid's lowest worst error** (:func:`lowest_worst`): the same grid's lowest largest error over rows of
  one die (the ZeRO-3 rows the report does not reach; the two rows of a pair).
"""

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np

from netsweep_jax.sweep.analysis.llm_fit import (
    EFFICIENCIES,
    MEMORY_EFFICIENCIES,
    NIC_UTILIZATION,
    Fit,
    predicted_over_measured,
)
from netsweep_jax.sweep.io.runs import Run, settings
from netsweep_jax.sweep.model.compute import die

__all__ = [
    "LOWEST_MEDIAN",
    "MAX_DIES",
    "Pair",
    "cross_stack_pairs",
    "lowest_median",
    "lowest_worst",
    "same_setup_pairs",
]

LOWEST_MEDIAN = "lowest median"  # its name among a validation's fits (not one of the report's three models)
CHUNK_ELEMENTS = 2**22  # errors the lowest-median search holds at once (32 MiB of float64)
MAX_DIES = 3  # the search tries every combination of the dies' efficiencies: len(EFFICIENCIES) ** dies


@dataclasses.dataclass(frozen=True)
class Pair:
    """Two runs of one setup from two sources; ``relative``: how much faster ``b`` ran than ``a`` beyond what
    the model prices (1: as the model says)."""

    a: int  # indices into the runs
    b: int
    relative: float


def _dense_measured(run: Run) -> bool:
    """What every measure here compares: dense runs (MoE runs are reported, never fitted) with a measured value."""
    return not run.moe and run.value is not None


def _architecture(run: Run) -> tuple[object, ...]:
    """The model as a key: every field of its architecture but where it comes from (a GPT of Llama 3 8B's
    layers, width and sequence is another model: SwiGLU, GQA)."""
    return dataclasses.astuple(dataclasses.replace(run.llm, source=""))


def _setup(run: Run) -> tuple[object, ...]:
    return (_architecture(run), run.gpu, run.tp, run.pp, settings(run)[0].recompute)


def _model_on_die(run: Run) -> tuple[object, ...]:
    return (_architecture(run), die(run.gpu), run.precision)


def _measured_rate(run: Run, predicted: float) -> float:
    """measured / predicted as a rate (a time metric inverted): above 1, the run ran faster than predicted."""
    ratio = float(run.value) / predicted  # type: ignore[arg-type]
    return 1.0 / ratio if run.flops == "time" else ratio


def _pairs(
    runs: Sequence[Run], predicted: np.ndarray, same: Callable[[Run], object], apart: Callable[[Run], object]
) -> list[Pair]:
    usable = [i for i, r in enumerate(runs) if _dense_measured(r) and np.isfinite(predicted[i])]
    keys = {i: same(runs[i]) for i in usable}
    return [
        Pair(a, b, _measured_rate(runs[b], predicted[b]) / _measured_rate(runs[a], predicted[a]))
        for n, a in enumerate(usable)
        for b in usable[n + 1 :]
        if apart(runs[a]) != apart(runs[b]) and keys[a] == keys[b]
    ]


def same_setup_pairs(runs: Sequence[Run], predicted: np.ndarray) -> list[Pair]:
    """Every pair of dense runs with a measured value from different groups with the same model, GPU, TP, PP and
    recomputation, in file order, with how much faster the later ran than the earlier beyond the model
    (``predicted`` [R]: each run's predicted metric under one set of constants)."""
    return _pairs(runs, predicted, _setup, lambda r: r.group)


def cross_stack_pairs(runs: Sequence[Run], predicted: np.ndarray) -> list[Pair]:
    """Every pair of dense runs with a measured value on two stacks (Megatron, PyTorch FSDP) with the same model
    (its whole architecture), GPU die and precision, whatever their layouts, as :func:`same_setup_pairs`
    gives them."""
    return _pairs(runs, predicted, _model_on_die, lambda r: r.stack)


def _grid_errors(runs: Sequence[Run], utilization: float) -> np.ndarray:
    """|predicted / measured - 1| [R, E, M] of ``runs`` (dense, each with a measured value) at every efficiency
    of :data:`EFFICIENCIES` and memory efficiency of :data:`MEMORY_EFFICIENCIES` (inf where undefined); a run
    depends on its own die's efficiency only."""
    e_grid, m_grid = (a.ravel() for a in np.meshgrid(EFFICIENCIES, MEMORY_EFFICIENCIES, indexing="ij"))
    shape = (len(runs), e_grid.size)
    ratio = predicted_over_measured(
        runs, np.broadcast_to(e_grid, shape), np.full(shape, utilization), np.broadcast_to(m_grid, shape)
    )
    err = np.abs(ratio - 1.0)
    return np.where(np.isfinite(err), err, np.inf).reshape(
        len(runs), len(EFFICIENCIES), len(MEMORY_EFFICIENCIES)
    )


def lowest_median(
    runs: Sequence[Run], rows: Sequence[bool], utilization: float = NIC_UTILIZATION
) -> Fit | None:
    """The grid's per-GPU constants of the lowest median |predicted / measured - 1| over the dense ``rows`` with
    a measured value (utilization held); None where no such row is, or they span more than :data:`MAX_DIES`
    GPU dies (the search is exhaustive). Ties go to the lowest constants."""
    sub = [r for r, m in zip(runs, rows) if m and _dense_measured(r)]
    dies = sorted({die(r.gpu) for r in sub})
    if not sub or len(dies) > MAX_DIES:
        return None
    err = _grid_errors(sub, utilization)
    E, M = len(EFFICIENCIES), len(MEMORY_EFFICIENCIES)
    on = np.array([dies.index(die(r.gpu)) for r in sub])
    best_median, best = np.inf, (0, (0,) * len(dies))
    # The first die's efficiencies in chunks, so each step holds at most CHUNK_ELEMENTS errors (E ** dies x rows
    # at once would be 1 GB at 3 dies and 500 rows).
    chunk = max(1, CHUNK_ELEMENTS // (E ** (len(dies) - 1) * len(sub)))
    for m in range(M):
        per_die = [err[on == d, :, m].T for d in range(len(dies))]  # [E, rows on die d] each
        for lo in range(0, E, chunk):
            first = np.arange(lo, min(lo + chunk, E))
            # Every combination of the dies' efficiencies: axis d picks die d's (axis 0 from ``first``); the
            # last axis, the rows.
            sizes = (len(first),) + (E,) * (len(dies) - 1)
            parts = []
            for d, own in enumerate(per_die):
                own = own[first] if d == 0 else own
                axes = [1] * len(dies)
                axes[d] = sizes[d]
                parts.append(np.broadcast_to(own.reshape(*axes, -1), sizes + own.shape[-1:]))
            median = _median(np.concatenate(parts, axis=-1))
            at = np.unravel_index(int(np.argmin(median)), median.shape)
            if median[at] < best_median:
                best_median, best = (
                    float(median[at]),
                    (m, (int(first[at[0]]),) + tuple(int(a) for a in at[1:])),
                )
    return Fit(
        LOWEST_MEDIAN,
        {g: float(EFFICIENCIES[best[1][d]]) for d, g in enumerate(dies)},
        utilization,
        tuple(f"efficiency {g}" for g in dies) + ("memory efficiency",),
        tuple(r.id for r in sub),
        "measured, held",
        float(MEMORY_EFFICIENCIES[best[0]]),
    )


def lowest_worst(runs: Sequence[Run], rows: Sequence[bool], utilization: float = NIC_UTILIZATION) -> float:
    """The lowest, over every efficiency and memory efficiency of the fit's grid (utilization held), of the
    largest |error| among the dense ``rows`` with a measured value: no constants of the grid bring every one of
    them closer. NaN where no such row is, or they are on more than one GPU die."""
    sub = [r for r, m in zip(runs, rows) if m and _dense_measured(r)]
    if not sub or len({die(r.gpu) for r in sub}) > 1:
        return float("nan")
    return float(_grid_errors(sub, utilization).max(axis=0).min())


def _median(a: np.ndarray) -> np.ndarray:
    """np.median over the last axis, by partition (several times faster on the search's 10^5 combinations)."""
    n = a.shape[-1]
    part = np.partition(a, (n - 1) // 2 if n % 2 else (n // 2 - 1, n // 2), axis=-1)
    return part[..., n // 2] if n % 2 else 0.5 * (part[..., n // 2 - 1] + part[..., n // 2])
