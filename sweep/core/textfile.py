"""Reading the user's text files: one rule for encodings and for files that are not text."""

import os
from pathlib import Path

from netsweep_jax.sweep.core.errors import InputError


def not_a_file(path: Path, what: str) -> str:
    """Why ``path``, which is not a regular file, cannot be read as a ``what`` (a FIFO or a device is never
    opened: reading one would wait for a writer)."""
    if path.is_dir():
        return f"a directory, not a {what}"
    return (
        f"not a regular file (a FIFO, socket or device), not a {what}"
        if path.exists()
        else f"{what} not found"
    )


def read_lines(path: str | os.PathLike[str], what: str) -> list[str]:
    """The lines of a UTF-8 text file (a byte-order mark is allowed); ``what`` names it in errors."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: {not_a_file(path, what)}")
    try:
        return path.read_text(encoding="utf-8-sig").splitlines()
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a text file (expected a UTF-8 {what})") from None
