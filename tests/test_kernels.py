"""The JAX kernels against the float64 reference loop, random and hand-computed."""

import itertools

import numpy as np
import pytest

from conftest import random_profile
from reference import simulate
from sweep import evaluate
from sweep.profile import make_profile
from sweep.schema import OUTPUTS

# float32: 1e-4 relative; float64: 1e-10. Times near 0 are compared against T1.
TOL = {"float32": 1e-4, "float64": 1e-10}
TABLE = (np.array([0.0, 1e4, 1e6, 1e8]), np.array([1e-5, 1.2e-5, 3e-5, 1.5e-3]))


def check_against_reference(profile, ds, dtype, table=TABLE, intra=1200.0):
    tol = TOL[dtype]
    c = {d: ds[d].values for d in ds.dims}
    for idx in itertools.product(*(range(len(v)) for v in c.values())):
        point = dict(zip(c, idx))
        v = {d: c[d][i] for d, i in point.items()}
        ref = simulate(
            profile.wait.tolist(), profile.grad_bytes.tolist(), profile.t1,
            bandwidth=v["bandwidth"] * 1e9, utilization=v["utilization"], ratio=v["ratio"],
            nodes=int(v["nodes"]), gpus=int(v["gpus_per_node"]), latency=v["latency"] * 1e-6,
            collective=str(v["collective"]), buffer_bytes=v["fusion_buffer"] * 2**20,
            timeout_s=v["fusion_timeout"] * 1e-3, table=table, intra_bw=intra * 1e9,
        )
        for name in OUTPUTS:
            got = float(ds[name].values[idx])
            scale = max(abs(ref[name]), profile.t1)
            assert abs(got - ref[name]) <= tol * scale, (name, v, got, ref[name])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_profiles_match_reference(dtype, seed):
    rng = np.random.default_rng(seed)
    profile = random_profile(rng)
    ds = evaluate(
        profile,
        bandwidth=np.round(rng.uniform(0.5, 200, 3), 3),
        utilization=[float(np.round(rng.uniform(0.05, 1), 3)), 1.0],
        ratio=[1.0, float(np.round(rng.uniform(1, 300), 2))],
        nodes=[1, 2, int(rng.integers(3, 17))],
        gpus_per_node=[1, int(rng.integers(2, 9))],
        latency=[0.0, float(np.round(rng.uniform(0, 50), 2))],
        collective=["ring", "tree", "ps", "hierarchical"],
        fusion_buffer=[0.0, 4.0, 64.0],
        fusion_timeout=[0.0, 1.0, 5.0],
        reduce_table=TABLE,
        intra_bandwidth=float(np.round(rng.uniform(100, 2000))),
        dtype=dtype,
        block_configs=int(rng.integers(7, 200)),  # many blocks, padding on both sides
    )
    check_against_reference(profile, ds, dtype, intra=float(ds.attrs["intra_bandwidth_gbps"]))


def one_tensor(wait=2e-3, nbytes=1e6, t1=0.1):
    return make_profile("one", ["w"], [nbytes], [wait], t1)


def test_one_tensor_by_hand():
    # ring over N = 2: 2(N-1)/N * S * 8 / b + (N-1) reduce(S/2) + 2(N-1) a
    p = one_tensor()
    table = (np.array([0.0, 1e9]), np.array([7e-6, 7e-6]))  # constant 7 us add
    ds = evaluate(p, bandwidth=10, nodes=2, gpus_per_node=1, latency=3.0, reduce_table=table,
                  dtype="float64")
    dur = 1e6 * 8 / 10e9 + 7e-6 + 2 * 3e-6
    assert float(ds.comm_time.squeeze()) == pytest.approx(dur, rel=1e-12)
    assert float(ds.exposed_comm.squeeze()) == pytest.approx(dur, rel=1e-12)
    assert float(ds.scaling_factor.squeeze()) == pytest.approx(0.1 / (0.1 + dur), rel=1e-12)


def test_single_worker_scales_perfectly():
    p = random_profile(np.random.default_rng(5))
    ds = evaluate(p, bandwidth=[0.001, 1], nodes=1, gpus_per_node=1,
                  collective=["ring", "tree", "ps", "hierarchical"])
    assert np.all(ds.scaling_factor.values == 1.0)
    assert np.all(ds.comm_time.values == 0.0)


def test_infinite_bandwidth_scales_perfectly():
    p = random_profile(np.random.default_rng(6))
    zero = (np.array([0.0, 1e9]), np.array([0.0, 0.0]))
    ds = evaluate(p, bandwidth=1e12, nodes=[2, 8], reduce_table=zero, dtype="float64")
    np.testing.assert_allclose(ds.scaling_factor.values, 1.0, atol=1e-9)


def test_buckets_queue_behind_each_other():
    # All three gradients are ready at 1 ms; unfused buckets go out back to back.
    p = make_profile("q", ["a", "b", "c"], [1e6, 2e6, 3e6], [1e-3, 0.0, 0.0], 0.05)
    table = (np.array([0.0, 1e9]), np.array([0.0, 0.0]))
    ds = evaluate(p, bandwidth=8, nodes=1, gpus_per_node=2, collective="ps", fusion_buffer=0,
                  reduce_table=table, dtype="float64")
    total = (1e6 + 2e6 + 3e6) * 8 / 8e9  # ps: S * 8 / b each
    assert float(ds.exposed_comm.squeeze()) == pytest.approx(total, rel=1e-12)
    assert float(ds.iteration_time.squeeze()) == pytest.approx(0.05 + total, rel=1e-12)


def test_fusion_merges_until_timeout():
    # Waits 1,1,1,1 ms with a 2 ms timeout: buckets {0,1} ready at 2 ms, {2,3} at 4 ms.
    p = make_profile("f", list("abcd"), [1e6] * 4, [1e-3] * 4, 0.05)
    table = (np.array([0.0, 1e9]), np.array([0.0, 0.0]))
    ds = evaluate(p, bandwidth=4, nodes=1, gpus_per_node=2, collective="ps", fusion_timeout=2.0,
                  reduce_table=table, dtype="float64")
    d = 2e6 * 8 / 4e9  # 4 ms per 2 MB bucket
    end = max(4e-3, 2e-3 + d) + d
    assert float(ds.exposed_comm.squeeze()) == pytest.approx(end - 4e-3, rel=1e-12)
