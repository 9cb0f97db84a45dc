"""Never touch what is not ours: a user's files beside an output (a report, ``OUT.partial``, links, a
checkpoint's neighbours) are never overwritten, deleted or written through; damaged files are called damaged;
a refusal leaves nothing behind; a run that loses a race for ``--out`` says so."""

import contextlib
import os
import resource
import signal
import sys
from pathlib import Path

import h5py
import pytest

from helpers import invoke
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.io import cube, integrity, job
from netsweep_jax.sweep.io.paths import write_atomically

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
TINY = ["--bw", "1,2", "--ratio", "1..3", "-q"]  # six configurations, one block
REDUCED = [
    "--bw",
    "1..4",
    "--ratio",
    "1..3",
    "--nodes",
    "2,4",
    "--collective",
    "ring,tree",
    "--reduce",
    "max:ratio",
    "--block-configs",
    "4",
    "-q",
]  # twelve blocks


run_grid_original = job.run_grid


def stop(count):
    """An ``after_block`` hook: Ctrl-C once ``count`` blocks are written."""
    done = []

    def after_block(block):
        done.append(block)
        if len(done) == count:
            raise KeyboardInterrupt

    return after_block


def stopped(monkeypatch, count, *args):
    """``sweep ARGS``, interrupted once ``count`` blocks are written."""
    with monkeypatch.context() as m:
        m.setattr(job, "run_grid", lambda *a, **k: run_grid_original(*a, after_block=stop(count), **k))
        return invoke(*args)


def one_line(r, code=2):
    assert r.exit_code == code and len(r.output.strip().splitlines()) == 1, r.output
    return r.output


def precious(tmp_path, name="precious.txt"):
    path = tmp_path / name
    path.write_text("the user's")
    return path


# --- 1. report directories: validate, compare, paper -------------------------------------------------------

REPORTS = {
    "validate": (["validate"], ["measured_vs_predicted.png", "predictions.csv", "REPORT.md"]),
    "compare": (
        ["compare", "--model", "resnet50", "--bw", "10", "--compressor", "int8"],
        ["compare.csv", "speedups.png", "REPORT.md"],
    ),
    "paper": (["paper"], ["paper.h5", "scaling_vs_bandwidth.png", "scaling_vs_ratio.png", "REPORT.md"]),
}


@pytest.mark.parametrize("command", REPORTS)
def test_a_report_never_overwrites_a_users_file(tmp_path, command):
    args, names = REPORTS[command]
    for name in names:  # each of the files it writes, alone, is enough to refuse (before any work)
        out = tmp_path / name.replace(".", "_")
        out.mkdir()
        mine = precious(out, name)
        r = invoke(*args, "--out", out)
        assert f"{mine}: file exists; pass --force" in one_line(r)
        assert mine.read_text() == "the user's" and sorted(p.name for p in out.iterdir()) == [name]


@pytest.mark.parametrize("command", REPORTS)
def test_a_link_or_directory_in_a_report_directory_is_refused_even_with_force(tmp_path, command):
    args, names = REPORTS[command]
    target = precious(tmp_path)
    for kind in ("link", "directory"):
        out = tmp_path / kind
        out.mkdir()
        if kind == "link":
            (out / "REPORT.md").symlink_to(target)
        else:
            (out / "REPORT.md").mkdir()
        r = invoke(*args, "--out", out, "--force")
        assert f"a {kind}; netsweep writes and replaces regular files only" in one_line(r)
        assert [p.name for p in out.iterdir()] == ["REPORT.md"]  # nothing written first (no figure, no CSV)
    assert target.read_text() == "the user's" and (tmp_path / "link" / "REPORT.md").is_symlink()


def test_compare_force_replaces_its_own_files_only(tmp_path):
    args, names = REPORTS["compare"]
    out = tmp_path / "o"
    out.mkdir()
    old = precious(out, "REPORT.md")
    notes = precious(out, "notes.txt")
    r = invoke(*args, "--out", out, "--force")
    assert r.exit_code == 0, r.output
    assert (
        old.read_text().startswith("# Fix the transport or compress?") and notes.read_text() == "the user's"
    )
    assert sorted(p.name for p in out.iterdir()) == sorted(names + ["notes.txt"])


# --- 2. files written through a temporary file: never a user's OUT.partial, never through a link -------------


