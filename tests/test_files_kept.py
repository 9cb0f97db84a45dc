"""Issue #42's files kept and every cube checkable: a ``--reduce`` sweep and a plan keep a file that appears at
``--out`` while they run (their result waits in ``OUT.partial`` for ``--resume``), hold their checkpoint so a
second run on the same ``--out`` is refused (``--force`` and ``--resume`` too), and every cube netsweep writes
is verifiable (``show --verify``) and verified when ``select`` or ``plot`` reads it.

Runs are stopped or raced at a known block by an in-process hook (``run_grid(after_block=...)``,
``PlanCheckpoint.keep``), never by a timer; the grids are tiny.
"""

import functools

import h5py
import pytest

from helpers import PLAN, invoke
from netsweep_jax.sweep.io import job
from netsweep_jax.sweep.io.plan_checkpoint import PlanCheckpoint

REDUCED = ["grid", "--model", "resnet50", "--bw", "1..20", "--ratio", "1..6", "--reduce", "max:ratio",
           "--block-configs", "8", "-q"]  # fmt: skip  # 15 blocks: checkpoints are written every 16


def one_error(r, code):
    """The one ``error:`` line of a refused run (exit code ``code``)."""
    lines = [line for line in r.output.splitlines() if line.startswith("error: ")]
    assert r.exit_code == code and len(lines) == 1 and "Traceback" not in r.output, r.output
    return lines[0]


def reduced_with(monkeypatch, at_block, action, *args):
    """``sweep grid ARGS`` (a reduced sweep) in this process, calling ``action()`` once its block ``at_block`` is
    accumulated."""
    count = []

    def after_block(block):
        count.append(block.index)
        if len(count) == at_block:
            action()

    with monkeypatch.context() as m:
        m.setattr(job, "run_grid", functools.partial(job.run_grid, after_block=after_block))
        return invoke(*args)


def flip_a_byte(path, name, index=0):
    """Change one byte of dataset ``name``'s data (a contiguous dataset, or chunk ``index`` of a chunked one)."""
    with h5py.File(path, "r") as f:
        ds = f[name]
        offset = ds.id.get_chunk_info(index).byte_offset if ds.chunks else ds.id.get_offset()
    with open(path, "r+b") as fh:
        fh.seek(offset + 1)
        byte = fh.read(1)[0]
        fh.seek(offset + 1)
        fh.write(bytes([byte ^ 0x01]))


def test_a_reduced_sweep_keeps_a_file_that_appeared_at_out(tmp_path, monkeypatch):
    out, partial = tmp_path / "r.h5", tmp_path / "r.h5.partial"
    r = reduced_with(monkeypatch, 3, lambda: out.write_text("the user's"), *REDUCED, "--out", out)
    line = one_error(r, 2)
    assert f"{out}: file exists; pass --force" in line and f"kept in {partial}" in line
    assert out.read_text() == "the user's" and partial.exists()
    out.rename(tmp_path / "mine.txt")
    r = invoke(*REDUCED, "--out", out, "--resume")  # the kept result, written at once
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.txt", "r.h5"]
    assert invoke("show", "--verify", out).exit_code == 0


def test_a_live_reduced_sweep_holds_its_checkpoint(tmp_path, monkeypatch):
    out, partial = tmp_path / "r.h5", tmp_path / "r.h5.partial"
    refusals = []

    def second_runs():  # before any checkpoint is written (block 1 of 15)
        for extra in ([], ["--force"], ["--resume"]):
            refusals.append(one_error(invoke(*REDUCED, "--out", out, *extra), 2))
        assert partial.exists() and not out.exists()

    r = reduced_with(monkeypatch, 1, second_runs, *REDUCED, "--out", out)
    assert r.exit_code == 0, r.output
    assert len(refusals) == 3 and all("another run is writing" in line for line in refusals), refusals
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.h5"]


def plan_with(monkeypatch, action, *args):
    """``sweep plan ARGS`` in this process, calling ``action()`` once its first block is kept."""
    kept, calls = PlanCheckpoint.keep, []

    def keep(self, index, done, state):
        kept(self, index, done, state)
        calls.append(index)
        if len(calls) == 1:
            action()

    with monkeypatch.context() as m:
        m.setattr(PlanCheckpoint, "keep", keep)
        return invoke(*args)


