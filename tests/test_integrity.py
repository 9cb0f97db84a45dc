"""Integrity: every finished block carries a checksum; damage is found and computed again.

A sweep is stopped at a known block in this process (``run_grid(after_block=...)``);
its partial file is then damaged on purpose."""

import os

import h5py
import numpy as np

from helpers import GRID, invoke, invoke_stopped_after, read_outputs


def stopped_after(monkeypatch, out, blocks):
    invoke_stopped_after(monkeypatch, blocks, "grid", *GRID, "--out", out)


def corrupt_chunk(partial, chunk_index, nbytes=12):
    """Overwrite bytes inside one finished chunk's data, on disk."""
    with h5py.File(partial, "r") as f:
        info = f["scaling_factor"].id.get_chunk_info(chunk_index)
    with open(partial, "r+b") as fh:
        fh.seek(info.byte_offset + 8)
        fh.write(b"\x7f" * nbytes)


def test_changed_bytes_in_a_finished_block_are_found_and_recomputed(tmp_path, monkeypatch):
    clean = tmp_path / "clean.h5"
    assert invoke("grid", *GRID, "-q", "--out", clean).exit_code == 0
    out = tmp_path / "r.h5"
    stopped_after(monkeypatch, out, 10)
    partial = tmp_path / "r.h5.partial"
    corrupt_chunk(partial, 3)
    r = invoke("show", partial, "--verify")
    assert r.exit_code == 1 and "10 of 30 blocks finished, 1 damaged" in r.output
    r = invoke("grid", *GRID, "--out", out, "--resume")
    assert r.exit_code == 0 and "1 damaged block computed again" in r.output, r.output
    for k, v in read_outputs(clean).items():
        np.testing.assert_array_equal(read_outputs(out)[k], v)
    r = invoke("show", out, "--verify")
    assert r.exit_code == 0 and "30 of 30 blocks finished, all intact" in r.output


def test_a_damaged_finished_cube_is_told_the_command_that_recomputes_it(tmp_path):
    # A finished cube has no checkpoint left to resume ('--resume nothing to resume'): show --verify said
    # "rerun the sweep with --resume", which was refused. It names what works, and that works.
    out = tmp_path / "r.h5"
    assert invoke("grid", *GRID, "-q", "--out", out).exit_code == 0
    corrupt_chunk(out, 3)
    r = invoke("show", out, "--verify")
    assert (
        r.exit_code == 1 and "1 damaged (the cube is finished: run its command again with --force" in r.output
    )
    assert invoke("grid", *GRID, "-q", "--out", out, "--resume").exit_code == 2  # what it said before
    assert invoke("grid", *GRID, "-q", "--out", out, "--force").exit_code == 0
    assert "30 of 30 blocks finished, all intact" in invoke("show", out, "--verify").output
    # A finished cube's block marked not computed (its progress flags have no checksum): not "all intact", exit 1;
    # nothing tells a finished cube damaged from a copy of an unfinished run's OUT.partial: both said, and a read
    # refused (its blocks not computed hold what no checksum vouches for), a copy named .partial read (a hunt; a
    # review)
    with h5py.File(out, "r+") as f:
        f["progress/blocks_done"][3] = 0
    r = invoke("show", out, "--verify")
    assert r.exit_code == 1 and (
        "29 of 30 blocks finished, all intact; but 1 block not computed under a finished cube's name (a finished "
        "cube damaged: run its command again with --force; or a copy of an unfinished run's OUT.partial: give the "
        "copy a .partial suffix to read it)" in r.output
    ), r.output
    r = invoke("select", out)
    assert (
        r.exit_code == 1
        and "1 block of what was asked for not computed under a finished cube's name" in r.output
    )
    copy = out.with_name("copy.h5.partial")  # a copy of an unfinished run's cube, named as one, is read
    copy.write_bytes(out.read_bytes())
    r = invoke("select", copy)
    assert r.exit_code == 0 and "1 of the 30 blocks this reads is not computed yet" in r.output, r.output


def test_done_flags_without_data_are_recomputed(tmp_path, monkeypatch):
    out = tmp_path / "r.h5"
    stopped_after(monkeypatch, out, 4)
    partial = tmp_path / "r.h5.partial"
    with h5py.File(partial, "r+") as f:
        f["progress/blocks_done"][...] = 1  # claims every block, holds 4
    r = invoke("grid", *GRID, "--out", out, "--resume")
    assert r.exit_code == 0 and "26 damaged blocks computed again" in r.output, r.output
    assert np.all(np.isfinite(read_outputs(out)["scaling_factor"]))


