"""sweep plot: line plots and heatmaps from a cube; refusals list what remains."""

import pytest

from helpers import invoke


@pytest.fixture(scope="module")
def cube(tmp_path_factory):
    out = tmp_path_factory.mktemp("plot") / "c.h5"
    r = invoke("grid", "--bw", "1..100@8log", "--ratio", "1,2,5", "--nodes", "2,8", "--out", str(out), "-q")
    assert r.exit_code == 0, r.output
    return out


def is_png(path):
    return path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 5000


@pytest.mark.parametrize(
    "args",
    [
        ["--x", "bandwidth", "--y", "scaling_factor", "--hue", "nodes", "--sel", "ratio=1"],
        ["--kind", "heatmap", "--x", "bandwidth", "--y", "ratio", "--sel", "nodes=8"],
    ],
    ids=["line", "heatmap"],
)
def test_plots(cube, tmp_path, args):
    out = tmp_path / "fig.png"
    r = invoke("plot", str(cube), *args, "--out", str(out))
    assert r.exit_code == 0, r.output
    assert is_png(out)


@pytest.mark.parametrize(
    "args,message",
    [
        (["--x", "bandwidth", "--hue", "nodes"], "the selection leaves ratio (3 values)"),
        (["--x", "bandwidth"], "nodes (2 values), ratio (3 values)"),
        (["--x", "bandwidth", "--hue", "nodes", "--sel", "ratio=3"], "3 is not a value of ratio in the cube"),
        # the values listed as a selection takes them (a hunt: 1.9307 listed, then refused)
        (
            ["--x", "ratio", "--sel", "nodes=2", "--sel", "bandwidth=1.9"],
            "(1, 1.93069772888, 3.72759372031, ",
        ),
        (["--x", "speed", "--sel", "ratio=1", "--sel", "nodes=2"], "'speed': not a dim"),
        (
            ["--x", "bandwidth", "--y", "speedup", "--sel", "ratio=1", "--sel", "nodes=2"],
            "--y 'speedup': not a variable",  # the option that named it (a hunt: none was named)
        ),
        (["--x", "bandwidth", "--hue", "bandwidth"], "x and hue are both 'bandwidth'; the two plotted dims"),
        (["--x", "bandwidth", "--kind", "heatmap"], "--y needed: the dim on a heatmap's y axis"),
        (["--x", "bandwidth", "--sel", "ratio"], "expected DIM=VALUE"),
        (["--x", "bandwidth", "--kind", "pie"], "--kind 'pie'"),
        # A plotted dim fixed too: a traceback (--hue), "damaged" (a heatmap's); a dim fixed twice, the last won;
        # a list, refused as "2,8 is not a value (2, 8)"; a word, "not a value".
        (["--x", "bandwidth", "--hue", "nodes", "--sel", "nodes=2", "--sel", "ratio=1"], "nodes is plotted"),
        (
            ["--kind", "heatmap", "--x", "bandwidth", "--y", "nodes", "--sel", "nodes=2", "--sel", "ratio=1"],
            "--sel nodes=2: nodes is plotted; drop it from --sel",
        ),
        (
            ["--x", "bandwidth", "--hue", "nodes", "--sel", "ratio=1", "--sel", "ratio=10"],
            "ratio is selected twice",
        ),
        (["--x", "bandwidth", "--hue", "ratio", "--sel", "nodes=2,8"], "fixes nodes to one value; give one"),
        (["--x", "bandwidth", "--hue", "ratio", "--sel", "nodes=abc"], "'nodes=abc': abc is not a number"),
        # An option's name for its dim (--util's is utilization): said so, in plot as in select.
        (
            ["--x", "bandwidth", "--hue", "ratio", "--sel", "util=1"],
            "no util dim: --util selects its utilization dim (--sel utilization=VALUE)",
        ),
        (["--x", "bandwidth", "--hue", "ratio", "--sel", "foo=1"], "no foo dim; its dims: model, "),
    ],
)
def test_refusals(cube, tmp_path, args, message):
    out = tmp_path / "f.png"
    r = invoke("plot", str(cube), *args, "--out", str(out))
    assert r.exit_code == 2 and message in r.output, r.output
    assert not out.exists()


def test_a_listed_value_selects(cube, tmp_path):
    out = tmp_path / "f.png"
    r = invoke(
        "plot",
        str(cube),
        "--x",
        "ratio",
        "--sel",
        "nodes=2",
        "--sel",
        "bandwidth=1.93069772888",
        "--out",
        out,
    )
    assert r.exit_code == 0 and is_png(out), r.output


