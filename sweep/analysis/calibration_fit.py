"""The numerical pieces of a calibration's fit: its parameters, starting points, padding,
identifiability check and standard errors.

The fit itself (a coarse exact scan, then optax Adam through the smoothed kernel) is the
engine's :func:`~sweep.engine.compiled.fit_rows`; these prepare its inputs and read its result.
A parameter is one fitted axis, shared by all rows or one per value of a label column; it is
fitted unconstrained, through a logistic map onto its bounds.
"""

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from netsweep_jax.kernels.fit import FitSpec, Rows, residual_kind
from netsweep_jax.kernels.overlap import Features
from netsweep_jax.sweep.core.axes import NUMERIC_AXES
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.core.values import si_values
from netsweep_jax.sweep.core.wording import counted
from netsweep_jax.sweep.engine.blocks import pow2
from netsweep_jax.sweep.engine.compiled import predict_rows, residual_jacobian
from netsweep_jax.sweep.io.measurements import Measurements

# The fittable axes and their default bounds are the schema's (AxisSpec.fit); starting values for the scan:
STARTS = {
    "utilization": np.geomspace(1e-3, 0.999, 12),
    "latency": (0.5, 5.0, 50.0),
    "overhead": (0.0, 2.0, 10.0, 50.0),
    "slowdown": (0.0, 0.03, 0.1),
    "jitter": (0.0, 0.02, 0.05, 0.1),
}
STEPS = 400
LEARNING_RATE = 0.05
# Descents from the best starts, each of STEPS (kernels.fit.minimize): from the best start alone a fit of
# utilization, latency and slowdown ended at rmse 0.052 with utilization at its bound, where its own two-parameter
# sub-fit reaches 0.024 and the fourth-best start's descent 0.0045 (a hunt, 2026-12-07).
RESTARTS = 4
# A fit's compiled kernels (its descent, predictions and Jacobian; about 1 s to compile on two cores) are keyed by
# its row, bucket and parameter counts, so fits pad them: rows to a multiple of ROW_QUANTUM, buckets to a power of
# two of at least FIT_BUCKETS, parameters to a power of two of at least FIT_PARAMETERS. The suite's fits (16, 32 and
# 112 buckets, 1 to 8 parameters) compiled the descent 13 times, 10 with the powers of two (2026-12-04). The padding
# changes no fitted value: padding rows weigh 0, padding buckets are empty, and no row uses a padding parameter (its
# gradient is 0, so Adam leaves it at its start).
ROW_QUANTUM = 16
FIT_BUCKETS = 32
FIT_PARAMETERS = 2
SOFTNESS = 1e-4  # of T1: the smoothed max's width while descending

Array = npt.NDArray[Any]
Params = list[tuple[str, Any]]  # (fitted axis, group label or None), one per parameter


def parameter_groups(
    meas: Measurements, fit_axes: Sequence[str], per: Mapping[str, str]
) -> tuple[Params, Any]:
    """The parameters: [(family, group label or None)], and [R, F] the parameter each row uses."""
    params: Params = []
    index = np.zeros((len(meas), len(fit_axes)), np.int32)
    for f, axis in enumerate(fit_axes):
        column = per.get(axis)
        labels = meas.columns[column] if column else [None] * len(meas)
        first = len(params)
        order = list(dict.fromkeys(labels))
        params += [(axis, label) for label in order]
        index[:, f] = [first + order.index(label) for label in labels]
    return params, index


OUTSIDE_START = 0.05  # where a start outside narrowed --bounds begins, as a share of the range from its end


def starting_points(params: Params, spec: FitSpec, fit_axes: Sequence[str], count: int = 4096) -> Array:
    """Starting points [S, P'], unconstrained: the product of each family's start values
    (a family's groups start together), thinned evenly past ``count``; P' = :func:`padded_parameters` of P."""
    mesh = np.meshgrid(*(np.asarray(STARTS[a], np.float64) for a in fit_axes), indexing="ij")
    points = np.stack([m.ravel() for m in mesh], axis=1)  # [S, F] in stored units
    if len(points) > count:
        points = points[np.linspace(0, len(points) - 1, count).astype(int)]
    # The padding parameters start (and stay) at 0.
    out = np.zeros((len(points), padded_parameters(len(params))))
    for j, (axis, _) in enumerate(params):
        f = fit_axes.index(axis)
        lo, hi = spec.lows[f], spec.highs[f]
        frac = (si_values(axis, points[:, f]) - lo) / (hi - lo)
        # Under bounds --bounds narrowed, a start on or past an edge begins inside the range (OUTSIDE_START of it
        # from that end): clipped to the edge, where the logistic's slope is 1e-6, it stayed there (utilization 0.9
        # at a bound of 0.9 where 0.232 fits). The default bounds keep their starts, and so every default fit.
        default = si_values(axis, np.asarray(NUMERIC_AXES[axis].fit, np.float64))
        if not np.allclose([lo, hi], default, rtol=1e-12, atol=0.0):
            frac = np.where(frac >= 1 - 1e-6, 1 - OUTSIDE_START, np.where(frac <= 1e-6, OUTSIDE_START, frac))
        frac = np.clip(frac, 1e-6, 1 - 1e-6)
        out[:, j] = np.log(frac / (1 - frac))
    return out


def padded_parameters(count: int) -> int:
    """The parameter count a fit of ``count`` parameters is compiled for (a power of two, at least
    :data:`FIT_PARAMETERS`); the padding parameters are used by no row."""
    return pow2(count, FIT_PARAMETERS)


