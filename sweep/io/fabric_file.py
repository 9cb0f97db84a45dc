"""A fabric file: the fabric's constants fitted to nccl-tests logs (``sweep calibrate --nccl-tests``), and what
they were measured on, for ``sweep grid`` and ``sweep plan --collective nccl --fabric FILE``.

JSON, one object::

    {"format": "netsweep fabric", "version": 2,
     "constants": {"eta_net": 0.83, "eta_nvl": 0.79, "latency_us": 4.1, "op_latency_us": 9.2,
                   "fill_us": 61.0, "fill_mib": 11.8},
     "hardware": {"gpu": "NVIDIA H100 80GB HBM3", "preset": "h100", "nics_per_node": 8, "nic_gbps": 400},
     "logs": [{"file": "ar-2x8.log", "sha256": "...", "collective": "all_reduce", "nodes": 2,
               "gpus_per_node": 8, "rows": 31}],
     "fit": {"loss": 0.0012, "rows_used": 52, "rows": 62},
     "date": "2026-12-03T15:04:05Z", "command": "sweep calibrate --nccl-tests ..."}

``constants`` is what a sweep reads (:class:`~sweep.model.nccl_fabric.FabricConstants`: eta_net, eta_nvl
fractions from 0.01 to 1; latency_us the network's latency lambda and op_latency_us a collective's fixed cost inside
one NVLink domain, us from 0 to :data:`MAX_LATENCY_US`; fill_us the pipeline's fill across domains, us from 0 to
:data:`MAX_FILL_US`; fill_mib the message from which it is whole, MiB above 0 up to :data:`MAX_FILL_MIB`); the
rest is provenance, but ``hardware``'s NICs and the GPUs of the hosts they were on (``hardware.gpus_per_node``,
written where ``calibrate --gpus-per-node`` gave the hosts; else ``gpus_per_node`` of the logs across hosts, where
they agree), from which a host of other GPUs has its own NICs. A file
of version 1 (netsweep before the last three) gives the first three only, and reads
as the model it was fitted with: no fixed cost and no fill. A file that is not such an object (a missing key, a
wrong type, a value not finite or out of range, a key twice in one object, a key, hardware key or constant it
does not know, half a NIC description, another format or version) is one :class:`InputError` naming the file
and the key.
"""

import json
import math
from pathlib import Path
from typing import Any

from netsweep_jax.sweep.core.axes import NUMERIC_AXES
from netsweep_jax.sweep.core.errors import InputError
from netsweep_jax.sweep.core.textfile import FABRIC_FORMAT, read_json_file
from netsweep_jax.sweep.core.values import real_scalar
from netsweep_jax.sweep.io.paths import write_atomically
from netsweep_jax.sweep.model.compute import FASTEST_NIC_GBPS, GPUS, MAX_NIC_GBPS
from netsweep_jax.sweep.model.fabric_constants import NAMES, FabricConstants

FORMAT = FABRIC_FORMAT
VERSION = 2
VERSIONS = {1: NAMES[:3], 2: NAMES}  # the constants each version of the file states
KEYS = ("format", "version", "constants", "hardware", "logs", "fit", "date", "command")
HARDWARE_KEYS = ("gpu", "preset", "nics_per_node", "nic_gbps", "gpus_per_node")
MAX_LATENCY_US = 1000.0  # a network latency per hop past a millisecond is no fabric's
MAX_FILL_US = 10000.0  # nor a pipeline's fill past 10 ms
MAX_FILL_MIB = 2.0**20  # nor chunks that grow past a TiB
# Each constant's bounds and rule: (low, high, low excluded, rule).
# A link's efficiency from 1%: below it a step took 10^28 s (eta_net 1e-30) or none was finite (1e-300), which a
# plan took for no layout fitting in memory; calibrate's fit searches 0.3 to 1.
MIN_EFFICIENCY = 0.01
RULES = {
    "eta_net": (MIN_EFFICIENCY, 1.0, False, f"from {MIN_EFFICIENCY:g} to 1 (a fraction)"),
    "eta_nvl": (MIN_EFFICIENCY, 1.0, False, f"from {MIN_EFFICIENCY:g} to 1 (a fraction)"),
    "latency_us": (0.0, MAX_LATENCY_US, False, f"from 0 to {MAX_LATENCY_US:g} (us)"),
    "op_latency_us": (0.0, MAX_LATENCY_US, False, f"from 0 to {MAX_LATENCY_US:g} (us)"),
    "fill_us": (0.0, MAX_FILL_US, False, f"from 0 to {MAX_FILL_US:g} (us)"),
    "fill_mib": (0.0, MAX_FILL_MIB, True, f"above 0 and at most {MAX_FILL_MIB:.0f} (MiB)"),
}


