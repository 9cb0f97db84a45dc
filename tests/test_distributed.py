"""--distributed: the stitched cube equals a single-process run; a dead process leaves the
others to finish, and --resume completes only what is missing.

Two processes join over a Unix socket (no TCP port to choose, so no port race). The
dead-process case runs each process's share of ``sweep grid --distributed`` in this
process, one after the other, as the id the (stubbed) rendezvous hands it: process 1
stops at a known block (``run_grid(after_block=...)``), and process 0 waits for its
shard on a fake clock (no timeout in wall-clock time)."""

import functools
import os
import sys

import h5py
import numpy as np
import pytest

from helpers import (
    GRID,
    Stopped,
    blocks_done,
    both_processes,
    invoke,
    read_outputs,
    stop_after,
    two_processes,
)
from netsweep_jax.sweep.core.errors import StitchTimeout
from netsweep_jax.sweep.io import distributed
from netsweep_jax.sweep.io.distributed import POLL_S, wait_for


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    out = tmp_path_factory.mktemp("single") / "single.h5"
    assert invoke("grid", *GRID, "--out", out, "-q").exit_code == 0
    return read_outputs(out)


def assert_same(path, ref):
    got = read_outputs(path)
    for k in ref:
        np.testing.assert_array_equal(got[k], ref[k])
    with h5py.File(path) as f:
        assert f.attrs["processes"] == 2


def test_a_process_that_left_computes_on_devices_of_its_own(tmp_path):
    # JAX's shutdown kept a process's id, and a backend it started afterwards numbered its devices across the
    # processes (process 1's CPU device was 2048). JAX keys a compiled CPU program by its device, so every
    # process but 0 compiled its kernels again on every run, never finding them in the persistent cache.
    code = (
        "import sys, jax; from netsweep_jax.sweep.io import distributed; "
        "pid, count = distributed.rendezvous(sys.argv[1], 2, int(sys.argv[2]), timeout_s=120); "
        "print(pid, count, [d.id for d in jax.devices()], jax.process_index())"
    )
    coordinator = f"unix:{tmp_path / 'coordinator.sock'}"
    said = both_processes(lambda pid: [sys.executable, "-c", code, coordinator, str(pid)])
    assert [out.strip() for out, _ in said] == ["0 2 [0] 0", "1 2 [0] 0"], said


def test_two_processes_stitch_to_the_single_process_cube(tmp_path, single):
    out = tmp_path / "d.h5"
    two_processes(tmp_path, *GRID, "--out", out)
    assert_same(out, single)
    assert sorted(x.name for x in tmp_path.iterdir() if x.suffix != ".sock") == ["d.h5"]


class FakeClock:
    """A clock that moves only when the code under test sleeps."""

    def __init__(self):
        self.now, self.sleeps = 0.0, 0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds
        self.sleeps += 1


def test_waiting_gives_up_only_after_the_timeout_without_change(tmp_path):
    shards = [tmp_path / "d.shard0of2.h5", tmp_path / "d.shard1of2.h5"]
    shards[0].write_text("")
    partial = tmp_path / "d.shard1of2.h5.partial"
    clock = FakeClock()
    writes = iter(range(1, 4))

    def sleep(seconds):  # the missing shard's process writes a block at each of the first 3 looks
        clock.sleep(seconds)
        if (n := next(writes, None)) is not None:
            partial.write_text("x" * n)
            os.utime(partial, (n, n))

    with pytest.raises(StitchTimeout, match=r"d.shard1of2.h5 not complete and unchanged for 10 s .*--resume"):
        wait_for(shards, 10, clock=clock, sleep=sleep)
    # the clock restarted at the last change (the 3rd look), then ran past 10 s
    assert 3 * POLL_S + 10 < clock.now <= 3 * POLL_S + 10 + POLL_S + 1e-9
    shards[1].write_text("")
    clock.sleeps = 0
    wait_for(shards, 10, clock=clock, sleep=clock.sleep)  # every shard there: no wait
    assert clock.sleeps == 0


def as_process(monkeypatch, pid, out, *extra, **hooks):
    """``sweep grid GRID --distributed`` here as process ``pid`` of 2, with ``run_grid`` or waiting hooks."""
    with monkeypatch.context() as m:
        m.setattr(distributed, "rendezvous", lambda *args, **kwargs: (pid, 2))
        if "after_block" in hooks:
            m.setattr(
                distributed,
                "run_grid",
                functools.partial(distributed.run_grid, after_block=hooks.pop("after_block")),
            )
        m.setattr(distributed, "run_distributed", functools.partial(distributed.run_distributed, **hooks))
        return invoke("grid", *GRID, "--out", out, "--distributed", *extra)


