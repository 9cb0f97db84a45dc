"""The layer-overlap recurrence as a Pallas kernel: state in registers across buckets.

Same function as :func:`kernels.overlap.block_metrics`. The XLA version scans over
buckets with the [K, C] state as the loop carry, so every bucket step reads and
writes the state through memory: memory-bound. Here one program owns a tile of
``tile`` configurations of one worker layout, keeps their ``end`` times in
registers for the whole bucket loop, reads each bucket's three constants as
scalars (the same for every lane), and writes the four outputs once.

Buckets are padded to a power of two (Triton block shapes must be), but the loop
runs only over the real ones (a count read at run time), so each step is one max,
one multiply-add and one or two adds: with ``zero_latency`` (every latency 0, the
default sweep) the latency add is compiled out. On CPU the tests run it with
``interpret=True``.
"""

import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as pl_triton

DEFAULT_TILE = 1024
DEFAULT_WARPS = 2  # measured best on an H200 with tile 1024 (benchmarks/README.md)


def _next_pow2(n):
    return 1 << max(0, (int(n) - 1).bit_length())


def _kernel(steps, unroll, zero_latency, inv_bw_ref, inv_ratio_ref, lat_ref, layout_ref, glob_ref, fixed_ref,
            ready_ref, nbytes_ref, sf_ref, it_ref, ex_ref, comm_ref):
    a, b, l_coef, fixed_sum = layout_ref[0, 0], layout_ref[0, 1], layout_ref[0, 2], layout_ref[0, 3]
    t1, bytes_sum, valid_sum, r_last = glob_ref[0], glob_ref[1], glob_ref[2], glob_ref[3]
    alpha = (a + b * inv_bw_ref[...]) * inv_ratio_ref[...]
    lat = l_coef * lat_ref[...]

    def step(i, end):
        cost = alpha * nbytes_ref[i] + fixed_ref[0, i]
        return jnp.maximum(ready_ref[i], end) + (cost if zero_latency else cost + lat)

    end = jnp.zeros_like(alpha)
    if unroll:  # static indices only, padded buckets masked: for backends without dynamic loops
        for i in range(steps):
            end = jnp.where(i < valid_sum, step(i, end), end)
    else:
        end = lax.fori_loop(0, glob_ref[4].astype(jnp.int32), step, end)
    exposed = jnp.maximum(r_last, end) - r_last
    iteration = t1 + exposed
    # exposed >= 0, so the exact ratio is <= 1; Triton's fast division can round
    # t1 / t1 to 1 + 1 ulp (seen on an H200), so clamp to the exact bound.
    sf_ref[0, :] = jnp.minimum(t1 / iteration, 1.0)
    it_ref[0, :] = iteration
    ex_ref[0, :] = exposed
    comm_ref[0, :] = alpha * bytes_sum + lat * valid_sum + fixed_sum


@functools.partial(jax.jit, static_argnames=("tile", "interpret", "unroll", "num_warps", "zero_latency"))
def block_metrics_pallas(inv_bandwidth, inv_ratio, latency, a_coef, b_coef, l_coef, fixed, ready, nbytes,
                         valid, t1, *, tile=DEFAULT_TILE, interpret=False, unroll=False,
                         num_warps=DEFAULT_WARPS, zero_latency=False):
    """Drop-in for :func:`kernels.overlap.block_metrics` (same arguments and outputs).

    Args:
      inv_bandwidth, inv_ratio, latency: [C] per configuration (s/bit, 1, s).
      a_coef, b_coef, l_coef: [K] layout coefficients.
      fixed: [K, Bk]; ready, nbytes, valid: [Bk], real buckets first then padding
        (valid 0); t1: scalar (s).
      tile: configurations per program (a power of two).
      interpret: run the kernel in the Pallas interpreter (CPU tests).
      unroll: unroll the bucket loop (static indices) instead of a loop.
      num_warps: warps per program on GPU (Triton).
      zero_latency: static promise that every ``latency`` is 0 (skips its add).

    Returns:
      dict of [K, C] arrays: scaling_factor, iteration_time, exposed_comm, comm_time.
    """
    k, c = fixed.shape[0], inv_bandwidth.shape[0]
    steps = ready.shape[0]
    dt = inv_bandwidth.dtype
    tile = min(tile, _next_pow2(c))
    cp = -(-c // tile) * tile
    bp = _next_pow2(steps)

    def pad(x, n, value):
        return jnp.pad(x, (0, n - x.shape[0]), constant_values=value)

    inv_bw, inv_r, lat = pad(inv_bandwidth, cp, 1.0), pad(inv_ratio, cp, 1.0), pad(latency, cp, 0.0)
    ready_p, nbytes_p = pad(ready, bp, 0.0), pad(nbytes, bp, 0.0)
    fixed_p = jnp.pad(fixed, ((0, 0), (0, bp - steps)))
    layout = jnp.stack([a_coef, b_coef, l_coef, jnp.sum(fixed, axis=1)], axis=1).astype(dt)
    n_real = jnp.sum(valid)
    glob = jnp.stack([jnp.asarray(t1, dt), jnp.sum(nbytes), n_real, jnp.max(ready), n_real, 0, 0, 0]).astype(dt)

    per_config = pl.BlockSpec((tile,), lambda i, j: (j,))
    out_spec = pl.BlockSpec((1, tile), lambda i, j: (i, j))
    whole = lambda n: pl.BlockSpec((n,), lambda i, j: (0,))  # noqa: E731
    outs = pl.pallas_call(
        functools.partial(_kernel, steps, unroll, zero_latency),
        grid=(k, cp // tile),
        in_specs=[per_config, per_config, per_config,
                  pl.BlockSpec((1, 4), lambda i, j: (i, 0)), whole(8),
                  pl.BlockSpec((1, bp), lambda i, j: (i, 0)), whole(bp), whole(bp)],
        out_specs=[out_spec] * 4,
        out_shape=[jax.ShapeDtypeStruct((k, cp), dt)] * 4,
        interpret=interpret,
        compiler_params=None if interpret else pl_triton.CompilerParams(num_warps=num_warps, num_stages=1),
    )(inv_bw, inv_r, lat, layout, glob, fixed_p, ready_p, nbytes_p)
    names = ("scaling_factor", "iteration_time", "exposed_comm", "comm_time")
    return {n: o[:, :c] for n, o in zip(names, outs)}
