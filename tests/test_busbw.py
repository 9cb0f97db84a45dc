"""--busbw: a node's figure refused for what it is, several values, compare, a large model's default link."""

import h5py
import numpy as np

from helpers import invoke, one_line_error


def test_a_node_figure_is_refused_as_more_than_one_link_carries(tmp_path):
    # nccl-tests on a node of 8 x 400 Gbit/s NICs prints ~370 GB/s: the per-link figure is 370 / 8.
    out = tmp_path / "o.h5"
    r = invoke("grid", "--bw", "400", "--nics-per-node", "8", "--busbw", "370@400", "--out", out)
    (line,) = r.output.strip().splitlines()
    assert r.exit_code == 2 and line.startswith(
        "error: --busbw 370@400: 370 GB/s is more than one 400 Gbit/s"
    )
    assert (
        "(50 GB/s)" in line
        and "busbw is per link" in line
        and "over its 8 NICs, a link's is 46.25 GB/s" in line
    )
    assert "busbw is in GB/s: bytes" not in line and not out.exists()
    # A 2-host all-reduce under NCCL's tree or NVLS reads more than its NICs carry (a hunt: 468 was told "58.5 GB/s
    # per link", and 58.5 then "7.312"): no per-link share that a link cannot carry is offered, and the fit of the
    # logs is.
    r = invoke("grid", "--bw", "400", "--nodes", "2", "--nics-per-node", "8", "--busbw", "468", "--out", out)
    line = one_line_error(r)
    assert "a link's is" not in line and "fit its logs with sweep calibrate --nccl-tests" in line, line
    assert not out.exists()


def test_busbw_takes_a_list_as_the_other_axes_do(tmp_path):
    out = tmp_path / "o.h5"
    r = invoke("grid", "--bw", "100", "--nodes", "2", "--busbw", "9,10@100", "--out", out)
    assert r.exit_code == 0, r.output
    assert "utilization 0.72 = 8 x busbw 9 GB/s / 100 Gbit/s links; utilization 0.8 = " in r.output
    with h5py.File(out) as f:
        np.testing.assert_allclose(f["utilization"][...], [0.72, 0.8])


def test_compare_takes_busbw_and_says_its_utilization(tmp_path):
    args = ["compare", "--model", "resnet50", "--bw", "100", "--compressor", "fp16"]
    by_busbw, by_util = invoke(*args, "--busbw", "9"), invoke(*args, "--util", "0.72")
    assert by_busbw.exit_code == 0 and by_util.exit_code == 0, by_busbw.output
    assert "from --busbw: utilization 0.72" in by_busbw.output and "(util 0.72)" in by_busbw.stdout
    assert by_busbw.stdout == by_util.stdout
    # A refusal is one line: the utilization read from --busbw is said only once the input is taken.
    r = invoke(*args, "--busbw", "9,10")
    assert one_line_error(r).startswith("error: --busbw compare takes one value")
    # The link's whole rate was refused as --util 1.0, an option not given.
    r = invoke(*args, "--busbw", "12.5")
    assert one_line_error(r).startswith(
        "error: --busbw is utilization 1 of the link; compare's today must be"
    )


def test_plan_busbw_without_bw_reads_it_against_the_gpu_systems_nics(tmp_path):
    # An H100 system's NICs are 400 Gbit/s: 35 GB/s is utilization 0.7, said; no longer "give one --bw".
    out = tmp_path / "p.h5"
    r = invoke(
        "plan", "--model", "llama3-8b", "--gpus", "16", "--global-batch", "16", "--tp", "8", "--pp", "1",
        "--cp", "1", "--micro-batch", "1", "--keep", "1", "--busbw", "35", "--out", out,
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "utilization 0.7 = 8 x busbw 35 GB/s / 400 Gbit/s links (the h100 system's NICs" in r.output
    assert "bw 400 Gbit/s" in r.output and "utilization 1 (the links' full rate)" not in r.output
    with h5py.File(out) as f:
        np.testing.assert_allclose(f["utilization"][...], [0.7])


def test_busbw_values_of_one_utilization_are_named_as_given(tmp_path):
    r = invoke("grid", "--bw", "400", "--busbw", "40@400,20@200", "--out", tmp_path / "o.h5")
    assert (
        one_line_error(r)
        == "error: --busbw 40@400,20@200: 40@400 and 20@200 are both utilization 0.8; give one"
    )
