"""sweep calibrate: recovers a known utilization; bad measurement files are refused."""

import json
import re

import numpy as np
import pytest

from conftest import random_profile
from helpers import invoke
from netsweep_jax.sweep import builtin_profile, evaluate
from netsweep_jax.sweep.analysis.calibrate import calibrate
from netsweep_jax.sweep.analysis.calibration_fit import STARTS
from netsweep_jax.sweep.analysis.calibration_report import t975
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.io.measurements import read_measurements


def synthetic_csv(path, profile, u_true, noise, seed=0, latency=0.0):
    ds = evaluate(
        profile,
        bandwidth=[5, 10, 25, 40],
        nodes=[2, 4, 8],
        utilization=u_true,
        latency=latency,
        dtype="float64",
    )
    rng = np.random.default_rng(seed)
    rows = ["nodes,gpus_per_node,bandwidth,scaling_factor"]
    for n in (2, 4, 8):
        for bw in (5, 10, 25, 40):
            v = float(ds.scaling_factor.sel(nodes=n, bandwidth=bw).squeeze()) + rng.normal(0, noise)
            rows.append(f"{n},8,{bw},{min(v, 1.0):.6f}")
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.mark.parametrize("model", ["resnet50", "vgg16", "random"])
@pytest.mark.parametrize("noise", [0.0, 0.01])
def test_recovers_known_utilization(tmp_path, model, noise):
    p = builtin_profile(model) if model != "random" else random_profile(np.random.default_rng(3), 40)
    u_true = {"resnet50": 0.37, "vgg16": 0.6, "random": 0.25}[model]
    meas = read_measurements(synthetic_csv(tmp_path / "m.csv", p, u_true, noise))
    result = calibrate(meas, [p], p.model)
    assert abs(result["utilization"] - u_true) <= 0.01
    assert result["rmse"] <= 2 * noise + 1e-6


def test_fits_latency_too(tmp_path):
    p = builtin_profile("resnet50")
    meas = read_measurements(synthetic_csv(tmp_path / "m.csv", p, 0.5, 0.0, latency=5.0))
    result = calibrate(meas, [p], "resnet50", ("utilization", "latency"))
    assert abs(result["utilization"] - 0.5) <= 0.01
    assert result["rmse"] < 1e-3


def test_cli_walkthrough_example(tmp_path):
    out = tmp_path / "fit.json"
    r = invoke("calibrate", "examples/resnet50_measured.csv", "--out", str(out))
    assert r.exit_code == 0, r.output
    data = json.loads(out.read_text())
    assert 0.1 < data["utilization"] < 0.3
    assert data["rows"][0]["effective_bandwidth_gbps"] == pytest.approx(100 * data["utilization"])
    assert abs(data["rows"][0]["predicted"] - 0.75) < 1e-4
    assert "utilization:" in r.output and "rmse" in r.output


