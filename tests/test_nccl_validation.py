"""sweep validate --nccl: the reader of nccl_tests.csv's format (bad rows refused in one line, rows the model
cannot price reported), the fabric a row states, and the committed report regenerated."""

import csv
import math
from pathlib import Path

import numpy as np
import pytest

from helpers import RESULTS, assert_same_file, invoke, regenerate
from netsweep_jax.sweep.analysis import nccl_validation as V
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.io.nccl_tests import REQUIRED, read_nccl_tests
from netsweep_jax.sweep.model.compute import GPUS
from netsweep_jax.sweep.model.nccl_fabric import (
    Fabric,
    Unrepresented,
    fabric_of,
    plugin_latency,
    reached_nics,
    stated_choice,
)

COMMITTED = RESULTS / "validation-nccl"
PUBLISHED = Path(__file__).resolve().parents[2] / "shared" / "published" / "nccl_tests.csv"
needs_published = pytest.mark.skipif(not PUBLISHED.is_file(), reason=f"{PUBLISHED} absent (../shared)")

HEADER = ",".join(REQUIRED) + ",notes"
GOOD = [
    "NT309A-H100-2x8-01,s,all_reduce,H100 80GB HBM3,8,8,400,2,,1073741824,448.9,",
    "NT309A-H100-2x8-02,s,all_reduce,H100 80GB HBM3,8,8,400,2,,2147483648,461.24,",
    "AZ-NDH200v5-01,s,all_reduce,H200 141GB,8,8,400,1,NVLS,1073741824,467.58,",
    "X-A100-01,s,all_reduce,A100-SXM4-80GB,8,,,16,,1073741824,45.4,",
    "X-TPU-01,s,alltoall,TPU v5p,4,1,100,2,,1048576,1.0,",
    "X-EP-01,s,alltoall,H100,8,32,100,4,,,53.9,",
    "X-SOCK-01,s,all_reduce,GH200 120GB,4,4,200,2,NET/Socket (no libfabric plugin),1048576,1.2,",
    "X-SMALL-01,s,all_reduce,H100,8,8,400,2,,8,0.0,out-of-place time 25.0 us",
    "X-BCAST-01,s,broadcast,H100,8,8,400,2,,1048576,20.0,",
]


def write(tmp_path, *rows, header=HEADER):
    path = tmp_path / "nccl.csv"
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


def test_reads_good_rows(tmp_path):
    rows = read_nccl_tests(write(tmp_path, *GOOD))
    assert [r.id for r in rows] == [g.split(",")[0] for g in GOOD]
    r = rows[0]
    assert (r.collective, r.gpus_per_node, r.nodes, r.nics, r.nic_gbps, r.bytes, r.busbw) == (
        "all_reduce",
        8,
        2,
        8,
        400.0,
        2**30,
        448.9,
    )
    assert (r.curve, r.source_id, r.ranks) == ("NT309A-H100-2x8", "NT309A", 16)
    assert rows[3].nics is None and rows[5].bytes is None


@pytest.mark.parametrize(
    "row,rule",
    [
        ("B-01,s,allreduce,H100,8,8,400,2,,8,1.0,", "collective 'allreduce' is not one of nccl-tests'"),
        ("B-01,s,all_reduce,H100,0,8,400,2,,8,1.0,", "gpus_per_node 0 must be a whole number from 1"),
        ("B-01,s,all_reduce,H100,8,8,400,2.5,,8,1.0,", "nodes 2.5 must be a whole number from 1"),
        ("B-01,s,all_reduce,H100,8,8,fast,2,,8,1.0,", "nic_gbps 'fast' is not a number"),
        # a host's total (8 x 400) where one NIC's rate goes, as calibrate --bw refuses it (a hunt)
        ("B-01,s,all_reduce,H100,8,8,3200,2,,8,1.0,", "nic_gbps 3200: one NIC's rate, at most 1600 Gbit/s"),
        ("B-01,s,all_reduce,H100,8,8,400,2,,8,-1,", "busbw_gbytes_s -1 must be a number from 0"),
        # a busbw in MB/s (1,000x) was priced as GB/s, one row 99.9% off
        (
            "B-01,s,all_reduce,H100,8,8,400,2,,8,361280,",
            "busbw_gbytes_s 361280: nccl-tests' busbw in GB/s, at most 3600",
        ),
        ("B-01,s,all_reduce,H100,8,8,400,2,,1e40,1,", "bytes 1e40 must be a whole number from 1"),
        ("B-01,s,all_reduce,,8,8,400,2,,8,1,", "gpu is empty"),
        ("B-01,s,all_reduce,H100,8,8,400,2,,8,1", "expected 12 cells, got 11"),
        (",s,all_reduce,H100,8,8,400,2,,8,1,", "id is empty"),
        # found by a hunt: one rank, which the model prices at 0 s (the fit's loss came back infinite and was
        # reported as a fit), and more NICs than any host has
        ("B-01,s,all_reduce,H100,1,8,400,1,,8,1,", "one rank (gpus_per_node x nodes 1)"),
        (
            "B-01,s,all_reduce,H100,8,1000000,400,2,,8,1,",
            "nics_per_node 1000000 must be a whole number from 1 to 64",
        ),
    ],
)
def test_bad_row_is_one_error_naming_row_and_rule(tmp_path, row, rule):
    with pytest.raises(InputError) as e:
        read_nccl_tests(write(tmp_path, GOOD[0], row))
    assert rule in str(e.value) and ":3" in str(e.value)
    assert "\n" not in str(e.value)


