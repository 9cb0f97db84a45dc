"""Calibration as a pure function: fit a model's parameters to measured rows by gradient descent.

The fitter, :func:`fit_model`, fits any model given as a pure JAX prediction function
``predict(values, smooth) -> [R]``: the prediction of each of R rows from P parameter values
(the model's units), exact when ``smooth`` is False, smoothed for the descent when it is True
(a model with nothing to smooth ignores the flag). Each parameter j is unconstrained, p_j,
and mapped into its bounds [lo_j, hi_j] (:func:`bounded`; equal bounds pin it there):

    value_j = lo_j + (hi_j - lo_j) * sigmoid(p_j)

Each row's residual is one of (:data:`RESIDUALS`), for predicted y^ and measured y:

    absolute   r = y^ - y
    relative   r = (y^ - y) / y
    log        r = log(y^ / y)

The loss is the weighted mean squared residual, a residual that is not finite (a prediction
undefined there) counting :data:`UNDEFINED`; rows with weight 0 (held out, padding) do not count:

    L(p) = sum_r w_r rho(r_r) / sum_r w_r,      rho(x) = x^2 where finite, else UNDEFINED

The fit (:func:`minimize`) starts from the best of the given starting points under the exact
model, then runs ``steps`` Adam steps (optax) on the smoothed model's loss, keeping the
parameters with the lowest exact loss seen (the start's included): the result is never worse,
under the exact model, than the best start. With ``restarts`` k > 1 it descends from each of the
k best starts in turn and keeps the lowest exact loss of the k descents (the best start's on a
tie): a descent from the best start alone can end in a basin a worse start's descent leaves
(a three-parameter calibration ended at rmse 0.052 where its two-parameter sub-fit reaches
0.024 and a descent from the fourth-best start 0.0045, a hunt).

The data-parallel family (:func:`fit`) is one such model: each row is one measured run, its
configuration, worker layout, buckets and T1 (:class:`Rows`); a fitted family f (a
:class:`~kernels.overlap.Config` field: utilization, latency, overhead, slowdown, jitter) has one
or more parameters (one per group of rows, e.g. per framework) sharing the family's bounds; row
r uses parameter ``index[r, f]``. Its residual is absolute for scaling factors and relative for
iteration times, and its smoothed model replaces the max by a smooth one of width softness x T1
per row, so the gradient does not vanish where communication is just hidden.
"""

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax
from jax.typing import ArrayLike

from netsweep_jax.kernels.overlap import PAPER, Buckets, Config, Features, Workers, on_rows

RESIDUALS = ("absolute", "relative", "log")
UNDEFINED = 1e6  # a row's squared residual where its prediction is not defined (not finite)

# predict(values [P], smooth) -> [R] predictions; values in the model's units, smooth a Python bool.
Predict = Callable[[jax.Array, bool], jax.Array]
# objective(params [P] unconstrained, smooth) -> scalar loss.
Objective = Callable[[jax.Array, bool], jax.Array]


def bounded(params: ArrayLike, lows: ArrayLike, highs: ArrayLike) -> jax.Array:
    """Values [..., P] of unconstrained ``params`` [..., P] in bounds ``lows``, ``highs`` [P] (their units)."""
    lows, highs = jnp.asarray(lows), jnp.asarray(highs)
    return lows + (highs - lows) * jax.nn.sigmoid(params)


def unbounded(values: ArrayLike, lows: ArrayLike, highs: ArrayLike, margin: float = 1e-6) -> jax.Array:
    """Unconstrained parameters [..., P] whose :func:`bounded` values are ``values`` [..., P], each held
    ``margin`` (a fraction of its bounds' width) inside them; 0 where a parameter's bounds are equal."""
    lows, highs = jnp.asarray(lows), jnp.asarray(highs)
    width = highs - lows
    frac = jnp.clip((values - lows) / jnp.where(width > 0, width, 1.0), margin, 1 - margin)
    return jnp.where(width > 0, jnp.log(frac / (1 - frac)), 0.0)


def row_residuals(predicted: Any, target: Any, kind: str) -> Any:
    """[R] residuals of predictions ``predicted`` [R] of measured ``target`` [R] (:data:`RESIDUALS`): plain
    arithmetic for ``absolute`` and ``relative`` (numpy arrays in, numpy arrays out), JAX's log for ``log``."""
    if kind == "absolute":
        return (predicted - target) / 1.0
    if kind == "relative":
        return (predicted - target) / target
    if kind == "log":
        return jnp.log(predicted / target)
    raise ValueError(f"residual {kind!r}: one of {', '.join(RESIDUALS)}")


