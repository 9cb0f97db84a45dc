"""Interrupted sweeps: kill -9 and Ctrl-C keep finished blocks; --resume completes them."""

import signal
import subprocess
import sys
import time

import h5py
import numpy as np
import pytest

GRID = ["--bw", "1..50", "--ratio", "1..80", "--nodes", "2,4,8,16,32", "--fusion-mb", "0",
        "--block-configs", "5", "-q"]  # 20,000 configs in 4,000 blocks of about 1.4 ms


# A shell that runs the tests in the background ignores SIGINT, and children inherit
# that; the wrapper reinstalls Python's handler so the sweep sees Ctrl-C as a user's
# terminal would deliver it.
RUN_CLI = ("import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
           "sys.argv[0] = 'sweep'; runpy.run_module('sweep.cli', run_name='__main__')")


def sweep_cmd(*args):
    return [sys.executable, "-c", RUN_CLI, "grid", *GRID, *map(str, args)]


def blocks_done(partial):
    try:
        with h5py.File(partial, "r", locking=False) as f:  # peek while the writer holds it
            return int(f["progress/blocks_done"][...].sum())
    except (OSError, KeyError):
        return 0


def interrupt(cmd, partial, sig):
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    appeared = None
    while time.time() < deadline and proc.poll() is None:
        if partial.exists():
            appeared = appeared or time.time()
            # Reading a file another process is writing can fail; 1 s after the file
            # appears the sweep is compiled and busy, whatever the peek says.
            if blocks_done(partial) >= 5 or time.time() - appeared > 1.0:
                proc.send_signal(sig)
                break
        time.sleep(0.02)
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, err


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("clean") / "clean.h5"
    subprocess.run(sweep_cmd("--out", out), check=True, capture_output=True)
    with h5py.File(out) as f:
        return {k: f[k][...] for k in ("scaling_factor", "iteration_time", "exposed_comm", "comm_time")}, \
            f.attrs["command"]


def assert_same(path, clean):
    with h5py.File(path) as f:
        for k, v in clean.items():
            np.testing.assert_array_equal(f[k][...], v)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["kill-9", "ctrl-c"])
def test_interrupted_run_resumes_to_the_same_cube(tmp_path, clean_run, sig):
    out = tmp_path / "r.h5"
    partial = tmp_path / "r.h5.partial"
    rc, _, err = interrupt(sweep_cmd("--out", out), partial, sig)
    if rc == 0:
        pytest.skip("the sweep finished before it could be interrupted (machine too fast)")
    assert rc == (-9 if sig == signal.SIGKILL else 130), err
    if sig == signal.SIGINT:
        assert "--resume" in err and "Traceback" not in err
    assert partial.exists() and not out.exists()
    done = blocks_done(partial)
    assert done < 4000
    resume = [a for a in sweep_cmd("--out", out, "--resume") if a not in ("--block-configs", "5")]
    r = subprocess.run(resume, capture_output=True, text=True)  # block size read from the partial file
    assert r.returncode == 0, r.stderr
    assert out.exists() and not partial.exists()
    assert_same(out, clean_run[0])


def test_command_line_is_recorded_exactly(clean_run):
    assert clean_run[1] == "sweep grid " + " ".join(GRID) + " --out " + clean_run[1].split("--out ")[1]


def test_resume_refuses_another_grid(tmp_path):
    out = tmp_path / "r.h5"
    partial = tmp_path / "r.h5.partial"
    rc, _, _ = interrupt(sweep_cmd("--out", out), partial, signal.SIGKILL)
    if rc == 0:
        pytest.skip("the sweep finished before it could be interrupted")
    other = [a if a != "1..80" else "1..81" for a in sweep_cmd("--out", out, "--resume")]
    r = subprocess.run(other, capture_output=True, text=True)
    assert r.returncode == 2
    assert "made for another grid or profile" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert partial.exists()  # the interrupted work is not thrown away
    r = subprocess.run(sweep_cmd("--out", out), capture_output=True, text=True)
    assert r.returncode == 2 and "pass --resume to finish it" in r.stderr