def test_bad_files(tmp_path):
    with pytest.raises(InputError, match="missing column\\(s\\) busbw_gbytes_s"):
        read_nccl_tests(write(tmp_path, GOOD[0], header=HEADER.replace("busbw_gbytes_s", "busbw")))
    with pytest.raises(InputError, match="row id NT309A-H100-2x8-01 appears twice"):
        read_nccl_tests(write(tmp_path, GOOD[0], GOOD[0]))
    with pytest.raises(InputError, match="no rows after the header"):
        read_nccl_tests(write(tmp_path))
    # a second busbw column (the in-place one) was read in place of the first (a hunt)
    with pytest.raises(InputError, match="1: column 'busbw_gbytes_s' appears twice; each column once"):
        read_nccl_tests(write(tmp_path, GOOD[0] + ",1.0", header=HEADER + ",busbw_gbytes_s"))


def test_cli_refuses_a_bad_file_in_one_line_and_writes_nothing(tmp_path):
    out = tmp_path / "out"
    r = invoke("validate", "--nccl", write(tmp_path, GOOD[0], GOOD[0]), "--out", out)
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1 and "appears twice" in r.output
    assert not out.exists()
    r = invoke("validate", "--nccl", write(tmp_path, GOOD[0]), "--llm")
    assert r.exit_code == 2 and "--nccl takes no --llm" in r.output
    # --nccl's file left out: Click takes --out for it ("takes no a measurements file" before)
    r = invoke("validate", "--nccl", "--out", out)
    assert r.exit_code == 2 and "--nccl '--out' is an option, not a file: give --nccl FILE" in r.output, (
        r.output
    )
    r = invoke("validate", "--nccl", write(tmp_path, GOOD[0]), tmp_path / "mine.csv")
    assert r.exit_code == 2 and "mine.csv: a second file; --nccl validates the one it is given" in r.output
    assert not out.exists()
    # a busbw in Gbit/s (8x) is more than the NICs carry: refused as calibrate refuses it (a hunt: scored -85%)
    gbit = GOOD[1].replace(",461.24,", f",{230 * 8},")
    r = invoke("validate", "--nccl", write(tmp_path, GOOD[0], gbit), "--out", out)
    assert r.exit_code == 2 and (
        "nccl.csv:3 (row NT309A-H100-2x8-02): busbw 1840 GB/s across 2 hosts is more than 4x what the 8 NICs of "
        "400 Gbit/s its ranks reach a host carry (400 GB/s an NVLink domain): give busbw_gbytes_s in GB/s"
        in r.output
    ), r.output
    assert not out.exists()


def test_sizes_are_said_to_four_digits():
    # a hunt: an all-gather on 3 hosts printed 63.9999 MiB and 1.96875 KiB, past the calibrate table's column
    assert [V.size(b) for b in (8, 2016, 3 * 2**20 - 64, 2**30, 1.5 * 2**20)] == [
        "8 B",
        "1.969 KiB",
        "3 MiB",
        "1 GiB",
        "1.5 MiB",
    ]


