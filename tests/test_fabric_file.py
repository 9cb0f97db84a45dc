"""Fabric files (sweep/io/fabric_file.py) and ``--fabric FILE`` on ``sweep grid`` and ``sweep plan
--collectives nccl``: a bad file refused by its key, the option refused where nothing reads it, its constants
in the layout kernel's inputs (one compile for every fabric), and what they change."""

import dataclasses
import json

import numpy as np
import pytest
from layout_cases import LLAMA_8B

from helpers import invoke, one_line_error
from netsweep_jax import sweep
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.engine.compiled import GPU_FIELDS
from netsweep_jax.sweep.engine.layouts import make_layout_grid
from netsweep_jax.sweep.io.fabric_file import fabric_document, read_fabric, write_fabric
from netsweep_jax.sweep.model.fabric_constants import NAMES, FabricConstants
from netsweep_jax.sweep.model.nccl_fabric import SHIPPED

NCCL = ["--collectives", "nccl"]


OWN = (0.5, 0.7, 8.0, 4.0, 30.0, 8.0)  # a fabric file's constants, in NAMES' order


def fabric(tmp_path, name="fabric.json", values=OWN, **changes):
    """A fabric file of constants ``values``, its object changed by ``changes`` (a key to None: removed)."""
    document = fabric_document(
        FabricConstants(**dict(zip(NAMES, values)), source=""),
        hardware={"gpu": "NVIDIA H100 80GB HBM3", "preset": "h100", "nics_per_node": 8, "nic_gbps": 400.0},
        logs=[],
        fit={"loss": 0.0, "rows_used": 0, "rows": 0},
        date="2026-12-03T15:00:00Z",
        command="test",
    )
    for key, value in changes.items():
        part, _, leaf = key.partition(".")
        target = document[part] if leaf else document
        if value is None:
            del target[leaf or part]
        else:
            target[leaf or part] = value
    path = tmp_path / name
    path.write_text(json.dumps(document))
    return path


def test_a_fabric_file_is_read_and_written_whole(tmp_path):
    path = fabric(tmp_path)
    # The hardware it records is said with its constants (a sweep of other GPUs or NICs takes them as they are).
    assert read_fabric(path) == FabricConstants(
        **dict(zip(NAMES, OWN)),
        source=str(path),
        fitted_on="h100",
        gpu="h100",
        nics_per_node=8.0,
        nic_gbps=400.0,
    )
    out = tmp_path / "written.json"
    document = json.loads(path.read_text())
    assert write_fabric(out, document, force=False) == out and json.loads(out.read_text()) == document
    with pytest.raises(ValueError):  # NaN is never written (json refuses it before any file is made)
        write_fabric(tmp_path / "nan.json", {**document, "fit": {"loss": float("nan")}}, force=False)
    assert not (tmp_path / "nan.json").exists()


@pytest.mark.parametrize("command", [("calibrate",), ("validate",), ("validate", "--llm")])
def test_a_fabric_file_or_other_json_given_where_a_csv_is_read_says_so(tmp_path, command):
    # A hunt: a fabric file given to calibrate was "fab.json:2: expected 1 cells, got 2".
    other = tmp_path / "other.json"
    other.write_text('{"rows": [1, 2]}')
    for path, said in (
        (fabric(tmp_path), "a fabric file (grid, plan, need and compare take it as --fabric)"),
        (other, "a JSON document"),
    ):
        line = one_line_error(invoke(*command, path))
        assert line.startswith(f"error: {path}: {said}, where a CSV ") and line.endswith(" is expected"), line


def test_a_file_of_version_1_reads_as_the_model_it_was_fitted_with(tmp_path):
    # Version 1 (netsweep before the tuner's omissions) states three constants: no fixed cost and no fill.
    path = fabric(tmp_path, version=1, **{f"constants.{name}": None for name in NAMES[3:]})
    assert read_fabric(path) == FabricConstants(
        0.5,
        0.7,
        8.0,
        source=str(path),
        fitted_on="h100",
        gpu="h100",
        nics_per_node=8.0,
        nic_gbps=400.0,
    )
    assert read_fabric(path).stated()[3:5] == (0.0, 0.0)
    assert read_fabric(path).describe() == (
        f"eta_net 0.5, eta_nvl 0.7, latency 8 us, op 0 us, fill 0 us: {path} (fitted on h100, 8 x 400 Gbit/s NICs "
        "a host)"
    )
    # A version 1 file that states a later constant is refused, not read in part.
    mixed = fabric(tmp_path, "mixed.json", version=1)
    with pytest.raises(InputError, match="constants.op_latency_us is not a constant of a version 1 file"):
        read_fabric(mixed)