@pytest.mark.parametrize("kind", ["file", "hard link", "symlink"])
def test_a_users_out_partial_is_never_deleted_or_written_through(tmp_path, kind):
    out = tmp_path / "tiny.json"
    partial = tmp_path / "tiny.json.partial"
    target = precious(tmp_path)
    if kind == "file":
        partial.write_text("the user's")
    elif kind == "hard link":
        os.link(target, partial)
    else:
        partial.symlink_to(target)
    r = invoke("profile", "import", EXAMPLES / "tiny.trace.json", "--out", out)
    assert r.exit_code == 0, r.output
    assert out.read_text().startswith("{") and partial.read_text() == "the user's"
    assert target.read_text() == "the user's" and partial.is_symlink() == (kind == "symlink")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        {"tiny.json", "tiny.json.partial", target.name}
    )


def test_write_atomically_leaves_nothing_on_failure_and_replaces_no_link(tmp_path):
    out = tmp_path / "o.txt"
    partial = precious(tmp_path, "o.txt.partial")

    def broken(path):
        path.write_text("half")
        raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError):
        write_atomically(out, broken)
    assert (
        sorted(p.name for p in tmp_path.iterdir()) == ["o.txt.partial"]
        and partial.read_text() == "the user's"
    )
    link_target = precious(tmp_path)
    out.symlink_to(link_target)
    with pytest.raises(InputError, match="a link"):
        write_atomically(out, lambda p: p.write_text("new"))
    assert out.is_symlink() and link_target.read_text() == "the user's"
    out.unlink()
    out.write_text("theirs")
    with pytest.raises(InputError, match="file exists"):  # a file that appeared while this one was computed
        write_atomically(out, lambda p: p.write_text("new"), overwrite=False)
    assert out.read_text() == "theirs" and len(list(tmp_path.iterdir())) == 3


# --- 3. --reduce: its temporary files and its checkpoint ---------------------------------------------------


def test_reduce_never_follows_or_deletes_its_neighbours(tmp_path, monkeypatch):
    out = tmp_path / "r.h5"
    target = precious(tmp_path)
    (tmp_path / "r.h5.partial.tmp").symlink_to(target)
    mine = precious(tmp_path, "r.h5.reduced.tmp")
    r = stopped(monkeypatch, 5, "grid", *REDUCED, "--out", out)  # the checkpoint is written as it stops
    assert r.exit_code == 130 and (tmp_path / "r.h5.partial").exists(), r.output
    assert invoke("grid", *REDUCED, "--out", out, "--resume").exit_code == 0
    assert target.read_text() == "the user's" and (tmp_path / "r.h5.partial.tmp").is_symlink()
    assert mine.read_text() == "the user's" and out.exists() and not (tmp_path / "r.h5.partial").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "precious.txt",
        "r.h5",
        "r.h5.partial.tmp",
        "r.h5.reduced.tmp",
    ]


def test_a_flipped_byte_in_the_reduce_checkpoint_is_refused_not_resumed(tmp_path, monkeypatch):
    out = tmp_path / "r.h5"
    r = stopped(monkeypatch, 5, "grid", *REDUCED, "--out", out)
    assert r.exit_code == 130 and "finished blocks are kept in" in r.output, r.output
    partial = tmp_path / "r.h5.partial"
    with h5py.File(partial, "r") as f:
        offset = f["scaling_factor/value"].id.get_offset()
    with open(partial, "r+b") as fh:
        fh.seek(offset)
        fh.write(b"\x55" * 8)
    before = partial.read_bytes()
    r = invoke("grid", *REDUCED, "--out", out, "--resume")
    assert "checkpoint is damaged" in one_line(r) and not out.exists() and partial.read_bytes() == before
    assert invoke("grid", *REDUCED, "--out", out, "--force").exit_code == 0  # --force starts over


# --- 4. show --verify and select on damaged files ------------------------------------------------------------


@pytest.fixture(scope="module")
def small_cube(tmp_path_factory):
    out = tmp_path_factory.mktemp("cube") / "c.h5"
    assert invoke("grid", *TINY, "--out", out).exit_code == 0
    return out


def flipped(cube_path, tmp_path, name):
    """A copy of the cube with one bit of the dataset ``name`` flipped."""
    copy = tmp_path / f"{name.replace('/', '_')}.h5"
    copy.write_bytes(cube_path.read_bytes())
    with h5py.File(copy, "r") as f:
        offset = f[name].id.get_offset() + 3
    with open(copy, "r+b") as fh:
        fh.seek(offset)
        byte = fh.read(1)[0]
        fh.seek(offset)
        fh.write(bytes([byte ^ 0x10]))
    return copy