def fabric_document(
    constants: FabricConstants,
    *,
    hardware: dict[str, Any],
    logs: list[dict[str, Any]],
    fit: dict[str, Any],
    date: str,
    command: str,
) -> dict[str, Any]:
    """The file's object (module docstring); ``constants.source`` is not written (the file is the source)."""
    return {
        "format": FORMAT,
        "version": VERSION,
        "constants": dict(zip(NAMES, constants.stated())),
        "hardware": hardware,
        "logs": logs,
        "fit": fit,
        "date": date,
        "command": command,
    }


def write_fabric(out: str | Path, document: dict[str, Any], *, force: bool) -> Path:
    """Write ``document`` to ``out`` atomically (the caller has checked ``out`` before its work:
    :func:`sweep.io.paths.check_new_file`); no NaN, checked by reading it back as a sweep would."""
    text = json.dumps(document, indent=1, allow_nan=False) + "\n"
    constants_of(json.loads(text), Path(out))
    return write_atomically(out, lambda p: p.write_text(text), overwrite=force)


def read_fabric(path: str | Path) -> FabricConstants:
    """The constants of the fabric file at ``path`` (its path as their source), or one error naming the key."""
    path = Path(path)

    def refuse_constant(name: str) -> Any:
        raise InputError(f"{path}: {name} is not a number JSON allows (a fabric file's values are finite)")

    # A key twice in one object is refused (read_json_file): JSON keeps the last, a hand edit beside the old.
    document = read_json_file(path, "fabric file (JSON)", "a fabric file", parse_constant=refuse_constant)
    return constants_of(document, path)


def constants_of(document: Any, path: Path) -> FabricConstants:
    """The checked constants of a fabric file's object."""
    if not isinstance(document, dict):
        raise InputError(f"{path}: a JSON {type(document).__name__}; a fabric file is one object")
    if document.get("format") != FORMAT:
        # A JSON of another kind (calibrate's --out of a data-parallel fit) has no format: said as missing, not
        # as "format None" (a hunt).
        said = f"format {document['format']!r}" if "format" in document else "no format key"
        raise InputError(
            f"{path}: {said}; a fabric file says {FORMAT!r} (sweep calibrate --nccl-tests writes one)"
        )
    version = document.get("version")
    if type(version) is not int or version not in VERSIONS:
        said = f"version {version!r}" if "version" in document else "no version key"
        raise InputError(
            f"{path}: {said}; this netsweep reads fabric files of version {' or '.join(map(str, VERSIONS))}"
        )
    unread = [key for key in document if key not in KEYS]
    if unread:  # never silently unread: a misspelt "hardware" lost the NICs it records (a hunt)
        raise InputError(f"{path}: {unread[0]} is not a fabric file's key ({', '.join(KEYS)})")
    names = VERSIONS[version]
    constants = document.get("constants")
    if not isinstance(constants, dict):
        raise InputError(f"{path}: constants missing or not an object of {', '.join(names)}")
    unknown = [name for name in constants if name not in NAMES]
    if unknown:  # a misspelt constant is never silently unread
        raise InputError(f"{path}: constants.{unknown[0]} is not a constant ({', '.join(names)})")
    later = [name for name in NAMES if name in constants and name not in names]
    if later:  # never silently unread: a version 1 file states three constants
        raise InputError(
            f"{path}: constants.{later[0]} is not a constant of a version {version} file ({', '.join(names)}); "
            f"a file that states it is of version {VERSION}"
        )
    values: dict[str, Any] = {}
    for name in names:
        key = f"constants.{name}"
        if name not in constants:
            raise InputError(f"{path}: {key} missing")
        v = constants[name]
        number = real_scalar(v)  # an integer past a float's range: infinite (JSON allows any digits)
        if number is None:
            raise InputError(f"{path}: {key} {json.dumps(v)} must be a number")
        low, high, open_low, rule = RULES[name]
        if not math.isfinite(number) or number < low or number > high or (open_low and number == low):
            raise InputError(f"{path}: {key} {_shown(v)} must be {rule}")
        values[name] = number
    hardware = hardware_fields(document.get("hardware"), path)
    hosts = _hosts(document, path)
    if "nics_per_node" in hardware and hosts is not None and "gpus_per_node" not in hardware:
        hardware["gpus_per_node"] = hosts
    return FabricConstants(**values, source=str(path), held=_held(document, path), **hardware)


