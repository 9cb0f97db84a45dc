"""The fabric a collective runs on, from the hardware a measurement states (host-side, float64).

One :class:`Fabric` per measured row: the GPU preset its name maps to (:data:`~sweep.model.compute.GPUS`:
NVLink rate, NVLink domain, the chip's architecture), the hosts, GPUs per host and NICs the row states, and
what it forced (``NCCL_ALGO``, ``NCCL_PROTO``) or enabled (CollNet / SHARP). What the row leaves unknown
that the model needs is a reason (:class:`Unrepresented`), never a guess: a multi-host row without its NICs,
a GPU without a preset, a transport the model has no efficiency for (TCP sockets).

:class:`FabricConstants`: the three constants NCCL's pricing reads (:class:`kernels.nccl.Constants`) and where
they come from: the shipped fit (:data:`SHIPPED`) or a fabric file (``sweep calibrate --nccl-tests``).
"""

import dataclasses
import re

import numpy as np

from netsweep_jax.kernels.layout_collectives import NCCL_CONSTANTS
from netsweep_jax.kernels.nccl import ALGORITHMS, PROTOCOLS
from netsweep_jax.sweep.model.compute import GPUS, die

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


@dataclasses.dataclass(frozen=True)
class FabricConstants:
    """The fabric's constants (:class:`kernels.nccl.Constants`): eta_net and eta_nvl, the fractions of NCCL's
    model bandwidth reached across hosts and inside an NVLink domain, and latency_us, the network's latency
    lambda per hop (us); ``source``: where they come from (a fabric file's path, or the shipped fit's report)."""

    eta_net: float
    eta_nvl: float
    latency_us: float
    source: str

    def columns(self) -> tuple[float, float, float]:
        """The layout kernel's columns (:data:`sweep.engine.compiled.GPU_FIELDS`' last three)."""
        return (self.eta_net, self.eta_nvl, self.latency_us)

    def describe(self) -> str:
        """``eta_net 0.902, eta_nvl 0.814, latency 2.39 us: SOURCE`` (four significant digits)."""
        return (
            f"eta_net {self.eta_net:.4g}, eta_nvl {self.eta_nvl:.4g}, latency {self.latency_us:.4g} us: "
            f"{self.source}"
        )


# The constants `sweep validate --nccl` fitted on published nccl-tests rows (results/validation-nccl).
SHIPPED = FabricConstants(
    eta_net=float(np.asarray(NCCL_CONSTANTS.eta_net)),
    eta_nvl=float(np.asarray(NCCL_CONSTANTS.eta_nvl)),
    latency_us=float(np.asarray(NCCL_CONSTANTS.latency)),
    source="results/validation-nccl",
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
    first = re.match(r"([a-z_]+)\b", low)
    word = m.group(1) if m else (first.group(1) if first else "")
    if word.replace("_", "") in names:
        algo = names[word.replace("_", "")]
    m = re.search(r"nccl_proto=([a-z0-9]+)", low)
    if m and m.group(1) in PROTOCOLS:
        proto = PROTOCOLS.index(m.group(1))
    collnet = "nccl_collnet_enable=1" in low
    transport = "socket" if "net/socket" in low else ""
    return algo, proto, collnet, transport


def fabric_of(
    gpu: str, gpus_per_node: int, nodes: int, nics: int | None, nic_gbps: float | None, stated: str
):
    """A row's :class:`Fabric` from its stated hardware, or :class:`Unrepresented` saying what is missing."""
    low = gpu.lower()
    match = next((entry for entry in GPU_NAMES if entry[0] in low), None)
    if match is None:
        known = ", ".join(sorted({e[0] for e in GPU_NAMES}))
        return Unrepresented(f"GPU {gpu!r} has no preset (known: {known})")
    _, preset, nvswitch, why = match
    algo, proto, collnet, transport = stated_choice(stated)
    if transport == "socket":
        return Unrepresented("TCP sockets (NET/Socket): the model has no transport efficiency for sockets")
    if nodes > 1 and not (nics and nic_gbps):
        return Unrepresented("nics_per_node or nic_gbps not stated: a multi-host row needs its NICs")
    spec = GPUS[preset]
    return Fabric(
        gpus_per_node=gpus_per_node,
        nodes=nodes,
        domain=max(1, spec.domain // spec.gpus_per_node),
        nvlink=spec.nvlink,
        nics=nics or 0,
        nic_gbps=nic_gbps or 0.0,
        arch=ARCH[die(preset)],
        nvswitch=nvswitch,
        collnet=collnet,
        algorithm=algo,
        protocol=proto,
        preset=preset,
        assumed=why,
    )
