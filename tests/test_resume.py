"""Interrupted sweeps: kill -9 and Ctrl-C keep finished blocks; --resume completes them.

The sweep stops itself at a known block: tests/sweep_driver.py runs the command in a
process of its own and injects the stop through ``run_grid(after_block=...)`` (no
timers, no races).
"""

import fcntl
import os
import signal
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from helpers import (
    GRID,
    blocks_done,
    invoke,
    invoke_interrupted_after,
    invoke_stopped_after,
    one_line_error,
    read_outputs,
    signalled_after,
)

STOP_AFTER = 7  # of 30 blocks


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("clean") / "clean.h5"
    assert invoke("grid", *GRID, "-q", "--out", out).exit_code == 0
    return read_outputs(out)


def assert_same(path, clean):
    for k, v in read_outputs(path).items():
        np.testing.assert_array_equal(v, clean[k])


@pytest.mark.parametrize(
    "sig,code,after",
    [
        (signal.SIGKILL, -9, STOP_AFTER),
        (signal.SIGINT, 130, STOP_AFTER),
        (signal.SIGTERM, 143, STOP_AFTER),
        (signal.SIGINT, 130, 0),
    ],
    ids=["kill-9", "ctrl-c", "sigterm", "ctrl-c-before-any-block"],
)
def test_interrupted_run_resumes_to_the_same_cube(tmp_path, clean_run, sig, code, after):
    out = tmp_path / "r.h5"
    partial = tmp_path / "r.h5.partial"
    r = signalled_after(after, sig, "grid", *GRID, "-q", "--out", out)
    assert r.returncode == code, r.stderr
    if sig != signal.SIGKILL:  # one line, the resume hint, no traceback
        assert r.stderr.strip().splitlines() == [
            f"error: interrupted; finished blocks are kept in {partial}. Finish with the same command plus --resume."
        ]
    assert partial.exists() and not out.exists()
    assert blocks_done(partial) == after  # stopped exactly at the block boundary it was signalled at
    resume = [a for a in GRID if a not in ("--block-configs", "20")]  # block size read from the partial file
    r = invoke("grid", *resume, "-q", "--out", out, "--resume")
    assert r.exit_code == 0, r.output
    assert out.exists() and not partial.exists()
    assert_same(out, clean_run)


def test_command_line_is_recorded_exactly(tmp_path, monkeypatch):
    out = tmp_path / "c.h5"
    # The command line as the console script's process has it (the cube records sys.argv).
    monkeypatch.setattr(sys, "argv", ["sweep", "grid", *GRID, "-q", "--out", str(out)])
    r = invoke("grid", *GRID, "-q", "--out", out)
    assert r.exit_code == 0, r.output
    with h5py.File(out) as f:
        assert f.attrs["command"] == "sweep grid " + " ".join(GRID) + f" -q --out {out}"
    # A resumed run's cube written whole (a plan's, a --reduce's) records the command that makes it from nothing,
    # as a grid's records its first run's (a hunt: it recorded --resume, refused when run again as shown).
    from netsweep_jax.sweep.cli.options import command_line

    monkeypatch.setattr(sys, "argv", ["sweep", "plan", "--model", "llama3-8b", "--resume", "--out", "p.h5"])
    assert command_line() == "sweep plan --model llama3-8b --out p.h5"


