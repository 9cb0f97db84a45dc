"""Hostile input, as a new user might type it: each case gets one line, the right exit
code, and leaves nothing behind (issue: nothing lost, nothing silently wrong)."""

import errno
import json
import os
import sys

import h5py
import numpy as np
import pytest

from helpers import invoke, one_line_error
from netsweep_jax.sweep import evaluate
from netsweep_jax.sweep.core.axes import NUMERIC_AXES


@pytest.mark.parametrize(
    "args,message",
    [
        (["--bw", "1e-50"], "--bw 1e-50: bandwidth must be a number from 0.001"),
        (["--latency", "1e308"], "--latency 1e308: latency must be a number from 0 to 1000000"),
        (["--util", "1e-45"], "--util 1e-45: utilization must be a number from 0.0001 to 1"),
        (["--util", "1.0000001"], "--util 1.0000001:"),
        (["--nodes", "1e19"], "--nodes 1e19: nodes must be an integer from 1 to 1000000"),
        (["--bw", "1..1e9"], "an axis takes at most 10,000,000 values"),
        (["--ratio", "1..100:1e-300"], "an axis takes at most"),
        (["--ratio", "1..1e308:1e-10"], "an axis takes at most"),
        (["--ratio", "1..2@99999999999"], "99,999,999,999 points"),
        (["--ratio", "1...5"], "ranges are A..B"),
        (
            ["--block-configs", "99999999999999999999999"],
            "--block-configs 99999999999999999999999: must be an integer",
        ),
        (["--overhead", "-1"], "--overhead -1: overhead must be a number from 0 to 1000000"),
        (["--jitter", "-0.1"], "--jitter -0.1: jitter must be a number from 0 to 10"),
        (["--slowdown", "-0.5"], "--slowdown -0.5: slowdown must be a number from 0 to 100"),
        (["--nics-per-node", "0"], "--nics-per-node 0: nics_per_node must be an integer from 1 to 64"),
        (["--collective", "nccl-butterfly"], "--collective 'nccl-butterfly': unknown"),
        (["--iteration-time", "-1"], "--iteration-time -1: must be a number of seconds in [1e-6, 1e4]"),
        (["--compressor", "zip"], "--compressor 'zip': unknown compressor"),
        (["--compressor", "topk:0"], "--compressor 'topk:0': topk needs a density D in (0, 1]"),
        (["--compressor", "randomk:nan"], "randomk needs a density D in (0, 1]"),
        (["--compressor", "powersgd:0"], "--compressor 'powersgd:0': powersgd needs an integer rank R >= 1"),
        (
            ["--compressor", "topk:0.1", "--iterations-factor", "topk:0.1=inf"],
            "--iterations-factor topk:0.1=inf:",
        ),
        (
            ["--model", "gpt2", "--bucketing", "fsdp", "--compressor", "int8"],
            "compression is modelled for all-reduce",
        ),
    ],
)
def test_out_of_domain_values(tmp_path, args, message):
    r = invoke("grid", *args, "--out", tmp_path / "o.h5")
    assert message in one_line_error(r)
    assert list(tmp_path.iterdir()) == []


