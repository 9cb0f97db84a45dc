"""Calibration as a pure function: fit model parameters to measured rows by gradient descent.

Each row is one measured run: its configuration, worker layout, buckets and T1
(:class:`Rows`). A fitted family f (a :class:`~kernels.overlap.Config` field:
utilization, latency, overhead, slowdown, jitter) has one or more parameters (one
per group of rows, e.g. per framework); row r uses parameter ``index[r, f]``. Each
parameter p is unconstrained and mapped into its bounds [lo_f, hi_f]:

    value = lo_f + (hi_f - lo_f) * sigmoid(p)

The loss is the weighted mean squared residual, (predicted - measured) for scaling
factors and (predicted - measured) / measured for iteration times; rows with weight
0 (held out) do not count. The fit starts from the best of the given starting points
under the exact model, then runs ``steps`` Adam steps (optax) on the loss with the
max smoothed (softness x T1 per row, so the gradient does not vanish where
communication is just hidden), keeping the parameters with the lowest exact loss.
"""

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from jax import lax
from jax.typing import ArrayLike

from netsweep_jax.kernels.overlap import PAPER, Buckets, Config, Features, Layout, on_rows


class FitSpec(NamedTuple):
    """What is fitted (static).

    Attributes:
      fields: Config fields fitted, one per family.
      lows, highs: each family's bounds in SI units.
    """

    fields: tuple[str, ...]
    lows: tuple[float, ...]
    highs: tuple[float, ...]

    def value(self, f: int, p: ArrayLike) -> jax.Array:
        """Family ``f``'s value for unconstrained parameter(s) ``p``."""
        return self.lows[f] + (self.highs[f] - self.lows[f]) * jax.nn.sigmoid(p)


class Rows(NamedTuple):
    """R measured runs, one of each per row (buckets padded to a common Bk).

    Attributes:
      config: :class:`~kernels.overlap.Config` of [R] (fitted fields are replaced).
      layout: :class:`~kernels.overlap.Layout` of [R] and reduce [R, Bk].
      buckets: :class:`~kernels.overlap.Buckets` of [R, Bk].
      t1: [R] single-GPU iteration times (s).
      index: [R, F] int, the parameter each row uses for each fitted family.
    """

    config: Config
    layout: Layout
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
    return on_rows(rows.config._replace(**values), rows.layout, rows.buckets, rows.t1, soft, features)


def residual(predicted: Any, target: Any, measured: str) -> Any:
    """[R] residuals of predictions: absolute for scaling factors, relative for iteration times.

    Plain arithmetic: numpy arrays in, numpy arrays out (the calibration report), JAX arrays
    in, JAX arrays out (the fit's loss)."""
    return (predicted - target) / (1.0 if measured == "scaling_factor" else target)


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
    learning_rate: float,
    softness: jax.Array | float,
    features: Features = PAPER,
) -> tuple[jax.Array, jax.Array]:
    """Best parameters and their exact loss.

    Args:
      starts: [S, P] unconstrained starting points.
      rows: :class:`Rows`; target: [R] measured values of ``measured``; weights: [R] (0: held out).
      spec: :class:`FitSpec` (static); measured: output name (static).
      steps: Adam steps (static); learning_rate, softness: scalars.
      features: static :class:`~kernels.overlap.Features`.

    Returns:
      ([P] unconstrained parameters, scalar exact loss).
    """

    def loss(params: jax.Array, soft: jax.Array | float | None) -> jax.Array:
        r = residuals(params, rows, target, spec=spec, measured=measured, softness=soft, features=features)
        return jnp.sum(weights * r**2) / jnp.sum(weights)

    def exact(params: jax.Array) -> jax.Array:
        return loss(params, None)

    params = starts[jnp.argmin(jax.vmap(exact)(starts))]
    opt = optax.adam(learning_rate)
    grad = jax.grad(loss)

    def step(carry: tuple[jax.Array, Any, jax.Array, jax.Array], _: None) -> tuple[Any, None]:
        params, state, best, best_loss = carry
        updates, state = opt.update(grad(params, softness), state)
        params = optax.apply_updates(params, updates)
        current = exact(params)
        better = current < best_loss
        return (params, state, jnp.where(better, params, best), jnp.where(better, current, best_loss)), None

    carry = (params, opt.init(params), params, exact(params))
    (_, _, best, best_loss), _ = lax.scan(step, carry, None, length=steps)
    return best, best_loss
