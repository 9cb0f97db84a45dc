"""The two model families as the engine sees them: dims in cube order, cut into three groups, and outputs.

A family's cube has the dims ``structural + outer + inner``. The engine (:mod:`sweep.engine.blocks`)
evaluates one index of the *structural* dims at a time (a task), and hands the kernel a block of
``outer`` lanes by ``inner`` lanes: the rows and columns the kernel crosses. The data-parallel family's
structural dims are those that make new buckets (a model, a collective, ...), its outer dims the worker
layout, its inner dims the axes the recurrence sweeps freely; the layout family has no structural dim, its
outer dims are the setting (what is trained and on what) and its inner dims the layout (what ``sweep plan``
searches). Block plan, dispatch, cube writer, reader, reductions and checksums read these groups from
here, not from either family's vocabulary. Pure Python (the CLI's ``--help`` imports it).

A family is also a declared plugin, as xarray's backends are entry points: what only it knows how to do is
named in its declaration (:attr:`Family.hooks`, ``"module:attribute"``, loaded at first use by
:meth:`Family.hook`), and the engine, io and the CLI ask the family for it rather than asking which family a
sweep is. Each hook lives in the layer that uses it (:data:`HOOK_LAYERS`), so a name here never makes a lower
layer import a higher one.
"""

import dataclasses
import functools
import importlib
from collections.abc import Iterable, Mapping
from typing import Any

from netsweep_jax.sweep.core import layout_axes, schema
from netsweep_jax.sweep.core.axes import NUMERIC_AXES, AxisSpec

# Each hook a family declares, and the layer (sweep.<layer>) it lives in and is used from:
#   blocks:       the engine's block adapter (a class: the cube's blocks to the family's compiled kernel).
#   widths:       how the engine rounds a block's rows and columns (sweep.engine.blocks.Widths).
#   cube_inputs:  what a cube of the family keeps besides its coordinates: fn(h5py.File, grid).
#   grid_command: sweep grid's grid of the family and its assumed line: fn(settings, chosen, kept).
#   need_command: sweep need's question of the family: fn(settings, chosen, asked).
HOOK_LAYERS = {
    "blocks": "engine",
    "widths": "engine",
    "cube_inputs": "io",
    "grid_command": "cli",
    "need_command": "cli",
}


@functools.cache
def _load(target: str) -> Any:
    """The object a hook names (``"package.module:attribute"``), its module imported at first use."""
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


@dataclasses.dataclass(frozen=True, eq=False)  # each family one object: equal and hashed by identity
class Family:
    """One model family's cube.

    Attributes:
      name: the cube's ``family`` attribute.
      structural: dims evaluated one index at a time (one task each).
      outer: dims of a block's rows (the kernel's first axis).
      inner: dims of a block's columns (the kernel's second axis).
      variables: output name -> (units, long name), in cube order.
      integer: outputs kept as int32 whatever the store dtype (codes), filled with -1 until written.
      positive: outputs that are never 0 or infinite where they are defined: a float16 store that shows one
        so has over- or underflowed.
      axes: the numeric axes of its cube (option, units, long name, value syntax), which a selection's text is
        read by and its numeric coordinates are described by.
      long_names: its text dims' (coordinates that are names) long names.
      derived_zero: dims where 0 stands for a value the sweep derives -> what it is (a reader says so).
      whole_numbers: whether its tables show whole-number coordinates and a plan's layout columns without a
        decimal point (tp 8, gpus 1024: counts).
      title_dims: dims a plot's title names when the cube holds one value of them (what was swept for).
      hooks: what only this family knows how to do, by hook name (:data:`HOOK_LAYERS`) -> ``"module:attribute"``.
    """

    name: str
    structural: tuple[str, ...]
    outer: tuple[str, ...]
    inner: tuple[str, ...]
    variables: Mapping[str, tuple[str, str]]
    axes: Mapping[str, AxisSpec]
    long_names: Mapping[str, str]
    integer: tuple[str, ...] = ()
    positive: tuple[str, ...] = ()
    derived_zero: Mapping[str, str] = dataclasses.field(default_factory=dict)
    whole_numbers: bool = False
    title_dims: tuple[str, ...] = ()
    hooks: Mapping[str, str] = dataclasses.field(default_factory=dict)

    @property
    def dims(self) -> tuple[str, ...]:
        """Every dim, in cube order."""
        return self.structural + self.outer + self.inner

    @property
    def varying(self) -> tuple[str, ...]:
        """The dims a block cuts (outer, then inner)."""
        return self.outer + self.inner

    def coordinate_attrs(self, dim: str) -> dict[str, str]:
        """``units`` and ``long_name`` of a coordinate of this family's cube: a numeric axis's, or a text dim's."""
        if dim in self.axes:
            return {"units": self.axes[dim].units, "long_name": self.axes[dim].long_name}
        return {"units": "", "long_name": self.long_names[dim]}

    def hook(self, name: str) -> Any:
        """The family's ``name`` hook (:data:`HOOK_LAYERS`): the object its declaration names."""
        return _load(self.hooks[name])

    def stored_dtype(self, name: str, store: str) -> str:
        """The dtype output ``name`` is kept in, in memory and in a cube, under the store dtype ``store``: int32
        for a code (:attr:`integer`: a rule's number, never NaN), else ``store``."""
        return "int32" if name in self.integer else store

    def unset(self, name: str) -> float:
        """The value output ``name`` holds until written: -1 for a code (:attr:`integer`), else NaN."""
        return -1 if name in self.integer else float("nan")

    def in_cube_order(self, names: Iterable[str]) -> list[str]:
        """The outputs among ``names``, in the cube's order."""
        names = set(names)
        return [name for name in self.variables if name in names]