def test_stated_choice():
    assert stated_choice("NVLS") == (4, -1, False, "")
    assert stated_choice("Ring") == (1, -1, False, "")
    assert stated_choice("NCCL_ALGO=Ring (forced), NCCL_MIN_CTAS=24") == (1, -1, False, "")
    assert stated_choice("NCCL_ALGO=NVLSTree NCCL_PROTO=LL128") == (5, 1, False, "")
    assert stated_choice("text says NVLS (DOUBT: ...)") == (-1, -1, False, "")
    assert stated_choice("NCCL_COLLNET_ENABLE=1 (IB SHARP, CollNet)") == (-1, -1, True, "")
    assert stated_choice("NET/Socket (no libfabric plugin)")[3] == "socket"
    # a text saying NCCL chose the algorithm it names forces nothing (a hunt: priced as the ring forced)
    assert stated_choice("Ring (NCCL default choice, not forced)") == (-1, -1, False, "")


def test_a_choice_narrowed_as_no_forcing_prices_is_unrepresented():
    # A hunt: NVLS turned off had been priced as NCCL's choice with NVLS, and an exclusion list as no constraint.
    for text, said in (
        ("NVLS disabled (NCCL_NVLS_ENABLE=0)", "NVLS turned off"),
        ("NCCL_ALGO=^NVLS", "an exclusion list (NCCL_ALGO=^...)"),
        ("NCCL_ALGO=Ring,Tree", "a list of algorithms (NCCL_ALGO=a,b)"),
        ("NCCL_ALGO=Ring NCCL_PROTO=^LL128", "an exclusion list (NCCL_ALGO=^...)"),
    ):
        fabric = fabric_of("H100 SXM", 8, 2, 8, 400.0, text)
        assert isinstance(fabric, Unrepresented) and fabric.reason.startswith(f"{said}: the model prices"), (
            fabric
        )
    # PAT turned off where NCCL runs it (a gather of one rank a host across hosts) is unpriced; NVLS or PAT off
    # where NCCL would not run them is read, as calibrate reads such a log (an A100 has no NVLS, an all-to-all
    # runs none, an all-reduce no PAT)
    pat = fabric_of("H100 SXM", 1, 2, 8, 400.0, "NCCL_PAT_ENABLE=0", collective="all_gather")
    assert isinstance(pat, Unrepresented) and pat.reason.startswith("PAT turned off: the model prices"), pat
    for gpu, text, collective in (
        ("A100-SXM4-80GB", "NCCL_NVLS_ENABLE=0", "all_reduce"),
        ("H100 SXM", "NCCL_NVLS_ENABLE=0", "alltoall"),
        ("H100 SXM", "NCCL_PAT_ENABLE=0", "all_reduce"),
    ):
        assert isinstance(fabric_of(gpu, 8, 2, 8, 400.0, text, collective=collective), Fabric), (gpu, text)
    # A review: a forced algorithm leaves NVLS off moot, "fall-off" is no "off", and a protocol's default or one
    # not forced leaves the algorithm forced.
    for text, algorithm in (("text says NVLS (DOUBT: copied)", -1), ("Ring, NCCL_NVLS_ENABLE=0", 1),
                            ("NVLS (busbw fall-off past 1 GiB)", 4), ("Tree (default protocol)", 0),
                            ("Ring (forced; protocol not forced)", 1), ("NCCL_ALGO=Ring, NCCL_PROTO=Simple", 1)):  # fmt: skip
        assert not isinstance(fabric_of("H100 SXM", 8, 2, 8, 400.0, text), Unrepresented), text
        assert stated_choice(text)[0] == algorithm, text


def test_fabric_from_stated_hardware():
    gb300 = fabric_of("GB300 (B300 288GB)", 4, 32, 8, 400.0, "")
    assert isinstance(gb300, Fabric)
    assert (gb300.domain, gb300.arch, gb300.nvlink, gb300.nvswitch, gb300.preset) == (
        18,
        3,
        900e9,
        True,
        "gb300",
    )
    h100 = fabric_of("H100 80GB HBM3", 8, 2, 8, 400.0, "NCCL_ALGO=Ring")
    assert (h100.domain, h100.arch, h100.algorithm, h100.nvlink) == (1, 2, 1, 450e9)
    assert fabric_of("V100-SXM2-32GB", 8, 2, 1, 100.0, "").nvswitch is False
    assert "no preset" in fabric_of("TPU v5p", 4, 2, 1, 100.0, "").reason
    assert "NICs" in fabric_of("A100", 8, 16, None, None, "").reason
    assert isinstance(fabric_of("GB200", 4, 1, None, None, "Ring"), Fabric)  # one host needs no NICs


