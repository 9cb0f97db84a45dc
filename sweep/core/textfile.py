"""Reading the user's text files: one rule for encodings and for files that are not text."""

import csv
import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from netsweep_jax.sweep.core.errors import InputError, where


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


def _text(path: Path, what: str, param: str | None = None, replace: bool = False) -> str:
    if not path.is_file():  # named with the option that gave it, where one did (``--codec-cost .``)
        raise InputError(f"{path}: {not_a_file(path, what)}", param=param)
    try:
        return path.read_text(encoding="utf-8-sig", errors="replace" if replace else "strict")
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a text file (expected a UTF-8 {what})") from None


def _physical_lines(text: str) -> list[str]:
    # Lines as an editor numbers them: ends at \n, \r\n or \r only (str.splitlines also ends a line at
    # U+2028, form feeds and other separators, which may sit inside a cell).
    lines = re.split(r"\r\n|\r|\n", text)
    return lines[:-1] if lines and lines[-1] == "" else lines


def read_lines(
    path: str | os.PathLike[str], what: str, param: str | None = None, *, replace: bool = False
) -> list[str]:
    """The lines of a UTF-8 text file (a byte-order mark is allowed); ``what`` names it in errors, and ``param``
    the option that gave it where it is no file. An empty path names no file (``Path('')`` is the current folder:
    the API's ``codec_cost=''`` was "., a directory", a hunt), as the command line refuses one. A byte that is not
    UTF-8 refuses the file, or with ``replace`` reads as U+FFFD (a file whose few non-ASCII bytes nothing reads:
    a launch script's data path)."""
    if isinstance(path, str) and not path:
        raise InputError(f"'': an empty path names no file; give a {what}", param=param)
    return _physical_lines(_text(Path(path), what, param, replace))


# A fabric file's "format" (sweep.io.fabric_file), named here where one is given in a CSV's place.
FABRIC_FORMAT = "netsweep fabric"
# The column header nccl-tests prints above its table ("#  size  count  type  redop  root  time ..."), after a
# launcher's label where one prefixes every line.
NCCL_TESTS_LOOKED_AT = 100_000  # lines: NCCL_DEBUG=INFO writes thousands before the table
NCCL_TESTS_HEADER = re.compile(r"^.{0,40}?#\s+size\s+count\s+type\s+redop\s+root\b")


def read_csv_records(
    path: str | os.PathLike[str], what: str, comments_after_header: bool = True
) -> list[tuple[int, list[str]]]:
    """The records of a UTF-8 CSV file as (line where the record starts, cells): a quoted cell may hold
    commas, newlines or any other character; a line starting with ``#`` where a record would start is a
    comment (a file may say where its numbers come from), after the header too unless
    ``comments_after_header`` is False (a profile's tensor may be named ``#fc.bias``: dropped as a comment, the
    profile lost a gradient in silence, a review); blank lines give empty records, but before the first record
    that is not (a header is never blank: a blank line after a file's comments is not its header)."""
    path = Path(path)
    lines = _physical_lines(_text(path, what))
    if any(NCCL_TESTS_HEADER.match(line) for line in lines[:NCCL_TESTS_LOOKED_AT]):
        # Its table's rows read as a CSV's header ("missing column(s) ...; header is 8  2  float  sum ...").
        raise InputError(
            f"{path}: a log nccl-tests printed, where a CSV {what} is expected; sweep calibrate --nccl-tests reads "
            "such logs (sweep validate --nccl a CSV in nccl_tests.csv's format)"
        )
    _refuse_json(path, lines, what)
    at = {"start": True, "line": 0}

    def feed() -> Iterator[str]:
        for number, line in enumerate(lines, 1):
            if at["start"]:
                if line.startswith("#") and (comments_after_header or not records):
                    continue
                at["start"], at["line"] = False, number
            yield line + "\n"

    records: list[tuple[int, list[str]]] = []
    try:
        for cells in csv.reader(feed(), strict=True):
            if records or "".join(cells).strip():
                records.append((at["line"], cells))
            at["start"] = True
    except csv.Error as e:
        raise InputError(f"{path}:{at['line']}: not a CSV record ({e})") from None
    return records


