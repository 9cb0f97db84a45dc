"""``--help`` as plain text that fits the terminal (at most 80 columns) and never cuts a word.

Typer's Rich panels put the option names, their types and the help in three columns; at 80
columns the help column is a few words wide and a long word (a path, an example) is cut with
"…". Here each command's options are a definition list per panel (``rich_help_panel``): the
option and a short metavar in a column of at most :data:`OPTION_COLUMN` characters (a longer
one gets its own line), the whole help text wrapped beside it. Nothing is imported that the
CLI does not load anyway, so ``sweep --help`` stays fast.
"""

import textwrap
from typing import Any

import typer
from typer import _click
from typer.core import TyperCommand, TyperGroup

OPTION_COLUMN = 24  # the option column's width; an option spelled longer puts its help on the next line
OPTIONS = "Options"
METAVARS = {"str": "TEXT", "path": "PATH", "int": "INT", "float": "NUM", "bool": "BOOL"}


def _plain(text: str) -> str:
    """A help text as shown: Rich's escaped brackets as typed."""
    return text.replace("\\[", "[")


def metavar(param: Any, ctx: _click.Context) -> str:
    """The short placeholder of an option's value: its own metavar, else TEXT, PATH, INT or NUM."""
    if param.metavar is not None:
        return str(param.metavar)
    shown = param.display_type(ctx).strip("<>")
    for prefix in ("list[", "int range", "float range"):
        if shown.startswith(prefix):
            shown = shown[len(prefix) :].rstrip("]") if prefix == "list[" else prefix.split()[0]
    return METAVARS.get(shown, shown.upper())


def option_row(param: Any, ctx: _click.Context) -> tuple[str, str] | None:
    """``(spelling, help)`` of one option or argument, as a definition-list row."""
    record = param.get_help_record(ctx)
    if record is None:
        return None
    if param.param_type_name == "argument":
        return param.name.upper(), _plain(record[1])
    long = [o for o in param.opts if o.startswith("--")]
    short = [o for o in param.opts if not o.startswith("--")]
    spelling = ", ".join(short + long)
    if not param.is_flag and not param.count:
        spelling += f" {metavar(param, ctx)}"
    if param.secondary_opts:
        spelling += " / " + ", ".join(param.secondary_opts)
    return spelling, _plain(record[1])


def wrap(text: str, width: int) -> list[str]:
    """``text``'s lines at most ``width`` wide, paragraphs kept; words are never split (not even
    at a hyphen: nccl-ring stays whole), so a word longer than ``width`` overflows instead."""
    lines: list[str] = []
    for paragraph in text.split("\n\n"):
        if lines:
            lines.append("")
        lines += textwrap.wrap(
            " ".join(paragraph.split()), width, break_long_words=False, break_on_hyphens=False
        )
    return lines


def write_rows(formatter: _click.HelpFormatter, rows: list[tuple[str, str]], column: int) -> None:
    """A definition list whose first column is ``column`` wide in every section (click's is per list)."""
    indent = " " * formatter.current_indent
    width = max(formatter.width - formatter.current_indent - column, 20)
    for first, second in rows:
        lines = wrap(second, width) or [""]
        if len(first) + 2 <= column:
            formatter.write(f"{indent}{first:<{column}}{lines[0]}".rstrip() + "\n")
        else:
            formatter.write(f"{indent}{first}\n")
            lines = lines if second else []
            formatter.write("".join(f"{indent}{'':<{column}}{line}\n" for line in lines[:1]))
        formatter.write("".join(f"{indent}{'':<{column}}{line}\n" for line in lines[1:]))


def column_width(rows: list[tuple[str, str]]) -> int:
    """The option column's width: the longest spelling that fits :data:`OPTION_COLUMN`, plus 2 spaces."""
    return min(
        max((len(first) + 2 for first, _ in rows if len(first) + 2 <= OPTION_COLUMN), default=0),
        OPTION_COLUMN,
    )


def format_options(command: _click.Command, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
    """Arguments, then the options of each help panel (Options first), as definition lists with one
    option column."""
    panels: dict[str, list[tuple[str, str]]] = {"Arguments": [], OPTIONS: []}
    for param in command.get_params(ctx):
        row = option_row(param, ctx)
        if row is not None:
            default = "Arguments" if param.param_type_name == "argument" else OPTIONS
            panels.setdefault(getattr(param, "rich_help_panel", None) or default, []).append(row)
    column = column_width([row for rows in panels.values() for row in rows])
    for name, rows in panels.items():
        if rows:
            with formatter.section(name):
                write_rows(formatter, rows, column)


def format_help_text(command: _click.Command, formatter: _click.HelpFormatter) -> None:
    if command.help:
        formatter.write_paragraph()
        with formatter.indentation():
            formatter.write_text(_plain(command.help))


class HelpCommand(TyperCommand):
    """A command whose ``--help`` is :func:`format_options`'s, and that refuses an option given twice
    (:func:`~sweep.cli.repeated.refuse_repeated`: Click kept the last) and an empty path
    (:func:`~sweep.cli.empty_paths.refuse_empty_paths`: Click read it as the current folder)."""

    def parse_args(self, ctx: _click.Context, args: list[str]) -> list[str]:
        from netsweep_jax.sweep.cli.empty_paths import refuse_empty_paths
        from netsweep_jax.sweep.cli.repeated import refuse_repeated

        refuse_repeated(self.get_params(ctx), args, ctx.help_option_names)
        # --help wins, as Click shows it whatever else is given
        if not set(args) & set(ctx.help_option_names):
            refuse_empty_paths(self.get_params(ctx), args, ctx)
        return super().parse_args(ctx, args)

    def collect_usage_pieces(self, ctx: _click.Context) -> list[str]:
        """``[OPTIONS] FILE`` (an optional argument in brackets), as the Arguments section spells them."""
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                name = str(param.name).upper() + ("..." if param.nargs != 1 else "")
                pieces.append(name if param.required else f"[{name}]")
        return pieces

    def format_help_text(self, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
        format_help_text(self, formatter)

    def format_options(self, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
        format_options(self, ctx, formatter)


class HelpGroup(TyperGroup):
    """A command group whose ``--help`` lists each command with its first paragraph, uncut."""

    def format_help_text(self, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
        format_help_text(self, formatter)

    def format_options(self, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
        format_options(self, ctx, formatter)
        self.format_commands(ctx, formatter)

    def format_commands(self, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                first = _plain(command.help or "").strip().split("\n\n")[0]
                rows.append((name, " ".join(first.split())))
        if rows:
            with formatter.section("Commands"):
                write_rows(formatter, rows, column_width(rows))


class Typer(typer.Typer):
    """``typer.Typer`` whose commands and groups print :mod:`helptext`'s help (plain, never cut)."""

    def __init__(self, **settings: Any) -> None:
        super().__init__(cls=HelpGroup, rich_markup_mode=None, **settings)

    def command(self, *args: Any, cls: type[TyperCommand] | None = None, **settings: Any) -> Any:
        return super().command(*args, cls=cls or HelpCommand, **settings)
