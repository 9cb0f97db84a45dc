"""Interrupted sweeps: kill -9 and Ctrl-C keep finished blocks; --resume completes them.

The sweep stops itself at a known block through the test hook
``NETSWEEP_TEST_SIGNAL_AFTER_BLOCKS`` (no timers, no races).
"""

import os
import signal
import subprocess
import sys

import h5py
import numpy as np
import pytest
from typer.testing import CliRunner

from netsweep_jax.sweep.cli.app import app
from netsweep_jax.sweep.core.schema import DEFAULT_OUTPUTS as OUTPUTS
from netsweep_jax.sweep.io.job import TEST_SIGNAL_HOOK

GRID = ["--bw", "1..20", "--ratio", "1..10", "--nodes", "2,4,8", "--fusion-mb", "0",
        "--block-configs", "20", "-q"]  # 600 configs in 30 blocks
STOP_AFTER = 7

# A shell that runs the tests in the background ignores SIGINT, and children inherit
# that; the wrapper reinstalls Python's handler so the sweep sees Ctrl-C as a user's
# terminal would deliver it.
RUN_CLI = ("import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
           "sys.argv[0] = 'sweep'; runpy.run_module('netsweep_jax.sweep.cli', run_name='__main__')")


def interrupted(out, sig, *extra, after=STOP_AFTER):
    env = {**os.environ, TEST_SIGNAL_HOOK: f"{after}:{sig.name}"}
    cmd = [sys.executable, "-c", RUN_CLI, "grid", *GRID, "--out", str(out), *extra]
    return subprocess.run(cmd, capture_output=True, text=True, env=env)


def blocks_done(partial):
    with h5py.File(partial, "r") as f:
        return int(f["progress/blocks_done"][...].sum())


def invoke(*args):
    return CliRunner().invoke(app, ["grid", *GRID, *map(str, args)])


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("clean") / "clean.h5"
    assert invoke("--out", out).exit_code == 0
    with h5py.File(out) as f:
        return {k: f[k][...] for k in OUTPUTS}


def assert_same(path, clean):
    with h5py.File(path) as f:
        for k, v in clean.items():
            np.testing.assert_array_equal(f[k][...], v)


@pytest.mark.parametrize("sig,code,after", [(signal.SIGKILL, -9, STOP_AFTER), (signal.SIGINT, 130, STOP_AFTER),
                                            (signal.SIGTERM, 143, STOP_AFTER), (signal.SIGINT, 130, 0)],
                         ids=["kill-9", "ctrl-c", "sigterm", "ctrl-c-before-any-block"])
def test_interrupted_run_resumes_to_the_same_cube(tmp_path, clean_run, sig, code, after):
    out = tmp_path / "r.h5"
    partial = tmp_path / "r.h5.partial"
    r = interrupted(out, sig, after=after)
    assert r.returncode == code, r.stderr
    if sig != signal.SIGKILL:  # one line, the resume hint, no traceback
        assert r.stderr.strip().splitlines() == [
            f"error: interrupted; finished blocks are kept in {partial}. Finish with the same command plus --resume."]
    assert partial.exists() and not out.exists()
    assert blocks_done(partial) == after  # stopped exactly at the block boundary it was signalled at
    resume = [a for a in GRID if a not in ("--block-configs", "20")]  # block size read from the partial file
    r = CliRunner().invoke(app, ["grid", *resume, "--out", str(out), "--resume"])
    assert r.exit_code == 0, r.output
    assert out.exists() and not partial.exists()
    assert_same(out, clean_run)


def test_command_line_is_recorded_exactly(tmp_path):
    out = tmp_path / "c.h5"
    r = subprocess.run([sys.executable, "-c", RUN_CLI, "grid", *GRID, "--out", str(out)], capture_output=True)
    assert r.returncode == 0
    with h5py.File(out) as f:
        assert f.attrs["command"] == "sweep grid " + " ".join(GRID) + f" --out {out}"


def test_resume_refuses_another_grid(tmp_path):
    out = tmp_path / "r.h5"
    partial = tmp_path / "r.h5.partial"
    assert interrupted(out, signal.SIGKILL).returncode == -9
    other = [a if a != "1..10" else "1..11" for a in GRID]
    r = CliRunner().invoke(app, ["grid", *other, "--out", str(out), "--resume"])
    assert r.exit_code == 2
    assert "made for another grid or profile" in r.output and len(r.output.strip().splitlines()) == 1
    assert partial.exists()  # the interrupted work is not thrown away
    r = invoke("--out", out)
    assert r.exit_code == 2 and "pass --resume to finish it" in r.output


def test_interrupt_anywhere_in_a_command_is_one_line(monkeypatch, tmp_path):
    import netsweep_jax.sweep.analysis.need  # noqa: F401  (imported now: its module-level names must not see the patch)
    import netsweep_jax.sweep.cli.app as cli_app
    import netsweep_jax.sweep.engine.grid as grid_module

    def stop(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_app, "make_grid_from", stop)  # as if Ctrl-C came while starting up
    r = invoke("--out", tmp_path / "o.h5")
    assert r.exit_code == 130 and r.output.strip() == "error: interrupted"
    monkeypatch.setattr(grid_module, "resolve_models", stop)
    r = CliRunner().invoke(app, ["need", "--target", "0.9", "--solve", "ratio", "--bw", "10"])
    assert r.exit_code == 130 and r.output.strip() == "error: interrupted"
