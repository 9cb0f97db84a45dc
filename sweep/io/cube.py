"""HDF5 result cubes: self-describing, crash-safe while written, xarray-readable.

Layout (plain h5py, opened by ``xarray.open_dataset(path, engine="h5netcdf")``):

- one coordinate dataset per dim of the cube's model family (:mod:`sweep.core.families`; the
  data-parallel family's :data:`sweep.core.schema.DIMS`), made a dimension scale,
  with ``units`` and ``long_name``; values as typed by the user;
- data variables (the data-parallel family's ``scaling_factor``, ``iteration_time``,
  ``exposed_comm``, ``comm_time``; the layout family's ``iteration_time``, ``tokens_per_s``, ...)
  over all dims, NaN fill (an integer code such as the layout family's ``status``: int32, -1),
  chunked as the engine's write blocks, every dim's scale attached;
- global attributes: the family, tool version, command line, creation time, JAX version,
  device kind, dtype, grid fingerprint, and what the grid says of itself (``cube_attrs``:
  what was assumed; the layout family's models and per-sweep settings);
- the data-parallel family's group ``profiles/<model>``: each profile on a ``layer`` dimension
  (names, gradient bytes, backward waits, ready times) with T1, source and SHA-256, and group
  ``reduce_cost``: the reduce-cost table used;
- group ``progress``: ``blocks_done`` (uint8 per block) and ``block_checksum``
  (CRC-32 of each finished block's data), the resume record: ``--resume`` and
  ``sweep show --verify`` recompute the checksums, and a damaged block is redone;
  its attribute ``checksums`` (JSON) holds the CRC-32 of every other dataset
  written at creation (coordinates, profiles with their attributes and SHA-256,
  the reduce-cost table), which ``sweep show --verify`` checks too (the checksums and their
  verification are :mod:`sweep.io.integrity`'s); a cube written whole (:func:`write_dataset`) has no
  blocks, and its ``progress`` group records the CRC-32 of every dataset, data variables included.

A sweep's cube is written block by block (:func:`create`, :func:`write_block`, then
:func:`finish` renames it into place). Every other result (``sweep need --out``, a
reduced sweep, a plan) is held in memory and written whole by :func:`write_dataset`, the one
writer of an in-memory result: a temporary file, renamed into place when complete. Both lay
their dims and variables out with the same two functions (:func:`dimension_scales`,
:func:`variable`), so every cube the tool writes is one netCDF-4 layout.

Why no compression: every chunk is allocated when the file is created, so writing
a block never changes the file's metadata. A run killed at any moment (kill -9)
leaves a file whose flagged blocks are intact or fail their checksum (and are
computed again), and ``--resume`` continues from them. Compressed chunks move
on every write, which would make that guarantee depend on HDF5's cache order.
"""

import io
import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import h5py
import numpy as np
import numpy.typing as npt

from netsweep_jax.sweep.core.errors import InputError, WriteFailed, reason
from netsweep_jax.sweep.core.families import family_of
from netsweep_jax.sweep.engine.blocks import Block, Blocking
from netsweep_jax.sweep.engine.grid import Grid
from netsweep_jax.sweep.io.integrity import HDF5_ERRORS, checksum, record_whole, static_checksums
from netsweep_jax.sweep.io.paths import exists, held_open, holder, set_aside, write_atomically
from netsweep_jax.sweep.io.provenance import provenance

if TYPE_CHECKING:  # types only: reading a cube does not start JAX, writing a sweep's does not load xarray
    import xarray as xr

    from netsweep_jax.sweep.engine.dispatch import AnyGrid
    from netsweep_jax.sweep.model.profile import Profile

FORMAT = "netsweep-cube-1"


