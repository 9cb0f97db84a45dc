"""What need and compare say: a large model pointed at plan, several targets, the settings an answer is for."""

import h5py

from helpers import invoke

NEED = ["need", "--model", "resnet50", "--solve", "ratio", "--bw", "10,25"]


def test_need_on_a_large_model_points_at_plan():
    r = invoke("compare", "--bw", "10", "--model", "llama3-70b")
    (line,) = r.output.strip().splitlines()
    assert r.exit_code == 2 and line.startswith("error: --model llama3-70b: a large model"), r.output
    assert "sweep plan --model llama3-70b" in line and "unknown" not in line
    # need answers a large model with --network-share (tests/test_layout_need.py); a scaling factor is refused.
    r = invoke("need", "--target", "0.9", "--solve", "ratio", "--bw", "10", "--model", "llama3-70b")
    (line,) = r.output.strip().splitlines()
    assert r.exit_code == 2 and line.startswith(
        "error: --target is for data-parallel models; llama3-70b is a large"
    )
    assert "sweep need --network-share PERCENT" in line and "sweep plan --model llama3-70b" in line


def test_need_takes_several_targets(tmp_path):
    r = invoke(*NEED, "--target", "0.9,0.99", "--out", tmp_path / "n.h5")
    assert r.exit_code == 0, r.output
    tables = r.stdout.rsplit("wrote ", 1)[0].split("\n\n")
    assert len(tables) == 2 and "scaling factor 0.9:" in tables[0] and "scaling factor 0.99:" in tables[1]
    for target, table in zip(("0.9", "0.99"), tables):
        alone = invoke(*NEED, "--target", target)
        assert alone.exit_code == 0 and alone.stdout.strip() == table.strip()
    with h5py.File(tmp_path / "n.h5") as f:
        assert list(f["target"][...]) == [0.9, 0.99] and f["required_ratio"].shape[0] == 2
    assert "reaching scaling factor 0.9, 0.99" in invoke("show", tmp_path / "n.h5").output


def test_need_table_shows_the_nodes_bandwidth_and_a_utilization_set():
    r = invoke(
        "need", "--model", "resnet50", "--solve", "ratio", "--target", "0.9", "--bw", "10", "--util", "0.5"
    )
    assert r.exit_code == 0, r.output
    head, row = r.stdout.strip().splitlines()[1:3]
    assert head.split() == ["model", "nodes", "bandwidth", "(Gbit/s)", "utilization", "answer"]
    assert row.split()[:4] == ["resnet50", "8", "10.0", "0.5"]


def test_need_table_shows_the_named_settings_given():
    # The answer for topk or a tree was printed under "model nodes answer" alone (a hunt).
    r = invoke(
        "need", "--model", "resnet50", "--solve", "bandwidth", "--target", "0.9", "--nodes", "2",
        "--compressor", "fp16", "--collective", "tree",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    head, row = r.stdout.strip().splitlines()[1:3]
    assert head.split() == ["model", "collective", "compressor", "nodes", "answer"]
    assert row.split()[:4] == ["resnet50", "tree", "fp16", "2"]


def test_compare_says_its_utilization_is_not_the_other_commands():
    # compare's today is utilization 0.32 and nccl-ring; grid's and need's 1 and ring: 1.7x apart at 16 nodes.
    r = invoke("compare", "--model", "resnet50", "--bw", "10", "--nodes", "16", "--compressor", "fp16")
    assert r.exit_code == 0, r.output
    assert (
        "--util 0.32 (today's: the paper's measured ~32 Gbit/s of 100; grid and need assume --util 1, "
        in r.output
    )
    # Their collective follows the workload (it said ring, which a transformer's grid does not take).
    assert "follow the workload: ring and Horovod fusion for the paper's CNNs, nccl-ring and DDP" in r.output
    assert "scaling today (util 0.32)" in r.stdout.splitlines()[0]


def test_a_target_is_said_to_every_digit_given():
    # 0.9999999 was said as "scaling factor 1"
    r = invoke(*NEED, "--target", "0.9999999")
    assert r.exit_code == 0 and "reaching scaling factor 0.9999999:" in r.stdout, r.output


def test_need_says_the_spine_its_answer_is_for():
    # --oversubscription is one value a sweep, not a dim: the table said nothing of an 8:1 spine (a hunt). The
    # table of a need cube as solve writes it (its attributes), made by hand: no sweep to compile.
    import numpy as np
    import xarray as xr

    from netsweep_jax.sweep.analysis.need import answer_table

    ds = xr.Dataset(
        {"required_bandwidth": ("nodes", np.array([9.6])), "status": ("nodes", np.array([0], np.int32))},
        coords={"nodes": [8], "model": "resnet50", "nics_per_node": 8.0, "utilization": 1.0},
        attrs={"solved_axis": "bandwidth", "target_scaling_factor": 0.99, "fabric": "ethernet-clos",
               "oversubscription": 8.0},
    )  # fmt: skip
    head = answer_table(ds).splitlines()[0]
    assert head.endswith("at utilization 1) on ethernet-clos's spine at 8:1:"), head
    ds.attrs["oversubscription"] = 1.0
    assert answer_table(ds).splitlines()[0].endswith("at utilization 1):")


def test_busbw_beside_solving_the_bandwidth_asks_for_its_rate_in_the_value(tmp_path):
    # A hunt: the advice "or give one --bw" was then refused (--bw cannot be given beside --solve bandwidth)
    r = invoke("need", "--model", "resnet50", "--target", "0.9", "--solve", "bw", "--busbw", "40")
    (line,) = r.output.strip().splitlines()
    assert r.exit_code == 2 and line == (
        "error: --busbw 40: --solve bandwidth finds the link rate, so say the rate the busbw was measured on, as "
        "40@400 (Gbit/s)"
    )
    r = invoke(
        "need", "--model", "resnet50", "--target", "0.9", "--solve", "BW", "--busbw", "40"
    )  # as need reads it
    assert r.exit_code == 2 and "--solve bandwidth finds the link rate" in r.output, r.output
    r = invoke("need", "--model", "resnet50", "--target", "0.9", "--solve", "Util", "--busbw", "40@400")
    assert r.exit_code == 2 and "--solve utilization finds the utilization; drop --busbw" in r.output, (
        r.output
    )
    # and a report folder given as a link is refused as a link (it had been called "not a directory")
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    r = invoke("compare", "--model", "resnet50", "--out", tmp_path / "link")
    assert r.exit_code == 2 and "link: a link; give the directory itself for the report" in r.output, r.output
