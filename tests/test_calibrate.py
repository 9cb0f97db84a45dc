"""sweep calibrate: recovers a known utilization; bad measurement files are refused."""

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from conftest import random_profile
from sweep import builtin_profile, evaluate
from sweep.calibrate import fit
from sweep.cli import app
from sweep.errors import InputError
from sweep.measurements import read_measurements


def synthetic_csv(path, profile, u_true, noise, seed=0, latency=0.0):
    ds = evaluate(profile, bandwidth=[5, 10, 25, 40], nodes=[2, 4, 8], utilization=u_true,
                  latency=latency, dtype="float64")
    rng = np.random.default_rng(seed)
    rows = ["nodes,gpus_per_node,bandwidth,scaling_factor"]
    for n in (2, 4, 8):
        for bw in (5, 10, 25, 40):
            v = float(ds.scaling_factor.sel(nodes=n, bandwidth=bw).squeeze()) + rng.normal(0, noise)
            rows.append(f"{n},8,{bw},{min(v, 1.0):.6f}")
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.mark.parametrize("model", ["resnet50", "vgg16", "random"])
@pytest.mark.parametrize("noise", [0.0, 0.005, 0.01])
def test_recovers_known_utilization(tmp_path, model, noise):
    p = builtin_profile(model) if model != "random" else random_profile(np.random.default_rng(3), 40)
    u_true = {"resnet50": 0.37, "vgg16": 0.6, "random": 0.25}[model]
    meas = read_measurements(synthetic_csv(tmp_path / "m.csv", p, u_true, noise))
    result = fit(meas, [p], p.model)
    assert abs(result["utilization"] - u_true) <= 0.01
    assert result["rmse"] <= 2 * noise + 1e-6


def test_fits_latency_too(tmp_path):
    p = builtin_profile("resnet50")
    meas = read_measurements(synthetic_csv(tmp_path / "m.csv", p, 0.5, 0.0, latency=5.0))
    result = fit(meas, [p], "resnet50", ("utilization", "latency"))
    assert abs(result["utilization"] - 0.5) <= 0.01
    assert result["rmse"] < 1e-3


def test_cli_walkthrough_example(tmp_path):
    out = tmp_path / "fit.json"
    r = CliRunner().invoke(app, ["calibrate", "examples/resnet50_measured.csv", "--out", str(out)])
    assert r.exit_code == 0, r.output
    data = json.loads(out.read_text())
    assert 0.1 < data["utilization"] < 0.3
    assert data["rows"][0]["effective_bandwidth_gbps"] == pytest.approx(100 * data["utilization"])
    assert abs(data["rows"][0]["predicted"] - 0.75) < 1e-4
    assert "utilization:" in r.output and "rmse" in r.output


@pytest.mark.parametrize("text,message", [
    ("nodes,gpus_per_node,scaling_factor\n8,8,0.7\n", "m.csv:1: missing column(s) bandwidth"),
    ("nodes,gpus_per_node,bandwidth\n8,8,100\n", "exactly one of scaling_factor, iteration_time"),
    ("nodes,gpus_per_node,bandwidth,scaling_factor\n8,8,100,x\n", "m.csv:2: scaling_factor 'x' is not a number"),
    ("nodes,gpus_per_node,bandwidth,scaling_factor\n8,8,100,0.5\n8,8,100,1.5\n", "m.csv:3: scaling_factor 1.5 must be in (0, 1]"),
    ("nodes,gpus_per_node,bandwidth,scaling_factor\n8,8,100,0\n", "m.csv:2: scaling_factor 0 must be in (0, 1]"),
    ("nodes,gpus_per_node,bandwidth,scaling_factor\n", "m.csv: no measurement rows"),
    ("nodes,gpus_per_node,bandwidth,scaling_factor\n8,8,100\n", "m.csv:2: expected 4 cells, got 3"),
    ("nodes,gpus_per_node,bandwidth,scaling_factor\n0,8,100,0.5\n", "m.csv:2: nodes 0"),
    ("nodes,gpus_per_node,bandwidth,iteration_time\n8,8,100,-1\n", "m.csv:2: iteration_time -1 must be a number of seconds in (0, 1e4]"),
])
def test_bad_measurements(tmp_path, text, message):
    path = tmp_path / "m.csv"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        read_measurements(path)
    assert message in str(err.value)
    r = CliRunner().invoke(app, ["calibrate", str(path)])
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
    r = CliRunner().invoke(app, ["calibrate", str(path), "--out", str(tmp_path / "fit.json")])
    assert r.exit_code == 0, r.output
    data = json.loads((tmp_path / "fit.json").read_text())
    assert abs(data["utilization"] - u_true) <= 0.01
    assert {row["model"] for row in data["rows"]} == {"resnet50", "vgg16"}
    assert data["measured"] == "iteration_time" and data["rmse"] < 1e-6
