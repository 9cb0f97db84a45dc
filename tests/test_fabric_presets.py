"""Fabric presets (sweep/model/fabrics.py), ``--fabric NAME`` and ``--oversubscription`` on the layout family with
``--collectives nccl``: every number's source, the cluster a preset sets, the spine's division of a group's NIC
rate (by hand and against tests/reference.py), which tier each traffic crosses, and one plan over a list."""

import dataclasses
import re

import jax
import numpy as np
import pytest
from layout_cases import LLAMA_8B, gpt3_case

import reference
from helpers import invoke, one_line_error
from netsweep_jax import sweep
from netsweep_jax.kernels import layout_collectives, nccl
from netsweep_jax.kernels.layout_inputs import Parallelism
from netsweep_jax.sweep.analysis.layout_jobs import layout_grid_from
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.core.schema import assumed_line
from netsweep_jax.sweep.engine.compiled import GPU_FIELDS
from netsweep_jax.sweep.engine.layout_grid import by_oversubscription
from netsweep_jax.sweep.engine.layouts import make_layout_grid
from netsweep_jax.sweep.io.reader import open_cube
from netsweep_jax.sweep.model.fabrics import FABRICS, FabricPreset, fabric_preset, tier, traffic_tiers
from netsweep_jax.sweep.model.nccl_fabric import SHIPPED

NCCL = ["--collectives", "nccl"]
H100_POD = FABRICS["dgx-h100-superpod"]


