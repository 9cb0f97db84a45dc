"""The JAX kernels against the float64 reference loop, random and hand-computed."""

import itertools

import jax
import numpy as np
import pytest

from conftest import random_profile
from helpers import TOLERANCE
from netsweep_jax.kernels import PAPER, Buckets, Config, Features, Workers, iteration
from netsweep_jax.sweep import evaluate
from netsweep_jax.sweep.core.schema import DEFAULT_VARIABLES as OUTPUTS
from netsweep_jax.sweep.model.profile import make_profile
from reference import simulate

# Times near 0 are compared against T1.
TOL = TOLERANCE["overlap"]
TABLE = (np.array([0.0, 1e4, 1e6, 1e8]), np.array([1e-5, 1.2e-5, 3e-5, 1.5e-3]))


def check_against_reference(profile, ds, dtype, table=TABLE, intra=1200.0, arch=0, fabric=None):
    tol = TOL[dtype]
    c = {d: ds[d].values for d in ds.dims}
    outputs = {name: ds[name].values for name in OUTPUTS}  # once: indexing a Dataset per point is slow
    for idx in itertools.product(*(range(len(v)) for v in c.values())):
        point = dict(zip(c, idx))
        v = {d: c[d][i] for d, i in point.items()}
        ref = simulate(
            profile.wait.tolist(),
            profile.grad_bytes.tolist(),
            profile.t1,
            bandwidth=v["bandwidth"] * 1e9,
            utilization=v["utilization"],
            ratio=v["ratio"],
            nodes=int(v["nodes"]),
            gpus=int(v["gpus_per_node"]),
            latency=v["latency"] * 1e-6,
            collective=str(v["collective"]),
            buffer_bytes=v["fusion_buffer"] * 2**20,
            timeout_s=v["fusion_timeout"] * 1e-3,
            table=table,
            intra_bw=intra * 1e9,
            nics=int(v["nics_per_node"]),
            overhead=v["overhead"] * 1e-3,
            slowdown=v["slowdown"],
            jitter=v["jitter"],
            accum=int(v["accum"]),
            bucketing=str(v["bucketing"]),
            arch=arch,
            fabric=fabric,
        )
        for name in OUTPUTS:
            got = float(outputs[name][idx])
            scale = max(abs(ref[name]), profile.t1)
            assert abs(got - ref[name]) <= tol * scale, (name, v, got, ref[name])


def check_random_sweep(seed, dtype, axes):
    """A random profile swept over ``axes(rng)``, in many padded blocks, against the reference."""
    rng = np.random.default_rng(seed)
    profile = random_profile(rng)
    ds = evaluate(
        profile, reduce_table=TABLE, dtype=dtype, block_configs=int(rng.integers(7, 200)), **axes(rng)
    )
    check_against_reference(profile, ds, dtype, intra=float(ds.attrs["intra_bandwidth_gbps"]))


def rounded(rng, low, high, digits=3):
    return float(np.round(rng.uniform(low, high), digits))


# Each random profile in one dtype, both dtypes across the seeds (each compile costs about a second).
@pytest.mark.parametrize("seed,dtype", [(0, "float32"), (1, "float64"), (2, "float32"), (5, "float64")])
def test_random_profiles_match_reference(dtype, seed):
    check_random_sweep(
        seed,
        dtype,
        lambda rng: dict(
            bandwidth=np.round(rng.uniform(0.5, 200, 3), 3),
            utilization=[rounded(rng, 0.05, 1), 1.0],
            ratio=[1.0, rounded(rng, 1, 300, 2)],
            nodes=[1, 2, int(rng.integers(3, 17))],
            gpus_per_node=[1, int(rng.integers(2, 9))],
            latency=[0.0, rounded(rng, 0, 50, 2)],
            collective=["ring", "tree", "ps", "hierarchical"],
            fusion_buffer=[0.0, 4.0, 64.0],
            fusion_timeout=[0.0, 1.0, 5.0],
            intra_bandwidth=rounded(rng, 100, 2000, 0),
        ),
    )


@pytest.mark.parametrize("seed,dtype", [(3, "float32"), (4, "float64")])
def test_non_network_terms_and_pipelined_collectives_match_reference(dtype, seed):
    check_random_sweep(
        seed,
        dtype,
        lambda rng: dict(
            bandwidth=np.round(rng.uniform(0.5, 200, 2), 3),
            ratio=rounded(rng, 1, 30, 2),
            nodes=[1, int(rng.integers(2, 9))],
            gpus_per_node=[1, int(rng.integers(2, 9))],
            nics_per_node=[1, 2],
            latency=rounded(rng, 0, 50, 2),
            collective=["ring", "tree", "ps", "hierarchical", "nccl-ring", "nccl-tree"],
            overhead=[0.0, rounded(rng, 0, 20)],
            slowdown=[0.0, rounded(rng, 0, 0.2)],
            jitter=[0.0, rounded(rng, 0, 0.2)],
            accum=[1, int(rng.integers(2, 9))],
            bucketing=["horovod", "ddp"],
        ),
    )