def test_ranks_reach_the_nics_next_to_their_gpus_and_the_plugin_reports_its_latency():
    # ceil(K g / G): one rank of a four-module GH200 node reaches its module's NIC; all K once every GPU holds a rank.
    assert (reached_nics(4, 1, 4), reached_nics(4, 4, 4), reached_nics(32, 4, 8), reached_nics(1, 2, 8)) == (
        1,
        4,
        16,
        1,
    )
    one = fabric_of("GH200 120GB", 1, 2, 4, 200.0, "")
    four = fabric_of("GH200 120GB", 4, 2, 4, 200.0, "")
    h100 = fabric_of("H100 80GB HBM3", 8, 2, 8, 400.0, "")
    assert isinstance(one, Fabric) and isinstance(four, Fabric) and isinstance(h100, Fabric)
    assert (one.nics, four.nics, h100.nics) == (1, 4, 8)
    # aws-ofi-nccl's latency reported to NCCL for the EC2 instance; 0 on InfiniBand and on aws-ofi-nccl off AWS.
    assert (
        plugin_latency("AWS EFA (p4de.24xlarge)") == plugin_latency("AWS EFA (p5.48xlarge, 32 EFA)") == 75.0
    )
    assert (plugin_latency("p3dn.24xlarge + EFA"), plugin_latency("AWS EFA p5en.48xlarge")) == (150.0, 35.0)
    assert plugin_latency("AWS EFA") == 75.0  # an AWS instance the plugin's table lacks
    assert (
        plugin_latency("HPE Slingshot-11, libfabric via aws-ofi-nccl") == plugin_latency("8 x CX-7 IB") == 0.0
    )
    efa = fabric_of("A100-SXM4-80GB", 8, 2, 4, 100.0, "", "AWS EFA (p4de.24xlarge)")
    alone = fabric_of("A100-SXM4-80GB", 8, 1, 4, 100.0, "", "AWS EFA (p4de.24xlarge)")
    assert isinstance(efa, Fabric) and isinstance(alone, Fabric)
    assert (efa.net_latency, alone.net_latency, h100.net_latency) == (
        75.0,
        0.0,
        0.0,
    )  # one host: no network hop


def test_unpriceable_rows_are_reported_not_dropped(tmp_path):
    v = V.run_validation(write(tmp_path, *GOOD))
    why = {r.id: f.reason for r, f in zip(v.rows, v.fabrics) if isinstance(f, Unrepresented)}
    assert set(why) == {"X-A100-01", "X-TPU-01", "X-EP-01", "X-SOCK-01", "X-BCAST-01"}
    text = V.predictions_csv(v)
    rows = {r["id"]: r for r in csv.DictReader(text.splitlines())}
    assert len(rows) == len(GOOD)
    assert all(rows[i]["unrepresented"] == why[i] and rows[i]["predicted"] == "" for i in why)
    assert rows["X-SMALL-01"]["scored"] == "no" and rows["X-SMALL-01"]["predicted"] != ""
    report = V.report(v)
    for reason in why.values():
        assert reason in report
    assert all(math.isfinite(x) and x > 0 for x in v.predicted[[0, 1, 2, 7]])


def test_no_fit_source_is_refused(tmp_path):
    with pytest.raises(
        InputError,
        match="no scored row of the fit's sources.*give its nccl-tests logs to sweep calibrate --nccl-tests",
    ):
        V.run_validation(write(tmp_path, GOOD[3]))


@pytest.fixture(scope="module")
def validation(tmp_path_factory):
    if not PUBLISHED.is_file():
        pytest.skip(f"{PUBLISHED} absent (../shared)")
    held = {}

    def run(out, **kwargs):
        paths, held["v"] = V.run(out, dataset=PUBLISHED, **kwargs)
        return paths

    return regenerate(
        tmp_path_factory, run, "validation-nccl", "validate --nccl ../shared/published/nccl_tests.csv"
    ), held["v"]