@pytest.mark.parametrize(
    "text,message",
    [
        ("nodes,gpus_per_node,scaling_factor\n8,8,0.7\n", "m.csv:1: missing column(s) bandwidth"),
        # a hunt: T1 and Model were labels, and the runs fitted without them in silence
        (
            "nodes,gpus_per_node,bandwidth,T1,scaling_factor\n8,8,100,0.1,0.7\n",
            "m.csv:1: column 'T1' is t1 in another case; name it t1",
        ),
        ("Model,nodes,gpus_per_node,bandwidth,scaling_factor\nx,8,8,100,0.7\n", "column 'Model' is model in"),
        # a hunt: a unit after a column's name made it a label, the run priced at the profile's T1 in silence
        (
            "nodes,gpus_per_node,bandwidth,t1_s,scaling_factor\n8,8,100,0.25,0.7\n",
            "m.csv:1: column 't1_s' is a label, not t1, which is not given (the run would be priced without it): "
            "name it t1, in seconds, or give t1 beside it",
        ),
        (
            "nodes,gpus_per_node,bandwidth [Gbit/s],scaling_factor\n8,8,100,0.7\n",
            "column 'bandwidth [Gbit/s]' is a label, not bandwidth, which is not given (the run would be priced "
            "without it): name it bandwidth, in Gbit/s,",
        ),
        (
            "nodes,gpus_per_node,bandwidth,Latency (us),scaling_factor\n8,8,100,3,0.7\n",
            "name it latency, in micro",
        ),
        ("nodes,gpus_per_node,bandwidth\n8,8,100\n", "exactly one of scaling_factor, iteration_time"),
        (  # one too many, said so (it read "missing column(s)": a hunt)
            "nodes,gpus_per_node,bandwidth,scaling_factor,iteration_time\n8,8,100,0.5,0.2\n",
            "m.csv:1: both scaling_factor and iteration_time given; give exactly one of them",
        ),
        (
            "nodes,gpus_per_node,bandwidth,scaling_factor\n8,8,100,x\n",
            "m.csv:2: scaling_factor 'x' is not a number",
        ),
        (
            "nodes,gpus_per_node,bandwidth,scaling_factor\n8,8,100,0.5\n8,8,100,1.5\n",
            "m.csv:3: scaling_factor 1.5 must be in (0, 1]",
        ),
        (
            "nodes,gpus_per_node,bandwidth,scaling_factor\n8,8,100,0\n",
            "m.csv:2: scaling_factor 0 must be in (0, 1]",
        ),
        ("nodes,gpus_per_node,bandwidth,scaling_factor\n", "m.csv: no measurement rows"),
        ("nodes,gpus_per_node,bandwidth,scaling_factor\n8,8,100\n", "m.csv:2: expected 4 cells, got 3"),
        ("nodes,gpus_per_node,bandwidth,scaling_factor\n0,8,100,0.5\n", "m.csv:2: nodes 0"),
        (
            "nodes,gpus_per_node,bandwidth,iteration_time\n8,8,100,-1\n",
            "m.csv:2: iteration_time -1 must be a number of seconds in [1e-6, 1e4]",
        ),
        # a hunt: the column a duplicate names unsaid; a gpus label --per read as written and --train as the product
        (
            "model,nodes,nodes,gpus_per_node,bandwidth,scaling_factor\nresnet50,8,8,8,100,0.7\n",
            "m.csv:1: column 'nodes' appears twice; each column once",
        ),
        (
            "nodes,gpus_per_node,bandwidth,scaling_factor,gpus\n2,8,25,0.9,16\n4,8,25,0.86,99\n",
            "m.csv:3: gpus '99' is not nodes x gpus_per_node (32), which --train reads as gpus",
        ),
    ],
)
def test_bad_measurements(tmp_path, text, message):
    path = tmp_path / "m.csv"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        read_measurements(path)
    assert message in str(err.value)
    r = invoke("calibrate", str(path))
    assert r.exit_code == 2 and message in r.output and len(r.output.strip().splitlines()) == 1


def test_iteration_times_and_a_model_column(tmp_path):
    # Rows from two models in one file, measured as iteration times, with a fixed ratio column.
    u_true = 0.45
    rows = ["model,nodes,gpus_per_node,bandwidth,ratio,iteration_time"]
    for model in ("resnet50", "vgg16"):
        ds = evaluate(model, bandwidth=[10, 25], nodes=[2, 8], ratio=2, utilization=u_true, dtype="float64")
        for n in (2, 8):
            for bw in (10, 25):
                t = float(ds.iteration_time.sel(nodes=n, bandwidth=bw).squeeze())
                rows.append(f"{model},{n},8,{bw},2,{t:.9f}")
    path = tmp_path / "m.csv"
    path.write_text("\n".join(rows) + "\n")
    r = invoke("calibrate", str(path), "--out", str(tmp_path / "fit.json"))
    assert r.exit_code == 0, r.output
    data = json.loads((tmp_path / "fit.json").read_text())
    assert abs(data["utilization"] - u_true) <= 0.01
    assert {row["model"] for row in data["rows"]} == {"resnet50", "vgg16"}
    assert data["measured"] == "iteration_time" and data["rmse"] < 1e-6


def synthetic_runs(path, truth, nodes=(1, 2, 4, 8, 16), frameworks=("a", "b"), noise=0.0, seed=0):
    """Runs made by the exact model (nccl-ring, 8 GPUs per node, 1 NIC), one truth per framework."""
    rng = np.random.default_rng(seed)
    rows = ["framework,nodes,gpus_per_node,bandwidth,collective,scaling_factor"]
    for fw in frameworks:
        ds = evaluate(
            "resnet50", bandwidth=100, nodes=list(nodes), collective="nccl-ring", dtype="float64", **truth[fw]
        )
        for n in nodes:
            v = float(ds.scaling_factor.sel(nodes=n).squeeze()) + rng.normal(0, noise)
            rows.append(f"{fw},{n},8,100,nccl-ring,{min(v, 1.0):.8f}")
    path.write_text("\n".join(rows) + "\n")
    return path


