"""Several local devices, and the Pallas kernel (interpreted on CPU), give the same cube."""

import os
import subprocess
import sys

import h5py
import numpy as np
import pytest

from conftest import random_profile
from kernels import block_metrics
from kernels.pallas_overlap import block_metrics_pallas
from sweep import evaluate

VARS = ("scaling_factor", "iteration_time", "exposed_comm", "comm_time")
GRID = ["--bw", "1..50", "--ratio", "1..40", "--nodes", "2,4,8", "--collective", "ring,hierarchical",
        "--block-configs", "500", "-q"]


def run(out, env=None):
    cmd = [sys.executable, "-m", "sweep.cli", "grid", *GRID, "--out", str(out)]
    subprocess.run(cmd, check=True, capture_output=True, env={**os.environ, **(env or {})})
    with h5py.File(out) as f:
        return {k: f[k][...] for k in VARS}, f.attrs["device_kind"]


def test_four_devices_equal_one(tmp_path):
    one, kind1 = run(tmp_path / "one.h5")
    four, kind4 = run(tmp_path / "four.h5", {"XLA_FLAGS": "--xla_force_host_platform_device_count=4"})
    assert kind1.endswith("x1") and kind4.endswith("x4")
    for k in VARS:
        np.testing.assert_array_equal(one[k], four[k])


@pytest.mark.parametrize("tile,unroll", [(128, False), (1024, False), (128, True)])
def test_pallas_kernel_equals_xla_kernel(tile, unroll):
    rng = np.random.default_rng(tile)
    k, c, b = 3, 700, 37
    f32 = np.float32
    args = (rng.uniform(1e-11, 1e-9, c).astype(f32), (1 / rng.uniform(1, 10, c)).astype(f32),
            rng.uniform(0, 1e-5, c).astype(f32), rng.uniform(0, 1e-10, k).astype(f32),
            rng.uniform(1, 16, k).astype(f32), rng.uniform(0, 100, k).astype(f32),
            rng.uniform(0, 1e-4, (k, b)).astype(f32), np.sort(rng.uniform(0, 0.06, b)).astype(f32),
            rng.uniform(0, 1e7, b).astype(f32), (np.arange(b) < 30).astype(f32), f32(0.1))
    args[6][:, 30:] = 0  # padded buckets: zero bytes, cost and ready time
    args[7][30:] = 0
    args[8][30:] = 0
    xla = block_metrics(*args)
    pallas = block_metrics_pallas(*args, tile=tile, interpret=True, unroll=unroll)
    zero = list(args)
    zero[2] = np.zeros(c, f32)
    no_lat = block_metrics_pallas(*zero, tile=tile, interpret=True, zero_latency=True)
    np.testing.assert_allclose(no_lat["scaling_factor"], block_metrics(*zero)["scaling_factor"], rtol=1e-5)
    for name in VARS:
        x, p = np.asarray(xla[name]), np.asarray(pallas[name])
        assert p.shape == (k, c)
        scale = np.maximum(np.abs(x), 0.1)  # times compared against T1
        assert np.max(np.abs(p - x) / scale) < 1e-5, name


@pytest.mark.parametrize("latency", [[0.0], [0.0, 3.0]])
def test_engine_uses_pallas_when_asked(monkeypatch, latency):
    p = random_profile(np.random.default_rng(9), 20)
    axes = dict(bandwidth=[1, 10, 100], ratio=[1, 4], nodes=[2, 8], collective=["ring", "tree"], block_configs=5,
                latency=latency)
    monkeypatch.setenv("NETSWEEP_KERNEL", "xla")
    xla = evaluate(p, **axes)
    monkeypatch.setenv("NETSWEEP_KERNEL", "pallas-interpret")
    pallas = evaluate(p, **axes)
    for name in VARS:
        np.testing.assert_allclose(pallas[name].values, xla[name].values, rtol=1e-5, atol=1e-6)
