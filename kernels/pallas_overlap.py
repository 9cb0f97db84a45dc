"""The layer-overlap recurrence as a Pallas kernel: state in registers across buckets.

Same function as :func:`kernels.overlap.on_grid` over :func:`kernels.overlap.iteration`
(exact max), checked against it by the tests. The XLA version scans over buckets
with the [K, C] state as the loop carry, so every bucket step reads and writes the
state through memory: memory-bound. Here one program owns a tile of ``tile``
configurations of one worker layout, keeps their ``end`` times in registers for the
whole bucket loop, reads each bucket's constants as scalars (the same for every
lane), and writes the four outputs once.

Buckets are padded to a power of two (Triton block shapes must be), but the loop
runs only over the real ones (a count read at run time), so each step is one max,
one multiply-add and one or two adds: with ``zero_latency`` (every latency 0, the
default sweep) the latency add is compiled out. On CPU the tests run it with
``interpret=True``; the Triton backend is imported only when compiling for a GPU.
"""

import functools
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

from netsweep_jax.kernels.overlap import (
    METRICS,
    PAD_CONFIG,
    PAPER,
    Buckets,
    Config,
    Features,
    Metrics,
    Workers,
)

DEFAULT_TILE = 1024
DEFAULT_WARPS = 2  # measured best on an H200 with tile 1024 (benchmarks/README.md)


def _next_pow2(n: int) -> int:
    return 1 << max(0, (int(n) - 1).bit_length())


LAYOUT_COLUMNS = ("transfer", "wire", "messages", "straggle", "multi", "piped")  # then the reduce sum
SUM_COLUMNS = ("t1", "bytes", "real buckets", "R_last")


def _program(steps: int, unroll: bool, zero_latency: bool, features: Features, *refs: Any) -> None:
    """One tile of configurations under one workers (refs as laid out in :func:`on_grid_pallas`)."""
    config_refs, (layout_ref, sums_ref, reduce_ref, ready_ref, nbytes_ref), outs = (
        refs[:8],
        refs[8:13],
        refs[13:],
    )
    bandwidth, utilization, ratio, latency, overhead, slowdown, jitter, accum = (r[...] for r in config_refs)
    transfer, wire, messages, straggle, multi, piped, reduce_sum = (layout_ref[0, i] for i in range(7))
    t1, bytes_sum, real_buckets, r_last = (sums_ref[i] for i in range(4))
    effective = bandwidth * utilization
    alpha = (transfer + wire / effective) / ratio
    net, intra = wire / effective / ratio, transfer / ratio
    lat = messages * latency
    k = 1.0 + multi * ((1.0 + slowdown) * (1.0 + jitter * straggle) - 1.0)

    def step(i: int | jax.Array, carry: tuple[jax.Array, ...]) -> tuple[jax.Array, ...]:
        end, comm = carry
        ready = ready_ref[i] * k if features.compute else ready_ref[i]
        cost = alpha * nbytes_ref[i] + reduce_ref[0, i]
        duration = cost if zero_latency else cost + lat
        if features.piped:
            pipelined = jnp.maximum(jnp.maximum(net * nbytes_ref[i], intra * nbytes_ref[i]), reduce_ref[0, i])
            duration = jnp.where(piped > 0, pipelined if zero_latency else pipelined + lat, duration)
        return jnp.maximum(ready, end) + duration, comm + duration

    carry: tuple[jax.Array, ...] = (jnp.zeros_like(alpha), jnp.zeros_like(alpha))
    if unroll:  # static indices only, padded buckets masked: for backends without dynamic loops
        for i in range(steps):
            new = step(i, carry)
            carry = tuple(jnp.where(i < real_buckets, a, b) for a, b in zip(new, carry))
    else:
        carry = lax.fori_loop(0, real_buckets.astype(jnp.int32), step, carry)
    end, piped_comm = carry
    r_last = r_last * k if features.compute else r_last
    exposed = jnp.maximum(r_last, end) - r_last
    work = t1 * accum
    total = work * k + exposed + multi * overhead if features.compute else work + exposed
    sf_ref, it_ref, ex_ref, comm_ref = outs
    # exposed >= 0, so the exact ratio is <= 1; Triton's fast division can round
    # t1 / t1 to 1 + 1 ulp (seen on an H200), so clamp to the exact bound.
    sf_ref[0, :] = jnp.minimum(work / total, 1.0)
    it_ref[0, :] = total
    ex_ref[0, :] = exposed
    closed = alpha * bytes_sum + lat * real_buckets + reduce_sum
    comm_ref[0, :] = jnp.where(piped > 0, piped_comm, closed) if features.piped else closed