@needs_published
@pytest.mark.parametrize("name", V.FILES)
def test_report_matches_committed(validation, name):
    assert_same_file(validation[0] / name, COMMITTED / name)


@needs_published
def test_report_numbers_follow_from_the_predictions(validation):
    out, v = validation
    rows = list(csv.DictReader(open(out / "predictions.csv")))
    held = [abs(float(r["error"])) for r in rows if r["role"] == "held out" and r["error"]]
    big = [
        abs(float(r["error"]))
        for r in rows
        if r["role"] == "held out" and r["error"] and int(r["bytes"]) >= 2**26
    ]
    text = (out / "REPORT.md").read_text()
    assert f"| all sizes | {len(held)} | {100 * np.median(held):.1f}% |" in text
    assert f"| >= 64 MiB | {len(big)} | {100 * np.median(big):.1f}% |" in text
    assert f"{sum(e > 0.5 for e in held)} held-out rows err by more than 50.0%" in text
    # Across two GB300 racks of 64 ranks each, half of a rank's 16 GiB leaves its rack: 2^33 B at 100 GB/s (8 x
    # 400 Gbit/s a host of 4 GPUs) take 85.9 ms; the source's run took 357.6 ms.
    assert "each rank sends 8 GiB of its 16 GiB to the other rack" in text
    assert f"carries in {2**33 / 100e9 * 1e3:.1f} ms at the least" in text and "took 357.6 ms" in text
    # Every row of the file is in predictions.csv, priced or with its reason.
    assert len(rows) == len(read_nccl_tests(PUBLISHED))
    assert all(r["predicted"] or r["unrepresented"] for r in rows)
    # the plugin latency each row took, said per row: aws-ofi-nccl's on AWS rows across hosts, none elsewhere
    took = {
        r["id"].rsplit("-", 1)[0]: r["plugin_latency_us"]
        for r in rows
        if r["predicted"] and int(r["nodes"]) > 1
    }
    assert took["AWSDT-P5-2x8"] == "75" and took["NT309A-H100-2x8"] == "0", took


@needs_published
def test_busbw_is_nccl_tests_definition(validation):
    """NT309A's 8 GiB row on two H100 hosts, by hand: NVLSTree's network side 461.6 GB/s of bus bandwidth (8 heads
    x 57.7), its NVLink side 476 (8 heads x 40 x 0.85 x 7/8 x 2: NCCL's search charges a head's link twice, 370.8
    / 9 takes the step of 40), the slower at its own efficiency: 461.6 / (476 eta_nvl) against 1 / eta_net with
    the fitted constants, NVLink's; 25 + 2 (20.9 + 2 lambda) us of latency, the whole fill f (8 GiB > X_f),
    busbw = algbw x 2 (n - 1) / n with n = 16."""
    _, v = validation
    i = next(k for k, r in enumerate(v.rows) if r.id == "NT309A-H100-2x8-31")
    eta_net, eta_nvl, lam, _, fill, fill_mib = v.constants
    x = v.rows[i].bytes
    assert x > fill_mib * 2**20 and 461.6 / (476 * eta_nvl) > 1 / eta_net
    us = 25 + 2 * (20.9 + 2 * lam) + x / (1000 * 461.6 * 16 / 30) * 461.6 / (476 * eta_nvl) + fill
    assert v.predicted[i] == pytest.approx(x / us / 1e3 * 30 / 16, rel=1e-9)
    assert (v.algorithm[i], v.protocol[i]) == ("nvls_tree", "simple")


