"""The one error type users see: bad input, reported in one line, exit code 2."""

from collections.abc import Callable, Mapping, Sequence


class InputError(ValueError):
    """Bad user input: a value that breaks a rule, or a malformed file.

    ``InputError(detail, param=name)`` names the library parameter (``bandwidth``,
    ``collective``, ...) the value was given for; the message reads
    ``"<param> <detail>"`` in Python and ``"<option> <detail>"`` on the command line,
    where :func:`sweep.core.schema.option_of` maps the parameter to its CLI flag. Without
    ``param`` the detail is the whole message (files name themselves and the line). A detail
    that names several parameters holds ``{0}``, ``{1}``, ... for ``names``, spelled the same
    way (``bandwidth 10 x ratio 5`` in Python, ``--bw 10 x --ratio 5`` on the command line).
    """

    def __init__(self, detail: str, param: str | None = None, names: Sequence[str] = ()) -> None:
        self.detail = detail
        self.param = param
        self.names = tuple(names)
        super().__init__(self.spelled(lambda name: name))

    def spelled(self, spell: Callable[[str], str]) -> str:
        """The message with each parameter it names spelled by ``spell`` (the name itself, or its option)."""
        detail = self.detail.format(*map(spell, self.names)) if self.names else self.detail
        return f"{spell(self.param)} {detail}" if self.param else detail


class Infeasible(InputError):
    """A plan none of whose settings has a layout that can exist and fit: nothing to plan. A list of plans
    (``sweep plan --fabric A,B``) says so of that plan and goes on to its others."""


def literal(text: str) -> str:
    """``text`` as it reads inside a detail that names parameters (``names``: the detail is a format string), so
    that a brace a user typed is shown, not read as a placeholder."""
    return text.replace("{", "{{").replace("}", "}}")


def sizes_named(sizes: Mapping[str, int]) -> tuple[str, tuple[str, ...]]:
    """What makes a sweep as large as it is, for an :class:`InputError`'s detail and ``names``: each parameter of
    ``sizes`` (name -> count of values) with several values, largest first (``("{0} 1,000 x {1} 10",
    ("bandwidth", "ratio"))``); ``"one value each"`` where none has several."""
    many = tuple(sorted((d for d, n in sizes.items() if n > 1), key=lambda d: -sizes[d]))
    text = " x ".join(f"{{{i}}} {sizes[d]:,}" for i, d in enumerate(many))
    return text or "one value each", many


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
