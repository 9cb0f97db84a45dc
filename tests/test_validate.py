"""sweep validate: the committed report regenerates; the dataset holds the published facts."""

import csv
from pathlib import Path

import numpy as np
import pytest

from helpers import RESULTS, assert_same_file, invoke, regenerate
from netsweep_jax.sweep.analysis.validate import DATASET, run
from netsweep_jax.sweep.core.errors import InputError

COMMITTED = RESULTS / "validation"
PUBLISHED = Path(__file__).resolve().parents[2] / "shared" / "published" / "measurements.csv"


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory):
    return regenerate(tmp_path_factory, run, "validation", "validate")


@pytest.mark.parametrize("name", ["REPORT.md", "predictions.csv", "measured_vs_predicted.png"])
def test_report_matches_committed(regenerated, name):
    assert_same_file(regenerated / name, COMMITTED / name)


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
        pytest.skip(
            f"published measurements not found at {PUBLISHED} (../shared/published is not laid out here)"
        )
    published = {r["id"]: r for r in csv.DictReader(open(PUBLISHED))}
    ours = dataset_rows()
    assert {r["id"] for r in ours} == set(published)
    for row in ours:
        src = published[row["id"]]
        assert float(row["scaling_factor"]) == float(src["scaling_factor"])
        assert int(row["nodes"]) == int(src["nodes"]) and int(row["gpus_per_node"]) == int(
            src["gpus_per_node"]
        )
        if src["throughput_1gpu"]:  # T1 is the measured batch / single-GPU throughput
            assert float(row["t1"]) == pytest.approx(
                float(row["batch"]) / float(src["throughput_1gpu"]), rel=1e-5
            )


def test_a_users_own_measurements(tmp_path, regenerated):
    # The shipped runs as a user's file without source, id or t1_basis: grouped by framework alone (one source
    # each here), rows named by line, and the same predictions (the same fits, so no new compile either).

    rows = dataset_rows()
    keep = [c for c in rows[0] if c not in ("source", "id", "t1_basis", "citation")]
    with open(tmp_path / "mine.csv", "w", newline="") as f:
        w = csv.DictWriter(f, keep, extrasaction="ignore", lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    r = invoke("validate", str(tmp_path / "mine.csv"), "--out", str(tmp_path / "v"))
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0].startswith("model 1/3: paper")
    start = lines.index("model        held-out RMSE  worst  in-sample RMSE") + 1
    table = {line.split()[0]: [float(x) for x in line.split()[1:]] for line in lines[start : start + 3]}
    assert table["calibrated"][0] < table["utilization"][0] < table["paper"][0]
    ours = list(csv.DictReader(open(tmp_path / "v" / "predictions.csv")))
    shipped = list(csv.DictReader(open(regenerated / "predictions.csv")))
    assert [r["calibrated"] for r in ours] == [r["calibrated"] for r in shipped]
    assert ours[0]["id"] == "line 2" and ours[0]["source"] == ""
    text = (tmp_path / "v" / "REPORT.md").read_text()
    assert "# netsweep against mine.csv" in text and "Single-GPU times" not in text


def test_a_file_without_bucketing_says_so(tmp_path):
    from netsweep_jax.sweep.analysis.validate import report
    from netsweep_jax.sweep.io.measurements import read_measurements

    text = (
        "framework,network,nodes,gpus_per_node,bandwidth,scaling_factor\na,ib,1,8,100,0.9\na,ib,2,8,100,0.8\n"
    )
    (tmp_path / "m.csv").write_text(text)
    meas = read_measurements(tmp_path / "m.csv")
    train = np.array([True, False])
    predictions = {m: np.array([0.9, 0.8]) for m in ("paper", "utilization", "calibrated")}
    assert "bucketed by Horovod's fusion" in report(
        meas, predictions, train, {"utilization": {}, "calibrated": {}}
    )


