"""Smaller cubes on request: --vars and --store, with resume, show, select and plot."""

import h5py
import numpy as np
import pytest

from helpers import GRID as SMALL_GRID
from helpers import invoke, invoke_stopped_after
from netsweep_jax.sweep import evaluate

GRID = ["grid", *SMALL_GRID, "--vars", "scaling_factor,comm_time", "--store", "float16"]


def test_only_the_chosen_variables_in_the_chosen_dtype(tmp_path):
    out = tmp_path / "v.h5"
    assert invoke(*GRID, "--out", out, "-q").exit_code == 0
    full = evaluate("resnet50", bandwidth="1..20", ratio="1..10", nodes=[2, 4, 8], fusion_buffer=0)
    with h5py.File(out) as f:
        assert [v for v in ("scaling_factor", "iteration_time", "exposed_comm", "comm_time") if v in f] == [
            "scaling_factor",
            "comm_time",
        ]
        assert f["scaling_factor"].dtype == np.float16 and f.attrs["store"] == "float16"
        sf = f["scaling_factor"][...]
    # float16 keeps the float32 result to its own resolution (2^-11 relative)
    np.testing.assert_allclose(sf.astype(np.float32), full.scaling_factor.values, rtol=2**-11)
    for args in (
        ["show", out, "--verify"],
        ["select", out, "--bw", "10", "--nodes", "8", "--csv"],
        ["plot", out, "--x", "bandwidth", "--hue", "nodes", "--sel", "ratio=1", "--out", tmp_path / "p.png"],
    ):
        r = invoke(*args)
        assert r.exit_code == 0, r.output
    assert "dtype float32, stored float16" in invoke("show", out).output  # said as float32 alone
    assert "iteration_time" not in invoke("select", out, "--bw", "10", "--csv").output
    # A table of float16 values printed without pandas' overflow warning (its formatter casts them).
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert invoke("select", out, "--ratio", "1").exit_code == 0


def test_select_refuses_more_rows_than_it_prints_in_one_line(tmp_path, monkeypatch):
    # A hunt: select of a 1 GB cube with no slice grew past 12 GB of memory, building every row at once.
    from netsweep_jax.sweep.io import reader

    out = tmp_path / "v.h5"
    assert invoke(*GRID, "--out", out, "-q").exit_code == 0
    monkeypatch.setattr(reader, "MOST_ROWS", 100)  # the cube: 20 x 10 x 3 = 600 rows
    r = invoke("select", out, "--csv")
    assert r.exit_code == 2 and r.output.startswith(
        f"error: {out}: the selection is 600 rows, more than the 100"
    )
    assert len(invoke("select", out, "--csv", "--nodes", "8", "--ratio", "1,2,3").output.splitlines()) == 61


def test_stop_then_resume_is_bit_identical(tmp_path, monkeypatch):
    clean = tmp_path / "clean.h5"
    assert invoke(*GRID, "--out", clean, "-q").exit_code == 0
    out = tmp_path / "r.h5"
    invoke_stopped_after(monkeypatch, 6, *GRID, "--out", out)
    assert invoke(*GRID, "--out", out, "--resume").exit_code == 0
    with h5py.File(clean) as a, h5py.File(out) as b:
        for name in ("scaling_factor", "comm_time"):
            np.testing.assert_array_equal(a[name][...], b[name][...])


def test_resume_refuses_other_outputs(tmp_path, monkeypatch):
    out = tmp_path / "r.h5"
    invoke_stopped_after(monkeypatch, 3, *GRID, "--out", out)
    other = [a if a != "float16" else "float32" for a in GRID]
    r = invoke(*other, "--out", out, "--resume")
    # the option named (a hunt: "another grid, profile or --reduce" of a --store)
    assert r.exit_code == 2 and "made with --store float16 where this run stores float32;" in r.output, (
        r.output
    )


@pytest.mark.parametrize(
    "args,message",
    [
        (["--vars", "speedup"], "--vars 'speedup': unknown; known: scaling_factor"),
        (["--vars", ""], "--vars '': give at least one name"),
        (["--store", "float8"], "--store 'float8': must be one of float16, float32, float64"),
    ],
)
def test_bad_output_options(tmp_path, args, message):
    r = invoke("grid", *args, "--out", tmp_path / "o.h5")
    assert r.exit_code == 2 and message in r.output and not (tmp_path / "o.h5").exists()