@pytest.mark.parametrize(
    "changes, text, message",
    [
        ({}, "{not json", ":1: not valid JSON (Expecting property name"),
        ({}, "[1, 2]", "a JSON list; a fabric file is one object"),
        ({"format": "other"}, None, "format 'other'; a fabric file says 'netsweep fabric'"),
        ({"version": 3}, None, "version 3; this netsweep reads fabric files of version 1 or 2"),
        ({"version": None}, None, "no version key; this netsweep reads"),  # removed: not "version None"
        (
            {"format": None},
            None,
            "no format key; a fabric file says 'netsweep fabric'",
        ),  # calibrate's fit JSON
        ({"constants": None}, None, f"constants missing or not an object of {', '.join(NAMES)}"),
        ({"constants.fill_us": None}, None, "constants.fill_us missing"),
        ({"constants.fill_mib": 0}, None, "constants.fill_mib 0 must be above 0 and at most 1048576 (MiB)"),
        ({"constants.op_latency_us": 2000}, None, "constants.op_latency_us 2000 must be from 0 to 1000 (us)"),
        ({"constants.fill_us": -1}, None, "constants.fill_us -1 must be from 0 to 10000 (us)"),
        ({"constants.eta_nvl": None}, None, "constants.eta_nvl missing"),
        ({"constants.eta_net": "0.8"}, None, 'constants.eta_net "0.8" must be a number'),
        ({"constants.eta_net": True}, None, "constants.eta_net true must be a number"),
        ({"constants.eta_net": 1.5}, None, "constants.eta_net 1.5 must be from 0.01 to 1 (a fraction)"),
        ({"constants.eta_nvl": 0}, None, "constants.eta_nvl 0 must be from 0.01 to 1"),
        # found by a hunt: a plan at eta_net 1e-300 said no layout fits in memory (its steps were infinite); a
        # key twice kept the last in silence, a misspelt constant was never read, a list was read as no hosts
        ({"constants.eta_net": 1e-300}, None, "constants.eta_net 1e-300 must be from 0.01 to 1"),
        (
            {},
            '{"format": "netsweep fabric", "version": 2, "version": 1}',
            "key 'version' twice in one object",
        ),
        ({"constants.eta_nte": 0.8}, None, "constants.eta_nte is not a constant (eta_net, eta_nvl, "),
        ({"hardware": ["h100"]}, None, 'hardware ["h100"] must be an object (gpu, nics_per_node, nic_gbps)'),
        ({"constants.latency_us": -1}, None, "constants.latency_us -1 must be from 0 to 1000 (us)"),
        ({}, '{"constants": {"eta_net": NaN}}', "NaN is not a number JSON allows"),
        # an integer past a float's range (JSON allows any digits) was an OverflowError's traceback
        (
            {"constants.fill_mib": 10**400},
            None,
            "constants.fill_mib 100000000000... (401 characters) must be",
        ),
        ({"hardware.preset": "zz9"}, None, 'hardware.preset "zz9" is not a GPU preset (v100, '),
        ({"hardware.preset": ["h100"]}, None, 'hardware.preset ["h100"] is not a GPU preset (v100, '),
        (
            {"hardware.gpu": 7},
            None,
            "hardware.gpu 7 must be text, the GPU's name",
        ),  # dropped in silence (a hunt)
        # the hosts' NICs it records become a sweep's where not given: a count no sweep takes, named by its key
        (
            {"hardware.nics_per_node": 4096},
            None,
            "hardware.nics_per_node 4096 must be an integer from 1 to 64",
        ),
        (
            {"hardware.nics_per_node": 10**400},
            None,
            "hardware.nics_per_node 100000000000... (401 characters)",
        ),
        # a hunt: a misspelt key was never read, and the job priced on the GPU's system's NICs
        (
            {"hardware.nic_gbps": None, "hardware.nic_gpbs": 100},
            None,
            "hardware.nic_gpbs is not a hardware key (gpu, preset, nics_per_node, nic_gbps, gpus_per_node)",
        ),
        (
            {"hardware.nic_gbps": None},
            None,
            "hardware.nics_per_node without hardware.nic_gbps: give both, or neither",
        ),
        (
            {"constantz": {}},
            None,
            "constantz is not a fabric file's key (format, version, constants, hardware,",
        ),
        (
            {"hardware.nic_gbps": 3200},
            None,
            "hardware.nic_gbps 3200 must be at most 1600 (Gbit/s, each NIC's",
        ),
        # the hosts of the NICs, checked where they stand, and never without the NICs (a review: dropped unread)
        (
            {"hardware.gpus_per_node": "six"},
            None,
            'hardware.gpus_per_node "six" must be an integer from 1 to 1024',
        ),
        (
            {"hardware.gpus_per_node": 6, "hardware.nics_per_node": None, "hardware.nic_gbps": None},
            None,
            "hardware.gpus_per_node without the NICs it is the hosts of: give both",
        ),
        # above the axis's range too: the bound said is the file's (it had said "from 0.001 to 1000000")
        (
            {"hardware.nic_gbps": 2e6},
            None,
            "hardware.nic_gbps 2000000.0 must be at most 1600 (Gbit/s, each NIC's",
        ),
    ],
)
def test_a_bad_fabric_file_is_one_line_naming_the_file_and_key(tmp_path, changes, text, message):
    path = fabric(tmp_path, **changes)
    if text is not None:
        path.write_text(text)
    with pytest.raises(InputError, match=None) as e:
        read_fabric(path)
    assert str(path) in str(e.value) and message in str(e.value), str(e.value)
    line = one_line_error(invoke("plan", *LLAMA_8B, *NCCL, "--fabric", path, "--out", tmp_path / "p.h5"))
    assert message in line and not (tmp_path / "p.h5").exists()


