"""Fabric presets named after real systems, each declared once as data with the source of every number.

A fabric preset is what ``--fabric NAME`` (``sweep grid --model ...`` and ``sweep plan``, with ``--collective
nccl``, which it implies) names; ``--fabric FILE`` names a fabric file instead (:mod:`sweep.io.fabric_file`: constants fitted to
your own nccl-tests logs). A preset sets the cluster options a user does not give (GPUs per node, NVLink domain,
NICs per node and their rate) and the tier above the hosts that the layout kernel prices
(:mod:`kernels.layout_collectives`): the hosts under one leaf switch (for rail-optimized wiring: the hosts whose
same-index NICs share one rail's leaf, "rail-aligned"), and the spine's oversubscription as built (the default of
``--oversubscription``). A parallel group whose members' ranks span more hosts than one leaf holds crosses the
spine (docs/parallelism.md).

In-network reduction: a preset whose switches have SHARP prices NCCL's default, CollNet off (NCCL reads
``NCCL_COLLNET_ENABLE``, default 0, and needs the SHARP plugin: :data:`NCCL_COLLNET`); its ``-sharp`` variant
(``dgx-h100-superpod-sharp``) turns it on, so that its all-reduces across hosts may run CollNet or NVLS with
SHARP where NCCL's tuner finds them faster (:func:`kernels.layout_collectives.group_fabric`).

Rail-only wiring (``dgx-h100-rail-only``: Wang et al., :data:`RAIL_ONLY`): the H100 SuperPOD's hosts and rails
without the spine; no group crosses a spine (``--oversubscription`` is refused), and an all-to-all's off-rail
bytes cross NVLink first (:mod:`kernels.layout_collectives`).

Not yet priced (a later slice of issue #40): a transport efficiency of each transport's own: every preset prices
with the shipped fit's constants (results/validation-nccl, fitted on H100 hosts over 8 x 400 Gbit/s InfiniBand
NDR), which for EFA, RoCE and GPUDirect-TCPXO is an assumption the ``assumed:`` line says.
"""

import dataclasses
import functools
from collections.abc import Iterable, Sequence
from typing import Any

from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.core.wording import exact_text
from netsweep_jax.sweep.model.fabric_constants import FabricConstants, other_host

# Sources, cited once each.
H100_RA = (
    "NVIDIA DGX SuperPOD Reference Architecture, DGX H100 (RA-11333-001; docs.nvidia.com/dgx-superpod/"
    "reference-architecture-scalable-infrastructure-h100, Network Fabrics: 'Each group of 32 nodes is "
    "rail-aligned', Table 4: spine-leaf cables equal node-leaf cables)"
)
B200_RA = (
    "NVIDIA DGX SuperPOD Reference Architecture, DGX B200 (docs.nvidia.com/dgx-superpod/"
    "reference-architecture-scalable-infrastructure-b200, Network Fabrics: 32 rail-aligned nodes per SU, "
    "Table 4: spine-leaf cables equal node-leaf cables)"
)
GB200_RA = (
    "NVIDIA DGX SuperPOD Reference Architecture, DGX GB200 (docs.nvidia.com/dgx-superpod/"
    "reference-architecture-scalable-infrastructure-gb200: 18 compute trays of 4 GPUs and 72 GPUs on NVLink 5 "
    "per rack, an SU of 8 racks, NDR 400 Gbit/s InfiniBand compute fabric)"
)
AWS_P5 = (
    "AWS EC2 P5 instances (aws.amazon.com/ec2/instance-types/p5: p5.48xlarge, 8 H100 on NVSwitch, 3,200 Gbit/s "
    "of EFA in 32 x 100 Gbit/s; the published nccl-tests rows of ../shared/published/nccl_tests.csv state the "
    "same)"
)
TOMAHAWK4 = (
    "a 25.6 Tbit/s Ethernet leaf (Broadcom Tomahawk 4, BCM56990: 64 x 400GbE) with half its ports down and half "
    "up, the plain non-blocking 2-tier Clos of Meta's RoCE fabric (Gangidi et al., 'RDMA over Ethernet for "
    "Distributed AI Training at Meta Scale', SIGCOMM 2024: 8 x 400G RoCE NICs per host, rack switch and spine)"
)
GCP_GPU_NETWORK = (
    "Google Cloud, 'Networking and GPU machines' (cloud.google.com/compute/docs/gpus/gpu-network-bandwidth: "
    "A4X Max, GB300: '4 NVIDIA ConnectX-8 (CX-8) SuperNICs that provide 3,200 Gbps bandwidth in an 8-way "
    "rail-aligned topology', GPUDirect RDMA; A3 Mega, 8 H100 80GB: 1,600 Gbps of GPU-to-GPU networking over 8 "
    "NICs, GPUDirect-TCPXO)"
)
OCI_GB300 = (
    "oracle-quickstart/oci-gpu-quickstarts@6a0abdc78b574b28eb10926387615c8414ed8c1d nvidia/GB300/README-GB300.md "
    "(BM.GPU.GB300.4: 4 B300 a host, GB300 NVL72 racks of 18 hosts, RDMA RoCE NICs 8 x 400 Gb/s a host; the "
    "OCIGB300 rows of ../shared/published/nccl_tests.csv)"
)
NOT_PUBLISHED = "not published; an assumption of this preset"
NCCL_COLLNET = (
    "NCCL's environment (docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html, NCCL_COLLNET_ENABLE: "
    "'Enable the use of the CollNet plugin', default 0) and the SHARP plugin it needs (Mellanox/"
    "nccl-rdma-sharp-plugins, 'SHARP ... NCCL_COLLNET_ENABLE=1')"
)
RAIL_ONLY = (
    "Wang, Ghobadi, Shakeri, Zhang, Hasani, 'Rail-only: A Low-Cost High-Performance Network for Training LLMs "
    "with Trillion Parameters', arXiv 2307.12169 (the spine removed, each rail a Clos of its own, all-to-all "
    "forwarded through the HB (NVLink) domain)"
)


