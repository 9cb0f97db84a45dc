"""The data-parallel family's ``--collective nccl``: each bucket NCCL's own all-reduce as kernels/nccl.py prices
it (kernels.overlap.nccl_durations), and each FSDP unit its all-gather and reduce-scatter, against the float64
reference on random sweeps in both dtypes, by hand on two H100 hosts, and what it refuses."""

import dataclasses

import numpy as np
import pytest
from test_fsdp import sharded_profile
from test_kernels import TABLE, check_against_reference, rounded

from conftest import random_profile
from helpers import invoke
from netsweep_jax.kernels import nccl
from netsweep_jax.kernels.layout_collectives import NCCL_CONSTANTS
from netsweep_jax.sweep import evaluate
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.core.schema import DEFAULT_VARIABLES as OUTPUTS
from netsweep_jax.sweep.engine.grid import make_grid
from netsweep_jax.sweep.model.profile import make_profile
from reference import simulate_fsdp


def sweep_and_check(seed, dtype, device, arch, also=()):
    """A random profile on ``device`` (with the profiles ``also``) swept over 1-4 hosts of 1 or 8 GPUs and 1 or
    8 NICs with NCCL's collective, checked against the float64 reference; the sweep."""
    rng = np.random.default_rng(seed)
    profile = dataclasses.replace(random_profile(rng), device=device)
    ds = evaluate(
        [profile, *also],
        reduce_table=TABLE,
        dtype=dtype,
        # Beside a pipelined collective and a latency (which nccl does not read): each its own sum of buckets.
        collective=["nccl", "nccl-ring"],
        latency=[0.0, 20.0],
        bandwidth=[*np.round(rng.uniform(10, 300, 2), 3), 400.0],
        utilization=[rounded(rng, 0.3, 1), 1.0],
        ratio=[1.0, rounded(rng, 1, 50, 2)],
        nodes=[1, 2, 4],
        gpus_per_node=[1, 8],
        nics_per_node=[1, 8],
        bucketing=["horovod", "ddp"],
    )
    intra = float(ds.attrs["intra_bandwidth_gbps"])
    check_against_reference(profile, ds.sel(model=profile.model), dtype, intra=intra, arch=arch)
    return ds


def test_nccl_buckets_match_reference_and_one_bucket_on_two_h100_hosts_by_hand():
    # A random profile on H100s (NVLS and NVLSTree in reach) against the reference, and in the same sweep one
    # 1 GiB gradient ready at the end of the backward on 2 hosts of 8 H100 (NVLink 450 GB/s, 8 x 400G NICs):
    # nothing overlaps it, so the exposed time is NCCL's all-reduce, NVLSTree at 8 x 57.7 GB/s of bus
    # bandwidth (A = 461.6 x 16 / 30), latency 25 + 2 (20.9 + 2 lambda) us and the whole fill f: 435.4 GB/s
    # of busbw, where the nccl-ring model's ring at the NICs' full rate and no latency gives 400 (each byte
    # crossing the host boundary twice).
    x = 2.0**30
    one = dataclasses.replace(make_profile("one", ["w"], np.array([x]), np.array([0.1]), 0.2), device="h100")
    ds = sweep_and_check(3, "float64", "h100", 2, also=(one,))
    cell = dict(model="one", collective="nccl", nodes=2, gpus_per_node=8, nics_per_node=8, bandwidth=400.0)
    cell.update(utilization=1.0, ratio=1.0, latency=20.0)  # the latency not read: NCCL's own
    exposed = float(ds["exposed_comm"].sel(cell).values.ravel()[0])
    eta, _, lam, _, fill, _ = (float(v) for v in NCCL_CONSTANTS)
    us = 25 + 2 * (20.9 + 2 * lam) + x / (1000 * 461.6 * 16 / 30 * eta) + fill
    assert exposed == pytest.approx(us * 1e-6, rel=1e-9)
    assert 30 / 16 * x / exposed / 1e9 == pytest.approx(435.4, abs=0.05)


def test_nccl_buckets_match_reference_in_float32_on_volta():
    sweep_and_check(4, "float32", "v100", 0)


