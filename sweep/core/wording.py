"""Counts and numbers in messages: ``1 setting``, ``2 settings`` (one rule, so no message says ``1 configurations``);
a small number that rounds to nothing said as ``<0.01``, not ``0.00``."""

from typing import SupportsFloat


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun``, plural unless ``n`` is 1, with thousands separators: ``1 setting``, ``1,024 layouts``.
    ``plural``: where it is not ``noun + 's'``."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def table_cell(text: object) -> str:
    """A label as a Markdown table cell holds it: a ``|`` of the user's escaped and a line break a space (each
    would split the row)."""
    return " ".join(str(text).splitlines()).replace("|", "\\|")


def rounded(value: float, decimals: int = 0, percent: bool = False) -> str:
    """``value`` to ``decimals`` places (``percent``: as a percentage, ``0.25`` -> ``25%``), or, where it is
    positive but rounds to zero, ``<`` the least step those places show: ``<0.01``, ``<1%``. A tiny model's MFU
    of 0.0009 read ``0.00`` and a 0.3% share ``0%``, as if they were none (a hunt)."""
    kind = "%" if percent else "f"
    text = f"{value:,.{decimals}{kind}}"
    # positive, yet shown as nothing (0.005 rounds to even: "0.00"; a review)
    if value > 0 and float(text.rstrip("%").replace(",", "")) == 0:
        return f"<{10.0**-decimals / (100 if percent else 1):.{decimals}{kind}}"
    return text


def exact_text(value: SupportsFloat) -> str:
    """``value`` as headings, file names and ``assumed:`` lines say a value the user gave: six significant digits,
    or every digit where two values would read alike in six (a review: --oversubscription 1,1.0000001 named both
    plans' cubes alike, and the ``assumed:`` line said ``1:1, 1:1``)."""
    return f"{float(value):g}" if float(f"{float(value):g}") == float(value) else repr(float(value))
