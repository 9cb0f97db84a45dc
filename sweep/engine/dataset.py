"""Results as ``xarray`` objects: coordinates with their units, shared by every in-memory result."""

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any, Protocol

import numpy.typing as npt

if TYPE_CHECKING:  # a type only: xarray (0.5-0.8 s to load) is loaded where a Dataset is built
    import xarray as xr

from netsweep_jax.sweep.core.families import Family


class Coordinated(Protocol):
    """Anything with named coordinates: a :class:`~sweep.engine.grid.Grid` or a layout grid."""

    @property
    def family(self) -> Family: ...

    def coords(self) -> Mapping[str, npt.NDArray[Any]]: ...


def coordinates(grid: Coordinated, drop: Collection[str] = ()) -> "dict[str, xr.Variable]":
    """xarray coordinate variables of ``grid``'s dims (except ``drop``), with units."""
    import xarray as xr

    attrs = grid.family.coordinate_attrs
    return {d: xr.Variable(d, v, attrs(d)) for d, v in grid.coords().items() if d not in drop}