def test_the_constants_a_fit_held_at_the_shipped_fits_are_said(tmp_path):
    # A hunt: a fit on one host's log held eta_net, latency and fill at the shipped fit's, and a plan on the file
    # said "fitted on h200" of them all.
    held = ["eta_net", "latency_us"]
    constants = read_fabric(fabric(tmp_path, **{"fit.held_at_shipped": held}))
    assert constants.held == tuple(held)
    assert constants.describe().endswith(
        "; eta_net, latency_us the shipped fit's (its logs could not tell them)"
    )
    assert "shipped fit's" not in read_fabric(fabric(tmp_path, "f.json")).describe()
    with pytest.raises(InputError, match=r'fit.held_at_shipped \["eta"\] must be a list of constants'):
        read_fabric(fabric(tmp_path, "g.json", **{"fit.held_at_shipped": ["eta"]}))


def test_a_data_parallel_sweep_takes_the_nics_a_file_records_where_not_given(tmp_path):
    # As a preset's: grid --fabric FILE priced 1 NIC a node of the --bw default where the file was fitted on 8 x 400.
    from netsweep_jax.sweep.engine.grid import make_grid

    path = fabric(tmp_path)
    g = make_grid("resnet50", fabric=read_fabric(path), nodes=8)
    assert g.values["nics_per_node"].tolist() == [8.0] and g.values["bandwidth"].tolist() == [400.0]
    assert (
        "--nics-per-node 8 (the fabric file's hosts)" in g.assumed
        and "--bw 400 (the fabric file's hosts)" in g.assumed
    )
    given = make_grid("resnet50", fabric=read_fabric(path), nodes=8, nics_per_node=2, bandwidth=[100, 200])
    assert given.values["nics_per_node"].tolist() == [2.0] and "fabric file's hosts" not in given.assumed
    # A file that records no NICs (its hardware removed: a hunt) sets none, and says so.
    bare = make_grid("resnet50", fabric=read_fabric(fabric(tmp_path, "bare.json", hardware=None)), nodes=8)
    assert (
        "the fabric file records no NICs: the sweep's --nics-per-node and --bw, as given or their defaults (its "
        "coordinates)" in bare.assumed
    )
    assert "records no NICs" not in g.assumed


