"""Reading a plan cube and a layout cube: select by rank and switch, plot any slice, say what 0 and a misfit mean."""

import h5py
import numpy as np
import pytest

from helpers import invoke

# The 12-layout Llama 3 70B plan of test_plan_messages on 64 GPUs, every layout kept: the ranks past the
# layouts that fit are empty.
PLAN = [
    "plan", "--model", "llama3-70b", "--gpus", "64", "--global-batch", "64", "--bw", "100,400", "--tp", "1,2",
    "--pp", "1", "--cp", "2", "--micro-batch", "1", "--zero", "3", "--keep", "12",
]  # fmt: skip


@pytest.fixture(scope="module")
def cube(tmp_path_factory):
    out = tmp_path_factory.mktemp("plan") / "p.h5"
    r = invoke(*PLAN, "--out", out)
    assert r.exit_code == 0, r.output
    return out


@pytest.mark.parametrize(
    "args",
    [
        ["--x", "bandwidth", "--y", "tokens_per_s", "--hue", "rank", "--sel", "switch=grad_reduce"],
        [
            "--kind",
            "heatmap",
            "--x",
            "bandwidth",
            "--y",
            "switch",
            "--var",
            "switch_change",
            "--sel",
            "rank=1",
        ],
        [
            "--kind",
            "heatmap",
            "--x",
            "bandwidth",
            "--y",
            "rank",
            "--var",
            "tokens_per_s",
            "--sel",
            "switch=tp_comm",
        ],
        ["--x", "bandwidth", "--hue", "rank"],  # no --y: a large model's cube draws tokens_per_s
    ],
)
def test_plot_a_plan_cube_by_rank_or_switch(cube, tmp_path, args):
    # Was "damaged (HDF5 cannot read it ...)": a --sel on a dim the variable does not have.
    r = invoke("plot", cube, *args, "--out", tmp_path / "f.png")
    assert r.exit_code == 0 and "damaged" not in r.output, r.output
    assert (tmp_path / "f.png").stat().st_size > 0


def test_plot_of_a_slice_with_no_layout_is_refused(cube, tmp_path):
    r = invoke(
        "plot",
        cube,
        "--x",
        "bandwidth",
        "--y",
        "tokens_per_s",
        "--sel",
        "rank=12",
        "--out",
        tmp_path / "f.png",
    )
    (line,) = r.output.strip().splitlines()
    assert r.exit_code == 2 and "holds no value of tokens_per_s" in line and not (tmp_path / "f.png").exists()


def test_a_sel_refused_names_sel(cube):
    # The value a --sel picks, refused, is named as typed (was "--rank 99", an option select does not have).
    r = invoke("select", cube, "--sel", "rank=99")
    assert r.exit_code == 2 and r.output.startswith("error: --sel rank=99: not in the cube"), r.output
    # An option's name for its dim: said which dim it stands for (was "no bw dim; its dims: ..., bandwidth").
    r = invoke("select", cube, "--sel", "bw=100")
    assert r.exit_code == 2 and "--bw selects its bandwidth dim (--sel bandwidth=VALUE)" in r.output, r.output


def test_plot_of_names_is_one_line(cube, tmp_path):
    # A plan's ideal layout is a name a setting, not a number: refused in one line, not a traceback.
    r = invoke("plot", cube, "--x", "bandwidth", "--y", "ideal_layout", "--out", tmp_path / "f.png")
    (line,) = r.output.strip().splitlines()
    assert r.exit_code == 2 and "'ideal_layout' holds names, not numbers" in line, r.output
    assert not (tmp_path / "f.png").exists()