@pytest.mark.parametrize(
    "n,expected", [(2, 0.56419), (3, 0.84628), (5, 1.16296), (10, 1.53875), (100, 2.50759), (1000, 3.24144)]
)
def test_expected_maximum_of_normals(n, expected):
    # Published values (e.g. Harter, "Expected values of normal order statistics", Biometrika 1961);
    # N = 2 and 3 are 1/sqrt(pi) and 3/(2 sqrt(pi)) in closed form.
    from netsweep_jax.sweep.model.collectives import expected_max_normal
    from reference import expected_max_normal as slow

    assert expected_max_normal([n])[0] == pytest.approx(expected, abs=1e-5)  # tables give 5 decimals
    assert slow(n) == pytest.approx(expected, abs=1e-5)
    if n <= 3:
        closed = {2: 1.0, 3: 1.5}[n] / np.sqrt(np.pi)
        assert expected_max_normal([n])[0] == pytest.approx(closed, rel=1e-9)


def test_expected_maximum_up_to_a_billion_workers():
    from netsweep_jax.sweep.model.collectives import expected_max_normal
    from reference import expected_max_normal as slow

    for n in (10**5, 10**9):
        assert expected_max_normal([n])[0] == pytest.approx(slow(n), rel=1e-6)


def one_tensor(wait=2e-3, nbytes=1e6, t1=0.1):
    return make_profile("one", ["w"], [nbytes], [wait], t1)


def test_one_tensor_by_hand():
    # ring over N = 2: 2(N-1)/N * S * 8 / b + (N-1) reduce(S/2) + 2(N-1) a
    p = one_tensor()
    table = (np.array([0.0, 1e9]), np.array([7e-6, 7e-6]))  # constant 7 us add
    ds = evaluate(p, bandwidth=10, nodes=2, gpus_per_node=1, latency=3.0, reduce_table=table, dtype="float64")
    dur = 1e6 * 8 / 10e9 + 7e-6 + 2 * 3e-6
    assert float(ds.comm_time.squeeze()) == pytest.approx(dur, rel=1e-12)
    assert float(ds.exposed_comm.squeeze()) == pytest.approx(dur, rel=1e-12)
    assert float(ds.scaling_factor.squeeze()) == pytest.approx(0.1 / (0.1 + dur), rel=1e-12)


def test_single_worker_scales_perfectly():
    p = random_profile(np.random.default_rng(5))
    ds = evaluate(
        p, bandwidth=[0.001, 1], nodes=1, gpus_per_node=1, collective=["ring", "tree", "ps", "hierarchical"]
    )
    assert np.all(ds.scaling_factor.values == 1.0)
    assert np.all(ds.comm_time.values == 0.0)


def test_infinite_bandwidth_scales_perfectly():
    p = random_profile(np.random.default_rng(6))
    zero = (np.array([0.0, 1e9]), np.array([0.0, 0.0]))
    ds = evaluate(p, bandwidth=1e6, nodes=[2, 8], reduce_table=zero, dtype="float64")  # the largest allowed
    # only the last bucket's transfer, ~10 us at 10^6 Gbit/s, is left exposed
    assert np.all(ds.scaling_factor.values > 1 - 1e-4) and np.all(ds.scaling_factor.values < 1)


def test_buckets_queue_behind_each_other():
    # All three gradients are ready at 1 ms; unfused buckets go out back to back.
    p = make_profile("q", ["a", "b", "c"], [1e6, 2e6, 3e6], [1e-3, 0.0, 0.0], 0.05)
    table = (np.array([0.0, 1e9]), np.array([0.0, 0.0]))
    ds = evaluate(
        p,
        bandwidth=8,
        nodes=1,
        gpus_per_node=2,
        collective="ps",
        fusion_buffer=0,
        reduce_table=table,
        dtype="float64",
    )
    total = (1e6 + 2e6 + 3e6) * 8 / 8e9  # ps: S * 8 / b each
    assert float(ds.exposed_comm.squeeze()) == pytest.approx(total, rel=1e-12)
    assert float(ds.iteration_time.squeeze()) == pytest.approx(0.05 + total, rel=1e-12)