def test_resume_refuses_another_grid(tmp_path, monkeypatch):
    out = tmp_path / "r.h5"
    partial = tmp_path / "r.h5.partial"
    invoke_stopped_after(monkeypatch, STOP_AFTER, "grid", *GRID, "-q", "--out", out)  # as if killed there
    assert blocks_done(partial) == STOP_AFTER
    other = [a if a != "1..10" else "1..11" for a in GRID]
    r = invoke("grid", *other, "-q", "--out", out, "--resume")
    assert r.exit_code == 2
    assert (
        "made for another grid, profile or --reduce" in r.output and len(r.output.strip().splitlines()) == 1
    )
    assert partial.exists()  # the interrupted work is not thrown away
    # an option its attributes tell, named (a hunt: "another grid, profile or --reduce" of an --x64)
    for option, said in (
        (["--x64"], "made in float32 where this run computes in float64 (--x64);"),
        (["--vars", "scaling_factor"], "where this run keeps scaling_factor;"),
    ):
        r = invoke("grid", *GRID, *option, "-q", "--out", out, "--resume")
        assert r.exit_code == 2 and said in r.output, r.output
    r = invoke("grid", *GRID, "-q", "--out", out)
    assert r.exit_code == 2 and "pass --resume to finish it" in r.output
    # Resumed in other blocks than it was written in: the option and the value to give, named.
    other = [a if a != "20" else "40" for a in GRID]
    r = invoke("grid", *other, "-q", "--out", out, "--resume")
    assert r.exit_code == 2 and r.output.strip() == (
        f"error: --resume {partial}: written in blocks of 20 configurations where this run cuts 40: rerun with "
        "--block-configs 20"
    ), r.output
    # A file at OUT (a --force run was interrupted): refused before any work, both files kept (was refused
    # after computing every remaining block, saying the file "appeared while this run computed").
    out.write_text("mine")
    r = invoke("grid", *GRID, "-q", "--out", out, "--resume")
    assert r.exit_code == 2 and f"{out} exists beside {partial}" in r.output, r.output
    assert out.read_text() == "mine" and blocks_done(partial) == STOP_AFTER
    # A whole cube has nothing to resume, and says so.
    partial.unlink()
    out.touch()
    r = invoke("grid", *GRID, "-q", "--out", out, "--resume")
    assert (
        r.exit_code == 2
        and f"does not exist; {out} exists (a finished run: --force runs it again)" in r.output
    ), r.output


def test_interrupt_anywhere_in_a_command_is_one_line(monkeypatch, tmp_path):
    import netsweep_jax.sweep.analysis.need  # noqa: F401  (imported now: its module-level names must not see the patch)
    import netsweep_jax.sweep.cli.sweeps as cli_sweeps
    import netsweep_jax.sweep.engine.grid as grid_module

    def stop(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_sweeps, "make_grid_from", stop)  # as if Ctrl-C came while starting up
    r = invoke("grid", *GRID, "-q", "--out", tmp_path / "o.h5")
    assert r.exit_code == 130 and r.output.strip() == "error: interrupted"
    monkeypatch.setattr(grid_module, "resolve_models", stop)
    r = invoke("need", "--target", "0.9", "--solve", "ratio", "--bw", "10")
    assert r.exit_code == 130 and r.output.strip() == "error: interrupted"


def test_a_request_an_interrupted_command_left_stops_no_later_search(monkeypatch):
    # A stop request outlives its command (the CLI reads it as it ends); a search run later in the same process
    # outside a deferred block (the Python API's plan) must not take it for its own.
    from netsweep_jax.sweep.core import interrupts

    monkeypatch.setattr(interrupts, "_requested", [])
    with pytest.raises(interrupts.Interrupted), interrupts.deferred():
        interrupts.request(signal.SIGINT)
        interrupts.raise_if_requested()  # inside: the block boundary stops
    assert interrupts.requested()  # kept for the CLI's last word
    interrupts.raise_if_requested()  # outside: nothing to stop


def test_a_run_without_out_names_the_out_that_finishes_it(tmp_path, monkeypatch):
    # Each run's default --out is stamped anew, so "the same command plus --resume" looked for another file.
    from netsweep_jax.sweep.io import job

    monkeypatch.chdir(tmp_path)
    r = invoke_interrupted_after(monkeypatch, 1, signal.SIGINT, "grid", *GRID, "-q")
    (partial,) = Path("results").glob("*.h5.partial")
    cube = partial.with_name(partial.name.removesuffix(".partial"))
    assert r.exit_code == 130 and r.output.rstrip().endswith(f"plus --resume --out {cube}."), r.output
    later = Path("results") / f"{cube.stem.rsplit('-', 2)[0]}-20990101-000000.h5"  # the rerun's own stamp
    monkeypatch.setattr(job, "default_out", lambda grid, directory="results": later)
    r = invoke("grid", *GRID, "-q", "--resume")
    assert r.exit_code == 2 and f"add --out {cube})" in r.output, r.output
    assert invoke("grid", *GRID, "-q", "--resume", "--out", cube).exit_code == 0 and cube.exists()
    # A refused --resume leaves no results/ of its own behind.
    monkeypatch.chdir(Path("results"))
    r = invoke("grid", *GRID, "-q", "--resume")  # said as such (it named the default --out's directory)
    assert r.exit_code == 2 and "finds nothing to resume" in r.output and not Path("results").exists()


