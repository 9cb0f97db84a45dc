"""``sweep calibrate --nccl-tests``: nccl-tests' own output read (sweep/io/nccl_tests_log.py) and the fabric's
constants fitted to it (sweep/analysis/nccl_calibration.py), on logs whose numbers the model made at known
constants (tests/nccl_logs.py), so that the fit must recover them."""

import hashlib
import json
import re

import numpy as np
import pytest
from nccl_logs import DATA, KNOWN, LOGS, log_text

from helpers import invoke, one_line_error
from netsweep_jax.sweep.analysis.nccl_calibration import calibrate_logs
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.io.fabric_file import read_fabric
from netsweep_jax.sweep.io.nccl_tests_log import read_nccl_tests_log
from netsweep_jax.sweep.model.compute import named_memory_differs
from netsweep_jax.sweep.model.nccl_fabric import SHIPPED, Fabric, Unrepresented, fabric_of, turned_off_runs

ALL_REDUCE = DATA / "all_reduce_perf-2x8.log"
ALL_GATHER = DATA / "all_gather_perf-1x8.log"
NICS = ["--nics-per-node", "8", "--bw", "400"]


def test_the_committed_logs_are_what_the_model_prints_at_the_known_constants():
    for spec in LOGS:
        assert (DATA / spec[0]).read_text() == log_text(*spec), spec[0]


def test_a_log_is_read_as_nccl_tests_prints_it():
    log = read_nccl_tests_log(ALL_REDUCE)
    assert (log.collective, log.gpu, log.hosts, log.gpus_per_node) == (
        "all_reduce",
        "NVIDIA H100 80GB HBM3",
        ("node-a", "node-b"),
        8,
    )
    assert len(log.rows) == 28 and log.rows[0].bytes == 8 and log.rows[-1].bytes == 2**30
    first, last = log.rows[0], log.rows[-1]
    assert (first.time_us, first.busbw, first.line) == (37.20, 0.0, 25)
    assert (last.time_us, last.busbw) == (5760.2, 349.51)
    assert log.sha256 == hashlib.sha256(ALL_REDUCE.read_bytes()).hexdigest()
    rows = log.measurements(8, 400.0)
    assert rows[-1].nodes == 2 and rows[-1].nics == 8 and rows[-1].ranks == 16


def _variant(tmp_path, name, replace=(), add_after=None, drop=None):
    """The all-reduce log with lines changed: (old, new) text replacements, lines added after line
    ``add_after`` (1-based), lines matching ``drop`` removed."""
    text = ALL_REDUCE.read_text()
    for old, new in replace:
        assert old in text, old
        text = text.replace(old, new)
    lines = text.splitlines(keepends=True)
    if add_after is not None:
        lines[add_after[0] : add_after[0]] = add_after[1]
    if drop is not None:
        lines = [line for line in lines if drop not in line]
    path = tmp_path / name
    path.write_text("".join(lines))
    return path


def test_older_and_newer_nccl_tests_and_nccls_own_lines_are_read(tmp_path):
    # nccl-tests before 2.17: no "Collective test starting" line (the file's name says which), devices without
    # a group and with a bus id alone; NCCL INFO lines between the rows; the time as %7.0f past 10 ms.
    old = _variant(
        tmp_path,
        "all_reduce_perf.txt",
        replace=[("Group  0 ", ""), ("[0000:18:00]", "[0x18]")],
        add_after=(25, ["10-0-0-1:41210:41210 [0] NCCL INFO Channel 00/32 : 0 1 2 3 4 5 6 7\n", "\n",
                        # Open MPI's own line among the rows (mpirun 2>&1), once refused as a row (a review)
                        "[node-a:41210] 7 more processes have sent help message help-mpi-btl-openib.txt / no\n"]),
        drop="Collective test",
    )  # fmt: skip
    log = read_nccl_tests_log(old)
    assert log.collective == "all_reduce" and log.hosts == ("node-a", "node-b") and len(log.rows) == 28
    # nccl-tests -N 2 prints every size again, of the same type and operation: a second measurement each
    again = ALL_REDUCE.read_text().splitlines(keepends=True)
    rows = [line for line in again if line.split() and line.split()[0].isdigit()]
    twice = tmp_path / "all_reduce_perf-N2.log"
    twice.write_text("".join(again[: again.index(rows[-1]) + 1] + rows + again[again.index(rows[-1]) + 1 :]))
    assert len(read_nccl_tests_log(twice).rows) == 2 * len(rows)
    # 2.19's per-iteration columns (-I 1: min, max, p99, cv% after each #wrong) and no data check (N/A): read
    # by the header's names.
    lines = ALL_REDUCE.read_text().splitlines(keepends=True)
    for i, line in enumerate(lines):
        cells = line.split()
        if line.startswith("#       size"):
            each = ["i_min", "i_max", "i_p99", "i_cv%"]
            lines[i] = "# " + " ".join(cells[1:10] + each + cells[10:] + each + ["timestamp"]) + "\n"
        elif cells and cells[0].isdigit():
            each = ["N/A", "36.1", "38.0", "38.0", "1.2"]
            lines[i] = "  ".join(cells[:8] + each + cells[9:12] + each) + "  2026-12-03 14:00:00\n"
    newer = tmp_path / "newer.log"
    newer.write_text("".join(lines))
    rows = read_nccl_tests_log(newer).rows
    assert rows[0].time_us == 37.20 and rows[-1].busbw == 349.51 and len(rows) == 28


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(replace=[("  5760.2  186.41  349.51      0\n", "\n")]), "all_reduce_perf-bad.log:52: a data row of 9 fields"),
        (dict(replace=[("  342.33      0", "     abc      0")]), ":51: busbw 'abc' must be a number from 0"),
        (dict(replace=[("  328.83      0", "  328.83      3")]), ":50: #wrong 3: nccl-tests' data check failed"),
        (dict(drop="#       size"), "no column header"),
        (dict(drop="#  Rank"), "no device lines"),
        (dict(drop="node-b device  7"), "hosts of unequal GPU counts (node-a 8, node-b 7)"),
        (dict(replace=[("9a:00] NVIDIA H100 80GB HBM3", "9a:00] NVIDIA A100-SXM4-80GB")]), ":9: GPUs of several"),
        (dict(replace=[("all_reduce_perf", "broadcast_perf")]), "broadcast: the model prices all_reduce"),
        (dict(replace=[("all_reduce_perf", "allreduce_bench")]), "not one of nccl-tests'"),
        (dict(drop="Collective test"), "which collective? The log has no"),
        (dict(replace=[("NVIDIA H100 80GB HBM3", "Radeon Instinct MI300X")]), "GPU 'Radeon Instinct MI300X' has no preset"),
        # Found by a hunt, each read before as a log of good rows: an in-place data check failing; a split
        # communicator's group (rail tests: each group's busbw over its own ranks); a size again (-d all); a size
        # that is not bytes (the row was dropped in silence); the test failing before its end.
        (dict(replace=[("  328.83      0\n", "  328.83      3\n")]), ":50: #wrong 3: nccl-tests' data check failed"),
        (dict(replace=[("Rank  2 Group  0", "Rank  2 Group  2")]), ":7: rank 2 in group 2: split communicators"),
        (dict(add_after=(52, ["     8388608       2097152      int8     sum      -1    160.2   52.36   98.18      0    160.2   52.36   98.18      0\n"])),
         ":53: int8 sum after float sum (line 25): several data types or operations in one run"),
        (dict(replace=[("     8388608       2097152", "          8M       2097152")]), ":45: size '8M' must be a whole number"),
        (dict(replace=[("     8388608       2097152     float", "          8M       2097152  bfloat16")]), ":45: size '8M'"),
        (dict(add_after=(40, [" .. node-a pid 41210: Test failure common.cu:891\n"])), ":41: '.. node-a pid 41210: Test failure common.cu:891': the test failed"),
        # Found by a hunt, each fitted before: a time of 0 or past a day beside a busbw; a busbw that is not the
        # size over the time (an edited row, another run's rows appended without their header); a busbw past
        # any GPU's; a size past any buffer; digits that are not ASCII ('8²' was a traceback, '٨' read as 8);
        # nccl-tests' own count of wrong results.
        (dict(replace=[("   5760.2  186.41  349.51      0   5760.2", "     0.00  186.41  349.51      0   5760.2")]), ":52: time '0.00' must be a number above 0"),
        (dict(replace=[("   5760.2  186.41  349.51      0   5760.2", "    1e308  186.41  349.51      0   5760.2")]), ":52: time '1e308' must be a number above 0 and up to a day"),
        (dict(replace=[("  186.41  349.51      0   5760.2", "  186.41   12.00      0   5760.2")]),
         ":52: busbw 12 GB/s, where 1073741824 B in 5760.2 us of all_reduce over 16 ranks is 349.5 GB/s (size / time x 1.875"),
        (dict(add_after=(52, ["  1073741824     268435456     float     sum      -1   5760.2  186.41  100.00      0   5760.2  186.41  100.00      0\n"])), ":53: busbw 100 GB/s"),
        (dict(replace=[("  186.41  349.51      0   5760.2", "  186.41  9999.0      0   5760.2")]), ":52: busbw '9999.0' must be a number from 0 to 3600 GB/s"),
        (dict(replace=[("  1073741824     268435456", "1073741824000000000000     268435456")]), ":52: size '1073741824000000000000' must be a whole number of bytes up to 1e+18"),
        (dict(replace=[("           8             2", "          8\u00b2            2")]), ":25: size '8\u00b2' must be a whole number"),
        (dict(replace=[("           8             2", "           \u0668             2")]), ":25: size '\u0668' must be a whole number"),
        (dict(replace=[("           8             2", "           8            2\u00b2")]), ":25: count '2\u00b2' must be a whole number of elements"),
        (dict(replace=[("Out of bounds values : 0 OK", "Out of bounds values : 5 FAILED")]), ":53: 5 out-of-bounds values, FAILED"),
    ],
)  # fmt: skip
def test_a_bad_log_is_one_line_naming_the_file_and_line_and_writes_nothing(tmp_path, change, message):
    bad = _variant(tmp_path, "all_reduce_perf-bad.log" if "drop" not in change else "bad.log", **change)
    out = tmp_path / "fabric.json"
    r = invoke("calibrate", "--nccl-tests", bad, *NICS, "--out", out)
    line = one_line_error(r)
    assert message in line and str(tmp_path) in line, line
    assert not out.exists()