def test_what_nccl_does_not_price_yet_is_refused_in_one_line(tmp_path):
    odd = dataclasses.replace(random_profile(np.random.default_rng(0)), device="AMD Instinct MI300X")
    with pytest.raises(InputError, match="'AMD Instinct MI300X', which has no GPU preset"):
        make_grid(odd, collective="nccl", bandwidth=10)
    assert (
        "--latency and the reduce table not read"
        in make_grid("resnet50", collective="nccl", bandwidth=10).assumed
    )
    out = tmp_path / "x.h5"
    r = invoke("grid", "--model", "resnet50", "--collective", "nccl", "--kernel", "pallas", "--out", out)
    assert r.exit_code == 2 and "NCCL's own collective" in r.output and not out.exists(), r.output
    r = invoke("calibrate", "examples/resnet50_measured.csv", "--collective", "nccl", "--fit", "utilization")
    assert r.exit_code == 2 and "calibrate with nccl-ring" in r.output, r.output


def test_fsdp_units_match_reference_and_one_unit_is_its_gather_twice_and_its_scatter():
    # FSDP's all-gathers and reduce-scatters as NCCL's own (float32, against the float64 reference at 40 random
    # cells); one unit of 256 MiB on 2 hosts of 8 H100: nothing overlaps the
    # first gather, the backward's gather or the reduce-scatter (the one unit's compute waits on each), so the
    # step is T1 plus NCCL's all-gather twice and its reduce-scatter once (kernels.nccl, by hand in test_nccl).
    rng = np.random.default_rng(5)
    profile = dataclasses.replace(sharded_profile(rng), device="h100")
    x, t1 = 2.0**28, 0.3
    one = make_profile("one", ["w"], [x], [0.1], t1, forward=[0.05], unit=[0])
    one = dataclasses.replace(one, device="h100")
    ds = evaluate(
        [profile, one],
        bucketing="fsdp",
        collective="nccl",
        bandwidth=[float(np.round(rng.uniform(10, 300), 3)), 400.0],
        utilization=[rounded(rng, 0.3, 1), 1.0],
        nodes=[1, 2, 4],
        gpus_per_node=[1, 8],
        nics_per_node=[1, 8],
        reduce_table=TABLE,
        dtype="float32",
    )
    intra = float(ds.attrs["intra_bandwidth_gbps"]) * 1e9
    sub = ds.sel(model="sharded")
    outputs = {name: sub[name].values for name in OUTPUTS}
    coords = {d: sub[d].values for d in sub.scaling_factor.dims}
    cells = list(np.ndindex(sub.scaling_factor.shape))
    for k in rng.choice(len(cells), 40, replace=False):
        idx = cells[k]
        v = {d: coords[d][i] for d, i in zip(coords, idx)}
        ref = simulate_fsdp(
            profile.wait.tolist(), profile.grad_bytes.tolist(), profile.forward.tolist(), profile.unit.tolist(),
            profile.t1, bandwidth=v["bandwidth"] * 1e9, utilization=v["utilization"], nodes=int(v["nodes"]),
            gpus=int(v["gpus_per_node"]), nics=int(v["nics_per_node"]), collective=str(v["collective"]),
            table=TABLE, intra_bw=intra, arch=2,
        )  # fmt: skip
        for name in OUTPUTS:
            got = float(outputs[name][idx])
            assert abs(got - ref[name]) <= 2e-5 * max(abs(ref[name]), profile.t1), (name, v, got, ref[name])
    cell = dict(model="one", collective="nccl", nodes=2, gpus_per_node=8, nics_per_node=8, bandwidth=400.0)
    got = ds.sel({**cell, "utilization": 1.0}).squeeze()
    nvlink = nccl.nvlink_gbs(intra / 8, 2)  # the sweep's NVLink (bytes/s) as NCCL counts it, Hopper's links
    fabric = nccl.Fabric(8.0, 2.0, 1.0, nvlink, 8.0, 50.0, 2, True, False)
    gather, scatter = (
        float(nccl.collective(op, np.float64(x), fabric, NCCL_CONSTANTS).seconds)
        for op in (nccl.ALL_GATHER, nccl.REDUCE_SCATTER)
    )
    assert float(got.comm_time) == pytest.approx(2 * gather + scatter, rel=1e-5)
    assert float(got.iteration_time) == pytest.approx(t1 + 2 * gather + scatter, rel=1e-5)