def on_grid_pallas(
    config: Config,
    workers: Workers,
    buckets: Buckets,
    t1: jax.Array,
    *,
    features: Features = PAPER,
    tile: int = DEFAULT_TILE,
    interpret: bool = False,
    unroll: bool = False,
    num_warps: int = DEFAULT_WARPS,
    zero_latency: bool = False,
) -> Metrics:
    """Drop-in for :func:`kernels.overlap.on_grid` with the exact max.

    Args:
      config: :class:`~kernels.overlap.Config` of [C] arrays.
      workers: :class:`~kernels.overlap.Workers` of [K] arrays and reduce [K, Bk].
      buckets: :class:`~kernels.overlap.Buckets` of [Bk], real buckets first.
      t1: scalar (s).
      features: static :class:`~kernels.overlap.Features`.
      tile: configurations per program (a power of two).
      interpret: run in the Pallas interpreter (CPU tests).
      unroll: unroll the bucket loop (static indices) instead of a loop.
      num_warps: warps per program on GPU (Triton).
      zero_latency: static promise that every latency is 0 (skips its add).

    Returns:
      dict of [K, C] arrays: scaling_factor, iteration_time, exposed_comm, comm_time.
    """
    k, c = workers.reduce.shape[0], config.bandwidth.shape[0]
    steps = buckets.ready.shape[0]
    dt = config.bandwidth.dtype
    tile = min(tile, _next_pow2(c))
    cp = -(-c // tile) * tile
    bp = _next_pow2(steps)

    per_config, coeffs, sums = _packed(config, workers, buckets, t1, cp)
    config_spec = pl.BlockSpec((tile,), lambda i, j: (j,))
    out_spec = pl.BlockSpec((1, tile), lambda i, j: (i, j))
    whole = lambda n: pl.BlockSpec((n,), lambda i, j: (0,))  # noqa: E731
    params = None
    if not interpret:
        from jax.experimental.pallas import triton as pl_triton  # GPU only

        params = pl_triton.CompilerParams(num_warps=num_warps, num_stages=1)
    outs = pl.pallas_call(
        functools.partial(_program, steps, unroll, zero_latency, features),
        grid=(k, cp // tile),
        in_specs=[config_spec] * len(per_config)
        + [
            pl.BlockSpec((1, 8), lambda i, j: (i, 0)),
            whole(8),
            pl.BlockSpec((1, bp), lambda i, j: (i, 0)),
            whole(bp),
            whole(bp),
        ],
        out_specs=[out_spec] * 4,
        out_shape=[jax.ShapeDtypeStruct((k, cp), dt)] * 4,
        interpret=interpret,
        compiler_params=params,
    )(
        *per_config,
        coeffs,
        sums,
        jnp.pad(workers.reduce, ((0, 0), (0, bp - steps))),
        _pad(buckets.ready, bp, 0.0),
        _pad(buckets.nbytes, bp, 0.0),
    )
    return {n: o[:, :c] for n, o in zip(METRICS, outs)}


def _pad(x: jax.Array, n: int, value: float) -> jax.Array:
    """``x`` [m] padded with ``value`` to [n]."""
    return jnp.pad(x, (0, n - x.shape[0]), constant_values=value)


def _packed(
    config: Config, workers: Workers, buckets: Buckets, t1: jax.Array, cp: int
) -> tuple[list[jax.Array], jax.Array, jax.Array]:
    """The program's packed inputs: each Config field padded to ``cp`` lanes with harmless values, the workers
    coefficients [K, 8] (:data:`LAYOUT_COLUMNS`, the reduce total, a zero) and the scalars [8] (T1, total bytes,
    real buckets, last ready time, zeros), in the configurations' dtype."""
    dt = config.bandwidth.dtype
    per_config = [_pad(getattr(config, f), cp, getattr(PAD_CONFIG, f)) for f in config._fields]
    coeffs = jnp.stack(
        [getattr(workers, c) for c in LAYOUT_COLUMNS]
        + [jnp.sum(workers.reduce, axis=1), jnp.zeros_like(workers.wire)],
        axis=1,
    ).astype(dt)
    real = jnp.sum(buckets.valid)
    sums = jnp.stack(
        [jnp.asarray(t1, dt), jnp.sum(buckets.nbytes), real, jnp.max(buckets.ready), 0, 0, 0, 0]
    ).astype(dt)
    return per_config, coeffs, sums