def mean_square(res: jax.Array, weights: jax.Array) -> jax.Array:
    """The loss: weighted mean of the squared residuals ``res`` [R], :data:`UNDEFINED` where not finite."""
    return jnp.sum(weights * jnp.where(jnp.isfinite(res), res**2, UNDEFINED)) / jnp.sum(weights)


def minimize(
    objective: Objective,
    starts: jax.Array,
    *,
    steps: int,
    learning_rate: jax.Array | float,
    restarts: int = 1,
) -> tuple[jax.Array, jax.Array]:
    """The fitter's search: the best of ``starts`` [S, P] under ``objective(params, False)`` (exact), then
    ``steps`` Adam steps on ``objective(params, True)`` (smoothed), keeping the lowest exact loss; with
    ``restarts`` k > 1 (static), the same from each of the k best starts, one after another, keeping the lowest
    exact loss of them (the best start's descent on a tie, so that k = 1's result is one of the candidates).

    Returns ([P] unconstrained parameters, scalar exact loss)."""

    def exact(params: jax.Array) -> jax.Array:
        return objective(params, False)

    import optax  # here, not at the top: every command imports this module, and only a fit needs optax (0.1 s)

    # The start's exact loss is the vmapped one already computed (a second trace of the model, for it alone, cost a
    # fifth of each fit's compile).
    start_losses = jax.vmap(exact)(starts)
    opt = optax.adam(learning_rate)
    grad = jax.grad(lambda p: objective(p, True))

    def step(carry: tuple[jax.Array, Any, jax.Array, jax.Array], _: None) -> tuple[Any, None]:
        params, state, best, best_loss = carry
        updates, state = opt.update(grad(params), state)
        params = optax.apply_updates(params, updates)
        current = exact(params)
        better = current < best_loss
        return (params, state, jnp.where(better, params, best), jnp.where(better, current, best_loss)), None

    def descend(first: jax.Array) -> tuple[jax.Array, jax.Array]:
        params = starts[first]
        carry = (params, opt.init(params), params, start_losses[first])
        (_, _, best, best_loss), _ = lax.scan(step, carry, None, length=steps)
        return best, best_loss

    if restarts <= 1:
        return descend(jnp.argmin(start_losses))
    # one descent after another (lax.map), not vmapped: each is the single descent's program, so the best
    # start's result is the one restarts=1 gives, bit for bit; argsort is stable, so argmin below prefers it
    bests, losses = lax.map(descend, jnp.argsort(start_losses)[: min(restarts, starts.shape[0])])
    chosen = jnp.argmin(losses)
    return bests[chosen], losses[chosen]


def fit_model(
    predict: Predict,
    starts: jax.Array,
    target: jax.Array,
    weights: jax.Array,
    *,
    lows: ArrayLike,
    highs: ArrayLike,
    residual: str,
    steps: int,
    learning_rate: jax.Array | float,
) -> tuple[jax.Array, jax.Array]:
    """Fit the P parameters of the model ``predict`` to measured rows: best parameters and their exact loss.

    Args:
      predict: ``predict(values [P], smooth) -> [R]``, pure JAX; values in the model's units.
      starts: [S, P] unconstrained starting points (:func:`unbounded` of values).
      target: [R] measured values (the predictions' units); weights: [R] (0: held out or padding).
      lows, highs: [P] each parameter's bounds (the model's units; equal: the parameter is held there).
      residual: one of :data:`RESIDUALS` (static); steps: Adam steps (static); learning_rate: scalar.

    Returns:
      ([P] unconstrained parameters: :func:`bounded` gives their values, scalar exact loss).
    """

    def objective(params: jax.Array, smooth: bool) -> jax.Array:
        return mean_square(
            row_residuals(predict(bounded(params, lows, highs), smooth), target, residual), weights
        )

    return minimize(objective, starts, steps=steps, learning_rate=learning_rate)