def test_a_log_cut_short_is_fitted_on_what_it_has_and_said(tmp_path):
    # A log without nccl-tests' closing summary (a run killed, a file copied early) is read, and the table says
    # so; one whose rows are all under the printed rounding is refused naming the file.
    from types import SimpleNamespace

    from netsweep_jax.sweep.analysis.nccl_calibration import table
    from netsweep_jax.sweep.model.nccl_fabric import SHIPPED

    assert read_nccl_tests_log(ALL_REDUCE).finished
    lines = ALL_REDUCE.read_text().splitlines(keepends=True)
    cut = tmp_path / "cut.log"
    cut.write_text("".join(lines[:39]))  # the rows up to 128 KiB
    log = read_nccl_tests_log(cut)
    assert not log.finished and log.rows[-1].bytes == 2**17
    rows = log.measurements(8, 400.0)
    n = len(rows)
    c = SimpleNamespace(logs=[log], rows=rows, predicted=np.ones(n), scored=np.zeros(n, bool), algorithm=["tree"] * n,
                        protocol=["ll"] * n, constants=SHIPPED, held=(), loss=0.0, at_bounds=(), hardware={},
                        stated_nics=8)  # fmt: skip
    said = table(c)  # type: ignore[arg-type]
    assert said[1] == (
        "  note: it ends before nccl-tests' closing '# Avg bus bandwidth' line (a run cut short?): its largest size "
        "is 128 KiB"
    )
    # A run killed while writing a row: the file ends mid-line, or the launcher's lines follow (glued to the row
    # or after it; a hunt's log read one as "#wrong STEP: the data check failed"): the row is not read and the
    # note says so. The same row with anything of nccl-tests' after it is a malformed row, refused naming its line.
    partial = lines[39][:40]
    killed = "slurmstepd: error: *** STEP 48213.0 ON node-a CANCELLED AT 2026-12-06T02:10:11 DUE TO TIME LIMIT ***\n"
    for ending in ("", "\n", "    3" + killed + "srun: error: node-a: task 0: Terminated\n", "\n" + killed):
        cut.write_text("".join(lines[:39]) + partial + ending)
        log = read_nccl_tests_log(cut)
        assert (log.cut, log.rows[-1].bytes, log.finished) == (40, 2**17, False), ending
    c = SimpleNamespace(**{**vars(c), "logs": [log]})
    assert table(c)[1].endswith("is 128 KiB; its last row (line 40), cut mid-row, is not read")  # type: ignore[arg-type]
    for after in (lines[40], "# Avg bus bandwidth    : 93.5\n"):
        cut.write_text("".join(lines[:39]) + partial + "\n" + after)
        with pytest.raises(InputError, match=":40: a data row of"):
            read_nccl_tests_log(cut)
    tiny = tmp_path / "tiny.log"
    tiny.write_text("".join(lines[:27]))  # 8 to 32 bytes: busbw 0.00
    line = one_line_error(invoke("calibrate", "--nccl-tests", tiny, *NICS, "--out", tmp_path / "f.json"))
    assert (
        line
        == f"error: --nccl-tests {tiny}: no row of busbw >= 0.1 GB/s to fit on (smaller ones are the printed rounding)"
    )
    assert not (tmp_path / "f.json").exists()


