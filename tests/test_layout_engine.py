"""Layout sweeps run on the data-parallel family's engine: one block loop, dispatcher, cube writer and reader.

``sweep grid`` on a large model is cut into blocks by the same blocking, written block by block with
checksums, and so gets what a data-parallel sweep has: a SIGTERM keeps the finished blocks and ``--resume``
completes them into the cube one run writes, bit for bit; two processes over ``jax.distributed`` stitch the
same cube as one; ``--store float16``, ``--vars`` and ``--reduce`` work on it. The grid is small and cut
into blocks of the shape the other layout tests compile (8 x 8,192 lanes), so it adds no compile of the
layout kernel but the reduced one.
"""

import re
import signal

import h5py
import numpy as np
import pytest

from helpers import PLAN, blocks_done, invoke, invoke_interrupted_after, shares_in_turn
from netsweep_jax import sweep
from netsweep_jax.sweep.core.layout_axes import VARIABLES
from netsweep_jax.sweep.engine.blocks import Blocking
from netsweep_jax.sweep.engine.layouts import evaluate_layouts_arrays, make_layout_grid
from netsweep_jax.sweep.io.reader import open_cube

# 24 layouts x 6 settings, one setting per block: 6 blocks.
LAYOUT_GRID = [
    "--model", "llama3-8b", "--gpus", "64", "--global-batch", "256", "--tp", "1,2,4,8", "--pp", "1,2,4",
    "--micro-batch", "1,2", "--bw", "100,200,400", "--util", "0.5,1",
]  # fmt: skip
BLOCKS = ["--block-configs", "8192"]


def read_all(path):
    with h5py.File(path) as f:
        return {name: f[name][...] for name in VARIABLES if name in f}


def assert_same(got, ref):
    assert set(got) == set(ref)
    for name in ref:
        np.testing.assert_array_equal(got[name], ref[name], err_msg=name)


@pytest.fixture(scope="module")
def one_path(tmp_path_factory):
    out = tmp_path_factory.mktemp("one") / "one.h5"
    r = invoke("grid", *LAYOUT_GRID, *BLOCKS, "--out", out)
    assert r.exit_code == 0, r.output
    assert "144 configurations" in r.output and "144 can exist, 102 fit in memory" in r.output
    return out


@pytest.fixture(scope="module")
def one_run(one_path):
    return read_all(one_path)


def test_the_cube_is_the_in_memory_grid_block_by_block(one_path, one_run):
    grid = make_layout_grid(
        "llama3-8b", gpus=64, global_batch=256, tp="1,2,4,8", pp="1,2,4", micro_batch="1,2", bandwidth="100,200,400",
        utilization="0.5,1",
    )  # fmt: skip
    blocking = Blocking(grid.sizes, 8192, grid.family)
    assert len(blocking.blocks()) == 6 and (blocking.kb_width, blocking.ci_width) == (8, 8192)
    assert_same(one_run, evaluate_layouts_arrays(grid))  # one block of all of it, the same numbers
    with h5py.File(one_path, "r") as f:
        assert f.attrs["family"] == "layouts" and f["status"].dtype == np.int32
        assert "0: ok" in f["status"].attrs["rules"] and "llama3-8b" in f.attrs["models"]


def test_a_block_narrower_than_the_shared_shape_is_not_padded_to_its_lanes():
    # Blocks of 8,192 layouts or more pad to at least 8 x 8,192 lanes (the shape small sweeps share); a smaller
    # budget gives a narrower block, which has no shape to share: it was padded to 65,536 lanes all the same
    # (1,024 x 64 for one layout in blocks of 64: 65,536 configurations computed for each one kept).
    grid = make_layout_grid("llama3-8b", gpus=8, global_batch=8, tp="1", pp="1", micro_batch="1")
    assert grid.size == 1
    blockings = {budget: Blocking(grid.sizes, budget, grid.family) for budget in (64, 1024, 8192, 2**18)}
    assert {budget: (p.kb_width, p.ci_width) for budget, p in blockings.items()} == {
        64: (1, 64),
        1024: (1, 1024),
        8192: (8, 8192),  # the shared shape, 8 x 8,192 configurations for one
        2**18: (8, 8192),
    }


