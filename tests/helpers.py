"""What several test files share: running the CLI, the standard grid, stopping a sweep at a known block,
reading a cube's outputs, regenerating a committed report, and counting a function's compiles."""

import contextlib
import csv
import functools
import os
import signal
import subprocess
import sys
from pathlib import Path

import h5py
import jax.monitoring
from typer.testing import CliRunner

from conftest import assert_same_figure, assert_same_text
from netsweep_jax.sweep.cli.app import app
from netsweep_jax.sweep.core.schema import DEFAULT_VARIABLES
from netsweep_jax.sweep.io import job

# Kernel against the float64 reference (tests/reference.py), relative: the one table every such test reads.
# The layout step sums a hundred terms or so, hence float32's wider bound there.
TOLERANCE = {
    "overlap": {"float32": 1e-4, "float64": 1e-10},
    "layout": {"float32": 2e-4, "float64": 1e-10},
}

RESULTS = Path(__file__).resolve().parents[1] / "results"
DRIVER = Path(__file__).resolve().with_name("sweep_driver.py")

# Configurations a block for a float64 layout grid of a few configurations: its block is 1 x 64 lanes, one compiled
# shape that such tests share (the default block pads to 8 x 8,192, each a compile of its own in float64, seconds).
FEW_LAYOUTS_BLOCK = 64
# 600 configurations in 30 blocks of 20: enough blocks to stop a sweep in the middle of.
GRID = ["--bw", "1..20", "--ratio", "1..10", "--nodes", "2,4,8", "--fusion-mb", "0", "--block-configs", "20"]
# The plan the tests of a plan's files, signals and messages run (one compile among them): 40 settings, 2 blocks
# per search, 5 searches (the plan, the ideal network, 3 switches).
PLAN = ["plan", "--model", "llama3-8b", "--gpus", "64", "--global-batch", "256", "--bw", "25..400@20", "--util",
        "0.5,1"]  # fmt: skip


def invoke(*args):
    """``sweep ARGS`` in this process (arguments may be paths or numbers)."""
    return CliRunner().invoke(app, [str(a) for a in args])


def one_line_error(r, code=2):
    """The one line a refusal prints (``error: ...``), checked: exit code ``code``, nothing else said."""
    assert r.exit_code == code, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in r.output, r.output
    return lines[0]


def read_outputs(path, names=DEFAULT_VARIABLES):
    """The named variables of a cube, as numpy arrays."""
    with h5py.File(path) as f:
        return {k: f[k][...] for k in names}


def blocks_done(partial):
    """How many blocks a partial cube records as finished."""
    with h5py.File(partial, "r") as f:
        return int(f["progress/blocks_done"][...].sum())


class Stopped(Exception):
    """Raised by :func:`stop_after`'s hook: the sweep stopped as if its process had crashed."""


def after_blocks(count, then):
    """An ``after_block`` hook that calls ``then()`` once ``count`` blocks are written."""
    written = []

    def after_block(block):  # on the writer thread
        written.append(block.index)
        if len(written) == count:
            then()

    return after_block


def stop_after(count):
    """An ``after_block`` hook that stops a sweep once ``count`` blocks are written."""

    def stop():
        raise Stopped(f"after {count} blocks")

    return after_blocks(count, stop)


def invoke_stopped_after(monkeypatch, count, *args):
    """``sweep ARGS`` in this process, stopped after ``count`` blocks are written (the partial file is kept)."""
    with monkeypatch.context() as m:
        m.setattr(job, "run_grid", functools.partial(job.run_grid, after_block=stop_after(count)))
        r = invoke(*args)
    assert isinstance(r.exception, Stopped), r.output
    return r


def invoke_interrupted_after(monkeypatch, count, sig, *args):
    """``sweep ARGS`` in this process, with ``sig`` (SIGINT or SIGTERM) requested as the CLI's handler records it
    once ``count`` blocks are written: the sweep stops at the next block boundary, as it does on the signal
    itself (whose delivery to a process :func:`signalled_after` tests)."""
    from netsweep_jax.sweep.core import interrupts

    after_block = after_blocks(count, lambda: interrupts.request(sig))
    with monkeypatch.context() as m:
        m.setattr(job, "run_grid", functools.partial(job.run_grid, after_block=after_block))
        return invoke(*args)


