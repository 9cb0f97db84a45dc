"""Which tier of the fabric each kind of a plan's traffic crosses, for the best layout of each setting: lines
``sweep plan`` prints after its table (:func:`tier_lines`), from the plan's own cube (its settings, best layouts
and the fabric preset it names)."""

import re

import xarray as xr

from netsweep_jax.kernels import nccl
from netsweep_jax.kernels.layout_collectives import domain_part, job_domain, spine_load
from netsweep_jax.sweep.analysis.planning import plan_rows
from netsweep_jax.sweep.core.schema import option_of
from netsweep_jax.sweep.model.fabrics import FABRICS, TIERS, traffic_groups, traffic_tiers

# The collective each kind's groups run, as the layout kernel prices it (kernels.nccl's index; -1: an all-reduce's
# rings and trees): CP's ring attention and PP's hand-offs send, EP exchanges, TP and DP reduce and gather.
COLLECTIVES = {
    "TP": -1,
    "CP": nccl.SENDRECV,
    "EP": nccl.ALLTOALL,
    "DP": -1,
    "expert DP": -1,
    "PP": nccl.SENDRECV,
}


def tier_lines(ds: xr.Dataset) -> list[str]:
    """Per setting with a best layout, one line: ``  <setting>: <layout>: TP NVLink, DP spine, PP leaf``;
    none for a plan without a fabric preset (no tier above the hosts is known)."""
    fabric = str(ds.attrs.get("fabric", ""))
    if not fabric:
        return []
    leaf = float(ds.attrs["leaf_hosts"])
    spine = float(ds.attrs["oversubscription"])
    rail_only = bool(ds.attrs.get("rail_only", 0.0))
    varying = [str(d) for d in ds.dims if d not in ("rank", "switch") and ds.sizes[d] > 1]
    built = "rail-only, no spine" if rail_only else f"{leaf:g} hosts a leaf, spine {spine:g}:1"
    lines = [f"tiers each traffic crosses, best layout per setting (fabric {fabric}: {built}):"]
    experts = _with_experts(ds)
    for row in plan_rows(ds):
        if row["rank"] != 1:
            continue
        # plan_rows writes a system dim's 0 as the GPU preset's value (planning._resolved).
        per_node, domain = row["gpus_per_node"], row["nvlink_domain"]
        sizes = (row["layout_tp"], row["layout_cp"], row["layout_ep"], row["layout_expert_tp"], row["layout_dp"],
                 row["layout_pp"])  # fmt: skip
        moe = row["model"] in experts or row["layout_ep"] > 1 or row["layout_expert_tp"] > 1
        crossed = traffic_tiers(
            *sizes,
            gpus_per_node=per_node,
            nvlink_domain=domain,
            leaf_hosts=leaf,
            rail_only=rail_only,
            moe=moe,
        )
        groups = traffic_groups(*sizes, moe=moe)
        setting = " ".join(f"{option_of(d)} {_shown(row[d])}" for d in varying) or "(one setting)"
        said = (
            ", ".join(
                f"{kind} {where}{_slows_past(kind, groups[kind], row, leaf) if where == TIERS[2] else ''}"
                for kind, where in crossed.items()
            )
            or "no traffic between GPUs"
        )
        leaf_ranks = 0.0 if rail_only else leaf * per_node
        unpriced = uneven_domains(row["gpus"], per_node, domain) + straddled(
            groups, row["gpus"], per_node, domain, leaf_ranks
        )
        lines.append(f"  {setting}: {row['layout']}: {said}{unpriced}{_sharp_unused(fabric, row, crossed)}")
    return lines


def _sharp_unused(fabric: str, row: dict, crossed: dict[str, str]) -> str:
    """``; SHARP unused: ...``, where a fabric with SHARP (CollNet) on has a best layout whose data-parallel sync
    across hosts is ZeRO's reduce-scatter and all-gather, which are not priced with CollNet (docs/model.md): the
    -sharp preset's plan equal to the plain one's reads as SHARP being worthless (a hunt)."""
    preset = FABRICS.get(fabric)
    zero = int(row["layout_zero"])
    # DP's, or a mixture of experts' expert DP where it alone crosses hosts (a review)
    across = any(crossed.get(kind, TIERS[0]) != TIERS[0] for kind in ("DP", "expert DP"))
    if preset is None or not preset.collnet or zero < 1 or not across:
        return ""
    return (
        f"; SHARP unused: ZeRO {zero} syncs by reduce-scatter and all-gather, which CollNet is not priced for"
    )


