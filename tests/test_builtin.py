"""Built-in profiles: exact tensor structure, and agreement with the measured logs."""

import itertools

import numpy as np
import pytest

from conftest import MEASURED_T1
from netsweep_jax.sweep import builtin_profile
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.model.profile import read_bklog
from netsweep_jax.sweep.model.vector_add import read_table
from reference import simulate

EXPECTED = {"resnet50": (161, 102_228_128), "resnet101": (314, 178_196_640), "vgg16": (58, 553_463_968)}


@pytest.mark.parametrize("name", EXPECTED)
def test_tensor_counts_and_bytes(name):
    p = builtin_profile(name)
    count, total = EXPECTED[name]
    assert len(p.names) == count
    assert p.total_bytes == total
    assert p.t1 == MEASURED_T1[name]
    assert np.all(p.wait >= 0)


def test_backward_order_starts_at_the_classifier():
    p = builtin_profile("resnet50")
    assert p.names[:5] == (
        "fc.bias",
        "fc.weight",
        "layer4.2.bn3.bias",
        "layer4.2.bn3.weight",
        "layer4.2.conv3.weight",
    )
    assert p.names[-1] == "conv1.weight"


def test_unknown_model_lists_known():
    with pytest.raises(InputError, match="name .alexnet.: unknown; known: resnet50, resnet101, vgg16"):
        builtin_profile("alexnet")
    # A transformer or a large model is known, to evaluate or to the other family (a hunt: "unknown", and for a
    # large model "this takes ... gpt2", which builtin_profile does not), named by the function's keyword.
    with pytest.raises(InputError, match=r"^name 'gpt2': a transformer, whose profile sweep.evaluate builds"):
        builtin_profile("gpt2")
    with pytest.raises(
        InputError, match=r"^name 'llama3-8b': a large model.* CNN profiles: resnet50, resnet101"
    ):
        builtin_profile("llama3-8b")


def test_a_large_model_in_the_data_parallel_api_points_to_its_functions():
    # Was "unknown; known: resnet50, ...": the name is known, to the other family (and in the layout API, the
    # CLI's --arch is the arch keyword).
    from netsweep_jax import sweep

    for named in ("llama3-8b", ["Llama3-8B"]):
        with pytest.raises(
            InputError, match=r"a large model, which sweep.evaluate_layouts and sweep.plan price"
        ):
            sweep.evaluate(named, bandwidth=10)
    with pytest.raises(InputError, match=r"is not a large-model preset; .* \(or use arch\)$"):
        sweep.plan("resnet50", gpus=8, global_batch=8)
    with pytest.raises(
        InputError, match=r"^model '\{x\}' is not a large-model preset"
    ):  # braces: not a format
        sweep.plan("{x}", gpus=8, global_batch=8)


@pytest.mark.parametrize("name", EXPECTED)
def test_matches_measured_log(paper_data, name):
    measured = read_bklog(paper_data / f"{name}.bk.log", MEASURED_T1[name])
    ours = builtin_profile(name)
    # Same tensors in the same backward order, same sizes.
    np.testing.assert_array_equal(ours.grad_bytes, measured.grad_bytes)
    assert ours.backward_time == pytest.approx(measured.backward_time, rel=1e-3)
    table = read_table(paper_data / "cuda_vec_add.log")
    worst = 0.0
    for bw, nodes, ratio in itertools.product((1, 10, 25, 40, 100), (2, 4, 8), (1, 2, 5, 10, 50, 100)):
        kw = dict(bandwidth=bw * 1e9, nodes=nodes, gpus=8, ratio=ratio, table=table)
        a = simulate(ours.wait, ours.grad_bytes, ours.t1, **kw)["scaling_factor"]
        b = simulate(measured.wait, measured.grad_bytes, measured.t1, **kw)["scaling_factor"]
        worst = max(worst, abs(a - b))
    assert worst <= 0.02


def test_paper_example_checks(paper_data):
    # The worked example: measured ResNet-50 log, 8x8 GPUs, ring, vec-add table.
    from netsweep_jax.sweep import evaluate

    p = read_bklog(paper_data / "resnet50.bk.log", MEASURED_T1["resnet50"])
    ds = evaluate(p, bandwidth=[10, 100], reduce_table=read_table(paper_data / "cuda_vec_add.log"))
    sf = ds.scaling_factor.squeeze().values
    assert round(float(sf[0]), 3) == 0.540
    assert round(float(sf[1]), 3) == 0.995


def test_an_add_past_the_reduce_tables_last_row_follows_its_last_slope():
    # A hunt: the table was clamped at its last row (1 GiB for the default), so one 8 GiB tensor reduced as fast as
    # a 1 GiB one, eight times faster than eight 1 GiB tensors. Past the last row the add follows the last
    # segment's slope (never falling); below the first it stays the launch's cost; the float64 twin agrees.
    import reference
    from netsweep_jax.sweep.model.collectives import reduce_time

    table = (np.array([8.0, 1024.0, 2.0**30]), np.array([1e-5, 2e-5, 2e-3]))
    slope = (2e-3 - 2e-5) / (2.0**30 - 1024.0)
    sizes = np.array([1.0, 8.0, 512.0, 2.0**30, 2.0**33])
    want = [1e-5, 1e-5, 1e-5 + 1e-5 * 504 / 1016, 2e-3, 2e-3 + 7 * 2.0**30 * slope]
    np.testing.assert_allclose(reduce_time(sizes, table), want, rtol=1e-12)
    assert [reference.interp(s, *table) for s in sizes] == pytest.approx(want, rel=1e-12)
    assert reduce_time(2.0**33, table) == pytest.approx(8 * reduce_time(2.0**30, table), rel=0.01)
    falling = (np.array([8.0, 16.0]), np.array([2e-5, 1e-5]))
    assert float(reduce_time(64.0, falling)) == 1e-5  # a falling last segment: held, never below