def test_sigterm_then_resume_gives_the_cube_of_one_run(tmp_path, monkeypatch, one_run):
    out, partial = tmp_path / "r.h5", tmp_path / "r.h5.partial"
    r = invoke_interrupted_after(
        monkeypatch, 2, signal.SIGTERM, "grid", *LAYOUT_GRID, *BLOCKS, "-q", "--out", out
    )
    assert r.exit_code == 143, r.output
    assert r.output.strip().splitlines()[-1] == (
        f"error: interrupted; finished blocks are kept in {partial}. Finish with the same command plus --resume."
    )
    assert blocks_done(partial) == 2 and not out.exists()
    # Its NaN were printed as results, in silence.
    r = invoke("select", partial, "--vars", "tokens_per_s")
    assert r.exit_code == 0 and "4 of the 6 blocks this reads are not computed yet" in r.output, r.output
    # ... and the API's open_cube says it as select does (a hunt: 89% NaN came back without a word).
    with pytest.warns(UserWarning, match="4 of the 6 blocks this reads are not computed yet"):
        sweep.open_cube(partial).close()
    r = invoke("grid", *LAYOUT_GRID, "--out", out, "--resume")  # the block size is the partial file's
    assert r.exit_code == 0 and "2 blocks resumed" in r.output, r.output
    assert re.search(r"configurations, [\d,]+ computed in", r.output), r.output  # the rate's, not the cube's
    assert_same(read_all(out), one_run)
    assert invoke("show", out, "--verify").output.splitlines()[-1].strip() == (
        "verify: 6 of 6 blocks finished, all intact"
    )


def test_two_processes_stitch_the_cube_of_one(tmp_path, monkeypatch, one_run):
    out = tmp_path / "d.h5"
    shares_in_turn(monkeypatch, tmp_path, *LAYOUT_GRID, *BLOCKS, "--out", out)
    assert_same(read_all(out), one_run)
    with h5py.File(out) as f:
        assert f.attrs["processes"] == 2
    assert sorted(x.name for x in tmp_path.iterdir() if x.suffix != ".sock") == ["d.h5"]


def test_store_float16_and_vars(tmp_path, one_run):
    out = tmp_path / "h.h5"
    r = invoke("grid", *LAYOUT_GRID, *BLOCKS, "--out", out, "--store", "float16")
    assert r.exit_code == 2 and "--store float16: tokens_per_s exceeds 65504 (1/s)" in r.output
    assert not list(tmp_path.iterdir())  # refused: nothing written
    kept = "iteration_time,memory_gb,status"
    r = invoke("grid", *LAYOUT_GRID, *BLOCKS, "--out", out, "--store", "float16", "--vars", kept)
    assert r.exit_code == 0 and "144 can exist" in r.output and "fit in memory" not in r.output, r.output
    got = read_all(out)
    assert (
        list(got) == ["iteration_time", "memory_gb", "status"] and got["iteration_time"].dtype == np.float16
    )
    np.testing.assert_array_equal(got["status"], one_run["status"])
    np.testing.assert_array_equal(got["iteration_time"], one_run["iteration_time"].astype(np.float16))


def test_reduce_keeps_the_best_layout_of_each_setting(tmp_path, one_run):
    out = tmp_path / "m.h5"
    r = invoke("grid", *LAYOUT_GRID, *BLOCKS, "--out", out, "--reduce", "argmax:tp,pp,micro_batch", "--vars",
               "tokens_per_s")  # fmt: skip
    assert r.exit_code == 0, r.output
    with h5py.File(out) as f:
        best, tp = f["tokens_per_s"][...], f["tokens_per_s_argmax_tp"][...]
    # settings x layouts (bw, util; tp, pp, mb), the extremes over the layouts that fit in memory, as plan's
    layouts = np.where(one_run["fits"] == 1, one_run["tokens_per_s"], -np.inf).reshape(2 * 3, 4 * 3 * 2)
    np.testing.assert_array_equal(best.ravel(), layouts.max(axis=1))
    tp_of = np.repeat([1, 2, 4, 8], 6)
    np.testing.assert_array_equal(tp.ravel(), tp_of[layouts.argmax(axis=1)])