@pytest.mark.parametrize(
    "args,title",
    [
        # the cube's one model named (a hunt: "ratio = 1" alone)
        (["--x", "bandwidth", "--hue", "nodes", "--sel", "ratio=1"], "model = resnet50, ratio = 1"),
        (
            [
                "--kind",
                "heatmap",
                "--x",
                "bandwidth",
                "--y",
                "ratio",
                "--sel",
                "nodes=8",
                "--sel",
                "model=ResNet50",
            ],
            "nodes = 8, model = resnet50",
        ),  # a name in any case
        (
            ["--x", "ratio", "--sel", "nodes=2", "--sel", "bandwidth=1"],
            "model = resnet50, nodes = 2, bandwidth = 1 Gbit/s",
        ),
    ],
    ids=["line", "heatmap", "units"],
)
def test_a_figure_is_titled_with_its_sel_choices(cube, tmp_path, monkeypatch, args, title):
    from netsweep_jax.sweep.analysis import plot

    drawn = []
    real = plot.save
    monkeypatch.setattr(plot, "save", lambda fig, out, **kw: drawn.append(fig) or real(fig, out, **kw))
    r = invoke("plot", str(cube), *args, "--out", str(tmp_path / "f.png"))
    assert r.exit_code == 0, r.output
    assert drawn[0].axes[0].get_title() == title


@pytest.mark.parametrize("kind", ["line", "heatmap"])
def test_a_long_label_stays_within_its_axis(cube, tmp_path, monkeypatch, kind):
    # exposed_comm's label, "communication not hidden behind the backward pass [s]", ran past the top of the
    # heatmap's color bar (and of a line plot's y axis) into the title: it is broken between words instead.
    from netsweep_jax.sweep.analysis import plot

    drawn = []
    real = plot.save
    monkeypatch.setattr(plot, "save", lambda fig, out, **kw: drawn.append(fig) or real(fig, out, **kw))
    args = (
        ["--y", "exposed_comm", "--hue", "nodes"]
        if kind == "line"
        else ["--y", "nodes", "--var", "exposed_comm"]
    )
    r = invoke(
        "plot",
        str(cube),
        "--kind",
        kind,
        "--x",
        "bandwidth",
        *args,
        "--sel",
        "ratio=1",
        "--out",
        tmp_path / "f.png",
    )
    assert r.exit_code == 0, r.output
    fig = drawn[0]
    fig.draw_without_rendering()
    axis = fig.axes[-1]  # the color bar, or the line plot's axes
    text = axis.yaxis.label
    assert "backward pass" in text.get_text() and "\n" in text.get_text()
    box, frame = text.get_window_extent(), axis.get_window_extent()
    assert frame.y0 - 1 <= box.y0 and box.y1 <= frame.y1 + 1, (box, frame)


def test_a_need_cubes_figure_names_its_target(tmp_path, monkeypatch):
    # A hunt: "smallest gradient compression ratio reaching the target scaling factor", the target nowhere
    from netsweep_jax.sweep.analysis import plot

    need = tmp_path / "n.h5"
    args = ("--model", "resnet50", "--solve", "ratio", "--bw", "10,25", "--nodes", "2,8", "--out", str(need))
    assert invoke("need", "--target", "0.95", *args).exit_code == 0
    drawn = []
    real = plot.save
    monkeypatch.setattr(plot, "save", lambda fig, out, **kw: drawn.append(fig) or real(fig, out, **kw))
    r = invoke("plot", str(need), "--x", "bandwidth", "--hue", "nodes", "--out", str(tmp_path / "f.png"))
    assert r.exit_code == 0, r.output
    assert drawn[0].axes[0].get_title() == "model = resnet50, target = 0.95"


def test_a_line_with_no_value_says_so_in_the_legend():
    """A need cube's model whose target is unreachable everywhere draws nothing: its legend entry says so."""
    import numpy as np
    import xarray as xr

    from netsweep_jax.sweep.analysis.plot import line_plot

    ds = xr.Dataset(
        {"scaling_factor": (("model", "nodes"), [[0.9, 0.8], [np.nan, np.nan]])},
        coords={"model": ["resnet50", "vgg16"], "nodes": [2, 4]},
    )
    ax = line_plot(ds, "nodes", hue="model")
    names = [t.get_text() for t in ax.get_legend().get_texts()]
    assert names == ["model=resnet50", "model=vgg16 (no value)"]