def test_a_number_with_a_unit_and_a_setting_that_does_not_apply_are_named(tmp_path):
    # #27: '100G' says the unit the option takes; --gpu on a measured CNN profile is refused, not ignored.
    r = invoke("grid", "--model", "resnet50", "--bw", "100G", "--out", tmp_path / "o.h5")
    assert "'100G' is not a number (must be a number from 0.001 to 1000000 in Gbit/s" in one_line_error(r)
    r = invoke("compare", "--model", "resnet50", "--gpu", "bogus", "--bw", "10")
    assert "--gpu bogus: applies to transformers" in one_line_error(r)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_every_accepted_extreme_gives_finite_positive_results(dtype):
    lo = {name: spec.low for name, spec in NUMERIC_AXES.items()}
    hi = {name: spec.high for name, spec in NUMERIC_AXES.items()}
    axes = {name: sorted({lo[name], hi[name]}) for name in NUMERIC_AXES}
    ds = evaluate("vgg16", collective=["ring", "tree", "ps", "hierarchical"], dtype=dtype, **axes)
    for name in ds.data_vars:
        assert np.all(np.isfinite(ds[name].values)), name
    assert np.all(ds.scaling_factor.values > 0) and np.all(ds.scaling_factor.values <= 1)
    squeezed = evaluate(
        "vgg16",
        collective=["ps", "hierarchical", "nccl-tree"],
        dtype=dtype,
        compressor="fp16,int8,topk:1e-300,randomk:1,signsgd,powersgd:1000000",
        **{**axes, "accum": 1},
    )
    for name in squeezed.data_vars:
        assert np.all(np.isfinite(squeezed[name].values)) and np.all(squeezed[name].values >= 0), name
    for name in ("scaling_factor", "iteration_time", "time_to_accuracy"):
        assert np.all(squeezed[name].values > 0), name


def write(path, text):
    path.write_text(text) if isinstance(text, str) else path.write_bytes(text)
    return path


@pytest.mark.parametrize(
    "name,content,message",
    [
        ("p.csv", "name,grad_bytes,backward_us\na,1000,200000\n", "shorter than the profile's backward pass"),
        (
            "p.json",
            json.dumps({"tensors": [{"grad_bytes": "lots", "backward_us": 1}], "iteration_time_s": 1}),
            "grad_bytes 'lots' is not a number",
        ),
        (
            "p.json",
            json.dumps({"tensors": [{"grad_bytes": [1], "backward_us": 1}], "iteration_time_s": 1}),
            "is not a number",
        ),
        (
            "p.json",
            json.dumps({"tensors": [{"grad_bytes": 1, "backward_us": 1}], "iteration_time_s": True}),
            "iteration time True must be a number of seconds",
        ),
        (
            "p.json",
            json.dumps(
                {"model": "a/b", "tensors": [{"grad_bytes": 1, "backward_us": 1}], "iteration_time_s": 1}
            ),
            "must be non-empty, without '/'",
        ),
        ("p.csv", b"\x89PNG\r\n\x1a\n\x00\xff\xfe", "not a text file"),
        ("missing.json", None, "profile file not found"),
    ],
)
def test_bad_profiles(tmp_path, name, content, message):
    path = tmp_path / name
    if content is not None:
        write(path, content)
    r = (
        invoke(
            "grid",
            "--profile",
            path,
            "--iteration-time",
            "0.1" if name.endswith(".csv") else None,
            "--out",
            tmp_path / "o.h5",
        )
        if name.endswith(".csv")
        else invoke("grid", "--profile", path, "--out", tmp_path / "o.h5")
    )
    assert message in one_line_error(r)
    assert not (tmp_path / "o.h5").exists()


def test_a_byte_order_mark_is_not_a_wrong_header(tmp_path):
    p = write(tmp_path / "p.csv", "\ufeffname,grad_bytes,backward_us\na,1000,20\n")
    assert (
        invoke(
            "grid", "--profile", p, "--iteration-time", "0.1", "--bw", "10", "--out", tmp_path / "o.h5", "-q"
        ).exit_code
        == 0
    )


@pytest.mark.parametrize("option", ["--reduce-cost", "measurements"])
def test_binary_files_are_refused(tmp_path, option):
    junk = write(tmp_path / "junk.bin", bytes(range(256)) * 4)
    r = (
        invoke("grid", "--reduce-cost", junk, "--out", tmp_path / "o.h5")
        if option == "--reduce-cost"
        else invoke("calibrate", junk)
    )
    assert "not a text file" in one_line_error(r)


