"""Calibration as a pure function: fit model parameters to measured rows by gradient descent.

Each row is one measured run: its configuration, worker layout, buckets and T1
(:class:`Rows`). A fitted parameter p replaces one :class:`~kernels.overlap.Config`
field in every row, through a transform that keeps it in its domain:

    utilization = sigmoid(p)                    in (0, 1)
    latency     = softplus(p) * 1e-6 s          >= 0 (p in microseconds before softplus)

The loss is the mean squared residual, (predicted - measured) for scaling factors
and (predicted - measured) / measured for iteration times. The fit starts from the
best of the given starting points under the exact model, then runs ``steps`` Adam
steps (optax) on the loss with the max smoothed (softness x T1 per row, so the
gradient does not vanish where communication is just hidden), keeping the
parameters with the lowest exact loss seen.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax
from jax import lax

from kernels.overlap import Buckets, Config, Layout, on_rows

TRANSFORMS = {
    "utilization": jax.nn.sigmoid,
    "latency": lambda p: jax.nn.softplus(p) * 1e-6,
}


class Rows(NamedTuple):
    """R measured runs, one of each per row (buckets padded to a common Bk).

    Attributes:
      config: :class:`~kernels.overlap.Config` of [R] (fixed values of fitted fields are ignored).
      layout: :class:`~kernels.overlap.Layout` of [R] and reduce [R, Bk].
      buckets: :class:`~kernels.overlap.Buckets` of [R, Bk].
      t1: [R] single-GPU iteration times (s).
    """

    config: Config
    layout: Layout
    buckets: Buckets
    t1: jax.Array


def predict(params, rows, *, fitted, softness):
    """Metrics of every row with the ``fitted`` fields set from ``params``: dict of [R]."""
    n = rows.t1.shape[0]
    config = rows.config._replace(**{name: jnp.full(n, TRANSFORMS[name](params[name])) for name in fitted})
    soft = None if softness is None else softness * rows.t1
    return on_rows(config, rows.layout, rows.buckets, rows.t1, soft)


def residuals(params, rows, target, *, fitted, measured, softness):
    """[R] residuals: absolute for scaling factors, relative for iteration times."""
    pred = predict(params, rows, fitted=fitted, softness=softness)[measured]
    return (pred - target) / (1.0 if measured == "scaling_factor" else target)


def fit(starts, rows, target, *, fitted, measured, steps, learning_rate, softness):
    """Best parameters and their exact loss.

    Args:
      starts: dict name -> [S] unconstrained starting values.
      rows: :class:`Rows`; target: [R] measured values of ``measured``.
      fitted: tuple of Config field names (static); measured: output name (static).
      steps: Adam steps (static); learning_rate, softness: scalars.

    Returns:
      (dict name -> scalar unconstrained parameter, scalar exact loss).
    """
    kw = dict(fitted=fitted, measured=measured)

    def loss(params, soft):
        return jnp.mean(residuals(params, rows, target, softness=soft, **kw) ** 2)

    def exact(params):
        return loss(params, None)

    first = jnp.argmin(jax.vmap(exact)(starts))
    params = {k: v[first] for k, v in starts.items()}
    opt = optax.adam(learning_rate)
    grad = jax.grad(loss)

    def step(carry, _):
        params, state, best, best_loss = carry
        updates, state = opt.update(grad(params, softness), state)
        params = optax.apply_updates(params, updates)
        current = exact(params)
        better = current < best_loss
        best = {k: jnp.where(better, params[k], best[k]) for k in best}
        return (params, state, best, jnp.where(better, current, best_loss)), None

    carry = (params, opt.init(params), params, exact(params))
    (_, _, best, best_loss), _ = lax.scan(step, carry, None, length=steps)
    return best, best_loss
