"""--reduce: on-device reductions equal reducing the full cube in numpy; resume stays bit-identical."""

import signal

import h5py
import numpy as np
import pytest
import xarray as xr

import netsweep_jax.sweep as sweep
from helpers import invoke, invoke_interrupted_after, shares_in_turn, signalled_after
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.engine.grid import make_grid
from netsweep_jax.sweep.engine.reductions import kind_of
from netsweep_jax.sweep.io.job import run_grid

AXES = dict(
    bandwidth="1..100@4",
    ratio=[1, 2, 4, 50],
    nodes=[1, 2, 8],
    jitter=[0, 0.02],
    collective="ring,tree,nccl-ring",
)
MODELS = "resnet50,vgg16"


FULL = {}


def full(block_configs):
    """The whole cube, computed with the same blocks (so with the same compiled shapes)."""
    if block_configs not in FULL:
        FULL[block_configs] = sweep.evaluate(MODELS, block_configs=block_configs, **AXES)
    return FULL[block_configs]


def numpy_reduce(da, dims, family):
    """(values, {dim: coordinate of the extreme}) by numpy over the full cube."""
    kept = [d for d in da.dims if d not in dims]
    moved = da.transpose(*kept, *dims).values
    flat = moved.reshape(moved.shape[: len(kept)] + (-1,))
    if family == "mean":
        return flat.mean(axis=-1), {}
    pick = np.argmax(flat, axis=-1) if family == "max" else np.argmin(flat, axis=-1)
    where = np.unravel_index(pick, [da.sizes[d] for d in dims])
    values = np.take_along_axis(flat, pick[..., None], axis=-1)[..., 0]
    return values, {d: da[d].values[i] for d, i in zip(dims, where)}


@pytest.mark.parametrize(
    "reduce,family,block_configs",
    [
        (
            ["argmax:collective", "max:ratio"],
            "max",
            5,
        ),  # small blocks: ratio split across blocks, rows reduced on the host
        (
            ["argmax:model,jitter", "max:ratio"],
            "max",
            10**6,
        ),  # one block per task: ratio, jitter reduced on the device
        (["argmin:nodes,bandwidth"], "min", 5),
        (["mean:bandwidth,collective"], "mean", 10**6),
    ],
)
def test_reductions_equal_numpy_on_the_full_cube(tmp_path, reduce, family, block_configs):
    grid = make_grid(MODELS, reduce=reduce, **AXES)
    out = tmp_path / "r.h5"
    run_grid(grid, out, command="test", block_configs=block_configs)
    got = xr.open_dataset(out, engine="h5netcdf").load()
    dims = list(grid.reduction.dims)
    for name in ("scaling_factor", "iteration_time"):
        values, labels = numpy_reduce(full(block_configs)[name], dims, family)
        if family == "mean":
            np.testing.assert_allclose(got[name].values, values, rtol=2e-6)
        else:
            np.testing.assert_array_equal(got[name].values, values)
        for d, want in labels.items():
            if d in grid.reduction.labelled:
                np.testing.assert_array_equal(got[f"{name}_arg{family}_{d}"].values, want)
    assert got.attrs["reduced_dims"] == ",".join(dims) and not (tmp_path / "r.h5.partial").exists()
    in_memory = sweep.evaluate(MODELS, reduce=reduce, block_configs=block_configs, **AXES)
    for name in got.data_vars:
        np.testing.assert_array_equal(in_memory[name].values, got[name].values)


REDUCED_GRID = [
    "--model",
    "resnet50",
    "--bw",
    "1..20",
    "--ratio",
    "1..6",
    "--nodes",
    "2,4,8",
    "--collective",
    "ring,tree",
    "--reduce",
    "argmax:collective",
    "--reduce",
    "max:ratio",
    "--block-configs",
    "8",
    "-q",
]  # 120 blocks


