"""Tune the Pallas kernel's launch shape on a GPU: tile x warps x loop form.

Times ``on_grid_pallas`` alone (jitted here) on device-resident inputs (resnet50,
fusion off, 2^24 configurations), and the same block through the engine's
Dispatcher, to separate kernel time from per-block overhead. Median of 5 after a warm-up.
Run: ``PYTHONPATH=. python3 benchmarks/gpu_tune.py``.
"""

import functools
import statistics
import time

import jax
import numpy as np

# Internal on purpose: this tunes the Pallas kernel itself (kernels.pallas_overlap) and the engine's
# per-block dispatch (Dispatcher.submit, documented in sweep/engine/dispatch.py); no public API exposes either.
from netsweep_jax.kernels.pallas_overlap import on_grid_pallas
from netsweep_jax.sweep.engine.blocks import Blocking
from netsweep_jax.sweep.engine.dispatch import Dispatcher
from netsweep_jax.sweep.engine.grid import make_grid

C = 2**24


def median_time(fn, repeats=5):
    jax.block_until_ready(fn())
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        jax.block_until_ready(fn())
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def main():
    grid = make_grid("resnet50", bandwidth="1..400@4096", ratio="1..100@4096", fusion_buffer=0)
    blocking = Blocking(grid.sizes, C, grid.family)
    runner = Dispatcher(grid, blocking, kernel="pallas")
    (block,) = blocking.blocks()
    inputs = runner.blocks.inputs
    args = jax.device_put(
        (
            inputs.configs(block.inner_slab),
            inputs.workers(block.task, block.outer_slab),
            inputs.buckets(block.task),
            inputs.t1(block.task),
        )
    )
    nb = int(args[2].valid.sum())
    print(f"{jax.devices()[0].device_kind}: {C:,} configs, {nb} buckets (padded {args[2].ready.shape[0]})")

    def pallas(**options):
        return jax.jit(functools.partial(on_grid_pallas, **options))

    print("| tile | warps | loop | ms | configs/s |")
    print("|---|---|---|---|---|")
    best = None
    for tile in (512, 1024, 2048, 4096):
        for warps in (1, 2, 4, 8):
            if tile // (32 * warps) < 1:
                continue
            for unroll in (False,):
                kernel = pallas(tile=tile, num_warps=warps, unroll=unroll, zero_latency=True)

                def fn(kernel=kernel):
                    return kernel(*args)

                try:
                    t = median_time(fn)
                except Exception as e:  # report, keep tuning
                    print(
                        f"| {tile} | {warps} | {'unrolled' if unroll else 'loop'} | failed: {type(e).__name__} | |"
                    )
                    continue
                print(
                    f"| {tile} | {warps} | {'unrolled' if unroll else 'loop'} | {t * 1e3:.3f} | {C / t:.3g} |",
                    flush=True,
                )
                if best is None or t < best[0]:
                    best = (t, tile, warps, unroll)
    print(
        f"best: tile {best[1]}, warps {best[2]}, {'unrolled' if best[3] else 'loop'}: {C / best[0]:.3g} configs/s"
    )
    with_latency = pallas(tile=best[1], num_warps=best[2], zero_latency=False)
    t = median_time(lambda: with_latency(*args))
    print(f"same, with the latency add: {C / t:.3g} configs/s")
    t = median_time(lambda: runner.submit(block))
    print(f"through Dispatcher.submit (defaults): {t * 1e3:.3f} ms per block, {C / t:.3g} configs/s")
    outs = [runner.submit(block) for _ in range(3)]
    jax.block_until_ready(outs)
    t0 = time.perf_counter()
    outs = [runner.submit(block) for _ in range(20)]
    t_dispatch = time.perf_counter() - t0
    jax.block_until_ready(outs)
    t_all = time.perf_counter() - t0
    print(
        f"20 blocks: dispatch {t_dispatch * 1e3:.1f} ms, total {t_all * 1e3:.1f} ms, {20 * C / t_all:.3g} configs/s"
    )
    np.asarray(outs[0]["scaling_factor"][:, :10])


if __name__ == "__main__":
    main()
