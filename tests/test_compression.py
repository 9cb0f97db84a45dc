"""Compressors: bytes, codec times and patterns against the float64 reference, and their edges."""

import dataclasses
import math

import numpy as np
import pytest

import netsweep_jax.sweep as sweep
from helpers import invoke
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.core.schema import COLLECTIVES
from netsweep_jax.sweep.model.compressors import codec_cost_for, parse_compressor, tensor_codec
from netsweep_jax.sweep.model.profile import make_profile
from netsweep_jax.sweep.model.vector_add import default_table
from tests import reference as ref

COMPRESSORS = ["none", "fp16", "int8", "topk:0.01", "randomk:0.05", "signsgd", "powersgd:2", "powersgd:64"]
CODEC = {
    "hbm_bytes_per_s": 1.3e12,
    "matmul_flops_per_s": 2e13,
    "memory_efficiency": 0.7,
    "matmul_efficiency": 0.5,
    "launch_s": 3e-6,
    "topk_passes": 3.0,
}
COST = {"hbm": 1.3e12, "peak": 2e13, "me": 0.7, "fe": 0.5, "launch": 3e-6, "passes": 3.0}


def random_profile(seed, element_bytes):
    """Vectors, matrices and 4-d convolution kernels, some too small for PowerSGD to compress."""
    rng = np.random.default_rng(seed)
    shapes = []
    for _ in range(rng.integers(6, 14)):
        kind = rng.integers(0, 3)
        if kind == 0:
            shapes.append((int(rng.integers(1, 5000)),))
        elif kind == 1:
            shapes.append((int(rng.integers(1, 3000)), int(rng.integers(1, 3000))))
        else:
            shapes.append((int(rng.integers(8, 256)), int(rng.integers(3, 256)), 3, 3))
    sizes = [math.prod(s) * element_bytes for s in shapes]
    waits = rng.uniform(0, 2e-3, len(shapes))
    return make_profile(
        f"rand{seed}", [f"t{i}" for i in range(len(shapes))], sizes, waits, 0.06, shape=shapes
    )


@pytest.mark.parametrize("seed,element_bytes", [(0, 4), (1, 2), (2, 4)])
def test_every_compressor_matches_the_reference(seed, element_bytes):
    # On H100s, so that NCCL's own collective (nccl) prices the payloads too: its GPU's architecture and NVLink.
    profile = dataclasses.replace(random_profile(seed, element_bytes), device="h100")
    table = default_table()
    axes = dict(
        bandwidth=[3, 40],
        utilization=[0.5, 1],
        ratio=[1, 3],
        latency=[0, 7],
        nodes=[1, 2, 3],
        gpus_per_node=[1, 4],
        nics_per_node=[1, 2],
        fusion_buffer=[0.5],
        fusion_timeout=[1],
        jitter=[0, 0.1],
    )
    ds = sweep.evaluate(
        profile,
        compressor=COMPRESSORS,
        # Every flat collective and NCCL's choice (a forced algorithm: tests/test_dp_nccl.py).
        collective=[c for c in COLLECTIVES if not c.startswith("nccl:")],
        bucketing=["horovod", "ddp"],
        codec_cost=CODEC,
        reduce_table=table,
        dtype="float64",
        **axes,
    )
    rng = np.random.default_rng(seed)
    worst = 0.0
    for _ in range(160):  # random cells: every compressor, collective and layout is drawn often
        index = {d: int(rng.integers(ds.sizes[d])) for d in ds.dims}
        at = {d: ds[d].values[i] for d, i in index.items()}
        want = ref.simulate(
            profile.wait.tolist(),
            profile.grad_bytes.tolist(),
            profile.t1,
            bandwidth=at["bandwidth"] * 1e9,
            utilization=at["utilization"],
            ratio=at["ratio"],
            latency=at["latency"] * 1e-6,
            nodes=int(at["nodes"]),
            gpus=int(at["gpus_per_node"]),
            nics=int(at["nics_per_node"]),
            jitter=at["jitter"],
            collective=str(at["collective"]),
            bucketing=str(at["bucketing"]),
            buffer_bytes=0.5 * 2**20,
            timeout_s=1e-3,
            table=table,
            compressor=str(at["compressor"]),
            shapes=profile.shape,
            cost=COST,
            accuracy=True,
            intra_bw=float(ds.attrs["intra_bandwidth_gbps"]) * 1e9,
            arch=2,  # Hopper
        )
        cell = tuple(index[d] for d in ds.scaling_factor.dims)
        for name, value in want.items():
            worst = max(worst, abs(float(ds[name].values[cell]) - value) / max(abs(value), 1e-12))
    assert worst < 1e-9