@pytest.mark.parametrize("sig,code", [(signal.SIGKILL, -9), (signal.SIGINT, 130)], ids=["kill-9", "ctrl-c"])
def test_resume_after_an_interruption_is_bit_identical(tmp_path, monkeypatch, sig, code):
    clean = tmp_path / "clean.h5"
    assert invoke("grid", *REDUCED_GRID, "--out", clean).exit_code == 0
    out = tmp_path / "r.h5"
    if sig == signal.SIGKILL:  # a process killed with no chance to clean up
        assert signalled_after(40, sig, "grid", *REDUCED_GRID, "--out", out).returncode == code
    else:  # Ctrl-C as its handler records it (its delivery to a process: tests/test_resume.py)
        assert (
            invoke_interrupted_after(monkeypatch, 40, sig, "grid", *REDUCED_GRID, "--out", out).exit_code
            == code
        )
    assert (tmp_path / "r.h5.partial").exists() and not out.exists()
    # The checkpoint is no cube: show says what it is and what reads it (was "not made by netsweep").
    r = invoke("show", tmp_path / "r.h5.partial", "--verify")
    assert (
        r.exit_code == 2 and "the checkpoint of an interrupted sweep grid --reduce or sweep plan" in r.output
    )
    # Resumed without its --reduce (was a traceback: the unreduced sweep read the checkpoint's groups as cubes).
    plain = [a for i, a in enumerate(REDUCED_GRID) if "--reduce" not in (a, REDUCED_GRID[i - 1])]
    r = invoke("grid", *plain, "--out", out, "--resume")
    assert r.exit_code == 2 and "made for another grid, profile or --reduce" in r.output, r.output
    assert invoke("grid", *REDUCED_GRID, "--out", out, "--resume").exit_code == 0
    a, b = (xr.open_dataset(p, engine="h5netcdf").load() for p in (clean, out))
    for name in a.data_vars:
        np.testing.assert_array_equal(a[name].values, b[name].values)


@pytest.mark.parametrize(
    "reduce,message",
    [
        (["sum:ratio"], "unknown op 'sum'"),
        (["max:speed"], "'speed' is not a dim"),
        (["max:ratio", "argmax:ratio"], "ratio is reduced twice"),
        (["max:ratio", "min:nodes"], "would depend on their order"),
        (["max:"], "name the dims to reduce"),
    ],
)
def test_bad_reductions_are_refused(tmp_path, reduce, message):
    with pytest.raises(InputError, match=message):
        make_grid("resnet50", bandwidth=10, reduce=reduce)
    args = [a for item in reduce for a in ("--reduce", item)]
    r = invoke("grid", "--bw", "10", *args, "--out", tmp_path / "o.h5")
    assert r.exit_code == 2 and r.output.count("\n") == 1 and message in r.output
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "reduce, store",
    [
        (["argmax:collective,bandwidth", "max:ratio"], None),
        (["mean:bandwidth,collective"], None),
        # review: each share's float16 check refused its mean's cells another process holds (0: "falls below")
        (["mean:bandwidth,collective"], "float16"),
    ],
)
def test_a_reduction_shared_among_processes_is_one_processs_cube(tmp_path, reduce, store):
    # --reduce --distributed (#39): each process folds its blocks into accumulators of its own, kept in a shard;
    # process 0 merges them. Run here as the two processes would, one after the other (process 1 first, so
    # process 0 finds its shard), through the same functions a process runs after the rendezvous.
    from netsweep_jax.sweep.io.distributed import run_distributed, shard_path

    grid = make_grid(MODELS, reduce=reduce, store=store, **AXES)
    one, shared = tmp_path / "one.h5", tmp_path / "shared.h5"
    run_grid(grid, one, command="test", block_configs=5)
    mine = run_distributed(grid, shared, 1, 2, command="test", block_configs=5)
    assert mine["out"] == str(shard_path(shared, 1, 2)) and not shared.exists()
    merged = run_distributed(grid, shared, 0, 2, command="test", block_configs=5)
    assert merged["stitched"] and merged["configs"] + mine["configs"] == grid.size
    a, b = (xr.open_dataset(p, engine="h5netcdf").load() for p in (one, shared))
    assert set(a.data_vars) == set(b.data_vars) and b.attrs["processes"] == 2
    for name in a.data_vars:
        if "mean" in reduce[0]:  # float64 sums added in another order (float16: to its 3 digits)
            np.testing.assert_allclose(a[name].values, b[name].values, rtol=1e-3 if store else 1e-6)
        else:  # the extreme, and a tie's lower position, whatever process found it
            np.testing.assert_array_equal(a[name].values, b[name].values)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one.h5", "shared.h5"]  # no shard left behind