def signalled_after(count, sig, *args):
    """``sweep ARGS`` in a process of its own that sends itself ``sig`` after ``count`` blocks are written
    (``count`` 0: before any block, -1: never). The finished process (stdout and stderr as text)."""
    name = sig.name if isinstance(sig, signal.Signals) else str(sig)
    return subprocess.run(
        [sys.executable, str(DRIVER), str(count), name, *map(str, args)], capture_output=True, text=True
    )


def regenerate(tmp_path_factory, run, name, command):
    """Regenerate the committed report ``results/NAME`` (``sweep COMMAND``) into a temporary directory."""
    out = tmp_path_factory.mktemp(name)
    run(out, command=f"sweep {command} --out results/{name}")
    return out


def assert_same_file(new, old):
    """A regenerated report file equals the committed one: text byte for byte, a PNG as a figure."""
    (assert_same_figure if Path(old).suffix == ".png" else assert_same_text)(new, old)


# One device per process (no forced host device count), compiled as the single-process run is (conftest's flags).
ONE_DEVICE_FLAGS = " ".join(f for f in os.environ.get("XLA_FLAGS", "").split() if "device_count" not in f)


def both_processes(argv):
    """Processes 0 and 1, ``argv(pid)`` each, run at once with one device each; asserts both succeed. Their
    (stdout, stderr) texts."""
    procs = [
        subprocess.Popen(
            argv(pid),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "XLA_FLAGS": ONE_DEVICE_FLAGS},
        )
        for pid in (0, 1)
    ]
    results = [p.communicate(timeout=240) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], results
    return results


def two_processes(tmp_path, *args, command="grid"):
    """``sweep COMMAND ARGS --distributed`` as two processes joined over a Unix socket in ``tmp_path`` (no TCP
    port to choose, so no port race); asserts both succeed (and, for grid, that process 0 stitched). Their
    (stdout, stderr) texts."""
    command = [sys.executable, "-m", "netsweep_jax.sweep.cli", command, *map(str, args), "--distributed"]
    command += ["--coordinator", f"unix:{tmp_path / 'coordinator.sock'}", "--num-processes", "2"]
    results = both_processes(lambda pid: [*command, "--process-id", str(pid)])
    assert command[3] != "grid" or "stitched every shard" in results[0][0]
    return results


def shares_in_turn(monkeypatch, tmp_path, *args, command="grid"):
    """``sweep COMMAND ARGS --distributed`` as processes 1 then 0 of two would run it after they joined, here in
    this process, one after the other (process 0 then finds process 1's shard and merges): the rendezvous is
    replaced by each one's id, the rest is the command's own path. The join itself, over a coordinator, is
    tests/test_distributed.py's (two real processes). Their outputs (process 0's, process 1's)."""
    from netsweep_jax.sweep.io import distributed

    monkeypatch.setattr(distributed, "rendezvous", lambda coordinator, count, pid, options: (pid, count))
    join = ["--distributed", "--coordinator", f"unix:{tmp_path / 'coordinator.sock'}", "--num-processes", "2"]
    outputs = {}
    for pid in (1, 0):
        r = invoke(command, *args, *join, "--process-id", str(pid))
        assert r.exit_code == 0, r.output
        outputs[pid] = r.output
    assert command != "grid" or "stitched every shard" in outputs[0]
    return outputs[0], outputs[1]


# What JAX reports (jax.monitoring) as it traces a function and compiles it for XLA.
TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
COMPILE_EVENTS = (
    "/jax/core/compile/jaxpr_to_mlir_module_duration",  # lowered: then compiled or a cache hit
    "/jax/core/compile/backend_compile_duration",
)


@contextlib.contextmanager
def counting_compiles(fun_name):
    """Count JAX's traces and compiles of the function named ``fun_name``: {event: count}."""
    counts = dict.fromkeys((TRACE_EVENT, *COMPILE_EVENTS), 0)

    def listen(event, duration_s, **kwargs):
        if event in counts and kwargs.get("fun_name") in (fun_name, f"jit({fun_name})"):
            counts[event] += 1

    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        yield counts
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)


def edited_runs_file(tmp_path, edit):
    """The shipped runs file (``sweep.io.runs.DATASET``) with ``edit`` applied to its rows (a list of dicts ->
    a list of dicts), written to ``tmp_path / "runs.csv"`` (comments dropped); its path."""
    from netsweep_jax.sweep.io.runs import DATASET

    lines = [line for line in DATASET.read_text().splitlines() if not line.startswith("#")]
    rows = edit(list(csv.DictReader(lines)))
    path = tmp_path / "runs.csv"
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, list(rows[0].keys()), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    return path