def test_none_is_bit_identical_to_the_model_without_compressors():
    axes = dict(
        bandwidth=[1, 100],
        utilization=[0.3, 1],
        ratio=[1, 4],
        nodes=[1, 8],
        latency=[0, 5],
        collective=["ring", "nccl-ring"],
        bucketing=["horovod", "ddp"],
        jitter=[0, 0.05],
    )
    for dtype in ("float32", "float64"):
        plain = sweep.evaluate("resnet50", dtype=dtype, **axes)
        mixed = sweep.evaluate("resnet50", dtype=dtype, compressor="none,topk:0.01,powersgd:4", **axes)
        for name in plain.data_vars:
            assert np.array_equal(plain[name].values, mixed[name].sel(compressor=["none"]).values), name
        # --ratio keeps its meaning: with compressor none, time_to_accuracy is the ideal ratio's own speed-up.
        tta = mixed.time_to_accuracy.sel(compressor="none")
        base = plain.iteration_time.sel(ratio=1, drop=True)
        np.testing.assert_allclose(tta.values, (plain.iteration_time / base).values[:, :, :, 0], rtol=1e-6)


def test_hand_computed_topk_on_two_workers():
    # One 1000 x 1000 fp32 tensor ready at 10 ms, T1 = 50 ms, a ring of 2 GPUs at 8 Gbit/s,
    # a GPU at 1e12 B/s with no launch cost. topk:0.01 keeps k = 10,000 values + indices:
    # 80,000 bytes; a 2-worker ring all-gather moves one payload: 80 us.
    # encode = EF 2 x 12 MB + 4.8 passes x 4 MB + pack 80 kB = 24 + 19.2 + 0.08 us
    # decode = 4 us (zero 4 MB); unpack = 120 kB = 0.12 us per payload, 2 payloads.
    profile = make_profile("one", ["w"], [4e6], [0.01], 0.05, shape=[(1000, 1000)])
    ds = sweep.evaluate(
        profile,
        bandwidth=8,
        nodes=1,
        gpus_per_node=2,
        compressor="topk:0.01",
        dtype="float64",
        codec_cost={"hbm_bytes_per_s": 1e12, "memory_efficiency": 1.0, "launch_s": 0.0},
    )
    encode = 24e-6 + 19.2e-6 + 0.08e-6
    comm = 80e-6 + 4e-6 + 2 * 0.12e-6
    assert float(ds.comm_time.squeeze()) == pytest.approx(comm, rel=1e-12)
    assert float(ds.exposed_comm.squeeze()) == pytest.approx(comm, rel=1e-12)
    assert float(ds.iteration_time.squeeze()) == pytest.approx(0.05 + encode + comm, rel=1e-12)
    # Uncompressed: a 2-worker ring all-reduce of 4 MB is 4 ms plus one vector add of 2 MB.
    plain = sweep.evaluate(profile, bandwidth=8, nodes=1, gpus_per_node=2, dtype="float64")
    tta = float(ds.time_to_accuracy.squeeze())
    assert tta == pytest.approx((0.05 + encode + comm) / float(plain.iteration_time.squeeze()), rel=1e-12)


def test_payload_bytes_by_hand():
    profile = make_profile(
        "p", ["w", "b"], [4 * 768 * 3072, 4 * 3072], [1e-3, 0.0], 0.05, shape=[(768, 3072), (3072,)]
    )
    cost = codec_cost_for(profile)
    bytes_of = {
        spec: tensor_codec(parse_compressor(spec), profile, cost).payload.tolist()
        for spec in ("none", "fp16", "int8", "topk:0.01", "randomk:0.01", "signsgd", "powersgd:4")
    }
    assert bytes_of["none"] == [4 * 768 * 3072, 4 * 3072]
    assert bytes_of["fp16"] == [2 * 768 * 3072, 2 * 3072]
    assert bytes_of["int8"] == [768 * 3072, 3072]
    assert bytes_of["topk:0.01"] == [math.ceil(0.01 * 768 * 3072) * 8, 31 * 8]
    assert bytes_of["randomk:0.01"] == [math.ceil(0.01 * 768 * 3072) * 4, 31 * 4]
    assert bytes_of["signsgd"] == [768 * 3072 / 8 + 4, 3072 / 8 + 4]
    assert bytes_of["powersgd:4"] == [(768 + 3072) * 4 * 4, 4 * 3072]  # the vector goes uncompressed