def _refuse_json(path: Path, lines: list[str], what: str) -> None:
    """A JSON document where a CSV is expected, said as that (a fabric file given to calibrate was "expected 1
    cells, got 2" of its second line, a hunt): a fabric file, which ``sweep calibrate --nccl-tests`` writes, is
    one grid, plan, need and compare take as --fabric."""
    if not next((line.strip() for line in lines if line.strip()), "").startswith(("{", "[")):
        return
    try:
        document = json.loads("\n".join(lines))
    except ValueError:
        return  # a CSV whose first cell starts with a brace: read as one
    fabric = isinstance(document, dict) and document.get("format") == FABRIC_FORMAT
    said = "a fabric file (grid, plan, need and compare take it as --fabric)" if fabric else "a JSON document"
    raise InputError(f"{path}: {said}, where a CSV {what} is expected")


def read_csv_table(
    path: str | os.PathLike[str], what: str
) -> tuple[int, list[str], list[tuple[int, dict[str, str]]]]:
    """A CSV file with a header (:func:`read_csv_records`) as (the header's line, its column names, each row as
    (its line, column -> cell)), names and cells stripped, blank rows dropped. One error for an empty file, a
    column named twice (a row's dict would keep its last cell: a second busbw column read in place of the
    first, a hunt) or a row of another width than the header."""
    path = Path(path)
    numbered = read_csv_records(path, what)
    if not numbered:
        raise InputError(f"{path}: empty file; expected a header and rows")
    header_line, header = numbered[0][0], [c.strip() for c in numbered[0][1]]
    twice = next((c for i, c in enumerate(header) if c in header[:i]), None)
    if twice is not None:
        raise InputError(f"{where(path, header_line)}: column {twice!r} appears twice; each column once")
    rows = []
    for line, cells in numbered[1:]:
        if not "".join(cells).strip():
            continue
        if len(cells) != len(header):
            raise InputError(f"{where(path, line)}: expected {len(header)} cells, got {len(cells)}")
        rows.append((line, dict(zip(header, (c.strip() for c in cells), strict=True))))
    return header_line, header, rows


def read_json_file(
    path: str | os.PathLike[str], what: str, expected: str, param: str | None = None, **hooks: Any
) -> Any:
    """The JSON of the UTF-8 file at ``path`` (``what`` and ``param`` name it where it is no file:
    :func:`read_lines`), parsed as :func:`parsed_json` parses it."""
    return parsed_json("\n".join(read_lines(path, what, param)), path, expected, param, **hooks)


def parsed_json(
    text: str, path: str | os.PathLike[str], expected: str, param: str | None = None, **hooks: Any
) -> Any:
    """``text``, the JSON of the file at ``path``, parsed (``hooks``: :func:`json.loads`' own), or one error naming
    the file, its line where JSON's parser has one, and what was ``expected``: text that is not JSON, nesting
    deeper than Python's parser goes, an integer of more digits than Python converts (4,300: a traceback
    before), or a key twice in one object (JSON keeps the last in silence: a profile's ``iteration_time_s`` given
    twice took the second, a hunt; ``object_pairs_hook=None`` reads as JSON does)."""

    def refuse_twice(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise InputError(f"{path}: key {key!r} twice in one object; give it once", param=param)
            seen.add(key)
        return dict(pairs)

    hooks.setdefault("object_pairs_hook", refuse_twice)
    try:
        return json.loads(text, **hooks)
    except json.JSONDecodeError as e:
        raise InputError(
            f"{where(path, e.lineno)}: not valid JSON ({e.msg}); expected {expected}", param=param
        ) from None
    except RecursionError:
        raise InputError(f"{path}: JSON nested too deeply; expected {expected}", param=param) from None
    except InputError:  # a hook's own refusal (an InputError is a ValueError)
        raise
    except ValueError:  # int('9' * 5000): Python's limit on the digits of an integer it converts
        raise InputError(
            f"{path}: a number of more digits than Python converts ({sys.get_int_max_str_digits()}); expected "
            f"{expected}",
            param=param,
        ) from None