class FitSpec(NamedTuple):
    """What is fitted in the data-parallel family (static).

    Attributes:
      fields: Config fields fitted, one per family.
      lows, highs: each family's bounds in SI units.
    """

    fields: tuple[str, ...]
    lows: tuple[float, ...]
    highs: tuple[float, ...]

    def value(self, f: int, p: ArrayLike) -> jax.Array:
        """Family ``f``'s value for unconstrained parameter(s) ``p`` (:func:`bounded`'s map, its bounds Python
        floats)."""
        return self.lows[f] + (self.highs[f] - self.lows[f]) * jax.nn.sigmoid(p)


class Rows(NamedTuple):
    """R measured runs, one of each per row (buckets padded to a common Bk).

    Attributes:
      config: :class:`~kernels.overlap.Config` of [R] (fitted fields are replaced).
      workers: :class:`~kernels.overlap.Workers` of [R] and reduce [R, Bk].
      buckets: :class:`~kernels.overlap.Buckets` of [R, Bk].
      t1: [R] single-GPU iteration times (s).
      index: [R, F] int, the parameter each row uses for each fitted family.
    """

    config: Config
    workers: Workers
    buckets: Buckets
    t1: jax.Array
    index: jax.Array  # type: ignore[assignment]  # a field named as tuple.index: the callers' name


def predict(
    params: jax.Array,
    rows: Rows,
    *,
    spec: FitSpec,
    softness: jax.Array | float | None,
    features: Features = PAPER,
) -> dict[str, jax.Array]:
    """Metrics of every row with the fitted fields set from ``params`` [P]: dict of [R]."""
    values = {field: spec.value(f, params[rows.index[:, f]]) for f, field in enumerate(spec.fields)}
    soft = None if softness is None else softness * rows.t1
    return on_rows(rows.config._replace(**values), rows.workers, rows.buckets, rows.t1, soft, features)


def residual_kind(measured: str) -> str:
    """The data-parallel family's residual (:data:`RESIDUALS`) for output ``measured``: absolute for scaling
    factors, relative for iteration times."""
    return "absolute" if measured == "scaling_factor" else "relative"


def residual(predicted: Any, target: Any, measured: str) -> Any:
    """[R] residuals of predictions: absolute for scaling factors, relative for iteration times
    (:func:`row_residuals` of :func:`residual_kind`).

    Plain arithmetic: numpy arrays in, numpy arrays out (the calibration report), JAX arrays
    in, JAX arrays out (the fit's loss)."""
    return row_residuals(predicted, target, residual_kind(measured))


def residuals(
    params: jax.Array,
    rows: Rows,
    target: jax.Array,
    *,
    spec: FitSpec,
    measured: str,
    softness: jax.Array | float | None,
    features: Features = PAPER,
) -> jax.Array:
    """[R] residuals of the model under ``params`` (:func:`residual`)."""
    pred = predict(params, rows, spec=spec, softness=softness, features=features)[measured]
    return residual(pred, target, measured)


def fit(
    starts: jax.Array,
    rows: Rows,
    target: jax.Array,
    weights: jax.Array,
    *,
    spec: FitSpec,
    measured: str,
    steps: int,
    learning_rate: jax.Array | float,
    softness: jax.Array | float,
    features: Features = PAPER,
    restarts: int = 1,
) -> tuple[jax.Array, jax.Array]:
    """The data-parallel family's best parameters and their exact loss (:func:`minimize` of its loss).

    Its model maps a family's parameters row by row (``spec.value`` of ``params[index]``), where
    :func:`fit_model` maps them before the model gathers them: the same values, but the gradient's sums
    would round differently, and ``calibrate``'s results are kept bit for bit.

    Args:
      starts: [S, P] unconstrained starting points.
      rows: :class:`Rows`; target: [R] measured values of ``measured``; weights: [R] (0: held out).
      spec: :class:`FitSpec` (static); measured: output name (static).
      steps: Adam steps (static); learning_rate, softness: scalars.
      features: static :class:`~kernels.overlap.Features`.
      restarts: descents from the best starts (static; :func:`minimize`).

    Returns:
      ([P] unconstrained parameters, scalar exact loss).
    """

    def objective(params: jax.Array, smooth: bool) -> jax.Array:
        soft = softness if smooth else None
        r = residuals(params, rows, target, spec=spec, measured=measured, softness=soft, features=features)
        return mean_square(r, weights)

    return minimize(objective, starts, steps=steps, learning_rate=learning_rate, restarts=restarts)