def test_codec_cost_follows_the_profiles_gpu_and_precision():
    from netsweep_jax.sweep.engine.workloads import resolve_models
    from netsweep_jax.sweep.model.compute import GPUS

    assert codec_cost_for(sweep.builtin_profile("resnet50")).peak == GPUS["v100"].fp32
    h100 = resolve_models("gpt2", gpu="h100", precision="bf16")[0]
    cost = codec_cost_for(h100)
    assert (cost.hbm, cost.peak) == (GPUS["h100"].hbm, GPUS["h100"].half)
    # A bf16 gradient is already 2 bytes: the fp16 cast has nothing to do.
    fp16 = tensor_codec(parse_compressor("fp16"), h100, cost)
    assert np.array_equal(fp16.payload, h100.grad_bytes) and not fp16.encode.any()


def test_compression_pays_on_slow_links_and_all_gather_grows_with_workers():
    ds = sweep.evaluate(
        "vgg16",
        bandwidth=[1, 100],
        nodes=[2, 16],
        collective="nccl-ring",
        bucketing="ddp",
        compressor="none,powersgd:4,topk:0.01",
    )
    sf = ds.scaling_factor.squeeze()
    assert sf.sel(bandwidth=1, nodes=16, compressor="powersgd:4") > 3 * sf.sel(
        bandwidth=1, nodes=16, compressor="none"
    )
    # top-k all-gathers: from 16 to 128 GPUs its bytes per worker grow about 8x; PowerSGD's stay flat.
    comm = ds.comm_time.squeeze()
    growth = comm.sel(bandwidth=1, nodes=16) / comm.sel(bandwidth=1, nodes=2)
    assert growth.sel(compressor="topk:0.01") > 6 and growth.sel(compressor="powersgd:4") < 1.1


