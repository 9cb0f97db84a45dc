"""The CLI end to end: the main command, models/show/select, and every bad input."""

import h5py
import numpy as np
import pytest

from helpers import invoke, one_line_error
from netsweep_jax.sweep.cli.app import app
from netsweep_jax.sweep.core.schema import DIMS


def test_grid_as_written_in_the_issue(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = invoke("grid", "--model", "resnet50", "--bw", "10,25,100", "--ratio", "1..100")
    assert r.exit_code == 0, r.output
    files = list((tmp_path / "results").glob("resnet50-*.h5"))
    assert len(files) == 1 and "300 configurations" in r.output
    with h5py.File(files[0]) as f:
        sizes = dict(zip(DIMS, f["scaling_factor"].shape))
        assert sizes == {**{d: 1 for d in DIMS}, "bandwidth": 3, "ratio": 100}
        assert f.attrs["command"].startswith("sweep ")  # sys.argv: exact in test_resume.py
        assert np.all(np.isfinite(f["scaling_factor"][...]))
    assert not list((tmp_path / "results").glob("*.partial"))


def test_nics_per_node_says_which_collectives_ignore_it(tmp_path):
    # The paper's ring, tree and ps give every GPU its own link: their rows do not move with the NIC count,
    # and the sweep says so once; the NCCL collectives share the node's NICs and speed up with more.
    args = [
        "--model",
        "resnet50",
        "--nodes",
        "2",
        "--gpus-per-node",
        "8",
        "--bw",
        "10",
        "--nics-per-node",
        "1,8",
    ]
    r = invoke("grid", *args, "--collective", "ring,nccl-ring", "--out", tmp_path / "r.h5", "-q")
    assert r.exit_code == 0, r.output
    assert "ring: one link of --bw per GPU, as in the paper, whatever --nics-per-node" in r.output
    with h5py.File(tmp_path / "r.h5") as f:
        sf = f["scaling_factor"][...].squeeze()  # [collective, nics_per_node]
        assert [c.decode() for c in f["collective"][...]] == ["ring", "nccl-ring"]
    assert sf[0, 0] == sf[0, 1] and sf[1, 1] > sf[1, 0]
    quiet = invoke("grid", *args, "--collective", "nccl-ring", "--out", tmp_path / "n.h5", "-q")
    assert quiet.exit_code == 0 and "--nics-per-node" not in quiet.output


def test_models_lists_builtins():
    r = invoke("models")
    assert r.exit_code == 0
    for name, count in (("resnet50", 161), ("resnet101", 314), ("vgg16", 58)):
        assert name in r.output and str(count) in r.output
    # the GPU presets' columns start where each other's do, the longest name's too (a hunt: h100-hbm2e's)
    presets = [line for line in r.output.splitlines() if " fp32 " in line and "TFLOP/s" in line]
    assert len(presets) > 5 and len({line.index(" fp32 ") for line in presets}) == 1, presets


def test_show_and_select(tmp_path):
    out = tmp_path / "c.h5"
    assert invoke("grid", "--bw", "10,25", "--nodes", "2,8", "--out", out, "-q").exit_code == 0
    r = invoke("show", out)
    assert r.exit_code == 0
    assert "bandwidth" in r.output and "scaling_factor" in r.output and "resnet50: 161 tensors" in r.output
    r = invoke("select", out, "--bw", "25", "--nodes", "8", "--csv")
    assert r.exit_code == 0, r.output
    lines = r.output.strip().splitlines()
    assert lines[0].startswith("nodes,bandwidth,scaling_factor")
    assert len(lines) == 2
    r = invoke("select", out, "--bw", "40")
    assert r.exit_code == 2 and "--bw 40: not in the cube" in r.output
    # A value a range expanded to was named alone ("--bw 11"), a near one as the one it is not ("--bw 25").
    for typed, said in (("25..26", "--bw 26 (of 25..26): "), ("25.0000001", "--bw 25.0000001: ")):
        r = invoke("select", out, "--bw", typed)
        assert r.exit_code == 2 and said in r.output, r.output


def test_show_takes_a_float16_cubes_median_in_float64(tmp_path):
    # A hunt: the median of an even count, the mean of its two middle values, was taken in float16 (0.767578 for
    # 0.767822).
    import xarray as xr

    out = tmp_path / "f16.h5"
    r = invoke("grid", "--bw", "1,10,100", "--ratio", "1,10", "--store", "float16", "--vars", "scaling_factor",
               "--out", out, "-q")  # fmt: skip
    assert r.exit_code == 0, r.output
    stored = xr.open_dataset(out, engine="h5netcdf")["scaling_factor"].values
    assert stored.dtype == np.float16 and stored.size % 2 == 0
    median = np.median(stored.astype(np.float64))
    assert median != float(np.median(stored))  # the case the hunt met: float16 rounds the mean
    line = next(x for x in invoke("show", out).output.splitlines() if x.strip().startswith("scaling_factor"))
    assert f"/ {median:.6g} /" in line, line


BAD = [
    (["--bw", "0"], "--bw 0: bandwidth must be a number from 0.001 to 1000000"),
    (["--bw", "ten"], "--bw 'ten': 'ten' is not a number"),
    (["--util", "0"], "--util 0: utilization must be a number from 0.0001 to 1"),
    (["--util", "1.2"], "--util 1.2"),
    (["--ratio", "0.5"], "--ratio 0.5: ratio must be a number from 1 to 1000000"),
    (["--nodes", "0"], "--nodes 0: nodes must be an integer from 1 to 1000000"),
    (["--nodes", "2.5"], "--nodes 2.5: nodes must be an integer"),
    (["--gpus-per-node", "0"], "--gpus-per-node 0"),
    (["--gpus-per-node", "1.5"], "--gpus-per-node 1.5"),
    (["--latency", "-1"], "--latency -1: latency must be a number from 0 to 1000000"),
    (["--fusion-mb", "-1"], "--fusion-mb -1"),
    (["--fusion-ms", "-1"], "--fusion-ms -1"),
    (["--ratio", "100..1"], "--ratio '100..1': range is reversed"),
    (["--ratio", "5..5:0"], "--ratio '5..5:0': step 0 is empty"),
    (["--model", "alexnet"], "--model 'alexnet': unknown; known: data-parallel resnet50, resnet101, vgg16"),
    # a typo of a large model's name: refused for --gpus, which applied "not to lama3-70b" (a hunt)
    (["--model", "lama3-70b", "--gpus", "8"], "large models gpt3-175b, llama3-8b, llama3-70b, llama3-405b"),
    (["--model", "lama3-70b", "--gpus", "8"], "; did you mean llama3-70b?"),
    (["--collective", "butterfly"], "--collective 'butterfly': unknown; known: ring, tree, ps, hierarchical"),
    (["--profile", "missing.csv", "--iteration-time", "0.1"], "missing.csv: profile file not found"),
    (["--intra-bw", "0"], "--intra-bw 0"),
]


@pytest.mark.parametrize("args,message", BAD)
def test_bad_input_is_one_line_exit_2_no_file(tmp_path, args, message, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = invoke("grid", *args, "--out", tmp_path / "o.h5")
    assert r.exit_code == 2
    assert r.output.strip() == f"error: {r.output.strip()[7:]}"
    assert message in r.output
    assert len(r.output.strip().splitlines()) == 1 and "Traceback" not in r.output
    assert list(tmp_path.iterdir()) == []


def test_malformed_profile_names_file_and_line(tmp_path):
    bad = tmp_path / "p.csv"
    bad.write_text("name,grad_bytes,backward_us\na,10,1\nb,x,2\n")
    r = invoke("grid", "--profile", bad, "--iteration-time", "0.1", "--out", tmp_path / "o.h5")
    assert r.exit_code == 2 and "p.csv:3: grad_bytes 'x' is not a number" in r.output
    assert not (tmp_path / "o.h5").exists()
    # A fraction of a byte was swept, and a saved profile wrote it whole (4.5 became 4).
    bad.write_text("name,grad_bytes,backward_us\na,4.5,10\n")
    r = invoke("grid", "--profile", bad, "--iteration-time", "0.1", "--out", tmp_path / "o.h5")
    assert r.exit_code == 2 and "p.csv:2: grad_bytes '4.5' must be a whole number of bytes" in r.output


def test_profile_needs_iteration_time(tmp_path):
    p = tmp_path / "p.csv"
    p.write_text("name,grad_bytes,backward_us\na,10,1\n")
    r = invoke("grid", "--profile", p, "--out", tmp_path / "o.h5")
    assert r.exit_code == 2 and "--iteration-time needed: " in r.output


def test_existing_out_needs_force(tmp_path):
    out = tmp_path / "o.h5"
    out.write_text("keep me")
    r = invoke("grid", "--out", out, "-q")
    assert r.exit_code == 2 and "file exists; pass --force" in r.output
    assert out.read_text() == "keep me"
    assert invoke("grid", "--out", out, "-q", "--force").exit_code == 0
    assert h5py.is_hdf5(out)


def test_out_in_unwritable_directory(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    r = invoke("grid", "--out", blocker / "o.h5")
    assert r.exit_code == 2 and f"directory {blocker} is not a directory" in r.output
    r = invoke("grid", "--out", blocker / "sub" / "o.h5")
    assert r.exit_code == 2 and f"cannot be made ({blocker} is not a directory)" in r.output
    dangling = tmp_path / "link"
    dangling.symlink_to(tmp_path / "nowhere")  # a link to nothing is no folder to make (it was exit code 1)
    r = invoke("grid", "--out", dangling / "sub" / "o.h5")
    assert r.exit_code == 2 and f"cannot be made ({dangling} is not a directory)" in r.output
    r = invoke("grid", "--out", "/proc/o.h5")  # the file system refuses the write: a fault, exit code 1
    assert r.exit_code == 1 and "cannot be written" in r.output


def test_out_in_missing_folders_makes_them(tmp_path):
    """An --out whose folders do not exist yet (results/ in a fresh directory) gets them, as a report's --out
    does; a refused run leaves none of them behind."""
    out = tmp_path / "new" / "deeper" / "o.h5"
    assert invoke("grid", "--bw", "10", "--out", out, "-q").exit_code == 0 and h5py.is_hdf5(out)
    refused = tmp_path / "other" / "deeper" / "o.h5"
    assert invoke("grid", "--bw", "10", "--out", refused, "-q", "--resume").exit_code == 2
    need = ["need", "--model", "resnet50", "--nodes", "4", "--target", "0.9", "--solve", "bandwidth"]
    assert invoke(*need, "--out", tmp_path / "other" / "n.h5", "--target", "2").exit_code == 2
    assert not (tmp_path / "other").exists()
    assert invoke(*need, "--out", tmp_path / "other" / "n.h5").exit_code == 0
    assert h5py.is_hdf5(tmp_path / "other" / "n.h5")


def test_a_run_refused_after_its_folders_are_made_removes_them(tmp_path, monkeypatch):
    """A disk without room is found once the cube's folders exist: the refusal leaves none of them."""
    import shutil
    from collections import namedtuple

    full = namedtuple("usage", "total used free")(1, 1, 0)
    monkeypatch.setattr(shutil, "disk_usage", lambda path: full)
    out = tmp_path / "made" / "deeper" / "o.h5"
    r = invoke("grid", "--bw", "10", "--out", out, "-q")
    assert r.exit_code == 2 and "free there" in r.output
    assert not (tmp_path / "made").exists()


def test_resume_with_nothing_to_resume(tmp_path):
    r = invoke("grid", "--out", tmp_path / "o.h5", "--resume")
    assert r.exit_code == 2 and "nothing to resume" in r.output
    assert list(tmp_path.iterdir()) == []


def test_help_names_the_cache_directory_used_and_compares_one_busbw(monkeypatch, tmp_path):
    # A hunt: --compile-cache's help named ~/.cache/netsweep (the cache is its jax/ subdirectory, or
    # $XDG_CACHE_HOME's), and --busbw's said a comma list gives several where compare takes one.
    from netsweep_jax.sweep.engine import compile_cache

    text = " ".join(invoke("grid", "--help").output.split())
    assert "$XDG_CACHE_HOME/netsweep/jax, else ~/.cache/netsweep/jax" in text
    monkeypatch.delenv("NETSWEEP_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert compile_cache.directory() == tmp_path / "netsweep" / "jax"
    assert "(sweep compare takes one)" in " ".join(invoke("compare", "--help").output.split())


def test_help_documents_value_syntax():
    r = invoke("grid", "--help")
    assert r.exit_code == 0
    for text in ("--bw", "--ratio", "--resume", "1..1000@20log"):
        assert text in r.output


# The choices each option's help must list in full when it lists any (two or more named): the registries.
def choices(command, option):
    from netsweep_jax.sweep.core.layout_axes import (
        ATTENTIONS,
        LAYOUT_COLLECTIVES,
        LAYOUT_PRECISIONS,
        NCCL_COLLECTIVES,
        RECOMPUTES,
    )
    from netsweep_jax.sweep.core.schema import (
        BUCKETINGS,
        COLLECTIVES,
        FITTABLE,
        KERNELS,
        SOLVABLE,
        STORE_DTYPES,
        VARIABLES,
    )
    from netsweep_jax.sweep.engine.reductions import OPS
    from netsweep_jax.sweep.model.compressors import METHODS
    from netsweep_jax.sweep.model.compute import GPUS, WORKLOAD_PRECISIONS

    only = {
        ("plan", "--precision"): LAYOUT_PRECISIONS,
        ("plan", "--collective"): LAYOUT_COLLECTIVES,
        ("compare", "--precision"): tuple(WORKLOAD_PRECISIONS),
        ("compare", "--collective"): COLLECTIVES,
        ("calibrate", "--collective"): tuple(c for c in COLLECTIVES if c not in NCCL_COLLECTIVES),
        ("profile measure", "--precision"): tuple(WORKLOAD_PRECISIONS),
    }
    registry = {
        "--collective": COLLECTIVES + LAYOUT_COLLECTIVES,
        "--bucketing": BUCKETINGS,
        "--kernel": KERNELS,
        "--store": STORE_DTYPES,
        "--vars": tuple(VARIABLES),
        "--compressor": METHODS,
        "--gpu": tuple(GPUS),
        "--precision": tuple(WORKLOAD_PRECISIONS) + LAYOUT_PRECISIONS,
        "--reduce": OPS,
        "--recompute": RECOMPUTES,
        "--attention": ATTENTIONS,
        "--fit": FITTABLE,
        "--solve": SOLVABLE,
        "--kind": ("line", "heatmap"),
    }
    return only.get((command, option), registry.get(option, ()))


def every_command():
    import typer

    def walk(command, path):
        yield path, command
        for name, sub in getattr(command, "commands", {}).items():
            yield from walk(sub, (*path, name))

    return list(walk(typer.main.get_command(app), ()))


def test_every_help_fits_80_columns_uncut_and_lists_every_choice(monkeypatch):
    import re

    monkeypatch.setenv("COLUMNS", "80")
    listed = set()
    commands = every_command()
    assert len(commands) > 12
    for path, command in commands:
        r = invoke(*path, "--help")
        assert r.exit_code == 0, (path, r.output)
        lines = r.output.splitlines()
        assert max(len(line) for line in lines) <= 80, path
        assert "…" not in r.output and "\\[" not in r.output, path
        columns = {m.start(2) for line in lines if (m := re.match(r"^  (-\S.*?)  +(\S)", line))}
        assert max(columns, default=0) <= 26, (path, columns)  # the option column: at most 24 characters
        flat = " ".join(r.output.split())
        texts = [command.help or ""] + [
            p.help or "" for p in command.params if not getattr(p, "hidden", False)
        ]
        texts += [sub.help.split("\n\n")[0] for sub in getattr(command, "commands", {}).values()]
        for text in texts:
            # shown in full (click's \b marker, which keeps a paragraph's lines, is not printed)
            assert " ".join(text.replace("\\[", "[").replace("\b", "").split()) in flat, (path, text)
        for p in command.params:
            names = choices(" ".join(path), p.opts[0])
            named = [c for c in names if re.search(rf"(?<![\w-]){re.escape(c)}(?![\w-])", p.help or "")]
            if len(named) >= 2:
                listed.add((" ".join(path), p.opts[0]))
                assert named == list(names), (path, p.opts[0], sorted(set(names) - set(named)))
    assert {
        ("grid", "--bucketing"),
        ("grid", "--gpu"),
        ("grid", "--precision"),
        ("grid", "--collective"),
        ("grid", "--kernel"),
        ("grid", "--compressor"),
        ("plan", "--precision"),
        ("plan", "--collective"),
        ("need", "--solve"),
        ("calibrate", "--fit"),
        ("compare", "--bucketing"),
        ("plot", "--kind"),
        ("grid", "--recompute"),
        ("grid", "--reduce"),
        ("grid", "--store"),
        ("grid", "--vars"),
    } <= listed


def test_help_is_plain_text_with_brackets_as_typed(monkeypatch):
    # Help texts are not Rich markup any more: "[default: x]" and ".[torch]" are printed as typed.
    monkeypatch.setenv("COLUMNS", "80")
    flat = " ".join(invoke("profile", "measure", "--help").output.split())
    assert "pip install -e '.[torch]'" in flat and "[default: fp32]" in flat
    assert invoke("select", "--help").output.startswith("Usage: root select [OPTIONS] FILE\n")


def test_select_nearest_picks_a_coordinate_and_says_which(tmp_path):
    out = tmp_path / "log.h5"
    assert invoke("grid", "--bw", "1..1000@7log", "--nodes", "8", "--out", out, "-q").exit_code == 0
    r = invoke("select", out, "--bw", "37")  # 1, 3.16, 10, 31.6, ...: no typed value hits a log-spaced axis
    assert r.exit_code == 2 and "--bw 37: not in the cube" in r.output and "--nearest" in r.output
    r = invoke("select", out, "--bw", "37,40,900", "--nearest", "--csv")
    assert r.exit_code == 0, r.output
    assert r.stderr.splitlines() == [
        "--bw 37: not in the cube; the nearest, 31.6227766017, selected",
        "--bw 40: not in the cube; the nearest, 31.6227766017, selected",
        "--bw 900: not in the cube; the nearest, 1000, selected",
    ]
    rows = r.stdout.strip().splitlines()
    assert rows[0].startswith("bandwidth,") and [float(row.split(",")[0]) for row in rows[1:]] == [
        pytest.approx(10**1.5),
        1000.0,
    ]  # each coordinate once
    r = invoke("select", out, "--bw", "1000", "--nearest")  # a value in the cube: nothing to say
    assert r.exit_code == 0 and r.stderr == ""


def test_presets_and_names_are_case_insensitive(tmp_path):
    axes = ["--bw", "10", "--nodes", "2", "-q"]
    lower, upper = tmp_path / "lower.h5", tmp_path / "upper.h5"
    assert (
        invoke(
            "grid",
            "--model",
            "gpt2,resnet50",
            "--gpu",
            "h100",
            "--precision",
            "bf16",
            "--collective",
            "nccl-ring",
            "--bucketing",
            "ddp",
            *axes,
            "--out",
            lower,
        ).exit_code
        == 0
    )
    r = invoke(
        "grid",
        "--model",
        "GPT2,ResNet50",
        "--gpu",
        "H100",
        "--precision",
        "BF16",
        "--collective",
        "NCCL-RING",
        "--bucketing",
        "DDP",
        *axes,
        "--out",
        upper,
    )
    assert r.exit_code == 0, r.output
    with h5py.File(lower) as a, h5py.File(upper) as b:
        assert [m.decode() if isinstance(m, bytes) else m for m in b["model"][...]] == [
            "gpt2@h100-bf16-b8",
            "resnet50",
        ]
        np.testing.assert_array_equal(a["scaling_factor"][...], b["scaling_factor"][...])
    r = invoke("select", upper, "--model", "ResNet50", "--collective", "NCCL-Ring", "--csv")
    assert r.exit_code == 0 and r.stdout.splitlines()[1].startswith("resnet50,nccl-ring,"), r.output
    assert len(r.stdout.splitlines()) == 2


def test_show_and_select_read_a_layout_cube_as_it_was_asked(tmp_path):
    # #27: integer dims printed as floats, 0.0 where a value follows the GPU's system, layout dp 0.0, status
    # codes undecoded, and nothing said of what was assumed.
    out = tmp_path / "l.h5"
    args = ["--model", "llama3-8b", "--gpus", "48", "--global-batch", "48", "--tp", "1,3", "--pp", "1"]
    assert invoke("grid", *args, "--out", out).exit_code == 0
    shown = invoke("show", out).output
    assert "  assumed: h100: DGX H100" in shown
    assert "[48]" in shown and "[1, 3]" in shown and "48.0" not in shown
    assert "[0 = the GPU's system] Gbit/s" in shown and "[0 = gpus / (tp pp cp)]" in shown
    assert "can exist (1), heads not divisible by tp (1)" in shown  # whether it fits: fits
    table = invoke("select", out, "--csv").output.splitlines()
    assert table[0].startswith("tp,") and table[1].startswith("1,") and table[2].startswith("3,")
    assert table[1].split(",")[table[0].split(",").index("status")] == "does not fit in memory"  # #42: not ok
    assert table[2].split(",")[table[0].split(",").index("status")] == "heads not divisible by tp"


def test_a_tiny_sweeps_rate_is_not_zero():
    # One configuration in 2.26 s printed "(0/s end to end)": two significant digits below 10 a second.
    from netsweep_jax.sweep.io.job import summary_line

    s = {"configs": 1, "seconds": 2.26, "resumed_blocks": 0, "out": "x.h5"}
    lines = [summary_line({**s, "configs_per_s": r}) for r in (0.4425, 5.5, 1625.3)]
    assert [line.split("(")[1] for line in lines] == [
        "0.44/s end to end)",
        "5.5/s end to end)",
        "1,625/s end to end)",
    ]


@pytest.mark.parametrize(
    "args,said",
    [
        (["grid", "--bw", "10", "--bw", "20"], "--bw given twice: give it once"),
        (["grid", "--bw", "10", "--bandwidth=20"], "--bw and --bandwidth are one option, given twice"),
        (["plan", "--model", "llama3-8b", "--gpus", "8", "--gpus", "16"], "--gpus given twice"),
        (["select", "o.h5", "--bw", "10", "--bw", "25"], "--bw given twice"),
    ],
)
def test_an_option_given_twice_is_refused_not_the_last_kept(tmp_path, args, said):
    # --bw 10 --bw 20 swept 20 alone, in silence (Click keeps the last value).
    r = invoke(*args, "--out", tmp_path / "x.h5") if args[0] != "select" else invoke(*args)
    assert r.exit_code == 2 and r.output.count("\n") == 1 and said in r.output, r.output
    assert not (tmp_path / "x.h5").exists()


def test_help_wins_over_an_option_given_twice():
    # Click shows the help whatever else the line holds; an option given twice was refused before the help.
    r = invoke("grid", "--bw", "10", "--bw", "20", "--help")
    assert r.exit_code == 0 and "Usage: " in r.output and "grid [OPTIONS]" in r.output, r.output
    r = invoke("grid", "--out", "--help", "--out", "x.h5")  # --help as --out's value: not the help option
    assert r.exit_code == 2 and "--out given twice" in r.output, r.output


@pytest.mark.parametrize(
    "args,said",
    [
        (["paper", "--out", ""], "--out '': an empty path"),
        (["compare", "--model", "resnet50", "--bw", "10", "--out="], "--out '': an empty path"),
        (["grid", "--model", "resnet50", "--bw", "10", "--profile", ""], "--profile '': an empty path"),
        (["show", ""], "'': an empty path"),
        (["calibrate", "x.csv", ""], "'': an empty path"),
    ],
)
def test_an_empty_path_is_refused_not_read_as_the_current_folder(tmp_path, monkeypatch, args, said):
    # Click reads '' as Path('.'): `sweep paper --out ''` wrote its cube, figures and report into the current
    # folder, and `compare --out ''` its report (a hunt).
    monkeypatch.chdir(tmp_path)
    r = invoke(*args)
    assert r.exit_code == 2 and r.output.count("\n") == 1 and said in r.output, r.output
    assert list(tmp_path.iterdir()) == []
    # An option whose value is not a path may be empty as before (refused by its own rule, if any).
    assert "empty path" not in invoke("grid", "--model", "resnet50", "--bw", "").output


def test_an_option_from_its_environment_variable_is_named_as_that(tmp_path, monkeypatch):
    # A hunt: NETSWEEP_KERNEL=bogus was refused as "--kernel 'bogus'", an option never typed.
    monkeypatch.setenv("NETSWEEP_KERNEL", "bogus")
    line = one_line_error(invoke("grid", "--bw", "10", "--out", tmp_path / "k.h5"))
    assert line.startswith("error: NETSWEEP_KERNEL (--kernel) 'bogus': must be one of auto, xla"), line
    line = one_line_error(invoke("grid", "--bw", "10", "--kernel", "wrong", "--out", tmp_path / "k.h5"))
    assert line.startswith("error: --kernel 'wrong': must be one of"), line
    assert not (tmp_path / "k.h5").exists()