def test_a_host_of_other_gpus_has_its_own_share_of_the_files_nics(tmp_path):
    # A hunt: a file's 8 NICs of 8-GPU hosts were given to hosts of 4 GPUs as they were, twice the NICs a GPU. As a
    # preset's host of other GPUs (compute.host_system): max(ceil(N g / G), 1) NICs, in both families, said.
    from netsweep_jax.sweep.engine.grid import make_grid
    from netsweep_jax.sweep.engine.layouts import make_layout_grid

    path = fabric(tmp_path, logs=[{"file": "ar.log", "gpus_per_node": 8, "nodes": 2, "rows": 28}])
    constants = read_fabric(path)
    assert constants.gpus_per_node == 8 and constants.host_for([4], "4", "--nics-per-node") == {
        "nics_per_node": 4
    }
    assert constants.host_for([8], "8", "x") == {} and constants.host_for([1], "1", "x") == {
        "nics_per_node": 1
    }
    g = make_grid("resnet50", fabric=constants, nodes=8, gpus_per_node=4)
    assert (
        g.values["nics_per_node"].tolist() == [4.0]
        and "--nics-per-node 4 (the fabric's NICs a GPU" in g.assumed
    )
    layouts = make_layout_grid("llama3-8b", gpus=8, global_batch=8, tp=4, fabric=constants, gpus_per_node=4)
    assert layouts.values["nics_per_node"].tolist() == [4.0]
    assert (
        "a host of --gpus-per-node GPUs built as the fabric's: --nics-per-node 4 (its 8)" in layouts.assumed
    )
    assert "--nics-per-node 4 (the fabric file's hosts)" not in layouts.assumed  # said once, as built
    with pytest.raises(
        InputError, match="with a fabric file of 8-GPU hosts, hosts of other GPUs take one value"
    ):
        make_grid("resnet50", fabric=constants, nodes=8, gpus_per_node=[2, 4])
    # A file whose logs across hosts ran on hosts of different sizes records no host: its NICs stay as recorded;
    # a size no host has is refused, naming the key (a review: a list was a traceback, 2.5 taken; a hunt: they
    # were then read as no count, and the NICs went to the default host); a one-host log's GPUs used no NIC and
    # do not count.
    mixed = [{"gpus_per_node": 8, "nodes": 2}, {"gpus_per_node": 4, "nodes": 2}]
    assert read_fabric(fabric(tmp_path, "mixed.json", logs=mixed)).gpus_per_node == 0
    for bad in ([8], 2.5, True, 1e300, "8", 0, -8):
        logs = [{"gpus_per_node": 8, "nodes": 2}, {"gpus_per_node": bad, "nodes": 2}]
        with pytest.raises(
            InputError, match=r"odd\.json: logs\[1\]\.gpus_per_node .* must be an integer from 1"
        ):
            read_fabric(fabric(tmp_path, "odd.json", logs=logs))
    one_host = [{"gpus_per_node": 4, "nodes": 1}, {"gpus_per_node": 8, "nodes": 2}]
    assert read_fabric(fabric(tmp_path, "two.json", logs=one_host)).gpus_per_node == 8
    # --nics-per-node given beside a list of hosts: nothing to build (a file builds NICs alone), in both families
    given = dict(fabric=constants, gpus_per_node=[2, 4], nics_per_node=2)
    assert make_layout_grid("llama3-8b", gpus=8, global_batch=8, tp=2, **given).values[
        "nics_per_node"
    ].tolist() == [2]
    assert make_grid("resnet50", nodes=8, **given).values["nics_per_node"].tolist() == [2.0]


