"""Keyword checking for the public functions: a keyword a function does not take is an
:class:`~sweep.core.errors.InputError` naming it and the keywords it takes, not a ``TypeError``.

The keywords a function takes are its named parameters and, for ``**options: Unpack[SomeTypedDict]``
(PEP 692), that TypedDict's keys.
"""

import functools
import inspect
from collections.abc import Callable
from typing import ParamSpec, TypeVar, get_args, get_origin

from typing_extensions import Unpack, get_type_hints, is_typeddict

from netsweep_jax.sweep.core.errors import InputError

P = ParamSpec("P")
R = TypeVar("R")


def refuse_unknown_keywords(function: Callable[P, R]) -> Callable[P, R]:
    """``function`` unchanged, except that a keyword it does not take raises :class:`InputError`
    (naming the keyword and the ones it takes) instead of ``TypeError``.

    The keywords it takes are its named parameters and, for ``**options: Unpack[SomeTypedDict]``
    (PEP 692), that TypedDict's keys.
    """
    return _checked(function, accepted_keywords(function))


def refuse_unknown_keywords_but(*refused: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """:func:`refuse_unknown_keywords`, whose refusal does not list ``refused`` among the keywords taken: keywords
    a shared TypedDict declares that the function itself refuses, with its own reason (:func:`sweep.solve`
    takes :func:`sweep.evaluate`'s options but keeps its answer in memory: no ``store``)."""

    def decorate(function: Callable[P, R]) -> Callable[P, R]:
        taken = accepted_keywords(function)
        return _checked(function, taken, [k for k in taken if k not in refused])

    return decorate


def _checked(function: Callable[P, R], taken: list[str], listed: list[str] | None = None) -> Callable[P, R]:
    """``function`` raising :class:`InputError` for a keyword outside ``taken``, naming ``listed`` (None: all of
    ``taken``) as the ones it takes."""

    @functools.wraps(function)
    def checked(*args: P.args, **kwargs: P.kwargs) -> R:
        unknown = sorted(set(kwargs) - set(taken))
        if unknown:
            keyword = option_keywords().get(unknown[0])
            if keyword in taken and keyword != unknown[0]:
                option = "--" + unknown[0].replace("_", "-")
                raise InputError(
                    f"unknown keyword {unknown[0]!r} of {function.__name__}(): the CLI's {option} is the keyword "
                    f"{keyword!r} here"
                )
            raise InputError(
                f"unknown keyword {unknown[0]!r} of {function.__name__}(); it takes "
                f"{', '.join(taken if listed is None else listed)}"
            )
        return function(*args, **kwargs)

    return checked


@functools.cache
def option_keywords() -> dict[str, str]:
    """Each CLI option's spelling as a Python keyword (``--cpu-offloading-num-layers``:
    ``cpu_offloading_num_layers``; its Megatron-LM alias too) -> the API keyword it is (``offload_layers``),
    from the options' declarations: where a user types the option's name, the refusal names the keyword."""
    from netsweep_jax.sweep.core.axes import NUMERIC_AXES  # at use: only a refusal needs the declarations
    from netsweep_jax.sweep.core.layout_axes import AXES, MEGATRON_ALIASES, TEXT_OPTIONS
    from netsweep_jax.sweep.core.schema import OTHER_OPTIONS

    flags: list[tuple[str, str]] = [(spec.option, name) for name, spec in {**NUMERIC_AXES, **AXES}.items()]
    flags += [(flag, name) for name, flag in MEGATRON_ALIASES.items()]
    flags += [(flag, name) for name, o in TEXT_OPTIONS.items() for flag in (o.flag, o.alias) if flag]
    # and the other options' (--intra-bw: intra_bandwidth, --iteration-time: load_profile's t1; a hunt)
    flags += [(flag, name) for name, flag in OTHER_OPTIONS.items() if "=" not in name]
    return {flag.lstrip("-").replace("-", "_"): name for flag, name in flags}


def accepted_keywords(function: Callable[..., object]) -> list[str]:
    """The keywords ``function`` takes: its named parameters, then the keys of the TypedDict
    its ``**`` parameter is annotated with (``Unpack[...]``), if any."""
    hints = get_type_hints(function, include_extras=True)
    taken: list[str] = []
    for p in inspect.signature(function).parameters.values():
        if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD):
            taken.append(p.name)
        elif p.kind is p.VAR_KEYWORD:
            spec = hints.get(p.name)
            keys = get_args(spec)[0] if get_origin(spec) is Unpack else None
            if not is_typeddict(keys):
                raise TypeError(
                    f"{function.__name__}(**{p.name}): annotate it Unpack[a TypedDict] "
                    f"so the keywords it takes are known"
                )
            taken += keys.__annotations__
    return taken