def test_per_group_parameters_and_held_out_prediction(tmp_path, monkeypatch):
    # Shared utilization, one jitter per framework; fit on up to 4 nodes, predict 8 and 16.
    import netsweep_jax.sweep.analysis.calibrate as calibrate_module

    truth = {"a": dict(utilization=0.3, jitter=0.03), "b": dict(utilization=0.3, jitter=0.08)}
    path = synthetic_runs(tmp_path / "m.csv", truth)
    fits, fit_rows = [], calibrate_module.fit_rows

    def kept(starts, *args, **kwargs):
        best, loss = fit_rows(starts, *args, **kwargs)
        fits.append((np.asarray(starts), np.asarray(best)))
        return best, loss

    monkeypatch.setattr(calibrate_module, "fit_rows", kept)
    r = invoke(
        "calibrate",
        str(path),
        "--fit",
        "utilization,jitter",
        "--per",
        "jitter=framework",
        "--train",
        "nodes <= 4",
        "--out",
        str(tmp_path / "fit.json"),
    )
    assert r.exit_code == 0, r.output
    data = json.loads((tmp_path / "fit.json").read_text())
    got = {(p["name"], p["group"]): p["value"] for p in data["fitted"]}
    assert got[("utilization", None)] == pytest.approx(0.3, abs=0.01)
    assert got[("jitter", "a")] == pytest.approx(0.03, abs=0.002)
    assert got[("jitter", "b")] == pytest.approx(0.08, abs=0.002)
    assert data["heldout_rmse"] < 1e-3 and "held-out rmse" in r.output
    assert sum(not row["train"] for row in data["rows"]) == 4
    # Three parameters compiled as four (calibration_fit.padded_parameters): the fourth, which no row uses, starts
    # at 0 and stays there, and the three fitted ones have their standard errors.
    ((starts, best),) = fits
    assert starts.shape[1] == 4 and best.shape == (4,) and np.all(starts[:, 3] == 0) and best[3] == 0
    assert all(np.isfinite(p["stderr"]) and p["stderr"] > 0 for p in data["fitted"])


def test_standard_errors_cover_the_truth(tmp_path):
    truth = {"a": dict(utilization=0.4, overhead=3.0)}
    path = synthetic_runs(
        tmp_path / "m.csv", truth, nodes=(1, 2, 3, 4, 6, 8, 12, 16), frameworks=("a",), noise=0.003, seed=2
    )
    meas = read_measurements(path)
    from netsweep_jax.sweep.analysis.calibrate import calibrate
    from netsweep_jax.sweep.analysis.calibration_rows import Settings

    result = calibrate(
        meas,
        [builtin_profile("resnet50")],
        "resnet50",
        ("utilization", "overhead"),
        settings=Settings(collective="nccl-ring"),
    )
    for p in result["fitted"]:
        true = truth["a"][p["name"]]
        assert np.isfinite(p["stderr"]) and p["stderr"] > 0
        assert abs(p["value"] - true) <= 4 * p["stderr"], p


def test_bounds_hold_the_fit(tmp_path):
    truth = {"a": dict(utilization=0.4, overhead=3.0)}
    path = synthetic_runs(tmp_path / "m.csv", truth, frameworks=("a",))
    r = invoke(
        "calibrate",
        str(path),
        "--fit",
        "utilization,overhead,latency",
        "--bounds",
        "overhead=0:1",
        "--out",
        str(tmp_path / "fit.json"),
    )
    assert r.exit_code == 0, r.output
    fitted = {p["name"]: p for p in json.loads((tmp_path / "fit.json").read_text())["fitted"]}
    assert 0 <= fitted["overhead"]["value"] <= 1
    # Written in the units given: latency's default 1 ms in us is 1000, not 1000.0000000000001.
    assert fitted["latency"]["bounds"] == [0.0, 1000.0]


@pytest.mark.parametrize(
    "args,message",
    [
        (["--train", "cores <= 4"], "--train 'cores <= 4': no column 'cores'"),
        (["--train", "nodes > 100"], "selects no row"),
        (["--train", "nodes >= 1"], "selects every measured row, leaving none held out to score"),
        (["--train", "__import__('os')"], "only columns, numbers"),
        (["--fit", "jitter", "--per", "jitter=team"], "--per jitter=team: no column 'team'"),
        (["--fit", "jitter", "--per", "overhead=framework"], "overhead is not fitted"),
        (["--fit", "jitter", "--bounds", "jitter=2:1"], "--bounds jitter=2:1"),
        (["--fit", "jitter", "--bounds", "jitter"], "expected NAME=VALUE"),
    ],
)
def test_calibrate_bad_options(tmp_path, args, message):
    path = synthetic_runs(tmp_path / "m.csv", {"a": {}, "b": {}})
    r = invoke("calibrate", str(path), *args)
    assert r.exit_code == 2 and message in r.output, r.output
    assert len(r.output.strip().splitlines()) == 1