def test_a_stopped_processs_share_of_a_reduction_resumes_from_its_checkpoint(tmp_path, monkeypatch):
    # A share was computed whole and --resume refused (#39): a process stopped after two blocks keeps its share's
    # checkpoint; rerun with --resume, it computes the rest, and process 0 (which had not started) its share whole.
    from netsweep_jax.sweep.core import interrupts
    from netsweep_jax.sweep.io import cube
    from netsweep_jax.sweep.io.distributed import run_distributed, shard_path
    from netsweep_jax.sweep.io.paths import kept_partial, partial_path

    grid = make_grid(MODELS, reduce=["argmax:collective,bandwidth", "max:ratio"], **AXES)
    one, shared = tmp_path / "one.h5", tmp_path / "shared.h5"
    run_grid(grid, one, command="test", block_configs=5)
    calls = iter(range(1_000_000))
    with monkeypatch.context() as m:  # stopped at the boundary after its second block, as a signal stops it
        m.setattr(interrupts, "raise_if_requested", lambda: next(calls) == 1 and _raise(KeyboardInterrupt))
        with pytest.raises(KeyboardInterrupt):
            run_distributed(grid, shared, 1, 2, command="test", block_configs=5)
    kept = partial_path(shard_path(shared, 1, 2))
    assert kept.exists() and not shard_path(shared, 1, 2).exists()
    # Without --resume the checkpoint is refused, not deleted (the work --resume finishes); both at once, refused.
    with pytest.raises(InputError, match="an interrupted run left .*shard1of2.h5.partial; pass --resume"):
        run_distributed(grid, shared, 1, 2, command="test", block_configs=5)
    with pytest.raises(InputError, match="and --force cannot go together"):
        run_distributed(grid, shared, 1, 2, command="test", block_configs=5, resume=True, force=True)
    # resumed with no --block-configs: the checkpoint's (the machine's default would cut other blocks)
    mine = run_distributed(grid, shared, 1, 2, command="test", block_configs=None, resume=True)
    assert mine["resumed_blocks"] == 2 and 0 < mine["computed"] < mine["configs"] and not kept.exists()
    # A merge whose cube the disk refuses keeps every shard, for --resume (they were removed first).
    with monkeypatch.context() as m:
        m.setattr(cube, "write_dataset", lambda *a, **k: _raise(OSError))
        with pytest.raises(OSError) as failed:
            run_distributed(grid, shared, 0, 2, command="test", block_configs=5, resume=True)
    # said as work kept for --resume (the command said "nothing was kept")
    assert kept_partial(failed.value) == shard_path(shared, 0, 2)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "one.h5",
        "shared.shard0of2.h5",
        "shared.shard1of2.h5",
    ]
    merged = run_distributed(grid, shared, 0, 2, command="test", block_configs=5, resume=True)
    assert merged["stitched"] and merged["computed"] == 0
    a, b = (xr.open_dataset(p, engine="h5netcdf").load() for p in (one, shared))
    for name in a.data_vars:
        np.testing.assert_array_equal(a[name].values, b[name].values)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one.h5", "shared.h5"]
    with pytest.raises(InputError, match="shared.h5 exists: the shares were merged"):
        run_distributed(grid, shared, 1, 2, command="test", block_configs=5, resume=True)
    with pytest.raises(InputError, match="finds nothing to resume: .*nowhere is not a folder"):
        run_distributed(
            grid, tmp_path / "nowhere" / "o.h5", 1, 2, command="test", block_configs=5, resume=True
        )


def _raise(error: type[BaseException]) -> None:
    raise error


@pytest.mark.parametrize("kind", ["max", "min"])
def test_accumulators_merged_from_shares_equal_one_fold_in_order_nans_and_ties_included(kind):
    # Blocks folded in order by one process, or by two processes (blocks alternating) whose accumulators are then
    # merged, give the same cells: the extreme, a tie's lower position, and among NaNs (a cell where no layout
    # can exist) the lower position too; a cell one process never saw takes the other's.
    from netsweep_jax.sweep.engine.reductions import Accumulator

    rng = np.random.default_rng(7)
    blocks = []
    for position in range(12):
        value = rng.choice([1.0, 2.0, 3.0, np.nan], size=(5, 4))  # ties and NaNs in plenty
        value[0] = np.nan  # a cell where nothing exists in any block
        blocks.append((value, np.full((5, 4), position), {"tp": np.full((5, 4), position % 4)}))
    one, shares = Accumulator((5, 4), kind, ["tp"]), [Accumulator((5, 4), kind, ["tp"]) for _ in range(2)]
    for i, (value, position, labels) in enumerate(blocks):
        one.combine((Ellipsis,), value, position, labels)
        shares[i % 2].combine((Ellipsis,), value, position, labels)
    merged = Accumulator((5, 4), kind, ["tp"])
    for share in reversed(shares):  # the order of the merge does not matter either
        merged.merge(share)
    np.testing.assert_array_equal(merged.value, one.value)
    np.testing.assert_array_equal(merged.position, one.position)
    np.testing.assert_array_equal(merged.index["tp"], one.index["tp"])
    assert np.isnan(one.value[0]).all() and (one.position[0] == 0).all()  # the first block's, as a tie


