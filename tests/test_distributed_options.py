"""Issue #42's ``--distributed`` cases: options refused before anything starts, a join that a signal ends at once
and that a peer which never starts ends in one line (before XLA's own deadline aborts the process), processes
started with other options refused by every process before any file is made, a refused stitch that leaves
nothing behind, and a distributed plan's messages that say what can be done.

No process joins a real coordinator here: ``jax.distributed.initialize`` is a stand-in (the rendezvous's
``initialize`` hook, or a monkeypatched no-op with a fake key-value client), and nothing waits on a clock."""

import os
import signal
import threading

import jax
import pytest

from helpers import GRID, invoke
from netsweep_jax.sweep.core import errors
from netsweep_jax.sweep.io import distributed


def one_error(r, code=2):
    lines = [line for line in r.output.splitlines() if line.startswith("error: ")]
    assert r.exit_code == code and len(lines) == 1 and "Traceback" not in r.output, r.output
    return lines[0]


def never(*args, **kwargs):
    raise AssertionError("nothing may start before the options are checked")


@pytest.mark.parametrize(
    "option,value,message",
    [
        ("--coordinator", "localhost", "--coordinator localhost: give host:port"),
        ("--coordinator", "localhost:99999", "--coordinator localhost:99999: give host:port"),
        ("--stitch-timeout", "-1", "--stitch-timeout -1: give a number of seconds above 0"),
        ("--stitch-timeout", "nan", "--stitch-timeout nan: give a number of seconds above 0"),
    ],
)
@pytest.mark.parametrize("command", ["grid", "plan"])
def test_bad_distributed_options_are_refused_before_anything_starts(
    tmp_path, monkeypatch, command, option, value, message
):
    monkeypatch.setattr(distributed, "rendezvous", never)
    monkeypatch.setattr(jax.distributed, "initialize", never)
    args = (
        ["--bw", "10"]
        if command == "grid"
        else ["--model", "llama3-8b", "--gpus", "8", "--global-batch", "8"]
    )
    r = invoke(command, *args, "--out", tmp_path / "d.h5", "--distributed", option, value)
    assert message in one_error(r)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "name,value",
    [
        ("JAX_PROCESS_ID", "abc"),
        ("JAX_NUM_PROCESSES", "\uff12"),
        ("JAX_NUM_PROCESSES", "0"),
        ("JAX_PROCESS_ID", "-1"),
    ],
)
def test_a_process_count_or_id_from_the_environment_is_read_by_the_options_rule(
    tmp_path, monkeypatch, name, value
):
    # A hunt: JAX_PROCESS_ID=abc gave a traceback, and a full-width 2 was taken for 2.
    monkeypatch.setattr(jax.distributed, "initialize", never)
    monkeypatch.setenv(name, value)
    r = invoke(
        "grid", "--bw", "10", "--out", tmp_path / "d.h5", "--distributed", "--coordinator", "localhost:1234"
    )
    assert f"${name} {value!r}: give a whole number" in one_error(r)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", ["grid", "plan"])
def test_a_distributed_option_without_distributed_is_refused(tmp_path, command):
    # It did nothing, in silence: a bad --stitch-timeout or a --coordinator was accepted and the run went alone.
    args = (
        ["--bw", "10"]
        if command == "grid"
        else ["--model", "llama3-8b", "--gpus", "8", "--global-batch", "8"]
    )
    for option, value in (("--stitch-timeout", "-1"), ("--coordinator", "host:1234"), ("--process-id", "0")):
        r = invoke(command, *args, "--out", tmp_path / "d.h5", option, value)
        assert f"{option} takes effect only with --distributed" in one_error(r)
    assert list(tmp_path.iterdir()) == []


def test_a_peer_that_never_joins_ends_the_wait_in_one_line(monkeypatch):
    release = threading.Event()
    try:  # the stand-in blocks as XLA's connect does when a peer never starts; the wait is 0 s here
        with pytest.raises(errors.JoinTimeout, match="not every process joined the coordinator within 0 s"):
            distributed.rendezvous("unix:/nowhere", 2, 0, timeout_s=0, initialize=lambda **kw: release.wait())
    finally:
        release.set()


def test_a_signal_ends_the_wait_for_the_peers_at_once():
    # Python's own Ctrl-C handler, as a command typed at a terminal has it: a test run started in the background
    # (and its workers) inherit SIGINT ignored, and then nothing would end the wait.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    release = threading.Event()

    def blocked(**kwargs):  # Ctrl-C arrives while XLA's connect blocks (it ignored SIGINT and SIGTERM)
        os.kill(os.getpid(), signal.SIGINT)
        release.wait()

    try:
        with pytest.raises(KeyboardInterrupt):
            distributed.rendezvous("unix:/nowhere", 2, 0, timeout_s=120, initialize=blocked)
    finally:
        release.set()
        signal.signal(signal.SIGINT, previous)