def test_an_interrupted_forced_run_says_a_way_to_finish_that_is_taken(tmp_path, monkeypatch, clean_run):
    # A hunt followed "the same command plus --resume" after a --force rerun into two refusals: --resume and
    # --force cannot go together, and a resumed run never replaces the finished cube the rerun was to replace.
    out = tmp_path / "keep.h5"
    out.write_bytes(b"the cube --force was to replace")
    r = invoke_interrupted_after(monkeypatch, 1, signal.SIGINT, "grid", *GRID, "-q", "--out", out, "--force")
    assert r.exit_code == 130 and r.output.rstrip().endswith(
        f"Finish with {out} moved away (a resumed run never replaces a file), the same command with --resume "
        "in place of --force."
    ), r.output
    assert out.read_bytes() == b"the cube --force was to replace"  # kept until the run is finished
    out.rename(tmp_path / "old.h5")
    assert invoke("grid", *GRID, "-q", "--out", out, "--resume").exit_code == 0
    assert_same(out, clean_run)


def test_a_partial_cube_open_in_a_notebook_is_said_held_not_unreadable(tmp_path, monkeypatch, clean_run):
    # A hunt: sweep.open_cube on OUT.partial (as the docs invite) holds HDF5's shared lock; --resume then called the
    # file unreadable and advised --force, which threw its finished blocks away. Held is said as held, --resume
    # goes on once the reader closes it, and a plan's checkpoint or a grid being written is said alike.
    from netsweep_jax import sweep
    from netsweep_jax.sweep.io.paths import holder

    out = tmp_path / "r.h5"
    partial = tmp_path / "r.h5.partial"
    invoke_stopped_after(monkeypatch, STOP_AFTER, "grid", *GRID, "-q", "--out", out)
    with pytest.warns(UserWarning) as said, sweep.open_cube(partial):
        assert holder(partial) == "reading"
        r = invoke("grid", *GRID, "-q", "--out", out, "--resume")
        line = one_line_error(r)
        assert (
            "open for reading" in line and "close it there, then run again" in line and "--force" not in line
        )
        assert blocks_done(partial) == STOP_AFTER
    # the warning at this line, the user's, not netsweep's own (a hunt: it named sweep/core/keywords.py)
    assert [w.filename for w in said] == [__file__], [(w.filename, w.lineno) for w in said]
    assert holder(partial) is None
    assert invoke("grid", *GRID, "-q", "--out", out, "--resume").exit_code == 0
    assert_same(out, clean_run)
    # A writer's lock (HDF5's exclusive flock, as a running sweep holds it): the API says so, as the CLI does.
    fd = os.open(out, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        assert holder(out) == "writing"
        with pytest.raises(sweep.InputError, match="open for writing .* a sweep still running"):
            sweep.open_cube(out)
    finally:
        os.close(fd)


def test_a_cube_renamed_while_show_reads_it_is_no_such_cube_not_damaged(tmp_path, capsys):
    # A hunt: `sweep show w.h5.partial --verify` at the instant the run renamed it to w.h5 printed "damaged (HDF5
    # cannot read it: No such file or directory)"; a user told damaged may delete the finished cube beside it.
    import typer

    from netsweep_jax.sweep.cli.cubes import _held_or_damaged

    with pytest.raises(typer.Exit) as stopped:
        _held_or_damaged(tmp_path / "w.h5.partial", "[Errno 2] Unable to synchronously open file")
    said = capsys.readouterr().err
    assert (
        stopped.value.exit_code == 2
        and "no such cube (it went away while read" in said
        and "damaged" not in said
    )


def test_a_lock_probe_that_cannot_tell_says_nothing_is_held(tmp_path, monkeypatch):
    # A review: NFSv4 refuses an exclusive flock on a file open to read (EBADF), which escaped holder() as a
    # traceback from every --resume or --force beside an OUT.partial there.
    import errno

    from netsweep_jax.sweep.io import paths

    path = tmp_path / "c.h5.partial"
    path.write_bytes(b"x")
    real = fcntl.flock

    def nfs(fd, op):
        if op & fcntl.LOCK_EX:
            raise OSError(errno.EBADF, "Bad file descriptor")
        return real(fd, op)

    monkeypatch.setattr(paths.fcntl, "flock", nfs)
    assert paths.holder(path) is None and not paths.in_use(path)