def test_grid_reduce_distributed_writes_one_machines_cube(tmp_path, monkeypatch):
    # The command, once refused: each process's share through the CLI, process 0 merging (shares_in_turn).
    one, two = tmp_path / "one.h5", tmp_path / "two.h5"
    said = [a for a in REDUCED_GRID if a != "-q"]  # each process's summary line
    assert invoke("grid", *said, "--out", one).exit_code == 0
    out0, out1 = shares_in_turn(monkeypatch, tmp_path, *said, "--out", two)
    assert "process 1 of 2" in out1 and "two.shard1of2.h5" in out1
    a, b = (xr.open_dataset(p, engine="h5netcdf").load() for p in (one, two))
    for name in a.data_vars:
        np.testing.assert_array_equal(a[name].values, b[name].values)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one.h5", "two.h5"]


def test_a_shares_outputs_are_claimed_as_a_sweeps_before_any_work(tmp_path):
    # run_shared's claim (every shared job: a plan's and a reduction's): an earlier run's shard of this process is
    # removed, so that process 0 never merges a stale one; a file there that is not netsweep's is refused and
    # kept; a cube at OUT without --force is refused on every process.
    from netsweep_jax.sweep.io.distributed import _claim_share_outputs, shard_path

    out = tmp_path / "o.h5"
    stale = shard_path(out, 1, 2)
    stale.write_bytes(b"")  # what a run stopped before writing leaves: netsweep's, removed
    _claim_share_outputs(out, 1, 2, force=False, default_out=False)
    assert not stale.exists()
    stale.write_text("the user's notes")
    with pytest.raises(InputError, match="not netsweep's"):
        _claim_share_outputs(out, 1, 2, force=True, default_out=False)
    assert stale.read_text() == "the user's notes"
    stale.unlink()
    out.write_text("a cube")
    for pid in (0, 1):
        with pytest.raises(InputError, match="exists"):
            _claim_share_outputs(out, pid, 2, force=False, default_out=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.h5"]


def test_a_reduced_grids_fingerprint_keeps_its_reduce_table():
    # The reduction's entry overwrote the reduce table's in the fingerprint, so --resume of a --reduce sweep took
    # a checkpoint made with another --reduce-cost table.
    import dataclasses

    from netsweep_jax.sweep.engine.grid import make_grid

    g = make_grid("resnet50", bandwidth="1..10", reduce="max:bandwidth")
    table = tuple(np.asarray(t) for t in g.reduce_table)
    other = dataclasses.replace(g, reduce_table=(table[0], table[1] * 2))
    assert other.fingerprint() != g.fingerprint()
    assert dataclasses.replace(g, reduction=None).fingerprint() != g.fingerprint()


def test_a_layout_reduction_says_where_no_layout_can_exist_and_keeps_status_a_code(tmp_path):
    # 63 GPUs: neither TP 3 (32 heads) nor TP 8 divides; 64: TP 8 can exist. The extreme's label named the
    # first layout of a cell with none, and status was reduced as a number (its max over tp read 1 or 2).
    out = tmp_path / "r.h5"
    args = ["--model", "llama3-8b", "--gpus", "63,64", "--global-batch", "192", "--tp", "3,8"]
    r = invoke(
        "grid", *args, "--reduce", "argmax:tp", "--vars", "tokens_per_s,status,fits", "--out", out, "-q"
    )
    assert r.exit_code == 0, r.output
    with h5py.File(out) as f:
        speed, tp, status = (
            f[name][...].ravel() for name in ("tokens_per_s", "tokens_per_s_argmax_tp", "status")
        )
        assert "status_argmax_tp" not in f and "fits_argmax_tp" not in f and f["fits"][...].ravel()[1] == 1
        # a code, as a sweep's: int32 with its rules (it was float32 without them, and show printed 1)
        assert f["status"].dtype == np.int32 and "1: gpus not divisible" in f["status"].attrs["rules"]
    show = invoke("show", out).output
    assert "status                 can exist (1), gpus not divisible by tp x pp x cp (1)" in show, show
    assert np.isnan(speed[0]) and np.isnan(tp[0]) and status[0] == 1  # the lowest rule broken: 63 % tp
    assert speed[1] > 0 and tp[1] == 8 and status[1] == 0
    assert kind_of("status", "mean") == "max" and kind_of("fits", "min") == "max"
    # The API reduces as the CLI does (evaluate_layouts refused vars, store and reduce as unknown keywords).
    api = sweep.evaluate_layouts(
        "llama3-8b",
        gpus=[63, 64],
        global_batch=192,
        tp=[3, 8],
        reduce="argmax:tp",
        vars="tokens_per_s,status",
    )
    np.testing.assert_array_equal(api["tokens_per_s_argmax_tp"].values.ravel(), tp)
    np.testing.assert_array_equal(api["status"].values.ravel(), status)
    # An extreme is over the layouts that run (a hunt: argmax named a faster layout out of memory): on 64 GPUs
    # TP 1 is faster but does not fit, TP 8 fits; the max of memory too is the largest that fits; a mean is
    # over every layout.
    every = sweep.evaluate_layouts(
        "llama3-8b", gpus=64, global_batch=192, tp=[1, 8], vars="tokens_per_s,memory_gb,fits"
    )
    speed, memory, fits = (every[name].values.ravel() for name in ("tokens_per_s", "memory_gb", "fits"))
    assert fits.tolist() == [0, 1] and speed[0] > speed[1]
    best = sweep.evaluate_layouts("llama3-8b", gpus=64, global_batch=192, tp=[1, 8], reduce="argmax:tp",
                                  vars="tokens_per_s,memory_gb,fits")  # fmt: skip
    assert best["tokens_per_s_argmax_tp"].item() == 8 and best["tokens_per_s"].item() == speed[1]
    assert best["memory_gb"].item() == memory[1] and best["fits"].item() == 1
    mean = sweep.evaluate_layouts("llama3-8b", gpus=64, global_batch=192, tp=[1, 8], reduce="mean:tp",
                                  vars="tokens_per_s")  # fmt: skip
    assert mean["tokens_per_s"].item() == pytest.approx(speed.mean(), rel=1e-6)


def test_a_checkpoint_the_file_system_refuses_leaves_nothing_and_is_one_line(tmp_path, monkeypatch):
    # Under a file-size limit the first checkpoint failed: an empty OUT.partial was left (which the next run
    # refused, and --resume called empty), the error said blocks were kept, over two lines (HDF5's text).
    from netsweep_jax.sweep.io import checkpoints

    def refuse(*args, **kwargs):
        raise OSError(27, "Unable to extend file properly\n, filename = 'x'")

    monkeypatch.setattr(checkpoints, "write", refuse)
    out = tmp_path / "r.h5"
    r = invoke("grid", *REDUCED_GRID, "--out", out)
    assert r.exit_code == 1 and len(r.output.strip().splitlines()) == 1, r.output
    assert "Unable to extend file properly , filename" in r.output and "kept" not in r.output
    assert list(tmp_path.iterdir()) == []


def test_a_reduced_result_a_float16_store_cannot_hold_is_refused_and_nothing_kept(tmp_path):
    # A hunt: --store float16 --reduce wrote inf (7 of 8 cells) with exit 0, and show counted them as unset; the
    # cube written block by block refused the same grid by name.
    args = ["--model", "llama3-8b", "--gpus", "64", "--global-batch", "192", "--tp", "1,8", "--pp", "1,2"]
    r = invoke("grid", *args, "--store", "float16", "--reduce", "argmax:tp,pp", "--out", tmp_path / "o.h5")
    assert r.exit_code == 2 and "float16: tokens_per_s exceeds 65504" in r.output, r.output
    assert list(tmp_path.iterdir()) == []  # no cube, no checkpoint
    kept = sweep.evaluate_layouts("llama3-8b", gpus=64, global_batch=192, tp=[1, 8], pp=[1, 2],
                                  reduce="argmax:tp,pp", vars="iteration_time", store="float16")  # fmt: skip
    assert kept.iteration_time.dtype == np.float16 and np.isfinite(kept.iteration_time.values).all()


def test_select_on_a_reduced_dim_says_what_reduced_it_and_a_dp_cubes_gpus_reads_as_derived(tmp_path):
    # A hunt: "--tp 8: this cube has no tp dim; its dims: ..." on a cube --reduce argmax:tp,pp made; a --dp
    # cube's gpus showed [0] with nothing saying what the 0 is.
    out = tmp_path / "am.h5"
    args = ["--model", "llama3-70b", "--global-batch", "128", "--tp", "1,2", "--pp", "1,2", "-q"]
    assert invoke("grid", *args, "--gpus", "64", "--reduce", "argmax:tp,pp", "--out", out).exit_code == 0
    r = invoke("select", out, "--tp", "8")
    assert (
        "(--reduce argmax:tp,pp reduced it): the tp of each extreme is each variable's, as bubble_argmax_tp"
        in (r.output)
    )
    assert invoke("grid", *args, "--dp", "4", "--out", tmp_path / "dp.h5").exit_code == 0
    assert "[0 = tp pp cp dp (--dp given)]" in invoke("show", tmp_path / "dp.h5").output


def test_a_cube_reduced_over_every_dim_is_one_row(tmp_path):
    # A hunt: select printed a traceback (pandas refuses a 0-d Dataset), plot named no dims.
    from netsweep_jax.sweep.core.schema import DIMS

    out = tmp_path / "all.h5"
    r = invoke("grid", "-q", "--model", "resnet50", "--bw", "10,100", "--reduce", f"max:{','.join(DIMS)}",
               "--out", out)  # fmt: skip
    assert r.exit_code == 0, r.output
    best = float(sweep.evaluate("resnet50", bandwidth=[10, 100]).scaling_factor.max())
    r = invoke("select", out, "--csv")
    assert r.exit_code == 0 and r.output.splitlines()[0].startswith("scaling_factor,"), r.output
    assert float(r.output.splitlines()[1].split(",")[0]) == pytest.approx(best, rel=1e-6)
    r = invoke("select", out)
    assert r.exit_code == 0 and len(r.output.strip().splitlines()) == 2, r.output
    r = invoke("plot", out, "--x", "bandwidth", "--out", tmp_path / "p.png")
    assert (
        r.exit_code == 2 and "dims: none (a cube reduced over every dim: sweep select prints it)" in r.output
    )


def test_a_reduced_result_too_large_to_keep_in_memory_is_refused_before_any_work(tmp_path):
    # a hunt: its accumulators were allocated as it started, a 4.37 TiB allocation's traceback
    out = tmp_path / "z.h5"
    r = invoke("grid", "--model", "resnet50,vgg16", "--bw", "1..400@20000", "--ratio", "1..1000@3000log",
               "--reduce", "max:model", "--out", out)  # fmt: skip
    assert r.exit_code == 2 and r.output.strip().splitlines()[-1] == (
        "error: 60,000,000 configurations (--bw 20,000 x --ratio 3,000) are too many to keep in memory (at most "
        "50,000,000); give fewer values, reduce more dims (--reduce max:a,b), or write the cube without --reduce"
    ), r.output
    assert list(tmp_path.iterdir()) == []
    # and in each process of --distributed, which had accumulated it (a review)
    from netsweep_jax.sweep.io.distributed import run_distributed

    grid = make_grid(
        ["resnet50", "vgg16"], bandwidth="1..400@20000", ratio="1..1000@3000log", reduce="max:model"
    )
    with pytest.raises(InputError, match="60,000,000 configurations .* too many to keep in memory"):
        run_distributed(grid, out, 0, 2, command="test", block_configs=None)
    assert list(tmp_path.iterdir()) == []


def test_the_apis_reduced_sweep_too_large_to_keep_is_refused_before_any_work():
    # A read-through: the API's reduced path reached the accumulators' allocation that the CLI refuses first.
    import netsweep_jax.sweep as sweep
    from netsweep_jax.sweep.core.errors import InputError

    with pytest.raises(InputError, match="too many to keep in memory"):
        sweep.evaluate("resnet50", bandwidth="1..1000000:1", latency="0..99:1", reduce="max:compressor")
