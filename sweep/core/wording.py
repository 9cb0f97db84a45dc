"""Counts in messages: ``1 setting``, ``2 settings`` (one rule, so no message says ``1 configurations``)."""


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun``, plural unless ``n`` is 1, with thousands separators: ``1 setting``, ``1,024 layouts``.
    ``plural``: where it is not ``noun + 's'``."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def table_cell(text: object) -> str:
    """A label as a Markdown table cell holds it: a ``|`` of the user's escaped and a line break a space (each
    would split the row)."""
    return " ".join(str(text).splitlines()).replace("|", "\\|")