@pytest.mark.parametrize(
    "spec,message",
    [
        ("bogus", "unknown compressor"),
        ("topk:0", "density D in (0, 1]"),
        ("randomk:1.5", "density D in (0, 1]"),
        ("topk", "density D in (0, 1]"),
        ("powersgd:0", "rank R >= 1"),
        ("powersgd:2.5", "rank R >= 1"),
        ("signsgd:3", "takes no argument"),
        ("none,none", "repeats"),
    ],
)
def test_bad_compressors_are_refused(spec, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        sweep.evaluate("resnet50", bandwidth=10, compressor=spec)


def test_powersgd_needs_shapes_and_fsdp_is_refused(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("name,grad_bytes,backward_us\na,4000,10\n")
    profile = sweep.load_profile(path, t1=0.1)
    with pytest.raises(InputError, match="has no tensor shapes, which powersgd needs"):
        sweep.evaluate(profile, bandwidth=10, compressor="powersgd:2")
    sweep.evaluate(profile, bandwidth=10, compressor="topk:0.1")  # element counts come from the dtype
    with pytest.raises(InputError, match="all-reduce schedules"):
        sweep.evaluate("gpt2", bandwidth=10, bucketing="fsdp", compressor="int8")


def test_profile_shapes_round_trip_and_are_checked(tmp_path):
    csv = tmp_path / "s.csv"
    csv.write_text("name,grad_bytes,backward_us,shape\nw,24,5,2x3\nb,8,1,2\n")
    p = sweep.load_profile(csv, t1=0.1)
    assert p.shape == ((2, 3), (2,))
    json_path = tmp_path / "s.json"
    import json

    json_path.write_text(json.dumps(p.to_json()))
    assert sweep.load_profile(json_path).shape == p.shape
    csv.write_text("name,grad_bytes,backward_us,shape\nw,24,5,4x4\n")
    with pytest.raises(InputError, match="is not its 24 gradient bytes"):
        sweep.load_profile(csv, t1=0.1)
    csv.write_text("name,grad_bytes,backward_us,shape\nw,24,5,2xq\n")
    with pytest.raises(InputError, match="must look like 768x3072"):
        sweep.load_profile(csv, t1=0.1)


def test_iterations_factor_scales_time_to_accuracy():
    base = sweep.evaluate("resnet50", bandwidth=10, compressor="none,topk:0.01")
    slow = sweep.evaluate(
        "resnet50", bandwidth=10, compressor="none,topk:0.01", iterations_factor="topk:0.01=1.5"
    )
    a, b = (d.time_to_accuracy.sel(compressor="topk:0.01").item() for d in (base, slow))
    assert b == pytest.approx(1.5 * a, rel=1e-6)
    assert slow.time_to_accuracy.sel(compressor="none").item() == 1.0
    with pytest.raises(InputError, match="from 0.01 to 100"):
        sweep.evaluate("resnet50", bandwidth=10, compressor="topk:0.01", iterations_factor="topk:0.01=0")


def test_cli_refuses_powersgd_on_a_profile_without_shapes(tmp_path):

    path = tmp_path / "p.csv"
    path.write_text("name,grad_bytes,backward_us\na,4000,10\n")
    r = invoke(
        "grid",
        "--profile",
        str(path),
        "--iteration-time",
        "0.1",
        "--bw",
        "10",
        "--compressor",
        "powersgd:2",
        "--out",
        str(tmp_path / "o.h5"),
    )
    assert (
        r.exit_code == 2
        and r.output.count("\n") == 1
        and "has no tensor shapes, which powersgd needs" in r.output
    )
    assert not (tmp_path / "o.h5").exists() and not (tmp_path / "o.h5.partial").exists()


def test_an_all_gathers_latency_is_its_own_message_steps_by_hand():
    # A hunt: top-k's all-gather paid its collective's all-reduce steps, 2(N-1) on a ring (twice a ring
    # all-gather's N - 1) and a tree's 2 log2 N, though its bytes are a ring's everywhere. On 8 x 8 GPUs, 50 us
    # of latency now adds, per bucket, a ring's 63 steps on ring, nccl-ring and the trees, (8 - 1) + (8 - 1) on
    # hierarchical and 2 through a parameter server; the all-reduce (none) keeps its 2 x 63 on a ring.
    collectives = ["ring", "tree", "ps", "hierarchical", "nccl-ring", "nccl-tree"]
    ds = sweep.evaluate(
        "resnet50", bandwidth=100, nodes=8, gpus_per_node=8, latency=[0, 50], collective=collectives,
        compressor="none,topk:0.01", vars="comm_time", dtype="float64",
    )  # fmt: skip
    added = (ds.comm_time.sel(latency=50) - ds.comm_time.sel(latency=0)).squeeze()
    buckets = added.sel(collective="ps", compressor="topk:0.01").item() / (2 * 50e-6)
    assert buckets == pytest.approx(round(buckets)) and round(buckets) > 1
    steps = {"ring": 63, "tree": 63, "ps": 2, "hierarchical": 14, "nccl-ring": 63, "nccl-tree": 63}
    for collective, n in steps.items():
        got = added.sel(collective=collective, compressor="topk:0.01").item()
        assert got == pytest.approx(round(buckets) * n * 50e-6, rel=1e-9), collective
    assert added.sel(collective="ring", compressor="none").item() == pytest.approx(
        round(buckets) * 126 * 50e-6, rel=1e-9
    )


def test_iterations_factor_is_refused_where_it_changes_nothing_and_said_where_it_is_1(tmp_path):
    # A hunt: need and a grid without time_to_accuracy took --iterations-factor and gave the same answer, in
    # silence; a grid that computed time_to_accuracy at factor 1 did not say so.
    grid = ["grid", "--model", "resnet50", "--bw", "10", "--compressor", "none,topk:0.01"]
    r = invoke(
        *grid, "--iterations-factor", "topk:0.01=3", "--vars", "scaling_factor", "--out", tmp_path / "a.h5"
    )
    assert r.exit_code == 2 and "--iterations-factor enters time_to_accuracy only" in r.output, r.output
    r = invoke("need", "--model", "resnet50", "--target", "0.9", "--solve", "bandwidth", "--compressor",
               "none,topk:0.01", "--iterations-factor", "topk:0.01=3")  # fmt: skip
    assert r.exit_code == 2 and "need solves for the scaling factor of one step" in r.output, r.output
    # and need's --help does not list it (a hunt: listed, then refused), where grid's does
    assert "--iterations-factor" not in invoke("need", "--help").output
    assert "--iterations-factor" in invoke("grid", "--help").output
    r = invoke(
        "need", "--model", "resnet50", "--target", "0.9", "--solve", "bandwidth", "--compressor", "fp16"
    )
    assert r.exit_code == 0 and "time_to_accuracy" not in r.output, r.output  # nor said where need reads none
    assert not list(tmp_path.iterdir())
    said = "time_to_accuracy: --iterations-factor 1 for every compressor"
    r = invoke(*grid, "--out", tmp_path / "b.h5")
    assert r.exit_code == 0 and said in r.output, r.output
    r = invoke(*grid, "--iterations-factor", "topk:0.01=3", "--out", tmp_path / "c.h5")
    assert r.exit_code == 0 and said not in r.output, r.output


def test_codec_cost_help_states_the_models_defaults():
    import re

    from netsweep_jax.sweep.model.compressors import CodecCost

    d = CodecCost(1.0, 1.0)
    text = " ".join(invoke("grid", "--help").output.split())
    said = re.search(
        r"GPU preset, at ([0-9.]+) and ([0-9.]+) of its peaks, ([0-9.e-]+) s a kernel launch, ([0-9.]+)", text
    )
    assert said is not None, text
    assert [float(x) for x in said.groups()] == [
        d.memory_efficiency,
        d.matmul_efficiency,
        d.launch,
        d.topk_passes,
    ]