def test_fusion_merges_until_timeout():
    # Waits 1,1,1,1 ms with a 2 ms timeout: buckets {0,1} ready at 2 ms, {2,3} at 4 ms.
    p = make_profile("f", list("abcd"), [1e6] * 4, [1e-3] * 4, 0.05)
    table = (np.array([0.0, 1e9]), np.array([0.0, 0.0]))
    ds = evaluate(
        p,
        bandwidth=4,
        nodes=1,
        gpus_per_node=2,
        collective="ps",
        fusion_timeout=2.0,
        reduce_table=table,
        dtype="float64",
    )
    d = 2e6 * 8 / 4e9  # 4 ms per 2 MB bucket
    end = max(4e-3, 2e-3 + d) + d
    assert float(ds.exposed_comm.squeeze()) == pytest.approx(end - 4e-3, rel=1e-12)


# Closed forms of the recurrence itself, on kernels.iteration (no grid, no fusion).
def one_config(
    bandwidth=8e9, utilization=1.0, ratio=1.0, latency=0.0, overhead=0.0, slowdown=0.0, jitter=0.0, accum=1.0
):
    return Config(
        *(np.float64(v) for v in (bandwidth, utilization, ratio, latency, overhead, slowdown, jitter, accum))
    )


def layout(transfer=0.0, wire=8.0, messages=0.0, reduce=(0.0,), straggle=0.0, multi=1.0, piped=0.0):
    return Workers(
        *(np.float64(v) for v in (transfer, wire, messages, straggle, multi, piped)),
        np.asarray(reduce, np.float64),
    )


def buckets(ready, nbytes, valid=None):
    valid = np.ones(len(ready)) if valid is None else valid
    return Buckets(*(np.asarray(a, np.float64) for a in (ready, nbytes, valid)))


def kernel(*args, softness=None, features=PAPER):
    with jax.enable_x64(True):
        return {k: float(v) for k, v in iteration(*args, softness, features).items()}


def test_one_bucket_closed_form():
    # duration = (A + B / (b u)) S / r + L a + F, exposed = duration, sf = T1 / (T1 + duration)
    cfg = one_config(bandwidth=10e9, utilization=0.5, ratio=4.0, latency=2e-6)
    lay = layout(transfer=1e-12, wire=14.0, messages=6.0, reduce=[3e-5])
    out = kernel(cfg, lay, buckets([0.01], [8e6]), 0.1)
    duration = (1e-12 + 14.0 / 5e9) * 8e6 / 4.0 + 6.0 * 2e-6 + 3e-5
    assert out["exposed_comm"] == pytest.approx(duration, rel=1e-14)
    assert out["comm_time"] == pytest.approx(duration, rel=1e-14)
    assert out["iteration_time"] == pytest.approx(0.1 + duration, rel=1e-14)
    assert out["scaling_factor"] == pytest.approx(0.1 / (0.1 + duration), rel=1e-14)


@pytest.mark.parametrize("second_ready", [0.0015, 0.05])
def test_two_buckets_queue_or_not(second_ready):
    # 1 MB at 8 Gbit/s (wire 8): 1 ms each. The first is ready at 1 ms and ends at 2 ms;
    # the second waits for it (ready 1.5 ms) or starts when ready (50 ms).
    out = kernel(one_config(), layout(reduce=[0.0, 0.0]), buckets([1e-3, second_ready], [1e6, 1e6]), 0.2)
    end = max(second_ready, 2e-3) + 1e-3
    assert out["exposed_comm"] == pytest.approx(end - second_ready, rel=1e-12)
    assert out["comm_time"] == pytest.approx(2e-3, rel=1e-12)


def test_single_worker_layout_costs_nothing():
    # N = 1: every coefficient is 0 (sweep.collectives), so nothing is exposed.
    out = kernel(
        one_config(bandwidth=1.0),
        layout(wire=0.0, reduce=[0.0, 0.0], multi=0.0),
        buckets([1e-3, 2e-3], [1e9, 1e9]),
        0.3,
    )
    assert out == {
        "scaling_factor": 1.0,
        "iteration_time": 0.3,
        "exposed_comm": 0.0,
        "comm_time": 0.0,
        "time_to_accuracy": 1.0,
    }


