"""Where NCCL can run an algorithm a sweep forces (``--collective nccl:ALGO``, as ``NCCL_ALGO=ALGO``).

The kernel prices a forced algorithm only where NCCL could run it, and NCCL's own choice elsewhere
(:func:`kernels.nccl.collective`); these are its rules (the masks of ``kernels/nccl.py``'s ``_bus_bandwidths``), on the
host, so that a sweep can say where its forcing fell back. With ``p`` the GPUs of one NVLink domain in the group,
``multi`` the group spanning several domains, ``ar`` an all-reduce (else an all-gather or a reduce-scatter),
``K_n`` the NICs of one domain:

    tree            ar
    ring            always
    collnet_direct  ar, multi, CollNet (SHARP) on, NVSwitch, p <= 8
    collnet_chain   ar, multi, CollNet on, p <= 8
    nvls            Hopper or newer, NVSwitch, p >= 2; and ar within one domain (across: with CollNet
                    on and K_n >= 2), or an all-gather or reduce-scatter within one domain of p <= 32
    nvls_tree       Hopper or newer, NVSwitch, p >= 2, ar, multi, K_n >= 2 (one head a NIC, and NCCL runs
                    neither NVLS nor NVLSTree on fewer than two heads: search.cc, tuning.cc)
    pat             an all-gather or reduce-scatter, multi, p = 1

(as :mod:`kernels.nccl` reads them from NVIDIA/nccl@5067397c2676d5aed50042fc39e5c8ee96eb0027
``src/graph/tuning.cc`` and ``src/enqueue.cc``'s limits of ranks a node, NCCL_MAX_DIRECT_ARITY + 1 and
NCCL_MAX_NVLS_ARITY; ``tests/test_nccl.py`` checks them against the float64 twin's choice). A forced
protocol (``nccl:ll``, ``nccl:ll128``, ``nccl:simple``) always runs: the ring has all three.
"""

import math

from netsweep_jax.sweep.core.layout_axes import NCCL_PROTOCOLS

NEEDS = {
    "tree": "an all-reduce",
    "ring": "nothing",
    "collnet_direct": "an all-reduce across NVLink domains of at most 8 GPUs with SHARP (CollNet) on and NVSwitch",
    "collnet_chain": "an all-reduce across NVLink domains of at most 8 GPUs with SHARP (CollNet) on",
    "nvls": "Hopper or newer with NVSwitch and 2 or more GPUs a domain: within one NVLink domain (of at most 32 "
    "GPUs for an all-gather or reduce-scatter; an all-reduce across domains with SHARP on and 2 or more NICs a "
    "domain)",
    "nvls_tree": "Hopper or newer with NVSwitch and 2 or more GPUs and NICs a domain: an all-reduce across NVLink "
    "domains",
    "pat": "an all-gather or reduce-scatter across NVLink domains of one GPU each",
}
"""What each algorithm needs to run, in words (the module docstring's rules)."""


def nowhere(collective: str, name: str) -> str:
    """The phrase of a forcing ``collective`` of algorithm ``name`` that no group of a sweep can run: NCCL's own
    choice is priced instead (both families say it so)."""
    return f"{collective} cannot run anywhere in this sweep (it needs {NEEDS[name]}): NCCL's own choice runs instead"


def forced_algorithm(collective: str) -> str | None:
    """The algorithm ``collective`` forces (``nccl:ALGO``: a name of :data:`NEEDS`), else None (NCCL's own choice,
    a forced protocol, which the ring runs every one of, or a flat collective)."""
    name = collective[5:] if collective.startswith("nccl:") else ""
    return name if name in NEEDS else None


def forced_protocol(collective: str) -> str | None:
    """The protocol ``collective`` forces (``nccl:PROTO``, as ``NCCL_PROTO``: ll, ll128 or simple), else None."""
    name = collective[5:] if collective.startswith("nccl:") else ""
    return name if name in NCCL_PROTOCOLS else None


def domain_nics(nics: float, hosts: float, domains: float) -> float:
    """The NICs of one NCCL node (an NVLink domain) of a group of ``hosts`` hosts of ``nics`` NICs each over
    ``domains`` domains: floor(K H / N), at least one, as the kernel counts them (kernels.nccl's K_n)."""
    return max(math.floor(nics * hosts / domains + 1e-6), 1)


def runs(
    algorithm: str,
    *,
    all_reduce: bool,
    arch: int,
    nvswitch: bool,
    gpus_per_domain: float,
    domains: float,
    collnet: bool,
    domain_nics: float,
) -> bool:
    """Whether NCCL can run ``algorithm`` (a name of :data:`NEEDS`) on a group of ``domains`` NVLink domains of
    ``gpus_per_domain`` GPUs and ``domain_nics`` NICs each, of architecture ``arch``
    (:data:`sweep.model.nccl_fabric.ARCH`'s index: 2 Hopper), for an all-reduce (``all_reduce``) or an all-gather
    / reduce-scatter (module docstring)."""
    multi, p = domains > 1, gpus_per_domain
    # across domains NVLS has one head a NIC, on its own GPU, and NCCL runs it on two heads or more
    nvls_ok = arch >= 2 and nvswitch and p >= 2 and (not multi or min(p, domain_nics) >= 2)
    heads = collnet and p <= 8  # CollNet's: NCCL_MAX_DIRECT_ARITY + 1 ranks a node
    return {
        "tree": all_reduce,
        "ring": True,
        "collnet_direct": all_reduce and multi and heads and nvswitch,
        "collnet_chain": all_reduce and multi and heads,
        "nvls": nvls_ok
        and ((all_reduce and (not multi or collnet)) or (not all_reduce and not multi and p <= 32)),
        "nvls_tree": nvls_ok and all_reduce and multi,
        "pat": not all_reduce and multi and p == 1,
    }[algorithm]