def test_a_file_of_other_hosts_sets_its_hosts_gpus_where_not_given(tmp_path):
    # A hunt: a file fitted on 4-GPU hosts with 4 NICs gave its 4 NICs to the GPU's default 8-GPU host (half the
    # NICs a GPU). Its hosts' GPUs are now set where not given, as a preset's are, in both families, and said.
    from netsweep_jax.sweep.engine.grid import make_grid
    from netsweep_jax.sweep.engine.layouts import make_layout_grid

    logs = [{"file": "ar.log", "gpus_per_node": 4, "nodes": 2, "rows": 28}]
    four = read_fabric(fabric(tmp_path, logs=logs, **{"hardware.nics_per_node": 4}))
    assert four.settings() == {"nics_per_node": 4, "bandwidth": 400.0, "gpus_per_node": 4}
    assert "(fitted on h100, hosts of 4 GPUs and 4 x 400 Gbit/s NICs a host)" in four.describe()
    layouts = make_layout_grid("llama3-8b", gpus=8, global_batch=8, tp=4, fabric=four)
    assert layouts.values["gpus_per_node"].tolist() == [4] and layouts.values["nics_per_node"].tolist() == [4]
    g = make_grid("resnet50", fabric=four, nodes=8)
    assert g.values["gpus_per_node"].tolist() == [4.0] and g.values["nics_per_node"].tolist() == [4.0]
    for assumed in (layouts.assumed, g.assumed):
        assert "--gpus-per-node 4 (the fabric file's hosts)" in assumed, assumed
    # Given, the hosts are the user's (their NICs built from the file's, as above); a file recording no hosts
    # sets none.
    eight = make_layout_grid("llama3-8b", gpus=8, global_batch=8, tp=4, fabric=four, gpus_per_node=8)
    assert eight.values["gpus_per_node"].tolist() == [8] and eight.values["nics_per_node"].tolist() == [8]
    assert "gpus_per_node" not in read_fabric(fabric(tmp_path, "none.json")).settings()


def test_a_file_sets_the_gpu_its_logs_ran_on_and_compare_takes_its_hosts(tmp_path):
    # Two hunts: an H100 file priced a transformer on the default V100 (a preset's GPU is taken), and compare
    # swept its own 8 GPUs and four rates beside a file recording its hosts (a preset's are taken).
    from netsweep_jax.sweep.analysis.compare import BANDWIDTHS, GPUS_PER_NODE, _defaults
    from netsweep_jax.sweep.engine.grid import make_grid

    logs = [{"file": "ar.log", "gpus_per_node": 4, "nodes": 2, "rows": 28}]
    path = fabric(tmp_path, logs=logs, **{"hardware.preset": "b200", "hardware.nics_per_node": 4})
    b200 = read_fabric(path)
    assert (
        b200.gpu == "b200" and read_fabric(fabric(tmp_path, "no.json", **{"hardware.preset": None})).gpu == ""
    )
    assert make_grid("gpt2-xl", fabric=b200, nodes=2).profiles[0].model.startswith("gpt2-xl@b200-")
    other = make_grid("gpt2-xl", fabric=b200, nodes=2, gpu="h100")
    assert other.profiles[0].model.startswith("gpt2-xl@h100-")
    # taken for another GPU as it is (a preset of other hosts is refused), and said (a hunt: silent)
    assert "the fabric file's logs ran on b200s, its constants taken as they are for h100s" in other.assumed
    assert "taken as they are" not in make_grid("gpt2-xl", fabric=b200, nodes=2).assumed
    # the layout family's command reads it into its grid (built, not run: no compile)
    from netsweep_jax.sweep.analysis.layout_jobs import layout_grid_from

    settings = {"model": "llama3-8b", "gpus": "8", "global_batch": "8", "tp": "4", "fabric": str(path)}
    grid = layout_grid_from(settings, set(settings))
    assert list(grid.names["gpu"]) == ["b200"] and grid.assumed[0].startswith("b200"), grid.assumed[0]
    assert not [phrase for phrase in grid.assumed if "taken as they are" in phrase]
    # plan's grid of another GPU says so too, as grid's does (a hunt: it said only what the file was fitted on)
    h100 = layout_grid_from({**settings, "gpu": "h100"}, {*settings, "gpu"})
    assert "the fabric file's logs ran on b200s, its constants taken as they are for h100s" in h100.assumed
    assert _defaults(b200, None, None, None) == (None, None, None)  # the file's hosts, NCCL's collective
    unrecorded = read_fabric(fabric(tmp_path, "bare.json", hardware=None))
    assert _defaults(unrecorded, None, None, None)[:2] == (BANDWIDTHS, GPUS_PER_NODE)