@dataclasses.dataclass(frozen=True)
class FabricPreset:
    """One fabric preset (units the layout options': Gbit/s a NIC; ``sources``: field name -> its source).

    Fields:
      name, title: ``--fabric``'s name and the system it stands for.
      gpu: the GPU preset it is built with (``--gpu``'s default with this fabric; '' for any).
      gpus_per_node, nvlink_domain: GPUs sharing a host's NICs; GPUs in one NVLink domain (72: an NVL72 rack).
      nics_per_node, nic_gbps: scale-out NICs per host and each one's line rate.
      leaf_hosts: hosts under one leaf switch (rail-optimized: the rail-aligned hosts of one rail's leaf).
      oversubscription: the spine's, as built (1: non-blocking): ``--oversubscription``'s default.
      rail_optimized: each host's NIC k wired to rail k's leaf (NVIDIA's SuperPODs), else a top-of-rack leaf.
      sharp: the switches can reduce in the network (InfiniBand SHARP).
      collnet: NCCL's CollNet on (``NCCL_COLLNET_ENABLE=1`` and the SHARP plugin): SHARP priced; NCCL's
        default, off, except in the ``-sharp`` variants (module docstring).
      rail_only: rail-only wiring (no spine: Wang et al.); else the wiring ``rail_optimized`` says.
      transport: the RDMA transport, as the ``assumed:`` line names it.
      fit: why the shipped fit's constants stand for this transport (:attr:`constants`).
    """

    name: str
    title: str
    gpu: str
    gpus_per_node: int
    nvlink_domain: int
    nics_per_node: int
    nic_gbps: float
    leaf_hosts: int
    oversubscription: float
    rail_optimized: bool
    sharp: bool
    transport: str
    collnet: bool
    rail_only: bool
    fit: str
    sources: dict[str, str]
    # The constants in place of the shipped fit's, where a caller sets them (compare's transport fixed: its
    # efficiencies at 1); None: the shipped fit's, as ``constants`` says.
    constants_given: FabricConstants | None = None

    @functools.cached_property  # read for every grid's columns and phrases: the plugin's latency parsed once
    def constants(self) -> FabricConstants:
        """The transport's efficiencies and latency NCCL's pricing reads: the shipped fit's, its source saying
        why they stand for this preset's transport, with the latency its network plugin reports to NCCL added
        to lambda as NCCL adds it (:func:`~sweep.model.nccl_fabric.plugin_latency`: aws-ofi-nccl's 75 us on a
        p5.48xlarge, which ``validate --nccl`` adds to the P5 rows it scores and the preset had left out, pricing
        a 2-host all-reduce 1.5-3.8x faster than measured at 64 KiB to 64 MiB: a hunt)."""
        from netsweep_jax.sweep.model.nccl_fabric import SHIPPED, plugin_latency

        if self.constants_given is not None:
            return self.constants_given
        plugin = plugin_latency(f"{self.transport} {self.title}")
        said = f"; its network plugin's reported {plugin:g} us added to lambda" if plugin else ""
        return dataclasses.replace(
            SHIPPED, latency_us=SHIPPED.latency_us + plugin, source=f"{SHIPPED.source} ({self.fit}{said})"
        )

    def built_of(self, gpu: str | None) -> bool:
        """Whether ``gpu`` (a GPU preset's name; None: unknown) is this preset's hosts' chip, or the preset names
        none: a sweep of another chip on it would price a mix of two systems (its NVLink domain, NICs and NCCL's
        tables), which both families refuse."""
        from netsweep_jax.sweep.model.compute import die  # numpy: not at --help's import

        return not self.gpu or (gpu is not None and die(gpu) == die(self.gpu))

    def host_for(self, per_node: Iterable[float], typed: str, remedy: str) -> dict[str, float]:
        """This preset's NVLink domain and NICs for hosts of the ``--gpus-per-node`` given (``per_node``, as
        ``typed``), as :func:`~sweep.model.compute.host_system` builds them from its own hosts; {} where they are
        its own. One value: each would build another host (a list refused, naming ``remedy``)."""
        whose = f"--fabric {self.name}, hosts of other GPUs than its {self.gpus_per_node}"
        host = (self.gpus_per_node, self.nvlink_domain, self.nics_per_node)
        built = other_host(host, per_node, typed, remedy, whose, "NVLink domain and NICs")
        if built is None:
            return {}
        domain, nics = built
        return {"nvlink_domain": float(domain), "nics_per_node": float(nics)}

    def settings(self) -> dict[str, float]:
        """The cluster options this preset sets where a user gives none (layout option name -> value)."""
        return {
            "gpus_per_node": self.gpus_per_node,
            "nvlink_domain": self.nvlink_domain,
            "nics_per_node": self.nics_per_node,
            "bandwidth": self.nic_gbps,
        }

    def describe(self, spines: Sequence[float] | None = None) -> str:
        """One phrase: the fabric as built and where it comes from; ``spines``: the oversubscriptions it is priced
        at (--oversubscription; several: a plan each), None for its own as built."""
        built = f"{self.oversubscription:g}:1 as built"
        if spines is not None:
            each = ", a plan each" if len(spines) > 1 else ""
            built = f"{', '.join(f'{exact_text(v)}:1' for v in spines)} (--oversubscription{each}; {built})"
        if self.rail_only:
            wiring = "rail-only (no spine: each rail a non-blocking fabric; all-to-all forwarded over NVLink)"
        else:
            wiring = (
                f"{'rail-optimized' if self.rail_optimized else 'top-of-rack'}, {self.leaf_hosts} hosts a leaf, "
                f"spine {built}"
            )
        if self.collnet:
            sharp = ", SHARP on (NCCL's CollNet: NCCL_COLLNET_ENABLE=1)"
        elif self.sharp:
            sharp = f", SHARP off as NCCL's default ({self.name}-sharp: on)"
        else:
            sharp = ""
        return (
            f"fabric {self.name} ({self.title}: {f'{self.gpu} hosts of ' if self.gpu else ''}"
            f"{self.gpus_per_node} GPUs and {self.nics_per_node} x {self.nic_gbps:g} Gbit/s {self.transport} a "
            f"host, NVLink domains of {self.nvlink_domain} GPUs, {wiring}{sharp}; sweep/model/fabrics.py)"
        )


