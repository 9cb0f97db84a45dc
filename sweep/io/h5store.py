"""A netCDF-4 file's root group read through h5py as an xarray data store: what
``xarray.open_dataset(path, engine="h5netcdf")`` gives, lazily loaded, in a fraction of its time.

Why not h5netcdf: it looks every dimension scale up in the file again each time a variable's shape is asked
for, and xarray asks often: a plan cube (23 dims, 37 variables) took 0.9 s to open and 0.8 s more to read
(8,700 HDF5 lookups), a sizeable share of every ``show``, ``select`` and ``plot`` and of the test suite
(py-spy, 2026-12-03). Here each variable's dims are read once, from the references HDF5 keeps of its
attached scales (the netCDF-4 layout :func:`sweep.io.cube.write_netcdf4` and :func:`sweep.io.cube.create`
write), and xarray decodes the variables as it does h5netcdf's (CF conventions, ``coordinates``, booleans).

A root dataset whose dims are not all attached scales (a file some other tool wrote) is read by h5netcdf
instead (:func:`open_dataset`), as are files this reader cannot parse: the result is the same either way.
"""

import os
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import xarray as xr
from xarray.backends.common import AbstractDataStore, BackendArray
from xarray.coding.strings import create_vlen_dtype
from xarray.core import indexing

# Attributes netCDF-4 and HDF5's dimension scales use for their own bookkeeping (h5netcdf hides the same).
HIDDEN_ATTRS = frozenset(
    {
        "REFERENCE_LIST",
        "CLASS",
        "DIMENSION_LIST",
        "NAME",
        "_Netcdf4Dimid",
        "_Netcdf4Coordinates",
        "_nc3_strict",
        "_NCProperties",
    }
)
# The NAME netCDF-4 gives a dimension scale that is not also a variable (netCDF-C, nc4hdf.c).
PHONY_NAME = b"This is a netCDF dimension but not a netCDF variable"


class NotPlain(Exception):
    """The file is not laid out as this reader reads (a dataset with unattached dims, a non-dataset scale)."""


def _attribute(value: Any) -> Any:
    """An HDF5 attribute as h5netcdf and xarray give it: bytes decoded, string arrays as lists, an array of
    one element as that element."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "OS" or h5py.check_string_dtype(value.dtype) is not None:
            value = [v.decode("utf-8", "surrogateescape") if isinstance(v, bytes) else v for v in value.flat]
        if len(value) == 1:
            return value[0]
    return value


def attributes(obj: h5py.HLObject) -> dict[str, Any]:
    """An HDF5 object's attributes as xarray reads them, netCDF-4's own left out."""
    return {k: _attribute(v) for k, v in obj.attrs.items() if k not in HIDDEN_ATTRS}


class _Array(BackendArray):
    """One HDF5 dataset as a lazily indexed array (vlen strings as ``str`` objects)."""

    def __init__(self, dataset: h5py.Dataset) -> None:
        self.dataset = dataset
        self.shape = dataset.shape
        self.strings = h5py.check_string_dtype(dataset.dtype) is not None
        self.dtype = create_vlen_dtype(str) if self.strings else dataset.dtype

    def __getitem__(self, key: indexing.ExplicitIndexer) -> np.ndarray:
        return indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.OUTER_1VECTOR, self._getitem
        )

    def _getitem(self, key: tuple) -> np.ndarray:
        source = self.dataset.asstr() if self.strings else self.dataset
        return np.asarray(source[key])


class H5Store(AbstractDataStore):
    """The root group of an open netCDF-4 file: its variables (dims from their attached scales), attributes
    and dims. Closing the store closes the file."""

    def __init__(self, path: str | Path) -> None:
        self.path = os.path.abspath(os.path.expanduser(path))  # as xarray records a source
        self.file = h5py.File(path, "r")
        try:
            self.variables, self.dims, self.unlimited = self._read()
        except Exception:
            self.file.close()
            raise

    def _read(self) -> tuple[dict[str, xr.Variable], dict[str, int], set[str]]:
        """(variables, dims and their sizes, the unlimited dims) of the root group."""
        datasets = {name: obj for name, obj in self.file.items() if isinstance(obj, h5py.Dataset)}
        scales = {}  # ObjectID -> dim name; a scale's dim is named after its dataset, as netCDF-4 does
        phony: set[str] = set()
        unlimited: set[str] = set()
        for name, ds in datasets.items():
            if ds.attrs.get("CLASS") == b"DIMENSION_SCALE":
                if ds.ndim != 1:
                    raise NotPlain(name)
                scales[ds.id] = name
                if ds.maxshape[0] is None:
                    unlimited.add(name)
                if bytes(ds.attrs.get("NAME", b"")).startswith(PHONY_NAME):
                    phony.add(name)
        variables, dims = {}, {}
        for name, ds in datasets.items():
            if name in phony:
                dims[name] = ds.shape[0]
                continue
            names = self._dims(name, ds, scales)
            dims.update(zip(names, ds.shape, strict=True))
            variables[name] = xr.Variable(
                names, indexing.LazilyIndexedArray(_Array(ds)), attributes(ds), self._encoding(ds, names)
            )
        return variables, dims, unlimited

    def _dims(self, name: str, ds: h5py.Dataset, scales: dict) -> tuple[str, ...]:
        if ds.id in scales:
            return (name,)
        if ds.ndim == 0:
            return ()
        refs = ds.attrs.get("DIMENSION_LIST")
        if refs is None or len(refs) != ds.ndim or any(len(r) != 1 for r in refs):
            raise NotPlain(name)
        dims = tuple(scales.get(self.file[r[0]].id) for r in refs)
        if None in dims:
            raise NotPlain(name)
        return dims  # type: ignore[return-value]

    def _encoding(self, ds: h5py.Dataset, names: tuple[str, ...]) -> dict[str, Any]:
        encoding: dict[str, Any] = {
            "dtype": str if h5py.check_string_dtype(ds.dtype) is not None else ds.dtype,
            "contiguous": ds.chunks is None,
            "chunksizes": ds.chunks,
            "source": self.path,
            "original_shape": ds.shape,
            # the filters' flags, as h5netcdf reports them (netsweep writes none)
            "zlib": ds.compression == "gzip",
            "szip": ds.compression == "szip",
            "zstd": False,
            "bzip2": False,
            "blosc": False,
            "shuffle": bool(ds.shuffle),
            "fletcher32": bool(ds.fletcher32),
        }
        if ds.chunks:
            encoding["preferred_chunks"] = dict(zip(names, ds.chunks, strict=True))
        return encoding

    def get_variables(self) -> dict[str, xr.Variable]:
        return self.variables

    def get_attrs(self) -> dict[str, Any]:
        return attributes(self.file)

    def get_dimensions(self) -> dict[str, int]:
        return self.dims

    def get_encoding(self) -> dict[str, Any]:
        return {"unlimited_dims": self.unlimited}

    def close(self, **kwargs: Any) -> None:
        self.file.close()


def open_dataset(path: str | Path) -> xr.Dataset:
    """The file's root group as an ``xarray.Dataset``, lazily loaded: as ``xarray.open_dataset(path,
    engine="h5netcdf", phony_dims="sort")`` reads it. ``OSError`` where HDF5 cannot open it."""
    try:
        store = H5Store(path)
    except NotPlain:
        return xr.open_dataset(path, engine="h5netcdf", phony_dims="sort")
    return xr.open_dataset(store)
