"""Issue #42: a reader that closes the pipe while ``sweep`` writes its output (``sweep select big.h5 --csv | head
-c 200000``) ends the command with exit code 141, as SIGPIPE would, whenever it closes: the kernel's short write
(the bytes the pipe took before its reader left) was dropped by Python's text layer, and the command ended with
exit code 0 and its output cut. In this process: standard output is a pipe whose reader leaves after N bytes."""

import errno
import io
import sys

import pytest

from helpers import PLAN, invoke
from netsweep_jax.sweep.cli import entry


class LeavingReader(io.RawIOBase):
    """A pipe whose reader takes ``limit`` bytes, then goes away: a write it cuts short returns what it took, as
    write(2) does; the next one fails with EPIPE."""

    def __init__(self, limit: int) -> None:
        self.limit, self.taken = limit, 0

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        if self.taken >= self.limit:
            raise BrokenPipeError(errno.EPIPE, "Broken pipe")
        n = min(len(data), self.limit - self.taken)
        self.taken += n
        return n


@pytest.mark.parametrize("limit", [0, 100], ids=["before-the-first-write", "mid-output"])
def test_a_reader_that_leaves_ends_the_command_with_141(tmp_path, monkeypatch, limit):
    cube = tmp_path / "c.h5"
    assert (
        invoke(
            "grid", "--model", "resnet50", "--bw", "10,25", "--ratio", "1..4", "-q", "--out", cube
        ).exit_code
        == 0
    )
    reader = LeavingReader(limit)
    monkeypatch.setattr(sys, "argv", ["sweep", "select", str(cube), "--csv"])
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(reader, encoding="utf-8", write_through=True))
    assert entry._run() == 141
    assert reader.taken == limit


@pytest.mark.parametrize("form", ["--csv", "--json"])
def test_a_plan_printed_as_csv_or_json_says_its_cube_even_when_the_reader_leaves(
    tmp_path, monkeypatch, capsys, form
):
    out = tmp_path / "p.h5"
    monkeypatch.setattr(sys, "argv", ["sweep", *PLAN, "--out", str(out), form])
    monkeypatch.setattr(
        sys, "stdout", io.TextIOWrapper(LeavingReader(100), encoding="utf-8", write_through=True)
    )
    assert entry._run() == 141
    assert (
        f"wrote {out}" in capsys.readouterr().err.splitlines()
    )  # on stderr: stdout is the CSV or JSON alone
    assert out.exists()


@pytest.mark.parametrize("limit", [0, 100], ids=["before-the-first-write", "mid-output"])
def test_a_group_without_its_command_prints_its_help_under_the_same_guard(monkeypatch, limit):
    # A review: `sweep` alone prints its help (a hunt: it came as "error: Usage: ..."), and printed it outside the
    # guard of standard output: `sweep | true` and `sweep > /dev/full` gave a traceback.
    reader = LeavingReader(limit)
    monkeypatch.setattr(sys, "argv", ["sweep"])
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(reader, encoding="utf-8", write_through=True))
    assert entry._run() == 141
    assert reader.taken == limit
