"""What compressors cost the kernel: configurations/s with and without the compression terms.

Built-in resnet50, PyTorch DDP buckets, nccl-ring, 8x8 GPUs, one block of ``--configs``
configurations (bandwidth x utilization). Three sweeps in the same run: compressor
``none`` (the plain kernel), ``topk:0.01`` (payloads, codec times and all-gather compiled
in) and ``topk:0.01`` with ``time_to_accuracy`` (a second, uncompressed evaluation). Ratios
are against the first; steady state is the median of ``--repeats`` interleaved runs.
Run: ``python benchmarks/bench_compression.py``.
"""

import argparse
import datetime
import statistics
import time

import jax

from netsweep_jax.sweep.engine.blocks import Blocking

# Internal on purpose: this benchmark times the jitted block alone (Dispatcher.submit, documented in
# sweep/engine/dispatch.py), which the public evaluate() hides behind host copies and Dataset building.
from netsweep_jax.sweep.engine.dispatch import Dispatcher
from netsweep_jax.sweep.engine.grid import make_grid


def compiled(compressor, variables, configs):
    """A function running one block of this sweep (compiled on the first call, here)."""
    n_bw = 256
    grid = make_grid(
        "resnet50",
        bandwidth=f"1..400@{n_bw}",
        utilization=f"0.1..1@{configs // n_bw}",
        collective="nccl-ring",
        bucketing="ddp",
        compressor=compressor,
        variables=variables,
    )
    blocking = Blocking(grid.sizes, configs, grid.family)
    dispatcher = Dispatcher(grid, blocking, kernel="xla")
    (block,) = blocking.blocks()
    jax.block_until_ready(dispatcher.submit(block))
    return lambda: jax.block_until_ready(dispatcher.submit(block))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", type=int, default=2**18)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    four = "scaling_factor,iteration_time,exposed_comm,comm_time"
    cases = [
        ("none", "none", four),
        ("topk:0.01", "topk:0.01", four),
        ("topk:0.01 + time_to_accuracy", "topk:0.01", four + ",time_to_accuracy"),
    ]
    runs = [compiled(c, v, args.configs) for _, c, v in cases]
    times = [[] for _ in cases]
    for _ in range(args.repeats):  # interleaved, so that the machine's drift hits every case alike
        for fn, out in zip(runs, times):
            t = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t)
    rates = [(label, args.configs / statistics.median(t)) for (label, _, _), t in zip(cases, times)]
    print(
        f"{datetime.date.today()} {jax.devices()[0].device_kind}, {args.configs} configs, median of {args.repeats}"
    )
    for label, r in rates:
        print(f"  {label:<30} {r:12.4g} configs/s  {r / rates[0][1]:.2f}x of none")


if __name__ == "__main__":
    main()
