"""Every example in the README and in docs/ runs, in order, as written, in a fresh directory.

The files run one after the other in one directory (``PAGES``: the README, then the guide,
the model, the validation), so a page may use what an earlier page's examples wrote.

Fenced blocks: ``sh`` (and unlabelled) blocks are commands, run one line at a time
(``pip install`` and the test command itself are skipped: they are how you got
here); ``console`` blocks show ``$ command`` lines, each followed by its output, and
the command must print that output, line for line (a line ``...`` stands for any
number of lines; the timing of ``wrote ...: N configurations in T s (R/s end to end)``
is not compared, and numbers agree within 1e-5 relative or 1e-9 absolute: a GPU's float32,
round-off such as ``4.4e-13``); ``python`` blocks run as one script each. ``text`` and ``json``
blocks are formats and layouts, not examples.

Every relative link and every backquoted path into the repository must name a file
that exists (and a heading, for an ``#anchor``).
"""

import re
import shlex
import shutil
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from netsweep_jax.sweep.cli.app import app

ROOT = Path(__file__).resolve().parents[1]
PAGES = [
    "README.md",
    "docs/guide.md",
    "docs/model.md",
    "docs/validation.md",
    "docs/parallelism.md",
    "docs/development.md",
]
DOCS = [*PAGES, "benchmarks/README.md"]
FENCE = re.compile(r"^ *```(\w*)\n(.*?)^ *```", re.S | re.M)
TIMING = re.compile(r" in [\d.]+ s \([\d,.]+/s end to end\)")
# A progress line without a terminal (sweep/cli/progress.py), printed only when a run is slow: not shown.
PROGRESS = re.compile(
    r"^\w+: [\d,]+ of [\d,]+ [\w ]+ \(\d+%\) in \d+ s; (about \d+ s|under a second) left\n", re.M
)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
PATH = re.compile(r"`((?:sweep|kernels|tests|benchmarks|examples|docs)/[\w./-]+?)(?:::\w+)?`")


def blocks(page):
    return [(lang or "sh", body) for lang, body in FENCE.findall((ROOT / page).read_text())]


def commands(line):
    for part in line.split("&&"):
        words = shlex.split(part, comments=True)
        if words and words[0] == "sweep":
            yield words[1:]
        elif words and words[:1] != ["pip"] and words[:3] != ["python", "-m", "pytest"]:
            raise AssertionError(f"command not understood: {part!r}")


def run(args):
    sys.argv = ["sweep", *args]  # as the shell would call it: cubes record their command line
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, f"sweep {shlex.join(args)}\n{r.output}"
    return PROGRESS.sub("", r.output)


def console(body):
    """[(args, shown output lines)] of a console block."""
    out = []
    for line in body.splitlines():
        if line.startswith("$ "):
            words = shlex.split(line[2:])
            assert words[0] == "sweep", line
            out.append((words[1:], []))
        else:
            assert out, f"console block does not start with '$ ': {line!r}"
            out[-1][1].append(line)
    return out


def same(got, want):
    got, want = (TIMING.sub(" in T s (R/s end to end)", s.rstrip()).split() for s in (got, want))
    return len(got) == len(want) and all(g == w or close(g, w) for g, w in zip(got, want))


def close(got, want):
    try:
        g, w = float(got), float(want)
    except ValueError:
        return False
    return abs(g - w) <= max(1e-5 * abs(w), 1e-9)


def assert_shows(shown, output, command):
    got = output.splitlines()
    i, skip = 0, False
    for want in shown:
        if want.strip() == "...":
            skip = True
            continue
        while skip and i < len(got) and not same(got[i], want):
            i += 1
        assert i < len(got) and same(got[i], want), (
            f"sweep {shlex.join(command)}: expected {want!r}\nfull output:\n{output}"
        )
        i, skip = i + 1, False


# Every example block in page order (text and json blocks are formats, not examples), one test each.
EXAMPLES = [
    (page, n, lang, body)
    for page in PAGES
    for n, (lang, body) in enumerate(blocks(page), 1)
    if lang not in ("text", "json")
]


def run_block(page, lang, body):
    """Run one example block as the module docstring says; returns how many examples it held."""
    if lang == "python":
        exec(compile(body, page, "exec"), {})
        return 1
    assert lang in ("sh", "console"), f"{page}: a ```{lang} block is neither an example nor a format"
    count = 0
    if lang == "sh":
        for line in body.splitlines():
            for args in commands(line):
                run(args)
                count += 1
    else:
        for args, shown in console(body):
            assert_shows(shown, run(args), args)
            count += 1
    return count


@pytest.fixture(scope="module")
def examples_directory(tmp_path_factory):
    """The one fresh directory every example runs in, in order, and how far they have run."""
    d = tmp_path_factory.mktemp("examples")
    shutil.copytree(ROOT / "examples", d / "examples")
    return {"dir": d, "next": 0, "ran": dict.fromkeys(PAGES, 0)}