def write_dataset(
    ds: "xr.Dataset",
    out: str | Path,
    *,
    command: str,
    attrs: Mapping[str, Any] | None = None,
    overwrite: bool = True,
    kept: str | Path | None = None,
    inputs: Callable[[h5py.File], None] | None = None,
) -> Path:
    """Write an in-memory result as a cube (netCDF-4, :func:`write_netcdf4`), atomically: to a new temporary
    file of its own (:func:`~sweep.io.paths.write_atomically`), then renamed to ``out``; nothing is left behind
    on failure, and no existing file (a link, ``OUT.partial``) is written through or deleted. Without
    ``overwrite``, a file that appeared at ``out`` while the result was computed (another run's, the user's)
    is kept and this one refused (``kept``: where the caller keeps its result for ``--resume``, said then).

    The global attributes are the cube format's tag, the Dataset's, then ``attrs``, then the provenance
    of ``command``. ``inputs(f)`` writes what the cube keeps besides (a data-parallel cube's profiles and
    reduce-cost table, as a sweep's cube keeps them: :func:`grid_inputs`).
    """
    ds = ds.assign_attrs({"format": FORMAT, **ds.attrs, **(attrs or {}), **provenance(command)})
    return write_atomically(out, lambda temp: write_netcdf4(ds, temp, inputs), overwrite=overwrite, kept=kept)


# netCDF-4's name for a dimension scale that is not also a coordinate variable (netCDF-C, nc4hdf.c).
PHONY_DIMENSION = "This is a netCDF dimension but not a netCDF variable.{:10d}"


def _h5_data(values: npt.ArrayLike) -> tuple[np.ndarray, dict[str, str]]:
    """``values`` as HDF5 stores them, and the attributes xarray needs to read them back as they were
    (booleans are int8 with ``dtype = "bool"``, as xarray encodes them)."""
    a = np.asarray(values)
    if a.dtype.kind in "OUS":
        return np.array(a, dtype=object), {}
    if a.dtype.kind == "b":
        return a.astype(np.int8), {"dtype": "bool"}
    if a.dtype.kind not in "iuf":
        raise TypeError(f"cannot write values of dtype {a.dtype} to a cube")
    return a, {}


def write_netcdf4(
    ds: "xr.Dataset", path: str | Path, inputs: Callable[[h5py.File], None] | None = None
) -> None:
    """``ds`` as a netCDF-4 file through h5py, as :func:`create` lays out a sweep's cube: one dimension scale
    per dim (its coordinate, or a netCDF "phony" scale where the dim has none), each variable with its
    attributes and its dims' scales attached, non-index coordinates named in each variable's
    ``coordinates`` attribute; ``xarray.open_dataset(path, engine="h5netcdf")`` gives ``ds`` back.

    Why not ``ds.to_netcdf``: h5netcdf looks every dim up again for every variable, and a layout cube (24
    dims, 34 variables) took 3-4 s to write that way, against 0.2 s here.

    HDF5 builds the file in memory and Python writes it out: a write the disk refuses (full, a file-size
    limit) is then an ``OSError`` here, where HDF5 failing to write its own file crashed the process."""
    image = io.BytesIO()
    with h5py.File(image, "w") as f:
        _write_netcdf4(ds, f)
        if inputs is not None:  # the groups beside the data (profiles, reduce_cost), checksummed with it
            inputs(f)
        record_whole(f)  # every dataset's CRC-32: sweep show --verify and every reader check it
    with open(path, "wb") as out:
        out.write(image.getbuffer())


def _write_netcdf4(ds: "xr.Dataset", f: h5py.File) -> None:
    for key, value in ds.attrs.items():
        f.attrs[key] = value
    scales = dimension_scales(
        f,
        {
            str(dim): (ds.variables[dim].values, ds.variables[dim].attrs) if dim in ds.indexes else size
            for dim, size in ds.sizes.items()
        },
    )
    extra_coords = [str(name) for name in ds.coords if name not in ds.indexes]
    for name, var in ds.variables.items():
        if name in ds.indexes:
            continue
        named = [c for c in extra_coords if c != name and set(ds[c].dims) <= set(var.dims)]
        attrs = {**var.attrs, **({"coordinates": " ".join(named)} if name in ds.data_vars and named else {})}
        variable(f, str(name), [scales[str(d)] for d in var.dims], attrs, data=var.values)


