"""The fabric a collective runs on, from the hardware a measurement states (host-side, float64).

One :class:`Fabric` per measured row: the GPU preset its name maps to (:data:`~sweep.model.compute.GPUS`:
NVLink rate, NVLink domain, the chip's architecture), the hosts, GPUs per host and NICs the row states, and
what it forced (``NCCL_ALGO``, ``NCCL_PROTO``) or enabled (CollNet / SHARP). What the row leaves unknown
that the model needs is a reason (:class:`Unrepresented`), never a guess: a multi-host row without its NICs,
a GPU without a preset, a transport the model has no efficiency for (TCP sockets).

Two things NCCL reads from the machine rather than from the row's columns:

- The NICs the ranks reach (:func:`reached_nics`). NCCL's search builds each channel from a NIC near the GPU
  (``ncclTopoSelectNets`` takes the NICs of the closest path type first) and, once it has a solution, widens
  the path type no further than PXN (NVIDIA/nccl@5067397c2676d5aed50042fc39e5c8ee96eb0027:src/graph/search.cc,
  ``ncclTopoSelectNets`` and ``ncclTopoCompute``'s first pass); the GPUs that hold no rank are trimmed from
  its topology. So ``g`` ranks on a host of ``G`` GPUs and ``K`` NICs reach the NICs next to their own GPUs,
  ``ceil(K g / G)`` (all ``K`` once ``g = G``): one GH200 rank of a four-module Alps node reaches its module's
  one NIC, not the node's four.
- The network plugin's reported latency (:func:`plugin_latency`). A net plugin reports ``latency`` (us) in its
  properties; NCCL's search copies it into the graph's ``latencyInter`` (search.cc: ``graph->latencyInter =
  net->net.latency``) and the tuner adds it to every inter-node hop, twice for Simple (src/graph/tuning.cc,
  ``ncclTopoTuneModel``: ``interLat += graphs[a]->latencyInter``). NCCL's own InfiniBand and socket transports
  report 0 (src/transport/net_ib/init.cc, net_socket.cc); aws-ofi-nccl reports 0 unless its AWS platform table
  sets one for the instance (aws/aws-ofi-nccl@2daf7d303aa139a03140aa530957d10521e4478d:src/platform-aws.cpp,
  ``platform_data_map``; include/nccl_ofi_param.h, ``NET_LATENCY``), 75 us on an AWS instance the table
  lacks. It enters the kernel added to the fitted lambda (:class:`kernels.nccl.Constants` ``latency``), where
  NCCL adds it.

:class:`FabricConstants`: the six constants NCCL's pricing reads (:class:`kernels.nccl.Constants`) and where
they come from: the shipped fit (:data:`SHIPPED`) or a fabric file (``sweep calibrate --nccl-tests``).
"""

import dataclasses
import math
import re
from collections.abc import Collection

import numpy as np

from netsweep_jax.kernels.layout_collectives import NCCL_CONSTANTS
from netsweep_jax.kernels.nccl import ALGORITHMS, PROTOCOLS
from netsweep_jax.sweep.model.compute import GPUS, die, gpu_named, name_words
from netsweep_jax.sweep.model.fabric_constants import MIB, FabricConstants
from netsweep_jax.sweep.model.nccl_forcing import domain_nics, runs

# kernels/nccl.py's architecture index (0 Volta, 1 Ampere, 2 Hopper, 3 Blackwell) of each die.
ARCH = {"v100": 0, "a100": 1, "h100": 2, "b200": 3, "gb200": 3, "b300": 3, "gb300": 3}

