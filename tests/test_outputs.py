"""Smaller cubes on request: --vars and --store, with resume, show, select and plot."""

import os
import signal
import subprocess
import sys

import h5py
import numpy as np
import pytest
from typer.testing import CliRunner

from netsweep_jax.sweep import evaluate
from netsweep_jax.sweep.cli.app import app
from netsweep_jax.sweep.io.job import TEST_SIGNAL_HOOK

GRID = ["grid", "--bw", "1..20", "--ratio", "1..10", "--nodes", "2,4,8", "--fusion-mb", "0", "--block-configs", "20",
        "--vars", "scaling_factor,comm_time", "--store", "float16"]


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def test_only_the_chosen_variables_in_the_chosen_dtype(tmp_path):
    out = tmp_path / "v.h5"
    assert invoke(*GRID, "--out", out, "-q").exit_code == 0
    full = evaluate("resnet50", bandwidth="1..20", ratio="1..10", nodes=[2, 4, 8], fusion_buffer=0)
    with h5py.File(out) as f:
        assert [v for v in ("scaling_factor", "iteration_time", "exposed_comm", "comm_time") if v in f] == \
            ["scaling_factor", "comm_time"]
        assert f["scaling_factor"].dtype == np.float16 and f.attrs["store"] == "float16"
        sf = f["scaling_factor"][...]
    # float16 keeps the float32 result to its own resolution (2^-11 relative)
    np.testing.assert_allclose(sf.astype(np.float32), full.scaling_factor.values, rtol=2**-11)
    for args in (["show", out, "--verify"], ["select", out, "--bw", "10", "--nodes", "8", "--csv"],
                 ["plot", out, "--x", "bandwidth", "--hue", "nodes", "--sel", "ratio=1", "--out", tmp_path / "p.png"]):
        r = invoke(*args)
        assert r.exit_code == 0, r.output
    assert "iteration_time" not in invoke("select", out, "--bw", "10", "--csv").output


def test_kill_9_then_resume_is_bit_identical(tmp_path):
    clean = tmp_path / "clean.h5"
    assert invoke(*GRID, "--out", clean, "-q").exit_code == 0
    out = tmp_path / "r.h5"
    env = {**os.environ, TEST_SIGNAL_HOOK: "6:SIGKILL"}
    r = subprocess.run([sys.executable, "-m", "netsweep_jax.sweep.cli", *GRID, "--out", str(out)], env=env, capture_output=True)
    assert r.returncode == -signal.SIGKILL
    assert invoke(*GRID, "--out", out, "--resume").exit_code == 0
    with h5py.File(clean) as a, h5py.File(out) as b:
        for name in ("scaling_factor", "comm_time"):
            np.testing.assert_array_equal(a[name][...], b[name][...])


def test_resume_refuses_other_outputs(tmp_path):
    out = tmp_path / "r.h5"
    env = {**os.environ, TEST_SIGNAL_HOOK: "3:SIGKILL"}
    subprocess.run([sys.executable, "-m", "netsweep_jax.sweep.cli", *GRID, "--out", str(out)], env=env, capture_output=True)
    other = [a if a != "float16" else "float32" for a in GRID]
    r = invoke(*other, "--out", out, "--resume")
    assert r.exit_code == 2 and "made for another grid" in r.output


@pytest.mark.parametrize("args,message", [
    (["--vars", "speedup"], "--vars 'speedup': unknown; known: scaling_factor"),
    (["--vars", ""], "--vars '': give at least one name"),
    (["--store", "float8"], "--store 'float8': must be one of float16, float32, float64"),
])
def test_bad_output_options(tmp_path, args, message):
    r = invoke("grid", *args, "--out", tmp_path / "o.h5")
    assert r.exit_code == 2 and message in r.output and not (tmp_path / "o.h5").exists()
