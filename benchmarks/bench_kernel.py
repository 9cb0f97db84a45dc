"""Kernel throughput (configurations/s): JAX vs a numpy loop vs a pure-Python loop.

Built-in resnet50 profile, ring, 8x8 GPUs, with fusion off (161 buckets) and with
the paper's fusion (64 MiB / 5 ms). One block of ``--configs`` configurations
(bandwidth x ratio). Compile time is reported apart; steady state is the median of
``--repeats`` runs. Run: ``python benchmarks/bench_kernel.py``.
"""

import argparse
import datetime
import time

import jax
import numpy as np
from timing import median_seconds

from netsweep_jax.sweep.engine.blocks import Blocking

# Internal on purpose: this benchmark times the jitted block alone (Dispatcher.submit, documented in
# sweep/engine/dispatch.py), which the public evaluate() hides behind host copies and Dataset building.
from netsweep_jax.sweep.engine.dispatch import Dispatcher
from netsweep_jax.sweep.engine.grid import make_grid


def numpy_loop(ready, nbytes, fixed, alpha, lat):
    """The same recurrence vectorized over configurations, looping over buckets."""
    end = np.zeros_like(alpha)
    for r, s, f in zip(ready, nbytes, fixed):
        end = np.maximum(r, end) + alpha * s + (lat + f)
    return end


def python_loop(ready, nbytes, fixed, alpha, lat):
    out = []
    for a, la in zip(alpha.tolist(), lat.tolist()):
        end = 0.0
        for r, s, f in zip(ready, nbytes, fixed):
            end = max(r, end) + a * s + (la + f)
        out.append(end)
    return out


def bench(fusion_mb, configs, repeats):
    n_bw = 512
    grid = make_grid(
        "resnet50", bandwidth=f"1..400@{n_bw}", ratio=f"1..100@{configs // n_bw}", fusion_buffer=fusion_mb
    )
    blocking = Blocking(grid.sizes, configs, grid.family)
    dispatcher = Dispatcher(grid, blocking, kernel="xla")
    (block,) = blocking.blocks()
    t = time.perf_counter()
    jax.block_until_ready(dispatcher.submit(block))
    compile_s = time.perf_counter() - t
    jax_s = median_seconds(lambda: jax.block_until_ready(dispatcher.submit(block)), repeats)

    # Baselines get the same per-bucket constants and per-config coefficients.
    inputs = dispatcher.blocks.inputs
    buckets = inputs.buckets(block.task)
    workers = inputs.workers(block.task, block.outer_slab)
    n = int(buckets.valid.sum())
    ready, nbytes, fixed = buckets.ready[:n], buckets.nbytes[:n], workers.reduce[0, :n]
    c = inputs.configs(block.inner_slab)
    alpha = ((workers.transfer[0] + workers.wire[0] / (c.bandwidth * c.utilization)) / c.ratio).astype(
        np.float32
    )
    lat = (workers.messages[0] * c.latency).astype(np.float32)
    np_s = median_seconds(lambda: numpy_loop(ready, nbytes, fixed, alpha, lat), repeats)
    py_n = 2000
    py_s = median_seconds(lambda: python_loop(ready, nbytes, fixed, alpha[:py_n], lat[:py_n]), 3)
    return {
        "buckets": n,
        "compile_s": compile_s,
        "jax": configs / jax_s,
        "numpy": configs / np_s,
        "python": py_n / py_s,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", type=int, default=2**18)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    device = jax.devices()[0].device_kind
    print(
        f"device: {jax.devices()[0].platform}:{device}, block of {args.configs:,} configurations, "
        f"median of {args.repeats}"
    )
    print(
        "| date | device | fusion | buckets | JAX configs/s | numpy configs/s | Python configs/s "
        "| JAX / numpy | compile s |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for label, fusion_mb in (("off", 0.0), ("64 MiB / 5 ms", 64.0)):
        r = bench(fusion_mb, args.configs, args.repeats)
        print(
            f"| {datetime.date.today()} | {device} | {label} | {r['buckets']} | {r['jax']:.3g} | "
            f"{r['numpy']:.3g} | {r['python']:.3g} | {r['jax'] / r['numpy']:.1f}x | {r['compile_s']:.2f} |"
        )


if __name__ == "__main__":
    main()