@pytest.mark.parametrize("index", range(len(EXAMPLES)), ids=[f"{p}:{n}" for p, n, _, _ in EXAMPLES])
def test_example_runs_as_written(index, examples_directory, monkeypatch):
    # A block may use what an earlier one wrote: the blocks before this one run first where they have not
    # (one test run alone runs its page's and the earlier pages' blocks before it).
    run_through(examples_directory, index, monkeypatch)


def run_through(state, index, monkeypatch):
    """Run, in the examples' directory, every block up to ``index`` that has not run. An earlier block that
    failed stays failed (its own test): it is not run again."""
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    monkeypatch.chdir(state["dir"])
    while state["next"] <= index:
        page, _, lang, body = EXAMPLES[state["next"]]
        state["next"] += 1
        state["ran"][page] += run_block(page, lang, body)


def test_every_example_ran(examples_directory, monkeypatch):
    run_through(examples_directory, len(EXAMPLES) - 1, monkeypatch)  # those no test before this one ran
    ran = examples_directory["ran"]
    assert examples_directory["next"] == len(EXAMPLES), examples_directory
    assert ran["README.md"] >= 6 and sum(ran.values()) >= 20, ran
    results = examples_directory["dir"] / "results"
    assert (results / "r.h5").exists() and (results / "heat.png").exists()


def test_every_docs_page_is_run():
    assert sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md")) == sorted(PAGES[1:])


def slug(heading):
    """GitHub's anchor for a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page):
    text = FENCE.sub("", (ROOT / page).read_text())
    return {slug(line.lstrip("#")) for line in text.splitlines() if re.match(r"#{1,6} ", line)}


@pytest.mark.parametrize("page", DOCS)
def test_links_and_paths_resolve(page):
    text = FENCE.sub("", (ROOT / page).read_text())
    for target in LINK.findall(text):
        if re.match(r"\w+://|mailto:", target):
            continue
        path, _, anchor = target.partition("#")
        file = (ROOT / page).parent / path if path else ROOT / page
        assert file.exists(), f"{page}: link to {target} names no file"
        if anchor:
            assert anchor in anchors(str(file.resolve().relative_to(ROOT))), (
                f"{page}: no heading for {target}"
            )
    for path in PATH.findall(text):
        assert (ROOT / path).exists(), f"{page}: `{path}` names no file"


@pytest.mark.parametrize(
    "path", ["r.h5", "results/r.h5", "results/fig.png", "results/fit.json", "x.h5.partial"]
)
def test_example_outputs_are_ignored_by_git(path):
    import subprocess

    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    r = subprocess.run(["git", "check-ignore", "-q", path], cwd=ROOT)
    assert r.returncode == 0, f"{path} is not ignored"


def test_guide_lists_every_axis_with_its_bounds():
    from netsweep_jax.sweep.core.axes import NUMERIC_AXES, show

    text = (ROOT / "docs" / "guide.md").read_text()
    for spec in NUMERIC_AXES.values():
        row = next(
            line for line in text.splitlines() if line.startswith(f"| `{spec.option}` | `{spec.name}` |")
        )
        assert f"{show(spec.low)} to {show(spec.high)}" in row, row


def test_guide_lists_every_dim_of_the_cube_in_order():
    from netsweep_jax.sweep.core.schema import DIMS

    text = (ROOT / "docs" / "guide.md").read_text()
    section = text[text.index("## The cube") : text.index("Every dim is present")]
    listed = [line.split("`")[1] for line in section.splitlines() if line.startswith("| `")]
    assert listed == list(DIMS)


def numbers(text):
    return [float(t) for t in re.findall(r"\d+\.\d+(?:e[-+]?\d+)?", text)]


@pytest.mark.parametrize(
    "page,command",
    [
        ("docs/validation.md", "sweep calibrate examples/dlperf_tensorflow.csv"),
        ("docs/validation.md", "sweep grid --model resnet50 --iteration-time 0.353162"),
    ],
)
def test_numbers_quoted_after_an_example_are_its_output(page, command):
    # The prose after an example quotes its output ("At 32 GPUs: 0.859 ..."): each number it quotes must be
    # the output shown, rounded (the output itself is checked against the command by the test above).
    text = (ROOT / page).read_text()
    start = text.index(f"$ {command}")
    end = text.index("```", start)
    shown = numbers(text[start:end].split("\n", 1)[1])  # the output, not the command
    paragraph = text[end + 3 :].strip().split("\n\n")[0]
    quoted = re.findall(r"(?<![\w.])(\d+\.\d{2,})(?!\d)", paragraph)
    assert len(quoted) >= 3, paragraph
    for q in quoted:
        assert any(round(x, len(q.split(".")[1])) == float(q) for x in shown), (
            f"{page}: {q} is not in the output"
        )
