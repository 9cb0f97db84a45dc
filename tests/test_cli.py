"""The CLI end to end: the main command, models/show/select, and every bad input."""

import h5py
import numpy as np
import pytest

from helpers import invoke
from netsweep_jax.sweep.cli.app import app
from netsweep_jax.sweep.core.schema import DIMS


def test_grid_as_written_in_the_issue(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = invoke("grid", "--model", "resnet50", "--bw", "10,25,100", "--ratio", "1..100")
    assert r.exit_code == 0, r.output
    files = list((tmp_path / "results").glob("resnet50-*.h5"))
    assert len(files) == 1 and "300 configurations" in r.output
    with h5py.File(files[0]) as f:
        sizes = dict(zip(DIMS, f["scaling_factor"].shape))
        assert sizes == {**{d: 1 for d in DIMS}, "bandwidth": 3, "ratio": 100}
        assert f.attrs["command"].startswith("sweep ")  # sys.argv: exact in test_resume.py
        assert np.all(np.isfinite(f["scaling_factor"][...]))
    assert not list((tmp_path / "results").glob("*.partial"))


def test_models_lists_builtins():
    r = invoke("models")
    assert r.exit_code == 0
    for name, count in (("resnet50", 161), ("resnet101", 314), ("vgg16", 58)):
        assert name in r.output and str(count) in r.output


def test_show_and_select(tmp_path):
    out = tmp_path / "c.h5"
    assert invoke("grid", "--bw", "10,25", "--nodes", "2,8", "--out", out, "-q").exit_code == 0
    r = invoke("show", out)
    assert r.exit_code == 0
    assert "bandwidth" in r.output and "scaling_factor" in r.output and "resnet50: 161 tensors" in r.output
    r = invoke("select", out, "--bw", "25", "--nodes", "8", "--csv")
    assert r.exit_code == 0, r.output
    lines = r.output.strip().splitlines()
    assert lines[0].startswith("nodes,bandwidth,scaling_factor")
    assert len(lines) == 2
    r = invoke("select", out, "--bw", "40")
    assert r.exit_code == 2 and "--bw 40: not in the cube" in r.output


BAD = [
    (["--bw", "0"], "--bw 0: bandwidth must be a number from 0.001 to 1000000"),
    (["--bw", "ten"], "--bw 'ten': 'ten' is not a number"),
    (["--util", "0"], "--util 0: utilization must be a number from 0.0001 to 1"),
    (["--util", "1.2"], "--util 1.2"),
    (["--ratio", "0.5"], "--ratio 0.5: ratio must be a number from 1 to 1000000"),
    (["--nodes", "0"], "--nodes 0: nodes must be an integer from 1 to 1000000"),
    (["--nodes", "2.5"], "--nodes 2.5: nodes must be an integer"),
    (["--gpus-per-node", "0"], "--gpus-per-node 0"),
    (["--gpus-per-node", "1.5"], "--gpus-per-node 1.5"),
    (["--latency", "-1"], "--latency -1: latency must be a number from 0 to 1000000"),
    (["--fusion-mb", "-1"], "--fusion-mb -1"),
    (["--fusion-ms", "-1"], "--fusion-ms -1"),
    (["--ratio", "100..1"], "--ratio '100..1': range is reversed"),
    (["--ratio", "5..5:0"], "--ratio '5..5:0': step 0 is empty"),
    (["--model", "alexnet"], "--model 'alexnet': unknown; known: resnet50, resnet101, vgg16"),
    (["--collective", "butterfly"], "--collective 'butterfly': unknown; known: ring, tree, ps, hierarchical"),
    (["--profile", "missing.csv", "--iteration-time", "0.1"], "missing.csv: profile file not found"),
    (["--intra-bw", "0"], "--intra-bw 0"),
]


@pytest.mark.parametrize("args,message", BAD)
def test_bad_input_is_one_line_exit_2_no_file(tmp_path, args, message, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = invoke("grid", *args, "--out", tmp_path / "o.h5")
    assert r.exit_code == 2
    assert r.output.strip() == f"error: {r.output.strip()[7:]}"
    assert message in r.output
    assert len(r.output.strip().splitlines()) == 1 and "Traceback" not in r.output
    assert list(tmp_path.iterdir()) == []


def test_malformed_profile_names_file_and_line(tmp_path):
    bad = tmp_path / "p.csv"
    bad.write_text("name,grad_bytes,backward_us\na,10,1\nb,x,2\n")
    r = invoke("grid", "--profile", bad, "--iteration-time", "0.1", "--out", tmp_path / "o.h5")
    assert r.exit_code == 2 and "p.csv:3: grad_bytes 'x' is not a number" in r.output
    assert not (tmp_path / "o.h5").exists()


def test_profile_needs_iteration_time(tmp_path):
    p = tmp_path / "p.csv"
    p.write_text("name,grad_bytes,backward_us\na,10,1\n")
    r = invoke("grid", "--profile", p, "--out", tmp_path / "o.h5")
    assert r.exit_code == 2 and "--iteration-time needed: " in r.output


def test_existing_out_needs_force(tmp_path):
    out = tmp_path / "o.h5"
    out.write_text("keep me")
    r = invoke("grid", "--out", out, "-q")
    assert r.exit_code == 2 and "file exists; pass --force" in r.output
    assert out.read_text() == "keep me"
    assert invoke("grid", "--out", out, "-q", "--force").exit_code == 0
    assert h5py.is_hdf5(out)


def test_out_in_unwritable_directory(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    r = invoke("grid", "--out", blocker / "o.h5")
    assert r.exit_code == 2 and "does not exist or is not a directory" in r.output
    r = invoke("grid", "--out", "/proc/o.h5")
    assert r.exit_code == 2 and "cannot be written" in r.output


def test_resume_with_nothing_to_resume(tmp_path):
    r = invoke("grid", "--out", tmp_path / "o.h5", "--resume")
    assert r.exit_code == 2 and "nothing to resume" in r.output
    assert list(tmp_path.iterdir()) == []


def test_help_documents_value_syntax():
    r = invoke("grid", "--help")
    assert r.exit_code == 0
    for text in ("--bw", "--ratio", "--resume", "1..1000@20log"):
        assert text in r.output


def test_no_help_text_is_eaten_as_rich_markup():
    # --help is rendered with Rich markup: "[default: x]" or ".[torch]" in a help text would vanish from the screen.
    import typer
    from rich.text import Text

    def walk(command):
        yield command.help or ""
        for p in command.params:
            yield getattr(p, "help", None) or ""
        for sub in getattr(command, "commands", {}).values():
            yield from walk(sub)

    texts = list(walk(typer.main.get_command(app)))
    assert len(texts) > 50
    for text in texts:
        assert Text.from_markup(text).plain == text.replace("\\[", "["), text
