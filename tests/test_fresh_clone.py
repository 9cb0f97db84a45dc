"""A fresh clone: the documented commands and the report commands' defaults never meet a committed file."""

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from test_readme import FENCE, PAGES, ROOT, blocks, commands, console

from helpers import invoke


def tracked(path: str) -> list[str]:
    """The files git tracks at or under ``path`` (relative to the checkout; none outside it)."""
    if not (ROOT / path).resolve().is_relative_to(ROOT):
        return []
    r = subprocess.run(["git", "ls-files", "--", path], cwd=ROOT, capture_output=True, text=True, check=True)
    return r.stdout.split()


# A command quoted in the text (`sweep validate my_runs.csv --out results/mine`), outside the example blocks.
INLINE = re.compile(r"`(sweep [^`]+)`")


def documented_commands():
    for page in PAGES:
        for lang, body in blocks(page):
            if lang == "sh":
                yield from (args for line in body.splitlines() for args in commands(line))
            elif lang == "console":
                yield from (args for args, _ in console(body))
        for text in INLINE.findall(FENCE.sub("", (ROOT / page).read_text())):
            # The one that regenerates a committed report says so with --force, as the user must.
            if "--force" not in (args := shlex.split(text)[1:]):
                yield args


def test_no_documented_command_writes_onto_a_committed_file():
    # `sweep paper --out results/paper` in the guide met the committed report: "file exists" on a fresh clone.
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    outs = [(args, args[args.index("--out") + 1]) for args in documented_commands() if "--out" in args]
    assert len(outs) > 10
    for args, out in outs:
        assert not tracked(out), f"sweep {shlex.join(args)}: --out {out} holds committed files"


@pytest.mark.parametrize(
    "args, module, prefix",
    [
        (["paper"], "paper.run_paper", "paper-"),
        (["validate"], "validate.run", "validation-"),
        (["validate", "--llm"], "llm_validation.run", "validation-llm-"),
    ],
)
def test_report_commands_default_to_a_new_directory(tmp_path, monkeypatch, args, module, prefix):
    # As the README names them, with the committed reports in place: each run gets a new results/NAME-<stamp>.
    from netsweep_jax.sweep import analysis

    monkeypatch.chdir(tmp_path)
    for name in ("paper", "validation", "validation-llm"):
        (tmp_path / "results" / name).mkdir(parents=True)
        (tmp_path / "results" / name / "REPORT.md").write_text("committed")
    seen = []

    class Seen(Exception):
        pass

    def stop(out, *a, **k):  # where the command would write; the work itself is other tests'
        seen.append(Path(out))
        raise Seen

    submodule, function = module.split(".")
    __import__(f"netsweep_jax.sweep.analysis.{submodule}")
    monkeypatch.setattr(getattr(analysis, submodule), function, stop)
    r = invoke(*args)
    assert isinstance(r.exception, Seen), r.output
    (out,) = seen
    assert out.parent == Path("results") and out.name.startswith(prefix), out
    assert out.name[len(prefix) :].replace("-", "").isdigit() and not out.exists()
