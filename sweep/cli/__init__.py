"""Floor 6: the ``sweep`` command (Typer). Parses, calls the library, prints.

Imports every floor below it, lazily, so ``--help`` stays fast.
"""