@needs_published
def test_the_plugin_latency_and_the_reached_nic_by_hand(validation):
    """Two held-out rows by hand. AWSDT-P4DE-2x8's 16 KiB all-reduce: A100, 4 x 100 Gbit/s EFA, 2 hosts of 8: 4
    channels at NCCL's step of 12 GB/s, the two-node tree's second pass 24, which run at the NICs' 12.5 (the tree
    at 25); tree LL bus bw min(0.92 x 4 x 25, 4 x 23.6) / 3.8,
    algorithm bw half that, x 0.7 (the tree's correction at 2^8 x 64 B); latency 6.8 + 2 (7 x 0.6 + 5.0 + lambda +
    75), aws-ofi-nccl's p4de latency in NCCL's latencyInter; the fill f X / X_f. CSCS-GH200-2x1's 128 MiB: one
    rank a host reaches one 25 GB/s NIC: 1 channel at NCCL's step of 24, running at the NIC's 25, ring Simple on 2
    ranks, algorithm bw 25; latency
    1.4 (8.4 + 2 (14 + 2 lambda)); the whole fill f."""
    _, v = validation
    eta, _, lam, _, fill, fill_mib = v.constants
    by_id = {r.id: i for i, r in enumerate(v.rows)}
    i = by_id["AWSDT-P4DE-2x8-12"]
    x = v.rows[i].bytes
    alg = min(0.92 * 4 * 25, 4 * 23.6) / 3.8 / 2 * 0.7
    us = 6.8 + 2 * (7 * 0.6 + 5.0 + lam + 75.0) + x / (1000 * alg * eta) + fill * x / (fill_mib * 2**20)
    assert v.predicted[i] == pytest.approx(x / us / 1e3 * 30 / 16, rel=1e-9)
    assert (v.algorithm[i], v.protocol[i]) == ("tree", "ll")
    i = by_id["CSCS-GH200-2x1-08"]
    x = v.rows[i].bytes
    us = 1.4 * (8.4 + 2 * (14.0 + 2 * lam)) + x / (1000 * 25.0 * eta) + fill
    assert v.predicted[i] == pytest.approx(x / us / 1e3, rel=1e-9)
    assert (v.algorithm[i], v.protocol[i]) == ("ring", "simple")