def test_fabric_is_refused_where_nothing_would_read_it(tmp_path):
    path = fabric(tmp_path)
    for command in ("grid", "plan"):  # the flat collectives read --util and --latency, not a fabric
        flat = ["--collectives", "flat", "--fabric", path, "--out", tmp_path / "x.h5"]
        line = one_line_error(invoke(command, *LLAMA_8B, *flat))
        assert line == (
            f"error: --fabric {path}: a fabric file's constants price collectives as NCCL runs them, not flat: "
            "drop --collectives flat (a --fabric implies --collective nccl), or --fabric for the flat collectives "
            "(they read "
            "--util and --latency instead)"
        )
    ring = ["--model", "resnet50", "--fabric", path, "--collective", "ring", "--out", tmp_path / "x.h5"]
    assert "a --fabric prices NCCL's own collective; add nccl" in one_line_error(invoke("grid", *ring))
    compare = ["--model", "resnet50", "--fabric", path, "--collective", "ring"]
    assert "prices NCCL's own collective; add nccl" in one_line_error(invoke("compare", *compare))
    need = ["--model", "resnet50", "--target", "0.9", "--solve", "ratio", "--bw", "10", "--fabric", path]
    assert "prices NCCL's own collective; add nccl" in one_line_error(
        invoke("need", *need, "--collective", "ring")
    )
    assert not list(tmp_path.glob("*.h5"))
    with pytest.raises(InputError, match="not flat: drop --collectives"):  # the API's keyword, as the option
        sweep.plan("llama3-8b", gpus=8, global_batch=8, fabric=path, collectives="flat")


def test_the_files_constants_are_the_kernels_inputs_and_the_assumed_line_names_it(tmp_path):
    path = fabric(tmp_path)
    shipped = fabric(tmp_path, "shipped.json", values=SHIPPED.stated())
    nics = {"nics_per_node": "8", "bandwidth": "400"}  # the hosts the files record, given: one sweep
    plain = make_layout_grid("llama3-8b", gpus=16, global_batch=16, collectives="nccl", **nics)
    own = make_layout_grid(
        "llama3-8b", gpus=16, global_batch=16, collectives="nccl", fabric=read_fabric(path)
    )
    same = make_layout_grid(
        "llama3-8b", gpus=16, global_batch=16, collectives="nccl", fabric=read_fabric(shipped), **nics
    )
    # Not given, a file's recorded NICs are the sweep's, as a preset's would be, and said.
    assert own.values["nics_per_node"].tolist() == [8.0] and own.values["bandwidth"].tolist() == [400.0]
    assert own.assumed[-2:] == (
        "--nics-per-node 8 (the fabric file's hosts)",
        "--bw 400 (the fabric file's hosts)",
    )
    columns = [GPU_FIELDS.index(f) for f in GPU_FIELDS if f.startswith("nccl_") and f != "nccl_arch"]
    assert plain.tables()["gpu"][0, columns].tolist() == [0.968, 0.905, 1.8, 9.71, 53.5, 10.9 * 2**20]
    assert own.tables()["gpu"][0, columns].tolist() == [0.5, 0.7, 8.0, 4.0, 30.0, 8 * 2**20]
    # The shipped constants from a file: the kernel's inputs, and so its results, are the no-file sweep's
    # exactly (one sweep: a plan resumed across the two shares its checkpoint).
    for name, table in plain.tables().items():
        np.testing.assert_array_equal(same.tables()[name], table)
    assert same.fingerprint() == plain.fingerprint() != own.fingerprint()
    assert own.assumed[-3] == (
        f"collectives as NCCL's tuner prices them per group as placed (eta_net 0.5, eta_nvl 0.7, latency 8 us, "
        f"op 4 us, fill 30 us from 8 MiB: {path} (fitted on h100, 8 x 400 Gbit/s NICs a host))"
    )
    assert plain.assumed[-1].endswith(
        "(eta_net 0.968, eta_nvl 0.905, latency 1.8 us, op 9.71 us, fill 53.5 us from 10.9 MiB: "
        "results/validation-nccl)"
    )
    # The CLI and the API read --fabric into the same grid.
    from netsweep_jax.sweep.analysis.layout_jobs import layout_grid_from

    settings = {
        "model": "llama3-8b",
        "gpus": "16",
        "global_batch": "16",
        "collectives": "nccl",
        "fabric": path,
    }
    assert layout_grid_from(settings, set(settings)).fingerprint() == own.fingerprint()


