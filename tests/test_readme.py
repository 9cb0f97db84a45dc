"""Every example in the README runs, in order, as written, in a fresh directory.

Fenced blocks: ``sh`` (and unlabelled) blocks are commands, run one line at a time
(``pip install`` and the test command itself are skipped: they are how you got
here); ``console`` blocks show ``$ command`` and its output, and the command must
print the first output line shown; ``python`` blocks run as one script each. ``text``
and ``json`` blocks are formats and layouts, not examples.
"""

import re
import shlex
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from netsweep_jax.sweep.cli.app import app

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^ *```(\w*)\n(.*?)^ *```", re.S | re.M)


def blocks():
    return [(lang or "sh", body) for lang, body in FENCE.findall((ROOT / "README.md").read_text())]


def commands(line):
    for part in line.split("&&"):
        words = shlex.split(part, comments=True)
        if words and words[0] == "sweep":
            yield words[1:]
        elif words and words[:1] != ["pip"] and words[:3] != ["python", "-m", "pytest"]:
            raise AssertionError(f"README command not understood: {part!r}")


def run(args):
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, f"sweep {shlex.join(args)}\n{r.output}"
    return r.output


def test_readme_examples_run_in_order(tmp_path, monkeypatch):
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    ran = 0
    for lang, body in blocks():
        if lang == "sh":
            for line in body.splitlines():
                for args in commands(line):
                    run(args)
                    ran += 1
        elif lang == "console":
            lines = body.splitlines()
            assert lines[0].startswith("$ sweep ")
            out = run(shlex.split(lines[0][2:])[1:])
            assert out.splitlines()[0] == lines[1]
            ran += 1
        elif lang == "python":
            exec(compile(body, "README.md", "exec"), {})
            ran += 1
        else:
            assert lang in ("text", "json"), lang
    assert ran >= 15
    assert (tmp_path / "results" / "r.h5").exists() and (tmp_path / "results" / "heat.png").exists()


@pytest.mark.parametrize("path", ["r.h5", "results/r.h5", "results/fig.png", "results/fit.json", "x.h5.partial"])
def test_example_outputs_are_ignored_by_git(path):
    import subprocess

    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    r = subprocess.run(["git", "check-ignore", "-q", path], cwd=ROOT)
    assert r.returncode == 0, f"{path} is not ignored"


def test_readme_lists_every_axis_with_its_bounds():
    from netsweep_jax.sweep.core.schema import NUMERIC_AXES, show

    text = (ROOT / "README.md").read_text()
    for spec in NUMERIC_AXES.values():
        row = next(line for line in text.splitlines() if line.startswith(f"| `{spec.option}` | `{spec.name}` |"))
        assert f"{show(spec.low)} to {show(spec.high)}" in row, row


def test_readme_lists_every_dim_of_the_cube_in_order():
    from netsweep_jax.sweep.core.schema import DIMS

    text = (ROOT / "README.md").read_text()
    section = text[text.index("## The cube"):text.index("Every dim is present")]
    listed = [line.split("`")[1] for line in section.splitlines() if line.startswith("| `")]
    assert listed == list(DIMS)
