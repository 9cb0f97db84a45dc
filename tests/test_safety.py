"""Output safety: nothing but a regular file netsweep wrote is ever replaced; a live run's file is left alone."""

import os

import h5py
import pytest

from helpers import invoke
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.io import cube


def sweep(*args):
    """A two-configuration ``sweep grid``."""
    return invoke("grid", "--bw", "10,25", "-q", *args)


@pytest.mark.parametrize("kind", ["fifo", "directory", "link"])
def test_force_never_replaces_what_is_not_a_regular_file(tmp_path, kind):
    out = tmp_path / "o.h5"
    keep = tmp_path / "keep.txt"
    keep.write_text("precious")
    if kind == "fifo":
        os.mkfifo(out)
    elif kind == "directory":
        out.mkdir()
    else:
        out.symlink_to(keep)
    r = sweep("--out", out, "--force")
    assert r.exit_code == 2 and "netsweep writes and replaces regular files only" in r.output
    assert len(r.output.strip().splitlines()) == 1
    assert out.is_symlink() if kind == "link" else out.exists()
    assert keep.read_text() == "precious"
    assert not (tmp_path / "o.h5.partial").exists()


def test_a_partial_file_held_by_a_live_run_is_not_touched(tmp_path):
    out = tmp_path / "o.h5"
    partial = tmp_path / "o.h5.partial"
    with h5py.File(partial, "w") as held:  # as a running sweep holds it
        held.attrs["mine"] = 1
        for extra in (["--force"], ["--resume"]):
            r = sweep("--out", out, *extra)
            assert r.exit_code == 2 and "another run is writing" in r.output, r.output
        assert partial.exists()
    assert sweep("--out", out, "--force").exit_code == 0  # once it is released, --force may start over


def test_finish_refuses_a_partial_file_another_run_replaced(tmp_path):
    partial, final = tmp_path / "o.h5.partial", tmp_path / "o.h5"
    f = h5py.File(partial, "w")
    other = tmp_path / "other"
    other.write_text("someone else's")
    os.replace(other, partial)
    with pytest.raises(InputError, match="replaced by another run"):
        cube.finish(f, partial, final)
    assert not final.exists() and partial.read_text() == "someone else's"