def test_what_the_log_does_not_state_is_asked_for_by_name(tmp_path):
    out = tmp_path / "fabric.json"
    line = one_line_error(invoke("calibrate", "--nccl-tests", ALL_REDUCE, "--out", out))
    assert (
        "runs on 2 hosts and nccl-tests does not print their NICs: give --nics-per-node (the NICs a host) and --bw "
        "(each NIC's Gbit/s)" in line
    )
    line = one_line_error(
        invoke("calibrate", "--nccl-tests", ALL_REDUCE, "--nics-per-node", "8", "--out", out)
    )
    assert line.endswith("give --bw (each NIC's Gbit/s)")  # not "(NICs per host, Gbit/s each)" (a hunt)
    # The data-parallel calibration's options and its file are not an nccl-tests calibration's, and back.
    line = one_line_error(
        invoke("calibrate", "--nccl-tests", ALL_REDUCE, *NICS, "--fit", "latency", "--out", out)
    )
    assert line == "error: --fit is for data-parallel measurements, not nccl-tests logs"
    line = one_line_error(
        invoke("calibrate", "--nccl-tests", ALL_REDUCE, *NICS, "--train", "x", "--out", out)
    )
    assert (
        line == "error: --train is for data-parallel measurements and large-model runs, not nccl-tests logs"
    )
    # --bw in the wrong unit: a fabric file was written of 8 NICs carrying 0.001 GB/s a host, the fit at -100%.
    with pytest.raises(
        InputError,
        match="busbw .* across 2 hosts is more than 4x what the 8 NICs of 0.001 Gbit/s its ranks reach",
    ):
        calibrate_logs([ALL_REDUCE], nics=8, nic_gbps=0.001)
    line = one_line_error(
        invoke("calibrate", "--nccl-tests", ALL_REDUCE, "--nics-per-node", "8", "--bw", "50")
    )
    assert line.startswith(f"error: {ALL_REDUCE}:47: busbw") and line.endswith(
        "(--bw in Gbit/s each)"
    )  # not "--bw FILE"
    line = one_line_error(invoke("calibrate", "examples/resnet50_measured.csv", "--bw", "400"))
    assert "--bw 400: with --nccl-tests only" in line
    line = one_line_error(invoke("calibrate", "examples/resnet50_measured.csv", ALL_REDUCE))
    assert "give one measurements CSV (several files: --nccl-tests logs only)" in line
    assert one_line_error(invoke("calibrate", "--nccl-tests", *NICS)).endswith(
        "give one nccl-tests log or more (its output, all_reduce_perf and the like)"
    )
    assert not out.exists()  # fmt: skip


def test_calibrate_recovers_the_constants_the_logs_were_made_with(tmp_path):
    out = tmp_path / "fabric.json"
    r = invoke("calibrate", "--nccl-tests", ALL_REDUCE, ALL_GATHER, *NICS, "--out", out)
    assert r.exit_code == 0, r.output
    fabric = read_fabric(out)
    eta_net, eta_nvl, latency, op, fill, fill_mib = KNOWN
    # Recovered from busbw printed to two decimals: within 1% (eta_nvl), 2% (eta_net), 5% (lambda, o) and 10%
    # (f), where the shipped fit (0.968, 0.905, 1.80, 9.71, 53.5) is 8% or more away from each; the fill's message
    # held there. eta_net is seen less: the two hosts' NVLSTree is bound by their NVLink from 16 MiB up (NCCL's
    # NVLS heads at 40 GB/s, search.cc), so only the tree's LL and LL128 rows below it cross the NICs at eta_net.
    assert fabric.eta_net == pytest.approx(eta_net, rel=0.02)
    assert fabric.eta_nvl == pytest.approx(eta_nvl, rel=0.01)
    assert fabric.latency_us == pytest.approx(latency, rel=0.05)
    assert fabric.op_latency_us == pytest.approx(op, rel=0.05)
    assert fabric.fill_us == pytest.approx(fill, rel=0.1)
    assert fabric.fill_mib == fill_mib == SHIPPED.fill_mib
    document = json.loads(out.read_text())
    assert document["hardware"] == {
        "gpu": "NVIDIA H100 80GB HBM3",
        "preset": "h100",
        "nics_per_node": 8,
        "nic_gbps": 400.0,
    }
    assert [(s["file"], s["sha256"], s["nodes"], s["rows"]) for s in document["logs"]] == [
        (p.name, hashlib.sha256(p.read_bytes()).hexdigest(), n, rows)
        for p, n, rows in ((ALL_REDUCE, 2, 28), (ALL_GATHER, 1, 21))
    ]  # fmt: skip
    # Rows under 0.1 GB/s are the printed rounding: not fitted (8 of the all-reduce's, 1 of the gather's).
    assert document["fit"]["rows_used"] == 40 and document["fit"]["rows"] == 49
    assert document["fit"]["loss"] < 1e-3 and document["fit"]["held_at_shipped"] == ["fill_mib"]
    assert document["fit"]["at_bounds"] == []  # a fit inside its ranges says nothing of them
    assert document["date"].endswith("Z") and document["command"].startswith("sweep ")
    lines = r.output.splitlines()
    assert "  1 GiB     349.51" in r.output and lines[-1] == f"wrote {out}"
    assert lines[-2].startswith("fitted on 40 of 49 rows") and "eta_net 0.81" in lines[-2]
    assert "op 5.04 us, fill 30.0 us from 10.90 MiB" in lines[-2]
    # Never overwritten without --force, refused before the fit.
    before = out.read_text()
    line = one_line_error(invoke("calibrate", "--nccl-tests", ALL_GATHER, *NICS, "--out", out))
    assert (
        line == f"error: --out {out}: file exists; pass --force to overwrite it" and out.read_text() == before
    )
    # A log of one host needs no NICs; half of them given is said not to be recorded (it was dropped in silence).
    r = invoke("calibrate", "--nccl-tests", ALL_GATHER, "--bw", "400", "--out", out, "--force")
    assert r.exit_code == 0 and json.loads(out.read_text())["logs"][0]["file"] == ALL_GATHER.name
    assert (
        "note: --bw alone is not recorded: the file records its hosts' NICs from --nics-per-node and --bw"
        in r.output
    )
    assert json.loads(out.read_text())["hardware"]["nic_gbps"] is None


def test_what_one_host_cannot_tell_is_held_at_the_shipped_fit(tmp_path, monkeypatch):
    c = calibrate_logs([ALL_GATHER], nics=None, nic_gbps=None)
    assert c.held == ("eta_net", "latency_us", "fill_us", "fill_mib")
    assert (c.constants.eta_net, c.constants.latency_us, c.constants.fill_us, c.constants.fill_mib) == (
        SHIPPED.eta_net,
        SHIPPED.latency_us,
        SHIPPED.fill_us,
        SHIPPED.fill_mib,
    )
    assert c.constants.eta_nvl == pytest.approx(KNOWN[1], rel=0.01)
    assert np.all(np.isfinite(c.predicted)) and c.scored.sum() == 20
    with pytest.raises(InputError, match="give one nccl-tests log or more"):
        calibrate_logs([], nics=None, nic_gbps=None)
    # No --out: a new results/fabric-<timestamp>.json, results/ made as grid makes it; the held constants said.
    monkeypatch.chdir(tmp_path)
    r = invoke("calibrate", "--nccl-tests", ALL_GATHER)
    assert r.exit_code == 0, r.output
    (written,) = (tmp_path / "results").glob("fabric-*.json")
    assert r.output.splitlines()[-1] == f"wrote results/{written.name}"
    held = ["eta_net", "latency_us", "fill_us", "fill_mib"]
    assert f"held at the shipped fit (the logs cannot tell): {', '.join(held)}" in r.output
    assert json.loads(written.read_text())["fit"]["held_at_shipped"] == held


