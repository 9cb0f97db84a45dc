"""#39: each model family a declared plugin. What only a family knows how to do is a hook of its declaration
(sweep.core.families), in the layer that uses it; the engine, io and the CLI ask the family for the hook and
never which family a sweep is."""

import pathlib
import re

import pytest

from netsweep_jax.sweep.core.families import FAMILIES, HOOK_LAYERS

ROOT = pathlib.Path(__file__).resolve().parents[1]
# The engine's modules of one family: its grid, its options, its block adapter and its evaluation. Every other
# module of the engine, io and the CLI serves both families alike.
FAMILY_MODULES = {
    "sweep/engine/grid.py",
    "sweep/engine/data_parallel_blocks.py",
    "sweep/engine/layout_grid.py",
    "sweep/engine/layout_options.py",
    "sweep/engine/layout_blocks.py",
    "sweep/engine/layout_evaluation.py",
}
# A family named: its declaration, its cube attribute's value, or a test of a sweep's or an adapter's type.
NAMES_A_FAMILY = re.compile(
    r"\bDATA_PARALLEL\b|\bLAYOUTS\b|[\"'](layouts|data-parallel)[\"']"
    r"|isinstance\([^)]*\b(Grid|LayoutGrid|\w+Blocks)\b"
)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_hook_loads_and_lives_in_the_layer_that_uses_it(family):
    declared = FAMILIES[family]
    assert set(declared.hooks) == set(HOOK_LAYERS), family
    for hook, layer in HOOK_LAYERS.items():
        module = declared.hooks[hook].partition(":")[0]
        assert module.startswith(f"netsweep_jax.sweep.{layer}."), (family, hook, module)
        assert callable(declared.hook(hook)) or hook == "widths", (family, hook)
    assert declared.hook("blocks") is not FAMILIES[({*FAMILIES} - {family}).pop()].hook("blocks")


def test_the_generic_modules_name_no_family():
    generic = [
        path
        for layer in ("engine", "io", "cli")
        for path in sorted((ROOT / "sweep" / layer).glob("*.py"))
        if str(path.relative_to(ROOT)) not in FAMILY_MODULES
    ]
    named = {
        f"{path.relative_to(ROOT)}:{n}": line.strip()
        for path in generic
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if NAMES_A_FAMILY.search(line)
    }
    assert not named, named
    assert all((ROOT / m).exists() for m in FAMILY_MODULES)


def test_a_families_widths_are_its_own():
    from netsweep_jax.sweep.engine.blocks import Blocking

    sizes = {
        family: dict.fromkeys(FAMILIES[family].dims, 1) for family in FAMILIES
    }  # one cell: the small shape
    shapes = {f: (b.kb_width, b.ci_width) for f in FAMILIES for b in [Blocking(sizes[f], 2**18, FAMILIES[f])]}
    assert shapes == {"data-parallel": (8, 64), "layouts": (8, 8192)}, shapes


def test_a_question_asked_of_every_block_places_its_inputs_on_the_blocks_device(monkeypatch):
    # sweep need's adapter runs through the engine's dispatcher; its inputs went to the default device whatever
    # the block's (a review: every block on device 0 of four)
    import jax

    import netsweep_jax.sweep as sweep
    from netsweep_jax.sweep.engine import dispatch

    placed = []
    real = jax.device_put

    def device_put(value, device=None):
        placed.append(device)
        return real(value, device)

    monkeypatch.setattr(dispatch.jax, "device_put", device_put)
    ds = sweep.solve("resnet50", target=0.9, axis="ratio", bandwidth=[1, 10], nodes=2)
    assert int(ds.status.size) == 2 and placed and all(d is not None for d in placed), placed