FABRICS: dict[str, FabricPreset] = {
    p.name: p
    for p in (
        FabricPreset(
            "dgx-h100-superpod",
            "NVIDIA DGX H100 SuperPOD",
            gpu="h100",
            gpus_per_node=8,
            nvlink_domain=8,
            nics_per_node=8,
            nic_gbps=400.0,
            leaf_hosts=32,
            oversubscription=1.0,
            rail_optimized=True,
            sharp=True,
            transport="InfiniBand NDR",
            collnet=False,
            rail_only=False,
            fit="fitted on H100 hosts over 8 x 400 Gbit/s InfiniBand NDR",
            sources={
                "gpu": H100_RA,
                "gpus_per_node": H100_RA,
                "nvlink_domain": H100_RA,
                "nics_per_node": H100_RA,
                "nic_gbps": H100_RA,
                "leaf_hosts": H100_RA,
                "oversubscription": H100_RA,
                "rail_optimized": H100_RA,
                "sharp": H100_RA + " (Quantum-2 QM9700 switches, SHARPv3)",
                "fit": "results/validation-nccl (NT309A: H100, 8 x 400G NDR)",
                "collnet": NCCL_COLLNET,
                "rail_only": H100_RA,
            },
        ),
        FabricPreset(
            "dgx-b200-superpod",
            "NVIDIA DGX B200 SuperPOD",
            gpu="b200",
            gpus_per_node=8,
            nvlink_domain=8,
            nics_per_node=8,
            nic_gbps=400.0,
            leaf_hosts=32,
            oversubscription=1.0,
            rail_optimized=True,
            sharp=True,
            transport="InfiniBand NDR",
            collnet=False,
            rail_only=False,
            fit="fitted on H100 hosts over InfiniBand NDR, the B200 SuperPOD's fabric",
            sources={
                "gpu": B200_RA,
                "gpus_per_node": B200_RA,
                "nvlink_domain": B200_RA,
                "nics_per_node": B200_RA,
                "nic_gbps": B200_RA,
                "leaf_hosts": B200_RA,
                "oversubscription": B200_RA,
                "rail_optimized": B200_RA,
                "sharp": B200_RA + " (Quantum-2 switches)",
                "fit": "results/validation-nccl (NT309A: InfiniBand NDR, on H100)",
                "collnet": NCCL_COLLNET,
                "rail_only": B200_RA,
            },
        ),
        FabricPreset(
            "gb200-nvl72",
            "NVIDIA DGX GB200 NVL72 SuperPOD",
            gpu="gb200",
            gpus_per_node=4,
            nvlink_domain=72,
            nics_per_node=4,
            nic_gbps=400.0,
            leaf_hosts=144,
            oversubscription=1.0,
            rail_optimized=True,
            sharp=True,
            transport="InfiniBand NDR",
            collnet=False,
            rail_only=False,
            fit="fitted on InfiniBand NDR hosts (H100) and NVLink hosts incl. a GB200",
            sources={
                "gpu": GB200_RA,
                "gpus_per_node": GB200_RA,
                "nvlink_domain": GB200_RA,
                "nics_per_node": GB200_RA + " (one 400G NIC a GPU)",
                "nic_gbps": GB200_RA,
                "leaf_hosts": "the SU's 8 racks x 18 trays taken as one rail-aligned group, as the H100 and B200 "
                "SuperPODs align an SU; " + NOT_PUBLISHED,
                "oversubscription": GB200_RA + " (non-blocking fat tree)",
                "rail_optimized": GB200_RA,
                "sharp": GB200_RA + " (Quantum-2 switches)",
                "fit": "results/validation-nccl (NT309A and AZ-NDGB200v6)",
                "collnet": NCCL_COLLNET,
                "rail_only": GB200_RA,
            },
        ),
        FabricPreset(
            "aws-p5",
            "AWS EC2 P5 (p5.48xlarge) UltraCluster",
            gpu="h100",
            gpus_per_node=8,
            nvlink_domain=8,
            nics_per_node=32,
            nic_gbps=100.0,
            leaf_hosts=16,
            oversubscription=1.0,
            rail_optimized=False,
            sharp=False,
            transport="EFA (SRD)",
            collnet=False,
            rail_only=False,
            fit="no EFA fit of its own: the InfiniBand fit, an assumption",
            sources={
                "gpu": AWS_P5,
                "gpus_per_node": AWS_P5,
                "nvlink_domain": AWS_P5,
                "nics_per_node": AWS_P5,
                "nic_gbps": AWS_P5,
                "leaf_hosts": NOT_PUBLISHED,
                "oversubscription": "AWS describes UltraClusters as non-blocking; " + NOT_PUBLISHED,
                "rail_optimized": NOT_PUBLISHED,
                "sharp": "EFA has no in-network reduction",
                "fit": "results/validation-nccl's fit on InfiniBand; assumed for EFA",
                "collnet": "EFA has no in-network reduction: NCCL's default, off",
                "rail_only": NOT_PUBLISHED,
            },
        ),
        FabricPreset(
            "gb300-nvl72",
            "GB300 NVL72 racks on RoCE, as GCP's A4X Max and OCI's BM.GPU.GB300.4",
            gpu="gb300",
            gpus_per_node=4,
            nvlink_domain=72,
            nics_per_node=8,
            nic_gbps=400.0,
            leaf_hosts=144,
            oversubscription=1.0,
            rail_optimized=True,
            sharp=False,
            transport="RoCE v2",
            collnet=False,
            rail_only=False,
            fit="no RoCE fit of its own: the InfiniBand fit, an assumption, held out against the OCIGB300 rows",
            sources={
                "gpu": OCI_GB300,
                "gpus_per_node": OCI_GB300,
                "nvlink_domain": OCI_GB300 + " (72 GPUs on NVLink 5)",
                "nics_per_node": GCP_GPU_NETWORK + "; " + OCI_GB300,
                "nic_gbps": OCI_GB300 + " (GCP: 3,200 Gbps over the 8 ports)",
                "leaf_hosts": "8 racks x 18 hosts taken as one rail-aligned group, as gb200-nvl72's; "
                + NOT_PUBLISHED,
                "oversubscription": NOT_PUBLISHED,
                "rail_optimized": GCP_GPU_NETWORK,
                "sharp": "RoCE (Ethernet) switches: no in-network reduction for NCCL's CollNet",
                "fit": "results/validation-nccl's fit on InfiniBand; assumed for RoCE (OCIGB300 held out)",
                "collnet": "no in-network reduction: NCCL's default, off",
                "rail_only": GCP_GPU_NETWORK,
            },
        ),
        FabricPreset(
            "gcp-a3-mega",
            "Google Cloud A3 Mega, a3-megagpu-8g",
            gpu="h100",
            gpus_per_node=8,
            nvlink_domain=8,
            nics_per_node=8,
            nic_gbps=200.0,
            leaf_hosts=8,
            oversubscription=1.0,
            rail_optimized=False,
            sharp=False,
            transport="GPUDirect-TCPXO",
            collnet=False,
            rail_only=False,
            fit="no TCPXO fit of its own: the InfiniBand fit, an assumption",
            sources={
                "gpu": GCP_GPU_NETWORK,
                "gpus_per_node": GCP_GPU_NETWORK,
                "nvlink_domain": GCP_GPU_NETWORK + " (NVSwitch inside the VM)",
                "nics_per_node": GCP_GPU_NETWORK,
                "nic_gbps": GCP_GPU_NETWORK + " (1,600 Gbps over 8 NICs)",
                "leaf_hosts": TOMAHAWK4
                + "'s radix taken for Google's leaf: 32 x 400G down = 64 x 200G, 8 hosts; "
                + NOT_PUBLISHED,
                "oversubscription": NOT_PUBLISHED,
                "rail_optimized": NOT_PUBLISHED,
                "sharp": "TCP (GPUDirect-TCPXO): no in-network reduction",
                "fit": "results/validation-nccl's fit on InfiniBand; assumed for GPUDirect-TCPXO",
                "collnet": "no in-network reduction: NCCL's default, off",
                "rail_only": NOT_PUBLISHED,
            },
        ),
        FabricPreset(
            "ethernet-clos",
            "a plain 2-tier Ethernet Clos (RoCE)",
            gpu="",
            gpus_per_node=8,
            nvlink_domain=8,
            nics_per_node=8,
            nic_gbps=400.0,
            leaf_hosts=4,
            oversubscription=1.0,
            rail_optimized=False,
            sharp=False,
            transport="RoCE v2",
            collnet=False,
            rail_only=False,
            fit="no RoCE fit of its own: the InfiniBand fit, an assumption",
            sources={
                "gpu": "any GPU: the fabric is the switches'",
                "gpus_per_node": TOMAHAWK4,
                "nvlink_domain": TOMAHAWK4,
                "nics_per_node": TOMAHAWK4,
                "nic_gbps": TOMAHAWK4,
                "leaf_hosts": TOMAHAWK4 + ": 32 ports down = 4 hosts of 8 NICs",
                "oversubscription": TOMAHAWK4,
                "rail_optimized": TOMAHAWK4,
                "sharp": "Ethernet switches without in-network reduction",
                "fit": "results/validation-nccl's fit on InfiniBand; assumed for RoCE",
                "collnet": "no in-network reduction: NCCL's default, off",
                "rail_only": TOMAHAWK4,
            },
        ),
    )
}


