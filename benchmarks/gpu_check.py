"""GPU check: correctness against the float64 reference, then kernel throughput.

Run on a machine with a GPU and JAX (``bash benchmarks/gpu_check.sh``). Prints:
1. the device; 2. for each kernel (XLA scan, Pallas), the largest error against
``tests/reference.py`` on a random sample of configurations (every collective,
fusion on and off); 3. configurations per second for the built-in resnet50
profile with fusion off (161 buckets) and with the paper's fusion, at 10^8 and
10^9 configurations, with the fraction of the chip's FP32 rate that implies.
Results stay on the device (no host copies, no file): this is the kernel's rate.
"""

import statistics
import sys
import time
from pathlib import Path

import jax
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from netsweep_jax.sweep import Profile, evaluate  # noqa: E402
from netsweep_jax.sweep.engine.blocks import Blocking  # noqa: E402

# Internal on purpose: throughput times the jitted block alone (Dispatcher.submit, documented in
# sweep/engine/dispatch.py; results stay on the device), and the float64 reference needs the model's
# reduce-cost table (sweep/model/vector_add.py).
from netsweep_jax.sweep.engine.dispatch import Dispatcher  # noqa: E402
from netsweep_jax.sweep.engine.grid import make_grid  # noqa: E402
from netsweep_jax.sweep.model.vector_add import default_table  # noqa: E402
from reference import simulate  # noqa: E402

# Per configuration and bucket with every latency 0 (this benchmark): one max, one
# multiply-add (2 flops), one add. The FP32 share counts these against the chip's
# FMA-based peak, so 100% is out of reach by construction (the max is not an FMA).
FLOPS_PER_STEP = 4
PEAK_FP32 = {"H200": 66.9e12, "H100": 66.9e12, "A100": 19.5e12}


def peak_fp32(kind):
    return next((v for k, v in PEAK_FP32.items() if k in kind), float("nan"))


def random_profile(rng: np.random.Generator, n: int = 50) -> Profile:
    return Profile(
        "rand",
        tuple(f"t{i}" for i in range(n)),
        np.round(rng.uniform(1e3, 2e7, n)),
        rng.uniform(0, 2e-3, n) * (rng.uniform(size=n) < 0.7),
        0.15,
    )


def correctness(kernel, rng, p, samples=300):
    ds = evaluate(
        p,
        kernel=kernel,
        bandwidth=[1, 10, 40, 100],
        utilization=[0.3, 1.0],
        ratio=[1, 7.5],
        nodes=[1, 2, 16],
        gpus_per_node=[1, 8],
        latency=[0, 20],
        collective=["ring", "tree", "ps", "hierarchical"],
        fusion_buffer=[0, 64],
        fusion_timeout=[0, 5],
    )
    table = tuple(t.tolist() for t in default_table())
    flat = ds.scaling_factor.values.reshape(-1)
    worst = 0.0
    for i in rng.choice(flat.size, samples, replace=False):
        idx = np.unravel_index(i, ds.scaling_factor.shape)
        v = {d: ds[d].values[j] for d, j in zip(ds.scaling_factor.dims, idx)}
        ref = simulate(
            p.wait.tolist(),
            p.grad_bytes.tolist(),
            p.t1,
            bandwidth=v["bandwidth"] * 1e9,
            utilization=v["utilization"],
            ratio=v["ratio"],
            nodes=int(v["nodes"]),
            gpus=int(v["gpus_per_node"]),
            latency=v["latency"] * 1e-6,
            collective=str(v["collective"]),
            buffer_bytes=v["fusion_buffer"] * 2**20,
            timeout_s=v["fusion_timeout"] * 1e-3,
            table=table,
        )
        for name in ("scaling_factor", "iteration_time"):
            got = float(ds[name].values[idx])
            assert np.isfinite(got), (name, v)
            worst = max(worst, abs(got - ref[name]) / abs(ref[name]))
    return worst, ds


def throughput(kernel, fusion_mb, total, block=2**24, repeats=3):
    side = int(np.sqrt(block))
    grid = make_grid(
        "resnet50", bandwidth=f"1..400@{side}", ratio=f"1..100@{block // side}", fusion_buffer=fusion_mb
    )
    blocking = Blocking(grid.sizes, block, grid.family)
    runner = Dispatcher(grid, blocking, kernel=kernel)
    (b,) = blocking.blocks()
    buckets = int(runner.blocks.inputs.buckets(b.task).valid.sum())
    jax.block_until_ready(runner.submit(b))  # compile
    args_block = b
    count = max(1, total // block)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        outs = [runner.submit(args_block) for _ in range(count)]
        jax.block_until_ready(outs)
        del outs
        times.append(time.perf_counter() - t)
    rate = count * block / statistics.median(times)
    return rate, buckets


def main():
    d = jax.devices()[0]
    kind = d.device_kind
    print(f"device: {d.platform} {kind} x{jax.device_count()}, jax {jax.__version__}", flush=True)
    rng = np.random.default_rng(int(time.time()))
    profile = random_profile(rng)  # the same profile for both kernels
    results = {}
    for kernel in ("xla", "pallas"):
        try:
            err, ds = correctness(kernel, rng, profile)
            results[kernel] = ds
            print(
                f"{kernel}: max relative error vs float64 reference over 300 random configs: {err:.2e}",
                flush=True,
            )
        except Exception as e:  # report and go on: the other kernel still gets measured
            print(f"{kernel}: FAILED correctness: {type(e).__name__}: {str(e)[:400]}", flush=True)
    if len(results) == 2:
        diff = np.nanmax(
            np.abs(results["xla"].scaling_factor.values - results["pallas"].scaling_factor.values)
        )
        print(f"pallas vs xla, whole sample grid: max |scaling factor difference| {diff:.2e}", flush=True)
    print("blocks of 2^24 configurations for 10^8, 2^26 for 10^9 (per-block host dispatch is ~0.7 ms)")
    print("| kernel | fusion | buckets | configs | configs/s | FP32 share |")
    print("|---|---|---|---|---|---|")
    for kernel in [k for k in ("pallas", "xla") if k in results]:
        for fusion_mb, label in ((0.0, "off"), (64.0, "64 MiB / 5 ms")):
            for total, block in ((10**8, 2**24), (10**9, 2**26)):
                rate, buckets = throughput(kernel, fusion_mb, total, block=block)
                share = rate * buckets * FLOPS_PER_STEP / peak_fp32(kind)
                print(
                    f"| {kernel} | {label} | {buckets} | {total:.0e} | {rate:.3g} | {share:.1%} |", flush=True
                )


if __name__ == "__main__":
    main()