def test_a_train_of_every_measured_row_says_the_blank_rows_are_predicted_without_it(tmp_path):
    # A hunt: "selects every row, leaving none to predict" beside two rows without a measured value to predict.
    from netsweep_jax.sweep.io.measurements import select

    path = tmp_path / "m.csv"
    path.write_text("nodes,gpus_per_node,bandwidth,scaling_factor\n2,8,25,0.9\n4,8,25,0.8\n8,8,25,\n")
    meas = read_measurements(path)
    with pytest.raises(
        InputError, match="none held out to score; rows without a measured value are predicted"
    ):
        select(meas, "nodes <= 4", rows=[True, True, False])


def test_model_column_naming_profiles(tmp_path):
    profile = builtin_profile("vgg16")
    (tmp_path / "mine.json").write_text(json.dumps({**profile.to_json(), "model": "mine"}))
    ds = evaluate(profile, bandwidth=[10, 25], nodes=[2, 4], utilization=0.5, dtype="float64")
    rows = ["model,nodes,gpus_per_node,bandwidth,scaling_factor"]
    rows += [
        f"mine.json,{n},8,{b},{float(ds.scaling_factor.sel(nodes=n, bandwidth=b).squeeze()):.9f}"
        for n in (2, 4)
        for b in (10, 25)
    ]
    (tmp_path / "m.csv").write_text("\n".join(rows) + "\n")
    r = invoke("calibrate", str(tmp_path / "m.csv"))
    assert r.exit_code == 0 and "utilization: 0.5" in r.output, r.output
    (tmp_path / "m.csv").write_text(
        "model,nodes,gpus_per_node,bandwidth,scaling_factor\nmissing.json,2,8,10,0.5\n"
    )
    r = invoke("calibrate", str(tmp_path / "m.csv"))
    assert r.exit_code == 2 and "model 'missing.json' is neither" in r.output


def test_padding_rows_and_buckets_changes_no_prediction(tmp_path):
    # Fits pad rows (weight 0) and buckets (empty) so similar fits share a compile; the real rows must not move.
    from netsweep_jax.kernels.fit import FitSpec
    from netsweep_jax.sweep.analysis.calibration_fit import ROW_QUANTUM, padded_rows
    from netsweep_jax.sweep.analysis.calibration_rows import Settings, build_rows
    from netsweep_jax.sweep.engine.compiled import predict_rows
    from netsweep_jax.sweep.engine.dispatch import precision

    path = synthetic_runs(tmp_path / "m.csv", {"a": dict(utilization=0.3, jitter=0.05)}, frameworks=("a",))
    meas = read_measurements(path)
    rows, _, features = build_rows(
        meas, [builtin_profile("resnet50")], "resnet50", Settings(collective="nccl-ring")
    )
    rows = rows._replace(index=np.zeros((len(meas), 0), np.int32))
    target = np.array(meas.columns["scaling_factor"])
    padded, padded_target, weights = padded_rows(rows, target, np.ones(len(meas)))
    n = len(meas)
    assert len(padded_target) % ROW_QUANTUM == 0 and len(padded_target) > n
    buckets = padded.buckets.nbytes.shape[1]  # a power of two, at least 32
    assert buckets >= 32 and buckets & (buckets - 1) == 0 and buckets > rows.buckets.nbytes.shape[1]
    assert np.all(weights[n:] == 0) and np.all(weights[:n] == 1)
    spec = FitSpec((), (), ())
    with precision("float64"):
        plain = np.asarray(predict_rows(np.zeros(0), rows, spec=spec, features=features)["scaling_factor"])
        more = np.asarray(predict_rows(np.zeros(0), padded, spec=spec, features=features)["scaling_factor"])
    np.testing.assert_array_equal(more[:n], plain)


def test_narrowed_bounds_start_every_group_inside_them(tmp_path):
    # Starts outside --bounds were clipped to the edge, where the logistic is flat: vgg16's group stayed at the
    # upper bound, 0.9 (predicting 0.9999 against 0.80 and 0.75), where 0.232 fits inside the bounds.
    path = tmp_path / "m.csv"
    path.write_text(
        "model,nodes,gpus_per_node,bandwidth,scaling_factor,collective,bucketing,nics_per_node,fusion_buffer\n"
        "resnet50,2,8,25,0.85,ring,horovod,1,64\nresnet50,4,8,25,0.80,tree,ddp,1,64\n"
        "vgg16,2,8,100,0.80,nccl-ring,horovod,2,32\nvgg16,4,8,100,0.75,hierarchical,horovod,2,0\n"
    )
    # The upper bound sits on one of the starts (np.geomspace(1e-3, 0.999, 12)[10]) and the larger ones lie past
    # it: both kinds began at the edge.
    bound = float(STARTS["utilization"][10])
    out = tmp_path / "fit.json"
    args = ["--per", "utilization=model", "--bounds", f"utilization=0.001:{bound!r}", "--out", str(out)]
    r = invoke("calibrate", str(path), *args)
    assert r.exit_code == 0, r.output
    fit = {p["group"]: p["value"] for p in json.loads(out.read_text())["fitted"]}
    # Without bounds: resnet50 0.717 (past this bound, so held at it, and said), vgg16 0.232 (2026-12-05).
    assert fit["resnet50"] == pytest.approx(bound, rel=1e-3) and 0.2 < fit["vgg16"] < 0.3
    assert "utilization for resnet50 = 0.5329 is at its upper bound" in r.output


