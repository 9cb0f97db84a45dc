"""Cubes: what xarray sees, and that it equals the Python API."""

import h5py
import numpy as np
import pytest
import xarray as xr

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