def _with_sharp(p: FabricPreset) -> FabricPreset:
    """``p`` with NCCL's CollNet turned on over its switches' SHARP: the ``-sharp`` variant."""
    return dataclasses.replace(
        p,
        name=f"{p.name}-sharp",
        title=f"{p.title}, SHARP on",
        collnet=True,
        sources={
            **p.sources,
            "collnet": f"on, as NCCL_COLLNET_ENABLE=1 and the SHARP plugin set it: {NCCL_COLLNET}",
        },
    )


def _rail_only(p: FabricPreset) -> FabricPreset:
    """``p``'s hosts and rails wired rail-only (Wang et al.): no spine; NCCL's CollNet off as in ``p`` (its
    ``-sharp`` variant: on)."""
    return dataclasses.replace(
        p,
        name=p.name.replace("-superpod", "-rail-only"),
        title=f"{p.title}'s hosts and rails, rail-only (no spine)",
        oversubscription=1.0,
        rail_only=True,
        sources={
            **p.sources,
            "oversubscription": f"no spine: {RAIL_ONLY}",
            "rail_optimized": RAIL_ONLY,
            "rail_only": RAIL_ONLY,
            "leaf_hosts": f"{p.sources['leaf_hosts']}; each rail's leaf, as in the SuperPOD",
        },
    )


