"""The six constants NCCL's pricing reads (:class:`kernels.nccl.Constants`) and where they come from, as stated
(pure Python: the API's typed options name the class without importing numpy or JAX). The shipped fit's are
:data:`sweep.model.nccl_fabric.SHIPPED`; a fabric file's, :func:`sweep.io.fabric_file.read_fabric`.
"""

import dataclasses
from collections.abc import Iterable


@dataclasses.dataclass(frozen=True)
class FabricConstants:
    """The fabric's constants (:class:`kernels.nccl.Constants`): eta_net and eta_nvl, the fractions of NCCL's
    model bandwidth reached across hosts and inside an NVLink domain; latency_us, the network's latency lambda
    per hop (us); and what NCCL's tuner leaves out: op_latency_us, a collective's fixed cost inside one NVLink
    domain (us), fill_us, the pipeline's whole fill across domains (us), and fill_mib, the message from which
    it is whole (MiB). ``source``: where they come from (a fabric file's path, or the shipped fit's report);
    ``fitted_on``: the GPU a fabric file's logs ran on, as it records it ("" where it records none), and
    ``nics_per_node``, ``nic_gbps`` its hosts' NICs (0: not recorded), which a sweep not given its NICs takes as
    a preset's, and ``gpus_per_node`` the GPUs of those hosts (0: not recorded), from which a host of other
    GPUs has its own NICs (:meth:`host_for`); ``gpu`` the GPU preset its logs ran on where the file names one
    ("" where not), a sweep's GPU where none is given, as a preset's hosts' is (an H100 file priced a transformer
    on the default V100: a hunt). The last three constants default to the model without them (a fabric file of
    version 1)."""

    eta_net: float
    eta_nvl: float
    latency_us: float
    source: str
    op_latency_us: float = 0.0
    fill_us: float = 0.0
    fill_mib: float = 1.0
    fitted_on: str = ""
    nics_per_node: float = 0.0
    nic_gbps: float = 0.0
    gpus_per_node: float = 0.0
    gpu: str = ""
    held: tuple[str, ...] = ()  # the constants a fabric file's logs could not tell, held at the shipped fit's

    def settings(self) -> dict[str, float]:
        """The cluster options it sets where a user gives none, as :meth:`FabricPreset.settings` does: the hosts
        its logs ran on as the file records them, their NICs (``nics_per_node``, ``bandwidth`` in Gbit/s) and
        their GPUs (``gpus_per_node``, where the NICs' hosts are recorded). Without the GPUs a file of 4-GPU
        hosts' 4 NICs went to the GPU's default 8-GPU host: half the NICs a GPU (a hunt)."""
        recorded = {"nics_per_node": self.nics_per_node, "bandwidth": self.nic_gbps}
        if self.nics_per_node > 0:
            recorded["gpus_per_node"] = self.gpus_per_node
        return {name: value for name, value in recorded.items() if value > 0}

    def host_for(self, per_node: Iterable[float], typed: str, remedy: str) -> dict[str, float]:
        """The NICs of hosts of the ``--gpus-per-node`` given (``per_node``, as ``typed``), as a preset's host of
        other GPUs has them (:func:`~sweep.model.compute.host_system`): max(ceil(N g / G), 1) from the file's N
        NICs on hosts of G GPUs; {} where the file records no NICs or their hosts, or the hosts are its own. One
        value (each would build another host: a list refused, naming ``remedy``). A file's 8 NICs of 8-GPU hosts
        were given to hosts of 4 GPUs as they were: twice the NICs a GPU (a hunt)."""
        if not (self.gpus_per_node and self.nics_per_node):
            return {}
        whose = f"a fabric file of {self.gpus_per_node:g}-GPU hosts, hosts of other GPUs"
        built = other_host(
            (self.gpus_per_node, self.gpus_per_node, self.nics_per_node),
            per_node,
            typed,
            remedy,
            whose,
            "NICs",
        )
        return {} if built is None else {"nics_per_node": built[1]}

    def taken_for(self, gpus: Iterable[str]) -> str:
        """The ``assumed`` line's phrase where ``gpus`` (GPU presets) holds another GPU than the one the file's
        logs ran on ("" where it names none, or none is another): its constants are taken as they are, said (a
        hunt; ``sweep plan`` had said only what it was fitted on, a later hunt)."""
        elsewhere = sorted(set(gpus) - {self.gpu})
        if not (self.gpu or self.fitted_on) or not elsewhere:
            return ""
        ran_on = f"{self.gpu}s" if self.gpu else self.fitted_on
        return f"the fabric file's logs ran on {ran_on}, its constants taken as they are for {', '.join(elsewhere)}s"

    def stated(self) -> tuple[float, ...]:
        """The constants in their stated units, in :data:`NAMES`' order (a fabric file's, the fit's)."""
        return (self.eta_net, self.eta_nvl, self.latency_us, self.op_latency_us, self.fill_us, self.fill_mib)

    def columns(self) -> tuple[float, ...]:
        """The layout kernel's columns (:data:`sweep.engine.compiled.GPU_FIELDS`' ``nccl_*``): as stated, the
        fill's message in bytes."""
        return (*self.stated()[:5], self.fill_mib * MIB)

    def describe(self) -> str:
        """``eta_net 0.968, eta_nvl 0.905, latency 1.8 us, op 9.71 us, fill 53.5 us from 10.9 MiB: SOURCE``
        (four significant digits)."""
        # No fill (a file of version 1) has no message it is whole from.
        whole = f" from {self.fill_mib:.4g} MiB" if self.fill_us > 0 else ""
        # The hardware it was fitted on, said where a file records it: a sweep of other GPUs or NICs takes
        # these constants as they are, so the line lets a reader see the two differ.
        nics = f"{self.nics_per_node:g} x {self.nic_gbps:g} Gbit/s NICs a host" if self.nics_per_node else ""
        if nics and self.gpus_per_node:
            nics = f"hosts of {self.gpus_per_node:g} GPUs and {nics}"
        on = ", ".join(part for part in (self.fitted_on, nics) if part)
        fitted = f" (fitted on {on})" if on else ""
        # a fit's constants its logs could not tell are the shipped fit's, not the cluster's: said (a hunt)
        held = (
            f"; {', '.join(self.held)} the shipped fit's (its logs could not tell them)" if self.held else ""
        )
        return (
            f"eta_net {self.eta_net:.4g}, eta_nvl {self.eta_nvl:.4g}, latency {self.latency_us:.4g} us, "
            f"op {self.op_latency_us:.4g} us, fill {self.fill_us:.4g} us{whole}: {self.source}{fitted}{held}"
        )


