"""Start-up: SIGINT or SIGTERM at any moment of ``sweep`` is one line and exit code 130 or 143.

Each case runs the real entry point in a process of its own and delivers the signal at a
chosen point, synchronously (``signal.raise_signal``), from an import hook or a patched
function: no timers, no sleeps. The points are the ones a hostile probe hit by timing: while
Typer is imported (an ``UnboundLocalError``), inside an extension module's import (which turns
what it catches into an ``ImportError``), in a library that swallows it (the run went on to
exit 0), in a gc callback (Python drops exceptions there), and the interpreter's teardown after
an interrupt (``calibrate`` crashed there while XLA compiled on another thread).
"""

import os
import signal
import subprocess
import sys

import pytest

DRIVER = r"""
import atexit, gc, importlib.abc, signal, sys

point, name, *argv = sys.argv[1:]
sig = getattr(signal, name)
# A shell that runs the tests in the background ignores SIGINT, and children inherit that: Python's handler
# back, as a command typed at a terminal has it.
signal.signal(signal.SIGINT, signal.default_int_handler)
atexit.register(lambda: sys.stderr.write("teardown ran\n"))  # an interrupted sweep ends before teardown


def deliver():
    signal.raise_signal(sig)  # the handler runs at the next bytecode, here
    sum(range(100))


if point.startswith("import:"):  # while this module is imported, by a loader that turns errors into ImportError
    module = point.removeprefix("import:")

    class Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path, target=None):
            if fullname == module:
                sys.meta_path.remove(self)
                try:
                    deliver()
                except BaseException as e:
                    raise ImportError(f"{fullname} failed to initialise: {e!r}") from None
            return None

    sys.meta_path.insert(0, Finder())
elif point in ("swallowed", "gc-callback"):  # in the command, by code that drops what it catches
    import netsweep_jax.sweep.model.builtin as builtin

    real = builtin.models_table

    def once(phase, info):
        gc.callbacks.remove(once)
        deliver()

    def models_table():
        if point == "gc-callback":
            gc.callbacks.append(once)
            gc.collect()
        else:
            try:
                deliver()
            except BaseException:
                pass
        return real()

    builtin.models_table = models_table

elif point == "after-run":  # the moment the command has returned, before the end's handlers are in place
    from netsweep_jax.sweep.core import interrupts

    real_finishing = interrupts.finishing

    def signal_then_finish(on_signal):
        deliver()
        real_finishing(on_signal)

    interrupts.finishing = signal_then_finish
elif point == "teardown-import":  # in an import during the interpreter's teardown, after the command ended
    import types

    class Late(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, fullname, path, target=None):
            if fullname != "late_module":
                return None
            return importlib.machinery.ModuleSpec(fullname, self)

        def create_module(self, spec):
            return types.ModuleType(spec.name)

        def exec_module(self, module):
            deliver()

    import importlib.machinery

    sys.meta_path.insert(0, Late())
    atexit.register(lambda: __import__("late_module"))  # runs before "teardown ran" (last in, first out)

sys.argv = ["sweep", *argv]
from netsweep_jax.sweep.cli import entry

entry.main()
"""


def run(point, sig, *args):
    return subprocess.run(
        [sys.executable, "-c", DRIVER, point, sig.name, *args], capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    "point,sig,args",
    [
        ("import:typer", signal.SIGINT, ["models"]),  # was UnboundLocalError
        ("import:netsweep_jax.sweep.cli.app", signal.SIGTERM, ["models"]),
        ("import:numpy", signal.SIGINT, ["models"]),  # an extension module: was its ImportError
        ("import:numpy", signal.SIGTERM, ["models"]),
        ("swallowed", signal.SIGINT, ["models"]),  # the run went on, exit code 0
        ("gc-callback", signal.SIGTERM, ["models"]),  # dropped by Python, with a traceback
    ],
    ids=[
        "typer-import",
        "app-import-sigterm",
        "extension-import",
        "extension-import-sigterm",
        "swallowed",
        "gc-callback",
    ],
)
def test_signal_at_start_up_is_one_line_and_128_plus_signal(point, sig, args):
    r = run(point, sig, *args)
    assert r.returncode == 128 + sig, r.stderr
    assert r.stderr == "error: interrupted\n"  # one line: no traceback, and no teardown after it


@pytest.mark.parametrize("point", ["after-run", "teardown-import"])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"])
def test_a_signal_as_the_command_ends_says_its_work_is_complete(point, sig):
    # #27: it exited 142 (the retry alarm outliving the handlers) with nothing said, or said "interrupted"
    # of a command whose output was complete.
    r = run(point, sig, "models")
    assert r.returncode == 128 + sig, (r.returncode, r.stderr)
    assert r.stderr == "error: interrupted as the command ended; what it wrote is complete\n"
    assert "resnet50" in r.stdout


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="this system has no /dev/full")
def test_standard_output_that_cannot_be_written_is_one_line_and_exit_1():
    # #27: `sweep plan > /dev/full` wrote its cube, then ended in a traceback.
    with open("/dev/full", "w") as full:
        r = subprocess.run(
            [sys.executable, "-c", DRIVER, "none", "SIGINT", "models"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    assert r.returncode == 1, r.stderr
    assert r.stderr.splitlines() == [
        "error: standard output could not be written (No space left on device); files written are complete",
        "teardown ran",
    ]


def test_a_reader_that_goes_away_ends_the_command_quietly():
    # `sweep ... | head`: no traceback; 141, as a program SIGPIPE ends, so `set -o pipefail` sees it.
    p = subprocess.Popen(
        [sys.executable, "-c", DRIVER, "none", "SIGINT", "models"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    p.stdout.close()
    assert p.wait(timeout=120) == 128 + signal.SIGPIPE
    assert p.stderr.read() == "teardown ran\n"


def test_a_run_without_a_signal_is_untouched():
    r = run("none", signal.SIGINT, "models")
    assert r.returncode == 0 and "resnet50" in r.stdout
    assert r.stderr == "teardown ran\n"  # a normal exit tears the interpreter down as usual


def test_a_signal_swallowed_before_a_sweep_stops_it_before_any_block(monkeypatch, tmp_path):
    from helpers import invoke
    from netsweep_jax.sweep.core import interrupts

    monkeypatch.setattr(interrupts, "_received", [signal.SIGTERM])  # seen at start-up, dropped by a library
    r = invoke("grid", "--bw", "10", "-q", "--out", tmp_path / "o.h5")
    assert r.exit_code == 143
    assert r.output.strip() == "error: interrupted before any block was written; nothing was kept"
    assert list(tmp_path.iterdir()) == []


def test_help_loads_no_numerical_library():
    # `sweep --help` stays fast (well under 0.3 s) because it imports Typer and the schema only.
    code = (
        "import sys; sys.argv = ['sweep', '--help']; from netsweep_jax.sweep.cli import entry\n"
        "import atexit; atexit.register(lambda: print(sorted(m for m in ('numpy', 'jax', 'rich', 'xarray', "
        "'h5py') if m in sys.modules)))\nentry.main()"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "Usage: sweep [OPTIONS] COMMAND" in r.stdout
    assert r.stdout.strip().splitlines()[-1] == "[]"