def test_a_util_given_under_nccls_pricing_is_said_to_scale_the_nics_on_top_of_eta_net():
    # --util below 1 with NCCL's pricing is a share of the NICs on top of the fit's eta_net (a hunt: a fabric
    # file's sweep at --util 0.5 was priced at half the fitted transport in silence); at its default, not said.
    from netsweep_jax.sweep.engine.grid import make_grid
    from netsweep_jax.sweep.model.fabric_constants import UTILIZATION_ON_ETA

    fitted = dataclasses.replace(SHIPPED, eta_net=0.8, source="a test's fit")
    assert UTILIZATION_ON_ETA in make_grid("gpt2-xl", fabric=fitted, utilization=[0.5, 1]).assumed
    assert UTILIZATION_ON_ETA not in make_grid("gpt2-xl", fabric=fitted).assumed
    assert UTILIZATION_ON_ETA not in make_grid("gpt2-xl", collective="ring", utilization=0.5).assumed
    from netsweep_jax.sweep.analysis.need import (
        solved_grid,
    )  # need's smallest utilization sits on top of it too

    assert UTILIZATION_ON_ETA in solved_grid("gpt2-xl", "utilization", collective="nccl", gpu="h100").assumed
    assert UTILIZATION_ON_ETA not in solved_grid("gpt2-xl", "utilization", collective="ring").assumed
    at_one = "; ".join(
        make_layout_grid("llama3-8b", gpus=8, global_batch=8, tp=4, fabric=fitted, utilization=1).assumed
    )
    assert UTILIZATION_ON_ETA not in at_one  # given, but nothing on top (a review)
    for utilization in (0.5, "0.5", [0.5, 1.0], (0.5,)):  # the API's lists too (a review)
        layouts = make_layout_grid(
            "llama3-8b", gpus=8, global_batch=8, tp=4, fabric=fitted, utilization=utilization
        )
        given = "; ".join(layouts.assumed)
        assert UTILIZATION_ON_ETA in given and "utilization 1 (eta_net" not in given, utilization
    default = "; ".join(make_layout_grid("llama3-8b", gpus=8, global_batch=8, tp=4, fabric=fitted).assumed)
    assert UTILIZATION_ON_ETA not in default and "utilization 1 (eta_net" in default


def test_a_host_whose_built_nics_pass_the_bound_is_refused_as_the_option_given():
    # A hunt: hosts of 72 GPUs on gb200-nvl72 (a rack read as one host) were refused as "--nics-per-node 72",
    # an option never typed; both families name --gpus-per-node and what to give.
    from netsweep_jax.sweep.engine.grid import make_grid
    from netsweep_jax.sweep.model.fabrics import fabric_preset

    rack = fabric_preset("gb200-nvl72")
    for build in (
        lambda: make_grid("gpt2-xl", fabric=rack, gpus_per_node=72, nodes=2),
        lambda: make_layout_grid(
            "llama3-8b", gpus=144, global_batch=288, tp=8, fabric=rack, gpus_per_node=72
        ),
    ):
        with pytest.raises(
            InputError, match=r"hosts of 72 GPUs would have 72 NICs .* above the 64 --nics-per-node"
        ):
            build()


def test_a_null_nic_rate_calibrate_wrote_reads_as_no_nics(tmp_path):
    # calibrate before 5 December wrote "nic_gbps": null beside the NICs given without --bw: read as no NICs, as
    # then (a review: refused as half a description), where a key left out is refused.
    path = fabric(tmp_path)
    document = json.loads(path.read_text())
    document["hardware"]["nic_gbps"] = None
    path.write_text(json.dumps(document))
    constants = read_fabric(path)
    assert (constants.nics_per_node, constants.nic_gbps) == (0.0, 0.0) and constants.gpu == "h100"  # 0: none
    document["hardware"].update(nics_per_node=None, nic_gbps=400)  # a rate without its NICs: never written
    path.write_text(json.dumps(document))
    with pytest.raises(
        InputError, match="hardware.nics_per_node null beside a nic_gbps: give both, or neither"
    ):
        read_fabric(path)