class FakeClient:
    """jax.distributed's key-value store as another process sees it: the keys it set, and ``others`` for the
    keys of every other process (what they published)."""

    def __init__(self, others=None):
        self.store, self.others = {}, others

    def key_value_set(self, key, value):
        self.store[key] = value

    def blocking_key_value_get(self, key, timeout_in_ms):
        return self.store.get(key, self.others if self.others is not None else self.store[min(self.store)])

    def wait_at_barrier(self, barrier_id, timeout_in_ms):
        pass


def test_processes_must_run_the_same_options():
    distributed.agree(FakeClient(), 0, 3, "grid abc", 1.0)  # every process publishes what this one runs
    with pytest.raises(
        errors.InputError, match="processes 1, 2 of 3 were started with other options than process 0"
    ):
        distributed.agree(FakeClient(others="grid xyz"), 0, 3, "grid abc", 1.0)


def test_processes_given_other_out_files_run_other_options(tmp_path, monkeypatch):
    # A hunt: process 1 given another --out wrote its shard there, and process 0 waited --stitch-timeout (600 s)
    # for one never written. The file's name is what every process must agree on (its folder may be mounted
    # elsewhere on each host).
    published = []

    def rendezvous(*args, options=None):
        published.append(options)
        raise errors.InputError("stop here")

    monkeypatch.setattr(distributed, "rendezvous", rendezvous)
    for out in (tmp_path / "g.h5", tmp_path / "other.h5", tmp_path / "mnt" / "g.h5"):
        invoke("grid", *GRID, "--out", out, "--distributed", "--coordinator", "host0:1234")
    assert published[0] != published[1] and published[0] == published[2], published


@pytest.mark.parametrize("pid", [0, 1])
def test_a_process_started_with_other_options_is_refused_and_writes_nothing(tmp_path, monkeypatch, pid):
    monkeypatch.setattr(jax.distributed, "initialize", lambda **kwargs: None)
    monkeypatch.setattr(jax.distributed, "shutdown", lambda: None)
    monkeypatch.setattr(distributed, "_joined_as", lambda: (pid, 2))  # the id and count the coordinator gave
    monkeypatch.setattr(
        distributed, "_client", lambda: FakeClient(others="grid of another command"), raising=False
    )
    r = invoke("grid", *GRID, "--out", tmp_path / "g.h5", "--distributed", "--coordinator", "host0:1234")
    assert f"started with other options than process {pid}" in one_error(r)
    assert list(tmp_path.iterdir()) == []


def test_every_process_refuses_an_existing_out_before_its_share(tmp_path, monkeypatch):
    # Process 1 computed its share, exited 0 and left its shard beside a cube process 0 refused to replace.
    out = tmp_path / "g.h5"
    monkeypatch.setattr(distributed, "rendezvous", lambda *args, **kwargs: (1, 2))
    for left, force in (("g.h5", []), ("g.h5.partial", []), ("g.h5", ["--force"])):
        path = tmp_path / left
        path.mkdir() if force else path.write_text("mine")
        r = invoke("grid", *GRID, "--out", out, "--distributed", *force)
        said = "a directory" if force else "exists, or its OUT.partial does; pass --force to start over"
        assert said in one_error(r) and [p.name for p in tmp_path.iterdir()] == [left]
        path.rmdir() if force else path.unlink()


def test_a_stitch_of_shards_of_another_grid_leaves_no_partial_cube(tmp_path, monkeypatch):
    out = tmp_path / "g.h5"
    for pid, extra in ((1, ["--util", "0.5"]), (0, [])):  # as if the agreement had not run
        monkeypatch.setattr(distributed, "rendezvous", lambda *args, _pid=pid, **kwargs: (_pid, 2))
        r = invoke("grid", *GRID, *extra, "--out", out, "--distributed")
    assert "a shard of another grid" in one_error(r)
    assert not out.exists() and not (tmp_path / "g.h5.partial").exists()


def test_resume_refuses_a_finished_shard_of_another_grid_before_any_work(tmp_path, monkeypatch):
    # A hunt: --resume kept an earlier run's finished shard made with other options; process 1 then exited 0
    # with it as its result, and process 0 waited, then said "rerun every process with --resume", which could
    # never finish.
    out = tmp_path / "g.h5"
    monkeypatch.setattr(distributed, "rendezvous", lambda *args, **kwargs: (1, 2))
    assert invoke("grid", *GRID, "--util", "0.5", "--out", out, "--distributed").exit_code == 0
    shard = distributed.shard_path(out, 1, 2)
    made = shard.read_bytes()
    r = invoke("grid", *GRID, "--out", out, "--distributed", "--resume")
    assert r.exit_code == 2 and f"{shard}: a shard of another grid" in one_error(r)
    assert "--force and without --resume" in one_error(r) and shard.read_bytes() == made
    shard.write_text("not HDF5")
    r = invoke("grid", *GRID, "--out", out, "--distributed", "--resume")
    assert r.exit_code == 2 and "not a shard this tool can read" in one_error(r)
