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
import random
import sys
import time

import jax

# Internal on purpose: the benchmark times the engine's block loop alone, without the CLI's cube writing.
from netsweep_jax.kernels.layout import Arch
from netsweep_jax.sweep.core.layout_axes import DIMS
from netsweep_jax.sweep.engine import layouts
from netsweep_jax.sweep.engine.compiled import GPU_FIELDS

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))
from timing import median_seconds  # noqa: E402

import reference  # noqa: E402  (the float64 baseline)


def reference_rate(grid, samples=4000):
    """Layouts per second of the float64 reference on random cells of ``grid`` that can exist."""
    rng = random.Random(0)
    codes, tables = grid.codes(), grid.tables()
    arch_fields = dict(zip(Arch._fields, (int(x) for x in tables["arch"][0])))
    gpu = dict(zip(GPU_FIELDS, tables["gpu"][0]))
    dev = dict(
        peak=gpu["half"],
        hbm=gpu["hbm"],
        memory=gpu["memory"],
        param_bytes=2.0,
        grad_bytes=4.0,
        act_bytes=2.0,
        usable=0.95,
        gemm_input_bytes=2.0,
        half_peak=gpu["half"],
        gemm_latency=gpu["gemm_latency"],
        moment_bytes=gpu["moment_bytes"],
    )
    cells = []
    for _ in range(samples):
        v = {d: float(rng.choice(list(codes[d]))) for d in DIMS}
        lay = dict(
            gpus=v["gpus"],
            tp=v["tp"],
            pp=v["pp"],
            cp=v["cp"],
            ep=v["ep"],
            expert_tp=v["expert_tp"],
            dp=v["dp"],
            micro_batch=v["micro_batch"],
            global_batch=v["global_batch"],
            schedule=v["schedule"],
            recompute=v["recompute"],
            sequence_parallel=v["sequence_parallel"],
            zero=v["zero"],
            attention=v["attention"],
            nvlink_domain=gpu["domain"],
            nvlink_bw=gpu["nvlink"],
            gpus_per_node=gpu["preset_gpus_per_node"],
            nics_per_node=v["nics_per_node"],
            bandwidth=v["bandwidth"],
            utilization=1.0,
            latency=0.0,
            collective=v["collective"],
            efficiency=v["efficiency"],
            overhead=0.0,
            slowdown=0.0,
            straggle=0.0,
            imbalance=1.0,
            offload_layers=0,
            attention_efficiency=gpu["attention_efficiency"],
            overlap=gpu["overlap"],
            dispatch_fp8=gpu["dispatch_fp8"],
            moe_dispatcher=gpu["moe_dispatcher"],
            nccl_arch=gpu["nccl_arch"],
            eta_net=gpu["nccl_eta_net"],
            eta_nvl=gpu["nccl_eta_nvl"],
            nccl_latency=gpu["nccl_latency"],
            nccl_op_latency=gpu["nccl_op_latency"],
            nccl_fill=gpu["nccl_fill"],
            nccl_fill_bytes=gpu["nccl_fill_bytes"],
            collectives=grid.collectives_code,
        )
        cells.append(
            {k: int(x) if float(x).is_integer() and k not in ("bandwidth",) else x for k, x in lay.items()}
        )
    cells = [
        lay for lay in cells if reference.layout_status(arch_fields, lay) == 0
    ]  # the full computation only
    t = time.perf_counter()
    for lay in cells:
        reference.layout_step(arch_fields, dev, lay)
    return len(cells) / (time.perf_counter() - t)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--bandwidths", type=int, default=16, help="network settings: bandwidth values x 2 NIC counts"
    )
    parser.add_argument("--collectives", default="flat", help="flat (default) or nccl (--collectives)")
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