@pytest.fixture(scope="module")
def one_plan(tmp_path_factory):
    out = tmp_path_factory.mktemp("plan") / "one.h5"
    assert invoke(*PLAN, "--out", out).exit_code == 0
    with open_cube(out) as ds:
        return ds.load()


def assert_same_plan(path, one_plan):
    with open_cube(path) as ds:
        for name in one_plan.data_vars:
            np.testing.assert_array_equal(ds[name].values, one_plan[name].values, err_msg=name)
        return dict(ds.attrs)


def test_plan_stopped_by_sigterm_then_resumed_gives_the_plan_of_one_run(tmp_path, monkeypatch, one_plan):
    from netsweep_jax.sweep.core import interrupts
    from netsweep_jax.sweep.io.plan_checkpoint import PlanCheckpoint

    two = tmp_path / "two.h5"
    kept, calls = PlanCheckpoint.keep, []

    def keep_then_stop(self, index, done, state):  # SIGTERM as the 3rd block is kept (mid second search)
        kept(self, index, done, state)
        calls.append(index)
        if len(calls) == 3:
            interrupts.request(signal.SIGTERM)

    with monkeypatch.context() as m:
        m.setattr(PlanCheckpoint, "keep", keep_then_stop)
        r = invoke(*PLAN, "--out", two)
    partial = tmp_path / "two.h5.partial"
    assert r.exit_code == 143 and f"finished blocks are kept in {partial}" in r.output, r.output
    assert partial.exists() and not two.exists() and calls == [0, 0, 1]
    r = invoke(*PLAN, "--out", two)  # a partial file is never started over without --force
    assert r.exit_code == 2 and "pass --resume to finish it or --force" in r.output
    r = invoke(*PLAN, "--out", two, "--resume")
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["two.h5"]
    assert_same_plan(two, one_plan)


def test_a_plan_over_two_processes_is_the_plan_of_one(tmp_path, monkeypatch, one_plan):
    two = tmp_path / "two.h5"
    out0, out1 = shares_in_turn(monkeypatch, tmp_path, *PLAN[1:], "--out", two, command="plan")
    assert "network-bound" in out0 and "process 1 of 2: searched its share of the plan" in out1
    assert assert_same_plan(two, one_plan)["processes"] == 2
    assert sorted(x.name for x in tmp_path.iterdir() if x.suffix != ".sock") == ["two.h5"]


def test_a_plan_share_stopped_then_resumed_gives_the_plan_of_one(tmp_path, monkeypatch, one_plan):
    # --resume of a distributed plan was refused, its shares searched again (#39). Process 1 stops as its second
    # block is kept (its share of the second search), its checkpoint kept; rerun with --resume, it goes on from
    # there; process 0 with --resume (nothing of its share kept: searched whole) merges.
    from netsweep_jax.sweep.core import interrupts
    from netsweep_jax.sweep.io import distributed
    from netsweep_jax.sweep.io.plan_checkpoint import PlanCheckpoint

    two = tmp_path / "two.h5"
    kept, calls = PlanCheckpoint.keep, []

    def keep_then_stop(self, index, done, state):
        kept(self, index, done, state)
        calls.append((index, done))
        if len(calls) == 2:
            interrupts.request(signal.SIGTERM)

    def process(pid, *args):
        monkeypatch.setattr(distributed, "rendezvous", lambda *a, **k: (pid, 2))
        return invoke(*PLAN, "--out", two, "--distributed", "-q", *args)

    monkeypatch.setattr(PlanCheckpoint, "keep", keep_then_stop)
    r = process(1)
    assert (
        r.exit_code == 143
        and "two.shard1of2.h5.partial. Finish with the same command plus --resume" in r.output
    )
    assert calls == [(0, 1), (1, 1)]  # one block of each search is process 1's
    # Process 0 gives up waiting for process 1's shard: it says what to do, and keeps its own (it removed it).
    monkeypatch.setattr(distributed, "POLL_S", 0.0)
    r = process(0, "--stitch-timeout", "1e-9")
    assert r.exit_code == 3 and "rerun every process with --resume to finish" in r.output, r.output
    assert sorted(x.name for x in tmp_path.iterdir()) == ["two.shard0of2.h5", "two.shard1of2.h5.partial"]
    assert process(1, "--resume").exit_code == 0
    # the searches it had finished are not redone (process 0's, before: its blocks 0 of each)
    assert calls[-3:] == [(2, 1), (3, 1), (4, 1)] and calls.count((1, 1)) == 2
    assert process(0, "--resume").exit_code == 0  # its shard whole: merged, nothing searched
    assert assert_same_plan(two, one_plan)["processes"] == 2
    assert sorted(x.name for x in tmp_path.iterdir()) == ["two.h5"]