def _with_experts(ds: xr.Dataset) -> set[str]:
    """The plan's models that are mixtures of experts, by the descriptions its cube keeps (``models``: ``name:
    ... 8 experts top-2 ...``, one a model, ``; `` apart): a preset's and an ``--arch``'s alike (a review: an
    ``--arch`` MoE at EP 1 was taken for dense)."""
    entries = (entry.partition(": ") for entry in str(ds.attrs.get("models", "")).split("; "))
    return {name for name, _, said in entries if re.search(r"\b\d+ experts top-\d+", said)}


def _slows_past(kind: str, group: tuple[float, float], row: dict, leaf: float) -> str:
    """`` (slows past 32:1 at the earliest)``: the oversubscription 1 / f from which the spine slows a kind's
    traffic that crosses it (``group``: its size and stride), f the share of a leaf's NIC ports its collective
    sends out of the leaf (:func:`kernels.layout_collectives.spine_load`, the kernel's own rule): exactly there
    where its channels run at their share of the NICs, later where NVLink or NCCL's step holds them below it
    (:func:`kernels.nccl._running`)."""
    size, stride = group
    f = float(
        spine_load(size, stride, COLLECTIVES[kind], float(row["gpus"]), float(row["gpus_per_node"]),
                   float(row["nics_per_node"]), float(row["nvlink_domain"]), leaf)
    )  # fmt: skip
    return f" (slows past {1.0 / f:.4g}:1 at the earliest)"


def uneven_domains(gpus: float, gpus_per_node: float, domain: float) -> str:
    """What the tiers assume where ``gpus`` do not fill whole NVLink domains of ``domain`` GPUs ('' where they
    do): placed evenly over the fewest domains that hold them, where that is whole hosts a domain
    (:func:`kernels.layout_collectives.job_domain`: 240 GB200s as 60 a rack; their blocks' edges priced); else
    a group's block of ranks is taken to be inside a domain when it is no wider than one, so a block that
    crosses a domain's edge (19 trays as 9.5 a rack) is priced and said as inside it."""
    if gpus <= domain or gpus % domain == 0:
        return ""
    share = float(job_domain(gpus, gpus_per_node, domain))
    if share < domain:
        return (
            f" (assumed: {gpus:g} GPUs placed evenly over {gpus / share:g} {domain:g}-GPU NVLink domains, "
            f"{share:g} each)"
        )
    return (
        f" (assumed: {gpus:g} GPUs are not whole {domain:g}-GPU NVLink domains; a group whose ranks cross a "
        "domain's edge is priced as inside it)"
    )


def straddled(
    groups: dict[str, tuple[float, float]],
    gpus: float,
    gpus_per_node: float,
    domain: float,
    leaf_ranks: float,
) -> str:
    """Where a kind's blocks of ranks (``groups``: its groups' size and stride,
    :func:`~sweep.model.fabrics.traffic_groups`) tile the GPUs out of step with the NVLink domains or the leaves
    (``leaf_ranks``: GPUs a leaf, 0: none), some blocks cross an edge (EP 32 on 72-GPU racks: ranks 64-95 are 8
    on one rack and 24 on the next). A domain's edge is priced: the group at its fewest GPUs in one domain
    (:func:`kernels.layout_collectives.domain_part`; a hunt had found EP 32 planned first with its all-to-all on
    NVLink, where those 8 GPUs send three quarters of it over their NICs), and said so; a leaf's is not (a block
    no wider than a leaf is priced as under one), and said as assumed. '' where no kind's blocks cross one."""
    priced, assumed = [], []
    share = float(job_domain(gpus, gpus_per_node, domain))  # the job's GPUs a domain
    held = f"{domain:g}-GPU NVLink domains" + (f" ({share:g} of the job's each)" if share < domain else "")
    for kind, (size, stride) in groups.items():
        extent = size * stride
        part = float(domain_part(extent, gpus, gpus_per_node, domain))
        if size > 1 and part < min(extent, share):
            priced.append(
                f"{kind}'s {extent:g}-GPU blocks cross the edges of {held}, priced at their fewest GPUs in one, "
                f"{part:g}"
            )
        # a block wider than a domain and no wider than a leaf, the leaf repeated, and not whole blocks
        if size > 1 and domain < extent <= leaf_ranks < gpus and leaf_ranks % extent:
            assumed.append(
                f"{kind}'s {extent:g}-GPU blocks cross the edges of {leaf_ranks:g}-GPU leaves, priced as under one"
            )
    return (f" ({'; '.join(priced)})" if priced else "") + (
        f" (assumed: {'; '.join(assumed)})" if assumed else ""
    )


def _shown(value: object) -> str:
    """A setting's value as the plan's table says it (``400``, ``h100``)."""
    return f"{value:g}" if isinstance(value, float) else str(value)