def test_what_few_sizes_cannot_tell_is_held_and_a_fit_at_its_bound_is_said(tmp_path):
    """One size (128 MiB) of the two-host all-reduce tells its efficiency alone: its NVLSTree is bound by the
    hosts' NVLink there (eta_nvl; NCCL's NVLS heads at 40 GB/s), lambda's and f's columns are multiples of
    eta_nvl's, and eta_net and the one-host constant move no row; the whole log on 100 Gbit/s NICs where
    the hosts had 400 asks eta_net for more than 1: it ends at its bound, which the output and the file say."""
    lines = ALL_REDUCE.read_text().splitlines(keepends=True)
    table = [i for i, line in enumerate(lines) if line.split()[:1] == ["134217728"]]
    one = tmp_path / "one.log"
    one.write_text("".join(line for i, line in enumerate(lines) if line.startswith("#") or i in table))
    c = calibrate_logs([one], nics=8, nic_gbps=400)
    assert c.held == ("eta_net", "latency_us", "op_latency_us", "fill_us", "fill_mib") and c.scored.sum() == 1
    assert c.constants.latency_us == SHIPPED.latency_us and c.constants.eta_nvl != SHIPPED.eta_nvl
    out = tmp_path / "slow.json"
    r = invoke("calibrate", "--nccl-tests", ALL_REDUCE, "--nics-per-node", "8", "--bw", "100", "--out", out)
    assert r.exit_code == 0 and "note: eta_net ended at the edge of its range (0.3 to 1)" in r.output, (
        r.output
    )
    assert "eta_net" in json.loads(out.read_text())["fit"]["at_bounds"]


def test_a_log_given_twice_is_refused_and_half_a_nic_is_not_recorded(tmp_path):
    copy = tmp_path / "copy.log"
    copy.write_bytes(ALL_GATHER.read_bytes())
    with pytest.raises(InputError, match=f"{copy}: the same log as {ALL_GATHER} given before"):
        calibrate_logs([ALL_GATHER, copy], nics=None, nic_gbps=None)
    # The same run copied with other line endings or a launcher's labels is the same run (a hunt: a CRLF copy
    # was fitted as a second log).
    crlf = tmp_path / "crlf.log"
    crlf.write_bytes(ALL_GATHER.read_bytes().replace(b"\n", b"\r\n"))
    with pytest.raises(InputError, match=f"{crlf}: the same log as {ALL_GATHER} given before"):
        calibrate_logs([ALL_GATHER, crlf], nics=None, nic_gbps=None)
    with pytest.raises(InputError, match="its rows would count twice"):
        calibrate_logs([ALL_GATHER, ALL_GATHER], nics=None, nic_gbps=None)
    from netsweep_jax.sweep.analysis.nccl_calibration import hardware
    from netsweep_jax.sweep.analysis.nccl_validation import fabrics_of

    log = read_nccl_tests_log(ALL_GATHER)
    (fabric, *_) = fabrics_of(log.measurements(None, None))
    recorded = hardware(log, fabric, None, 400.0)
    assert (recorded["nics_per_node"], recorded["nic_gbps"]) == (None, None)
    assert hardware(log, fabric, 8, 400.0)["nics_per_node"] == 8


def _edited(tmp_path, name, edit, source=ALL_REDUCE):
    path = tmp_path / name
    path.write_text(edit(source.read_text()))
    return path


def test_rows_of_size_0_are_skipped(tmp_path):
    """nccl-tests prints size 0 where a small size split over many ranks rounds to no element: nothing sent."""
    first = "           8             2     float     sum      -1"

    def zeros(text):
        lines = text.splitlines(keepends=True)
        at = next(i for i, line in enumerate(lines) if line.startswith(first))
        zero = "           0             0     float     sum      -1" + lines[at][len(first) :]
        return "".join(lines[:at] + [zero, zero] + lines[at:])

    log = read_nccl_tests_log(_edited(tmp_path, "all_reduce_perf.log", zeros))
    assert len(log.rows) == 28 and log.rows[0].bytes == 8


def test_two_runs_in_one_file_are_refused(tmp_path):
    """Two runs appended to one file (>>) were read as one, the first run's rows priced on the second's hosts."""
    twice = _edited(tmp_path, "twice.log", lambda text: text + text)
    with pytest.raises(InputError, match=r"twice.log:\d+: a second test \(all_reduce_perf again\)"):
        read_nccl_tests_log(twice)
    starting = "# Collective test starting: all_reduce_perf\n"
    older = _edited(tmp_path, "all_reduce_perf.log", lambda text: (text + text).replace(starting, ""))
    with pytest.raises(InputError, match=r"rank 0 again \(first at line \d+\): a second run"):
        read_nccl_tests_log(older)


def test_a_launchers_label_on_every_line_is_read_past(tmp_path):
    # pdsh's and clush's host (``node-a: ``) too (a hunt: "no column header"), or its IPv4 address (a hunt)
    # Open MPI 5's PRRTE --output tag-fullname, tag-detailed and rank (openpmix/prrte#1407; a hunt: "no column
    # header")
    prrte = (
        "[prterun-gpu-001-41210@1,0]<stdout>: ",
        "[1,0][gpu-001:41210]<stdout>: ",
        "[0]<stdout>: ",
        "[0]<stdout> ",
    )
    for prefix in ("0: ", "[1,0]<stdout>:", "[0] ", "node-a: ", "gpu-017.cluster: ", "10.0.0.1: ", *prrte):
        labelled = tmp_path / "l.log"
        labelled.write_text("".join(prefix + line for line in ALL_REDUCE.read_text().splitlines(True)))
        assert read_nccl_tests_log(labelled).rows == read_nccl_tests_log(ALL_REDUCE).rows


def test_a_card_of_a_presets_chip_with_other_memory_records_no_preset(tmp_path):
    # A hunt: Leonardo's A100-SXM-64GB was recorded as the a100 preset (80 GB), and a plan on the file put 66 GB
    # on each GPU, unsaid.
    assert named_memory_differs("NVIDIA A100-SXM-64GB", "a100") and named_memory_differs(
        "NVIDIA H100 SXM5 94GB", "h100"
    )
    for name, key in [("NVIDIA H100 80GB HBM3", "h100"), ("NVIDIA A100-SXM4-80GB", "a100"), ("NVIDIA B200", "b200"),
                      ("Tesla V100-SXM2-16GB", "v100-16"), ("NVIDIA H100 96GB HBM2e", "h100-hbm2e")]:  # fmt: skip
        assert not named_memory_differs(name, key), name
    small = _edited(tmp_path, "m.log", lambda t: t.replace("NVIDIA H100 80GB HBM3", "NVIDIA H100 64GB HBM3"))
    r = invoke("calibrate", "--nccl-tests", small, *NICS, "--out", tmp_path / "m.json")
    assert r.exit_code == 0, r.output
    assert json.loads((tmp_path / "m.json").read_text())["hardware"]["preset"] is None
    assert (
        "note: NVIDIA H100 64GB HBM3 is the h100 preset's chip with other memory than its 80 GiB: the fabric file "
        "records no GPU preset" in r.output
    )