@pytest.mark.parametrize(
    "text,message",
    [
        (
            "nodes,gpus_per_node,bandwidth,scaling_factor\n1,8,100,0.9\n2,8,100,0.8\n",
            "no 'framework' or 'network'",
        ),
        (
            "framework,network,nodes,gpus_per_node,bandwidth,scaling_factor\na,ib,2,8,100,0.8\nb,ib,4,8,100,0.7\n",
            "nothing is held out",
        ),
        # What validation fits, fixed by a column or fitted from no row that depends on it: named by the file (validate
        # has no --fit), one line, before any model's progress line.
        (
            "framework,network,nodes,gpus_per_node,bandwidth,scaling_factor,jitter\na,ib,1,8,100,0.9,0\n"
            "a,ib,2,8,100,0.8,0\na,ib,4,8,100,0.7,0\n",
            "m.csv: a 'jitter' column fixes what validation fits",
        ),
        (
            "framework,network,nodes,gpus_per_node,bandwidth,scaling_factor\na,ib,1,8,100,0.95\na,ib,2,8,100,0.9\n"
            "a,ib,4,8,100,0.8\nb,ib,1,1,100,0.99\n",
            "m.csv: no training row of framework 'b' runs on several GPUs",
        ),
        # A collective column: every model took it while the report named each one's own.
        (
            "framework,network,nodes,gpus_per_node,bandwidth,scaling_factor,collective\na,ib,1,8,100,0.95,ps\n"
            "a,ib,2,8,100,0.9,ps\n",
            "m.csv: a 'collective' column fixes what validation's models differ by",
        ),
        # A hunt: a misspelt setting column was a label, the setting ignored in silence (and the report said it
        # was read); a blank line before the header (after a file's comments) was taken for the header.
        (
            "framework,network,nodes,gpus_per_node,bandwidth,scaling_factor,fusion_timout\na,ib,2,8,100,0.9,1\n",
            "m.csv:1: column 'fusion_timout' is not fusion_timeout, which it is close to",
        ),
        # A hunt: the CLI's spelling of a setting (util) was a label too, and the fit blamed an overhead.
        (
            "framework,network,nodes,gpus_per_node,bandwidth,scaling_factor,util\na,ib,2,8,100,0.9,0.5\n",
            "m.csv:1: column 'util' is the CLI's --util; name it utilization",
        ),
        (
            "# mine\n\nframework,network,nodes,gpus_per_node,bandwidth,scaling_factor\na,ib,1,8,100,0.95\n"
            "a,ib,2,8,100,0.9,0\n",
            "m.csv:5: expected 6 cells, got 7",  # read from the header on line 3, not the blank line 2
        ),
        # A hunt: an empty framework was a jitter group of its own, fitted from one row; an id twice, two rows
        # of one name in predictions.csv.
        (
            "framework,network,nodes,gpus_per_node,bandwidth,scaling_factor\na,ib,2,8,100,0.9\n,ib,4,8,100,0.8\n",
            "m.csv:3: no framework; validation fits one jitter per framework",
        ),
        (
            "id,framework,network,nodes,gpus_per_node,bandwidth,scaling_factor\nx,a,ib,2,8,100,0.9\nx,a,ib,4,8,100,0.8\n",
            "m.csv:2's too; each once",
        ),
        # A blank measurement (a row calibrate predicts): it crashed writing predictions.csv, after every fit.
        (
            "framework,network,nodes,gpus_per_node,bandwidth,scaling_factor\na,ib,1,8,100,0.95\na,ib,2,8,100,\n",
            "m.csv:3: no measured scaling factor; validation compares every row with its measurement",
        ),
    ],
)
def test_files_validation_cannot_use(tmp_path, text, message):

    (tmp_path / "m.csv").write_text(text)
    r = invoke("validate", str(tmp_path / "m.csv"), "--out", str(tmp_path / "v"))
    assert r.exit_code == 2 and message in r.output and len(r.output.strip().splitlines()) == 1, r.output
    assert not (tmp_path / "v").exists()


def test_a_label_with_a_bar_stays_in_its_cell():
    from netsweep_jax.sweep.core.wording import table_cell as _cell

    assert _cell("100G | RoCE") == "100G \\| RoCE" and _cell(25) == "25"  # the bar split the report's row


def test_a_built_in_transformers_workload_is_said(tmp_path):
    # A hunt: gpt2 rows were priced on a V100 in fp32, in silence (validate takes no --gpu or --precision).
    from netsweep_jax.sweep.analysis.validate import _say_workloads
    from netsweep_jax.sweep.io.measurements import read_measurements

    path = tmp_path / "m.csv"
    path.write_text(
        "model,nodes,gpus_per_node,bandwidth,scaling_factor\ngpt2,2,8,100,0.9\nresnet50,2,8,100,0.9\n"
    )
    said: list[str] = []
    _say_workloads(read_measurements(path), said.append)
    assert said == [
        "assumed: gpt2 on v100, fp16, batch 8 (validate takes no --gpu or --precision: a profile file's path in the "
        "model column prices another workload)"
    ]


def test_a_runs_file_without_llm_is_pointed_to_it(tmp_path):
    # A hunt: "missing column(s) nodes, gpus_per_node, bandwidth", where calibrate tells a runs file apart.
    path = tmp_path / "runs.csv"
    path.write_text(
        "id,gpu,gpus,tp,pp,global_batch,metric,value,preset\nr1,h100,8,1,1,8,s_per_iter,1,llama3-8b\n"
    )
    r = invoke("validate", path, "--out", tmp_path / "v")
    assert r.exit_code == 2 and r.output == (
        f"error: {path}: a file of large-model runs (tp, pp and metric columns); sweep validate --llm {path} "
        "validates it\n"
    )
    assert not (tmp_path / "v").exists()
    # and from Python (a hunt: the API's validate said "missing column(s)")
    from netsweep_jax import sweep

    with pytest.raises(InputError, match="a file of large-model runs"):
        sweep.validate(path)
