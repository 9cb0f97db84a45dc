"""The ``sweep`` console script: signals are handled before anything heavy is imported."""

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # imports at start-up are only those the interpreter has made already
    from collections.abc import Callable
    from typing import NoReturn, TextIO


def main() -> None:
    """Install the signal handlers, import the CLI and run it. A usage error is one line and
    exit code 2; SIGINT or SIGTERM at any moment is one line, ``error: interrupted`` (or the
    command's own line saying what it kept), and exit code 130 or 143: never a traceback,
    never exit code 0.

    Its imports stay inside: the handlers are installed before Typer and the CLI (and what they
    import) are loaded, so that an early Ctrl-C or SIGTERM is handled too."""
    try:
        from netsweep_jax.sweep.core import interrupts

        interrupts.install()
    except KeyboardInterrupt:  # before the handlers were in place
        _interrupted(130, reported=False)
    code: int | None = None
    try:
        code = _run()
        interrupts.finishing(lambda signum: _interrupted(128 + signum, reported=False, message=_ended(code)))
    except (KeyboardInterrupt, interrupts.Interrupted) as e:
        # One that lands between the command's return and finishing(): its work is as done.
        message = "error: interrupted" if code is None else _ended(code)
        _interrupted(interrupts.exit_code(e), reported=False, message=message)
    except BaseException:
        # A signal that landed inside an import comes out as another exception (an extension
        # module's ImportError, say): the signal is what happened.
        signum = interrupts.received()
        if signum is None:
            raise
        _interrupted(128 + signum, reported=False)
    signum = interrupts.received()
    if signum is not None:  # swallowed by a library, or it came as the command ended: never exit 0
        # One deferred while the output was put in place (the command then ended well) is said as such; one a
        # library swallowed is said as it was.
        message = _ended(code) if code == 0 and interrupts.requested() else "error: interrupted"
        _interrupted(128 + signum, reported=code == 128 + signum, message=message)
    sys.exit(code)


class _StdoutFailed(Exception):
    """Writing to standard output failed (a full disk behind a redirection, a closed pipe)."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


class _GuardedStdout:
    """``sys.stdout``, whose write and flush failures are :class:`_StdoutFailed` (told apart from the
    command's own files' failures); everything else is the stream's."""

    def __init__(self, stream: "TextIO") -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            buffer = getattr(self._stream, "buffer", None)
            if buffer is None:
                return self._stream.write(text)
            # Through the bytes below: a large write that a reader leaving cuts short returns the bytes it took,
            # which the text layer drops (exit code 0 with the output cut); the rest is written again, and fails.
            self._stream.flush()
            data = memoryview(text.encode(self._stream.encoding, self._stream.errors or "strict"))
            while data:
                taken = buffer.write(data)
                if taken is None:  # a non-blocking stream that would block: not ours to wait on
                    import errno

                    raise OSError(errno.EAGAIN, os.strerror(errno.EAGAIN))
                data = data[taken:]
            return len(text)
        except OSError as e:
            raise _StdoutFailed(e) from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as e:
            raise _StdoutFailed(e) from None

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


def _run() -> int:
    """Run the CLI on ``sys.argv``; its exit code. A usage error is printed here (exit code 2). Standard output
    that cannot be written is one line (exit code 1), or nothing when the reader has gone (a pipe into
    ``head``, before or during the output: exit code 141, as a program SIGPIPE ends)."""
    import errno
    import signal

    import typer

    from netsweep_jax.sweep.cli.app import app
    from netsweep_jax.sweep.core.interrupts import Interrupted

    stdout = sys.stdout
    sys.stdout = _GuardedStdout(stdout)  # a TextIO in all but name
    try:
        return _app_or_its_help(app)
    except _StdoutFailed as e:
        sys.stdout = open(os.devnull, "w")  # nothing more goes there, not even at exit
        if e.error.errno == errno.EPIPE:
            return 128 + signal.SIGPIPE
        reason = os.strerror(e.error.errno) if e.error.errno else str(e.error)
        print(
            f"error: standard output could not be written ({reason}); files written are complete",
            file=sys.stderr,
        )
        return 1
    except typer.Abort:  # click's own Ctrl-C (or end of input at a prompt)
        raise Interrupted(signal.SIGINT) from None
    except Exception as e:
        # A usage error (unknown option, missing value, ...): Typer would draw a box. Its
        # class lives in click or in Typer's copy of it, by version; both carry these.
        if not (hasattr(e, "format_message") and hasattr(e, "exit_code")):
            raise
        ctx = getattr(e, "ctx", None)
        hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
        print(f"error: {e.format_message()}{hint}", file=sys.stderr)
        return int(e.exit_code)


def _app_or_its_help(app: "Callable[..., object]") -> int:
    """Run the app; where a group is given no command (`sweep`, `sweep profile`), print its help as --help does
    (it had come as "error: Usage: ...", the whole help between the error's word and its hint: a hunt), inside
    the caller's guard of standard output (a review: `sweep > /dev/full` gave a traceback)."""
    try:
        return int(app(standalone_mode=False) or 0)  # type: ignore[call-overload]
    except Exception as e:
        ctx = getattr(e, "ctx", None)
        if type(e).__name__ != "NoArgsIsHelpError" or ctx is None:
            raise
        print(ctx.get_help())
        return 0


def _ended(code: int) -> str:
    """The line for a signal that came as the command had ended with ``code``."""
    if code == 0:
        return "error: interrupted as the command ended; what it wrote is complete"
    return "error: interrupted as the command ended"


def _interrupted(code: int, *, reported: bool, message: str = "error: interrupted") -> "NoReturn":
    """Say so (unless the command did), and end the process now, with ``code``.

    ``os._exit``: no interpreter teardown, which could run while XLA still compiles on
    another thread (a Ctrl-C of ``calibrate`` while it compiles crashed there)."""
    for _ in range(100):  # a second signal inside ignore() raises again: try until the handlers are off
        try:
            from netsweep_jax.sweep.core import interrupts

            interrupts.ignore()  # a second Ctrl-C while this runs changes nothing
            break
        except BaseException:
            continue
    try:
        if not reported:
            print(message, file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # a closed pipe: the exit code still says it
        pass
    os._exit(code)