def test_hosts_no_preset_system_has_are_refused(tmp_path):
    """A PCIe card is no NVSwitch system (priced as one: 6.5x its measured busbw); sixteen GPUs on one host name
    (two containers) are no H100 host."""
    pcie = _edited(tmp_path, "p.log", lambda t: t.replace("NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe"))
    line = one_line_error(invoke("calibrate", "--nccl-tests", pcie, *NICS, "--out", tmp_path / "p.json"))
    assert "GPU 'NVIDIA H100 PCIe' is a PCIe card: no NVSwitch" in line
    # A whole word names the chip (a hunt: an RTX A1000 was fitted and written as an A100 system).
    rtx = _edited(tmp_path, "r.log", lambda t: t.replace("NVIDIA H100 80GB HBM3", "NVIDIA RTX A1000"))
    line = one_line_error(invoke("calibrate", "--nccl-tests", rtx, *NICS, "--out", tmp_path / "r.json"))
    assert "GPU 'NVIDIA RTX A1000' has no preset" in line

    def one_name(text, bus="[0000:"):
        return "".join(
            line.replace("node-b", "node-a").replace("[0000:", bus) if "node-b device" in line else line
            for line in text.splitlines(True)
        )

    same = _edited(tmp_path, "s.log", lambda t: one_name(t, "[0001:"))
    line = one_line_error(invoke("calibrate", "--nccl-tests", same, *NICS, "--out", tmp_path / "s.json"))
    assert "16 GPUs on one host; the h100 system's hosts hold 8" in line
    # Two containers of one name each holding 4 of their host's GPUs read as one host of 8 (a hunt: fitted and
    # written); NCCL never runs one GPU twice in a communicator, so a bus id again on one host name is refused.
    buses = ("18", "2a", "3a", "5d")
    devices = "".join(
        f"#  Rank {r:2d} Group  0 Pid  {41210 + r} on  localhost device {r % 4:2d} [0000:{buses[r % 4]}:00] "
        "NVIDIA H100 80GB HBM3\n"
        for r in range(8)
    )
    four = _edited(tmp_path, "four.log", lambda t: re.sub(r"(#  Rank .*\n)+", devices, t, count=1))
    line = one_line_error(invoke("calibrate", "--nccl-tests", four, *NICS, "--out", tmp_path / "s.json"))
    assert (
        "four.log:9: rank 4 on localhost [0000:18:00], the GPU of rank 0 (line 5): hosts of one name" in line
    )
    assert not list(tmp_path.glob("*.json"))
    # Older nccl-tests print the bus alone ([0x00]), which every GPU of a host shares where each has a PCI domain
    # of its own (Azure's ND VMs): no GPU named twice there (a review: refused as containers of one name).
    old = _edited(tmp_path, "all_gather_perf.log", lambda t: re.sub(r"Group  0 (.*)\[0000:..:00\]", r"\1[0x00]", t),
                  ALL_GATHER)  # fmt: skip
    assert "[0x00]" in old.read_text() and read_nccl_tests_log(old).gpus_per_node == 8
    # ... but two containers of one name whose GPUs are on several buses list each bus twice, in that format too (a
    # hunt: read as one host of 8 and fitted, eta_nvl 0.39 for 0.75)
    older = _edited(tmp_path, "four-old.log", lambda t: re.sub(r"\[0000:(..):00\]", r"[0x\1]", t), four)
    line = one_line_error(invoke("calibrate", "--nccl-tests", older, *NICS, "--out", tmp_path / "s.json"))
    assert "four-old.log:9: rank 4 on localhost [0x18], the GPU of rank 0 (line 5): hosts of one name" in line


