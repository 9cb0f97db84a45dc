"""sweep validate: the committed report regenerates; the dataset holds the published facts."""

import csv
from pathlib import Path

import matplotlib.image as mpimg
import numpy as np
import pytest

from sweep.validate import DATASET, run

COMMITTED = Path(__file__).resolve().parents[1] / "results" / "validation"
PUBLISHED = Path(__file__).resolve().parents[2] / "shared" / "published" / "measurements.csv"


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory):
    out = tmp_path_factory.mktemp("validation")
    run(out, command="sweep validate --out results/validation")
    return out


@pytest.mark.parametrize("name", ["REPORT.md", "predictions.csv"])
def test_report_matches_committed(regenerated, name):
    assert (regenerated / name).read_text() == (COMMITTED / name).read_text()


def test_figure_matches_committed(regenerated):
    new, old = (mpimg.imread(d / "measured_vs_predicted.png") for d in (regenerated, COMMITTED))
    assert new.shape == old.shape and np.mean(np.abs(new - old) > 0.1) < 0.01


def test_calibrated_model_beats_the_papers_on_held_out_rows(regenerated):
    rows = list(csv.DictReader(open(regenerated / "predictions.csv")))
    held = [r for r in rows if r["set"] == "held out"]
    assert len(held) == 5

    def rmse(name):
        return np.sqrt(np.mean([(float(r[name]) - float(r["measured"])) ** 2 for r in held]))

    assert rmse("calibrated") < rmse("utilization") < rmse("paper")


def dataset_rows():
    return list(csv.DictReader(line for line in open(DATASET) if not line.startswith("#")))


def test_every_row_names_its_source():
    for row in dataset_rows():
        assert row["citation"].strip() and row["source"].strip(), row["id"]
        assert row["t1_basis"].split(":")[0] in ("measured", "assumed") or "built-in" in row["t1_basis"]


def test_dataset_holds_the_published_numbers():
    if not PUBLISHED.is_file():
        pytest.skip(f"published measurements not found at {PUBLISHED} (../shared/published is not laid out here)")
    published = {r["id"]: r for r in csv.DictReader(open(PUBLISHED))}
    ours = dataset_rows()
    assert {r["id"] for r in ours} == set(published)
    for row in ours:
        src = published[row["id"]]
        assert float(row["scaling_factor"]) == float(src["scaling_factor"])
        assert int(row["nodes"]) == int(src["nodes"]) and int(row["gpus_per_node"]) == int(src["gpus_per_node"])
        if src["throughput_1gpu"]:  # T1 is the measured batch / single-GPU throughput
            assert float(row["t1"]) == pytest.approx(float(row["batch"]) / float(src["throughput_1gpu"]), rel=1e-5)