_RAIL_ONLY = _rail_only(FABRICS["dgx-h100-superpod"])
FABRICS[_RAIL_ONLY.name] = _RAIL_ONLY
FABRICS.update({v.name: v for v in [_with_sharp(p) for p in FABRICS.values() if p.sharp]})
FABRICS_HELP = ", ".join(FABRICS)


def is_preset(text: str) -> bool:
    """Whether ``--fabric``'s ``text`` names a preset (any case) rather than a file."""
    return str(text).strip().lower() in FABRICS


def fabric_preset(name: str) -> FabricPreset:
    """The preset ``name`` (any case); an unknown name is refused naming the presets."""
    key = str(name).strip().lower()
    if key not in FABRICS:
        raise InputError(f"{name!r}: not a fabric preset or file; presets: {FABRICS_HELP}", param="fabric")
    return FABRICS[key]


@dataclasses.dataclass(frozen=True)
class SweepFabric:
    """What ``--fabric`` gives a data-parallel sweep's NCCL collectives (``--collective nccl``) beyond each
    layout's hosts, GPUs and NICs: a preset's constants and tier, or a fabric file's constants alone.

    Fields:
      constants: the constants NCCL's pricing reads (:class:`~sweep.model.nccl_fabric.FabricConstants`).
      label: the preset's name, or the file's source.
      nvlink_domain: GPUs in one NVLink domain (0: each host's GPUs, as without a fabric).
      leaf_hosts: hosts under one leaf (0: no tier above the hosts).
      oversubscription: the spine's, for a group wider than a leaf (kernels.layout_collectives.spine_divisor).
      collnet: NCCL's CollNet on (SHARP).  rail_only: rail-only wiring (no spine).
      describe: the ``assumed:`` line's phrase for it.  preset: from a preset (else a fabric file's constants).
    """

    constants: FabricConstants
    label: str
    nvlink_domain: float = 0.0
    leaf_hosts: float = 0.0
    oversubscription: float = 1.0
    collnet: bool = False
    rail_only: bool = False
    describe: str = ""
    preset: bool = False

    def domain_of(self, gpus: Any) -> Any:
        """GPUs an NVLink domain on hosts of ``gpus`` GPUs (a number or an array): each host its own without a
        domain of the fabric's; a preset's as :func:`~sweep.model.compute.host_system` builds it for hosts of other
        GPUs than its (its NVSwitch's, up to its own; a rack's stays)."""
        from netsweep_jax.sweep.model.compute import host_system  # numpy: not at --help's import

        if not self.nvlink_domain:
            return gpus
        preset = FABRICS.get(self.label) if self.preset else None
        host = preset.gpus_per_node if preset is not None else self.nvlink_domain
        return host_system(self.nvlink_domain, float(host), 1.0, gpus)[0]

    def tier(self) -> tuple[float, float, float, float]:
        """(CollNet on, hosts a leaf, the spine's oversubscription, rail-only), as the kernel reads them
        (:data:`kernels.overlap.FABRIC_FIELDS`)."""
        return (float(self.collnet), self.leaf_hosts, self.oversubscription, float(self.rail_only))

    def attrs(self) -> dict[str, float | str]:
        """A cube's attributes of it."""
        return {
            "fabric": self.label,
            "fabric_constants": self.constants.describe(),
            "nvlink_domain": self.nvlink_domain,
            "leaf_hosts": self.leaf_hosts,
            "oversubscription": self.oversubscription,
            "sharp": float(self.collnet),
            "rail_only": float(self.rail_only),
        }