def test_the_disk_check_keeps_a_margin(tmp_path, monkeypatch):
    import shutil as sh

    from netsweep_jax.sweep.engine.grid import make_grid
    from netsweep_jax.sweep.io import cube, job

    need = cube.estimated_bytes(make_grid("resnet50", bandwidth="1..100"))
    monkeypatch.setattr(sh, "disk_usage", lambda p: sh._ntuple_diskusage(0, 0, int(need * 1.01)))
    r = invoke("grid", "--bw", "1..100", "--out", tmp_path / "o.h5")
    assert "is free there" in one_line_error(r)
    assert job.DISK_MARGIN > 1.01 and list(tmp_path.iterdir()) == []


def test_a_full_disk_keeps_the_partial_file(tmp_path, monkeypatch):
    from netsweep_jax.sweep.io import cube

    real = cube.write_block
    calls = []

    def fill_up(f, block, arrays):
        calls.append(block.index)
        if len(calls) == 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(f, block, arrays)

    monkeypatch.setattr(cube, "write_block", fill_up)
    r = invoke("grid", "--bw", "1..20", "--block-configs", "4", "--out", tmp_path / "o.h5")
    assert "the disk filled up" in one_line_error(r, code=1)
    monkeypatch.setattr(cube, "write_block", real)
    assert invoke("grid", "--bw", "1..20", "--out", tmp_path / "o.h5", "--resume").exit_code == 0


def test_an_empty_partial_is_called_empty(tmp_path):
    (tmp_path / "o.h5.partial").write_bytes(b"")
    r = invoke("grid", "--out", tmp_path / "o.h5", "--resume")
    assert "is empty" in one_line_error(r)


@pytest.fixture(scope="module")
def cube_file(tmp_path_factory):
    out = tmp_path_factory.mktemp("c") / "c.h5"
    assert invoke("grid", "--bw", "10,25", "--nodes", "2,8", "--out", out, "-q").exit_code == 0
    return out


def test_foreign_files_are_refused_by_show_select_plot(tmp_path):
    foreign = tmp_path / "f.h5"
    with h5py.File(foreign, "w") as f:
        f["x"] = [1, 2, 3]
    text = write(tmp_path / "t.h5", "hello")
    for path, message in ((foreign, "not made by netsweep"), (text, "not a readable HDF5 cube")):
        for args in (["show", path], ["select", path, "--bw", "10"], ["plot", path, "--x", "bandwidth"]):
            assert message in one_line_error(
                invoke(*args, *(["--out", tmp_path / "p.png"] if args[0] == "plot" else []))
            )
    assert not (tmp_path / "p.png").exists()


def test_a_fifo_is_refused_without_being_opened(tmp_path):
    # #27: show and select waited forever on a FIFO (opening one waits for a writer); validate and calibrate
    # called it "not found". Each says what it is, exit 2, and never opens it.
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for args, what in (
        (["show", fifo], "not a cube"),
        (["select", fifo, "--bw", "10"], "not a cube"),
        (["plot", fifo, "--x", "bandwidth", "--out", tmp_path / "p.png"], "not a cube"),
        (["validate", "--llm", fifo, "--out", tmp_path / "v"], "not a runs file"),
        (["calibrate", fifo], "not a measurements file"),
    ):
        assert f"{fifo}: not a regular file (a FIFO, socket or device), {what}" in one_line_error(
            invoke(*args)
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]


@pytest.mark.parametrize(
    "out,message,code",
    [
        ("a_file/fig.png", "directory", 2),  # a missing folder is made; a file in its place is refused
        ("fig.bmpx", "unknown file type '.bmpx'", 2),
        ("/proc/fig.png", "cannot be written", 1),  # not writable even for root: a refused write, a fault
        ("a_dir", "a directory", 2),
    ],
)
def test_plot_outputs(cube_file, tmp_path, out, message, code):
    (tmp_path / "a_dir").mkdir()
    (tmp_path / "a_file").write_text("")
    r = invoke("plot", cube_file, "--x", "bandwidth", "--hue", "nodes", "--out", tmp_path / out)
    assert message in one_line_error(r, code)
    assert not list(tmp_path.glob("**/*.png")) and not list(tmp_path.glob("**/*.partial"))