def test_what_is_not_one_run_of_every_rank_under_nccls_own_choice_is_refused(tmp_path):
    """Found by a hunt, each fitted and written before with exit 0: a log of a forced algorithm (the fit prices
    NCCL's own choice), ranks missing from the device lines (read as fewer hosts), an all-gather whose counts say
    more ranks than its device lines list, one rank (busbw 0, refused later as "the printed rounding"), and
    processes that each ran a test of their own (nccl-tests without MPI, told "a second run")."""
    forced = _variant(tmp_path, "all_reduce_perf-f.log", add_after=(24, [
        "node-a:41210:41210 [0] NCCL INFO NCCL_ALGO set by environment to Ring\n"]))  # fmt: skip
    with pytest.raises(
        InputError, match=r"f.log:25: NCCL_ALGO set by environment to Ring: NCCL's choice of algo"
    ):
        read_nccl_tests_log(forced)
    # CollNet turned on changes NCCL's choice as NCCL_ALGO does; NVLS or PAT turned off is the fit's to judge
    # (below); a channel count set is user tuning the model does not price (the published rows tuned so are scored
    # by validate --nccl). The values that leave NCCL's default are read past.
    collnet = _variant(tmp_path, "all_reduce_perf-e.log", add_after=(24, [
        "node-a:41210:41210 [0] NCCL INFO NCCL_COLLNET_ENABLE set by environment to 1.\n"]))  # fmt: skip
    with pytest.raises(InputError, match=r"e.log:25: NCCL_COLLNET_ENABLE set by environment to 1: CollNet \(network "
                       r"SHARP\) was turned on, where"):  # fmt: skip
        read_nccl_tests_log(collnet)
    for setting in ("NCCL_NVLS_ENABLE set by environment to 1.", "NCCL_COLLNET_ENABLE set by environment to 0.",
                    "NCCL_NVLS_ENABLE set by environment to 0.", "NCCL_MAX_NCHANNELS set by environment to 16."):  # fmt: skip
        log = _variant(
            tmp_path,
            "all_reduce_perf-d.log",
            add_after=(24, [f"node-a:41210:41210 [0] NCCL INFO {setting}\n"]),
        )
        assert read_nccl_tests_log(log).nodes == 2
    # NVLS turned off where NCCL would run it (H100 hosts of 8 ranks) is refused by the fit before it fits, naming
    # its line (a hunt: fitted as NCCL's choice, eta_net 0.61 for 0.80); on an A100, which has no NVLS, it changes
    # nothing and is read (a review: refused)
    from netsweep_jax.sweep.analysis.nccl_calibration import _check_turned_off

    off = _variant(tmp_path, "all_reduce_perf-n.log", add_after=(24, [
        "node-a:41210:41210 [0] NCCL INFO NCCL_NVLS_ENABLE set by environment to 0.\n"]))  # fmt: skip
    with pytest.raises(InputError, match=r"n.log:25: NCCL_NVLS_ENABLE set by environment to 0: NVLink SHARP \(NVLS\) "
                       r"was turned off, where the fit prices NCCL's own choice"):  # fmt: skip
        calibrate_logs([off], nics=8, nic_gbps=400.0)
    a100 = read_nccl_tests_log(_edited(tmp_path, "all_reduce_perf-a.log",
                                       lambda t: t.replace("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"), off))  # fmt: skip
    assert a100.turned_off == ((25, "NCCL_NVLS_ENABLE", "0"),)
    _check_turned_off(a100, fabric_of(a100.gpu, 8, 2, 8, 400.0, ""))
    # NVLS as the model's NCCL runs it: an all-reduce, or an all-gather or reduce-scatter inside one host; never an
    # all-to-all, nor a gather across hosts (a review: refused there)
    import dataclasses

    h100 = read_nccl_tests_log(off)
    fabric = fabric_of(h100.gpu, 8, 2, 8, 400.0, "")
    for collective, hosts in (("alltoall", 2), ("all_gather", 2), ("all_gather", 1)):
        changed = dataclasses.replace(h100, collective=collective, hosts=h100.hosts[:hosts])
        if hosts == 1:
            with pytest.raises(InputError, match="NVLink SHARP"):
                _check_turned_off(changed, fabric)
        else:
            _check_turned_off(changed, fabric)
    # nor an all-reduce across hosts of one NIC: NCCL's NVLS takes one head a NIC across nodes, and runs on two or
    # more (search.cc, tuning.cc; a review: refused there)
    _check_turned_off(h100, fabric_of(h100.gpu, 8, 2, 1, 400.0, ""))
    with pytest.raises(InputError, match="NVLink SHARP"):
        _check_turned_off(h100, fabric_of(h100.gpu, 8, 2, 2, 400.0, ""))
    # and so is a published row that says NVLS was off (fabric_of refuses a choice the model cannot price)
    stated = "NVLS disabled (NCCL_NVLS_ENABLE=0)"
    assert isinstance(fabric_of("H100 SXM", 8, 2, 1, 400.0, stated), Fabric)
    assert isinstance(fabric_of("H100 SXM", 8, 2, 2, 400.0, stated), Unrepresented)
    # NCCL's nodes are NVLink domains (a GB200 rack's trays one node): two trays of one NIC each are one domain
    # of 8 GPUs, where NVLS runs whatever the NICs (a review: the rule had counted hosts); an all-gather too
    hopper, blackwell = 2, 3
    for collective in ("all_reduce", "all_gather"):
        assert turned_off_runs("NCCL_NVLS_ENABLE", blackwell, True, collective, 4, 2, 1, domain_hosts=18)
        assert not turned_off_runs("NCCL_NVLS_ENABLE", hopper, True, collective, 8, 2, 1, domain_hosts=1)
    gap = _variant(tmp_path, "all_reduce_perf-g.log", drop="Rank  5 Group")
    with pytest.raises(
        InputError, match=r"g.log: device lines for ranks up to 15 without rank 5: a log filtered"
    ):
        read_nccl_tests_log(gap)
    half = _edited(
        tmp_path, "all_gather_perf-h.log", lambda t: re.sub(r"#  Rank  [4-7] .*\n", "", t), ALL_GATHER
    )
    with pytest.raises(
        InputError, match=r"h.log:13: 1024 B of 32 float a rank is 8 ranks, where the device lines list 4"
    ):
        read_nccl_tests_log(half)
    one = _edited(tmp_path, "all_reduce_perf-1.log", lambda t: re.sub(r"#  Rank +([1-9]|1\d) .*\n", "", t))
    with pytest.raises(
        InputError, match=r"1.log: one rank \(one device line\): a collective of one GPU crosses no"
    ):
        read_nccl_tests_log(one)
    lines = ALL_GATHER.read_text().splitlines(keepends=True)
    alone = _edited(tmp_path, "alone.log", lambda t: "".join(lines[:5]) + t, ALL_GATHER)
    with pytest.raises(InputError, match=r"alone.log:6: a second test \(all_gather_perf again\) before any result: "
                       "processes that each ran a test of their own"):  # fmt: skip
        read_nccl_tests_log(alone)
    # Older nccl-tests (no "Collective test starting" line) under a name that holds the binary's among others.
    for name in ("nccl_all_reduce_perf.log", "2x8_all_reduce_perf.txt"):
        named = _variant(tmp_path, name, drop="Collective test")
        assert read_nccl_tests_log(named).collective == "all_reduce", name
    # A host's total given as each NIC's rate (8 x 400) was fitted and kept for every later plan.
    line = one_line_error(
        invoke("calibrate", "--nccl-tests", ALL_REDUCE, "--nics-per-node", "8", "--bw", "3200")
    )
    assert line == (
        "error: --bw 3200: each NIC's rate (Gbit/s), at most 1600 (no NIC runs faster than 800 today); a host's "
        "3200 over 8 NICs is 400 each"
    )


def test_a_low_or_small_message_eta_net_is_said_with_what_may_cause_it():
    # A hunt: a log cut at 4 MiB fitted eta_net 0.313 and NICs given 8 x 400 Gbit/s for 4 x 100 fitted 0.320,
    # each in silence (the edge note only came within 0.007 of the range's 0.3). Said now; nothing where eta_net
    # is held at the shipped fit or said at its edge, and nothing for a healthy fit on large messages.
    from types import SimpleNamespace

    from netsweep_jax.sweep.analysis.nccl_calibration import LARGE_MESSAGE, _eta_net_notes

    def calibration(eta_net, largest, held=(), at_bounds=(), nodes=2):
        rows = [SimpleNamespace(bytes=b) for b in (8, largest)]
        log = SimpleNamespace(nodes=nodes, rows=rows)
        return SimpleNamespace(
            constants=SimpleNamespace(eta_net=eta_net), logs=[log], held=held, at_bounds=at_bounds
        )

    cut, low = _eta_net_notes(calibration(0.313, 4 * 2**20))
    assert "eta_net 0.313 is set by messages of at most 4 MiB across nodes" in cut
    assert (
        "is low (the shipped fit, on published InfiniBand hosts: 0.97)" in low
        and "--nics-per-node and --bw" in low
    )
    assert _eta_net_notes(calibration(0.882, LARGE_MESSAGE)) == []
    assert _eta_net_notes(calibration(0.313, 4 * 2**20, held=("eta_net",))) == []
    assert _eta_net_notes(calibration(0.3, 4 * 2**20, at_bounds=("eta_net",))) == []
    assert _eta_net_notes(calibration(0.9, 2**20, nodes=1)) == []  # inside one host: no eta_net to set


def test_rows_of_another_collective_than_the_files_name_are_refused(tmp_path):
    # A hunt: an all-gather's log (nccl-tests before 2.17 print no binary) saved as all_reduce_perf.log was
    # fitted as an all-reduce (eta_nvl 0.517 where 0.750 is right); its rows' redop, none, says it is not one.
    text = (DATA / "all_gather_perf-1x8.log").read_text()
    path = tmp_path / "all_reduce_perf.log"
    path.write_text("".join(line for line in text.splitlines(True) if "Collective test" not in line))
    with pytest.raises(InputError, match=r"redop none, where all_reduce reduces \(sum, prod, ...\)"):
        read_nccl_tests_log(path)


