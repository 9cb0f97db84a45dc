"""Issue #42's messages at the ends of a run: ``--resume --force`` (a checkpoint that could not be resumed told
the user to pass the ``--force`` they had passed) is refused in one line, and a signal that arrives once the cube
is in place says the command's output is complete (it said only "interrupted", or for a plan "nothing was
kept").

The signal cases run the console script's ``main`` in this process (``os._exit`` stood in for by ``SystemExit``,
the signal handlers it installs put back after) and send the signal from a hook right after the cube is
renamed into place: no timer, no subprocess."""

import os
import signal
import sys

import h5py
import pytest

from helpers import PLAN, invoke
from netsweep_jax.sweep.cli import entry
from netsweep_jax.sweep.core import interrupts
from netsweep_jax.sweep.io import cube


@pytest.mark.parametrize("command", [PLAN, ["grid", "--bw", "10,25"]], ids=["plan", "grid"])
def test_resume_with_force_is_refused_in_one_line(tmp_path, command):
    out = tmp_path / "o.h5"
    with h5py.File(tmp_path / "o.h5.partial", "w") as f:  # another run's checkpoint
        f.attrs["grid_fingerprint"] = "another plan's"
    r = invoke(*command, "--out", out, "--resume", "--force")
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    assert "error: --resume and --force cannot go together" in r.output.splitlines()[-1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.h5.partial"]


def run_main(monkeypatch, capsys, *args):
    """``sweep ARGS`` through the console script's ``main``: (exit code, stdout, stderr)."""
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGALRM)}
    hook = sys.unraisablehook

    def exit_now(code):
        raise SystemExit(code)

    with monkeypatch.context() as m:
        m.setattr(sys, "argv", ["sweep", *map(str, args)])
        m.setattr(sys, "stdout", sys.stdout)  # main wraps it: put back after
        m.setattr(os, "_exit", exit_now)
        try:
            with pytest.raises(SystemExit) as e:
                entry.main()
        finally:
            for s, handler in saved.items():
                signal.signal(s, handler)
            sys.unraisablehook = hook
            interrupts._received.clear()
            interrupts._requested.clear()
    captured = capsys.readouterr()
    return e.value.code, captured.out, captured.err


def signal_after(monkeypatch, module, name):
    """``module.name`` (what puts the cube in place), then SIGTERM to this process."""
    real = getattr(module, name)

    def then_signal(*args, **kwargs):
        result = real(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGTERM)
        return result

    monkeypatch.setattr(module, name, then_signal)


@pytest.mark.parametrize(
    "args,where",
    [(["grid", "--bw", "10,25", "-q"], "finish"), ([*PLAN, "--csv"], "write_dataset")],
    ids=["grid", "plan"],
)
def test_a_signal_once_the_cube_is_in_place_says_it_is_complete(tmp_path, monkeypatch, capsys, args, where):
    out = tmp_path / "o.h5"
    signal_after(monkeypatch, cube, where)
    code, stdout, stderr = run_main(monkeypatch, capsys, *args, "--out", out)
    assert code == 143, stderr
    assert (
        stderr.strip().splitlines()[-1]
        == "error: interrupted as the command ended; what it wrote is complete"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.h5"]
    r = invoke("show", "--verify", out)
    assert r.exit_code == 0, r.output


def test_a_signal_while_the_plan_is_printed_says_the_cube_is_complete(tmp_path, monkeypatch, capsys):
    # The cube is in place and its table is being made (#42: it said only "interrupted").
    from netsweep_jax.sweep.analysis import planning

    out = tmp_path / "o.h5"
    signal_after(monkeypatch, planning, "plan_table")
    code, stdout, stderr = run_main(monkeypatch, capsys, *PLAN, "--out", out, "-q")
    assert code == 143, stderr
    assert stderr.strip().splitlines()[-1] == (
        f"error: interrupted while printing the plan; {out} was written and is complete"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.h5"]
    assert invoke("show", "--verify", out).exit_code == 0