def test_the_blackwell_ultra_presets_agree_with_their_racks_and_with_the_fabric():
    # GB300 NVL72 as NVIDIA advertises it (sweep/model/compute.py): 180 PFLOP/s dense BF16, 360 FP8 and 576 TB/s
    # of HBM over its 72 GPUs; one 72-GPU NVLink 5 domain of 18 trays of 4, as a GB300 row's fabric reads it.
    gb300, b300 = GPUS["gb300"], GPUS["b300"]
    assert (72 * gb300.half, 72 * gb300.fp8, 72 * gb300.hbm) == pytest.approx((180e15, 360e15, 576e12))
    fabric = fabric_of("GB300 (B300 288GB)", 4, 32, 8, 400.0, "")
    assert isinstance(fabric, Fabric)
    assert (
        (fabric.domain, fabric.nvlink) == (gb300.domain // gb300.gpus_per_node, gb300.nvlink) == (18, 900e9)
    )
    assert isinstance(fabric_of("B300", 8, 2, 8, 800.0, ""), Fabric)
    assert fabric_of("B300", 8, 2, 8, 800.0, "").preset == "b300"  # type: ignore[union-attr]
    assert (b300.half, b300.fp8, b300.domain, b300.nic_gbps) == (2250e12, 4500e12, 8, 800.0)


def test_a_row_that_another_measurement_of_the_same_inputs_contradicts(tmp_path):
    """X-01 measured 10 GB/s and 40 in place: 4 > 3 times apart, so no prediction is within 50% of both (it
    would need to be at most 15 and at least 20). Y-01 (same inputs, 29) is 2.9 times X-01's: not apart. X-02
    is 2.5 times from its in-place run; T-01 is a training row, never reported."""
    rows = read_nccl_tests(
        write(
            tmp_path,
            "X-H100-01,s,all_reduce,H100,8,8,400,2,,1048576,10.0,in-place busbw 40.0",
            "Y-H100-01,s,all_reduce,H100,8,8,400,2,,1048576,29.0,",
            "X-H100-02,s,all_reduce,H100,8,8,400,2,,2097152,10.0,in-place busbw 25.0",
            "T-H100-01,s,all_reduce,H100,8,8,400,4,,1048576,10.0,in-place busbw 40.0",
            "Z-H100-01,s,all_reduce,H100,8,8,400,4,,2097152,10.0,in-place busbw 0.00",
        )
    )
    fabrics = V.fabrics_of(rows)
    v = V.Validation(
        dataset="x",
        rows=rows,
        fabrics=fabrics,
        train=np.array([False, False, False, True, False]),
        scored=np.ones(5, bool),
        constants=np.zeros(6),
        loss=0.0,
        predicted=np.full(5, 20.0),
        algorithm=[""] * 5,
        protocol=[""] * 5,
    )
    assert V.in_place_busbw(rows[0]) == 40.0 and math.isnan(V.in_place_busbw(rows[1]))
    assert V.same_inputs(v) == [[0, 1], [2], [3], [4]]
    assert math.isnan(V.in_place_busbw(rows[4]))  # 0.00 printed: no measurement (it divided by zero)
    assert V.disagreeing(v) == [(0, [("`X-H100-01` in place", 40.0)])]
    assert V.SPREAD == 3.0


def test_hosts_of_one_nvlink_domain_carry_nothing_on_their_nics():
    # OCI's 16 GB300 trays in one rack measured 930.5 GB/s of busbw (OCIGB300-16x4-AR-02): over NVLink alone, so
    # any NICs are possible (a hunt: 1 x 100 Gbit/s a tray was refused as more than 4x what they carry); across
    # two racks the same NICs are what the row crossed, and such a busbw is refused.
    from netsweep_jax.sweep.io.nccl_tests import Measurement

    def row(hosts):
        m = Measurement("OCI-01", "s", "all_reduce", "GB300", 4, hosts, 1, 100.0, "", 2**34, 930.5, "", 2)
        return V.uncarried(m, V.fabrics_of([m])[0])

    assert row(16) == "" and row(18) == ""
    assert row(19).startswith(
        "busbw 930.5 GB/s across 19 hosts is more than 4x what the 1 NICs of 100 Gbit/s"
    )


def test_the_gb200_racks_file_is_read_and_every_row_is_priced_as_racks():
    # sweep/data/nccl_tests_gb200_racks.csv: CoreWeave's published GB200 NVL72 all-reduce on 1, 2 and 20 racks
    # (coreweave/nccl-tests@cb86553 README.md), in nccl_tests.csv's format, every row naming its source. Each is
    # priced on racks of 18 four-GPU trays (one NVLink domain a rack), none left unrepresented; held out (no
    # fit source reads it), its errors are docs/validation.md's.
    path = Path(V.__file__).resolve().parents[1] / "data" / "nccl_tests_gb200_racks.csv"
    rows = read_nccl_tests(path)
    assert len(rows) == 17 and all(r.source.startswith("coreweave/nccl-tests@cb86553") for r in rows)
    for r in rows:
        fabric = fabric_of(r.gpu, r.gpus_per_node, r.nodes, r.nics, r.nic_gbps, r.stated)
        assert isinstance(fabric, Fabric) and fabric.domain == 18 and fabric.arch == 3, r.id
    assert sorted({r.nodes for r in rows}) == [18, 36, 360]
    assert not any(r.id.startswith(V.TRAIN) for r in rows)  # no fit source's prefix: held out


def test_a_fit_whose_loss_is_not_finite_names_the_row_not_a_fit(tmp_path):
    # A row the model prices at 0 (one rank, as the reader now refuses) made the loss infinite, and the fit came
    # back at its start, reported as any other with a loss in the thousands (a hunt): said, naming the row.
    import dataclasses

    rows = read_nccl_tests(write(tmp_path, *GOOD[:2]))
    rows.append(dataclasses.replace(rows[0], id="ONE-RANK-01", gpus_per_node=1, nodes=1))
    with pytest.raises(
        InputError, match=r"the fit has no finite loss: the model cannot price ONE-RANK-01 \(predicted"
    ):
        V.fit_and_predict(rows, V.fabrics_of(rows), np.ones(3, bool))


def test_unpriced_rows_are_named_as_a_range_only_where_they_are_consecutive():
    # A hunt: "AWSEP-P5-A2A-02 .. AWSEP-P5-A2A-04" for two unpriced rows named the priced -03 between them.
    from types import SimpleNamespace

    rows = [SimpleNamespace(id=f"R-{k:02d}") for k in range(1, 6)]
    assert V._id_span(rows[1:4], [1, 2, 3]) == "R-02 .. R-04"
    assert V._id_span([rows[1], rows[3]], [1, 3]) == "R-02, R-04"
    assert V._id_span([rows[0], rows[1], rows[3]], [0, 1, 3]) == "R-01, R-02, R-04"
    assert V._id_span(rows[:1], [0]) == "R-01"
