"""The one error type users see: bad input, reported in one line, exit code 2."""


class InputError(ValueError):
    """Bad user input: a value that breaks a rule, or a malformed file.

    ``InputError(detail, param=name)`` names the library parameter (``bandwidth``,
    ``collective``, ...) the value was given for; the message reads
    ``"<param> <detail>"`` in Python and ``"<option> <detail>"`` on the command line,
    where :func:`sweep.core.schema.option_of` maps the parameter to its CLI flag. Without
    ``param`` the detail is the whole message (files name themselves and the line).
    """

    def __init__(self, detail: str, param: str | None = None) -> None:
        self.detail = detail
        self.param = param
        super().__init__(f"{param} {detail}" if param else detail)


class DiskFull(RuntimeError):
    """The disk filled up while a sweep wrote its cube; finished blocks are kept for --resume."""


class WriteFailed(RuntimeError):
    """The file system refused an output (a full disk, a file-size limit, a read-only or failing disk): a
    fault, not bad input; one line, exit code 1, and nothing of the write is left behind."""


class Damaged(RuntimeError):
    """A file netsweep wrote no longer holds what it wrote (a checksum does not match, or HDF5 cannot read
    it): a fault, not bad input; one line, exit code 1, nothing read from it is shown."""


class StitchTimeout(RuntimeError):
    """A ``--distributed`` shard did not complete in time (its process probably died)."""


class JoinTimeout(StitchTimeout):
    """A ``--distributed`` process waited its time for every process to join and one did not (it never started):
    XLA's connect still blocks on a thread of its own, so the process is ended at once, after one line."""


def where(path: object, line: int | None = None) -> str:
    """``'path'`` or ``'path:line'``, for messages that point at input."""
    return f"{path}:{line}" if line is not None else f"{path}"


def reason(e: BaseException) -> str:
    """An exception's reason in a few words, for one line to the user: the first line of its message (HDF5's
    errors carry a paragraph after it), or its type's name when it has none."""
    text = str(e)
    return text.splitlines()[0] if text else type(e).__name__
