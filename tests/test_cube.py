"""Cubes: what xarray sees, and that it equals the Python API."""

import h5py
import numpy as np
import pytest
import xarray as xr

from helpers import invoke
from netsweep_jax.sweep import evaluate
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.core.schema import DIMS
from netsweep_jax.sweep.engine.grid import make_grid
from netsweep_jax.sweep.io.job import run_grid

AXES = dict(
    bandwidth=[10, 25, 100],
    ratio=[1, 2, 5],
    nodes=[2, 8],
    utilization=[0.5, 1.0],
    collective=["ring", "tree"],
    fusion_buffer=[0, 64],
)


@pytest.fixture(scope="module")
def cube_path(tmp_path_factory):
    out = tmp_path_factory.mktemp("cube") / "c.h5"
    grid = make_grid(["resnet50", "vgg16"], **AXES)
    run_grid(grid, out, command="sweep grid (test)", block_configs=5)
    return out


def test_xarray_sees_named_dims_coords_and_units(cube_path):
    ds = xr.open_dataset(cube_path, engine="h5netcdf")
    assert tuple(ds.scaling_factor.dims) == DIMS
    assert ds.sizes["bandwidth"] == 3 and ds.sizes["model"] == 2
    assert list(ds.model.values) == ["resnet50", "vgg16"]
    assert list(ds.collective.values) == ["ring", "tree"]
    assert ds.bandwidth.attrs["units"] == "Gbit/s" and ds.latency.attrs["units"] == "us"
    assert ds.fusion_buffer.attrs["units"] == "MiB" and ds.fusion_timeout.attrs["units"] == "ms"
    assert ds.iteration_time.attrs["units"] == "s" and "long_name" in ds.scaling_factor.attrs
    assert ds.nodes.dtype.kind == "i"
    sel = ds.scaling_factor.sel(
        bandwidth=25, nodes=8, model="vgg16", ratio=1, utilization=1.0, collective="ring", fusion_buffer=64
    )
    assert sel.size == 1 and 0 < float(sel.squeeze()) < 1
    for key in ("netsweep_version", "command", "created", "jax_version", "device_kind", "dtype"):
        assert key in ds.attrs
    ds.close()


def test_cube_equals_python_api(cube_path):
    ds = xr.open_dataset(cube_path, engine="h5netcdf")
    api = evaluate(["resnet50", "vgg16"], **AXES)
    for name in ("scaling_factor", "iteration_time", "exposed_comm", "comm_time"):
        np.testing.assert_array_equal(ds[name].values, api[name].values)
    assert not np.isnan(ds.scaling_factor.values).any()
    ds.close()


def test_profiles_are_stored(cube_path):
    p = xr.open_dataset(cube_path, engine="h5netcdf", group="profiles/resnet50")
    assert p.sizes["layer"] == 161 and float(p.grad_bytes.sum()) == 102_228_128
    assert str(p.name.values[0]) == "fc.bias"
    with h5py.File(cube_path) as f:
        assert f["profiles/vgg16"].attrs["iteration_time_single_gpu_s"] == pytest.approx(0.19452352295080985)
        assert len(f["profiles/vgg16"].attrs["sha256"]) == 64
        assert np.isnan(f["scaling_factor"].fillvalue)
        assert f["scaling_factor"].chunks[:4] == (1, 1, 1, 1)
        assert np.all(f["progress/blocks_done"][...] == 1)


def test_disk_check_refuses_huge_grid(tmp_path):
    grid = make_grid("resnet50", bandwidth="1..1e6", ratio="1..1e4", nodes="1..100")  # 1e12 configs
    with pytest.raises(InputError, match="the cube needs .* GB .* but only"):
        run_grid(grid, tmp_path / "huge.h5", command="t")
    assert list(tmp_path.iterdir()) == []


def test_an_in_memory_result_is_written_as_netcdf4_that_xarray_reads_back(tmp_path):
    # write_dataset's h5py writer against what xarray itself would write: dims with and without coordinates,
    # a non-index coordinate, booleans, strings, integers, a scalar, every attribute.
    rng = np.random.default_rng(0)
    ds = xr.Dataset(
        {
            "time": (("x", "rank"), rng.uniform(size=(3, 2)), {"units": "s", "long_name": "a time"}),
            "fits": ("x", np.array([True, False, True])),
            "status": (("x", "rank"), np.arange(6, dtype=np.int32).reshape(3, 2), {"rules": "0: ok; 1: no"}),
            "name": ("rank", np.array(["first", "second"], dtype=object)),
            "total": ((), 3.5),
        },
        coords={"x": [10.0, 25.0, 100.0], "label": ("x", ["a", "bb", "ccc"]), "switch": ["grad", "param"]},
        attrs={"family": "layouts", "count": 3, "assumed": "gpu h100"},
    )
    from netsweep_jax.sweep.io.cube import write_dataset

    out = write_dataset(ds, tmp_path / "d.h5", command="sweep test")
    back = xr.open_dataset(out, engine="h5netcdf").load()
    xr.testing.assert_identical(back.drop_attrs(), ds.drop_attrs())
    assert back.attrs["family"] == "layouts" and back.attrs["count"] == 3 and back.attrs["format"]
    assert back["time"].attrs == {"units": "s", "long_name": "a time"} and back["fits"].dtype == bool
    assert "rank" not in back.coords and "label" in back.coords  # a dim without coordinate stays one


def test_select_shows_a_coordinate_as_a_selection_takes_it_back_and_its_csv_every_digit(tmp_path):
    # A hunt: a log-spaced coordinate printed as 3.162278 was refused when pasted back; a review: the CSV had
    # then lost digits too (0.3162277660168379 as 0.316227766017, no longer the cube's value).
    out = tmp_path / "a.h5"
    grid = ["--model", "resnet50", "--bw", "10", "--nodes", "2", "--util", "0.3162277660168379,1", "-q"]
    assert invoke("grid", *grid, "--out", out).exit_code == 0
    table = invoke("select", out, "--vars", "scaling_factor").output
    assert "0.316227766017 " in table and "0.3162277660168379" not in table
    assert invoke("select", out, "--util", "0.316227766017", "--vars", "scaling_factor").exit_code == 0
    csv = invoke("select", out, "--csv", "--vars", "scaling_factor").output.splitlines()
    assert csv[1].split(",")[0] == "0.3162277660168379" and csv[2].split(",")[0] == "1.0", csv