DATA_PARALLEL = Family(
    "data-parallel",
    schema.STRUCTURAL,
    schema.WORKERS,
    schema.INNER,
    schema.VARIABLES,
    NUMERIC_AXES,
    schema.LONG_NAMES,
    positive=("scaling_factor", "iteration_time"),
    title_dims=("model",),  # a hunt: a resnet50 cube's curves were titled "nodes = 8, ratio = 1" alone
    hooks={
        "blocks": "netsweep_jax.sweep.engine.data_parallel_blocks:DataParallelBlocks",
        "widths": "netsweep_jax.sweep.engine.blocks:DATA_PARALLEL_WIDTHS",
        "cube_inputs": "netsweep_jax.sweep.io.cube:write_data_parallel_inputs",
        "grid_command": "netsweep_jax.sweep.cli.sweeps:grid_of_data_parallel",
        "need_command": "netsweep_jax.sweep.cli.analyses:need_of_data_parallel",
    },
)
LAYOUTS = Family(
    "layouts",
    (),
    layout_axes.SETTING_DIMS,
    layout_axes.PARALLEL_DIMS,
    layout_axes.VARIABLES,
    layout_axes.AXES,
    layout_axes.LONG_NAMES,
    integer=("status",),
    positive=("iteration_time", "tokens_per_s", "memory_gb"),
    derived_zero={
        **dict.fromkeys(layout_axes.SYSTEM_DIMS, "the GPU's system"),
        "dp": "gpus / (tp pp cp)",
        "gpus": "tp pp cp dp (--dp given)",
        "grad_bytes": "the precision's",
    },
    whole_numbers=True,
    # and each layout degree the cube holds one value of (a hunt: curves of TP 8, PP 4 titled by the model alone)
    title_dims=("model", "gpu", "gpus", "global_batch", "tp", "pp", "cp", "ep", "micro_batch", "zero"),
    hooks={
        "blocks": "netsweep_jax.sweep.engine.layout_blocks:LayoutBlocks",
        "widths": "netsweep_jax.sweep.engine.blocks:LAYOUT_WIDTHS",
        "cube_inputs": "netsweep_jax.sweep.io.cube:write_no_inputs",
        "grid_command": "netsweep_jax.sweep.cli.sweeps:grid_of_large_model",
        "need_command": "netsweep_jax.sweep.cli.analyses:need_of_large_model",
    },
)
FAMILIES = {f.name: f for f in (DATA_PARALLEL, LAYOUTS)}


def family_of(attrs: Mapping[str, object]) -> Family:
    """The family of a cube with global attributes ``attrs`` (a cube made before the attribute: data-parallel)."""
    return FAMILIES.get(str(attrs.get("family", DATA_PARALLEL.name)), DATA_PARALLEL)