def test_a_live_plan_holds_its_checkpoint(tmp_path, monkeypatch):
    out = tmp_path / "p.h5"
    refusals = []

    def second_runs():
        for extra in (["--force"], ["--resume"]):
            refusals.append(one_error(invoke(*PLAN, "--out", out, *extra), 2))

    r = plan_with(monkeypatch, second_runs, *PLAN, "--out", out)
    assert r.exit_code == 0, r.output
    assert len(refusals) == 2 and all("another run is writing" in line for line in refusals), refusals
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.h5"]


def test_a_plan_keeps_a_file_that_appeared_at_out_and_its_result(tmp_path, monkeypatch):
    out, partial = tmp_path / "p.h5", tmp_path / "p.h5.partial"
    r = plan_with(monkeypatch, lambda: out.write_text("the user's"), *PLAN, "--out", out)
    assert f"kept in {partial}" in one_error(r, 2)
    assert out.read_text() == "the user's" and partial.exists()
    out.unlink()
    r = invoke(*PLAN, "--out", out, "--resume")
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.h5"]


@pytest.fixture(scope="module")
def cubes(tmp_path_factory):
    """A sweep's cube (4 blocks), a reduced cube and a plan cube, each freshly written."""
    d = tmp_path_factory.mktemp("cubes")
    grid = ["grid", "--model", "resnet50", "--bw", "10,25", "--ratio", "1..4", "--block-configs", "2", "-q"]
    made = {"grid": grid, "reduced": REDUCED, "plan": PLAN}
    for name, args in made.items():
        assert invoke(*args, "--out", d / f"{name}.h5").exit_code == 0
    return d


@pytest.mark.parametrize("kind,variable", [("reduced", "scaling_factor"), ("plan", "tokens_per_s")])
def test_a_cube_written_whole_is_verifiable_and_verified(cubes, tmp_path, kind, variable):
    path = tmp_path / f"{kind}.h5"
    path.write_bytes((cubes / f"{kind}.h5").read_bytes())
    r = invoke("show", "--verify", path)
    assert r.exit_code == 0 and "verify: written whole, all intact" in r.output, r.output
    flip_a_byte(path, variable)
    r = invoke("show", "--verify", path)
    assert r.exit_code == 1 and f"{variable} changed since it was written" in r.output, r.output
    assert "damaged" in one_error(invoke("select", path), 1)


def test_select_and_plot_refuse_a_damaged_block(cubes, tmp_path):
    path = tmp_path / "g.h5"
    path.write_bytes((cubes / "grid.h5").read_bytes())
    flip_a_byte(path, "scaling_factor", index=0)  # the block of bandwidth 10, ratio 1 and 2
    for args in (["select", path, "--csv"], ["select", path, "--bw", "10"]):
        assert "damaged (1 block of what was asked for" in one_error(invoke(*args), 1)
    figure = tmp_path / "f.png"
    assert "damaged" in one_error(
        invoke("plot", path, "--x", "ratio", "--sel", "bandwidth=10", "--out", figure), 1
    )
    assert not figure.exists()
    r = invoke("select", path, "--bw", "25", "--csv")  # blocks it does not read: shown
    assert r.exit_code == 0 and len(r.output.splitlines()) == 5, r.output


def test_a_report_directory_the_file_system_will_not_make_is_a_refused_write():
    # /proc passes the access check as root yet makes nothing: a fault in one line (exit 1), not a traceback.
    from netsweep_jax.sweep.core.errors import WriteFailed
    from netsweep_jax.sweep.io.paths import report_directory

    with pytest.raises(WriteFailed, match="/proc/netsweep-report: cannot be"):
        report_directory("/proc/netsweep-report", ["REPORT.md"])