# A GPU name as nccl-tests logs and papers write it -> (preset, NVSwitch in its usual system, why if not plain).
# First match wins (GB300 before GB200 before B300 before B200, GH200 before H200/H100).
GPU_NAMES: tuple[tuple[str, str, bool, str], ...] = (
    ("gb300", "gb300", True, ""),  # its preset's NVLink 5 (900 GB/s a GPU) and NVL72 rack of 18 hosts
    ("gb200", "gb200", True, ""),
    ("b300", "b300", True, ""),
    ("b200", "b200", True, ""),
    ("gh200", "h100", False, "GH200: an H100 die, NVLink between the host's modules without an NVSwitch"),
    ("h200", "h200", True, ""),
    ("h100", "h100", True, ""),
    ("a100", "a100", True, ""),
    ("v100", "v100", False, "V100: DGX-1's hybrid cube mesh, no NVSwitch"),
)
# The chips sold as an NVL card too (H100 NVL, H200 NVL: two PCIe cards bridged, no NVSwitch); for the others
# "NVL" names a rack's NVLink domain (GB200 NVL72).
NVL_CARDS = ("h100", "h200")
# GPUs a host holds where the system differs from its preset's: an Alps GH200 node is four GH200 modules, each
# with its own NIC (eth-cscs/cscs-docs@1690357:docs/alps/hardware.md, as nccl_tests.csv's CSCS rows cite it).
HOST_GPUS = {"gh200": 4}

# aws-ofi-nccl's latency reported to NCCL (us) by EC2 instance type (aws/aws-ofi-nccl@2daf7d3:src/platform-aws.cpp,
# platform_data_map: p4d/p4de/p5/p5e 75, p3dn 150, p5en/p6 35), in the order its regular expressions match;
# an AWS instance it lacks gets 75 (platform-aws.cpp: the fall-through default).
AWS_LATENCY: tuple[tuple[str, float], ...] = (
    (r"p3dn\.", 150.0),
    (r"p4de?\.", 75.0),
    (r"p5\.4xlarge", 75.0),
    (r"p5e?\.", 75.0),
    (r"(p5en|p6-b200)", 35.0),
    (r"p6-b300", 35.0),
    (r"p([5-9]|[0-9]{2,})", 35.0),
)
AWS_DEFAULT_LATENCY = 75.0


# The constants `sweep validate --nccl` fitted on published nccl-tests rows (results/validation-nccl).
SHIPPED = FabricConstants(
    eta_net=float(np.asarray(NCCL_CONSTANTS.eta_net)),
    eta_nvl=float(np.asarray(NCCL_CONSTANTS.eta_nvl)),
    latency_us=float(np.asarray(NCCL_CONSTANTS.latency)),
    source="results/validation-nccl",
    op_latency_us=float(np.asarray(NCCL_CONSTANTS.op_latency)),
    fill_us=float(np.asarray(NCCL_CONSTANTS.fill)),
    fill_mib=float(np.asarray(NCCL_CONSTANTS.fill_bytes)) / MIB,
)


@dataclasses.dataclass(frozen=True)
class Fabric:
    """What kernels/nccl.py's ``Fabric`` takes, for one row (SI units where not said).

    Attributes:
      gpus_per_node, nodes: g and H;  domain: hosts per NVLink domain (the preset's system's: its domain's GPUs
        over its GPUs per host, >= 1; 18 for an NVL72 rack).
      nvlink: the preset's NVLink per GPU, one direction, bytes/s (the datasheet's; 0: none).
      nics, nic_gbps: per host, and each NIC's rate in Gbit/s (0 on one host that states none).
      arch: kernels/nccl.py's index;  nvswitch, collnet: NVLS possible, in-network reduction on.
      algorithm, protocol: forced (index of :data:`ALGORITHMS` / :data:`PROTOCOLS`), -1 for NCCL's choice.
      preset: the GPU preset;  assumed: what was taken from the preset rather than the row ("" if nothing).
      net_latency: the network plugin's reported latency, us (:func:`plugin_latency`), added to lambda.

    ``nics`` is the NICs the ranks reach (:func:`reached_nics`), not the host's count where they differ.
    """

    gpus_per_node: int
    nodes: int
    domain: int
    nvlink: float
    nics: int
    nic_gbps: float
    arch: int
    nvswitch: bool
    collnet: bool
    algorithm: int
    protocol: int
    preset: str
    assumed: str
    net_latency: float = 0.0


@dataclasses.dataclass(frozen=True)
class Unrepresented:
    """A row the model cannot price, and why (one line)."""

    reason: str