def test_a_sendrecv_log_prints_an_operation_it_does_not_apply(tmp_path):
    # A hunt: nccl-tests' sendrecv prints the operation it was given (sum by default) and every such log was
    # refused as "a log of another test"; all-gather's none and all-reduce's sum are still checked (above).
    path = tmp_path / "sendrecv_perf.log"
    path.write_text(log_text("sendrecv_perf.log", "sendrecv_perf", "sendrecv", "sum", 2, 8, 1024))
    log = read_nccl_tests_log(path)
    assert log.collective == "sendrecv" and len(log.rows) == 21
    fit = calibrate_logs([path], nics=8, nic_gbps=400.0)
    measured = np.array([r.busbw for r in log.rows])
    big = measured >= 1  # the log prints busbw to 0.01 GB/s
    assert len(fit.rows) == len(log.rows) and np.allclose(fit.predicted[big], measured[big], rtol=0.02)


@pytest.mark.parametrize(
    "command", [("calibrate",), ("validate",), ("validate", "--llm"), ("validate", "--nccl")]
)
def test_a_log_given_where_a_csv_is_read_says_what_reads_it(tmp_path, monkeypatch, command):
    # A hunt: the log's first row was read as a CSV header ("missing column(s) ...; header is 8  2  float ...").
    monkeypatch.chdir(tmp_path)
    line = one_line_error(invoke(*command, ALL_REDUCE, *(("--out", "v") if "--nccl" in command else ())))
    assert "a log nccl-tests printed, where a CSV" in line and "sweep calibrate --nccl-tests reads" in line
    assert list(tmp_path.iterdir()) == []


def test_the_file_records_the_cards_own_preset():
    # A hunt: an A100-SXM4-40GB's logs were recorded as a100 (80 GB), and a plan on the file fitted 44 GB a GPU.
    for name, preset in (("NVIDIA A100-SXM4-40GB", "a100-40"), ("Tesla V100-SXM2-16GB", "v100-16")):
        assert fabric_of(name, 8, 1, None, None, "").preset == preset
    assert fabric_of("NVIDIA A100-SXM4-80GB", 8, 1, None, None, "").preset == "a100"


def test_the_file_records_the_nics_the_fits_ranks_reached():
    # A hunt: 4 ranks a host of an H100 system (8 GPUs) reach 2 of 4 NICs in the fit, but the file recorded 4, and
    # grid gave its hosts of 4 GPUs all 4: faster than the logs it was fitted on. The file now records the NICs
    # the fit priced (its hosts' GPUs are the logs' ranks a host), and a sweep's hosts get what the fit reached.
    from types import SimpleNamespace

    from netsweep_jax.sweep.analysis.nccl_calibration import _recorded_nics
    from netsweep_jax.sweep.analysis.nccl_validation import fabrics_of
    from netsweep_jax.sweep.io.nccl_tests import Measurement

    def rows(per_host, hosts):
        return [Measurement("r", "s", "all_reduce", "NVIDIA H100 80GB HBM3", per_host, hosts, 4, 400.0, "", 2**20,
                            1.0, "", 0)]  # fmt: skip

    def recorded(*logs):
        measured = [m for per_host, hosts in logs for m in rows(per_host, hosts)]
        shaped = [SimpleNamespace(gpus_per_node=g, nodes=h) for g, h in logs]
        return _recorded_nics(shaped, measured, fabrics_of(measured), 4)

    assert recorded((4, 2)) == 2  # ceil(4 x 4 / 8)
    assert (
        recorded((8, 2)) == 4 and recorded((4, 2), (4, 1)) == 2
    )  # a whole host; a one-host log's ranks use none
    assert recorded((4, 2), (2, 2)) == 4  # logs of two counts a host: no hosts recorded, the NICs as given


def test_hosts_of_four_gpus_and_four_nics_are_told_by_gpus_per_node(tmp_path):
    # A hunt: two hosts of 4 H100s and 4 NICs could not be calibrated: their 4 ranks were taken to reach 2 of the
    # 4 NICs (an H100 system's hosts hold 8), the fit ended at a bound (eta_net 0.996 for 0.80) and the file said 2
    # NICs. --gpus-per-node 4 says the hosts: the ranks reach all 4 and the constants the log was made with come
    # back (the log: 4 ranks a host reaching 4 NICs, tests/nccl_logs.py).
    log = tmp_path / "all_reduce_perf-2x4.log"
    log.write_text(log_text(log.name, "all_reduce_perf", "all_reduce", "sum", 2, 4, 8))
    r = invoke(
        "calibrate", "--nccl-tests", log, "--nics-per-node", "4", "--bw", "400", "--out", tmp_path / "a.json"
    )
    assert r.exit_code == 0 and "give --gpus-per-node 4)" in r.output, r.output
    out = tmp_path / "b.json"
    r = invoke("calibrate", "--nccl-tests", log, "--nics-per-node", "4", "--bw", "400", "--gpus-per-node", "4",
               "--out", out)  # fmt: skip
    assert r.exit_code == 0 and "note: 4 ranks a host reach" not in r.output, r.output
    written = json.loads(out.read_text())
    assert written["hardware"]["nics_per_node"] == 4 and written["logs"][0]["gpus_per_node"] == 4
    assert abs(written["constants"]["eta_net"] - KNOWN[0]) < 0.01, written["constants"]
    # the hosts as given are the file's: hosts of 6 GPUs and 8 NICs read back as such (a review: recorded as the
    # logs' 4 GPUs with the 6 NICs their ranks reached, and a sweep's 6-GPU hosts got 9)
    assert written["hardware"]["gpus_per_node"] == 4
    six = tmp_path / "six.json"
    r = invoke("calibrate", "--nccl-tests", log, "--nics-per-node", "8", "--bw", "400", "--gpus-per-node", "6",
               "--out", six)  # fmt: skip
    assert r.exit_code == 0 and "note: 4 ranks a host reach" not in r.output, r.output
    hosts = read_fabric(six)
    assert (hosts.gpus_per_node, hosts.nics_per_node) == (6, 8), hosts
    for value, said in (
        ("2", "--gpus-per-node 2: the GPUs a host holds, fewer than the 4 ranks"),
        ("2,4", "--gpus-per-node 2,4: give one value"),
        ("16", "--gpus-per-node 16: the GPUs a host holds, more than the NVIDIA H100 80GB HBM3 system's 8"),
    ):
        r = invoke("calibrate", "--nccl-tests", log, "--nics-per-node", "4", "--bw", "400", "--gpus-per-node",
                   value, "--out", tmp_path / "c.json")  # fmt: skip
        assert r.exit_code == 2 and said in r.output, r.output
    r = invoke("calibrate", tmp_path / "m.csv", "--gpus-per-node", "4")
    assert r.exit_code == 2 and "--gpus-per-node 4: with --nccl-tests only" in r.output, r.output
    assert not (tmp_path / "c.json").exists()


