"""The command line's machinery: options declared as ``inspect.Parameter`` groups, added to a command by
:func:`options`, which also turns a domain error (:class:`~sweep.core.errors.InputError`) into one line on
stderr naming the CLI option and exit code 2, with no traceback and no output file.

Only Typer and the schema are imported at start-up; each command imports what it needs, so
``sweep --help`` does not load JAX.
"""

import copy
import functools
import inspect
import shlex
import sys
import typing
from collections.abc import Callable
from typing import Annotated, Any

import typer

from netsweep_jax.sweep.core.axes import NUMERIC_AXES
from netsweep_jax.sweep.core.errors import Damaged, InputError, WriteFailed
from netsweep_jax.sweep.core.interrupts import Interrupted, exit_code
from netsweep_jax.sweep.core.layout_axes import DEFAULT_GPU, uses_nccl
from netsweep_jax.sweep.core.schema import cli_message, option_of

SYNTAX = (
    "Values: a list 10,25,100; a range 1..100 (step 1), 1..100:5 (step 5), "
    "1..1000@20 (20 points), 1..1000@20log (20 log-spaced points); mix with commas."
)


def fail(message: str, code: int = 2) -> Any:
    """One line ``error: MESSAGE`` on stderr, and exit with ``code``."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=code)


def abandon(message: str, code: int) -> Any:
    """One line ``error: MESSAGE`` on stderr, and end the process now with ``code``: for a failure that leaves a
    thread blocked in native code (XLA's connect to a coordinator no peer joined), which the interpreter's
    teardown would wait on, or log about."""
    import os

    typer.echo(f"error: {message}", err=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def param(
    name: str, annotation: Any, default: Any, *flags: str, help: str, **extra: Any
) -> inspect.Parameter:
    """A keyword-only option: its name, type, default, flags (``--tp``) and help."""
    return inspect.Parameter(
        name,
        inspect.Parameter.KEYWORD_ONLY,
        default=default,
        annotation=Annotated[annotation, typer.Option(*flags, help=help, **extra)],
    )


def hidden(parameter: inspect.Parameter) -> inspect.Parameter:
    """``parameter`` left out of ``--help``, still parsed: a command that shares an option it cannot use refuses it
    in its own words, without listing it."""
    kind, info = typing.get_args(parameter.annotation)
    info = copy.copy(info)
    info.hidden = True
    return parameter.replace(annotation=Annotated[kind, info])


def typed_number(kind: type, low: float | None = None, high: float | None = None) -> Callable[[str], Any]:
    """The ``parser`` of an option typed ``int`` or ``float``: its text by the one rule for a number
    (:func:`~sweep.core.values.decimal`: plain ASCII decimal notation; not Python's, which takes other
    scripts' digits, ``1_000``, ``inf`` and ``nan``), a whole number for ``int``, within ``low`` and ``high``
    where given. A refusal is Typer's one line naming the option."""

    def parse(text: Any) -> Any:
        from netsweep_jax.sweep.core.values import decimal  # at use: --help loads no numpy

        if not isinstance(text, str):  # the option's default, not the user's text
            return text

        try:
            value = decimal(text)
        except ValueError as e:
            raise typer.BadParameter(str(e)) from None
        if kind is int and not value.is_integer():
            raise typer.BadParameter(f"{text.strip()!r}: give a whole number")
        if (low is not None and value < low) or (high is not None and value > high):
            bounds = f"from {low:g}" if high is None else f"from {low:g} to {high:g}"
            raise typer.BadParameter(f"{text.strip()!r}: must be {bounds}")
        if kind is int:  # digits alone exactly (a float would round 10^23); 1e3 through its float
            digits = text.strip()
            return int(digits) if digits.lstrip("+-").isdigit() else int(value)
        return value

    return parse


# The cube's own names of the two options users type most, accepted beside the short ones, so that a typo
# of either (--bandwith) is answered with the option meant, not the nearest short name (--batch).
FULL_NAMES = {"bandwidth": "--bandwidth", "utilization": "--utilization"}


def axis_flags(name: str, option: str) -> tuple[str, ...]:
    """The option's flags: its short name, then the cube's name where :data:`FULL_NAMES` has one."""
    return (option, FULL_NAMES[name]) if name in FULL_NAMES else (option,)


def axis_parameters(defaults=None, help_suffix="", names=None, notes=None):
    """One ``--option`` per numeric axis (or per axis in ``names``), in cube order;
    ``defaults`` overrides the schema's; ``notes`` (name -> text) ends an axis's help."""
    defaults, notes = defaults or {}, notes or {}
    out = []
    for name, spec in NUMERIC_AXES.items():
        if names is not None and name not in names:
            continue
        default = defaults.get(name, spec.default)
        text = f"{spec.help}{help_suffix}{notes.get(name, '')}" + (
            f" {SYNTAX}" if name == "bandwidth" else " Value syntax as --bw."
        )
        out.append(
            param(name, str | None, default, *axis_flags(name, spec.option), help=text, metavar="VALUES")
        )
    return out


def take_busbw(kwargs: dict[str, Any]) -> None:
    """--busbw: the utilization it implies, in place of --util (one line on stderr says how)."""
    from netsweep_jax.sweep.core.values import utilization_from_busbw

    text = kwargs.pop("busbw", None)
    if text is None:
        return
    ctx = kwargs.get("ctx")
    if given(ctx, "utilization") if ctx is not None else kwargs.get("utilization") is not None:
        raise InputError(f"--busbw {text}: --util is given too; both set the utilization, give one")
    solved = _solved_axis(kwargs.get("solve"))
    if solved == "utilization":
        raise InputError(f"--busbw {text}: --solve utilization finds the utilization; drop --busbw")
    unrated = [item for item in str(text).split(",") if "@" not in item]
    if solved == "bandwidth" and unrated:
        # --bw cannot be given beside --solve bandwidth: only the rate in the value can say it (a hunt: the
        # advice "or give one --bw" was then refused)
        raise InputError(
            f"--busbw {text}: --solve bandwidth finds the link rate, so say the rate the busbw was measured on, "
            f"as {unrated[0].strip()}@400 (Gbit/s)"
        )
    listed = [c.strip().lower() for c in str(kwargs.get("collective") or "").split(",")]
    if (
        uses_nccl(listed)
        or str(kwargs.get("collectives") or "").strip().lower() == "nccl"
        or kwargs.get("fabric")
    ):
        # NCCL's pricing reads the transport's efficiency from nccl-tests curves, not one busbw as a utilization
        # (which it would apply on top of that efficiency): a measured busbw is never silently misread.
        raise InputError(
            f"--busbw {text}: sets the flat collectives' utilization (8 busbw / link); with --collective nccl "
            "or --fabric, fit your nccl-tests logs instead (sweep calibrate --nccl-tests LOG --out FABRIC, "
            "then --fabric FABRIC)"
        )
    system = _system_network(kwargs, ctx)
    bandwidth = None if system is not None else kwargs.get("bandwidth")
    own_nics = system is None or (ctx is not None and given(ctx, "nics_per_node"))
    nics = kwargs.get("nics_per_node") if own_nics or system is None else system[2]
    kwargs["utilization"], how = utilization_from_busbw(text, bandwidth, system[:2] if system else None, nics)
    if ctx is not None:  # set by the user, as --util would be: it overrides the GPU system's default
        ctx.set_parameter_source("utilization", ctx.get_parameter_source("busbw"))
    _unsaid.append(f"from --busbw: {how}")  # said once the command's input is taken (:func:`say`)


def _solved_axis(solve: object) -> str | None:
    """The axis ``--solve`` names, as need reads it (``BW``, ``util``: a review), None where none or one need
    refuses (refused there, with its rule)."""
    if not isinstance(solve, str):
        return None
    from netsweep_jax.sweep.analysis.need import axis_named

    try:
        return axis_named(solve)
    except InputError:
        return None


def _system_network(kwargs: dict[str, Any], ctx: Any) -> tuple[float, str, int] | None:
    """For a large-model sweep given no --bw: its GPU's usual system's NIC rate (Gbit/s), whose it is, and its
    NICs per node (the rate the sweep assumes, so --busbw is read against it); else None."""
    if ctx is None or given(ctx, "bandwidth") or "arch" not in kwargs:
        return None
    from netsweep_jax.sweep.analysis.layout_jobs import family_of
    from netsweep_jax.sweep.model.compute import GPUS

    family = family_of(kwargs.get("model"), kwargs.get("arch"), given(ctx, "model"), kwargs.get("profile"))
    if "bandwidth" not in family.derived_zero:  # the family's NIC rate is not its GPU system's by default
        return None
    names = [g.strip().lower() for g in str(kwargs.get("gpu") or DEFAULT_GPU).split(",")]
    if not all(g in GPUS for g in names) or len({(GPUS[g].nic_gbps, GPUS[g].nics) for g in names}) != 1:
        return None  # several systems' rates: --busbw names its link (X@GBIT), as before
    from netsweep_jax.sweep.core.values import whole_number
    from netsweep_jax.sweep.model.compute import system_settings

    # a host of the GPUs given (one value) has the system's NICs a GPU (compute.host_system)
    per_node = (
        whole_number(str(kwargs.get("gpus_per_node") or "").strip()) if given(ctx, "gpus_per_node") else None
    )
    spec = system_settings(names[0], per_node or 0)
    return spec["bandwidth"], f"the {names[0]} system's NICs", int(spec["nics_per_node"])


def options(*groups):
    """Add parameter groups to a command's signature (the command gets them as keywords),
    and turn an :class:`InputError` into one line naming the CLI option, exit code 2."""

    def decorate(command):
        sig = inspect.signature(command)
        own = [p for p in sig.parameters.values() if p.kind != inspect.Parameter.VAR_KEYWORD]
        added = [p for group in groups for p in group]

        @functools.wraps(command)
        def wrapper(**kwargs):
            if kwargs.pop("compile_cache", False):
                from netsweep_jax.sweep.engine.compile_cache import enable

                enable()
            _unsaid.clear()
            try:
                take_busbw(kwargs)
                answer = command(**kwargs)
                say_unsaid()
                return answer
            except InputError as e:
                _unsaid.clear()  # a refusal is one line
                fail(_from_environment(e, kwargs.get("ctx")) or cli_message(e))
            except (WriteFailed, Damaged) as e:  # the disk refused an output, a file changed: a fault
                fail(str(e), code=1)
            except (KeyboardInterrupt, Interrupted) as e:
                fail("interrupted", code=exit_code(e))

        del wrapper.__wrapped__  # Typer must see the new signature, not the original's
        wrapper.__signature__ = sig.replace(parameters=own + added)  # type: ignore[attr-defined]
        wrapper.__annotations__ = {p.name: p.annotation for p in own + added}
        return wrapper

    return decorate


def _from_environment(error: InputError, ctx: Any) -> str:
    """``error`` as the command line says it where its option's value came from its environment variable (a hunt:
    NETSWEEP_KERNEL=bogus was said as --kernel 'bogus', an option never typed), else '' (``ctx``: the command's
    context, None where it takes none)."""
    if ctx is None or error.param is None:
        return ""
    source = ctx.get_parameter_source(error.param)
    if getattr(source, "name", "") != "ENVIRONMENT":
        return ""
    param = next((p for p in ctx.command.params if p.name == error.param), None)
    if param is None or not isinstance(param.envvar, str):
        return ""
    option = option_of(error.param)
    return error.spelled(
        lambda name: f"{param.envvar} ({option})" if name == error.param else option_of(name)
    )


def command_line():
    """The command as typed, for the cube's provenance: the command that makes the cube from nothing, so a
    resumed run's without --resume (a hunt: a resumed plan or --reduce cube, written whole at the end, recorded
    --resume, which run again as shown is refused, nothing to resume; a grid's cube keeps its first run's)."""
    return "sweep " + shlex.join(a for a in sys.argv[1:] if a != "--resume")


def given(ctx: typer.Context, name: str) -> bool:
    """Whether the user set option ``name`` (on the command line or from its environment variable)."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT")


def given_options(ctx: typer.Context) -> frozenset[str]:
    """The names of every option the user set (see :func:`given`)."""
    return frozenset(name for name in ctx.params if given(ctx, name))


_unsaid: list[str] = []
"""Lines on how an option was read (``--busbw``'s utilization), said with the command's first line to the user
or when it ends, never before a refusal of its input: a refusal is one line."""


def say(text: str) -> None:
    """One line to the user beside the answer (stderr: stdout keeps the answer alone), after any unsaid."""
    say_unsaid()
    typer.echo(text, err=True)


def say_unsaid() -> None:
    """The lines :data:`_unsaid` holds, now."""
    while _unsaid:
        typer.echo(_unsaid.pop(0), err=True)


def say_assumed(text: str) -> None:
    """The ``assumed:`` line (:func:`~sweep.core.schema.assumed_line`), where something was assumed."""
    if text:
        say(f"assumed: {text}")
