"""An option given twice on a command line: Click keeps the last value in silence (``--bw 10 --bw 20`` swept
20 alone); here it is refused, before anything is parsed, naming both."""

from collections.abc import Sequence

from typer._click.core import Parameter
from typer._click.exceptions import UsageError
from typer.core import TyperOption  # the Click Typer vendors: its options are its own class


def value_options(params: Sequence[Parameter]) -> dict[str, tuple[str, bool]]:
    """Every spelling (``--bw``, ``--bandwidth``) of an option that takes one value, once: its parameter's name
    and whether its value may be a list (an axis's, ``VALUES``, or one whose help says a comma list). Options meant
    to repeat (``--sel``,
    ``--profile``) and flags are left out."""
    spelled: dict[str, tuple[str, bool]] = {}
    for param in params:
        if isinstance(param, TyperOption) and not (param.multiple or param.is_flag or param.count):
            for opt in (*param.opts, *param.secondary_opts):
                listed = (
                    param.metavar == "VALUES" or "comma" in (param.help or "").lower()
                )  # as its help says
                spelled[opt] = (str(param.name), listed)
    return spelled


def refuse_repeated(
    params: Sequence[Parameter], args: Sequence[str], help_names: Sequence[str] = ("--help",)
) -> None:
    """Raise a usage error (one line, exit code 2) where ``args`` give one option twice, under one
    spelling or two (``--bw 10 --bandwidth 20``). The token after an option is its value whatever it looks like,
    as Click reads it; ``--`` ends the options. A ``--help`` (``help_names``) among the options wins: Click shows
    the help, as it does whatever else the line holds."""
    spelled = value_options(params)
    seen: dict[str, str] = {}
    twice = ""
    at = 0
    while at < len(args) and args[at] != "--":
        option, equals, _ = args[at].partition("=")
        if option in help_names:
            return
        name, listed = spelled.get(option, (None, False))
        if name is not None:
            if name in seen and not twice:
                twice = (
                    f"{option} given twice"
                    if seen[name] == option
                    else f"{seen[name]} and {option} are one option, given twice"
                ) + (": give it once" + (" (a comma list gives several values)" if listed else ""))
            seen[name] = option
            at += 0 if equals else 1  # its value, the next token
        at += 1
    if twice:
        raise UsageError(twice)