def test_dead_process_then_resume(tmp_path, single, monkeypatch):
    out = tmp_path / "d.h5"
    r = as_process(monkeypatch, 1, out, after_block=stop_after(5))  # process 1 dies after 5 of its 15 blocks
    assert isinstance(r.exception, Stopped), r.output
    assert blocks_done(tmp_path / "d.shard1of2.h5.partial") == 5
    # Process 0 finishes its own shard, then gives up waiting for process 1's.
    clock = FakeClock()
    r = as_process(monkeypatch, 0, out, "--stitch-timeout", "60", clock=clock, sleep=clock.sleep)
    assert r.exit_code == 3, r.output
    assert "d.shard1of2.h5 not complete and unchanged for 60 s" in r.output and "--resume" in r.output
    assert 60 < clock.now <= 60 + POLL_S + 1e-9  # gave up at the first look past the timeout
    assert (tmp_path / "d.shard0of2.h5").exists() and not out.exists()
    # Every process again with --resume: process 1 computes only its missing blocks, process 0 none, then stitches.
    r = as_process(monkeypatch, 1, out, "--resume")
    assert (
        r.exit_code == 0
        and "process 1 of 2: 300 configurations" in r.output
        and "5 blocks resumed" in r.output
    )
    r = as_process(
        monkeypatch, 0, out, "--resume"
    )  # its shard finished: every block resumed (a hunt: "0 ... nan/s")
    said = "process 0 of 2: 300 configurations, 0 computed in 0.00 s (0/s end to end, 15 blocks resumed); stitched"
    assert r.exit_code == 0 and said in r.output, r.output
    assert_same(out, single)
    assert sorted(x.name for x in tmp_path.iterdir()) == ["d.h5"]


def test_a_file_that_appears_at_out_while_the_processes_compute_is_kept(tmp_path, single, monkeypatch):
    # A hunt: a user's file written at --out during a --distributed grid was replaced by the stitched cube, exit
    # code 0, where one process refuses and keeps it. Process 1's shard, then process 0's, the file appearing as
    # process 0 waits for the shards: refused, the file kept, the shards too; moved away, --resume stitches.
    out = tmp_path / "d.h5"
    assert as_process(monkeypatch, 1, out).exit_code == 0
    waited = distributed.wait_for

    def appears(*args, **kwargs):
        out.write_text("the user's")
        return waited(*args, **kwargs)

    monkeypatch.setattr(distributed, "wait_for", appears)
    r = as_process(monkeypatch, 0, out)
    assert r.exit_code == 2 and "d.h5: file exists; pass --force to overwrite it" in r.output, r.output
    assert "finish with the same command plus --resume on every process" in r.output, r.output
    assert out.read_text() == "the user's"
    assert (tmp_path / "d.shard0of2.h5").exists() and (tmp_path / "d.shard1of2.h5").exists()
    # a shard is no cube to read: the other process's blocks were never written (they read 0, not NaN; a hunt)
    for command in ("show", "select"):
        r = invoke(command, tmp_path / "d.shard1of2.h5")
        assert r.exit_code == 2 and "the shard of process 1 of 2 of a --distributed sweep" in r.output, (
            r.output
        )
    # stopped by a signal as it waits: its shard is whole and kept, said as such (it had said "nothing was kept")
    from netsweep_jax.sweep.core.interrupts import Interrupted

    def stopped(*args, **kwargs):
        raise Interrupted(15)

    monkeypatch.setattr(distributed, "wait_for", stopped)
    r = as_process(monkeypatch, 0, out, "--resume")
    assert r.exit_code == 143 and "finished blocks are kept in " in r.output and "d.shard0of2.h5." in r.output
    monkeypatch.setattr(distributed, "wait_for", waited)
    out.unlink()
    r = as_process(monkeypatch, 0, out, "--resume")
    assert r.exit_code == 0 and "stitched" in r.output, r.output
    assert_same(out, single)


def test_a_resume_that_finds_nothing_names_the_shards_of_another_process_count(tmp_path):
    # A hunt: a run of 2 processes resumed with 3 said only that d.shard0of3.h5.partial did not exist; resumed
    # without --distributed, that d.h5.partial did not.
    from netsweep_jax.sweep.io.job import _shards_left

    for name in ("d.shard0of2.h5.partial", "d.shard1of2.h5", "e.shard0of2.h5.partial"):
        (tmp_path / name).touch()
    said = "d.shard0of2.h5.partial, d.shard1of2.h5 are a --distributed run's of 2 processes: finish it with "
    assert _shards_left(tmp_path / "d.h5") == f"; {said}--distributed on 2 processes"
    assert _shards_left(tmp_path / "d.shard0of3.h5") == f"; {said}--distributed on 2 processes"
    assert _shards_left(tmp_path / "d.shard0of2.h5") == ""  # its own count: the usual message says it
    (tmp_path / "e.h5").touch()  # a finished cube: "it exists" is the message (a review)
    assert _shards_left(tmp_path / "e.h5") == ""
    r = invoke("grid", *GRID, "--out", tmp_path / "d.h5", "--resume")
    assert r.exit_code == 2 and said in r.output, r.output