def test_an_unreadable_partial_is_refused_not_resumed(tmp_path, monkeypatch):
    out = tmp_path / "r.h5"
    stopped_after(monkeypatch, out, 4)
    partial = tmp_path / "r.h5.partial"
    with open(partial, "r+b") as fh:
        fh.write(os.urandom(4096))  # the superblock and root group are gone
    r = invoke("grid", *GRID, "--out", out, "--resume")
    # No longer HDF5 at all: --force refuses to delete it too, so the advice is to move it (was "--force").
    assert r.exit_code == 2 and "not HDF5, so no partial cube of netsweep's; move it away" in r.output
    assert len(r.output.strip().splitlines()) == 1 and partial.exists() and not out.exists()
    r = invoke("grid", *GRID, "--out", out, "--force")
    assert r.exit_code == 2 and "move it away or choose another --out" in r.output and partial.exists()


def test_random_bytes_in_the_middle_never_resume_into_a_wrong_cube(tmp_path, monkeypatch):
    clean = tmp_path / "clean.h5"
    assert invoke("grid", *GRID, "-q", "--out", clean).exit_code == 0
    rng = np.random.default_rng(4)
    for trial in range(3):
        out = tmp_path / f"r{trial}.h5"
        stopped_after(monkeypatch, out, 12)
        partial = tmp_path / f"r{trial}.h5.partial"
        size = partial.stat().st_size
        with open(partial, "r+b") as fh:
            fh.seek(int(rng.integers(size // 4, 3 * size // 4)))
            fh.write(rng.bytes(4096))
        r = invoke("grid", *GRID, "--out", out, "--resume")
        if r.exit_code in (1, 2):  # HDF5 cannot read or write it: refused in one line, the file kept
            assert len(r.output.strip().splitlines()) == 1 and partial.exists() and not out.exists()
            continue
        assert r.exit_code == 0, r.output
        for k, v in read_outputs(clean).items():  # or every damaged block was found and redone
            np.testing.assert_array_equal(read_outputs(out)[k], v)


def _flip_a_dims_reference(path, zero=False):
    """Flip one bit of the object reference that attaches a data variable to its ``bucketing`` dim (``zero``: set
    the reference to the null one, as a block of zeroed bytes would)."""
    import struct

    with h5py.File(path, "r") as f:
        address = h5py.h5o.get_info(f["bucketing"].id).addr
    data = bytearray(path.read_bytes())
    at = data.find(struct.pack("<Q", address))
    assert at >= 0
    if zero:
        data[at : at + 8] = bytes(8)
    else:
        data[at + 2] ^= 0x10
    path.write_bytes(bytes(data))


def test_a_changed_record_of_how_the_cube_was_written_is_damage_in_one_line(tmp_path):
    # Found by a hunt, each a traceback or an option blamed that was never given: a bit flipped in a dim's
    # object reference (a KeyError out of show, select, plot and the API), and the progress record's parts
    # changed (block_configs, the family, the blocks' checksums and done flags, the checksum record).
    import pytest

    from netsweep_jax.sweep import api
    from netsweep_jax.sweep.core.errors import Damaged

    made = tmp_path / "r.h5"
    assert invoke("grid", *GRID, "-q", "--out", made).exit_code == 0
    changes = {
        "block_configs 0 is not a number": lambda f: f.attrs.__setitem__("block_configs", 0),
        "block_configs abc is not a number": lambda f: f.attrs.__setitem__("block_configs", "abc"),
        "progress/block_checksum does not hold one entry a block (1 of them)": lambda f: f.attrs.__setitem__(
            "block_configs", 10**6
        ),
        "its datasets are not a layouts cube's: its family attribute?": lambda f: f.attrs.__setitem__(
            "family", "layouts"
        ),
        "progress/blocks_done does not hold one entry a block (30 of them)": lambda f: f[
            "progress"
        ].__delitem__("blocks_done"),
        "progress@checksums is not a record of checksums": lambda f: f["progress"].attrs.__setitem__(
            "checksums", "[1, 2]"
        ),
    }
    for said, change in changes.items():
        path = tmp_path / "changed.h5"
        path.write_bytes(made.read_bytes())
        with h5py.File(path, "a") as f:
            change(f)
        for command in (("show", path, "--verify"), ("select", path, "--bw", "1", "--ratio", "1")):
            r = invoke(*command)
            assert r.exit_code == 1 and len(r.output.strip().splitlines()) == 1, r.output
            assert r.output.startswith(f"error: {path}: damaged ({said}"), (said, r.output)
            assert r.output.strip().endswith("): run the command that made it again"), r.output
    for zero in (
        False,
        True,
    ):  # a null reference too: read as no damage, then "not a readable cube" (a review)
        path = tmp_path / "reference.h5"
        path.write_bytes(made.read_bytes())
        _flip_a_dims_reference(path, zero)
        for command in (("show", path, "--verify"), ("select", path, "--bw", "1", "--ratio", "1")):
            r = invoke(*command)
            assert r.exit_code == 1 and len(r.output.strip().splitlines()) == 1, r.output
            assert f"{path}: damaged (HDF5 cannot read it:" in r.output and "Traceback" not in r.output, (
                r.output
            )
    with pytest.raises(Damaged, match="damaged .HDF5 cannot read it"):
        api.open_cube(path)