def test_a_line_joins_its_points_in_the_order_of_x_not_as_typed():
    # A hunt: --bw 100,10,40,25,1 drew a zig-zag a reader took for results that are not monotone.
    import xarray as xr

    from netsweep_jax.sweep.analysis.plot import line_plot

    ds = xr.Dataset(
        {"scaling_factor": (("bandwidth",), [0.99, 0.5, 0.9, 0.8])}, coords={"bandwidth": [100, 10, 40, 25]}
    )
    (line,) = line_plot(ds, "bandwidth").get_lines()
    assert list(line.get_xdata()) == [10, 25, 40, 100] and list(line.get_ydata()) == [0.5, 0.8, 0.9, 0.99]


def test_many_lines_get_a_color_scale_and_a_heatmaps_labels_stay_apart():
    # A hunt: 64 node counts drew a legend far past the axes; a heatmap of 19 log-spaced values labelled every
    # one with 6-7 digits ("1.4678", "2.15443"), each running into the next.
    import numpy as np
    import xarray as xr

    from netsweep_jax.sweep.analysis.plot import heatmap, line_plot

    values = np.geomspace(1, 1000, 19)
    ds = xr.Dataset(
        {"scaling_factor": (("nodes", "bandwidth"), np.random.default_rng(0).random((64, 19)))},
        coords={"nodes": np.arange(1.0, 65.0), "bandwidth": values},
    )
    ax = line_plot(ds, "bandwidth", hue="nodes")
    assert ax.get_legend() is None and len(ax.figure.axes) == 2  # the axes and their color scale
    few = line_plot(ds.isel(nodes=slice(0, 3)), "bandwidth", hue="nodes")
    assert [t.get_text() for t in few.get_legend().get_texts()] == ["nodes=1", "nodes=2", "nodes=3"]
    # a line's value with its unit, as the axes say theirs (a hunt: bandwidth=10 of what?)
    two = ds.isel(bandwidth=[0, 6]).assign_coords(bandwidth=[10.0, 25.0])
    two["bandwidth"].attrs["units"] = "Gbit/s"
    across = line_plot(two, "nodes", hue="bandwidth")
    assert [t.get_text() for t in across.get_legend().get_texts()] == [
        "bandwidth=10 Gbit/s",
        "bandwidth=25 Gbit/s",
    ]
    # two values that read alike to 6 digits are named to the 12 a value is matched to (they were both "1")
    close = two.assign_coords(bandwidth=[1.0000001, 1.0000002])
    close["bandwidth"].attrs["units"] = "Gbit/s"
    assert [t.get_text() for t in line_plot(close, "nodes", hue="bandwidth").get_legend().get_texts()] == [
        "bandwidth=1.0000001 Gbit/s",
        "bandwidth=1.0000002 Gbit/s",
    ]
    ax = heatmap(ds.rename(nodes="ratio"), "bandwidth", "ratio")
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert len(labels) <= 8 and labels[:3] == ["1", "3.16", "10"] and labels[-1] == "1000"


def test_a_whole_number_axis_has_whole_number_ticks():
    # A hunt: need's cube of --nodes 1,2 drew "number of nodes" at 1.0, 1.2, 1.4, ... 2.0.
    import xarray as xr

    from netsweep_jax.sweep.analysis.plot import line_plot

    ds = xr.Dataset({"scaling_factor": (("nodes",), [0.9, 0.8])}, coords={"nodes": [1, 2]})
    # ... and a layout cube's tp, stored as a float, at 2.25, 2.5 (a hunt)
    for cube in (ds, ds.rename(nodes="tp").assign_coords(tp=[2.0, 4.0])):
        ax = line_plot(cube, str(next(iter(cube.dims))))
        ax.figure.canvas.draw()
        ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
        assert ticks and all(float(t).is_integer() for t in ticks), ticks