def test_non_network_terms_closed_form():
    # k = (1 + slowdown)(1 + jitter e_N); ready at k * 10 ms, 1 ms of transfer after it;
    # iteration = k T1 + exposed + overhead.
    cfg = one_config(overhead=4e-3, slowdown=0.1, jitter=0.05)
    out = kernel(cfg, layout(straggle=1.5), buckets([0.01], [1e6]), 0.1, features=Features(compute=True))
    k = 1.1 * (1 + 0.05 * 1.5)
    assert out["exposed_comm"] == pytest.approx(1e-3, rel=1e-12)
    assert out["iteration_time"] == pytest.approx(k * 0.1 + 1e-3 + 4e-3, rel=1e-12)
    assert out["scaling_factor"] == pytest.approx(0.1 / (k * 0.1 + 5e-3), rel=1e-12)
    single = kernel(
        cfg,
        layout(straggle=0.0, multi=0.0, wire=0.0),
        buckets([0.01], [1e6]),
        0.1,
        features=Features(compute=True),
    )
    assert single["scaling_factor"] == 1.0  # one worker pays none of it


def test_pipelined_bucket_takes_its_slowest_stage():
    # network 8 Mbit / 8 Gbit/s = 1 ms, intra 1e6 B x 2e-10 s/B = 0.2 ms, reduce 0.5 ms: max is 1 ms,
    # then 3 messages x 10 us; the paper's form would add them all.
    lay = layout(transfer=2e-10, wire=8.0, messages=3.0, reduce=[5e-4], piped=1.0)
    cfg = one_config(latency=1e-5)
    piped = kernel(cfg, lay, buckets([0.0], [1e6]), 0.1, features=Features(piped=True))
    assert piped["comm_time"] == pytest.approx(1e-3 + 3e-5, rel=1e-12)
    summed = kernel(
        cfg, lay._replace(piped=np.float64(0.0)), buckets([0.0], [1e6]), 0.1, features=Features(piped=True)
    )
    assert summed["comm_time"] == pytest.approx(1e-3 + 2e-4 + 5e-4 + 3e-5, rel=1e-12)


def test_padding_changes_nothing_exact_or_smooth():
    args = (one_config(), layout(reduce=[1e-5, 2e-5]), buckets([1e-3, 1.5e-3], [1e6, 3e6]), 0.2)
    padded = (
        args[0],
        layout(reduce=[1e-5, 2e-5, 0, 0]),
        buckets([1e-3, 1.5e-3, 0, 0], [1e6, 3e6, 0, 0], [1, 1, 0, 0]),
        0.2,
    )
    for softness in (None, 1e-5):
        assert kernel(*padded, softness=softness) == pytest.approx(
            kernel(*args, softness=softness), rel=1e-14
        )


def test_smooth_max_bounds_the_exact_recurrence():
    # Each smoothed max is >= the max and exceeds it by at most s log 2: 3 of them here.
    args = (one_config(), layout(reduce=[0.0, 0.0]), buckets([1e-3, 2e-3], [1e6, 1e6]), 0.2)
    s = 1e-4
    exact, smooth = kernel(*args)["exposed_comm"], kernel(*args, softness=s)["exposed_comm"]
    assert exact <= smooth <= exact + 3 * s * np.log(2)


def test_gradient_accumulation_closed_form():
    # K micro-batches: K T1 of compute, one all-reduce overlapping the last backward.
    out = kernel(one_config(accum=4.0), layout(), buckets([0.01], [1e6]), 0.1)
    assert out["iteration_time"] == pytest.approx(0.4 + 1e-3, rel=1e-12)
    assert out["scaling_factor"] == pytest.approx(0.4 / 0.401, rel=1e-12)


def test_nccl_like_collectives_drive_every_nic_of_the_host():
    # #40: two AWS p5 hosts (8 H100, 32 x 100 Gbit/s EFA) reach 487 GB/s busbw (nccl_tests.csv AWSDT-P5-2x8-32),
    # four times what 8 NICs carry: NCCL's channels use every NIC. By hand, 2 nodes x 8 GPUs, ring: the NICs
    # carry 2(N-1)/N x 8 bits per byte of bucket over P NICs, B = 2 x 15/16 x 8 / P.
    from netsweep_jax.sweep.model.collectives import coefficients
    from netsweep_jax.sweep.model.vector_add import default_table

    def wire(collective, nics):
        return coefficients(collective, [2], [8], [1e6], default_table(), 1e12, nics_per_node=[nics]).wire[0]

    assert wire("nccl-ring", 16) == pytest.approx(2 * 15 / 16 * 8 / 16, rel=1e-12)
    assert wire("nccl-ring", 32) == pytest.approx(wire("nccl-ring", 8) / 4, rel=1e-12)
    assert wire("nccl-tree", 16) == pytest.approx(2 * 8 / 16, rel=1e-12)
    # hierarchical: one shard a GPU, each on one link, so NICs beyond the GPUs stay idle
    assert wire("hierarchical", 16) == wire("hierarchical", 8) == pytest.approx(2 * 1 / 2 * 8 / 8, rel=1e-12)