# NCCL's search reads the NICs at --bw (their nominal rate, as NCCL does); what crosses nodes runs at --util of
# it, then its fitted transport efficiency on top: a --util below 1 is a transport at that share of the one fitted
# (a fabric file's eta_net already is the transport measured), which the assumed line says (a hunt: --util 0.5 on
# a fabric file had priced 0.5 x eta_net in silence).
UTILIZATION_ON_ETA = (
    "--util: nccl chooses for NICs at --bw, each channel across nodes at most --util of its NICs' share"
    " (where NVLink or NCCL's step holds it lower, --util changes nothing), on top of its fitted transport"
    " efficiency eta_net"
)

# The constants' names in the fit and in a fabric file, in FabricConstants.stated()'s order.
NAMES = ("eta_net", "eta_nvl", "latency_us", "op_latency_us", "fill_us", "fill_mib")
MIB = 2**20


def other_host(
    host: tuple[float, float, float],
    per_node: Iterable[float],
    typed: str,
    remedy: str,
    whose: str,
    follow: str,
) -> tuple[float, float] | None:
    """A fabric's NVLink domain and NICs for hosts of the ``--gpus-per-node`` given (``per_node``, as ``typed``),
    as :func:`~sweep.model.compute.host_system` builds them from its own ``host`` (its GPUs, domain and NICs);
    None where the hosts are its own. One value: each would build another host (a list refused, naming the
    fabric as ``whose`` and what ``follow``s the host, and ``remedy``). A preset's and a file's
    (:meth:`FabricPreset.host_for`, :meth:`FabricConstants.host_for`)."""
    gpus, domain, nics = host
    values = [float(v) for v in per_node]
    if all(v == gpus for v in values):
        return None
    if len(values) > 1:
        from netsweep_jax.sweep.core.errors import InputError

        raise InputError(
            f"{typed}: with {whose} take one value (their {follow} follow the host), or give {remedy}",
            param="gpus_per_node",
        )
    from netsweep_jax.sweep.core.axes import NUMERIC_AXES
    from netsweep_jax.sweep.model.compute import host_system  # numpy: not at --help's import

    own, built = host_system(float(domain), float(gpus), float(nics), values[0])
    most = NUMERIC_AXES["nics_per_node"].high  # the layout family's bound too
    if built > most:  # said as the option given: it was refused as a --nics-per-node never typed (a hunt)
        from netsweep_jax.sweep.core.errors import InputError

        raise InputError(
            f"{typed}: hosts of {values[0]:g} GPUs would have {built:g} NICs as the fabric's hosts have them "
            f"({nics:g} for {gpus:g} GPUs), above the {most:g} --nics-per-node takes; give {remedy}",
            param="gpus_per_node",
        )
    return float(own), float(built)
