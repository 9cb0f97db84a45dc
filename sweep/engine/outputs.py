"""What a sweep keeps and in which dtypes, checked by one rule for both model families: ``--vars``, ``--store``
and the compute dtype."""

from collections.abc import Mapping, Sequence

import numpy as np

from netsweep_jax.sweep.core.errors import InputError, literal
from netsweep_jax.sweep.core.families import Family
from netsweep_jax.sweep.core.schema import DTYPES, STORE_DTYPES
from netsweep_jax.sweep.core.values import parse_names


def kept_outputs(
    family: Family, variables: str | Sequence[str] | None, default: Sequence[str] | None = None
) -> tuple[str, ...]:
    """The outputs a sweep keeps, in ``family``'s cube order whatever order they came in: ``variables`` (a
    comma list or names, each one of the family's outputs), or ``default`` where None (None: every output)."""
    if variables is None:
        variables = tuple(family.variables) if default is None else default
    return tuple(family.in_cube_order(parse_names(variables, "vars", tuple(family.variables))))


def store_dtype(store: str | None) -> str:
    """The dtype a cube stores its float outputs in ('' for the compute dtype: ``store`` None); any case
    (``--store Float16`` is float16)."""
    store = store.lower() if isinstance(store, str) else store
    # a name, or None: anything else (a NumPy array's `in` raised a TypeError, a hunt) is refused as a name is
    if store is not None and (not isinstance(store, str) or store not in STORE_DTYPES):
        raise InputError(f"{store!r}: must be one of {', '.join(STORE_DTYPES)}", param="store")
    return store or ""


def check_dtype(dtype: str) -> str:
    """The compute dtype, float32 or float64, in any case (as ``store`` is: ``FLOAT64`` was refused, a hunt);
    any other refused."""
    name = dtype.lower() if isinstance(dtype, str) else dtype
    if not isinstance(name, str) or name not in DTYPES:
        raise InputError(f"{dtype!r}: must be float32 or float64", param="dtype")
    return name


def check_float16(arrays: Mapping[str, np.ndarray], family: Family) -> None:
    """Refuse a block of ``family``'s outputs that a float16 store cannot hold (one line, naming the variable
    and the limit: float16 holds 6e-8 to 65504; the family's ``positive`` outputs are never 0 where defined)."""
    positive, variables = family.positive, family.variables
    for name, a in arrays.items():
        if a.dtype.kind == "f" and np.isinf(a).any():
            # {0}: the store's option or keyword, as the caller spells it (the API's said --store: a hunt)
            raise InputError(
                f"float16: {name} exceeds 65504 ({literal(variables[name][0])}) in this grid; use {{0}} float32",
                param="store",
                names=("store",),
            )
        if name in positive and (a == 0).any():
            raise InputError(
                f"float16: {name} falls below 6e-8 in this grid; use {{0}} float32",
                param="store",
                names=("store",),
            )