def dimension_scales(
    f: h5py.Group, dims: Mapping[str, "tuple[npt.ArrayLike, Mapping[str, Any]] | int"]
) -> dict[str, h5py.Dataset]:
    """The netCDF-4 dimension scale of each dim, in order: its coordinate (values and attributes), or, where
    ``dims`` gives only its size, netCDF's "phony" scale of a dim with no coordinate. Every cube the tool
    writes lays its dims out here, a sweep's streamed one (:func:`create`) and a result written whole
    (:func:`write_netcdf4`)."""
    scales = {}
    for dim, given in dims.items():
        if isinstance(given, int):
            scales[dim] = f.create_dataset(dim, shape=(given,), dtype="f4")
            scales[dim].make_scale(PHONY_DIMENSION.format(given))
        else:
            scales[dim] = variable(f, dim, [], given[1], data=given[0])
            scales[dim].make_scale(dim)
    return scales


def variable(
    f: h5py.Group,
    name: str,
    scales: Sequence[h5py.Dataset],
    attrs: Mapping[str, Any],
    *,
    data: npt.ArrayLike | None = None,
    **empty: Any,
) -> h5py.Dataset:
    """A netCDF-4 variable over the dims of ``scales`` (attached in order) with its attributes: ``data``
    written whole (names as HDF5 strings, booleans as xarray encodes them: :func:`_h5_data`), or, with no data,
    created empty for blocks to fill (``empty``: h5py's ``shape``, ``dtype``, ``chunks``, ``fillvalue``,
    ``dcpl``)."""
    encoding: dict[str, str] = {}
    if data is None:
        h5var = f.create_dataset(name, **empty)
    else:
        values, encoding = _h5_data(data)
        string = {"dtype": h5py.string_dtype()} if values.dtype == object else {}
        h5var = f.create_dataset(name, data=values, **string)
    for key, value in {**attrs, **encoding}.items():
        h5var.attrs[key] = value
    for i, scale in enumerate(scales):
        h5var.dims[i].attach_scale(scale)
    return h5var


# HDF5 (2.0.0, as h5py 3.x ships it) crashes (SIGFPE) reading a strided selection of a chunked dataset of its
# largest rank, 32: found on the layout family's cubes (32 dims), reproduced on a bare h5py file of rank 32 and
# not of rank 31. A cube of that rank is stored contiguous: allocated at creation all the same, so writing a
# block still never changes the file's metadata, and a block (a contiguous run of the cube in C order) is one
# hyperslab write.
CHUNKED_RANKS = range(1, 32)


def storage_chunks(blocking: Blocking) -> tuple[int, ...] | None:
    """The HDF5 chunk shape of a cube cut by ``blocking`` (its block's shape), or None: stored contiguous."""
    return blocking.chunk_shape if len(blocking.shape) in CHUNKED_RANKS else None