def test_plot_title_names_the_model_and_legends_read_whole_numbers(cube):
    from netsweep_jax.sweep.analysis.plot import line_plot, selection_title
    from netsweep_jax.sweep.io.reader import open_cube

    ds = open_cube(cube)
    title = selection_title(ds, {"rank": 1})
    assert title.startswith("model = llama3-70b, gpu = h100, gpus = 64, global_batch = 64"), title
    assert title.endswith("rank = 1")
    # A cube of one layout names its degrees, the title broken into lines (a hunt: curves of TP 8 x PP 4 were
    # titled by the model alone)
    import xarray as xr

    from netsweep_jax.sweep.analysis.plot import _lines

    one = xr.Dataset(
        {"tokens_per_s": (("model", "tp", "pp", "bandwidth"), np.ones((1, 1, 1, 2)))},
        coords={"model": ["llama3-70b"], "tp": [8.0], "pp": [4.0], "bandwidth": [100.0, 400.0]},
        attrs={"family": "layouts"},
    )
    assert selection_title(one, {}) == "model = llama3-70b, tp = 8, pp = 4"
    long = ", ".join(f"dim{i} = {i}" for i in range(20))
    lines = _lines(long).splitlines()
    assert len(lines) > 1 and all(len(line) <= 72 for line in lines) and " ".join(lines) == long
    assert all(line.endswith(",") or line == lines[-1] for line in lines)  # between parts, never in one
    assert ds["bandwidth"].dtype.kind == "f"  # a layout cube's dims are floats: legends said bandwidth=100.0
    ax = line_plot(ds, "rank", var="tokens_per_s", hue="bandwidth", sel={})
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "bandwidth=100 Gbit/s",
        "bandwidth=400 Gbit/s",
    ]
    ds.close()


def test_select_picks_a_rank_and_a_switch_and_repeats_nothing(cube):
    r = invoke("select", cube, "--sel", "rank=1", "--sel", "switch=grad_reduce")
    assert r.exit_code == 0, r.output
    tables = r.stdout.strip().split("\n\n")
    assert max(len(line) for line in tables[0].splitlines()) <= 160  # 30 outputs a layout, in blocks
    assert tables[-1].split()[:3] == ["bandwidth", "switch", "switch_change"] and "tp_comm" not in tables[-1]
    verdicts = next(t for t in tables if "network_cost" in t.splitlines()[0]).splitlines()
    assert len(verdicts) == 1 + 2  # a line per setting, not one per setting and switch
    r = invoke("select", cube, "--sel", "rank=1", "--vars", "tokens_per_s,layout_tp,layout_dp")
    head = ["bandwidth", "rank", "tokens_per_s", "layout_tp", "layout_dp"]
    assert r.exit_code == 0 and r.stdout.split()[:5] == head, r.output
    assert r.stdout.splitlines()[1].split()[-2:] == ["1", "32"]  # whole numbers, not 1.0 (rc-ful at 100)
    # A plan's status reads as a grid cube's does (it printed 0 where a grid cube's printed ok).
    r = invoke("select", cube, "--sel", "rank=1", "--vars", "status")
    assert r.exit_code == 0 and r.stdout.splitlines()[1].split()[-1] == "ok", r.output
    r = invoke("select", cube, "--sel", "rank=13")
    assert r.exit_code == 2 and "13: not in the cube; it has 1, 2, 3" in r.output
    # one table of several: the refusal names the option (a hunt: "csv prints one table")
    r = invoke("select", cube, "--csv")
    assert r.exit_code == 2 and "error: --csv prints one table" in r.output, r.output
    # A rank with no layout printed "ok" ("can exist" in show), as a layout's does. Its status is -1 in the cube,
    # said in its rules (it held the search's empty slot's: 0, or a rule's code that plot drew as that rule).
    with h5py.File(cube) as f:
        status = f["status"][...]
        assert status.dtype == np.int32 and (status[..., 11] == -1).all() and (status[..., 0] == 0).all()
        assert "; -1: no layout at this rank" in f["status"].attrs["rules"]
    r = invoke("select", cube, "--sel", "rank=12", "--vars", "tokens_per_s,status")
    assert r.exit_code == 0 and [line.split() for line in r.stdout.splitlines()[1:]] == [
        ["100", "12", "NaN"],
        ["400", "12", "NaN"],
    ], r.output
    status = next(
        line for line in invoke("show", cube).output.splitlines() if line.strip().startswith("status")
    )
    assert "can exist (" in status and "no layout (" in status, status


def test_a_plan_cubes_layout_dp_is_the_layouts_dp(cube):
    # The plan's layouts derive dp from the GPUs (the grid's dp 0); the cube keeps it as the table prints it (was
    # 0, which select printed as dp 0): 64 GPUs over tp 1 or 2 x cp 2.
    r = invoke("show", cube)
    line = next(line for line in r.output.splitlines() if line.strip().startswith("layout_dp"))
    assert "16 / 16 / 32" in line and "0 =" not in line, line
    # A text variable's empty value is said (a feasible plan's infeasible printed as " (1)").
    line = next(line for line in r.output.splitlines() if line.strip().startswith("infeasible"))
    assert "(empty) (" in line, line


