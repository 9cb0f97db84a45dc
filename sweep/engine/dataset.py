"""Results as ``xarray`` objects: coordinates with their units, shared by every in-memory result."""

import xarray as xr

from netsweep_jax.sweep.core.schema import coordinate_attrs


def coordinates(grid, drop=()):
    """xarray coordinate variables of ``grid``'s dims (except ``drop``), with units."""
    return {d: xr.Variable(d, v, coordinate_attrs(d)) for d, v in grid.coords().items() if d not in drop}