def oversubscriptions(given: object, fabric: FabricPreset | FabricConstants | None) -> tuple[float, ...]:
    """The spine's oversubscription values (``--oversubscription``, both families): ``given`` (value syntax;
    refused without a fabric preset, whose hosts a leaf say which groups cross the spine, said so where the
    ``fabric`` is a file's constants, and on rail-only wiring, which has no spine), else the preset's as built,
    else 1."""
    preset = fabric if isinstance(fabric, FabricPreset) else None
    from netsweep_jax.sweep.core.axes import OVERSUBSCRIPTION, show
    from netsweep_jax.sweep.core.values import flat_values, parse_values  # numpy: not at --help's import

    if given is None:
        return (preset.oversubscription if preset is not None else 1.0,)
    shown = (
        given
        if isinstance(given, str)
        else ",".join(show(v) for v in flat_values(given, "oversubscription", OVERSUBSCRIPTION.rule()))
    )
    if preset is None:
        spines = ", ".join(name for name, p in FABRICS.items() if not p.rail_only)
        why = "; a fabric file records no leaf" if fabric is not None else ""
        raise InputError(
            f"{shown}: needs a --fabric preset with a spine (its hosts a leaf say which groups cross the "
            f"spine{why}): {spines}",
            param="oversubscription",
        )
    if preset.rail_only:  # nothing would read it
        raise InputError(
            f"{shown}: {preset.name} is wired rail-only: it has no spine to oversubscribe",
            param="oversubscription",
        )
    return tuple(float(v) for v in parse_values(shown, OVERSUBSCRIPTION))  # a repeat refused there