def _held(document: dict, path: Path) -> tuple[str, ...]:
    """The constants a file's fit held at the shipped fit's (``fit.held_at_shipped``: its logs could not tell
    them), which a sweep on the file says; () where the file records none (a file written by hand)."""
    fit = document.get("fit")
    held = fit.get("held_at_shipped", []) if isinstance(fit, dict) else []
    if not isinstance(held, list) or any(name not in NAMES for name in held):
        raise InputError(
            f"{path}: fit.held_at_shipped {_shown(held)} must be a list of constants ({', '.join(NAMES)})"
        )
    return tuple(held)


def _hosts(document: dict, path: Path | str = "") -> float | None:
    """The GPUs a host of the hosts whose NICs a file records: its logs' ``gpus_per_node``, those across hosts
    (a one-host log's GPUs used no NIC; every log where none spans hosts), where they agree on one count, which a
    sweep not given ``--gpus-per-node`` takes; else None (logs of hosts of several sizes, or none: the NICs then
    apply to a sweep's hosts as recorded). A log's count that is not a whole number of GPUs a host can have is
    refused, naming the file and the key: it sets the sweep's hosts (2.5, "8" or 0 were read as no count, and
    the file's NICs went to the default host)."""
    logs = document.get("logs")
    logs = [log for log in logs if isinstance(log, dict)] if isinstance(logs, list) else []
    spec = NUMERIC_AXES["gpus_per_node"]
    count: dict[int, float] = {}  # a log's GPUs a host, by its place in logs
    for i, log in enumerate(logs):
        if "gpus_per_node" not in log:
            continue
        v = log["gpus_per_node"]
        number = real_scalar(v)
        if number is None or not spec.allows(number):  # an integer axis: a fraction is refused there
            raise InputError(f"{path}: logs[{i}].gpus_per_node {_shown(v)} {spec.rule()}")
        count[i] = number
    across = [i for i, log in enumerate(logs) if (real_scalar(log.get("nodes")) or 0) > 1] or range(len(logs))
    counts = {count[i] for i in across if i in count}
    return next(iter(counts)) if len(counts) == 1 else None