def test_a_fabric_sets_the_cluster_its_tier_and_constants():
    # gb200-nvl72-sharp with its spine 4:1: 4 GB200 a host, 18 hosts an NVLink domain, 144 hosts a leaf, SHARP on,
    # against the float64 reference on 1-40 hosts (inside one rack, across racks, SHARP's CollNet in reach), and
    # a fabric file's constants on 2 H100 hosts by hand.
    rng = np.random.default_rng(7)
    profile = dataclasses.replace(random_profile(rng), device="gb200")
    ds = evaluate(
        profile, bandwidth=None, fabric="gb200-nvl72-sharp", oversubscription=4, nodes=[1, 2, 18, 19, 40],
        reduce_table=TABLE, dtype="float64",
    )  # fmt: skip
    said = ds.attrs["assumed"]
    for phrase in ("--collective nccl (--fabric implies it)", "--gpus-per-node 4 (the fabric's)",
                   "--nics-per-node 4 (the fabric's)", "--bw 400 (the fabric's)", "fabric gb200-nvl72-sharp"):  # fmt: skip
        assert phrase in said, phrase
    assert ds.attrs["nvlink_domain"] == 72 and ds.attrs["sharp"] == 1 and ds.attrs["oversubscription"] == 4
    tier = dict(nvlink_domain=72, collnet=True, leaf_hosts=144, oversubscription=4.0, rail_only=False)
    intra = float(ds.attrs["intra_bandwidth_gbps"])
    check_against_reference(profile, ds, "float64", intra=intra, arch=3, fabric=tier)
    # Inside one NVLink domain (18 hosts) the NICs are not read: the same step at 10 Gbit/s; past it they are.
    slow = evaluate(
        profile, bandwidth=10, fabric="gb200-nvl72-sharp", nodes=[18, 19], reduce_table=TABLE, dtype="float64"
    )
    fast = ds.sel(nodes=[18, 19])["iteration_time"].values.ravel()
    got = slow["iteration_time"].values.ravel()
    assert got[0] == fast[0] and got[1] > fast[1]


def test_the_spine_divides_the_nics_rate_only_past_a_leaf():
    # dgx-h100-superpod: 32 hosts a leaf. At 4:1 an all-reduce over 33 hosts runs at a quarter of the NICs' rate,
    # exactly the step at 100 Gbit/s NICs on a non-blocking spine; over 32 hosts the spine is not crossed.
    one = dict(fabric="dgx-h100-superpod", nodes=[32, 33], dtype="float64")
    spine = evaluate("gpt2-xl", bandwidth=400, oversubscription=4, **one)["iteration_time"].values.ravel()
    flat = evaluate("gpt2-xl", bandwidth=[100, 400], **one)["iteration_time"]

    def at(bandwidth, nodes):
        return float(flat.sel(bandwidth=bandwidth, nodes=nodes).squeeze())

    assert spine[0] == at(400, 32) != at(100, 32) and spine[1] == at(100, 33)


def test_a_fabric_files_constants_price_one_bucket_by_hand(tmp_path):
    # One 1 GiB bucket on 2 hosts of 8 H100 (NVLSTree, as the test above) at a file's constants: eta_net 0.5,
    # lambda 8 us, fill 30 us (whole from 8 MiB): 25 + 2 (20.9 + 2 x 8) us of latency.
    from netsweep_jax.sweep.model.fabric_constants import NAMES, FabricConstants

    own = FabricConstants(**dict(zip(NAMES, (0.5, 0.7, 8.0, 4.0, 30.0, 8.0))), source="mine.json")
    x = 2.0**30
    one = dataclasses.replace(make_profile("one", ["w"], np.array([x]), np.array([0.1]), 0.2), device="h100")
    ds = evaluate(one, bandwidth=400, nodes=2, gpus_per_node=8, nics_per_node=8, fabric=own, dtype="float64")
    assert "at the fabric file's constants" in ds.attrs["assumed"] and ds.attrs["fabric"] == "mine.json"
    us = 25 + 2 * (20.9 + 2 * 8.0) + x / (1000 * 461.6 * 16 / 30 * 0.5) + 30.0
    assert float(ds["exposed_comm"].squeeze()) == pytest.approx(us * 1e-6, rel=1e-9)


def test_what_a_fabric_refuses_in_one_line(tmp_path):
    cases = (
        (dict(fabric="aws-p5", collective="ring"), "add nccl to --collective"),
        (dict(oversubscription=2), "needs a --fabric preset"),
        (dict(fabric="dgx-h100-rail-only", oversubscription=2), "wired rail-only"),
        (dict(fabric="aws-p5", oversubscription="1,2"), "give one value"),
        (dict(fabric="no-such"), "not a fabric preset"),
    )
    for options, message in cases:
        with pytest.raises(InputError, match=message):
            make_grid("gpt2-xl", **options)
    out = tmp_path / "x.h5"
    r = invoke("grid", "--model", "gpt2-xl", "--fabric", "aws-p5", "--collective", "ring", "--out", out)
    assert r.exit_code == 2 and "add nccl to --collective" in r.output and not out.exists(), r.output