def test_the_api_opens_a_cube_only_as_written(cubes, tmp_path):
    # sweep.open_cube checks what select and plot check: a flipped byte in a block-written cube's data or in a
    # plan cube (written whole) is refused in one line; verify=False opens it as it is.
    import netsweep_jax.sweep as sweep
    from netsweep_jax.sweep.core.errors import Damaged

    for kind, variable in (("grid", "scaling_factor"), ("plan", "tokens_per_s")):
        path = tmp_path / f"{kind}.h5"
        path.write_bytes((cubes / f"{kind}.h5").read_bytes())
        with sweep.open_cube(path) as ds:
            assert variable in ds
        flip_a_byte(path, variable, index=0)
        with pytest.raises(Damaged, match=f"{path}: damaged"):
            sweep.open_cube(path)
        with sweep.open_cube(path, verify=False) as ds:
            assert variable in ds


def test_folders_made_for_an_output_are_counted_as_this_runs_alone(tmp_path, monkeypatch):
    """make_folders returns the folders it made, innermost first; one another process made meanwhile (two
    processes of --distributed making results/ at once) is not an error and not counted (never removed)."""
    from pathlib import Path

    from netsweep_jax.sweep.io.paths import make_folders, remove_folders

    deep = tmp_path / "a" / "b" / "c"
    assert make_folders(deep) == [deep, deep.parent, deep.parent.parent] and deep.is_dir()
    assert make_folders(deep) == []
    remove_folders([deep, deep.parent, deep.parent.parent])
    assert not (tmp_path / "a").exists()
    mkdir = Path.mkdir

    def raced(self, *args, **kwargs):  # another process makes "a" first
        if self == tmp_path / "a":
            mkdir(self)
        return mkdir(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", raced)
    assert make_folders(deep) == [deep, deep.parent] and deep.is_dir()


def test_a_run_that_holds_its_checkpoint_removes_the_half_written_ones_a_killed_run_left(tmp_path):
    # A hunt: kill -9 while a --reduce sweep wrote a new checkpoint left OUT.partial.<random>.partial for good
    # (1 of 4 kills); a resume held the output and went on beside it.
    from netsweep_jax.sweep.io.paths import Claim, new_temporary

    partial = tmp_path / "o.h5.partial"
    partial.write_bytes(b"")
    stale = new_temporary(partial)
    others = [tmp_path / "o.h5.partial.notmine.partial", tmp_path / "o.h5.partial.0badc0de.partial.bak"]
    for path in others:
        path.write_text("the user's")
    (tmp_path / "o.h5.partial.0badf00d.partial").symlink_to(others[0])
    claim = Claim(partial)
    claim.take(new=False)
    claim.release()
    assert not stale.exists() and all(p.read_text() == "the user's" for p in others)
    assert (tmp_path / "o.h5.partial.0badf00d.partial").is_symlink()


def test_runs_of_one_second_without_out_each_get_a_file(tmp_path, monkeypatch):
    # A hunt: two runs in one second were given one default name, and the second was refused "--out ...: file
    # exists; pass --force", an --out never given.
    import datetime

    from netsweep_jax.sweep.io import paths

    class Frozen(datetime.datetime):
        @classmethod
        def now(cls, tz=None):
            return cls(2026, 12, 6, 10, 49, 26)

    monkeypatch.setattr(paths.datetime, "datetime", Frozen)
    first = paths.stamped("fabric", ".json", tmp_path)
    assert first.name == "fabric-20261206-104926.json" and paths.stamped("fabric", ".json", tmp_path) == first
    first.write_text("{}")
    second = paths.stamped("fabric", ".json", tmp_path)
    paths.partial_path(second).write_text("")  # a run still writing it
    assert second.name == "fabric-20261206-104926_2.json"
    assert paths.stamped("fabric", ".json", tmp_path).name == "fabric-20261206-104926_3.json"
    # never hidden: a profile file named .csv named its cube .csv-... (a hunt)
    assert paths.stamped(".csv", ".h5", tmp_path).name == "csv-20261206-104926.h5"
    assert paths.stamped("..", ".h5", tmp_path).name == "sweep-20261206-104926.h5"


def test_a_report_replaced_with_force_that_fails_is_put_back_whole(tmp_path):
    # A hunt: `paper --force` interrupted left the new cube and first figure beside the old REPORT.md, which
    # described a cube it was not made from. Every file the failed block replaced is as it was; a block that
    # succeeds leaves no link behind.
    from netsweep_jax.sweep.io.paths import write_report_files

    def stopped(path):
        raise KeyboardInterrupt

    write_report_files(tmp_path, {"a.txt": "old a", "b.txt": "old b"})
    with pytest.raises(KeyboardInterrupt):
        write_report_files(tmp_path, {"a.txt": "new a", "c.txt": "new c", "b.txt": stopped}, force=True)
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == {"a.txt": "old a", "b.txt": "old b"}
    write_report_files(tmp_path, {"a.txt": "new a", "b.txt": "new b"}, force=True)
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == {"a.txt": "new a", "b.txt": "new b"}
    # a review: a file made and then replaced in one block is gone after it fails, and a file set aside but
    # never replaced (stopped between the two) leaves no link behind
    from netsweep_jax.sweep.io.paths import all_or_nothing, set_aside, write_atomically

    with pytest.raises(KeyboardInterrupt), all_or_nothing(tmp_path):
        write_atomically(tmp_path / "x.txt", lambda p: p.write_text("first"), overwrite=False)
        write_atomically(tmp_path / "x.txt", lambda p: p.write_text("second"))
        set_aside(tmp_path / "a.txt")
        raise KeyboardInterrupt
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == {"a.txt": "new a", "b.txt": "new b"}


def test_an_output_that_is_a_file_the_command_reads_is_refused_even_with_force(tmp_path):
    # A hunt: validate's --out holding its own measurements as predictions.csv, a fabric file over its nccl-tests
    # log, a profile over its trace: refused as "file exists; pass --force", and --force then replaced the data
    # read with what was made of it. Refused with or without --force, by any name (a link too), nothing written.
    import os
    import shutil
    from pathlib import Path

    examples = Path(__file__).resolve().parents[1] / "examples"
    logs = Path(__file__).resolve().parent / "data" / "nccl-tests"
    runs = tmp_path / "predictions.csv"
    shutil.copy(examples / "resnet50_measured.csv", runs)
    log = tmp_path / "ar.json"
    shutil.copy(logs / "all_reduce_perf-2x8.log", log)
    llm_runs = (
        tmp_path / "runs.json"
    )  # a runs file under any name (a review: calibrate wrote its fit over one)
    shutil.copy(examples.parent / "sweep" / "data" / "llm_runs.csv", llm_runs)
    trace = tmp_path / "t.json"
    shutil.copy(examples / "tiny.trace.json", trace)
    os.symlink(trace, tmp_path / "also.json")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    cases = [
        (["validate", runs, "--out", tmp_path], "predictions.csv: the measurements file this command reads"),
        (
            ["calibrate", "--nccl-tests", log, "--nics-per-node", "8", "--bw", "400", "--out", log],
            "the nccl-tests log",
        ),
        (
            ["profile", "import", tmp_path / "also.json", "--out", trace],
            "t.json: the trace this command reads",
        ),
        (["calibrate", llm_runs, "--out", llm_runs], "runs.json: the runs file this command reads"),
    ]
    for args, said in cases:
        for force in ([], ["--force"]):
            line = one_error(invoke(*args, *force), 2)
            assert said in line and line.endswith("give another --out"), line
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


@pytest.mark.parametrize("error", [ValueError, RuntimeError])
def test_a_cube_the_file_system_refuses_as_it_is_made_is_one_line_and_leaves_nothing(
    tmp_path, monkeypatch, error
):
    # A hunt: under a file-size limit HDF5 refused to reserve the cube's chunks with a ValueError: a traceback,
    # then a crash, and a truncated OUT.partial that --resume and show refused; a review: its flush, with a
    # RuntimeError. As h5py says it:
    from netsweep_jax.sweep.io import cube

    def refused(*_):
        raise error("Unable to synchronously create dataset (file write failed: time = ..., errno = 27)")

    monkeypatch.setattr(cube, "_laid_out", refused)
    out = tmp_path / "g.h5"
    r = invoke("grid", "--model", "resnet50", "--bw", "10", "--out", out)
    assert r.exit_code == 1 and r.output.strip().splitlines()[-1] == (
        f"error: {out}: the file system refused the cube as it was made (Unable to synchronously create dataset: "
        "a full disk or a file-size limit?); nothing was written"
    ), r.output
    assert list(tmp_path.iterdir()) == []
