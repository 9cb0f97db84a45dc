"""The one module that calls ``jax.jit``: fixed-shape entry points around the kernels.

Every argument that varies within a sweep, a query or a fit is a traced array;
only structural choices are static (which kernel, which axis is solved, which
parameters are fitted). Shapes are fixed per sweep (padded blocks, buckets padded
to the sweep's maximum), so a sweep compiles once per dtype, and a second sweep or
fit of the same shapes compiles nothing.
"""

import functools

import jax
import jax.numpy as jnp

from kernels import fit
from kernels.bisect import smallest_reaching
from kernels.overlap import Config, on_grid, on_table


@functools.partial(jax.jit, static_argnames=("kernel", "zero_latency"))
def grid_metrics(config, layout, buckets, t1, *, kernel="xla", zero_latency=False):
    """Metrics of config [C] x layout [K] (see :func:`kernels.overlap.on_grid`): dict of [K, C].

    ``kernel``: ``xla`` (the scan), ``pallas`` or ``pallas-interpret``;
    ``zero_latency``: a promise that every latency is 0 (Pallas skips an add).
    """
    if kernel == "xla":
        return on_grid(config, layout, buckets, t1, None)
    from kernels.pallas_overlap import on_grid_pallas  # only where asked for

    return on_grid_pallas(config, layout, buckets, t1, interpret=kernel == "pallas-interpret",
                          zero_latency=zero_latency)


@jax.jit
def table_metrics(config, layout, buckets, t1):
    """Metrics of config [K, C] (a configuration per cell) under layout [K]: dict of [K, C]."""
    return on_table(config, layout, buckets, t1, None)


@functools.partial(jax.jit, static_argnames=("axis", "iterations"))
def smallest_on_grid(config, layout, buckets, t1, target, low, high, *, axis, iterations=40):
    """Smallest value of Config field ``axis`` in [low, high] reaching scaling factor ``target``.

    Args as :func:`grid_metrics` (the ``axis`` field of ``config`` is ignored);
    returns (value [K, C], status [K, C]) as :func:`kernels.bisect.smallest_reaching`.
    """
    shape = (layout.messages.shape[0], config.bandwidth.shape[0])
    cells = Config(*(jnp.broadcast_to(v[None, :], shape) for v in config))

    def scaling(x):
        return on_table(cells._replace(**{axis: x}), layout, buckets, t1, None)["scaling_factor"]

    return smallest_reaching(scaling, target, low, high, shape, config.bandwidth.dtype, iterations)


@functools.partial(jax.jit, static_argnames=("fitted", "measured", "steps"))
def fit_rows(starts, rows, target, *, fitted, measured, steps, learning_rate, softness):
    """Fit parameters ``fitted`` to measured rows (see :func:`kernels.fit.fit`)."""
    return fit.fit(starts, rows, target, fitted=fitted, measured=measured, steps=steps,
                   learning_rate=learning_rate, softness=softness)


@functools.partial(jax.jit, static_argnames=("fitted",))
def predict_rows(params, rows, *, fitted):
    """Exact-model predictions of every row under ``params`` (see :func:`kernels.fit.predict`)."""
    return fit.predict(params, rows, fitted=fitted, softness=None)