def test_a_plan_over_a_list_of_fabrics_stopped_then_resumed_keeps_what_it_finished(tmp_path, monkeypatch):
    # The list form (a plan per fabric or oversubscription) said only "interrupted", told to pass --resume,
    # then refused --resume (a hunt). Stopped in the second fabric's search: the first's cube is kept, the
    # second's checkpoint too, and --resume finishes the second without searching the first again.
    from netsweep_jax.sweep.core import interrupts
    from netsweep_jax.sweep.io.plan_checkpoint import PlanCheckpoint

    plans = ["plan", "--model", "llama3-8b", "--gpus", "8", "--global-batch", "8", "--fabric",
             "dgx-h100-superpod,dgx-h100-rail-only", "--keep", "2", "-q"]  # fmt: skip
    kept, calls = PlanCheckpoint.keep, []

    def keep_then_stop(self, index, done, state):  # SIGINT once the second plan has kept a block
        kept(self, index, done, state)
        calls.append(self.path.name)
        if "rail-only" in self.path.name:
            interrupts.request(signal.SIGINT)

    monkeypatch.chdir(tmp_path)
    with monkeypatch.context() as m:
        m.setattr(PlanCheckpoint, "keep", keep_then_stop)
        r = invoke(*plans)  # no --out: the hint names the one the list's cubes are named from
    first, second = (
        next(tmp_path.glob(f"results/*-fabric{f}.h5*")) for f in ("dgx-h100-superpod", "dgx-h100-rail-only")
    )
    base = first.with_name(first.name.replace("-fabricdgx-h100-superpod", ""))
    assert r.exit_code == 130 and r.output.strip().endswith(
        f"finished blocks are kept in {second.relative_to(tmp_path)}. Finish with the same command plus "
        f"--resume --out {base.relative_to(tmp_path)}."
    ), r.output
    assert first.suffix == ".h5" and second.suffix == ".partial"
    written = first.stat().st_mtime_ns
    r = invoke(*plans, "--out", base.relative_to(tmp_path), "--resume")
    assert r.exit_code == 0, r.output
    assert f"kept {first.relative_to(tmp_path)}" in r.output and "wrote " in r.output, r.output
    assert first.stat().st_mtime_ns == written  # the first fabric's plan read, not searched or written again
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == sorted(
        [first.name, second.name.removesuffix(".partial")]
    )
    # A finished cube of another plan is not taken for this one's.
    second_cube = tmp_path / "results" / second.name.removesuffix(".partial")
    second_cube.rename(second_cube.with_suffix(".h5.partial"))
    r = invoke(*[a if a != "2" else "3" for a in plans], "--out", base.relative_to(tmp_path), "--resume")
    assert r.exit_code == 2 and "holds another plan than this command's (its --keep differs)" in r.output
    # nor one of other GPUs: its attributes alone had taken a plan of 64 GPUs for one of 128 (a review)
    r = invoke(*[a if a != "8" else "16" for a in plans], "--out", base.relative_to(tmp_path), "--resume")
    assert r.exit_code == 2 and "holds another plan than this command's (its --gpus differs)" in r.output
    r = invoke(
        *plans, "--out", base.relative_to(tmp_path), "--resume", "--x64"
    )  # nor one of float32 (a review)
    assert r.exit_code == 2 and "holds another plan than this command's (its dtype differs)" in r.output