def test_calibrate_help_lists_the_collectives_it_fits():
    """Its --collective is not grid's: NCCL's own (and its forced variants) is fitted by --nccl-tests."""
    text = " ".join(invoke("calibrate", "--help").output.split())
    said = text.split("--collective TEXT", 1)[1].split("--bucketing", 1)[0]
    assert "nccl-ring, nccl-tree" in said and "--nccl-tests" in said and "nccl:tree" not in said


def test_calibrate_assumes_what_grid_assumes(tmp_path):
    """The same workload's defaults said alike, the reductions' memory rate included (the rows built, no fit)."""
    from netsweep_jax.sweep.analysis.calibration_rows import Settings, build_rows
    from netsweep_jax.sweep.engine.grid import make_grid
    from netsweep_jax.sweep.engine.workloads import resolve_models

    measured = tmp_path / "m.csv"
    measured.write_text("nodes,gpus_per_node,bandwidth,scaling_factor\n2,8,100,0.8\n4,8,100,0.75\n")
    profiles = resolve_models("gpt2-xl", gpu="h100")
    said: list[str] = []
    build_rows(read_measurements(measured), profiles, profiles[0].model, Settings(), said)
    assert said == [make_grid("gpt2-xl", gpu="h100").assumed] and "reductions at the h100's HBM" in said[0]
    # its one NIC a node said alike (a review: fitted at 1 NIC on H100 rows, unsaid); a column or option, not
    assert "--nics-per-node 1 (its default; a DGX H100 has 8 NICs of 400 Gbit/s" in said[0]
    given: list[str] = []
    build_rows(read_measurements(measured), profiles, profiles[0].model, Settings(nics_per_node=1), given)
    assert (
        given == [make_grid("gpt2-xl", gpu="h100", nics_per_node=1).assumed] and "--nics-per" not in given[0]
    )


def test_rows_on_several_gpus_are_each_priced_at_their_own_gpus_links_as_a_sweep_prices_them(tmp_path):
    # A review: a fit of V100 and H100 rows priced the H100's at the V100's NVLink and reductions, where grid had
    # stopped doing so.
    from netsweep_jax.sweep.analysis.calibration_rows import Settings, build_rows
    from netsweep_jax.sweep.engine.grid import make_grid
    from netsweep_jax.sweep.engine.workloads import resolve_models

    both = resolve_models("gpt2-xl", gpu="v100,h100", precision="amp", batch=8)
    h100 = both[1].model
    measured = tmp_path / "m.csv"
    measured.write_text(
        f"model,nodes,gpus_per_node,bandwidth,scaling_factor\n{both[0].model},2,8,100,0.8\n{h100},2,8,100,0.7\n"
    )
    alone = tmp_path / "a.csv"
    alone.write_text(f"model,nodes,gpus_per_node,bandwidth,scaling_factor\n{h100},2,8,100,0.7\n")
    said: list[str] = []
    settings = Settings(collective="hierarchical", bucketing="ddp")
    mixed, _, _ = build_rows(read_measurements(measured), both, both[0].model, settings, said)
    single, _, _ = build_rows(read_measurements(alone), both[1:], h100, settings)
    for ours, its in zip(mixed.workers, single.workers):  # each field over the rows on one axis: the H100's
        if ours is None:
            continue
        ours, its = np.asarray(ours), np.asarray(its)
        row = next(k for k, (a, b) in enumerate(zip(ours.shape, its.shape)) if (a, b) == (2, 1))
        np.testing.assert_array_equal(np.take(ours, [1], axis=row), its)
    grid = make_grid("gpt2-xl", gpu="v100,h100", precision="amp", batch=8, collective="hierarchical",
                     bucketing="ddp")  # fmt: skip
    assert "--intra-bw each GPU's NVLink (v100 1200, h100 3600 Gbit/s)" in said[0] == grid.assumed


