"""nccl-tests logs whose numbers come from the model itself at known constants (tests/data/nccl-tests/), so that
``sweep calibrate --nccl-tests`` can be checked to recover them.

Each log is written in nccl-tests' exact format (NVIDIA/nccl-tests@abc46770a98777a9fd1b072adcf8becb76bfe125:
src/common.cu: the ``PRINT`` formats of ``run``, ``TimeTest`` and ``BenchTime``, copied as format strings, the
host names and PIDs invented) with busbw from :func:`sweep.engine.compiled.nccl_busbw` at :data:`KNOWN`, the time
and algbw from it as nccl-tests derives them (t = size x F / busbw, algbw = size / t). Run ``python
tests/nccl_logs.py`` to write them again; ``tests/test_nccl_tests_logs.py`` checks the committed files are what
this writes.
"""

# ruff: noqa: UP031 (nccl-tests' printf formats, kept as its PRINT calls write them)
from pathlib import Path

import jax
import numpy as np

from netsweep_jax.sweep.analysis.nccl_validation import _inputs, _padded, fabrics_of
from netsweep_jax.sweep.engine.compiled import nccl_predict
from netsweep_jax.sweep.io.nccl_tests import BUS_FACTOR, Measurement

DATA = Path(__file__).resolve().parent / "data" / "nccl-tests"
# eta_net, eta_nvl, latency (us), op latency (us), fill (us), each unlike the shipped fit's (0.968, 0.905, 1.80,
# 9.71, 53.5), and the fill's message (MiB) the shipped one (sweep calibrate holds it there).
KNOWN = (0.80, 0.75, 6.0, 5.0, 30.0, 10.9)
GPU = "NVIDIA H100 80GB HBM3"
NICS, NIC_GBPS = 8, 400.0
# (file, binary, collective, redop, hosts, GPUs a host, smallest size): sizes double up to 1 GiB.
LOGS = (
    ("all_reduce_perf-2x8.log", "all_reduce_perf", "all_reduce", "sum", 2, 8, 8),
    ("all_gather_perf-1x8.log", "all_gather_perf", "all_gather", "none", 1, 8, 1024),
)


def model_busbw(rows: list[Measurement], constants: tuple[float, ...]) -> np.ndarray:
    """[R] the model's busbw (GB/s) of ``rows`` at ``constants``."""
    fabrics = fabrics_of(rows)
    inputs = _inputs(rows, fabrics)
    index = _padded(np.arange(len(rows)), 0)
    with jax.enable_x64(True):
        busbw = nccl_predict(np.asarray(constants, np.float64), {k: a[index] for k, a in inputs.items()})[0]
    return np.asarray(busbw)[: len(rows)]


def time_text(us: float) -> str:
    """nccl-tests' time column: %7.0f from 10 ms, %7.1f from 100 us, else %7.2f."""
    return "%7.0f" % us if us >= 10000.0 else "%7.1f" % us if us >= 100.0 else "%7.2f" % us


def log_text(name: str, binary: str, collective: str, redop: str, hosts: int, per_host: int, low: int) -> str:
    """One log, as nccl-tests prints it."""
    ranks = hosts * per_host
    sizes = [low * 2**k for k in range(64) if low * 2**k <= 2**30]
    rows = [
        Measurement(f"{name}-{k}", name, collective, GPU, per_host, hosts, NICS, NIC_GBPS, "", s, 1.0, "", 0)
        for k, s in enumerate(sizes)
    ]
    busbw = model_busbw(rows, KNOWN)
    out = [f"# Collective test starting: {binary}\n"]
    out.append(
        "# nThread %d nGpus %d minBytes %ld maxBytes %ld step: %ld(%s) warmup iters: %d iters: %d agg iters: "
        "%d validation: %d graph: %d\n" % (1, 1, sizes[0], sizes[-1], 2, "factor", 5, 20, 1, 1, 0)
    )
    out += ["#\n", "# Using devices\n"]
    for rank in range(ranks):
        host, device = f"node-{'ab'[rank // per_host]}", rank % per_host
        bus = (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB)[device]
        out.append(
            "#  Rank %2d Group %2d Pid %6d on %10s device %2d [%04x:%02x:%02x] %s\n"
            % (rank, 0, 41210 + rank, host, device, 0, bus, 0, GPU)
        )
    out.append("#\n")
    out.append(
        "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n"
        % (("",) * 5)
    )
    out.append(
        "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s\n"
        % (
            "size",
            "count",
            "type",
            "redop",
            "root",
            "time",
            "algbw",
            "busbw",
            "#wrong",
            "time",
            "algbw",
            "busbw",
            "#wrong",
        )
    )
    out.append(
        "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n"
        % ("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "")
    )  # fmt: skip
    total = 0.0
    for size, bus in zip(sizes, busbw):
        seconds = size * BUS_FACTOR[collective](ranks) / (bus * 1e9)
        # each rank's share where nccl-tests prints it (PER_RANK_COUNT's tests)
        count = size // 4 // (ranks if collective in ("all_gather", "reduce_scatter", "alltoall") else 1)
        line = "%12li  %12li  %8s  %6s  %6s" % (size, count, "float", redop, "%6i" % -1)
        for _ in ("out-of-place", "in-place"):  # the model has one time for both
            line += "  %7s  %6.2f  %6.2f  %5g" % (time_text(seconds * 1e6), size / seconds / 1e9, bus, 0)
            total += float("%.2f" % bus)
        out.append(line + "\n")
    out.append("# Out of bounds values : %d %s\n" % (0, "OK"))
    out.append("# Avg bus bandwidth    : %g %s\n" % (total / (2 * len(sizes)), ""))
    out += ["#\n", f"# Collective test concluded: {binary}\n", "\n"]
    return "".join(out)


def write_logs() -> list[Path]:
    DATA.mkdir(parents=True, exist_ok=True)
    paths = []
    for spec in LOGS:
        path = DATA / spec[0]
        path.write_text(log_text(*spec))
        paths.append(path)
    return paths


if __name__ == "__main__":
    for p in write_logs():
        print(f"wrote {p}")
