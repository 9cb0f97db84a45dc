"""FSDP (full sharding): the kernel against the float64 reference (every collective, NCCL's own too), by hand,
and its errors."""

import dataclasses

import numpy as np
import pytest

from helpers import TOLERANCE, invoke
from netsweep_jax.sweep import evaluate
from netsweep_jax.sweep.core.schema import DEFAULT_VARIABLES as OUTPUTS
from netsweep_jax.sweep.model.profile import make_profile
from reference import simulate_fsdp

TABLE = (np.array([0.0, 1e4, 1e6, 1e8]), np.array([1e-5, 1.2e-5, 3e-5, 1.5e-3]))


def sharded_profile(rng, n=30, units=6):
    sizes = np.round(rng.choice([4e3, 1e6, 8e6, 3e7], size=n) * rng.uniform(0.5, 2.0, n))
    waits = rng.uniform(0, 2e-3, n)
    forward = rng.uniform(0, 1e-3, n)
    unit = np.sort(rng.integers(0, units, n))[::-1]  # blocks, in backward order
    t1 = float(waits.sum() + forward.sum() + rng.uniform(0.01, 0.1))
    return make_profile("sharded", [f"t{i}" for i in range(n)], sizes, waits, t1, forward=forward, unit=unit)


@pytest.mark.parametrize("seed,dtype,ours", [(0, "float32", ["nccl"]), (1, "float64", [])])
def test_fsdp_matches_reference(dtype, seed, ours):
    # On H100s, so that NCCL's own all-gathers and reduce-scatters (nccl) can be priced too (in float32: its
    # compile is the test's longest; the schedule by hand below, NCCL's collectives in test_nccl.py).
    rng = np.random.default_rng(seed)
    p = dataclasses.replace(sharded_profile(rng), device="h100")
    ds = evaluate(
        p,
        bucketing=["fsdp", "ddp"],
        bandwidth=[float(np.round(rng.uniform(1, 100), 2)), 400],
        nodes=[1, 2, int(rng.integers(3, 9))],
        gpus_per_node=[1, 8],
        latency=[0, 5],
        collective=["ring", "tree", "hierarchical", "nccl-ring", "nccl-tree", *ours],
        jitter=[0, 0.05],
        overhead=[0, 2],
        reduce_table=TABLE,
        dtype=dtype,
        block_configs=37,
    )
    tol = TOLERANCE["overlap"][dtype]
    intra = float(ds.attrs["intra_bandwidth_gbps"]) * 1e9
    c = {d: ds[d].values for d in ds.dims}
    sf = ds.scaling_factor.sel(bucketing="fsdp")
    fsdp = {name: ds[name].sel(bucketing="fsdp").values for name in OUTPUTS}  # once, not per point
    at = {d: sf[d].values for d in sf.dims}
    for idx in np.ndindex(sf.shape):
        v = {d: at[d][i] for d, i in zip(sf.dims, idx)}
        ref = simulate_fsdp(
            p.wait.tolist(),
            p.grad_bytes.tolist(),
            p.forward.tolist(),
            p.unit.tolist(),
            p.t1,
            bandwidth=v["bandwidth"] * 1e9,
            nodes=int(v["nodes"]),
            gpus=int(v["gpus_per_node"]),
            latency=v["latency"] * 1e-6,
            collective=str(v["collective"]),
            table=TABLE,
            intra_bw=intra,
            overhead=v["overhead"] * 1e-3,
            jitter=v["jitter"],
            arch=2,  # Hopper
        )
        for name in OUTPUTS:
            got = float(fsdp[name][idx])
            assert abs(got - ref[name]) <= tol * max(abs(ref[name]), p.t1), (name, v, got, ref[name])
    assert set(c["bucketing"]) == {"fsdp", "ddp"}


def test_two_units_by_hand():
    # Two units of 8 Mbit on a 2-worker ring at 8 Gbit/s, no reduction cost: the all-reduce of a
    # unit takes 2(N-1)/N x 1 ms = 1 ms, so an all-gather or a reduce-scatter takes 0.5 ms.
    p = make_profile("two", ["b", "a"], [1e6, 1e6], [4e-3, 4e-3], 0.05, forward=[2e-3, 2e-3], unit=[1, 0])
    zero = (np.array([0.0, 1e9]), np.array([0.0, 0.0]))
    ds = evaluate(
        p, bucketing="fsdp", bandwidth=8, nodes=2, gpus_per_node=1, reduce_table=zero, dtype="float64"
    )
    # forward: AG_a 0-0.5, F_a 0.5-2.5 (AG_b 0.5-1), F_b 2.5-4.5; backward: AG_b 4.5-5, B_b 5-9
    # (AG_a 5-5.5), RS_b 9-9.5, B_a 9-13, RS_a 13-13.5: 13.5 ms against 12 ms of compute.
    assert float(ds.iteration_time.squeeze()) == pytest.approx(0.05 + 1.5e-3, rel=1e-12)
    assert float(ds.comm_time.squeeze()) == pytest.approx(3e-3, rel=1e-12)


def test_cli_fsdp_and_its_refusals(tmp_path):
    r = invoke(
        "grid",
        "--model",
        "gpt2",
        "--gpu",
        "a100",
        "--precision",
        "bf16",
        "--bucketing",
        "fsdp,ddp",
        "--collective",
        "nccl-ring",
        "--nodes",
        "1,8",
        "--bw",
        "100",
        "--out",
        str(tmp_path / "f.h5"),
        "-q",
    )
    assert r.exit_code == 0, r.output
    r = invoke("grid", "--model", "resnet50", "--bucketing", "fsdp", "--out", str(tmp_path / "g.h5"))
    assert r.exit_code == 2 and "FSDP needs forward times per tensor" in r.output
    # one line for a profile file too (a hunt: the assumed line came first, then the refusal)
    r = invoke("grid", "--profile", "examples/profile.csv", "--iteration-time", "0.05", "--bucketing", "fsdp",
               "--bw", "10", "--out", str(tmp_path / "g.h5"))  # fmt: skip
    assert r.exit_code == 2 and r.output.startswith("error: --bucketing fsdp: FSDP needs forward times")
    assert r.output.count("\n") == 1
    r = invoke(
        "grid", "--model", "gpt2", "--bucketing", "fsdp", "--accum", "2", "--out", str(tmp_path / "h.h5")
    )
    assert r.exit_code == 2 and "--bucketing fsdp with accum > 1" in r.output