def test_iteration_time_reaches_a_profile_the_model_column_names(tmp_path):
    """A profile file without T1 named in the model column takes --iteration-time, as --profile's files do:
    the same fit as a t1 column of that value."""
    import shutil

    shutil.copy("examples/profile.csv", tmp_path / "profile.csv")
    rows = "profile.csv,2,8,100,0.8\nprofile.csv,4,8,100,0.75\n"
    plain = tmp_path / "m.csv"
    plain.write_text("model,nodes,gpus_per_node,bandwidth,scaling_factor\n" + rows)
    with_t1 = tmp_path / "t.csv"
    with_t1.write_text(
        "model,nodes,gpus_per_node,bandwidth,scaling_factor,t1\n" + rows.replace("\n", ",0.05\n")
    )
    refused = invoke("calibrate", plain)
    assert refused.exit_code == 2 and "or --iteration-time" in refused.output
    given, by_column = invoke("calibrate", plain, "--iteration-time", "0.05"), invoke("calibrate", with_t1)
    assert given.exit_code == 0 and by_column.exit_code == 0, given.output + by_column.output
    # A CSV profile states no GPU: taken as the paper's V100, and said (it was silent)
    assert "profile.csv on 'unknown': no GPU preset, taken as a V100" in given.output.splitlines()[0]
    assert given.output.splitlines()[1] == by_column.output.splitlines()[1]
    assert given.output.splitlines()[1].startswith("utilization: 0.1679")


def test_model_beside_a_profile_is_refused_as_grid_refuses_it(tmp_path):
    # A hunt: calibrate dropped --model for the profile file in silence.
    rows = tmp_path / "m.csv"
    rows.write_text("nodes,gpus_per_node,bandwidth,scaling_factor\n2,8,25,0.8\n4,8,25,0.7\n")
    r = invoke(
        "calibrate", rows, "--profile", "examples/profile.csv", "--iteration-time", "0.05", "--model", "gpt2"
    )
    assert r.exit_code == 2 and r.output == (
        "error: --model and --profile name two models: give one (a profile file names its own)\n"
    )


def test_a_label_of_digits_compares_as_its_number(tmp_path):
    # A hunt: labels are read as text, and batch == 32 compared '32' with 32: never equal, a row trained on in
    # the user's mind held out in silence. Other text against a number is refused, == too.
    from netsweep_jax.sweep.io.measurements import read_measurements, select

    path = tmp_path / "m.csv"
    path.write_text(
        "model,nodes,gpus_per_node,bandwidth,scaling_factor,batch,team\n"
        + "".join(f"resnet50,{n},8,25,0.9,{b},a\n" for n, b in ((1, 32), (2, 64), (4, 32), (8, 64)))
    )
    meas = read_measurements(path)
    assert select(meas, "nodes == 1 or batch == 32") == [True, False, True, False]
    assert select(meas, "batch != 32.0") == [False, True, False, True]
    with pytest.raises(InputError, match=r"compares text \('a'\) with a number"):
        select(meas, "team == 1")


def test_a_profile_in_a_folder_is_refused_at_its_row(tmp_path):
    # A hunt: 'sub/p.json' was refused as a model name, "must be ... without '/'", with no line.
    path = tmp_path / "m.csv"
    path.write_text("model,nodes,gpus_per_node,bandwidth,scaling_factor\nsub/p.json,2,8,25,0.5\n")
    r = invoke("calibrate", path)
    assert (
        r.exit_code == 2
        and "m.csv:2: model 'sub/p.json': a profile file is named by its file name alone" in r.output
    )


def test_an_unknown_model_names_every_built_in(tmp_path):
    # A hunt: "neither among resnet50" (the models met so far) read as if resnet50 were the only built-in.
    rows = tmp_path / "m.csv"
    rows.write_text("model,nodes,gpus_per_node,bandwidth,t1,scaling_factor\nmyprof,2,8,25,0.05,0.9\n")
    r = invoke("calibrate", rows, "--out", tmp_path / "c.json")
    assert (
        r.exit_code == 2
        and "model 'myprof' is neither a built-in (resnet50, resnet101, vgg16, bert-base" in r.output
    )
    assert "llama-7b) nor a profile file next to m.csv" in r.output and not (tmp_path / "c.json").exists()


def test_a_row_given_twice_is_refused_naming_both_lines(tmp_path):
    # A hunt: a row pasted twice fitted with a standard error of 7e-13, where the row once leaves none to estimate.
    rows = tmp_path / "m.csv"
    row = "resnet50,8,8,100,0.128,0.75\n"
    again = row.replace(",100,", ",100.0,")  # the same run by its values (a hunt: 25 and 25.0 were two runs)
    rows.write_text("model,nodes,gpus_per_node,bandwidth,t1,scaling_factor\n" + row + "# merged\n" + again)
    for command in (
        ("calibrate", rows, "--out", tmp_path / "c.json"),
        ("validate", rows, "--out", tmp_path / "v"),
    ):
        r = invoke(*command)
        assert r.exit_code == 2 and f"{rows}:4: the same row as line 2; give each run once" in r.output, (
            r.output
        )
    assert not (tmp_path / "c.json").exists() and not (tmp_path / "v").exists()


