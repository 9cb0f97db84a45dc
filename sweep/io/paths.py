"""Output paths: what netsweep may write, and writing so that nothing is left half-done.

netsweep writes and replaces regular files only (never a directory, a link, a device
or a FIFO), refuses a file another run holds, checks that the directory can be
written before any work starts, and writes each file under ``OUT.partial`` first,
renaming it into place only when it is complete.
"""

import fcntl
import os
import tempfile
from collections.abc import Callable, Collection
from pathlib import Path

from netsweep_jax.sweep.core.errors import InputError


def partial_path(out: str | Path) -> Path:
    """Where ``out`` is written until it is complete."""
    return Path(str(out) + ".partial")


def regular_or_absent(path: str | Path, param: str = "out") -> None:
    """Refuse a path that exists as anything but a regular file."""
    path = Path(path)
    if path.is_symlink() or (path.exists() and not path.is_file()):
        kind = "a link" if path.is_symlink() else "a directory" if path.is_dir() else "not a regular file"
        raise InputError(f"{path}: {kind}; netsweep writes and replaces regular files only", param=param)


def in_use(path: str | Path) -> bool:
    """True when another process has ``path`` open for writing (HDF5 holds a file lock while it does)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def writable_directory(out: str | Path, param: str = "out", create: bool = False) -> None:
    """Refuse ``out`` unless its directory exists (or is created) and can be written."""
    parent = Path(out).parent
    if create:
        parent.mkdir(parents=True, exist_ok=True)
    if not parent.is_dir():
        raise InputError(f"{out}: directory {parent} does not exist or is not a directory", param=param)
    try:
        with tempfile.NamedTemporaryFile(dir=parent, prefix=".netsweep-write-test-"):
            pass
    except OSError as e:
        raise InputError(f"{out}: directory {parent} cannot be written ({e.strerror})", param=param) from None


def report_directory(out_dir: str | Path, param: str = "out") -> Path:
    """A directory for a report (created if absent); refuse a file or a link in its place, or one not writable."""
    out_dir = Path(out_dir)
    if out_dir.is_symlink() or (out_dir.exists() and not out_dir.is_dir()):
        raise InputError(f"{out_dir}: not a directory; give a directory for the report", param=param)
    out_dir.mkdir(parents=True, exist_ok=True)
    writable_directory(out_dir / "REPORT.md", param)
    return out_dir


def check_new_file(out: str | Path, *, force: bool, param: str = "out",
                   suffixes: Collection[str] | None = None) -> None:
    """Refuse an output file that cannot be written, is not a regular file, or exists (without ``force``)."""
    out = Path(out)
    regular_or_absent(out, param)
    regular_or_absent(partial_path(out), param)
    if suffixes and out.suffix.lower() not in suffixes:
        raise InputError(f"{out}: unknown file type {out.suffix!r}; use one of {', '.join(suffixes)}", param=param)
    writable_directory(out, param)
    if out.exists() and not force:
        raise InputError(f"{out}: file exists; pass --force to overwrite it", param=param)


def write_atomically(out: str | Path, write: Callable[[Path], object]) -> Path:
    """Call ``write(path)`` on ``OUT.partial``, then rename it to ``out``; nothing is left on failure."""
    out = Path(out)
    partial = partial_path(out)
    try:
        write(partial)
        os.replace(partial, out)
    finally:
        partial.unlink(missing_ok=True)
    return out
