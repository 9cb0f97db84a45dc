"""#39: a restructuring changes no cube. A fixed set of small commands (both families, a MoE model under a stack,
a reduction, a plan; NCCL's pricing apart, whose compiles are long for the suite: its columns
reach the kernel by name in tests/test_sweep_settings.py, its results the float64 reference in
tests/test_dp_nccl.py and tests/test_layout_nccl.py) is run and each cube's content compared
with what the code wrote when the digests were last made (``tests/data/cubes_before.json``: this file run as
a script; regenerate only for a change that means to change results, and say why in the commit). First made
with c725c0e's code, before #39's family declarations, option declarations and helpers; made again on
2026-12-06, when the shipped large-model constants were refitted (the pipeline's bubble paced by an uneven
interleaved split's largest chunk): the steps by which the cubes had changed on purpose since c725c0e (the
collective ``ring-or-tree`` renamed, a plan's ``layout_dp`` and its status rules) went with the old digests.
Made again on 2026-12-07, when NCCL's shipped constants were refitted (an NVLS head's link charged twice): a
layout grid's fingerprint hashes its GPU table, which carries them; no value of these cubes changed.
Made again on 2026-12-08, when the large-model constants file was written again for a runs file whose two
held-out rows' FLOP count was corrected (the constants the same; the ``assumed`` line says the file's date),
taking in the settings declared since, at their defaults (``zero3_gather_once``).

The content is every dataset (dtype, shape, values) and every attribute but those that record when, where and
with which versions a cube was made, and the progress group (checksums of the values' bits). Float values are
compared to a relative 1e-5: float32's last bits may differ with the process's compiled code (a process that
compiled other block shapes first)."""

import json
import pathlib
import sys

import h5py
import numpy as np
from typer.testing import CliRunner

from netsweep_jax.sweep.cli.app import app

BEFORE = pathlib.Path(__file__).resolve().parent / "data" / "cubes_before.json"
COMMANDS = {
    "data-parallel.h5": ["grid", "--model", "resnet50", "--bw", "10,100", "--nodes", "2,4"],
    "reduced.h5": ["grid", "--model", "resnet50", "--bw", "1..100@5", "--nodes", "1,8", "--reduce", "max:bandwidth"],
    "layouts.h5": ["grid", "--model", "llama3-8b", "--gpus", "64", "--global-batch", "256", "--tp", "1,2"],
    "moe-stack.h5": ["grid", "--model", "qwen3-30b-a3b", "--gpus", "512", "--global-batch", "1024", "--tp", "1,2",
                     "--ep", "8", "--pp", "2", "--stack", "megatron-core", "--moe-dispatcher", "flex"],
    "plan.h5": ["plan", "--model", "llama3-8b", "--gpus", "64", "--global-batch", "256", "--bw", "100,400"],
}  # fmt: skip
# When, where and with what a cube was made: not its content.
VOLATILE = {
    "created",
    "command",
    "netsweep_version",
    "jax_version",
    "python",
    "device_kind",
    "DIMENSION_LIST",
    "REFERENCE_LIST",
}