def test_layout_grid_csv_says_a_layout_does_not_fit(tmp_path):
    out = tmp_path / "g.h5"
    r = invoke(
        "grid", "--model", "llama3-70b", "--gpus", "8", "--global-batch", "8", "--tp", "4,8", "--pp", "1",
        "--cp", "1", "--micro-batch", "1", "--zero", "0", "--out", out,
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    rows = invoke("select", out, "--csv", "--vars", "fits,memory_free_gb,status").stdout.splitlines()
    head = rows[0].split(",")
    for row in rows[1:]:
        value = dict(zip(head, row.split(",")))
        assert float(value["fits"]) == 0 and float(value["memory_free_gb"]) < 0
        assert value["status"] == "does not fit in memory", row
    # Without fits among the variables printed: the same wording (was "ok" beside -100 GB free).
    rows = invoke("select", out, "--csv", "--vars", "status,memory_free_gb").stdout.splitlines()
    assert rows[0].split(",")[-2:] == ["status", "memory_free_gb"]
    assert all(row.split(",")[-2] == "does not fit in memory" for row in rows[1:]), rows
    # A plot leaves the layouts that do not fit out of their speed (it drew 0.9 M tokens/s for a 70B model on 8
    # GPUs), but keeps their memory; with nothing left, one line.
    from netsweep_jax.sweep.analysis.plot import runnable_only
    from netsweep_jax.sweep.io.reader import open_cube

    with open_cube(out) as ds:
        assert (
            runnable_only(ds, "memory_free_gb", {})[1] == 0 and runnable_only(ds, "tokens_per_s", {})[1] == 2
        )
    r = invoke("plot", out, "--x", "tp", "--y", "tokens_per_s", "--out", tmp_path / "t.png")
    (line,) = r.output.strip().splitlines()
    assert r.exit_code == 2 and "a layout that cannot exist or does not fit in memory" in line, r.output
    assert not (tmp_path / "t.png").exists()


def test_plot_leaves_out_the_layouts_that_cannot_run():
    import numpy as np
    import xarray as xr

    from netsweep_jax.sweep.analysis.plot import runnable_only

    ds = xr.Dataset(
        {
            "tokens_per_s": ("tp", [1.0, 2.0, 3.0]),
            "memory_gb": ("tp", [90.0, 70.0, 50.0]),
            "fits": ("tp", [0.0, 1.0, 1.0]),
            "status": ("tp", [0, 0, 2]),
        },
        coords={"tp": [1, 2, 4]},
    )
    kept, left = runnable_only(ds, "tokens_per_s", {})
    assert np.isnan(kept["tokens_per_s"].values).tolist() == [True, False, True] and left == 2
    kept, left = runnable_only(ds, "memory_gb", {"tp": [1, 2]})  # memory: where the layout can exist
    assert kept["memory_gb"].values[:2].tolist() == [90.0, 70.0] and left == 0
    # A reduced cube's status is reduced too (a max over tp is no layout's), and a plan's network cost has no
    # rank: neither is masked (the first left every value of --reduce max:tp out, the second broadcast rank).
    reduced = ds.assign_attrs(reduced="max:tp")
    assert runnable_only(reduced, "tokens_per_s", {})[1] == 0
    plan = ds.expand_dims(rank=[1, 2]).assign(network_cost=("tp", [0.1, 0.2, 0.3]))
    kept, left = runnable_only(plan, "network_cost", {})
    assert kept["network_cost"].dims == ("tp",) and left == 0


def test_select_reads_values_as_shown_each_once_and_the_nearest_of_any_size(cube, tmp_path):
    # found by a hunt: the efficiency show prints (12 digits) was not in the cube (0.6031997711931796); rank=1,1
    # printed a row twice; --nearest 1e20 picked rank 1 (every float distance ties); a held cube was "damaged"
    import fcntl

    import xarray as xr

    with xr.open_dataset(cube, engine="h5netcdf") as ds:
        efficiency = float(ds.efficiency.values[0])
    shown = f"{efficiency:.12g}"
    assert shown != repr(efficiency)  # the default efficiency is a fitted constant's 16 digits
    r = invoke("select", cube, "--sel", f"efficiency={shown}", "--sel", "rank=1", "--vars", "tokens_per_s")
    assert r.exit_code == 0 and len(r.stdout.splitlines()) == 1 + 2, r.output
    r = invoke(
        "plot",
        cube,
        "--x",
        "bandwidth",
        "--sel",
        f"efficiency={shown}",
        "--sel",
        "rank=1",
        "--out",
        tmp_path / "e.png",
    )
    assert r.exit_code == 0, r.output  # plot reads it as select does
    assert "give each value once" in invoke("select", cube, "--sel", "rank=1,1").output
    r = invoke("select", cube, "--sel", "rank=1e20", "--nearest", "--vars", "tokens_per_s")
    assert r.exit_code == 0 and "the nearest, 12, selected" in r.output, r.output
    copy = tmp_path / "held.h5"  # a file this process has never opened (xarray keeps the cube's open)
    copy.write_bytes(cube.read_bytes())
    with open(copy, "rb") as held:
        fcntl.flock(
            held, fcntl.LOCK_EX | fcntl.LOCK_NB
        )  # as a sweep writing it holds it (HDF5 locks a file it writes)
        for command in (["show", copy], ["select", copy]):
            r = invoke(*command)
            assert r.exit_code == 1 and "another process has it open for writing" in r.output, r.output
            assert "damaged" not in r.output


def test_a_need_cubes_status_reads_as_words_and_plot_says_what_it_left_out(tmp_path):
    out = tmp_path / "n.h5"
    need = ["need", "--model", "resnet50", "--target", "0.99", "--solve", "utilization", "--bw", "0.1,1,100"]
    assert invoke(*need, "--nodes", "2", "--out", out).exit_code == 0
    r = invoke("select", out, "--csv")
    assert [line.rsplit(",", 1)[1] for line in r.stdout.splitlines()[1:]] == ["unreachable"] * 2 + ["solved"]
    shown = [line.split() for line in invoke("show", out).output.splitlines()]
    assert ["status", "solved", "(1),", "unreachable", "(2)"] in shown
    # An option's name for the dim solved for: both said (a review: the generic list of dims was).
    r = invoke("select", out, "--sel", "util=0.5")
    assert "--util selects utilization: this cube has no utilization dim (it was solved for it)" in r.output
    r = invoke("plot", out, "--x", "bandwidth", "--out", tmp_path / "n.png")
    assert r.exit_code == 0 and "left out: 2 value(s) of required_utilization" in r.output, r.output


def test_a_system_dims_0_is_selected_and_drawn_as_what_it_stands_for(tmp_path):
    # the cube keeps 0 where the GPU's system gave the value: select --bw 200 on an A100 plan (the assumed line's
    # 200 Gbit/s) said "not in the cube; it has 0", and plot drew every point at 0 Gbit/s (a hunt)
    import matplotlib.image

    out = tmp_path / "a100.h5"
    one = ["--tp", "8", "--pp", "1", "--cp", "1", "--micro-batch", "1", "--zero", "0", "--recompute", "none"]
    plan = ["plan", "--model", "llama3-8b", "--gpus", "8", "--global-batch", "8", "--gpu", "a100", *one]
    assert invoke(*plan, "--keep", "2", "--out", out).exit_code == 0
    # review: two values that are one coordinate printed each row twice; --nearest said the system's value was
    # not in the cube; plot's --sel refused it
    assert "give each value once" in invoke("select", out, "--sel", "rank=1,1.0000000000001").output
    r = invoke("select", out, "--bw", "200", "--nearest", "--vars", "tokens_per_s")
    assert "the cube's 0, the GPU's system (200), selected" in r.output and "nearest" not in r.output, (
        r.output
    )
    assert (
        invoke("plot", out, "--x", "rank", "--sel", "bandwidth=200", "--out", tmp_path / "r.png").exit_code
        == 0
    )
    r = invoke("select", out, "--bw", "200", "--vars", "tokens_per_s")
    assert r.exit_code == 0 and "--bw 200: the cube's 0, the GPU's system (200), selected" in r.output, (
        r.output
    )
    # ... and printed as 200, not the 0 a CSV read as 0 Gbit/s (a hunt)
    r = invoke("select", out, "--bw", "200", "--sel", "rank=1", "--vars", "tokens_per_s", "--csv")
    assert r.exit_code == 0 and r.output.splitlines()[-1].startswith("200,1,"), r.output
    r = invoke("select", out, "--bw", "100")
    assert "it has 0 (= the GPU's system, 200)" in r.output, r.output
    # the 0 the cube shows is typed as shown (refused as below --bw's range), and a nearest pick of it is said
    # with what it stands for, as the table prints it (said as 0, a hunt)
    r = invoke("select", out, "--sel", "bandwidth=0", "--sel", "rank=1", "--vars", "tokens_per_s", "--csv")
    assert r.exit_code == 0 and r.output.splitlines()[-1].startswith("200,1,"), r.output
    r = invoke("select", out, "--bw", "100", "--nearest", "--vars", "tokens_per_s")
    assert "--bw 100: not in the cube; the nearest, 0 (the GPU's system, 200), selected" in r.output, r.output
    from netsweep_jax.sweep.analysis import plot

    drawn = {}
    real_line_plot = plot.line_plot

    def line_plot(ds, x, **kwargs):  # the coordinates the figure is drawn at
        drawn[x] = ds[x].values.tolist()
        return real_line_plot(ds, x, **kwargs)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(plot, "line_plot", line_plot)
        assert (
            invoke("plot", out, "--x", "bandwidth", "--sel", "rank=1", "--out", tmp_path / "a.png").exit_code
            == 0
        )
    assert drawn == {"bandwidth": [200.0]} and matplotlib.image.imread(tmp_path / "a.png").size


def test_a_host_of_other_gpus_has_its_own_nvlink_domain_and_nics(tmp_path):
    # A hunt: --gpus-per-node 4 on an H100 kept a DGX H100's 8-GPU NVLink domain (TP 8 at NVLink's rate across two
    # hosts) and all 8 of its NICs for 4 GPUs. A host's domain is its NVSwitch's, up to the preset's; a rack's
    # (NVL72) stays; its NICs are the preset's a GPU, one a host at least (compute.host_system).
    import numpy as np

    from netsweep_jax import sweep
    from netsweep_jax.sweep.model.compute import host_system, system_settings

    by_hand = {  # gpu, GPUs a host -> NVLink domain, NICs
        ("h100", 4): (4, 4),
        ("h100", 16): (8, 16),
        ("gb200", 8): (72, 8),
        ("v100", 2): (2, 1),  # a DGX-1: 4 NICs for 8 GPUs
        ("v100", 1): (1, 1),
        ("a100", 8): (8, 8),
    }
    for (gpu, per_node), (domain, nics) in by_hand.items():
        s = system_settings(gpu, per_node)
        assert (s["nvlink_domain"], s["nics_per_node"], s["gpus_per_node"]) == (domain, nics, per_node)
    d, n = host_system(
        np.array([8.0, 72.0]), np.array([8.0, 4.0]), np.array([8.0, 4.0]), np.array([4.0, 8.0])
    )
    assert d.tolist() == [4.0, 72.0] and n.tolist() == [4.0, 8.0]
    # the kernel resolves the cube's 0 the same way: given only the host size, as given all three
    one = dict(tp=4, pp=1, cp=1, micro_batch=1, zero=0, recompute="none", gpus=16, global_batch=16)
    implied = sweep.evaluate_layouts("llama3-8b", gpus_per_node=4, **one)
    stated = sweep.evaluate_layouts("llama3-8b", gpus_per_node=4, nvlink_domain=4, nics_per_node=4, **one)
    np.testing.assert_array_equal(implied.tokens_per_s.values.ravel(), stated.tokens_per_s.values.ravel())
    dgx = sweep.evaluate_layouts("llama3-8b", gpus_per_node=4, nvlink_domain=8, nics_per_node=8, **one)
    assert float(dgx.tokens_per_s.max()) != float(implied.tokens_per_s.max())  # the old reading differs
    assert (
        "a host of --gpus-per-node GPUs as in a DGX H100: NVLink the host's, up to 8 GPUs"
        in implied.attrs["assumed"]
    )
    out = tmp_path / "g4.h5"
    assert invoke("grid", "--model", "llama3-8b", "--gpus-per-node", "4", "--tp", "4", "--gpus", "16",
                  "--global-batch", "16", "--out", out, "-q").exit_code == 0  # fmt: skip
    r = invoke(
        "select", out, "--sel", "nvlink_domain=4", "--sel", "nics_per_node=4", "--vars", "tokens_per_s"
    )
    assert r.exit_code == 0 and "--nvlink-domain 4: the cube's 0, the GPU's system (4), selected" in r.output
    # a gradient dtype's 0 as plan's rows print it, the precision's bytes (a hunt: a row's grad_bytes 4 fed back
    # to select was refused, "it has 0")
    r = invoke("select", out, "--sel", "grad_bytes=4", "--sel", "nvlink_domain=4", "--sel", "nics_per_node=4",
               "--vars", "tokens_per_s")  # fmt: skip
    assert (
        r.exit_code == 0
        and "--grad-bytes 4: the cube's 0, the precision's gradients (4), selected" in r.output
    )
    r = invoke("select", out, "--sel", "grad_bytes=2", "--nearest", "--sel", "nvlink_domain=4", "--sel",
               "nics_per_node=4", "--vars", "tokens_per_s")  # fmt: skip
    assert "the nearest, 0 (the precision's gradients, 4), selected" in r.output, r.output


def test_a_fabric_presets_host_of_other_gpus_has_its_own_nvlink_domain_and_nics():
    # A hunt: --fabric dgx-h100-superpod --gpus-per-node 4 kept the preset's 8-GPU domain and 8 NICs (TP 8 at
    # NVLink's rate across two hosts: 4-GPU hosts came out faster than 8-GPU ones).
    from netsweep_jax.sweep.core.errors import InputError
    from netsweep_jax.sweep.engine import layouts
    from netsweep_jax.sweep.model.fabrics import FABRICS

    dgx = FABRICS["dgx-h100-superpod"]
    grid = layouts.make_layout_grid("llama3-8b", gpus=16, global_batch=16, fabric=dgx, gpus_per_node=4)
    assert [grid.values[d].tolist() for d in ("nvlink_domain", "nics_per_node")] == [[4.0], [4.0]]
    said = " ".join(grid.assumed)
    assert (
        "a host of --gpus-per-node GPUs built as the fabric's: --nvlink-domain 4 (its 8), --nics-per-node 4"
        in said
    )
    given = layouts.make_layout_grid(
        "llama3-8b", gpus=16, global_batch=16, fabric=dgx, gpus_per_node=4, nvlink_domain=8, nics_per_node=8
    )
    assert [given.values[d].tolist() for d in ("nvlink_domain", "nics_per_node")] == [[8.0], [8.0]]
    with pytest.raises(InputError, match="take one value"):
        layouts.make_layout_grid("llama3-8b", gpus=16, global_batch=16, fabric=dgx, gpus_per_node="4,8")


def test_a_cube_of_two_gpus_reads_the_0_where_their_systems_share_the_value():
    # A hunt: select --bw 400 on a cube of H100s and H200s (both 400 Gbit/s NICs) said "not in the cube; it has 0".
    from netsweep_jax import sweep
    from netsweep_jax.sweep.io.reader import stands_for

    one = dict(tp=1, pp=1, cp=1, micro_batch=1, zero=0, recompute="none", gpus=8, global_batch=8)
    ds = sweep.evaluate_layouts("llama3-8b", gpu="h100,h200", vars="tokens_per_s", **one)
    assert stands_for(ds, "bandwidth") == 400 and stands_for(ds, "nics_per_node") == 8
    mixed = sweep.evaluate_layouts("llama3-8b", gpu="h100,b200", vars="tokens_per_s", efficiency=0.6, **one)
    assert stands_for(mixed, "nvlink_bw") is None  # 450 and 900 GB/s: the 0 stands for two values


def test_the_host_rule_in_jax_is_its_float64_reference_on_random_hosts():
    # compute.host_system, as the kernel's inputs take it (jax.numpy, float32), against tests/reference.py
    import jax.numpy as jnp
    import numpy as np

    import reference
    from netsweep_jax.sweep.model.compute import host_system

    rng = np.random.default_rng(0)
    preset_gpus = rng.choice([1.0, 2.0, 4.0, 8.0], 500)
    domain = np.where(rng.random(500) < 0.3, 72.0, preset_gpus)  # a rack's domain, or the host's
    nics = rng.choice([1.0, 2.0, 4.0, 8.0], 500)
    gpus = rng.integers(1, 33, 500).astype(float)
    d, n = host_system(*(jnp.asarray(a, jnp.float32) for a in (domain, preset_gpus, nics, gpus)), xp=jnp)
    want = np.array([reference.host_system(*row) for row in zip(domain, preset_gpus, nics, gpus)])
    np.testing.assert_array_equal(np.asarray(d), want[:, 0])
    np.testing.assert_array_equal(np.asarray(n), want[:, 1])