@pytest.mark.parametrize(
    "name",
    [
        "bandwidth",
        "ratio",
        "profiles/resnet50/grad_bytes",
        "profiles/resnet50/backward_wait",
        "reduce_cost/seconds",
    ],
)
def test_show_verify_finds_a_flipped_coordinate_or_profile_value(small_cube, tmp_path, name):
    assert invoke("show", small_cube, "--verify").output.endswith("all intact\n")
    r = invoke("show", flipped(small_cube, tmp_path, name), "--verify")
    assert r.exit_code == 1 and f"{name} changed since the cube was made" in r.output, r.output


def test_show_verify_checks_the_recorded_profile_hash(small_cube, tmp_path):
    copy = tmp_path / "c.h5"
    copy.write_bytes(small_cube.read_bytes())
    with h5py.File(copy, "r+") as f:
        f["profiles/resnet50"].attrs["sha256"] = "0" * 64
    r = invoke("show", copy, "--verify")
    assert r.exit_code == 1 and "profiles/resnet50@attrs changed" in r.output, r.output


def test_damaged_metadata_is_one_line_and_exit_code_1(small_cube, tmp_path):
    copy = tmp_path / "c.h5"
    copy.write_bytes(small_cube.read_bytes())
    with open(copy, "r+b") as fh:  # the root group's symbol table: HDF5 cannot list the file's objects
        fh.seek(194)
        fh.write(b"\xff" * 8)
    figure = tmp_path / "f.png"
    for args in (
        ["show", copy, "--verify"],
        ["show", copy],
        ["select", copy],
        ["plot", copy, "--x", "bandwidth", "--out", figure],
    ):
        assert "damaged" in one_line(invoke(*args), code=1)
    assert not figure.exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the forked probe runs on Linux only")
def test_a_cube_whose_metadata_crashes_hdf5_is_called_damaged(small_cube, tmp_path, monkeypatch):
    # #27: one byte of the small cube's object headers made `sweep show` die of a segmentation fault inside
    # HDF5 (exit code 139, nothing said). Each reader now walks the metadata in a forked child first.
    copy = tmp_path / "c.h5"
    data = bytearray(small_cube.read_bytes())
    data[993] ^= 0xFF
    copy.write_bytes(bytes(data))
    figure = tmp_path / "f.png"
    for args in (["show", copy], ["select", copy], ["plot", copy, "--x", "bandwidth", "--out", figure]):
        assert "damaged" in one_line(invoke(*args), code=1)
    assert not figure.exists()
    # The probe: a child killed by a signal is a crash; one that raises, or reads, is not.
    monkeypatch.setattr(integrity, "damage", lambda path: os.kill(os.getpid(), signal.SIGSEGV))
    assert integrity.crashes_hdf5(small_cube)
    monkeypatch.setattr(integrity, "damage", lambda path: 1 / 0)
    assert not integrity.crashes_hdf5(small_cube)
    monkeypatch.undo()
    assert not integrity.crashes_hdf5(small_cube) and not any(tmp_path.glob("core*"))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the forked probe runs on Linux only")
@pytest.mark.parametrize("handle", [True, False], ids=["process-handle", "polled"])
def test_the_probe_waits_for_its_child_on_a_process_handle_or_by_polling(small_cube, monkeypatch, handle):
    # The parent waits on the child's process file descriptor (woken as it ends), or, where the kernel or the
    # Python has none, polls: either way a crash is a crash, a read is none, and a child still reading at the
    # timeout is stopped and taken as no crash (the read goes on in the parent as it would).
    def no_handle(pid):
        raise OSError(38, "Function not implemented")

    if not handle:
        monkeypatch.setattr(os, "pidfd_open", no_handle)
    monkeypatch.setattr(integrity, "damage", lambda path: os.kill(os.getpid(), signal.SIGSEGV))
    assert integrity.crashes_hdf5(small_cube)
    monkeypatch.setattr(integrity, "damage", lambda path: None)
    assert not integrity.crashes_hdf5(small_cube)
    monkeypatch.setattr(integrity, "PROBE_TIMEOUT_S", 0.05)
    monkeypatch.setattr(integrity, "damage", lambda path: signal.pause())  # never ends on its own
    assert not integrity.crashes_hdf5(small_cube)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the forked probe runs on Linux only")