def _attr(value: object) -> object:
    """An attribute as JSON keeps it."""
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, np.ndarray):
        return [_attr(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        return value.item()
    return value


def content(path: pathlib.Path) -> dict[str, object]:
    """A cube's content, as the module docstring says: path -> attributes, and for a dataset its dtype kind,
    shape and values (text for strings)."""
    out: dict[str, object] = {}

    def add(name: str, obj: h5py.HLObject) -> None:
        if name.startswith("progress"):
            return
        entry: dict[str, object] = {k: _attr(obj.attrs[k]) for k in sorted(obj.attrs) if k not in VOLATILE}
        if isinstance(obj, h5py.Dataset):
            a = np.asarray(obj[()])
            values = a.ravel().tolist()
            if a.dtype.kind in "OS":
                values = [v.decode() if isinstance(v, bytes) else str(v) for v in values]
            elif a.dtype.kind == "f":
                values = [None if np.isnan(v) else v for v in values]  # JSON has no NaN
            entry["@data"] = {"kind": a.dtype.kind, "shape": list(a.shape), "values": values}
        out[name] = entry

    with h5py.File(path) as f:
        add("/", f)
        f.visititems(add)
    return out


def cubes(directory: pathlib.Path) -> dict[str, dict[str, object]]:
    """Run :data:`COMMANDS` into ``directory``; each cube's :func:`content`."""
    out = {}
    for name, args in COMMANDS.items():
        # The CPU's block size and XLA's kernel wherever the test runs (a GPU would size its own blocks).
        pinned = ["--block-configs", "262144", "--kernel", "xla"] if args[0] == "grid" else []
        result = CliRunner().invoke(app, [*args, *pinned, "--out", str(directory / name)])
        assert result.exit_code == 0, result.output
        out[name] = content(directory / name)
    return out


def differences(now: object, before: object, where: str = "") -> list[str]:
    """Where ``now`` differs from ``before``: floats beyond a relative 1e-5, anything else at all."""
    if isinstance(now, dict) and isinstance(before, dict):
        keys = sorted(set(now) | set(before))
        return [d for k in keys for d in differences(now.get(k), before.get(k), f"{where}/{k}")]
    if isinstance(now, list) and isinstance(before, list) and len(now) == len(before):
        return [d for i, (a, b) in enumerate(zip(now, before)) for d in differences(a, b, f"{where}[{i}]")]
    if isinstance(now, float) and isinstance(before, float) and now != before:
        close = abs(now - before) <= 1e-5 * max(abs(now), abs(before)) + 1e-12  # a true 0 against a last bit
        return [] if close else [f"{where}: {now!r} != {before!r}"]
    return [] if now == before else [f"{where}: {now!r} != {before!r}"]


def settings_added_since(now: dict[str, dict[str, object]], before: dict[str, dict[str, object]]) -> None:
    """A setting of one value per sweep declared since (sweep.core.sweep_settings: #39's proof, a new setting in
    three library files, added ``main_param_bytes``) is a new attribute of each layout cube, which the cube
    before lacks, and a new phrase of its ``assumed`` line: both taken out of ``now`` where it holds the setting's
    default, so that any other value (or any other new attribute) still differs. The grid's fingerprint, a hash
    of its inputs and settings (for --resume), then changes too: its inputs are compared one by one, so it is left
    out. The ``assumed`` line's phrases are compared as a set: the settings' phrases follow their declarations'
    order since they are said from them."""
    from netsweep_jax.sweep.core.sweep_settings import SETTINGS, SweepSettings

    defaults = SweepSettings().attrs()
    for name, cube in now.items():
        root, old = cube["/"], before[name]["/"]
        assert isinstance(root, dict) and isinstance(old, dict)
        added = [k for k in defaults if k in root and k not in old and root[k] == defaults[k]]
        for key in added:
            del root[key]
        if added:
            root.pop("grid_fingerprint", None), old.pop("grid_fingerprint", None)
        if "assumed" in root and "assumed" in old:
            new_phrases = {SETTINGS[k].said.format(SETTINGS[k].shown()) for k in added if k in SETTINGS}
            root["assumed"] = sorted(set(str(root["assumed"]).split("; ")) - new_phrases)
            old["assumed"] = sorted(set(str(old["assumed"]).split("; ")))


def test_the_fixed_commands_give_the_cubes_they_gave_before(tmp_path):
    now, before = cubes(tmp_path), json.loads(BEFORE.read_text())
    settings_added_since(now, before)
    found = differences(now, before)
    assert not found, f"{len(found)} differences, the first: " + "; ".join(found[:5])


def test_the_comparison_sees_a_changed_value_and_not_a_last_bit(tmp_path):
    CliRunner().invoke(app, [*COMMANDS["data-parallel.h5"], "--out", str(tmp_path / "a.h5")])
    before = content(tmp_path / "a.h5")
    with h5py.File(tmp_path / "a.h5", "r+") as f:
        first = (0,) * f["scaling_factor"].ndim
        f["scaling_factor"][first] = np.nextafter(f["scaling_factor"][first], np.float32(2))
    assert not differences(content(tmp_path / "a.h5"), before)
    with h5py.File(tmp_path / "a.h5", "r+") as f:
        f["scaling_factor"][first] *= 1.001
    assert differences(content(tmp_path / "a.h5"), before) == [
        f"/scaling_factor/@data/values[0]: {content(tmp_path / 'a.h5')['scaling_factor']['@data']['values'][0]!r} "
        f"!= {before['scaling_factor']['@data']['values'][0]!r}"
    ]


if __name__ == "__main__":  # regenerate the digests (a change that means to change results)
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        BEFORE.write_text(json.dumps(cubes(pathlib.Path(d)), sort_keys=True) + "\n")
    sys.exit(0)
