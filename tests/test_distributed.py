"""--distributed over loopback: the stitched cube equals a single-process run; a dead
process leaves the others to finish, and --resume completes only what is missing.

Process 1 is killed at a known block through the test hook
``NETSWEEP_TEST_SIGNAL_AFTER_BLOCKS`` (no timers, no races)."""

import os
import socket
import subprocess
import sys

import h5py
import numpy as np
from typer.testing import CliRunner

from netsweep_jax.sweep.cli.app import app
from netsweep_jax.sweep.core.schema import DEFAULT_OUTPUTS as VARS
from netsweep_jax.sweep.io.job import TEST_SIGNAL_HOOK

GRID = ["--bw", "1..20", "--ratio", "1..10", "--nodes", "2,4,8", "--fusion-mb", "0",
        "--block-configs", "20"]  # 600 configs in 30 blocks, 15 per process


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cmd(out, pid, port, *extra):
    return [sys.executable, "-m", "netsweep_jax.sweep.cli", "grid", *GRID, "--out", str(out), "--distributed",
            "--coordinator", f"127.0.0.1:{port}", "--num-processes", "2", "--process-id", str(pid), *extra]


def start(out, port, *extra, env1=None):
    env = {**os.environ, "XLA_FLAGS": ""}
    return [subprocess.Popen(cmd(out, pid, port, *extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env={**env, **(env1 or {})} if pid == 1 else env) for pid in (0, 1)]


def single(out):
    assert CliRunner().invoke(app, ["grid", *GRID, "--out", str(out), "-q"]).exit_code == 0
    with h5py.File(out) as f:
        return {k: f[k][...] for k in VARS}


def assert_same(path, ref):
    with h5py.File(path) as f:
        for k in VARS:
            np.testing.assert_array_equal(f[k][...], ref[k])
        assert f.attrs["processes"] == 2


def test_two_processes_stitch_to_the_single_process_cube(tmp_path):
    ref = single(tmp_path / "single.h5")
    out = tmp_path / "d.h5"
    procs = start(out, free_port())
    results = [p.communicate(timeout=240) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], results
    assert "stitched every shard" in results[0][0]
    assert_same(out, ref)
    assert sorted(x.name for x in tmp_path.iterdir()) == ["d.h5", "single.h5"]


def test_dead_process_then_resume(tmp_path):
    ref = single(tmp_path / "single.h5")
    out = tmp_path / "d.h5"
    p0, p1 = start(out, free_port(), "--stitch-timeout", "1", env1={TEST_SIGNAL_HOOK: "5:SIGKILL"})
    p1.communicate(timeout=120)
    out0, err0 = p0.communicate(timeout=240)
    assert p1.returncode == -9
    with h5py.File(tmp_path / "d.shard1of2.h5.partial", "r") as f:
        assert int(f["progress/blocks_done"][...].sum()) == 5
    # Process 0 finished its own shard, then gave up waiting for process 1's.
    assert p0.returncode == 3, (out0, err0)
    assert "d.shard1of2.h5 not complete" in err0 and "--resume" in err0
    assert (tmp_path / "d.shard0of2.h5").exists() and not out.exists()
    procs = start(out, free_port(), "--resume")
    results = [p.communicate(timeout=240) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], results
    assert "0 configurations" in results[0][0]  # process 0's shard was already complete
    assert_same(out, ref)