def sweep_fabric(choice: FabricPreset | FabricConstants, oversubscription: float | None) -> SweepFabric:
    """A data-parallel sweep's :class:`SweepFabric` from ``--fabric``'s preset or file constants and
    ``--oversubscription``'s one value (None: the preset's as built; checked by :func:`oversubscriptions`)."""
    if not isinstance(choice, FabricPreset):
        # A file that records no NICs (written by hand, or its hardware removed) sets none: said, not silent.
        hosts = (
            ""
            if choice.nics_per_node
            else "; the fabric file records no NICs: the sweep's --nics-per-node and --bw, as given or their "
            "defaults (its coordinates)"
        )
        return SweepFabric(
            choice, choice.source, describe=f"fabric file's constants ({choice.describe()}){hosts}"
        )
    spine = choice.oversubscription if oversubscription is None else oversubscription
    return SweepFabric(
        constants=choice.constants,
        label=choice.name,
        nvlink_domain=float(choice.nvlink_domain),
        leaf_hosts=float(choice.leaf_hosts),
        oversubscription=spine,
        collnet=choice.collnet,
        rail_only=choice.rail_only,
        describe=choice.describe(None if oversubscription is None else (spine,)),
        preset=True,
    )


TIERS = ("NVLink", "leaf", "spine", "rail")