def test_t975_is_students_quantile():
    # hand cases: the t table's 12.706 (1 degree of freedom), 4.303 (2), 2.228 (10), 1.962 (1000)
    got = [t975(d) for d in (1, 2, 10, 1000)]
    assert got == pytest.approx([12.7062047, 4.30265273, 2.22813885, 1.96233908], rel=1e-6)


def test_a_fit_with_latency_too_reaches_its_sub_fits_minimum_on_a_hunts_rows(tmp_path):
    # A hunt: with latency fitted too (its default bounds hold latency 0), Adam from the best start alone ended at
    # utilization 0.9999, rmse 0.052, where the fit without latency reaches 0.024 and latency 12.7 us 0.0045.
    # The fit descends from the four best starts (calibration_fit.RESTARTS) and keeps the best.
    path = tmp_path / "m.csv"
    path.write_text(
        "model,nodes,gpus_per_node,bandwidth,t1,scaling_factor\n"
        "resnet50,1,8,25,0.25,0.95\nresnet50,2,8,25,0.25,0.85\nresnet50,4,8,25,0.25,0.80\nresnet50,8,8,25,0.25,0.76\n"
    )
    rmse = {}
    for fitted in ("utilization,slowdown", "utilization,latency,slowdown"):
        out = tmp_path / f"{fitted}.json"
        r = invoke("calibrate", path, "--collective", "nccl-ring", "--fit", fitted, "--out", out)
        assert r.exit_code == 0, r.output
        rmse[fitted] = json.loads(out.read_text())["rmse"]
    assert rmse["utilization,latency,slowdown"] <= rmse["utilization,slowdown"]
    assert rmse["utilization,latency,slowdown"] < 0.01 and "at its upper bound" not in r.output, r.output


def test_what_a_fit_takes_silently_is_said_or_refused(tmp_path):
    # A hunt: --iteration-time under a t1 column on every row changed nothing, unsaid; a t1 of 250 (ms typed as
    # seconds) fitted utilization 0.00037, unsaid; a one-node row under ring fitted a network utilization, unsaid.
    path = tmp_path / "m.csv"
    path.write_text(
        "model,nodes,gpus_per_node,bandwidth,t1,scaling_factor\n"
        "resnet50,1,8,25,250,0.95\nresnet50,2,8,25,250,0.85\nresnet50,4,8,25,250,0.80\n"
    )
    r = invoke("calibrate", path, "--iteration-time", "0.5", "--out", tmp_path / "c.json")
    assert r.exit_code == 2 and (
        "--iteration-time 0.5: every row of" in r.output and "gives its own T1 in its t1 column" in r.output
    ), r.output
    assert not (tmp_path / "c.json").exists()
    r = invoke("calibrate", path)
    assert r.exit_code == 0, r.output
    assert (
        "resnet50's compute scaled x1952 to T1 = 250 s from its own 0.1281 s: T1 is in seconds (its t1 column)"
        in r.output
    )
    assert "ring on one node: its GPUs' gradient exchange at the row's bandwidth" in r.output
    # a blank t1 takes --iteration-time, said as its own; NCCL's ring prices the node at --intra-bw: nothing said
    # (the rows alone, not fitted)
    from netsweep_jax.sweep.analysis.calibration_rows import Settings, build_rows

    path.write_text("model,nodes,gpus_per_node,bandwidth,t1,scaling_factor\nresnet50,1,8,25,,0.95\n")
    said = []
    build_rows(read_measurements(path), [builtin_profile("resnet50").scaled_to(250)], "resnet50",
               Settings(collective="nccl-ring"), said, iteration_time=250)  # fmt: skip
    assert "T1 is in seconds (--iteration-time)" in said[0] and "on one node" not in said[0], said


