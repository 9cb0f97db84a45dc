"""End-to-end throughput of ``sweep grid``: kernel + HDF5 writing, configurations/s.

Default settings (ring, 8 GPUs per node, paper fusion, float32, 2^18-config
blocks) on the built-in resnet50 profile, over 100 bandwidths x 100 ratios x 100
node counts x 10 utilizations = 10^7 configurations, written to a temporary file.
Median of ``--repeats`` runs (each compiles anew in the same process only once).
Run: ``python benchmarks/bench_grid.py``.
"""

import argparse
import datetime
import statistics
import tempfile
from pathlib import Path

import jax

from sweep.grid import make_grid
from sweep.job import run_grid


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--fusion-mb", type=float, default=64.0)
    args = ap.parse_args()
    grid = make_grid("resnet50", bandwidth="1..100@100", ratio="1..100", nodes="1..100",
                     utilization="0.1..1:0.1", fusion_buffer=args.fusion_mb)
    rates = []
    with tempfile.TemporaryDirectory() as d:
        for i in range(args.repeats + 1):  # the first run includes compilation: not counted
            s = run_grid(grid, Path(d) / f"b{i}.h5", command="bench")
            if i:
                rates.append(s["configs_per_s"])
            (Path(d) / f"b{i}.h5").unlink()
    device = jax.devices()[0].device_kind
    print(f"| {datetime.date.today()} | {device} | {grid.size:,} | fusion {args.fusion_mb:g} MiB | "
          f"{statistics.median(rates):.3g} configs/s end to end (median of {args.repeats}) |")


if __name__ == "__main__":
    main()