def test_plot_refuses_the_same_dim_twice(cube_file, tmp_path):
    r = invoke(
        "plot",
        cube_file,
        "--x",
        "nodes",
        "--hue",
        "nodes",
        "--sel",
        "bandwidth=10",
        "--out",
        tmp_path / "f.png",
    )
    assert "the two plotted dims must differ" in one_line_error(r)


def test_need_calibrate_paper_outputs(tmp_path):
    plain = write(tmp_path / "plain.txt", "keep")
    a_dir = tmp_path / "d"
    a_dir.mkdir()
    need = ["need", "--target", "0.9", "--solve", "ratio", "--bw", "10", "--out"]
    assert "a directory" in one_line_error(invoke(*need, a_dir))
    cube = write(tmp_path / "cube.h5", "keep")
    assert "file exists; pass --force" in one_line_error(invoke(*need, cube)) and cube.read_text() == "keep"
    # A cube is HDF5 whatever its name: an output named otherwise is refused (need wrote HDF5 into need.json).
    assert "unknown file type '.json'" in one_line_error(invoke(*need, tmp_path / "need.json"))
    assert "unknown file type '.txt' for a cube" in one_line_error(
        invoke("grid", "--bw", "10", "--out", tmp_path / "g.txt")
    )
    assert not (tmp_path / "need.json").exists() and not (tmp_path / "g.txt").exists()
    assert "a directory" in one_line_error(
        invoke("calibrate", "examples/resnet50_measured.csv", "--out", a_dir)
    )
    assert "file exists" in one_line_error(
        invoke("calibrate", "examples/resnet50_measured.csv", "--out", write(tmp_path / "fit.json", "keep"))
    )
    assert "not a directory" in one_line_error(invoke("paper", "--out", plain))
    assert plain.read_text() == "keep"
    r = invoke("paper", "--out", tmp_path / "new", "--profiles-dir", tmp_path / "nothing")
    assert "--profiles-dir" in one_line_error(r)
    assert not (tmp_path / "new").exists()  # refused before anything was made


def test_need_answers_reach_the_target_when_fed_back():
    from netsweep_jax.sweep.analysis.need import SOLVED, solve

    for axis in ("ratio", "utilization", "bandwidth"):
        for model in ("resnet50", "vgg16"):
            kw = {} if axis == "bandwidth" else {"bandwidth": [1, 10, 25, 40]}
            ds = solve(model, target=0.99, axis=axis, nodes=[2, 4, 8, 16], **kw)  # float32
            for idx in zip(*np.nonzero(ds.status.values == SOLVED)):
                point = {d: ds[d].values[i] for d, i in zip(ds.status.dims, idx)}
                value = ds[f"required_{axis}"].values[idx]
                back = evaluate(
                    model,
                    **{
                        "bandwidth": 1.0,
                        **{k: v for k, v in point.items() if k in NUMERIC_AXES},
                        axis: value,
                    },
                )
                assert back.scaling_factor.values.item() >= np.float32(0.99), (axis, point, value)


@pytest.mark.parametrize(
    "rows,fit,message",
    [
        ("1,1,100,0.9\n1,1,10,0.8\n", "utilization", "no training row depends on it"),
        ("8,8,100,0.75\n", "utilization,latency", "fitting 2 parameters takes at least 2 training rows"),
    ],
)
def test_calibrate_refuses_unidentifiable_fits(tmp_path, rows, fit, message):
    path = write(tmp_path / "m.csv", "nodes,gpus_per_node,bandwidth,scaling_factor\n" + rows)
    assert message in one_line_error(invoke("calibrate", path, "--fit", fit))


def test_calibrate_refuses_a_time_below_t1(tmp_path):
    path = write(tmp_path / "m.csv", "nodes,gpus_per_node,bandwidth,iteration_time\n8,8,100,0.1\n")
    assert "below the single-GPU time T1" in one_line_error(invoke("calibrate", path))


