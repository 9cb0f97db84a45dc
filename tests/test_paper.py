"""sweep paper: the committed report and figures regenerate identically."""

from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import assert_same_figure, assert_same_text
from netsweep_jax.sweep.analysis.paper import run_paper
from netsweep_jax.sweep.cli.app import app

COMMITTED = Path(__file__).resolve().parents[1] / "results" / "paper"


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory):
    out = tmp_path_factory.mktemp("paper")
    run_paper(out, command="sweep paper --out results/paper")
    return out


def test_report_matches_committed(regenerated):
    assert_same_text(regenerated / "REPORT.md", COMMITTED / "REPORT.md")


@pytest.mark.parametrize("name", ["scaling_vs_bandwidth.png", "scaling_vs_ratio.png"])
def test_figures_match_committed(regenerated, name):
    assert_same_figure(regenerated / name, COMMITTED / name)


def test_report_checks_the_findings(regenerated):
    text = (regenerated / "REPORT.md").read_text()
    assert "Every model >= 0.99: **holds**" in text
    assert "resnet50: 5x on the grid, exactly 3.01x" in text
    for model in ("resnet50", "resnet101", "vgg16"):
        assert f"### {model}, 10 Gbit/s" in text
    assert (regenerated / "paper.h5").exists()


def test_with_measured_profiles(paper_data, tmp_path):
    r = CliRunner().invoke(app, ["paper", "--out", str(tmp_path), "--profiles-dir", str(paper_data)])
    assert r.exit_code == 0, r.output
    text = (tmp_path / "REPORT.md").read_text()
    assert "built-in model / measured log" in text
    worst = float(text.split("largest scaling-factor difference over the whole grid ")[1].split(".\n")[0])
    assert worst <= 0.02
    assert (tmp_path / "paper-measured.h5").exists()


def test_profiles_dir_without_logs(tmp_path):
    r = CliRunner().invoke(app, ["paper", "--out", str(tmp_path / "o"), "--profiles-dir", str(tmp_path)])
    assert r.exit_code == 2 and "no resnet50.bk.log" in r.output
