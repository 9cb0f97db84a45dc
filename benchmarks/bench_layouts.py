"""Layout throughput (layouts/s): the jitted layout sweep against the float64 reference loop, same run.

Llama 3 70B on 1024 H100s: the ``sweep plan`` search space (tp x pp x cp x micro-batch
x schedule x recompute x ZeRO) times network settings, searched for the 3 fastest
layouts per setting on the device (:func:`sweep.engine.layouts.best_layouts`), and
the whole grid kept (:func:`sweep.engine.layouts.evaluate_layouts_arrays`). The
baseline is ``tests/reference.py``'s ``layout_step``, one layout at a time in plain
Python, on a sample. Compile time apart; steady state the median of ``--repeats``.
Run: ``python benchmarks/bench_layouts.py`` (the same command on a GPU box).
"""

import argparse
import datetime
import pathlib
import sys
import time

import jax
import numpy as np

# Internal on purpose: the benchmark times the engine's block loop alone, without the CLI's cube writing.
from netsweep_jax.sweep.engine import layouts
from netsweep_jax.sweep.engine.compiled import INNER_COLUMNS, OUTER_COLUMNS, layout_inputs
from netsweep_jax.sweep.engine.layout_blocks import BlockTables

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))
from timing import median_seconds  # noqa: E402

import reference  # noqa: E402  (the float64 baseline)


def reference_rate(grid, samples=4000):
    """Layouts per second of the float64 reference on random cells of ``grid`` that can exist, each cell's inputs
    the engine's own: :func:`sweep.engine.compiled.layout_inputs` on rows of a block's tables."""
    rng = np.random.default_rng(0)
    tables = BlockTables(grid)
    outer = np.concatenate([tables.outer(int(k), 1) for k in rng.integers(0, grid.outer_size, samples)])
    inner = np.concatenate([tables.inner(int(k), 1)[0] for k in rng.integers(0, grid.inner_size, samples)])
    with jax.enable_x64(True):
        parts = layout_inputs(
            dict(zip(OUTER_COLUMNS, outer.T)), dict(zip(INNER_COLUMNS, inner.T)), grid.collectives_code
        )
        columns = [
            {k: np.broadcast_to(np.asarray(v, np.float64), (samples,)) for k, v in part._asdict().items()}
            for part in parts
        ]
    # Whole numbers as ints, as the reference counts layers and ranks with them.
    cells = [tuple({k: _number(c[k][s]) for k in c} for c in columns) for s in range(samples)]
    cells = [c for c in cells if reference.layout_status(c[0], c[2]) == 0]  # the full computation only
    t = time.perf_counter()
    for arch, dev, lay in cells:
        reference.layout_step(arch, dev, lay)
    return len(cells) / (time.perf_counter() - t)


def _number(value):
    value = float(value)
    return int(value) if value.is_integer() else value


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--bandwidths", type=int, default=16, help="network settings: bandwidth values x 2 NIC counts"
    )
    parser.add_argument(
        "--collective",
        default=None,
        help="ring-or-tree (the default: flat), ring, tree, nccl (NCCL's tuner), nccl:ALGO or nccl:PROTO",
    )
    parser.add_argument(
        "--collectives",  # the earlier sittings' spelling (benchmarks/README.md): the pricing, flat or nccl
        default=None,
        help="flat or nccl: the pricing, as the earlier sittings spelled it (the library still reads it)",
    )
    args = parser.parse_args()
    grid = layouts.make_layout_grid(
        "llama3-70b",
        gpu="h100",
        gpus="1024",
        global_batch="1024",
        bandwidth=f"25..400@{args.bandwidths}",
        nics_per_node="1,8",
        tp="1,2,4,8",
        pp="1,2,4,8,16,32,64",
        cp="1,2,4",
        micro_batch="1,2,4,8",
        schedule="1f1b,interleaved:2",
        recompute="none,selective,full",
        zero="0,1,3",
        sequence_parallel="1",
        collective=args.collective,
        collectives=args.collectives,
    )
    configs = grid.outer_size * grid.inner_size
    print(
        f"# {datetime.date.today()}  {jax.devices()[0].device_kind} x{jax.device_count()}, {grid.collectives}, "
        f"{configs:,} layouts ({grid.inner_size:,} per setting x {grid.outer_size} settings)"
    )
    t = time.perf_counter()
    layouts.best_layouts(grid, keep=3)
    compile_s = time.perf_counter() - t
    search = median_seconds(lambda: layouts.best_layouts(grid, keep=3), args.repeats)
    keep_all = median_seconds(lambda: layouts.evaluate_layouts_arrays(grid), args.repeats)
    ref = reference_rate(grid)
    print(f"first search (with compile) {compile_s:.2f} s")
    print("| path | layouts/s | vs reference |\n|---|---|---|")
    print(
        f"| sweep plan search (top 3 per setting, on the device) | {configs / search:,.0f} | "
        f"{configs / search / ref:,.0f}x |"
    )
    print(f"| whole grid kept in memory | {configs / keep_all:,.0f} | {configs / keep_all / ref:,.0f}x |")
    print(f"| reference loop (float64 Python) | {ref:,.0f} | 1x |")


if __name__ == "__main__":
    main()