@pytest.mark.parametrize("measured", ["scaling_factor", "iteration_time"])
def test_a_predicted_rows_interval_holds_the_rows_scatter_about_the_model(tmp_path, measured):
    # A hunt: the interval was the fit's uncertainty alone, 0.9975 to 0.9975, where the training rows scatter by
    # 0.033 about the model. A new run's spread is at least the scatter s (s^2 = sum res^2 / (n - P)); an iteration
    # time's is relative, s times the prediction.
    values = {"scaling_factor": (0.95, 0.85, 0.81), "iteration_time": (0.27, 0.30, 0.32)}[measured]
    rows = [f"resnet50,{n},8,25,0.25,{v}" for n, v in zip((1, 2, 4), values)] + ["resnet50,8,8,100,0.25,"]
    path = tmp_path / "m.csv"
    path.write_text(f"model,nodes,gpus_per_node,bandwidth,t1,{measured}\n" + "\n".join(rows) + "\n")
    out = tmp_path / "c.json"
    r = invoke("calibrate", path, "--collective", "nccl-ring", "--out", out)
    assert r.exit_code == 0, r.output
    fit = json.loads(out.read_text())
    res = np.array([row["residual"] for row in fit["rows"] if row["train"]])
    s = np.sqrt(np.sum(res**2) / (len(res) - 1))
    (new,) = [row for row in fit["rows"] if row["measured"] is None]
    scale = 1.0 if measured == "scaling_factor" else new["predicted"]
    low, high = new["interval"]
    # Student's t for 2 degrees of freedom (3 rows, 1 parameter), not the normal's 1.96 (a review: 81% of runs)
    assert s > 0.005 and new["predicted"] - low >= t975(2) * s * scale * (1 - 1e-9), (low, new, s)
    assert (
        high == 1.0
        if measured == "scaling_factor"
        else high - new["predicted"] == pytest.approx(new["predicted"] - low)
    )


def test_a_profile_file_that_keeps_no_t1_takes_each_rows_t1_with_its_passes_as_measured(tmp_path):
    # A review: a CSV profile read at --iteration-time 0.01, then a row's t1 of 0.2, had its measured backward
    # scaled x20; and --profile of a CSV needed --iteration-time, which rows that all give a t1 refuse.
    from netsweep_jax.sweep import load_profile

    prof = tmp_path / "prof.csv"
    prof.write_text("name,grad_bytes,backward_us\nfc,4000000,5000\nconv,8192000,20000\n")
    at = load_profile(prof, t1=0.05).at_run_t1(0.2)
    assert at.t1 == 0.2 and np.array_equal(at.wait, load_profile(prof, t1=0.2).wait) and at.t1_given
    built_in = builtin_profile("resnet50")
    assert np.allclose(built_in.at_run_t1(2 * built_in.t1).wait, 2 * built_in.wait)  # its own T1: scaled
    # The same three runs, the file given with --profile, and named in a model column beside a row to predict
    # at --iteration-time: the rows with a t1 are priced alike.
    runs = [(1, 0.95), (2, 0.85), (4, 0.8)]
    given, named = tmp_path / "given.csv", tmp_path / "named.csv"
    given.write_text(
        "nodes,gpus_per_node,bandwidth,t1,scaling_factor\n" + "".join(f"{n},8,25,0.2,{v}\n" for n, v in runs)
    )
    named.write_text(
        "model,nodes,gpus_per_node,bandwidth,t1,scaling_factor\n"
        + "".join(f"prof.csv,{n},8,25,0.2,{v}\n" for n, v in runs)
        + "prof.csv,8,8,25,,\n"
    )
    fits = []
    for args in ((given, "--profile", prof), (named, "--iteration-time", "0.05")):
        r = invoke("calibrate", *args, "--out", tmp_path / "fit.json", "--force")
        assert r.exit_code == 0, r.output
        fits.append(json.loads((tmp_path / "fit.json").read_text()))
    assert fits[0]["utilization"] == pytest.approx(fits[1]["utilization"], rel=1e-9)
    predicted = [[row["predicted"] for row in fit["rows"][:3]] for fit in fits]
    assert predicted[0] == pytest.approx(predicted[1], rel=1e-9)


@pytest.mark.parametrize(
    "header,refused",
    [
        ("t1_mean_s", True), ("t1_median (s)", True), ("latency_micros", True), ("utilization%", True),
        ("jitter_pct", True), ("fusion_buffer_kb", True),
        # labels (a review): a minimum, a basis, a class (the bandwidth column given: any name after it is a label)
        ("t1_min", False), ("t1_basis", False), ("latency_class", False), ("utilization_nccl_tests", False),
    ],
)  # fmt: skip
def test_a_column_is_refused_for_a_unit_after_a_settings_name_and_a_label_is_read(tmp_path, header, refused):
    path = tmp_path / "m.csv"
    path.write_text(f"nodes,gpus_per_node,bandwidth,scaling_factor,{header}\n2,8,25,0.9,3\n")
    if refused:
        with pytest.raises(InputError, match=f"column '{re.escape(header)}' is "):
            read_measurements(path)
    else:
        assert read_measurements(path).columns[header] == ["3"] or read_measurements(path).columns[
            header
        ] == [3.0]