def test_a_fabric_with_no_feasible_layout_in_a_list_is_said_and_writes_nothing_for_it(tmp_path, monkeypatch):
    # A hunt: --fabric A,B with no layout fitting on B ended with exit 2 after A's cube was written, which then
    # refused the same command run again. Now B is said and gets no cube; where no fabric has one, nothing is
    # written and the command is refused as one plan's is. (Which fabric fits nothing is made here: the rule
    # for one plan is the single plan's, tested where its layouts are.)
    from netsweep_jax.sweep.analysis import layout_jobs
    from netsweep_jax.sweep.core.errors import Infeasible

    write_plan = layout_jobs.write_plan

    def rail_only_fits_nothing(grid, *args, **kwargs):  # as its search would find, without searching
        if grid.rail_only:
            raise Infeasible("no feasible layout: made so here")
        return write_plan(grid, *args, **kwargs)

    monkeypatch.setattr(layout_jobs, "write_plan", rail_only_fits_nothing)
    plans = ["plan", "--model", "llama3-8b", "--gpus", "8", "--global-batch", "8", "--keep", "2", "-q",
             "--out", tmp_path / "p.h5"]  # fmt: skip
    stale = tmp_path / "p-fabricdgx-h100-rail-only.h5"
    for order in ("dgx-h100-rail-only,dgx-h100-superpod", "dgx-h100-superpod,dgx-h100-rail-only"):
        # an earlier run's cube of its name, which --force allows replacing, is not left to pass for this
        # plan's (a review: a later --resume took it for one), nor a checkpoint of it
        stale.write_bytes(b"an earlier run's")
        stale.with_suffix(".h5.partial").write_bytes(b"an earlier run's")
        r = invoke(*plans, "--fabric", order, "--force")
        assert r.exit_code == 0, r.output
        said = r.output.splitlines()
        rail = next(i for i, line in enumerate(said) if line.startswith("--fabric dgx-h100-rail-only"))
        assert said[rail + 1 : rail + 3] == [
            "  no feasible layout: made so here",
            f"no cube written for it (the earlier {stale} removed, as --force allows)",
        ]
        # said in the list's order, once the other plan is written
        assert (said.index("--fabric dgx-h100-superpod:") < rail) == order.startswith("dgx-h100-superpod")
        assert sorted(p.name for p in tmp_path.iterdir()) == ["p-fabricdgx-h100-superpod.h5"]
    assert said[-1].startswith("no cube written for it")
    # refused, as one plan is: nothing written, nor removed, --force or not (a review: its cubes were removed)
    stale.write_bytes(b"an earlier run's")
    r = invoke(*plans, "--fabric", "dgx-h100-rail-only,dgx-h100-rail-only-sharp", "--force")
    assert r.exit_code == 2 and r.output.strip().endswith(
        "error: --fabric dgx-h100-rail-only (rail-only: no spine): no feasible layout: made so here; no plan of "
        "the list has one"
    ), r.output
    assert sorted(p.name for p in tmp_path.iterdir()) == [stale.name, "p-fabricdgx-h100-superpod.h5"]


def test_a_forced_plan_list_stopped_says_which_old_cubes_to_move_before_resuming(tmp_path, monkeypatch):
    # A review: the hint checked the list's --out, which no plan of a list writes, so it never said to move the
    # old cube a resumed run then refused ("holds another plan").
    from netsweep_jax.sweep.core import interrupts
    from netsweep_jax.sweep.io.plan_checkpoint import PlanCheckpoint

    plans = ["plan", "--model", "llama3-8b", "--gpus", "8", "--global-batch", "8", "--keep", "2", "-q",
             "--fabric", "dgx-h100-superpod,dgx-h100-rail-only", "--out", tmp_path / "p.h5"]  # fmt: skip
    assert invoke(*plans).exit_code == 0
    first, second = (tmp_path / f"p-fabric{f}.h5" for f in ("dgx-h100-superpod", "dgx-h100-rail-only"))
    kept = PlanCheckpoint.keep

    def keep_then_stop(self, index, done, state):  # SIGINT once the second plan has kept a block
        kept(self, index, done, state)
        if "rail-only" in self.path.name:
            interrupts.request(signal.SIGINT)

    with monkeypatch.context() as m:
        m.setattr(PlanCheckpoint, "keep", keep_then_stop)
        r = invoke(*[a if a != "2" else "3" for a in plans], "--force")
    assert r.exit_code == 130 and r.output.strip().endswith(
        f"Finish with {second} moved away (a resumed run never replaces a file), the same command with --resume "
        "in place of --force."
    ), r.output
    second.rename(tmp_path / "old.h5")
    r = invoke(*[a if a != "2" else "3" for a in plans], "--resume")
    assert r.exit_code == 0 and f"kept {first}" in r.output and f"wrote {second}" in r.output, r.output