def test_the_probe_waits_past_1023_open_files_and_never_leaves_its_child(small_cube, monkeypatch):
    # A review: select() refused a process descriptor past 1023 (ValueError: a traceback out of show, the child
    # left running); and a wait interrupted (Ctrl-C) left the child running.
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if min(hard, 4096) < 1100:
        pytest.skip(f"this process may open {hard} files, fewer than the 1,100 the case needs")
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        assert not integrity.crashes_hdf5(small_cube)
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    children = []

    def interrupted(pid, timeout_s):
        children.append(pid)
        raise KeyboardInterrupt

    monkeypatch.setattr(integrity, "_child_status", interrupted)
    monkeypatch.setattr(integrity, "damage", lambda path: signal.pause())
    with pytest.raises(KeyboardInterrupt):
        integrity.crashes_hdf5(small_cube)
    with pytest.raises(ChildProcessError):  # stopped and reaped: no such child
        os.waitpid(children[0], os.WNOHANG)


def test_a_truncated_cube_is_damaged_for_every_reader_and_a_non_hdf5_file_is_bad_input(small_cube, tmp_path):
    cut, text, figure = tmp_path / "cut.h5", tmp_path / "text.h5", tmp_path / "f.png"
    cut.write_bytes(small_cube.read_bytes()[:3000])
    text.write_text("bandwidth,scaling_factor\n")
    for args in (
        ["show", "{}"],
        ["select", "{}", "--bw", "10"],
        ["plot", "{}", "--x", "bandwidth", "--out", str(figure)],
    ):
        assert "damaged (HDF5 cannot read it: " in one_line(invoke(*(a.format(cut) for a in args)), code=1)
        assert "not a readable HDF5 cube" in one_line(invoke(*(a.format(text) for a in args)), code=2)
    assert not figure.exists()


# --- 5. a refusal found late leaves nothing behind -----------------------------------------------------------


@pytest.mark.parametrize("extra", [[], ["--reduce", "max:ratio"]], ids=["cube", "reduce"])
def test_a_late_refusal_leaves_no_partial_file(tmp_path, extra):
    out = tmp_path / "o.h5"
    r = invoke("grid", *TINY, *extra, "--bucketing", "fsdp", "--out", out)
    assert "--bucketing fsdp: FSDP needs forward times per tensor, and resnet50's" in one_line(r)
    assert list(tmp_path.iterdir()) == []
    assert invoke("grid", *TINY, *extra, "--out", out).exit_code == 0  # the next correct run is not refused


def test_a_late_refusal_leaves_no_empty_default_directory(tmp_path, monkeypatch):
    # #27: a refusal found as the sweep starts left an empty results/ behind.
    monkeypatch.chdir(tmp_path)
    assert "FSDP needs forward times" in one_line(invoke("grid", *TINY, "--bucketing", "fsdp"))
    assert list(tmp_path.iterdir()) == []


def test_a_late_refusal_on_resume_keeps_the_partial(tmp_path, monkeypatch):
    out = tmp_path / "o.h5"
    stopped(monkeypatch, 2, "grid", "--bw", "1..10", "--block-configs", "2", "-q", "--out", out)
    partial = tmp_path / "o.h5.partial"
    before = partial.read_bytes()
    with monkeypatch.context() as m:

        def refuse(*a, **k):
            raise InputError("refused late", param="kernel")

        m.setattr(job, "run", refuse)
        assert "refused late" in one_line(invoke("grid", "--bw", "1..10", "-q", "--out", out, "--resume"))
    assert partial.read_bytes() == before


# --- 6. two runs racing for one --out ------------------------------------------------------------------------


def test_the_loser_of_a_race_says_the_other_run_holds_the_output(tmp_path, monkeypatch):
    out = tmp_path / "o.h5"
    partial = tmp_path / "o.h5.partial"

    def the_other_run_starts(*args, **kwargs):  # between this run's checks and its partial file
        with h5py.File(partial, "w") as f:
            f.attrs["other"] = 1

    monkeypatch.setattr(job, "check_disk", the_other_run_starts)
    r = invoke("grid", *TINY, "--out", out)
    assert "another run holds the output" in one_line(r) and "kept" not in r.output
    with h5py.File(partial, "r") as f:
        assert f.attrs["other"] == 1