def hardware_fields(hardware: Any, path: Path | str = "") -> dict[str, Any]:
    """What a file records of its hosts (``hardware``: ``gpu``/``preset``, ``nics_per_node``, ``nic_gbps``, and
    ``gpus_per_node`` where calibrate was given the hosts) as :class:`FabricConstants`' fields: ``fitted_on`` the
    GPU (its account: any text, empty dropped; not text refused), and the NICs where it records both (a one-host log records none), which become a sweep's --nics-per-node and --bw where not given,
    so a recorded value a sweep could not take is refused, naming the file and its key."""
    if hardware is None:
        return {}
    if not isinstance(hardware, dict):
        raise InputError(
            f"{path}: hardware {_shown(hardware)} must be an object (gpu, nics_per_node, nic_gbps)"
        )
    unread = [key for key in hardware if key not in HARDWARE_KEYS]
    if unread:  # a misspelt nic_gbps had priced the job on the GPU's system's NICs, in silence (a hunt)
        raise InputError(f"{path}: hardware.{unread[0]} is not a hardware key ({', '.join(HARDWARE_KEYS)})")
    preset = hardware.get("preset")
    # Said as the GPU the constants were fitted on: a preset's name, in any case.
    if preset is not None:
        if not isinstance(preset, str) or preset.lower() not in GPUS:
            raise InputError(
                f"{path}: hardware.preset {_shown(preset)} is not a GPU preset ({', '.join(GPUS)})"
            )
        preset = preset.lower()
    named = hardware.get("gpu")
    if named is not None and not isinstance(named, str):  # was dropped in silence (a hunt)
        raise InputError(f"{path}: hardware.gpu {_shown(named)} must be text, the GPU's name")
    gpu = preset or named
    out: dict[str, Any] = {"fitted_on": gpu} if isinstance(gpu, str) and gpu else {}
    if preset:  # a GPU preset: the sweep's GPU where none is given, as a fabric preset's hosts' is
        out["gpu"] = preset
    keys = ("nics_per_node", "nic_gbps")
    given = [key for key in keys if key in hardware]
    if len(given) == 1:  # half a NIC description: calibrate records both, each null where it records none
        other = ({*keys} - set(given)).pop()
        raise InputError(f"{path}: hardware.{given[0]} without hardware.{other}: give both, or neither")
    nics, rate = hardware.get("nics_per_node"), hardware.get("nic_gbps")
    if nics is None and rate is not None:  # a rate without its NICs: calibrate never wrote it
        raise InputError(f"{path}: hardware.nics_per_node null beside a nic_gbps: give both, or neither")
    if rate is None:  # none recorded: neither key, or calibrate's null rate (before 5 December)
        if "gpus_per_node" in hardware:
            _host_gpus(hardware["gpus_per_node"], path)
            raise InputError(f"{path}: hardware.gpus_per_node without the NICs it is the hosts of: give both")
        return out
    for key, axis in (("nics_per_node", "nics_per_node"), ("nic_gbps", "bandwidth")):
        v, spec = hardware[key], NUMERIC_AXES[axis]
        number = real_scalar(v)
        # calibrate's rule for the rate it records, said first: the axis's wider range (up to 1000000) had been
        # named for a rate above it (a hunt)
        if key == "nic_gbps" and number is not None and number > MAX_NIC_GBPS:
            raise InputError(
                f"{path}: hardware.nic_gbps {_shown(v)} must be at most {MAX_NIC_GBPS:g} (Gbit/s, each NIC's: no "
                f"NIC runs faster than {FASTEST_NIC_GBPS:g} today)"
            )
        if number is None or not spec.allows(number):
            unit = f" ({spec.units})" if spec.units != "1" else ""
            raise InputError(f"{path}: hardware.{key} {_shown(v)} {spec.rule()}{unit}")
        out[key] = number
    if "gpus_per_node" in hardware:
        out["gpus_per_node"] = _host_gpus(hardware["gpus_per_node"], path)
    return out


def _host_gpus(v: Any, path: Path | str) -> float:
    """``hardware.gpus_per_node``: the hosts as built (calibrate --gpus-per-node), where the logs ran fewer ranks a
    host, whose NICs the file records, in place of the logs' ranks a host (a review: hosts of 6 GPUs were recorded
    as the logs' 4, with the NICs 4 ranks reached). Checked wherever it stands; beside no NICs it is refused (it
    says whose NICs they are: a review found it dropped there in silence)."""
    spec = NUMERIC_AXES["gpus_per_node"]
    number = real_scalar(v)
    if number is None or not spec.allows(number):
        raise InputError(f"{path}: hardware.gpus_per_node {_shown(v)} {spec.rule()}")
    return number


def _shown(v: Any) -> str:
    """A value as the file spells it, a long one cut (an integer of 400 digits)."""
    text = json.dumps(v)
    return text if len(text) <= 24 else f"{text[:12]}... ({len(text)} characters)"