def test_a_gpu_whose_system_is_not_its_dies_preset_records_no_preset(tmp_path, monkeypatch):
    # A hunt: a GH200's logs (an H100 die; 96 GB or more, no NVSwitch) were recorded as preset h100, and a plan on
    # the file fitted layouts to a DGX H100's 80 GB cards. NCCL's tables still read the die; the file names the
    # GPU as the log does and sets no sweep's GPU. An A100-SXM4-40GB's logs still record a100-40.
    import nccl_logs

    from netsweep_jax.sweep.analysis.nccl_calibration import hardware

    for gpu, preset in (("NVIDIA GH200 480GB", None), ("NVIDIA A100-SXM4-40GB", "a100-40")):
        monkeypatch.setattr(nccl_logs, "GPU", gpu)
        path = tmp_path / "all_reduce_perf.log"
        path.write_text(log_text(path.name, "all_reduce_perf", "all_reduce", "sum", 2, 4, 1024))
        log = read_nccl_tests_log(path)
        fabric = fabric_of(log.gpu, 4, 2, 4, 200.0, "")
        assert fabric.preset == ("h100" if preset is None else preset)  # NCCL's tables: the die
        assert hardware(log, fabric, 4, 200.0) == {
            "gpu": gpu,
            "preset": preset,
            "nics_per_node": 4,
            "nic_gbps": 200.0,
        }
    # End to end (a review): the note names the GPU, not "the None system", and a sweep on the file says that the
    # logs' GPU is not its own.
    monkeypatch.setattr(nccl_logs, "GPU", "NVIDIA GH200 480GB")
    path = tmp_path / "gh200.log"
    path.write_text(log_text(path.name, "all_reduce_perf", "all_reduce", "sum", 2, 2, 1024))
    r = invoke(
        "calibrate", "--nccl-tests", path, "--nics-per-node", "4", "--bw", "200", "--out", tmp_path / "f.json"
    )
    assert r.exit_code == 0 and "on the NVIDIA GH200 480GB system's hosts" in r.output, r.output
    constants = read_fabric(tmp_path / "f.json")
    assert (constants.gpu, constants.fitted_on) == ("", "NVIDIA GH200 480GB")
    from netsweep_jax.sweep.engine.grid import make_grid

    said = make_grid("gpt2-xl", fabric=constants, gpu="h100").assumed
    assert (
        "the fabric file's logs ran on NVIDIA GH200 480GB, its constants taken as they are for h100s" in said
    )


def test_a_row_that_nccls_own_lines_split_is_read_whole(tmp_path):
    # With NCCL_DEBUG=INFO, NCCL's lines of the connections it makes as a size is first timed land inside that
    # size's row (nccl-tests prints its first five columns before timing it): the row had been refused as "time
    # '[0]' must be a number", its times skipped (a hunt). Joined again, the log reads as the unsplit one.
    text = ALL_REDUCE.read_text()
    whole = "    16777216       4194304     float     sum      -1    208.9   80.31  150.57      0    208.9   80.31  150.57      0\n"
    assert whole in text
    split = (
        "    16777216       4194304     float     sum      -1node-a:41210:41300 [0] NCCL INFO Channel 00/1 : 0[0] -> "
        "8[0] [send] via NET/IB/0/GDRDMA\nnode-a:41210:41300 [0] NCCL INFO Connected NVLS\n"
        "    208.9   80.31  150.57      0    208.9   80.31  150.57      0\n"
    )
    path = tmp_path / "all_reduce_perf.log"
    path.write_text(text.replace(whole, split))

    def measured(log):  # each row but its line (the split adds two)
        return [(r.bytes, r.time_us, r.busbw) for r in log.rows]

    assert measured(read_nccl_tests_log(path)) == measured(read_nccl_tests_log(ALL_REDUCE))
    # a head that no line of times follows is still a malformed row, named by its line
    path.write_text(text.replace(whole, split.rsplit("\n", 2)[0] + "\n"))
    with pytest.raises(InputError, match=r"all_reduce_perf.log:\d+: "):
        read_nccl_tests_log(path)


def test_a_time_printed_to_few_digits_or_a_cputime_of_0_is_a_measurement(tmp_path):
    # A review: nccl-tests 2.17 prints a time that outgrows its column as %7.1e (two digits, 4% off at worst),
    # which the rate check had refused as an edited row; -C's cputime (a launch's share of -G's graph) may print
    # 0.00. The check reads each cell's own digits.
    short = _variant(
        tmp_path,
        "all_reduce_perf-e.log",
        replace=[("   5760.2  186.41  349.51      0   5760.2", "  5.8e+03  186.41  349.51      0   5760.2")],
    )
    assert read_nccl_tests_log(short).rows[-1].time_us == 5800.0
    cpu = _variant(
        tmp_path,
        "all_reduce_perf-c.log",
        replace=[
            ("  time   algbw   busbw #wrong", "  cputime   algbw   busbw #wrong"),
            ("   5760.2  186.41  349.51      0   5760.2", "     0.00  186.41  349.51      0   5760.2"),
        ],
    )
    assert read_nccl_tests_log(cpu).rows[-1].time_us == 0.0


def test_the_hosts_bus_factor_is_the_kernels():
    # the rate check's (sweep.io.nccl_tests.BUS_FACTOR, on the host) and the fit's (kernels.nccl.bus_factor)
    from netsweep_jax.kernels import nccl
    from netsweep_jax.sweep.io.nccl_tests import BUS_FACTOR

    assert tuple(BUS_FACTOR) == nccl.COLLECTIVES
    for code, name in enumerate(nccl.COLLECTIVES):
        for ranks in (2, 3, 8, 16, 1024):
            assert float(nccl.bus_factor(code, ranks)) == pytest.approx(BUS_FACTOR[name](ranks), rel=1e-6)


def test_a_log_named_after_another_test_says_so(tmp_path):
    # nccl-tests before 2.17 print no binary, so the file's name says the collective. A hunt: an all-reduce's log
    # named reduce_scatter_perf.log was called "filtered or cut", and a reduce-scatter's named all_reduce_perf.log
    # "edited"; each now names the test its numbers are of.
    unnamed = _edited(tmp_path, "reduce_scatter_perf.log", lambda t: t.split("\n", 1)[1])
    with pytest.raises(
        InputError, match=r"a count of the whole buffer, as all_reduce, .*: a log of another test\?"
    ):
        read_nccl_tests_log(unnamed)
    scatter = tmp_path / "reduce_scatter_perf-made.log"
    scatter.write_text(log_text(scatter.name, "reduce_scatter_perf", "reduce_scatter", "sum", 2, 8, 1024))
    assert read_nccl_tests_log(scatter).rows  # the reduce-scatter's own log reads
    misnamed = _edited(tmp_path, "all_reduce_perf.log", lambda t: t.split("\n", 1)[1], scatter)
    with pytest.raises(InputError, match=r"x 1.875, .*\): a log of reduce_scatter\? Name the file"):
        read_nccl_tests_log(misnamed)
    # A log that names its test (its first line) is that test's: a rename would not help, and none is advised (a
    # review)
    named = _edited(
        tmp_path, "mine.log", lambda t: t.replace("reduce_scatter_perf", "all_reduce_perf", 1), scatter
    )
    with pytest.raises(
        InputError, match=r"x 1.875, .*\): the row was edited, or its columns are another run's"
    ):
        read_nccl_tests_log(named)