def stated_choice(text: str) -> tuple[int, int, bool, str]:
    """(algorithm, protocol, CollNet enabled, transport) forced or enabled by a row's ``algo_or_protocol`` text:
    ``NCCL_ALGO=<a>`` / ``NCCL_PROTO=<p>`` or the text opening with an algorithm's name force it (``-1``: not
    forced); ``NCCL_COLLNET_ENABLE=1`` enables CollNet; ``NET/Socket`` names the TCP transport (else "")."""
    low = text.strip().lower()
    algo = proto = -1
    names = {name.replace("_", ""): i for i, name in enumerate(ALGORITHMS)}
    m = re.search(r"nccl_algo=([a-z_]+)", low)
    # An opening name forces its algorithm unless the text says NCCL chose it ("Ring (NCCL's default choice, not
    # forced)" had been priced as the ring forced, a hunt), said of the algorithm: "Tree (default protocol)" and
    # "Ring (forced; protocol not forced)" still force theirs (a review).
    chose = r"default choice|nccl'?s (?:own )?choice|algorithm not forced|^[a-z_]+\s*\((?:nccl(?:'?s)?\s+)?"
    chose += r"(?:default\s*(?:choice|algorithm)?\s*[,)]|not forced)|^[a-z_]+\s+(?:disabled|off)\b"
    first = None if re.search(chose, low) else re.match(r"([a-z_]+)\b", low)
    word = m.group(1) if m else (first.group(1) if first else "")
    if word.replace("_", "") in names:
        algo = names[word.replace("_", "")]
    m = re.search(r"nccl_proto=([a-z0-9]+)", low)
    if m and m.group(1) in PROTOCOLS:
        proto = PROTOCOLS.index(m.group(1))
    collnet = "nccl_collnet_enable=1" in low
    transport = "socket" if "net/socket" in low else ""
    return algo, proto, collnet, transport


# What a row's text may say that narrows NCCL's choice in a way no forcing prices (the model prices NCCL's whole
# choice or one algorithm or protocol forced): an exclusion list (NCCL_ALGO=^NVLS, NCCL's syntax), NVLS or PAT
# turned off. Such a row had been priced as NCCL's own choice, or as NVLS forced by its first word (a hunt).
# NCCL_ALGO=Ring,Tree: NCCL chooses among them (read as the first forced); a comma before another setting is none
# (a review: "NCCL_ALGO=Ring, NCCL_PROTO=Simple" had been called a list)
ALGORITHM_LIST = r"nccl_algo=[a-z_]+,\s*(?:tree|ring|collnet\w*|nvls\w*|pat)\b"
MOOT_WHEN_FORCED = ("NVLS turned off", "PAT turned off")  # moot where one algorithm is forced
UNPRICED_CHOICE = (
    (r"nccl_(?:algo|proto)=\^", "an exclusion list (NCCL_ALGO=^...)"),
    (ALGORITHM_LIST, "a list of algorithms (NCCL_ALGO=a,b)"),
    (r"nccl_nvls_enable=0|\bnvls\b[^,;]*(?<!-)\b(?:disabled|off)\b(?!-)", MOOT_WHEN_FORCED[0]),
    (r"nccl_pat_enable=0|\bpat\b[^,;]*(?<!-)\b(?:disabled|off)\b(?!-)", MOOT_WHEN_FORCED[1]),
)