def padded_rows(rows: Rows, target: Array, weights: Array) -> tuple[Rows, Array, Array]:
    """``rows``, ``target`` and ``weights`` padded to a multiple of ROW_QUANTUM rows (copies of
    row 0 with weight 0) and a power of two of at least FIT_BUCKETS buckets (empty ones, which change
    nothing), so fits of similar sizes share one compiled kernel; outputs are sliced back to the real rows."""
    n, length = len(target), rows.buckets.nbytes.shape[1]
    extra_rows = -n % ROW_QUANTUM
    extra_buckets = pow2(length, FIT_BUCKETS) - length

    def rows_of(x: Any) -> Any:
        return None if x is None else np.concatenate([x, np.repeat(x[:1], extra_rows, axis=0)])

    def buckets_of(x: Any) -> Any:
        if x is None or np.ndim(x) < 2:
            return rows_of(x)
        return np.pad(rows_of(x), [(0, 0), (0, extra_buckets)] + [(0, 0)] * (np.ndim(x) - 2))

    rows = rows._replace(
        config=type(rows.config)(*map(rows_of, rows.config)),
        workers=type(rows.workers)(*map(buckets_of, rows.workers)),
        buckets=type(rows.buckets)(*map(buckets_of, rows.buckets)),
        t1=rows_of(rows.t1),
        index=rows_of(rows.index),
    )
    return rows, rows_of(target), np.concatenate([weights, np.zeros(extra_rows)])


def check_identifiable(
    params: Params, spec: FitSpec, rows: Rows, keep: Array, measured: str, features: Features
) -> None:
    """Refuse parameters no training row depends on, or more parameters than such rows."""
    middle = np.zeros(padded_parameters(len(params)))
    informative = np.zeros(len(keep), bool)
    for j, (axis, label) in enumerate(params):
        lo, hi = middle.copy(), middle.copy()
        lo[j], hi[j] = -12.0, 12.0
        changed = (
            np.abs(
                np.asarray(predict_rows(lo, rows, spec=spec, features=features)[measured])
                - np.asarray(predict_rows(hi, rows, spec=spec, features=features)[measured])
            )
            > 1e-12
        )
        changed &= keep
        if not changed.any():
            which = f"{axis}" + (f" for {label}" if label is not None else "")
            raise InputError(
                f"{which}: no training row depends on it (one worker, nothing exposed, or no row "
                f"of that group); measure runs on several nodes, or fit fewer parameters",
                param="fit",
            )
        informative |= changed
    if informative.sum() < len(params):
        raise InputError(
            f"fitting {counted(len(params), 'parameter')} takes at least {counted(len(params), 'training row')} "
            f"that {'depends on it' if len(params) == 1 else 'depend on them'}; "
            f"{counted(int(informative.sum()), 'row does', 'rows do')}",
            param="fit",
        )


def standard_errors(
    best: Array,
    params: Params,
    spec: FitSpec,
    rows: Rows,
    target: Array,
    res: Array,
    keep: Array,
    measured: str,
    features: Features,
    fit_axes: Sequence[str],
    blank: Array,
    predicted: Array,
) -> tuple[Array, Array]:
    """[P] standard errors of the fitted values (stored units), NaN where undefined, and [R]
    standard deviations of a new run of each ``blank`` row about its prediction, NaN elsewhere or where
    undefined: the fit's uncertainty (delta method: g^T cov g, g the prediction's gradient in the fit's
    unconstrained parameters) and the training rows' scatter about the model, s^2 = sum res^2 / (n - P), in the
    residual's units (an iteration time's relative: (predicted s)^2; ``predicted`` [R], the model's values):

        spread^2 = g^T cov g + s^2                 (scaling factors)
        spread^2 = g^T cov g + (predicted s)^2     (iteration times)

    The first alone had been called the run's 95% interval: 0.9975 to 0.9975 where the training rows scatter
    by 0.033 about the model (a hunt).

    ``rows``, ``target``: possibly padded past the R real rows (:func:`padded_rows`), the blank rows'
    target 1 (so their residual's gradient is the prediction's); ``best`` [P'] possibly padded past the P
    parameters (:func:`padded_parameters`); ``res`` [R]: the residuals at ``best``; ``keep`` [R]: the training
    rows.
    """
    n = len(keep)
    none = (np.full(len(params), np.nan), np.full(n, np.nan))
    full = np.asarray(residual_jacobian(best, rows, target, spec=spec, measured=measured, features=features))[
        :n, : len(params)
    ]
    jac = full[keep]
    dof = jac.shape[0] - len(params)
    if dof <= 0:
        return none
    s2 = float(np.sum(res[keep] ** 2)) / dof
    try:
        cov = s2 * np.linalg.inv(jac.T @ jac)
    except np.linalg.LinAlgError:
        return none
    spread = np.full(n, np.nan)
    if blank.any():
        g = full[blank]
        scale = 1.0 if residual_kind(measured) == "absolute" else np.asarray(predicted)[blank]
        var = np.einsum("rp,pq,rq->r", g, cov, g) + s2 * scale**2
        spread[blank] = np.where(var >= 0, np.sqrt(np.maximum(var, 0.0)), np.nan)
    out = np.empty(len(params))
    for j, (axis, _) in enumerate(params):
        f = fit_axes.index(axis)
        sig = 1.0 / (1.0 + np.exp(-best[j]))
        slope = (spec.highs[f] - spec.lows[f]) * sig * (1 - sig) / NUMERIC_AXES[axis].to_si
        out[j] = abs(slope) * np.sqrt(cov[j, j]) if cov[j, j] >= 0 else np.nan
    return out, spread
