"""Tune the Pallas kernel's launch shape on a GPU: tile x warps x loop form.

Times ``block_metrics_pallas`` alone on device-resident inputs (resnet50, fusion
off, 2^24 configurations), and the same block through the engine's Runner, to
separate kernel time from per-block overhead. Median of 5 after a warm-up.
Run: ``PYTHONPATH=. python3 benchmarks/gpu_tune.py``.
"""

import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

from kernels import collective_coefficients
from kernels.pallas_overlap import block_metrics_pallas
from sweep.engine import Plan, Runner
from sweep.grid import make_grid

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
    plan = Plan(grid, block_configs=C)
    runner = Runner(plan, kernel="pallas")
    (block,) = plan.blocks()
    ready, nbytes, valid, t1 = (jnp.asarray(a) for a in runner.task_arrays(block.task))
    inv_bw, inv_r, lat = (jnp.asarray(a) for a in runner.inner_arrays(block.slab))
    table = tuple(jnp.asarray(t) for t in runner.table)
    nodes, gpus = (jnp.asarray(a) for a in runner.layout_arrays(block.slab))
    a, b, lc, fixed = collective_coefficients("ring", nodes, gpus, nbytes, *table, jnp.asarray(1.2e12, jnp.float32))
    nb = int(valid.sum())
    print(f"{jax.devices()[0].device_kind}: {C:,} configs, {nb} buckets (padded {ready.shape[0]})")
    print("| tile | warps | loop | ms | configs/s |")
    print("|---|---|---|---|---|")
    best = None
    for tile in (512, 1024, 2048, 4096):
        for warps in (1, 2, 4, 8):
            if tile // (32 * warps) < 1:
                continue
            for unroll in (False,):
                def fn(tile=tile, warps=warps, unroll=unroll):
                    return block_metrics_pallas(inv_bw, inv_r, lat, a, b, lc, fixed, ready, nbytes, valid, t1,
                                                tile=tile, num_warps=warps, unroll=unroll, zero_latency=True)
                try:
                    t = median_time(fn)
                except Exception as e:  # report, keep tuning
                    print(f"| {tile} | {warps} | {'unrolled' if unroll else 'loop'} | failed: {type(e).__name__} | |")
                    continue
                print(f"| {tile} | {warps} | {'unrolled' if unroll else 'loop'} | {t * 1e3:.3f} | {C / t:.3g} |",
                      flush=True)
                if best is None or t < best[0]:
                    best = (t, tile, warps, unroll)
    print(f"best: tile {best[1]}, warps {best[2]}, {'unrolled' if best[3] else 'loop'}: {C / best[0]:.3g} configs/s")
    t = median_time(lambda: block_metrics_pallas(inv_bw, inv_r, lat, a, b, lc, fixed, ready, nbytes, valid, t1,
                                                 tile=best[1], num_warps=best[2], zero_latency=False))
    print(f"same, with the latency add: {C / t:.3g} configs/s")
    t = median_time(lambda: runner.submit(block))
    print(f"through Runner.submit (defaults): {t * 1e3:.3f} ms per block, {C / t:.3g} configs/s")
    outs = [runner.submit(block) for _ in range(3)]
    jax.block_until_ready(outs)
    t0 = time.perf_counter()
    outs = [runner.submit(block) for _ in range(20)]
    t_dispatch = time.perf_counter() - t0
    jax.block_until_ready(outs)
    t_all = time.perf_counter() - t0
    print(f"20 blocks: dispatch {t_dispatch * 1e3:.1f} ms, total {t_all * 1e3:.1f} ms, {20 * C / t_all:.3g} configs/s")
    np.asarray(outs[0]["scaling_factor"][:, :10])


if __name__ == "__main__":
    main()
