"""An empty path on a command line: Click reads ``--out ''`` as ``Path('.')``, the current folder, so
``sweep paper --out ''`` wrote its report there and ``--profiles-dir ''`` read it (a hunt); here it is
refused, before anything is parsed, naming the option, as an empty value of any other option is."""

from collections.abc import Sequence

from typer import _click
from typer._click.core import Parameter
from typer._click.exceptions import UsageError
from typer.core import (  # the Click Typer vendors: its parameters are its own classes
    TyperArgument,
    TyperOption,
)


def _is_path(param: Parameter, ctx: _click.Context) -> bool:
    """Whether ``param`` takes paths (``Path``, ``Path | None`` or ``list[Path]``), as its help shows its type."""
    shown = param.display_type(ctx).strip("<>").lower()  # type: ignore[attr-defined]
    return shown in ("path", "list[path]")


def refuse_empty_paths(params: Sequence[Parameter], args: Sequence[str], ctx: _click.Context) -> None:
    """Raise a usage error (one line, exit code 2) where ``args`` give a path option an empty value
    (``--out ''``, ``--out=``), or give an empty argument to a command whose arguments are all paths
    (``sweep show ''``). The token after an option that takes a value is its value whatever it looks like, as
    Click reads it; ``--`` ends the options."""
    takes_value: dict[str, bool] = {}  # option spelling -> whether its value is a path
    for param in params:
        if isinstance(param, TyperOption) and not (param.is_flag or param.count):
            for opt in (*param.opts, *param.secondary_opts):
                takes_value[opt] = _is_path(param, ctx)
    arguments = [p for p in params if isinstance(p, TyperArgument)]
    path_arguments = bool(arguments) and all(_is_path(p, ctx) for p in arguments)
    at, options = 0, True
    while at < len(args):
        token = args[at]
        if options and token == "--":
            options = False
        elif options and token.startswith("-") and token.partition("=")[0] in takes_value:
            option, equals, given = token.partition("=")
            value: str | None = given
            if not equals:  # its value, the next token
                at += 1
                value = args[at] if at < len(args) else None
            if takes_value[option] and value == "":
                raise UsageError(f"{option} '': an empty path names no file or folder; give one")
        elif token == "" and path_arguments:
            raise UsageError("'': an empty path names no file or folder; give one")
        at += 1