def turned_off_runs(
    switch: str,
    arch: int,
    nvswitch: bool,
    collective: str,
    gpus_per_node: int,
    nodes: int,
    nics: float,
    domain_hosts: int,
) -> bool:
    """Whether the model's NCCL runs what ``switch`` (``NCCL_NVLS_ENABLE`` or ``NCCL_PAT_ENABLE``) turns off, on
    ``nodes`` hosts of ``arch`` (:data:`ARCH`'s index) with or without an NVSwitch, ``nics`` NICs a host reached
    and ``domain_hosts`` hosts an NVLink domain (:mod:`kernels.nccl`'s nvls_ok and its algorithms' rules): NVLS
    on Hopper and later behind an NVSwitch with several ranks a host, for an all-reduce (across NVLink domains
    only on two heads or more, one a NIC of a domain), or an all-gather or reduce-scatter inside one NVLink domain
    of at most 32 ranks (:func:`~sweep.model.nccl_forcing.runs`, the kernel's rules); PAT for an all-gather or reduce-scatter of one rank a host across hosts. Elsewhere
    the switch changes nothing (reviews: an A100's log, an all-to-all's, with NVLS off had been refused; a host
    of one NIC runs no NVLS across hosts)."""
    gathers = collective in ("all_gather", "reduce_scatter")
    if switch == "NCCL_NVLS_ENABLE":
        if not (gathers or collective == "all_reduce"):
            return False
        # NVLS or NVLSTree where the kernel can run them (sweep.model.nccl_forcing's rules, one NCCL node a domain)
        domains = math.ceil(nodes / max(domain_hosts, 1))
        nics_a_domain = domain_nics(nics, nodes, domains)

        def runs_here(name: str) -> bool:
            return runs(
                name,
                all_reduce=collective == "all_reduce",
                arch=arch,
                nvswitch=nvswitch,
                gpus_per_domain=gpus_per_node * nodes / domains,
                domains=domains,
                collnet=False,
                domain_nics=nics_a_domain,
            )

        return runs_here("nvls") or runs_here("nvls_tree")
    return gathers and gpus_per_node == 1 and nodes > 1


def unpriced_choice(text: str, runs: Collection[str] = MOOT_WHEN_FORCED) -> str:
    """What a row's ``algo_or_protocol`` text narrows that the model cannot price (:data:`UNPRICED_CHOICE`), or '':
    NVLS or PAT turned off is moot where one algorithm is forced (a review: "Ring, NCCL_NVLS_ENABLE=0" had been
    called unpriced) or where NCCL would not run it (``runs``: those of :data:`MOOT_WHEN_FORCED` it would run, by
    :func:`turned_off_runs`), an exclusion list is not."""
    low = text.lower()
    forced = stated_choice(text)[0] >= 0 and not re.search(ALGORITHM_LIST, low)
    # only NVLS or PAT turned off is moot beside a forced algorithm or where it would not run; an exclusion list
    # is not (a review)
    return next(
        (
            what
            for pattern, what in UNPRICED_CHOICE
            if not (what in MOOT_WHEN_FORCED and (forced or what not in runs)) and re.search(pattern, low)
        ),
        "",
    )


def system_host_gpus(gpu: str) -> int | None:
    """The GPUs a host of ``gpu``'s system holds (a DGX H100's 8, a GH200 node's 4), or None for a GPU with no
    preset."""
    match = _named(name_words(gpu))
    return None if match is None else HOST_GPUS.get(match[0], GPUS[match[1]].gpus_per_node)


def _named(words: Collection[str]) -> tuple[str, str, bool, str] | None:
    """The :data:`GPU_NAMES` entry a GPU's name words name (a whole word names the chip), or None."""
    return next((entry for entry in GPU_NAMES if entry[0] in words), None)


def reached_nics(nics: int, ranks_per_host: int, host_gpus: int) -> int:
    """The NICs ``ranks_per_host`` ranks of a host of ``host_gpus`` GPUs and ``nics`` NICs reach (module
    docstring): ``ceil(nics ranks / host_gpus)``, at least 1, all of them once every GPU holds a rank."""
    if ranks_per_host >= host_gpus or nics <= 0:
        return nics
    return max(1, math.ceil(nics * ranks_per_host / host_gpus))


def plugin_latency(text: str) -> float:
    """The latency (us) the row's network plugin reports to NCCL (module docstring), from the row's text: on AWS
    (EFA or an EC2 instance type named) aws-ofi-nccl's platform table's for the instance, else 0 (NCCL's
    InfiniBand and socket transports; aws-ofi-nccl off AWS, as on HPE Slingshot)."""
    low = text.lower()
    if not re.search(r"\befa\b|\b[a-z0-9-]+\.\d*x?large\b", low):
        return 0.0
    for pattern, latency in AWS_LATENCY:
        if re.search(r"\b" + pattern, low):
            return latency
    return AWS_DEFAULT_LATENCY


