"""kernels.fit's fitter on a model given as a plain JAX prediction function: bounds, residuals, best of starts."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from netsweep_jax.kernels import fit

X = np.linspace(0.5, 4.0, 12)


def _power(values, smooth):
    """y = a x^b + c: three parameters, the third (c) meant to be held by equal bounds."""
    a, b, c = values[0], values[1], values[2]
    return a * X**b + c


@pytest.fixture(scope="module")
def fitted():
    """(a, b) fitted to exact data of a = 2.5, b = 0.7 by log residuals, c held at 0; 1000 Adam steps."""
    lows, highs = np.array([0.1, 0.1, 0.0]), np.array([10.0, 2.0, 0.0])
    target = 2.5 * X**0.7
    weights = np.ones_like(X)
    weights[-1] = 0.0  # held out: the fit must not need it
    target[-1] = 1e3  # and must not see it
    starts = np.stack([np.linspace(-2, 2, 5), np.linspace(2, -2, 5), np.zeros(5)], axis=1)
    with jax.enable_x64(True):
        run = jax.jit(
            lambda s, t, w: fit.fit_model(
                _power, s, t, w, lows=lows, highs=highs, residual="log", steps=1000, learning_rate=0.05
            )
        )
        best, loss = run(starts, target, weights)
        start_losses = [
            float(
                fit.mean_square(
                    fit.row_residuals(_power(fit.bounded(s, lows, highs), False), target, "log"), weights
                )
            )
            for s in starts
        ]
        return np.asarray(fit.bounded(best, lows, highs)), float(loss), min(start_losses)


def test_fit_model_recovers_known_parameters_and_holds_equal_bounds(fitted):
    values, loss, best_start = fitted
    assert values[0] == pytest.approx(2.5, rel=1e-4) and values[1] == pytest.approx(0.7, rel=1e-4)
    assert values[2] == 0.0  # equal bounds: held there, whatever the start
    assert loss < 1e-10 and loss <= best_start  # the lowest exact loss kept: never worse than the best start


def test_bounded_and_unbounded_invert_each_other_inside_the_bounds():
    lows, highs = np.array([0.02, 0.1, 0.6]), np.array([1.0, 1.0, 0.6])
    values = np.array([[0.25, 0.68, 0.6], [0.02, 1.0, 0.6]])
    with jax.enable_x64(True):
        back = np.asarray(fit.bounded(fit.unbounded(values, lows, highs), lows, highs))
    np.testing.assert_allclose(back[0], values[0], rtol=1e-12)
    # At a bound, a margin of 1e-6 of the width inside it; equal bounds give the bound itself.
    np.testing.assert_allclose(back[1], [0.02 + 0.98e-6, 1.0 - 0.9e-6, 0.6], rtol=1e-9)


def test_residuals_and_the_loss_of_an_undefined_row():
    p, y = jnp.array([2.0, 3.0, jnp.nan]), jnp.array([1.0, 2.0, 1.0])
    np.testing.assert_allclose(fit.row_residuals(p, y, "absolute")[:2], [1.0, 1.0])
    np.testing.assert_allclose(fit.row_residuals(p, y, "relative")[:2], [1.0, 0.5])
    np.testing.assert_allclose(fit.row_residuals(p, y, "log")[:2], np.log([2.0, 1.5]))
    # An undefined prediction counts UNDEFINED; a row of weight 0 does not count.
    r = fit.row_residuals(p, y, "absolute")
    assert float(fit.mean_square(r, jnp.array([1.0, 1.0, 1.0]))) == pytest.approx((2 + fit.UNDEFINED) / 3)
    assert float(fit.mean_square(r, jnp.array([1.0, 1.0, 0.0]))) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="one of absolute, relative, log"):
        fit.row_residuals(p, y, "squared")