@pytest.mark.parametrize(
    "argv,message",
    [
        (["grid", "--bogus", "1"], "No such option: --bogus"),
        (["grid", "--bandwith", "10"], "No such option: --bandwith (Possible options: --bandwidth"),
        (
            ["plan", "--utilisation", "0.5"],
            "No such option: --utilisation (Possible options: --util, --utilization)",
        ),
        (["grid", "--nodes"], "requires an argument"),
        (["frob"], "No such command"),
    ],
)
def test_usage_errors_are_one_line(monkeypatch, capsys, argv, message):
    from netsweep_jax.sweep.cli.entry import main

    monkeypatch.setattr(sys, "argv", ["sweep", *argv])
    with pytest.raises(SystemExit) as exit_:
        main()
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_.value.code == 2 and len(err) == 1 and err[0].startswith("error: ") and message in err[0]


@pytest.mark.parametrize(
    "args,message",
    [
        (
            ["grid", "--bw", "10,100", "--busbw", "9"],
            "--busbw 9: say the link rate it was measured on, as 9@400",
        ),
        (["grid", "--bw", "100", "--busbw", "9", "--util", "0.5"], "--util is given too"),
        (
            ["grid", "--bw", "100", "--busbw", "90"],
            "is a utilization of 7.2; a number from 0.0001 to 1 is needed",
        ),
        (["grid", "--busbw", "9@0"], "--busbw 9@0: the link rate 0 must be a number from 0.001"),
        (["grid", "--busbw", "fast@100"], "--busbw 'fast' is not a number"),
        (
            ["need", "--target", "0.9", "--solve", "utilization", "--bw", "100", "--busbw", "9"],
            "drop --busbw",
        ),
        # NCCL's pricing has its own transport efficiency, in both families (#39: one naming of nccl).
        (
            ["grid", "--bw", "100", "--busbw", "9@100", "--collective", "ring,nccl"],
            "fit your nccl-tests logs",
        ),
        (
            ["grid", "--model", "llama3-8b", "--busbw", "40", "--collective", "nccl"],
            "fit your nccl-tests logs",
        ),
        (
            ["grid", "--model", "llama3-8b", "--busbw", "40", "--collective", "nccl:ring"],
            "fit your nccl-tests logs",
        ),
    ],
)
def test_bad_bus_bandwidths_are_one_line(tmp_path, args, message):
    r = invoke(*args, "--out", tmp_path / "o.h5")
    assert message in one_line_error(r)
    assert list(tmp_path.iterdir()) == []


def test_the_size_checks_count_the_chunks_hdf5_reserves_whole(tmp_path):
    # A hunt: 2,913 bandwidths in chunks of 2,912 reserve two chunks' room, 33.7 MB on disk where 18.7 MB had
    # been estimated, so the disk and ulimit -f checks passed a cube the file system then refused.
    from netsweep_jax.sweep.engine.blocks import Blocking
    from netsweep_jax.sweep.engine.grid import make_grid
    from netsweep_jax.sweep.io import cube

    out = tmp_path / "o.h5"
    r = invoke(
        "grid", "--bw", "1..400@300", "--ratio", "1..1000@7log", "--block-configs", "256", "--out", out
    )
    assert r.exit_code == 0, r.output
    grid = make_grid("resnet50", bandwidth="1..400@300", ratio="1..1000@7log")
    blocking = Blocking(grid.sizes, 256, grid.family)  # chunks of 36 bandwidths: 9 of them hold 324
    with h5py.File(out) as f:  # the bytes HDF5 holds for the data variables
        data = sum(f[name].id.get_storage_size() for name in grid.variables)
    assert cube.estimated_bytes(grid) < data == cube.estimated_bytes(grid, blocking)
    assert cube.estimated_bytes(grid, blocking) == cube.estimated_bytes(grid) * 324 // 300