def fabric_of(
    gpu: str,
    gpus_per_node: int,
    nodes: int,
    nics: int | None,
    nic_gbps: float | None,
    stated: str,
    notes: str = "",
    host_gpus: int | None = None,
    collective: str = "all_reduce",
):
    """A row's :class:`Fabric` from its stated hardware (``notes``: the row's text, read for its network plugin's
    latency, :func:`plugin_latency`; ``host_gpus``: the GPUs a host holds, None for the GPU's system's;
    ``collective``: what NVLS or PAT turned off changes, :func:`turned_off_runs`), or :class:`Unrepresented`
    saying what is missing."""
    # A whole word names the chip: an RTX A1000 is no A100 (a substring took it for one, a hunt).
    words = name_words(gpu)
    match = _named(words)
    if match is None:
        known = ", ".join(sorted({e[0] for e in GPU_NAMES}))
        return Unrepresented(f"GPU {gpu!r} has no preset (known: {known})")
    if "pcie" in words or ("nvl" in words and match[1] in NVL_CARDS):
        # An H100 PCIe (or NVL: two cards bridged) has no NVSwitch: priced as the SXM system, NVLS and all, it
        # came out 6.5x its measured busbw.
        return Unrepresented(
            f"GPU {gpu!r} is a PCIe card: no NVSwitch, its links are not the {match[1]} system's"
        )
    _, preset, nvswitch, why = match
    # The chip's own preset where its name says a variant (an A100-SXM4-40GB is a100-40): a fabric file records it,
    # and a plan on it fitted 44 GB a GPU on the 40 GB cards (a hunt).
    variant = gpu_named(gpu, any_card=True)
    preset = variant if variant is not None and die(variant) == die(preset) else preset
    arch = ARCH[die(preset)]
    spec = GPUS[preset]
    system = HOST_GPUS.get(match[0], spec.gpus_per_node)
    host = host_gpus or system
    reached = reached_nics(nics or 0, gpus_per_node, host)
    domain_hosts = max(1, spec.domain // spec.gpus_per_node)
    runs = [
        what
        for what, switch in zip(MOOT_WHEN_FORCED, ("NCCL_NVLS_ENABLE", "NCCL_PAT_ENABLE"))
        if turned_off_runs(switch, arch, nvswitch, collective, gpus_per_node, nodes, reached, domain_hosts)
    ]
    if unpriced := unpriced_choice(stated, runs):
        return Unrepresented(
            f"{unpriced}: the model prices NCCL's whole choice, or one algorithm or protocol forced"
        )
    algo, proto, collnet, transport = stated_choice(stated)
    if transport == "socket":
        return Unrepresented("TCP sockets (NET/Socket): the model has no transport efficiency for sockets")
    if nodes > 1 and not (nics and nic_gbps):
        return Unrepresented("nics_per_node or nic_gbps not stated: a multi-host row needs its NICs")
    if host_gpus is not None and host_gpus > system:
        return Unrepresented(f"hosts of {host_gpus} GPUs; the {match[0]} system's hold {system}")
    if gpus_per_node > host:
        return Unrepresented(
            f"{gpus_per_node} GPUs on one host; the {match[0]} system's hosts hold {host} (hosts of one name, such as "
            "containers, count as one: name each host apart)"
        )
    return Fabric(
        gpus_per_node=gpus_per_node,
        nodes=nodes,
        domain=domain_hosts,
        nvlink=spec.nvlink,
        nics=reached,
        nic_gbps=nic_gbps or 0.0,
        arch=arch,
        nvswitch=nvswitch,
        collnet=collnet,
        algorithm=algo,
        protocol=proto,
        preset=preset,
        assumed=why,
        net_latency=plugin_latency(f"{stated} {notes}") if nodes > 1 else 0.0,
    )
