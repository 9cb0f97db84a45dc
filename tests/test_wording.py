"""Small wording: counts, refusals that read as sentences, measured lines drawn where they can be seen."""

import numpy as np

from helpers import invoke


def test_one_configuration_and_one_setting_are_singular(tmp_path):
    r = invoke("grid", "--model", "resnet50", "--bw", "10", "--out", tmp_path / "g.h5")
    assert r.exit_code == 0 and ": 1 configuration in " in r.output, r.output


def test_a_missing_global_batch_reads_as_a_sentence():
    r = invoke("plan", "--model", "llama3-8b", "--gpus", "8")
    assert r.exit_code == 2 and r.output.strip() == (
        "error: --global-batch is needed: the global batch in samples, as --global-batch 1024"
    )
    r = invoke("plan", "--model", "llama3-8b", "--global-batch", "8", "--csv", "--json")
    assert (
        r.exit_code == 2
        and r.output.strip() == "error: --csv and --json both choose what is printed: give one"
    )


def test_paper_draws_the_measured_logs_over_the_model(monkeypatch):
    # With --profiles-dir the measured logs' lines agree with the model's within 0.02: drawn under them, with
    # no marker, they could not be seen.
    from matplotlib.figure import Figure

    import netsweep_jax.sweep as sweep
    from netsweep_jax.sweep.analysis import paper

    ds = sweep.evaluate("resnet50", bandwidth=[10, 100], nodes=paper.NODES)
    measured = ds.assign_coords(model=["resnet50-measured"])
    ax = Figure().gca()
    paper._lines(ax, ds, "resnet50", "bandwidth", {"ratio": 1}, measured)
    lines = {line.get_label(): line for line in ax.get_lines()}
    logs = [line for label, line in lines.items() if label.endswith("(measured log)")]
    model = [line for label, line in lines.items() if not label.endswith("(measured log)")]
    assert len(logs) == len(model) == len(paper.NODES)
    assert all(line.get_marker() not in (None, "None", "") for line in logs)
    assert min(line.get_zorder() for line in logs) > max(line.get_zorder() for line in model)
    assert np.allclose(logs[0].get_ydata(), model[0].get_ydata())