def test_every_preset_names_the_source_of_every_number():
    assert {"dgx-h100-superpod", "dgx-b200-superpod", "gb200-nvl72", "aws-p5", "ethernet-clos"} <= set(
        FABRICS
    )
    # constants_given: a caller's (compare's transport fixed), never a preset's own
    unsourced = {"name", "title", "transport", "sources", "constants_given"}
    sourced = {f.name for f in dataclasses.fields(FabricPreset)} - unsourced
    for name, p in FABRICS.items():
        assert p.name == name and set(p.sources) == sourced and p.constants_given is None, name
        assert all(len(text) > 10 for text in p.sources.values()), name
        assert p.gpus_per_node >= 1 and p.nvlink_domain % p.gpus_per_node == 0 and p.leaf_hosts >= 1
        assert p.nics_per_node >= 1 and p.nic_gbps > 0 and p.oversubscription >= 1
        # the shipped fit's, a network plugin's reported latency added (aws-p5's: its own test below)
        plugin = 75.0 if name == "aws-p5" else 0.0  # us
        assert 0 < p.constants.eta_net <= 1
        np.testing.assert_allclose(
            np.subtract(p.constants.columns(), SHIPPED.columns()), [0, 0, plugin, 0, 0, 0], atol=1e-12
        )
    # The systems as their reference architectures build them.
    assert (H100_POD.nics_per_node, H100_POD.nic_gbps, H100_POD.leaf_hosts) == (8, 400.0, 32)
    assert H100_POD.rail_optimized and H100_POD.sharp and H100_POD.oversubscription == 1
    nvl72 = FABRICS["gb200-nvl72"]
    assert (nvl72.nvlink_domain, nvl72.nvlink_domain // nvl72.gpus_per_node) == (72, 18)
    assert (FABRICS["aws-p5"].nics_per_node, FABRICS["aws-p5"].nic_gbps) == (32, 100.0)
    # GB300 NVL72 racks as GCP (A4X Max) and OCI build them: 18 hosts of 4 GPUs a rack, 8 x 400G RoCE a host
    # (the OCIGB300 rows' hosts); GCP's A3 Mega: 8 H100 and 8 x 200G NICs, GPUDirect-TCPXO.
    gb300, a3 = FABRICS["gb300-nvl72"], FABRICS["gcp-a3-mega"]
    assert (gb300.gpu, gb300.nvlink_domain // gb300.gpus_per_node, gb300.nics_per_node, gb300.nic_gbps) == (
        "gb300",
        18,
        8,
        400.0,
    )
    assert not gb300.sharp and "gb300-nvl72-sharp" not in FABRICS and "RoCE" in gb300.transport
    assert (a3.gpu, a3.gpus_per_node, a3.nics_per_node, a3.nic_gbps, a3.transport) == (
        "h100",
        8,
        8,
        200.0,
        "GPUDirect-TCPXO",
    )
    assert "TCPXO" in a3.fit and "assumption" in a3.fit
    assert fabric_preset("DGX-H100-SuperPOD") is H100_POD
    with pytest.raises(InputError, match="not a fabric preset or file; presets: dgx-h100-superpod"):
        fabric_preset("dgx-a100")


def test_a_preset_sets_the_cluster_not_given_and_the_assumed_line_names_it():
    grid = make_layout_grid("llama3-8b", gpus=16, global_batch=16, collectives="nccl", fabric=H100_POD)
    given = make_layout_grid(
        "llama3-8b", gpus=16, global_batch=16, collectives="nccl", fabric=H100_POD, nics_per_node=4
    )
    nvl = make_layout_grid(
        "llama3-8b", gpu="gb200", gpus=72, global_batch=72, collectives="nccl", fabric=FABRICS["gb200-nvl72"]
    )
    assert {d: grid.values[d].tolist() for d in ("gpus_per_node", "nvlink_domain", "nics_per_node")} == {
        "gpus_per_node": [8.0],
        "nvlink_domain": [8.0],
        "nics_per_node": [8.0],
    }
    assert grid.values["bandwidth"].tolist() == [400.0] and given.values["nics_per_node"].tolist() == [4.0]
    assert (nvl.values["gpus_per_node"].tolist(), nvl.values["nvlink_domain"].tolist()) == ([4.0], [72.0])
    said = grid.assumed[-1]
    assert said.startswith(
        "fabric dgx-h100-superpod (NVIDIA DGX H100 SuperPOD: h100 hosts of 8 GPUs and 8 x 400 Gbit/s InfiniBand NDR"
        " a host, NVLink domains of 8 GPUs"
    )
    assert "rail-optimized, 32 hosts a leaf, spine 1:1 as built" in said
    # a setting given in place of the preset's is said, with the preset's own (it was said nowhere: a hunt)
    assert "given in place of the fabric's: --nics-per-node 4 (its 8)" in given.assumed
    assert not any("in place of" in a for a in grid.assumed)
    for bandwidth, said in (
        ("400.0", None),
        ("100..400:100", "--bw 100..400:100 (its 400)"),
    ):  # as numbers, as typed
        again = make_layout_grid(
            "llama3-8b", gpus=16, global_batch=16, collectives="nccl", fabric=H100_POD, bandwidth=bandwidth
        )
        replaced = [a for a in again.assumed if "in place of" in a]
        assert replaced == ([f"given in place of the fabric's: {said}"] if said else []), replaced
    # the rest of its system: the preset's hosts (GB200 NVL72 on an 8-GPU fabric said a 72-GPU domain: a hunt)
    assert grid.assumed[0] == "h100: nvlink-bw 450 GB/s (as in a DGX H100, on dgx-h100-superpod's hosts)"
    # Its leaf and spine are the kernel's inputs: columns of the GPU table (one compile for every fabric).
    leaf, spine = GPU_FIELDS.index("leaf_hosts"), GPU_FIELDS.index("oversubscription")
    assert grid.tables()["gpu"][0, [leaf, spine]].tolist() == [32.0, 1.0]
    assert grid.per_sweep()["fabric"] == "dgx-h100-superpod"
    # The CLI reads --fabric NAME into the same grid as the API's preset.
    settings = {"model": "llama3-8b", "gpus": "16", "global_batch": "16", "collectives": "nccl"}
    cli = layout_grid_from({**settings, "fabric": "dgx-h100-superpod"}, set(settings) | {"fabric"})
    assert cli.fingerprint() == grid.fingerprint()
    # A fabric without --collectives means NCCL's: the same grid, the assumed line saying so (the API's too).
    implied = {k: v for k, v in settings.items() if k != "collectives"}
    by_fabric = layout_grid_from({**implied, "fabric": "dgx-h100-superpod"}, set(implied) | {"fabric"})
    assert by_fabric.fingerprint() == grid.fingerprint() and by_fabric.collectives == "nccl"
    assert "--collective nccl (--fabric implies it)" in by_fabric.assumed
    assert "--collective nccl (--fabric implies it)" not in grid.assumed
    api = make_layout_grid("llama3-8b", gpus=16, global_batch=16, fabric=H100_POD)
    assert api.fingerprint() == grid.fingerprint()
    # Its GPU is --gpu's default there (an NVL72 rack's GB200s); a --gpu of another chip is refused (the preset
    # is one system: B200s in a 72-GPU NVLink domain would be neither), the preset's own chip taken.
    rack = layout_grid_from({**settings, "fabric": "gb200-nvl72"}, set(settings) | {"fabric"})
    assert rack.names["gpu"] == ("gb200",) and rack.values["nvlink_domain"].tolist() == [72.0]
    mixed = {**settings, "fabric": "gb200-nvl72", "gpu": "b200"}
    with pytest.raises(
        InputError, match="^fabric gb200-nvl72: built of gb200 hosts; gpu b200 is another chip"
    ):
        layout_grid_from(mixed, set(mixed))  # the API's keywords, where the CLI says --fabric and --gpu
    same = {**mixed, "gpu": "gb200"}
    assert layout_grid_from(same, set(same)).fingerprint() == rack.fingerprint()


@pytest.mark.parametrize(
    "extra,message",
    [
        (
            ["--collectives", "flat", "--fabric", "dgx-h100-superpod"],
            "--fabric dgx-h100-superpod: a fabric preset prices collectives as NCCL runs them, not flat: drop "
            "--collectives flat (a --fabric implies --collective nccl)",
        ),
        (
            ["--fabric", "aws-p5", "--collective", "ring"],
            "--collective ring: a flat collective (one bandwidth per group); "
            "--fabric implies NCCL's own choice by size (--collective nccl;",
        ),  # fmt: skip
        (["--fabric", "aws-p5", "--latency", "3"], "with --collective nccl (which --fabric implies)"),
        ([*NCCL, "--fabric", "no-such-pod"], "--fabric 'no-such-pod': "),
        ([*NCCL, "--oversubscription", "2"], "--oversubscription 2: needs a --fabric preset"),
        (
            ["--collectives", "flat", "--fabric", "aws-p5", "--oversubscription", "2"],
            "--fabric aws-p5: a fabric preset prices",
        ),  # fmt: skip
        (["--oversubscription", "2"], "--oversubscription 2: needs a --fabric preset"),
        ([*NCCL, "--fabric", "aws-p5", "--oversubscription", "0"], "must be a number from 1 to 1000"),
        ([*NCCL, "--fabric", "aws-p5", "--oversubscription", "-1"], "must be a number from 1 to 1000"),
        ([*NCCL, "--fabric", "aws-p5", "--oversubscription", "0.5"], "must be a number from 1 to 1000"),
        ([*NCCL, "--fabric", "aws-p5", "--oversubscription", "inf"], "'inf' is not a number"),
        ([*NCCL, "--fabric", "aws-p5", "--oversubscription", "nan"], "'nan' is not a number"),
        ([*NCCL, "--fabric", "aws-p5", "--oversubscription", "2,2"], "'2,2': value 2 appears twice"),
    ],
)
def test_bad_fabric_and_oversubscription_are_one_line_and_write_nothing(tmp_path, extra, message):
    for command in ("grid", "plan"):
        line = one_line_error(invoke(command, *LLAMA_8B, *extra, "--out", tmp_path / "out.h5"))
        assert message in line, line
        assert not list(tmp_path.iterdir())


def test_a_list_is_planned_value_by_value_and_refused_where_it_cannot_be(tmp_path):
    grid = make_layout_grid(
        "llama3-8b", gpus=16, global_batch=16, collectives="nccl", fabric=H100_POD, oversubscription="1,2,4"
    )
    assert grid.oversubscription == (1.0, 2.0, 4.0)
    ones = by_oversubscription(grid)
    spine = GPU_FIELDS.index("oversubscription")
    assert [g.tables()["gpu"][0, spine] for g in ones] == [1.0, 2.0, 4.0]
    assert len({g.fingerprint() for g in ones}) == 3
    # The assumed line says the spine priced: the list on the whole grid, each value on its own (it said the
    # preset's 1:1 as built whatever was given).
    assert "spine 1:1, 2:1, 4:1 (--oversubscription, a plan each; 1:1 as built)" in assumed_line(grid.assumed)
    for g, v in zip(ones, ("1", "2", "4")):
        assert f"spine {v}:1 (--oversubscription; 1:1 as built)" in assumed_line(g.assumed)
    with pytest.raises(InputError, match="1,2,4: give one value here"):
        grid.tables()
    # sweep grid and the Python API take one value, refused before any work; the command plan takes a list.
    line = one_line_error(
        invoke(
            "grid",
            *LLAMA_8B,
            *NCCL,
            "--fabric",
            "aws-p5",
            "--oversubscription",
            "1,2",
            "--out",
            tmp_path / "g.h5",
        )
    )
    assert "--oversubscription 1,2: give one value here" in line and not list(tmp_path.iterdir())
    for call in (sweep.plan, sweep.evaluate_layouts):
        with pytest.raises(InputError, match="give one value here"):
            call(
                "llama3-8b",
                gpus=8,
                global_batch=8,
                collectives="nccl",
                fabric="aws-p5",
                oversubscription=[1, 2],
            )


def test_the_spine_slows_what_a_wide_group_sends_across_nodes_by_hand():
    # H100 hosts of 8 GPUs and 8 x 400 Gbit/s NICs, NVLink domain 8, 2 hosts a leaf (L G = 16, L K = 16 NIC
    # ports), spine 3:1; each channel across nodes at most its NICs' share over S = max(1, 3 f) (the NICs pace
    # these, so their time's bandwidth term is S times the 1:1 spine's):
    # - a DP ring of 4 at stride 8 spans 32 ranks > 16: the leaf's 8 such groups each leave it once by their
    #   c = 1 NIC a host: f = min(8, 16) x 1 / 16 = 1/2, S = 1.5;
    # - a PP hand-off of 2 at stride 16 (every rank's partner in the other leaf): f = 16 / 16 = 1, S = 3;
    # - an all-to-all of 4 at stride 8: m = 16 / 8 = 2 members a leaf, p = 1 a host, f = (4 - 2) / (4 - 1) = 2/3,
    #   S = 2;
    # - a group of 2 at stride 8 (16 ranks) stays in its leaf; TP 8 (stride 1) is inside the NVLink domain; below
    #   1:1, as 1:1; with 4 hosts a leaf the DP ring of 8's f = 8 / 32 = 1/4 and 3 f < 1: S = 1.
    # NCCL does not know the spine: the NIC rate its search reads stays 50 GB/s.
    lay = {**gpt3_case()[2], "nvlink_bw": 450e9, "nvlink_domain": 8, "gpus_per_node": 8, "nics_per_node": 8}
    lay.update(
        bandwidth=400e9, utilization=1.0, nccl_arch=2, collectives=1, leaf_hosts=2.0, oversubscription=3.0
    )
    group = Parallelism(**{k: np.float64(v) for k, v in lay.items()})
    spine = layout_collectives.spine_factor
    with jax.enable_x64(True):
        wide = layout_collectives.group_fabric(4.0, 8.0, group)
        divisors = [
            float(spine(4.0, 8.0, group, nccl.ALL_REDUCE)),
            float(spine(2.0, 16.0, group, nccl.SENDRECV)),
            float(spine(4.0, 8.0, group, nccl.ALLTOALL)),
            float(spine(2.0, 8.0, group)),
            float(spine(8.0, 1.0, group)),
            float(spine(4.0, 8.0, group._replace(oversubscription=0.5))),
            float(spine(8.0, 8.0, group._replace(leaf_hosts=4.0))),
        ]
    assert (float(wide.nic_gbs), float(wide.nics), float(wide.nodes)) == pytest.approx((50.0, 1.0, 4.0))
    assert divisors == pytest.approx([1.5, 3.0, 2.0, 1.0, 1.0, 1.0, 1.0])
    # Across NVL72 racks (4-GPU trays, 72-GPU domains, 144 trays a leaf) a ring leaves a rack by 32 channel NICs
    # (NCCL's MAXCHANNELS / 2; 16 before an audit against its source): at stride 1 with 4 NICs a tray
    # f = 32 / 576 (slows past 18:1); at stride 4 with 2 NICs a tray, each group's half NIC a tray on the rack's
    # 18 trays, the leaf's 4 groups: f = 4 x 9 / 288 = 1/8.
    load = layout_collectives.spine_load
    assert float(load(288.0, 1.0, -1, 288.0, 4.0, 4.0, 72.0, 144.0)) == pytest.approx(1 / 18)
    assert float(load(288.0, 4.0, -1, 1152.0, 4.0, 2.0, 72.0, 144.0)) == pytest.approx(1 / 8)
    # NCCL's channels are 1:1's, so a little more oversubscription costs a little more: at 10 Gbit/s
    # (NCCL's speed 1.2 GB/s) the rate divided fell to the next speed down, 0.24, and 4.2:1 took 2.5 times 4:1
    # (a hunt). A DP ring of 4 at stride 16 leaves its leaf whole (f = 1).
    slow = group._replace(bandwidth=np.float64(10e9))
    with jax.enable_x64(True):
        t4, t42 = (
            float(
                layout_collectives.nccl_time(
                    nccl.ALL_REDUCE, 2.0**30, 4.0, 16.0, slow._replace(oversubscription=o)
                )
            )
            for o in (np.float64(4.0), np.float64(4.2))
        )
    assert t4 < t42 < t4 * 4.2 / 4
    # The all-reduce of 1 GiB over each group, the kernel against tests/reference.py's float64 twin: across the
    # spine slower than at 1:1 (the same group), inside the leaf and the NVLink domain unchanged.
    x = 2.0**30
    flat_spine = {**lay, "oversubscription": 1.0}

    def times(lay):  # op by op: six collectives take less than compiling them
        return [
            float(layout_collectives.nccl_time(nccl.ALL_REDUCE, x, n, s, lay))
            for n, s in ((4, 8), (2, 8), (8, 1))
        ]

    with jax.enable_x64(True):
        slow = times(group)
        fast = times(Parallelism(**{k: np.float64(v) for k, v in flat_spine.items()}))
    for (n, s), kernel, at_one in zip(((4, 8), (2, 8), (8, 1)), slow, fast):
        assert kernel == pytest.approx(reference._collective("allreduce", x, n, s, lay), rel=1e-9)
        assert at_one == pytest.approx(reference._collective("allreduce", x, n, s, flat_spine), rel=1e-9)
    assert slow[0] > 1.4 * fast[0] and slow[1:] == fast[1:]
    # The all-to-all's and the hand-off's shares, the kernel against the twin.
    with jax.enable_x64(True):
        for coll, kind, n, s in ((nccl.ALLTOALL, "alltoall", 4, 8), (nccl.SENDRECV, "sendrecv", 2, 16)):
            kernel = float(layout_collectives.nccl_time(coll, x, n, s, group))
            assert kernel == pytest.approx(reference._collective(kind, x, n, s, lay), rel=1e-9)


def test_which_tier_each_traffic_crosses():
    pod = {"gpus_per_node": 8, "nvlink_domain": 8, "leaf_hosts": 32}  # DGX H100 SuperPOD: a leaf is 256 GPUs
    # tp8 x pp4 x dp32 on 1024 GPUs: TP in a host; DP 32 hosts apart by 8 ranks = 256 ranks, one leaf; PP's
    # stages 256 ranks apart span 1024 ranks: the spine. CP, EP of one GPU: no traffic.
    assert traffic_tiers(8, 1, 1, 1, 32, 4, **pod) == {"TP": "NVLink", "DP": "leaf", "PP": "spine"}
    # tp8 x dp128: DP spans all 1024 ranks.
    assert traffic_tiers(8, 1, 1, 1, 128, 1, **pod) == {"TP": "NVLink", "DP": "spine"}
    # tp2 x cp2 x dp2: CP (stride 2) and DP with CP (4 members, stride 2) stay in one host's 8 GPUs.
    assert traffic_tiers(2, 2, 1, 1, 2, 1, **pod) == {"TP": "NVLink", "CP": "NVLink", "DP": "NVLink"}
    # An NVL72 rack: DP of 18 hosts' GPUs 4 apart is 72 ranks, inside the NVLink domain.
    rack = {"gpus_per_node": 4, "nvlink_domain": 72, "leaf_hosts": 144}
    assert traffic_tiers(4, 1, 1, 1, 18, 1, **rack) == {"TP": "NVLink", "DP": "NVLink"}
    assert (
        tier(2, 72, **rack, gpus=144) == "leaf"
        and tier(3, 4 * 144 * 4, **rack, gpus=3 * 4 * 144 * 4) == "spine"
        and tier(1, 8, **rack, gpus=8) == ""
    )
    assert tier(64, 8, 8, 8, 0, gpus=512) == "leaf"  # no tier above the hosts: every host under one leaf
    # A MoE model's experts reduce their gradients over expert DP (t c D / (e etp), stride e etp), a group of its
    # own: tp1 x ep16 x dp128 on 4-host leaves has DP over every rank and expert DP 8 members 16 apart, both
    # over the spine, the second slowing first (f = 16 / 32, past 2:1, where DP's is past 4:1; a hunt read the
    # plan's "slows past 4:1" and saw the step grow from 2:1). A dense model, and expert DP equal to DP, add none.
    clos = {"gpus_per_node": 8, "nvlink_domain": 8, "leaf_hosts": 4}
    moe = traffic_tiers(1, 1, 16, 1, 128, 1, **clos, moe=True)
    assert moe == {"EP": "leaf", "DP": "spine", "expert DP": "spine"}
    assert "expert DP" not in traffic_tiers(1, 1, 16, 1, 128, 1, **clos)
    assert traffic_tiers(2, 1, 2, 1, 64, 1, **clos, moe=True).keys() == {"TP", "EP", "DP"}  # e etp = t
    # The plan's lines know a MoE model by the description its cube keeps, an --arch's too (at EP 1 it was
    # taken for dense, a review).
    import xarray as xr

    from netsweep_jax.sweep.analysis.plan_tiers import _with_experts
    from netsweep_jax.sweep.engine.layouts import make_layout_grid

    arch = "layers=4,hidden=1024,heads=8,seq=2048,vocab=32000,experts=8,top_k=2,expert_ffn=512"
    grid = make_layout_grid("llama3-8b", arch=arch, gpus="8", global_batch="8")
    assert _with_experts(xr.Dataset(attrs=grid.cube_attrs())) == {"arch"}


def test_plan_over_a_list_prints_each_value_and_its_tiers(tmp_path, monkeypatch):
    # The command's plumbing of a list (a plan per value, each its own cube, the assumed line once, the tiers
    # after each table), searched with flat collectives: the NCCL-priced search's compile alone takes about a
    # minute on 2 cores (the pricing is checked above and against the reference in tests/test_layout_nccl.py).
    from netsweep_jax.sweep.analysis import planning

    searched = []
    real = planning.plan

    def flat_plan(grid, **kwargs):
        searched.append(grid.oversubscription)
        return real(dataclasses.replace(grid, collectives="flat"), **kwargs)

    monkeypatch.setattr(planning, "plan", flat_plan)
    one = ["--tp", "8", "--pp", "1", "--cp", "1", "--micro-batch", "1", "--zero", "1", "--recompute", "none"]
    r = invoke(
        "plan", "--model", "llama3-8b", "--gpus", "64", "--global-batch", "64", *one, "--schedule", "1f1b",
        *NCCL, "--fabric", "ethernet-clos", "--oversubscription", "1,4", "--keep", "1", "--bw", "200,400",
        "--out", tmp_path / "p.h5",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    out = r.output
    assert searched == [(1.0,), (4.0,)]  # 64 GPUs: DP 8 of 8 hosts, wider than a leaf's 4, crosses the spine
    assert out.count("assumed: ") == 1 and "fabric ethernet-clos (a plain 2-tier Ethernet Clos (RoCE)" in out
    assert out.index("--oversubscription 1:") < out.index("--oversubscription 4:")
    for spine in ("1:1", "4:1"):
        assert f"(fabric ethernet-clos: 4 hosts a leaf, spine {spine}):" in out
    for bw in (200, 400):  # each setting of each value, named as the table names it
        # DP 8 at stride 8 on 4-host leaves: 8 rings each leave a leaf by one NIC of its 32, f = 1/4
        assert (
            out.count(
                f"\n  --bw {bw}: tp8xpp1xdp8 mb1 z1: TP NVLink, DP spine (slows past 4:1 at the earliest)\n"
            )
            == 2
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p-oversubscription1.h5", "p-oversubscription4.h5"]
    line = one_line_error(invoke("plan", *LLAMA_8B, *NCCL, "--fabric", "aws-p5", "--oversubscription", "1,2",
                                 "--csv", "--out", tmp_path / "q.h5"))  # fmt: skip
    assert "--csv plans one --oversubscription value at a time" in line


def test_a_plans_csv_rows_name_the_fabric_they_were_planned_on(tmp_path, monkeypatch):
    # A hunt: three plans' rows, on ethernet-clos at 8:1, a SuperPOD and a fabric file, told apart by their step
    # times alone (the fabric only on the assumed line, on stderr). Searched flat (the tiers are what is read).
    import csv
    import io

    from netsweep_jax.sweep.analysis import planning

    real = planning.plan
    monkeypatch.setattr(
        planning, "plan", lambda grid, **kw: real(dataclasses.replace(grid, collectives="flat"), **kw)
    )
    one = ["--tp", "8", "--pp", "1", "--cp", "1", "--micro-batch", "1", "--zero", "1", "--recompute", "none"]
    plan = ["plan", *LLAMA_8B, *one, "--schedule", "1f1b", "--keep", "1", "--csv"]
    rows = {}
    for fabric in (
        ["--fabric", "ethernet-clos", "--oversubscription", "8"],
        ["--fabric", "dgx-h100-superpod"],
        [],
    ):
        r = invoke(*plan, *fabric, "--out", tmp_path / f"p{len(rows)}.h5")
        assert r.exit_code == 0, r.output
        (row,) = csv.DictReader(io.StringIO(r.stdout))
        rows[fabric[1] if fabric else ""] = {
            k: row[k] for k in ("fabric", "leaf_hosts", "oversubscription", "sharp", "rail_only")
        }
    assert rows == {
        "ethernet-clos": dict(fabric="ethernet-clos", leaf_hosts="4", oversubscription="8", sharp="0", rail_only="0"),
        "dgx-h100-superpod": dict(fabric="dgx-h100-superpod", leaf_hosts="32", oversubscription="1", sharp="0", rail_only="0"),
        "": dict(fabric="", leaf_hosts="0", oversubscription="1", sharp="0", rail_only="0"),
    }  # fmt: skip


def test_plan_over_a_list_of_fabrics_plans_each_and_other_commands_refuse_a_list(tmp_path, monkeypatch):
    # As above (the same flat search, compiled once for both tests): a plan per fabric, each with its own
    # assumed line and tiers, its cube named by the fabric; every value's grid made before the first plan.
    from netsweep_jax.sweep.analysis import planning

    searched = []
    real = planning.plan

    def flat_plan(grid, **kwargs):
        searched.append((grid.fabric_name, grid.names["gpu"], grid.oversubscription))
        return real(dataclasses.replace(grid, collectives="flat"), **kwargs)

    monkeypatch.setattr(planning, "plan", flat_plan)
    one = ["--tp", "8", "--pp", "1", "--cp", "1", "--micro-batch", "1", "--zero", "1", "--recompute", "none"]
    plan = ["plan", "--model", "llama3-8b", "--gpus", "64", "--global-batch", "64", *one, "--schedule", "1f1b",
            "--keep", "1", "--bw", "200,400"]  # fmt: skip
    r = invoke(*plan, "--fabric", "DGX-H100-SuperPOD,gb200-nvl72", "--oversubscription", "1,4", "--out",
               tmp_path / "p.h5")  # fmt: skip
    assert r.exit_code == 0, r.output
    out = r.output
    # Each fabric's own GPU (sweep plan's --gpu default gives way to it), and 64 GPUs inside one leaf of either:
    # the spine's 4:1 changes nothing, so each fabric is searched once and its plan written for both values.
    assert searched == [("dgx-h100-superpod", ("h100",), (1.0,)), ("gb200-nvl72", ("gb200",), (1.0,))]
    assert out.count("not searched again: no group of 64 GPUs crosses the spine") == 2
    assert (
        "(a leaf holds 576)" in out
        and "gb200: nvlink-bw 900 GB/s (as in a GB200 NVL72, on gb200-nvl72'" in out
    )
    assert out.count("assumed: ") == 2 and out.count("--collective nccl (--fabric implies it)") == 2
    assert out.index("\n--fabric dgx-h100-superpod --oversubscription 4:\n") < out.index(
        "\n--fabric gb200-nvl72 --oversubscription 1:\n"
    )
    assert "(fabric gb200-nvl72: 144 hosts a leaf, spine 4:1):" in out
    cubes = sorted(p.name for p in tmp_path.iterdir())
    assert cubes == [
        f"p-fabric{f}-oversubscription{o}.h5" for f in ("dgx-h100-superpod", "gb200-nvl72") for o in (1, 4)
    ]
    with open_cube(tmp_path / cubes[3]) as ds:
        assert ds.attrs["oversubscription"] == 4.0 and ds.attrs["fabric"] == "gb200-nvl72"
    for extra, message in (
        (["--fabric", "aws-p5,,dgx-h100-superpod"], "--fabric 'aws-p5,,dgx-h100-superpod': an empty value"),
        (["--fabric", "aws-p5,AWS-P5"], "'aws-p5,AWS-P5': value AWS-P5 appears twice"),
        (["--fabric", "aws-p5,no-such-pod"], "--fabric 'no-such-pod': not a fabric preset or file"),
        (["--fabric", "aws-p5,dgx-h100-superpod", "--csv"], "--csv plans one --fabric value at a time"),
    ):
        line = one_line_error(invoke(*plan, *extra, "--out", tmp_path / "q.h5"))
        assert message in line, line
    # The same plans again onto p.h5: the first cube's name is taken, so the first plan is refused before it is
    # searched; with it gone, the last's (not one cube written, then a refusal).
    searched.clear()
    (tmp_path / cubes[0]).unlink()
    again = [
        "--fabric",
        "DGX-H100-SuperPOD,gb200-nvl72",
        "--oversubscription",
        "1,4",
        "--out",
        tmp_path / "p.h5",
    ]
    line = one_line_error(invoke(*plan, *again))
    assert f"{tmp_path / cubes[1]}: file exists; pass --force to overwrite it" in line, line
    assert searched == [] and not (tmp_path / cubes[0]).exists()
    (tmp_path / cubes[0]).touch()  # as it was: the count below
    for command in (
        ["grid", *LLAMA_8B, "--out", tmp_path / "g.h5"],
        ["need", *LLAMA_8B, "--network-share", "10"],
    ):
        line = one_line_error(invoke(*command, "--fabric", "aws-p5,dgx-h100-superpod"))
        assert "--fabric aws-p5,dgx-h100-superpod: give one fabric here" in line, line
    assert len(list(tmp_path.iterdir())) == 4


def _times(coll, x, groups, lay):
    """NCCL's time (s) and algorithm of ``coll`` over each (size, stride) group, op by op in float64 (a few
    collectives take less than compiling them)."""
    with jax.enable_x64(True):
        one = Parallelism(**{k: np.float64(v) for k, v in lay.items()})
        out = []
        for n, s in groups:
            fabric = layout_collectives.group_fabric(n, s, one, coll)
            shipped = layout_collectives.NCCL_CONSTANTS  # the group's fabric carries its spine's divisor
            t = nccl.collective(coll, x, fabric, shipped)
            out.append((float(t.seconds), nccl.ALGORITHMS[int(t.algorithm)]))
            assert out[-1][0] == pytest.approx(
                float(layout_collectives.nccl_time(coll, x, n, s, one)), rel=1e-12
            )
        return out


H100_HOSTS = {"nvlink_bw": 450e9, "nvlink_domain": 8, "gpus_per_node": 8, "nics_per_node": 8, "bandwidth": 400e9,
              "utilization": 1.0, "nccl_arch": 2, "collectives": 1}  # fmt: skip


def test_sharp_lets_an_all_reduce_across_hosts_run_nvls_with_sharp_by_hand():
    # 16 H100 hosts (n = 128, p = 8), 64 MiB. With NCCL's CollNet on, NVLS spans the hosts (SHARP reduces across
    # them): c_n = 8 heads at s_n = speed(370.8 / 9) = 40 (a head's link carries its channel twice), s_x =
    # speed(min(8 x 50 / 8, 2 x 40)) = 48 GB/s as NCCL prices them, each running at its NIC's 50, so B = 8 min(40
    # x 0.85 x 7/8 x 2, 50) = 400, the NICs' side (NVLink's 476 at eta_nvl is the faster), and A = B n / (2 (n -
    # 1)) = 400 x 128 / 254; its latency l_i + l_x = 25 + 18 + 2 x 1.80 us and the whole fill f = 53.5 us (X >
    # X_f = 10.9 MiB): t = 100.1 + X / (1000 A eta_net) us. Off (NCCL's default), NVLSTree.
    lay = {**gpt3_case()[2], **H100_HOSTS}
    x = 2.0**26
    ((off, off_algo),) = _times(nccl.ALL_REDUCE, x, [(128.0, 1.0)], {**lay, "sharp": 0.0})
    ((on, on_algo),) = _times(nccl.ALL_REDUCE, x, [(128.0, 1.0)], {**lay, "sharp": 1.0})
    assert on_algo == "nvls" and off_algo == "nvls_tree"
    assert on * 1e6 == pytest.approx(46.6 + 53.5 + x / (1000 * 400 * 128 / 254 * 0.968), rel=1e-12)
    assert on * 1e6 == pytest.approx(444.029, abs=1e-3) and off * 1e6 == pytest.approx(652.444, abs=1e-3)
    for sharp, seconds in ((0.0, off), (1.0, on)):  # the float64 twin
        assert seconds == pytest.approx(
            reference._collective("allreduce", x, 128, 1, {**lay, "sharp": sharp}), rel=1e-12
        )
    # A preset's -sharp variant turns it on (NCCL's default, off, elsewhere): the kernel's column, the assumed line.
    pod = FABRICS["dgx-h100-superpod-sharp"]
    assert pod.collnet and not H100_POD.collnet and pod.settings() == H100_POD.settings()
    assert "NCCL_COLLNET_ENABLE" in pod.sources["collnet"] and not FABRICS["aws-p5"].sharp
    assert "aws-p5-sharp" not in FABRICS and {"gb200-nvl72-sharp", "dgx-b200-superpod-sharp"} <= set(FABRICS)
    column = GPU_FIELDS.index("sharp")
    for preset, on_off in ((pod, 1.0), (H100_POD, 0.0)):
        grid = make_layout_grid("llama3-8b", gpus=16, global_batch=16, fabric=preset)
        assert grid.tables()["gpu"][0, column] == on_off
    assert "SHARP on (NCCL's CollNet: NCCL_COLLNET_ENABLE=1)" in pod.describe()
    assert "SHARP off as NCCL's default (dgx-h100-superpod-sharp: on)" in H100_POD.describe()


def test_rail_only_forwards_an_all_to_all_over_nvlink_and_has_no_spine_by_hand():
    # 2 H100 hosts with NVLink of 100 GB/s (4 links: W = 4 x 20.6 GB/s), EP 16 of stride 1 (p = 8 a host), 64 MiB.
    # NCCL's all-to-all: 6.6 + l_i + l_x + f + max(X 7/16 / (W 0.905), X 8/16 / (50 x 0.968)) / 1000 us, the NICs
    # the slower, f = 53.5 us the whole fill (X > X_f). Rail-only forwards every off-rail byte over NVLink first:
    # X 7/8 there, now the slower.
    lay = {**gpt3_case()[2], **H100_HOSTS, "nvlink_bw": 100e9, "leaf_hosts": 1.0, "oversubscription": 4.0}
    x, w, fixed = 2.0**26, 4 * 20.6, 6.6 + 3.4 + 14.0 + 2 * 1.80 + 53.5
    ((optimized, _),) = _times(nccl.ALLTOALL, x, [(16.0, 1.0)], {**lay, "rail_only": 0.0})
    ((rail, _),) = _times(nccl.ALLTOALL, x, [(16.0, 1.0)], {**lay, "rail_only": 1.0})
    assert optimized * 1e6 == pytest.approx(
        fixed + x * 8 / 16 / (50 * 0.968) / 1000 * 4, rel=1e-12
    )  # over 4:1
    assert rail * 1e6 == pytest.approx(fixed + x * 7 / 8 / (w * 0.905) / 1000, rel=1e-12)
    # An all-reduce of DP 4 one GPU a host (stride 8) spans 4 hosts > a leaf's 1: over the 4:1 spine wired
    # rail-optimized, as at 1:1 rail-only (no spine: the rail is the group's fabric).
    ((spined, _),) = _times(nccl.ALL_REDUCE, x, [(4.0, 8.0)], {**lay, "rail_only": 0.0})
    ((railed, _),) = _times(nccl.ALL_REDUCE, x, [(4.0, 8.0)], {**lay, "rail_only": 1.0})
    ((at_one, _),) = _times(
        nccl.ALL_REDUCE, x, [(4.0, 8.0)], {**lay, "oversubscription": 1.0, "rail_only": 0.0}
    )
    assert railed == at_one < spined / 2
    for ro, seconds in ((0.0, optimized), (1.0, rail)):  # the float64 twin
        assert seconds == pytest.approx(
            reference._collective("alltoall", x, 16, 1, {**lay, "rail_only": ro}), rel=1e-12
        )
    assert railed == pytest.approx(
        reference._collective("allreduce", x, 4, 8, {**lay, "rail_only": 1.0}), rel=1e-12
    )
    # The preset: the H100 SuperPOD's hosts and rails, no spine; its tiers; a spine's oversubscription refused.
    rail_pod = FABRICS["dgx-h100-rail-only"]
    assert (
        rail_pod.rail_only
        and rail_pod.settings() == H100_POD.settings()
        and "2307.12169" in rail_pod.sources["rail_only"]
    )
    assert "rail-only (no spine" in rail_pod.describe()
    grid = make_layout_grid("llama3-8b", gpus=16, global_batch=16, fabric=rail_pod)
    assert grid.tables()["gpu"][0, GPU_FIELDS.index("rail_only")] == 1.0
    with pytest.raises(InputError, match="2: dgx-h100-rail-only is wired rail-only: it has no spine"):
        make_layout_grid("llama3-8b", gpus=16, global_batch=16, fabric=rail_pod, oversubscription=2)
    pod = {"gpus_per_node": 8, "nvlink_domain": 8, "leaf_hosts": 32, "rail_only": True}
    assert traffic_tiers(8, 1, 1, 1, 128, 4, **pod) == {"TP": "NVLink", "DP": "rail", "PP": "rail"}
    assert traffic_tiers(1, 1, 16, 1, 16, 1, **pod) == {"EP": "rail+NVLink", "DP": "rail"}


def test_a_plan_says_where_its_gpus_are_not_whole_nvlink_domains():
    # GPUs that fill no whole number of racks are placed evenly over the fewest (a hunt: 240 GB200s, 60 a rack,
    # had EP 16's blocks across an edge priced inside one); where the even share is no whole number of trays (19
    # trays, 9.5 a rack) a group across an edge is priced and said as inside one (a helper's hunt found the line
    # had said "DP NVLink" without a word).
    from netsweep_jax.sweep.analysis.plan_tiers import straddled, uneven_domains
    from netsweep_jax.sweep.model.fabrics import traffic_groups

    assert uneven_domains(240.0, 4.0, 72.0) == (
        " (assumed: 240 GPUs placed evenly over 4 72-GPU NVLink domains, 60 each)"
    )
    assert "76 GPUs are not whole 72-GPU NVLink domains" in uneven_domains(76.0, 4.0, 72.0)
    assert (
        uneven_domains(144.0, 4.0, 72.0)
        == uneven_domains(64.0, 4.0, 72.0)
        == uneven_domains(16.0, 8.0, 8.0)
        == ""
    )
    assert straddled(traffic_groups(1, 1, 16, 1, 240, 1, moe=True), 240.0, 4.0, 72.0, 0.0) == (
        " (EP's 16-GPU blocks cross the edges of 72-GPU NVLink domains (60 of the job's each), priced at their "
        "fewest GPUs in one, 4)"
    )


def test_a_plan_says_where_a_kinds_blocks_cross_a_domains_or_a_leafs_edge():
    # A hunt: EP 32 on 288 GPUs of 72-GPU racks (ranks 64-95 on two racks) planned first, "EP NVLink", where its
    # straddling groups send most of their all-to-all over the NICs; DP 96 GPUs wide under 256-GPU leaves.
    from netsweep_jax.sweep.analysis.plan_tiers import straddled
    from netsweep_jax.sweep.model.fabrics import traffic_groups

    ep32 = traffic_groups(1, 1, 32, 1, 288, 1, moe=True)
    assert straddled(ep32, 288.0, 4.0, 72.0, 576.0) == (
        " (EP's 32-GPU blocks cross the edges of 72-GPU NVLink domains, priced at their fewest GPUs in one, 8)"
    )
    assert (
        straddled(traffic_groups(1, 1, 8, 1, 288, 1, moe=True), 288.0, 4.0, 72.0, 576.0) == ""
    )  # 9 blocks a rack
    assert (
        straddled(traffic_groups(1, 1, 32, 1, 32, 1, moe=True), 32.0, 4.0, 72.0, 576.0) == ""
    )  # one rack, part used
    dp96 = traffic_groups(8, 1, 1, 1, 12, 4)
    assert straddled(dp96, 384.0, 8.0, 8.0, 256.0) == (
        " (assumed: DP's 96-GPU blocks cross the edges of 256-GPU leaves, priced as under one)"
    )
    assert (
        straddled(traffic_groups(8, 1, 1, 1, 32, 4), 1024.0, 8.0, 8.0, 256.0) == ""
    )  # DP 256 wide: one a leaf
    # The tier each crosses, by the same rule: EP 32's blocks leave the rack (under its leaf), rail-only over its
    # rails and NVLink (8 of a block in a domain forward); a 12-GPU domain on 8-GPU hosts splits a host, which no
    # system builds, and keeps TP 8 on NVLink (a review: it had been priced across an edge at rank 12).
    racks = dict(gpus_per_node=4, nvlink_domain=72, leaf_hosts=144, moe=True)
    assert traffic_tiers(1, 1, 32, 1, 288, 1, **racks)["EP"] == "leaf"
    assert traffic_tiers(1, 1, 32, 1, 288, 1, **racks, rail_only=True)["EP"] == "rail+NVLink"
    assert traffic_tiers(1, 1, 8, 1, 288, 1, **racks)["EP"] == "NVLink"
    assert traffic_tiers(8, 1, 1, 1, 6, 1, gpus_per_node=8, nvlink_domain=12, leaf_hosts=0)["TP"] == "NVLink"


def test_a_data_parallel_host_of_other_gpus_under_a_preset_has_its_own_nics_and_domain():
    # Review: --fabric dgx-h100-superpod --gpus-per-node 4 kept the preset's 8 NICs (two a GPU) and its 8-GPU
    # NVLink domain across two hosts, as the layout family did before compute.host_system.
    import numpy as np

    from netsweep_jax.sweep.core.errors import InputError
    from netsweep_jax.sweep.engine.grid import make_grid

    grid = make_grid("gpt2", fabric="dgx-h100-superpod", gpus_per_node=4, nodes=4)
    assert grid.values["nics_per_node"].tolist() == [4.0]
    assert grid.fabric.domain_of(np.array([4.0, 8.0, 16.0])).tolist() == [4.0, 8.0, 8.0]
    assert make_grid("gpt2", fabric="dgx-h100-superpod", nodes=4).values["nics_per_node"].tolist() == [8.0]
    with pytest.raises(InputError, match="take one value"):
        make_grid("gpt2", fabric="dgx-h100-superpod", gpus_per_node=[4, 8], nodes=4)
    # the forced algorithm's note reads the domain the kernel prices: two 4-GPU hosts are two domains
    forced = make_grid(
        "gpt2", fabric="dgx-h100-superpod", collective="nccl,nccl:nvls", gpus_per_node=4, nodes=2
    )
    assert "nccl:nvls cannot run anywhere in this sweep" in str(forced.assumed)


def test_a_presets_network_plugin_latency_is_added_as_validate_adds_it():
    # A hunt: aws-p5 priced with the InfiniBand fit alone, where validate --nccl adds aws-ofi-nccl's reported
    # 75 us to the P5 rows it scores: a 2-host all-reduce 1.5-3.8x faster than AWS measured at 64 KiB-64 MiB.
    from netsweep_jax.sweep.model.nccl_fabric import SHIPPED, plugin_latency

    p5 = FABRICS["aws-p5"].constants
    assert plugin_latency("EFA p5.48xlarge") == 75.0
    assert (
        p5.latency_us == pytest.approx(SHIPPED.latency_us + 75.0) and "plugin's reported 75 us" in p5.source
    )
    for name, preset in FABRICS.items():  # InfiniBand, RoCE and TCPXO: NCCL's own transports report 0
        if name != "aws-p5":
            assert preset.constants.latency_us == SHIPPED.latency_us, name


def test_nodes_count_the_fabrics_hosts(tmp_path):
    # A review: --nodes 4 on gb200-nvl72 was 32 GPUs (the default H100's 8 a node) on 8 of its 4-GPU trays. A
    # fabric's hosts count the GPUs where --gpus-per-node is not given, as the grid takes them (a preset's, a
    # file's as recorded), whatever --gpu; without a fabric, --gpu's system; --gpus-per-node given counts.
    from netsweep_jax.sweep.analysis.layout_jobs import gpus_from_nodes

    unset = {"gpus": None, "dp": None, "gpus_per_node": None}
    nvl72 = FABRICS["gb200-nvl72"]
    assert (
        gpus_from_nodes("4", unset, None, nvl72) == "16" and gpus_from_nodes("4", unset, None, None) == "32"
    )
    assert (
        gpus_from_nodes("4", unset, "h100", nvl72) == "16"
        and gpus_from_nodes("4", unset, "gb200", None) == "16"
    )
    assert gpus_from_nodes("4", {**unset, "gpus_per_node": "2"}, None, nvl72) == "8"


def test_nccls_pricing_refuses_a_host_of_more_gpus_than_its_nvlink_domain():
    # A hunt: with --fabric (NCCL's pricing) --nvlink-domain 1 on 8-GPU hosts priced EP 8 on NVLink, where the flat
    # collectives put 7/8 of it on the NICs and took 7 times as long; --gpus-per-node 16 on H100 hosts (NVLink of
    # 8) put EP 16 on NVLink as the assumed line said it was not. NCCL's node is a host or a multi-host domain.
    fabric = "(given, or --fabric dgx-h100-superpod's for hosts of these GPUs)"
    for extra, said in (
        (dict(fabric=H100_POD, nvlink_domain="1"), f"1 {fabric} below --gpus-per-node 8 (h100)"),
        (dict(fabric=H100_POD, gpus_per_node="16"), f"8 {fabric} below --gpus-per-node 16 (h100)"),
        (
            dict(collective="nccl", gpus_per_node="16"),
            "8 (the h100 system's, for hosts of these GPUs) below --gpus-per-node 16 (h100)",
        ),
    ):
        with pytest.raises(
            InputError, match=f"nvlink_domain {re.escape(said)}: NCCL's pricing takes a host's GPUs"
        ) as e:
            make_layout_grid("llama3-8b", gpus=32, global_batch=32, **extra)
        assert e.value.param == "nvlink_domain"
    # the flat collectives price it (GPUs off NVLink), and a rack of trays is one domain of several hosts
    assert make_layout_grid(
        "llama3-8b", gpus=32, global_batch=32, nvlink_domain="1", collective="ring-or-tree"
    )
    assert make_layout_grid("llama3-8b", gpus=76, global_batch=76, fabric=FABRICS["gb200-nvl72"])


def test_a_sharp_fabrics_tier_line_says_where_zero_leaves_sharp_unused():
    # A hunt: the -sharp preset's plan equal to the plain one's, with nothing saying why (ZeRO's reduce-scatter and
    # all-gather are not priced with CollNet), read as SHARP being worthless for LLM training.
    from netsweep_jax.sweep.analysis.plan_tiers import _sharp_unused

    across = {"TP": "NVLink", "DP": "leaf"}
    said = _sharp_unused("dgx-h100-superpod-sharp", {"layout_zero": 1.0}, across)
    assert (
        said
        == "; SHARP unused: ZeRO 1 syncs by reduce-scatter and all-gather, which CollNet is not priced for"
    )
    assert (
        _sharp_unused("dgx-h100-superpod-sharp", {"layout_zero": 0.0}, across) == ""
    )  # its all-reduce: SHARP's
    assert _sharp_unused("dgx-h100-superpod", {"layout_zero": 1.0}, across) == ""  # no SHARP to leave unused
    inside = {"DP": "NVLink"}
    assert _sharp_unused("dgx-h100-superpod-sharp", {"layout_zero": 3.0}, inside) == ""  # inside hosts
    # a mixture of experts whose expert DP alone crosses hosts (a review)
    assert _sharp_unused("dgx-h100-superpod-sharp", {"layout_zero": 1.0}, {**inside, "expert DP": "leaf"})


def test_a_data_parallel_sweep_says_from_which_oversubscription_the_spine_slows_its_all_reduce():
    # A hunt: a SuperPOD's spine at 2:1 or 4:1 changed no data-parallel answer, and grid never said why (a ring
    # leaves a leaf at its ends only: 1 / f = 32 there); sweep plan's tier lines say it of each layout.
    from netsweep_jax.sweep.engine.grid import make_grid

    def said(over: float, nodes: str) -> str:
        grid = make_grid("bert-large", fabric="dgx-h100-superpod", oversubscription=over, nodes=nodes)
        return next((p for p in grid.assumed.split("; ") if p.startswith(f"spine {over:g}:1")), "")

    assert said(4, "16,64").endswith("the spine slows it past 32:1 at the earliest, so 4:1 slows none of it")
    assert said(64, "64").endswith("so 64:1 can slow it")
    # hosts of 4 GPUs in the preset's 8-GPU domains: each host's own domain, as the kernel takes it (a review: the
    # job's GPUs as a host's had halved the threshold, 16:1)
    grid = make_grid(
        "bert-large", fabric="dgx-h100-superpod", oversubscription=20, nodes="16,64", gpus_per_node=4
    )
    assert "past 32:1 at the earliest, so 20:1 slows none of it" in grid.assumed
    assert said(4, "8") == "spine 4:1: no sweep of more hosts than a leaf's 32, so none crosses it"
    assert said(1, "64") == ""  # the spine as built, non-blocking: nothing to say
