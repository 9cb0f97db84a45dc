"""End-to-end throughput of ``sweep grid`` against the kernel alone, in one run.

The same grid (built-in resnet50, ring over 8 GPUs per node, fusion off: 161
buckets, float32) is evaluated twice in one process: kernel only (every block
dispatched and waited for, nothing copied or written) and end to end (blocks
copied to the host and written to an HDF5 cube by the writer thread). The ratio
says how much of the kernel's rate reaches the user. Then the whole command is
timed twice in fresh processes, with and without the persistent compilation cache
(the second run with the cache compiles nothing). Medians of ``--repeats``.
Run: ``python benchmarks/bench_grid.py [--configs 100000000]``.
"""

import argparse
import datetime
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jax

from netsweep_jax.sweep.engine.blocks import DEFAULT_BLOCK_CONFIGS, Blocking

# Internal on purpose: the kernel-only rate is the jitted block alone (Dispatcher.submit, documented in
# sweep/engine/dispatch.py), and the end-to-end rate is the writer path of `sweep grid` (io.job.run_grid, which
# reports configs/s) in the same process; the public API has no cube-writing function (the CLI is timed below).
from netsweep_jax.sweep.engine.dispatch import Dispatcher, precision
from netsweep_jax.sweep.engine.grid import make_grid
from netsweep_jax.sweep.io.job import run_grid


def kernel_only(grid, blocking):
    with precision(grid.dtype):
        dispatcher = Dispatcher(grid, blocking)
        start = time.perf_counter()
        pending = []
        for block in blocking.blocks():
            pending.append(dispatcher.submit(block))
            if len(pending) > 2:
                jax.block_until_ready(pending.pop(0))
        jax.block_until_ready(pending)
        return grid.size / (time.perf_counter() - start)


def whole_command(args, cache_dir, repeats=3):
    cmd = [sys.executable, "-m", "netsweep_jax.sweep.cli", "grid", *args]
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(
            cmd, check=True, capture_output=True, env={**os.environ, "NETSWEEP_CACHE_DIR": cache_dir}
        )
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", type=int, default=10**8)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    ratios = args.configs // (1000 * 100)
    grid = make_grid(
        "resnet50", bandwidth="1..400@1000", ratio=f"1..1000@{ratios}log", nodes="1..100", fusion_buffer=0
    )
    blocking = Blocking(grid.sizes, DEFAULT_BLOCK_CONFIGS, grid.family)
    kernel_only(grid, blocking)  # compile
    kernel = statistics.median(kernel_only(grid, blocking) for _ in range(args.repeats))
    ends = []
    with tempfile.TemporaryDirectory(dir=".") as d:
        for i in range(args.repeats):
            out = Path(d) / f"b{i}.h5"
            ends.append(run_grid(grid, out, command="bench")["configs_per_s"])
            out.unlink()
        small = [
            "--bw",
            "1..100@100",
            "--ratio",
            "1..100",
            "--nodes",
            "1..10",
            "--fusion-mb",
            "0",
            "-q",
            "--force",
            "--out",
            str(Path(d) / "small.h5"),
        ]
        cached = Path(d) / "cache"
        whole_command(small, str(cached), repeats=1)  # fills the cache
        warm = whole_command(small, str(cached), args.repeats)
        cold = whole_command([*small, "--no-compile-cache"], str(cached), args.repeats)
    device = jax.devices()[0].device_kind
    end = statistics.median(ends)
    print(
        f"| {datetime.date.today()} | {device} | {grid.size:,} | kernel only {kernel:.3g} configs/s | "
        f"end to end {end:.3g} configs/s | ratio {end / kernel:.2f} | medians of {args.repeats} |"
    )
    print(
        f"| {datetime.date.today()} | {device} | 10^5-config command | with the compilation cache {warm:.2f} s | "
        f"without {cold:.2f} s | medians of {args.repeats} fresh processes |"
    )


if __name__ == "__main__":
    main()