def test_figures_a_hunt_found_hard_to_read_name_and_scale_what_they_draw():
    import numpy as np
    import xarray as xr

    from netsweep_jax.sweep.analysis.plot import heatmap, line_plot
    from netsweep_jax.sweep.analysis.validate import square_limits

    rng = np.random.default_rng(0)
    names = [f"compressor{i}" for i in range(14)]
    ds = xr.Dataset(
        {
            "scaling_factor": (("compressor", "bandwidth"), rng.random((14, 3))),
            "iteration_time": (("compressor", "bandwidth"), np.geomspace(0.1, 9, 42).reshape(14, 3)),
        },
        coords={"compressor": names, "bandwidth": [1.0, 10.0, 100.0]},
    )
    ds["iteration_time"].attrs["units"] = "s"
    # 14 lines, each its own color (with ten, compressors 0 and 10 were both blue); their legend beside the axes
    ax = line_plot(ds, "bandwidth", hue="compressor")
    assert len({line.get_color() for line in ax.get_lines()}) == 14
    assert ax.get_legend().get_bbox_to_anchor().x0 > ax.get_position().x1 * ax.figure.bbox.width * 0.9
    # a scaling factor stays linear; a step spanning 90x is drawn on a log scale (all but one read 0)
    assert (
        ax.get_yscale() == "linear"
        and line_plot(ds, "bandwidth", "iteration_time", "compressor").get_yscale() == "log"
    )
    # three bandwidths ticked at each (1, 10, 100 Gbit/s; one bandwidth had read 9.45 ... 10.5)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "10", "100"]
    one = line_plot(ds.isel(bandwidth=[1], compressor=[0]).squeeze("compressor"), "bandwidth")
    assert [t.get_text() for t in one.get_xticklabels()] == ["10"]
    # GPUs 8 to 1024 on a log axis, each labelled apart (on a linear one 8, 16, 32 and 64 met: a review); values
    # too close to label each keep the locator's ticks
    gpus = xr.Dataset({"iteration_time": (("gpus",), [8.0, 4, 2, 1, 0.5, 0.3, 0.2, 0.1])},
                      coords={"gpus": 2.0 ** np.arange(3, 11)})  # fmt: skip
    spread = line_plot(gpus, "gpus", "iteration_time")
    assert spread.get_xscale() == "log" and spread.get_xticks()[0] == 8 and len(spread.get_xticks()) == 8
    crowded = line_plot(gpus.assign_coords(gpus=[1.0, 1.1, 1.2, 1.3, 2, 3, 4, 40]), "gpus", "iteration_time")
    assert len(crowded.get_xticks()) != 8
    # names on x: points, no line joining two models
    across = line_plot(ds, "compressor", hue="bandwidth")
    assert {line.get_linestyle() for line in across.get_lines()} == {"None"}
    # a heatmap names every name (every second had been left unnamed) and hatches what has no value
    holed = ds.copy(deep=True)
    holed["scaling_factor"][0, 0] = np.nan
    ax = heatmap(holed, "bandwidth", "compressor")
    assert [t.get_text() for t in ax.get_yticklabels()] == names
    assert ax.figure.axes[-1].get_ylabel().endswith("\nhatched: no value")  # on its color scale
    assert "hatched" not in heatmap(ds, "bandwidth", "compressor").figure.axes[-1].get_ylabel()
    assert (
        type(heatmap(ds, "bandwidth", "compressor", var="iteration_time").collections[0].norm).__name__
        == "LogNorm"
    )
    # a validation figure's axes hold every point (a user's scaling factors of 0.15-0.3 were off the axes)
    assert square_limits([0.15, 0.92], [np.array([0.2, np.nan])]) == (0.13, 1.02)
    assert square_limits([0.5, 0.9], [np.array([0.6, 1.1])]) == (0.4, 1.12)
    # a name that says its unit is not followed by it again ("tokens trained per second [1/s]")
    from netsweep_jax.sweep.analysis.plot import label

    rate = xr.DataArray([1.0], attrs={"units": "1/s", "long_name": "tokens trained per second"})
    assert label(rate) == "tokens trained per second" and label(ds["iteration_time"]) == "iteration_time [s]"


def test_names_on_x_keep_each_one_and_their_legend_beside_the_points():
    # A hunt: need's unreachable compressors (NaN) dropped off a compressor axis, said on stderr alone; and a
    # legend inside the axes covered a column of points.
    import numpy as np
    import xarray as xr

    from netsweep_jax.sweep.analysis.plot import line_plot

    ds = xr.Dataset(
        {
            "required_utilization": (
                ("compressor", "bandwidth"),
                [[np.nan, np.nan], [0.04, 0.02], [np.nan, 0.3]],
            )
        },
        coords={"compressor": ["none", "powersgd:4", "fp16"], "bandwidth": [10.0, 100.0]},
    )
    ax = line_plot(ds, "compressor", "required_utilization", "bandwidth")
    assert [t.get_text() for t in ax.get_xticklabels()] == ["none (no value)", "powersgd:4", "fp16"]
    assert ax.get_xlim() == (-0.5, 2.5)
    assert ax.get_legend().get_bbox_to_anchor().x0 > ax.get_position().x1 * ax.figure.bbox.width * 0.9