def estimated_bytes(grid: "AnyGrid", blocking: Blocking | None = None) -> int:
    """Bytes the cube's data variables take on disk (uncompressed; an integer code as int32). A cube cut by
    ``blocking`` into chunks (:func:`storage_chunks`) takes whole chunks, reserved as it is made: each dim's
    extent rounded up to its chunk's (a hunt: 33.7 MB on disk where 18.7 had been estimated, and the disk and
    ``ulimit -f`` checks passed a cube the file system then refused)."""
    family = grid.family
    chunks = None if blocking is None else storage_chunks(blocking)
    cells = grid.size if chunks is None else math.prod(-(-n // c) * c for n, c in zip(grid.shape, chunks))
    return cells * sum(
        np.dtype(family.stored_dtype(name, grid.store_dtype)).itemsize for name in grid.variables
    )


def create(
    path: str | Path, grid: "AnyGrid", blocking: Blocking, attrs: Mapping[str, Any], sparse: bool = False
) -> h5py.File:
    """Create a new cube file at ``path`` for ``grid`` cut by ``blocking``; return it open.

    ``attrs`` are extra global attributes (:func:`sweep.io.provenance.provenance`).
    ``sparse``: do not write the NaN fill at creation (a --distributed shard holds
    only its own blocks; the unwritten chunks stay holes in the file and are never
    read back).
    """
    # "x": a new file or an error, never an existing file (another run's, a link's target) truncated.
    # Default superblock: no open-for-write flag, so a killed run reopens.
    f = h5py.File(path, "x")
    made = file_inode(f)
    try:
        return _laid_out(f, grid, blocking, attrs, sparse)
    except (OSError, ValueError, RuntimeError) as e:
        if isinstance(e, InputError):
            raise
        # The file system refused the cube as it was made (its chunks are reserved at once: a file-size limit, a
        # full disk; h5py says some as ValueError, a failed flush as RuntimeError): the file this call made
        # removed, if it is still that one (a review), one line (a hunt: a traceback, a crash, and a truncated
        # partial that --resume refused)
        try:
            f.close()
        except Exception:  # noqa: BLE001 - the file is removed whatever its state
            pass
        remove_own(Path(path), made)
        out = Path(path).with_suffix("") if Path(path).suffix == ".partial" else path
        raise WriteFailed(
            f"{out}: the file system refused the cube as it was made ({reason(e).split(' (')[0]}: a full disk or "
            "a file-size limit?); nothing was written"
        ) from None


def file_inode(f: h5py.File) -> int:
    """The inode of the open file ``f``: what tells it from a file another run put at its path since."""
    return os.fstat(f.id.get_vfd_handle()).st_ino


def remove_own(path: Path, inode: int | None) -> None:
    """Delete ``path`` if it is still the file this run made (inode ``inode``), and nobody else's."""
    try:
        if inode is not None and os.stat(path, follow_symlinks=False).st_ino == inode:
            path.unlink()
    except OSError:
        pass


def _laid_out(
    f: h5py.File, grid: "AnyGrid", blocking: Blocking, attrs: Mapping[str, Any], sparse: bool
) -> h5py.File:
    """The new cube file ``f`` laid out for ``grid`` (:func:`create`'s arguments): its attributes, coordinates,
    data variables (every chunk reserved, NaN-filled unless ``sparse``), inputs and progress record."""
    family = grid.family
    f.attrs["format"] = FORMAT
    f.attrs["family"] = family.name
    f.attrs["dtype"] = grid.dtype
    f.attrs["store"] = grid.store_dtype
    f.attrs["grid_fingerprint"] = grid.fingerprint()
    f.attrs["dims"] = ",".join(family.dims)
    f.attrs["block_configs"] = blocking.block_configs
    for k, v in {**grid.cube_attrs(), **attrs}.items():
        f.attrs[k] = v
    coords = grid.coords()
    scales = dimension_scales(
        f, {dim: (values, family.coordinate_attrs(dim)) for dim, values in coords.items()}
    )
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
    if sparse:
        dcpl.set_fill_time(h5py.h5d.FILL_TIME_NEVER)
    for name in grid.variables:
        variable(
            f,
            name,
            list(scales.values()),
            grid.variable_attrs(name),
            shape=grid.shape,
            dtype=np.dtype(family.stored_dtype(name, grid.store_dtype)),
            chunks=storage_chunks(blocking),
            fillvalue=family.unset(name),
            dcpl=dcpl,
        )
    grid_inputs(grid)(f)  # the family's inputs a cube keeps besides its coordinates
    progress = f.create_group("progress")
    progress.create_dataset("blocks_done", data=np.zeros(len(blocking.blocks()), np.uint8))
    progress.create_dataset("block_checksum", data=np.zeros(len(blocking.blocks()), np.uint32))
    progress.attrs["checksums"] = json.dumps(static_checksums(f))
    f.flush()
    return f


def grid_inputs(grid: "AnyGrid") -> Callable[[h5py.File], None]:
    """What a cube of ``grid``'s family keeps besides its coordinates (its ``cube_inputs`` hook:
    :mod:`sweep.core.families`), for :func:`write_dataset`: a reduced or merged cube keeps them as the sweep's
    cube does."""
    return lambda f: grid.family.hook("cube_inputs")(f, grid)


def write_data_parallel_inputs(f: h5py.File, grid: Grid) -> None:
    """The data-parallel family's inputs (its ``cube_inputs`` hook): its profiles and its reduce-cost table."""
    write_profiles(f, grid.profiles)
    rc = f.create_group("reduce_cost")
    rc.create_dataset("bytes", data=grid.reduce_table[0]).attrs["units"] = "B"
    if "reduce" not in grid.own_gpu:
        rc.create_dataset("seconds", data=grid.reduce_table[1]).attrs["units"] = "s"
        return
    # each profile's own GPU's table (their bytes are the model table's, alike): [model, bytes]
    seconds = np.stack([grid.table_of(i)[1] for i in range(len(grid.profiles))])
    rc.create_dataset("seconds", data=seconds).attrs.update({"units": "s", "dims": "model, bytes"})


def write_no_inputs(f: h5py.File, grid: Any) -> None:
    """The layout family's inputs (its ``cube_inputs`` hook): none; a layout cube keeps its models' shapes and
    sources in its attributes (``models``), no group."""


def write_profiles(f: h5py.File, profiles: "Sequence[Profile]") -> None:
    """Each profile under ``profiles/<model>``: its tensors on a ``layer`` dim, its attributes and SHA-256."""
    group = f.create_group("profiles")
    for p in profiles:
        g = group.create_group(p.model)
        layer = variable(
            g, "layer", [], {"long_name": "parameter tensor, backward order"}, data=np.arange(len(p.names))
        )
        layer.make_scale("layer")
        columns: dict[str, tuple[str | None, str, npt.ArrayLike]] = {
            "name": (None, "tensor name", np.array(p.names, dtype=object)),
            "grad_bytes": ("B", "gradient bytes", p.grad_bytes),
            "backward_wait": ("s", "wait since the previous gradient was ready", p.wait),
            "ready_time": ("s", "time from the start of backward to gradient ready", p.ready),
        }
        if p.shape is not None:  # what the compressors' payloads were computed from
            columns["shape"] = (
                None,
                "tensor shape",
                np.array(["x".join(map(str, d)) for d in p.shape], dtype=object),
            )
        for name, (units, long_name, data) in columns.items():
            variable(
                g, name, [layer], {**({"units": units} if units else {}), "long_name": long_name}, data=data
            )
        g.attrs.update(
            {
                "model": p.model,
                "iteration_time_single_gpu_s": p.t1,
                "source": p.source,
                "device": p.device,
                "batch_size": p.batch_size,
                "dtype": p.dtype,
                "sha256": p.content_hash(),
                "backward_time_s": p.backward_time,
            }
        )


def _option_differing(f: h5py.File, grid: "AnyGrid") -> str:
    """What a partial cube of another fingerprint than ``grid``'s was made with, where its attributes tell (its
    store dtype, compute dtype or variables kept: a hunt read "another grid, profile or --reduce" of a --store),
    else "for another grid, profile or --reduce"."""
    computed, stored = f.attrs.get("dtype"), f.attrs.get("store")
    if computed is not None and str(computed) != grid.dtype:  # first: --x64 changes the store's default too
        return f"in {computed} where this run computes in {grid.dtype} (--x64)"
    if stored is not None and str(stored) != grid.store_dtype:
        return f"with --store {stored} where this run stores {grid.store_dtype}"
    kept = [name for name in f if name in grid.family.variables]
    if "progress" in f and set(kept) != set(grid.variables):
        return f"with --vars {','.join(kept)} where this run keeps {','.join(grid.variables)}"
    return "for another grid, profile or --reduce"


def open_for_resume(path: str | Path, grid: "AnyGrid", blocking: Blocking) -> h5py.File:
    """Open a partial cube for appending; refuse one HDF5 cannot read or made for another grid."""
    expected = (FORMAT, grid.fingerprint())
    try:
        f = h5py.File(path, "r+")
        # Whose it is first (a --reduce checkpoint or another family's cube holds other objects), then every
        # object a sweep needs: damaged metadata shows here, not halfway through.
        made = (f.attrs.get("format"), f.attrs.get("grid_fingerprint"))
        if made == expected:
            shapes = {name: f[name].shape for name in grid.variables}
            progress = (f["progress/blocks_done"].shape, f["progress/block_checksum"].shape)
    except HDF5_ERRORS as e:
        if "f" in locals():
            f.close()
        if not h5py.is_hdf5(path):  # not netsweep's: --force would refuse to delete it too
            raise InputError(
                f"{path}: not HDF5, so no partial cube of netsweep's; move it away or choose another --out",
                param="resume",
            ) from None
        if "unable to lock file" in reason(e):  # held open by another process since the check: not unreadable
            raise InputError(held_open(path, holder(path) or "reading"), param="resume") from None
        raise InputError(
            f"{path}: HDF5 cannot read it ({reason(e)}); it cannot be resumed, rerun with --force",
            param="resume",
        ) from None
    if made != expected:
        differs = _option_differing(f, grid)
        f.close()
        raise InputError(
            f"{path}: made {differs}; rerun with the same options, or --force",
            param="resume",
        )
    if (
        f[grid.variables[0]].chunks != storage_chunks(blocking)
        or any(s != blocking.shape for s in shapes.values())
        or progress != ((len(blocking.blocks()),),) * 2
    ):
        stored = f.attrs.get("block_configs")
        f.close()
        written = f"in blocks of {stored} configurations" if stored is not None else "in other blocks"
        raise InputError(
            f"{path}: written {written} where this run cuts {blocking.block_configs}: rerun with --block-configs "
            + (f"{stored}" if stored is not None else "as it was written"),
            param="resume",
        )
    return f


def stored_block_configs(path: str | Path) -> int | None:
    """The --block-configs a partial cube was written with (None if unreadable)."""
    try:
        with h5py.File(path, "r") as f:
            return int(f.attrs["block_configs"])
    except (OSError, KeyError):
        return None


def write_block(f: h5py.File, block: Block, arrays: Mapping[str, npt.NDArray[Any]]) -> None:
    """Write one block: its data, checksum and done flag, then one flush.

    One flush is enough: if a crash leaves the flag on disk but not all of the data,
    the checksum no longer matches and ``--resume`` computes the block again.
    """
    region = block.region()
    offset = tuple(s.start for s in region)
    for name, a in arrays.items():
        ds = f[name]
        if a.shape == ds.chunks:  # a whole chunk: raw bytes, no selection or conversion (4x faster)
            ds.id.write_direct_chunk(offset, np.ascontiguousarray(a, dtype=ds.dtype).data.cast("B"))
        else:
            ds[region] = a
    f["progress/block_checksum"][block.index] = checksum(arrays, family_of(f.attrs))
    f["progress/blocks_done"][block.index] = 1
    f.flush()


def finish(f: h5py.File, partial: str | Path, final: str | Path, overwrite: bool = True) -> None:
    """Close the complete cube and move it into place atomically, if it is still this run's file. Without
    ``overwrite``, a file that appeared at ``final`` while the cube was computed (another run's, the user's) is
    kept, and the cube stays in ``partial`` for ``--resume``."""
    mine = file_inode(f)
    f.close()
    try:
        now = os.stat(partial, follow_symlinks=False).st_ino
    except FileNotFoundError:
        now = None
    if now != mine:
        raise InputError(
            f"{partial} was {'removed' if now is None else 'replaced'} by another run while this "
            f"one wrote it; the other run holds the output, this run's result is not kept",
            param="out",
        )
    if overwrite:
        set_aside(final)
        os.replace(partial, final)
        return
    try:
        os.link(partial, final)  # never onto an existing file: the check and the move are one step
    except FileExistsError:
        raise exists(final, partial) from None
    except OSError:  # a file system without hard links: look, then move
        if os.path.lexists(final):
            raise exists(final) from None
        os.replace(partial, final)
        return
    os.unlink(partial)
