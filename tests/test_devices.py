"""Several local devices, and the Pallas kernel (interpreted on CPU), give the same cube."""

import os
import subprocess
import sys

import h5py
import numpy as np
import pytest

from conftest import random_profile
from helpers import read_outputs
from netsweep_jax.kernels import Buckets, Config, Features, Workers
from netsweep_jax.kernels.pallas_overlap import on_grid_pallas
from netsweep_jax.sweep import evaluate
from netsweep_jax.sweep.core.schema import DEFAULT_VARIABLES as OUTPUTS
from netsweep_jax.sweep.engine.compiled import grid_metrics

# 12,000 configurations in 24 blocks: several per device.
DEVICES_GRID = [
    "--bw",
    "1..50",
    "--ratio",
    "1..40",
    "--nodes",
    "2,4,8",
    "--collective",
    "ring,hierarchical",
    "--block-configs",
    "500",
    "-q",
]


def run(out, env=None):
    """The CLI in a process of its own: the device count is fixed when JAX starts."""
    cmd = [sys.executable, "-m", "netsweep_jax.sweep.cli", "grid", *DEVICES_GRID, "--out", str(out)]
    subprocess.run(cmd, check=True, capture_output=True, env={**os.environ, **(env or {})})
    with h5py.File(out) as f:
        return read_outputs(out), f.attrs["device_kind"]


def test_four_devices_equal_one(tmp_path):
    one, kind1 = run(tmp_path / "one.h5")
    # The run's own XLA flags kept (conftest's): both processes compile alike, only the device count differs.
    flags = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count=4".strip()
    four, kind4 = run(tmp_path / "four.h5", {"XLA_FLAGS": flags})
    assert kind1.endswith("x1") and kind4.endswith("x4")
    for k in OUTPUTS:
        np.testing.assert_array_equal(one[k], four[k])


def random_inputs(rng, k=3, c=700, b=37, real=30, zero_latency=False):
    f32 = np.float32
    config = Config(
        rng.uniform(1e9, 1e11, c).astype(f32),
        rng.uniform(0.1, 1, c).astype(f32),
        rng.uniform(1, 10, c).astype(f32),
        np.zeros(c, f32) if zero_latency else rng.uniform(0, 1e-5, c).astype(f32),
        rng.uniform(0, 5e-3, c).astype(f32),
        rng.uniform(0, 0.2, c).astype(f32),
        rng.uniform(0, 0.1, c).astype(f32),
        rng.integers(1, 5, c).astype(f32),
    )
    reduce = rng.uniform(0, 1e-4, (k, b)).astype(f32)
    reduce[:, real:] = 0  # padded buckets: zero bytes, cost and ready time
    layout = Workers(
        rng.uniform(0, 1e-10, k).astype(f32),
        rng.uniform(1, 16, k).astype(f32),
        rng.uniform(0, 100, k).astype(f32),
        rng.uniform(0, 3, k).astype(f32),
        np.ones(k, f32),
        (np.arange(k) % 2).astype(f32),
        reduce,
    )
    ready = np.sort(rng.uniform(0, 0.06, b)).astype(f32)
    nbytes = rng.uniform(0, 1e7, b).astype(f32)
    ready[real:] = nbytes[real:] = 0
    return config, layout, Buckets(ready, nbytes, (np.arange(b) < real).astype(f32)), f32(0.1)


@pytest.mark.parametrize(
    "tile,unroll,zero_latency,features",
    [
        (128, False, False, Features()),
        (1024, False, True, Features()),
        (128, True, False, Features()),
        (256, False, False, Features(piped=True, compute=True)),
        (128, True, True, Features(piped=True, compute=True)),
    ],
)
def test_pallas_kernel_equals_xla_kernel(tile, unroll, zero_latency, features):
    args = random_inputs(np.random.default_rng(tile), zero_latency=zero_latency)
    xla = grid_metrics(*args, kernel="xla", features=features)  # the engine's compiled XLA scan
    pallas = on_grid_pallas(
        *args, features=features, tile=tile, interpret=True, unroll=unroll, zero_latency=zero_latency
    )
    for name in OUTPUTS:
        x, p = np.asarray(xla[name]), np.asarray(pallas[name])
        assert p.shape == (3, 700)
        scale = np.maximum(np.abs(x), 0.1)  # times compared against T1
        assert np.max(np.abs(p - x) / scale) < 1e-5, name


@pytest.mark.parametrize("latency", [[0.0], [0.0, 3.0]])
def test_engine_uses_pallas_when_asked(latency):
    p = random_profile(np.random.default_rng(9), 20)
    axes = dict(
        bandwidth=[1, 10, 100],
        ratio=[1, 4],
        nodes=[2, 8],
        collective=["ring", "tree"],
        block_configs=5,
        latency=latency,
    )
    xla = evaluate(p, kernel="xla", **axes)
    pallas = evaluate(p, kernel="pallas-interpret", **axes)
    for name in OUTPUTS:
        np.testing.assert_allclose(pallas[name].values, xla[name].values, rtol=1e-5, atol=1e-6)