def test_interrupted_before_its_own_partial_it_claims_no_blocks(tmp_path, monkeypatch):
    partial = tmp_path / "o.h5.partial"

    def the_other_run_starts_then_ctrl_c(*args, **kwargs):
        with h5py.File(partial, "w") as f:
            f.attrs["other"] = 1
        raise KeyboardInterrupt

    monkeypatch.setattr(job, "check_disk", the_other_run_starts_then_ctrl_c)
    r = invoke("grid", *TINY, "--out", tmp_path / "o.h5")
    assert r.exit_code == 130 and "nothing was kept" in r.output and "kept in" not in r.output, r.output


def test_finish_says_the_other_run_holds_the_output_when_the_partial_is_gone(tmp_path):
    partial, final = tmp_path / "o.h5.partial", tmp_path / "o.h5"
    f = h5py.File(partial, "w")
    partial.unlink()
    with pytest.raises(InputError, match="removed by another run.*the other run holds the output"):
        cube.finish(f, partial, final)
    assert not final.exists()


def test_force_deletes_only_a_partial_file_of_netsweeps(tmp_path):
    out = tmp_path / "o.h5"
    partial = precious(tmp_path, "o.h5.partial")
    r = invoke("grid", *TINY, "--out", out, "--force")
    assert "not a partial cube of netsweep's" in one_line(r)
    assert partial.read_text() == "the user's" and not out.exists()
    # ... and without --force it is said as the same, not as an interrupted run's, whose advice (--force to start
    # over) was then refused (a hunt)
    r = invoke("grid", *TINY, "--out", out)
    assert r.exit_code == 2 and "not a partial cube of netsweep's" in one_line(r)
    assert partial.read_text() == "the user's" and not out.exists()
    out.write_text("the user's cube")  # with the output there too (a review)
    r = invoke("grid", *TINY, "--out", out)
    assert r.exit_code == 2 and "not a partial cube of netsweep's" in one_line(r)
    assert out.read_text() == "the user's cube"


# --- 6. a write the disk refuses (full, a file-size limit) is one line, exit code 1, nothing left ---------------


@contextlib.contextmanager
def file_size_limit(nbytes):
    """This process may write files of at most ``nbytes`` (as ``ulimit -f``; Python ignores SIGXFSZ, so a
    longer write fails with EFBIG, as on a full disk with ENOSPC)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (nbytes, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))


@pytest.mark.parametrize(
    "args,out",
    [
        (["plan", "--model", "llama3-8b", "--gpus", "8", "--global-batch", "8", "--tp", "1,2"], "p.h5"),
        (["need", "--target", "0.9", "--solve", "ratio", "--bw", "10", "--nodes", "2,4"], "n.h5"),
        (["compare", "--model", "resnet50", "--bw", "10,100"], "report"),
        (["grid", "--bw", "1..5", "--reduce", "max:bandwidth", "-q"], "r.h5"),
    ],
    ids=["plan", "need", "compare", "reduced-grid"],
)
def test_a_write_the_disk_refuses_is_one_line_exit_1_and_leaves_nothing(tmp_path, args, out):
    # #27: plan and a layout grid aborted (double free) or segfaulted inside HDF5, validate and compare ended
    # in OSError tracebacks and left an empty report directory.
    warm, where = tmp_path / "warm", tmp_path / "refused"
    warm.mkdir(), where.mkdir()
    assert invoke(*args, "--out", warm / out).exit_code == 0  # compiled now: no cache write under the limit
    with file_size_limit(12_000):
        r = invoke(*args, "--out", where / out)
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output  # what it printed before may stay
    assert (
        r.output.strip()
        .splitlines()[-1]
        .endswith("could not be written (File too large); nothing was written")
    )
    assert list(where.iterdir()) == []


def test_a_cube_larger_than_the_file_size_limit_is_refused_before_any_work(tmp_path):
    with file_size_limit(12_000):
        r = invoke("grid", *TINY, "--out", tmp_path / "o.h5")
    assert "ulimit -f" in one_line(r) and list(tmp_path.iterdir()) == []
    with file_size_limit(12_000):  # a report's cube: the report's directory is not left behind either
        r = invoke("paper", "--out", tmp_path / "paper")
    assert "ulimit -f" in one_line(r) and list(tmp_path.iterdir()) == []
