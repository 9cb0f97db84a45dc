"""netsweep's own reader of its cubes (h5py into xarray) gives what xarray's h5netcdf engine gives."""

import h5py
import numpy as np
import pytest
import xarray as xr

from helpers import invoke
from netsweep_jax.sweep.io import h5store
from netsweep_jax.sweep.io.cube import write_netcdf4


def assert_read_as_h5netcdf_reads(path):
    """The two readers give the same Dataset: values, dims and their order, dtypes, attributes with their
    Python types, and the encodings h5netcdf reports."""
    theirs = xr.open_dataset(path, engine="h5netcdf", phony_dims="sort")
    ours = h5store.open_dataset(path)
    with theirs, ours:
        xr.testing.assert_identical(ours, theirs)
        assert list(ours.variables) == list(theirs.variables)
        assert list(ours.dims) == list(theirs.dims)
        for name, var in theirs.variables.items():
            assert ours[name].dtype == var.dtype, name
            assert {k: type(v) for k, v in ours[name].attrs.items()} == {
                k: type(v) for k, v in var.attrs.items()
            }
            assert ours[name].encoding == var.encoding, name
        assert {k: type(v) for k, v in ours.attrs.items()} == {k: type(v) for k, v in theirs.attrs.items()}
        assert ours.encoding["unlimited_dims"] == theirs.encoding["unlimited_dims"]


def test_every_kind_of_variable_and_attribute(tmp_path):
    rng = np.random.default_rng(0)
    ds = xr.Dataset(
        {
            "time": (("model", "bw", "row"), rng.random((2, 3, 4)), {"units": "s", "long_name": "step"}),
            "status": (
                ("model", "bw"),
                np.array([[0, 1, 2], [-1, 0, 0]], np.int32),
                {"rules": "0: ok; 1: no"},
            ),
            "fits": (("bw",), np.array([True, False, True])),
            "label": (("model",), np.array(["a", "bé"], dtype=object)),
            "scalar": ((), 3.5),
        },
        coords={
            "model": ("model", np.array(["resnet50", "gpt"], dtype=object), {"long_name": "model"}),
            "bw": ("bw", np.array([10.0, 25.0, 100.0]), {"units": "Gbit/s"}),
            "nodes": ("bw", np.array([2, 4, 8])),  # a coordinate that is not a dim's index
        },
        attrs={"command": "sweep grid", "count": 3, "ratio": 0.5, "one": np.array([7]), "names": ["x", "y"]},
    )
    path = tmp_path / "cube.h5"
    write_netcdf4(ds, path)
    assert_read_as_h5netcdf_reads(path)
    with h5store.open_dataset(path) as back:
        assert back["time"][1, 2].values.tolist() == ds["time"][1, 2].values.tolist()  # lazily indexed
        assert back["fits"].dtype == bool and back["model"].values.tolist() == ["resnet50", "gpt"]


def test_a_grid_cube(tmp_path):
    out = tmp_path / "g.h5"
    r = invoke("grid", "--bw", "1,10", "--nodes", "2,4", "--out", out)
    assert r.exit_code == 0, r.output
    assert_read_as_h5netcdf_reads(out)


def test_a_file_with_dims_no_scale_names_is_read_by_h5netcdf(tmp_path):
    path = tmp_path / "other.h5"
    with h5py.File(path, "w") as f:
        f["x"] = np.arange(6.0).reshape(2, 3)  # no dimension scales: h5netcdf's phony dims
        f.attrs["title"] = "another tool's"
    assert_read_as_h5netcdf_reads(path)
    with h5store.open_dataset(path) as back:
        assert back["x"].dims == ("phony_dim_0", "phony_dim_1")


def test_an_unreadable_file_is_an_oserror(tmp_path):
    path = tmp_path / "bad.h5"
    path.write_bytes(b"not hdf5")
    with pytest.raises(OSError):
        h5store.open_dataset(path)