def test_a_rail_only_fabric_in_a_list_is_planned_once_beside_the_spines_oversubscriptions(tmp_path):
    # A hunt: "a 4:1 spine or rail-only?" refused the whole list, rail-only having no spine to oversubscribe.
    # Alone it is still refused; in a list it is planned once, as built, and its heading says why.
    plans = ["plan", "--model", "llama3-8b", "--gpus", "8", "--global-batch", "8", "--keep", "2", "-q",
             "--oversubscription", "1,4", "--out", tmp_path / "p.h5"]  # fmt: skip
    r = invoke(*plans, "--fabric", "dgx-h100-superpod,dgx-h100-rail-only")
    assert r.exit_code == 0, r.output
    assert "--fabric dgx-h100-rail-only (rail-only: no spine):" in r.output
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "p-fabricdgx-h100-rail-only.h5",
        "p-fabricdgx-h100-superpod-oversubscription1.h5",
        "p-fabricdgx-h100-superpod-oversubscription4.h5",
    ]
    for alone in ("dgx-h100-rail-only", "dgx-h100-rail-only,dgx-h100-rail-only-sharp"):  # none has a spine
        r = invoke(*plans, "--fabric", alone)
        assert r.exit_code == 2 and "dgx-h100-rail-only is wired rail-only: it has no spine" in r.output


def test_a_network_cost_inside_nvlink_domains_says_why_where_the_layout_is_the_ideal_ones(tmp_path):
    # A hunt: one host under --collective nccl, its layout held, was "network-bound" at 58% with 0% on the NICs
    # and no line saying why: the cost is NCCL's pricing of NVLink against the ideal network's flat one.
    one = ["--tp", "8", "--pp", "1", "--cp", "1", "--zero", "0", "--micro-batch", "1", "--keep", "1"]
    r = invoke("plan", "--model", "llama3-8b", "--gpus", "8", "--global-batch", "8", "--collective", "nccl", *one,
               "--out", tmp_path / "p.h5")  # fmt: skip
    assert r.exit_code == 0, r.output
    cost = re.search(r"the network costs (\d+)% of the best step", r.output)
    why = re.search(r"why: (\d+)% of the step waits on the NICs; the rest is NCCL's latencies and NVLink "
                    r"efficiency, which the ideal network prices flat, and any bubble behind sends across hosts\n", r.output)  # fmt: skip
    assert cost and why and why[1] == "0" and int(cost[1]) >= 5, r.output
    # Flat: NVLink costs the same on the ideal network; a gap beyond the NICs there is the bubble's (a review:
    # it had been put down to traffic inside NVLink domains, where there was none)
    r = invoke("plan", "--model", "llama3-8b", "--gpu", "h200", "--gpus", "2", "--gpus-per-node", "1",
               "--global-batch", "4", "--tp", "1", "--pp", "2", "--cp", "1", "--zero", "0", "--micro-batch", "1",
               "--keep", "1", "--bw", "5", "--latency", "2000", "--schedule", "1f1b", "--recompute", "none",
               "--out", tmp_path / "f.h5")  # fmt: skip
    assert r.exit_code == 0 and "the network costs" in r.output and "why:" not in r.output, r.output


def test_oversubscriptions_that_read_alike_in_six_digits_name_their_plans_apart():
    # a review: --oversubscription 1,1.0000001 named both plans' cubes -oversubscription1, the second's writing
    # over the first's under --force; the assumed: line said them alike too ("1:1, 1:1")
    from netsweep_jax.sweep.core.wording import exact_text
    from netsweep_jax.sweep.model.fabrics import FABRICS

    assert [exact_text(v) for v in (1.0, 2.5, 1.0000001, 4)] == ["1", "2.5", "1.0000001", "4"]
    said = FABRICS["dgx-h100-superpod"].describe([1.0, 1.0000001])
    assert "spine 1:1, 1.0000001:1 (--oversubscription, a plan each" in said, said