def tier(
    size: float, stride: float, gpus_per_node: float, nvlink_domain: float, leaf_hosts: float,
    rail_only: bool = False, *, gpus: float,
) -> str:  # fmt: skip
    """The highest tier a parallel group of ``size`` GPUs ``stride`` ranks apart in a job of ``gpus`` crosses (''
    for a group of one): its block of stride x size consecutive ranks inside every NVLink domain it meets (<= Q_b
    GPUs, :func:`kernels.layout_collectives.domain_part`: EP 32 on 72-GPU racks crosses their edges), else
    inside one leaf (<= L G GPUs; every host under one leaf where ``leaf_hosts`` is 0), else over the spine; with
    ``rail_only`` wiring beyond the NVLink domain its rails (no spine): the rule
    :func:`kernels.layout_collectives.group_fabric` prices."""
    from netsweep_jax.kernels.layout_collectives import domain_part  # JAX: not for --help

    if size <= 1:
        return ""
    extent = stride * size
    if extent <= float(domain_part(extent, gpus, gpus_per_node, nvlink_domain)):
        return TIERS[0]
    if rail_only:
        return TIERS[3]
    if leaf_hosts <= 0 or extent <= max(leaf_hosts * gpus_per_node, nvlink_domain):
        return TIERS[1]
    return TIERS[2]


def traffic_groups(
    tp: float, cp: float, ep: float, expert_tp: float, dp: float, pp: float, moe: bool = False
) -> dict[str, tuple[float, float]]:
    """Per kind of traffic, its groups' (size, stride) under Megatron's rank order (tp, cp, ep, dp, pp): TP stride
    1, CP stride t, EP stride expert TP, DP with CP (dp x cp) stride t, PP stride t c D; and for a ``moe`` model
    its experts' gradients' group, expert DP (t c D / (e etp), stride e etp: Megatron-Core's expert grid, expert
    TP x EP x expert DP, over the same GPUs as TP x CP x DP), where it is not DP's own."""
    groups = {
        "TP": (tp, 1.0),
        "CP": (cp, tp),
        "EP": (ep, expert_tp),
        "DP": (dp * cp, tp),
        "expert DP": (tp * cp * dp / (ep * expert_tp), ep * expert_tp),
        "PP": (pp, tp * cp * dp),
    }
    if not moe or groups["expert DP"] == groups["DP"]:
        del groups["expert DP"]
    return groups


def traffic_tiers(
    tp: float, cp: float, ep: float, expert_tp: float, dp: float, pp: float, *, gpus_per_node: float,
    nvlink_domain: float, leaf_hosts: float, rail_only: bool = False, moe: bool = False,
) -> dict[str, str]:  # fmt: skip
    """Per kind of traffic (TP, CP, EP, DP, a ``moe`` model's expert DP, PP: :func:`traffic_groups`), the tier
    its groups cross under Megatron's rank order (tp, cp, ep, dp, pp), as :func:`tier`; kinds of one GPU are
    left out. Rail-only: an EP group with several GPUs in one NVLink domain also forwards over NVLink
    (``rail+NVLink``: its all-to-all's off-rail bytes)."""
    from netsweep_jax.kernels.layout_collectives import job_domain  # JAX: not for --help

    out, gpus = {}, tp * cp * dp * pp
    for kind, (size, stride) in traffic_groups(tp, cp, ep, expert_tp, dp, pp, moe).items():
        crossed = tier(size, stride, gpus_per_node, nvlink_domain, leaf_hosts, rail_only, gpus=gpus)
        # the most of the group in one domain: several forward over NVLink
        near = min(float(job_domain(gpus, gpus_per_node, nvlink_domain)), size * stride) / stride
        if crossed == TIERS[3] and kind == "EP" and near >= 2:
            crossed = "rail+NVLink"
        if crossed:
            out[kind] = crossed
    return out
