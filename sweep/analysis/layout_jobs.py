"""The large-model commands' work: a layout grid from the options a user gave, its output, its run.

``sweep grid --model llama3-70b ...`` and ``sweep plan`` parse their options in :mod:`sweep.cli`
and call :func:`layout_grid_from` with the options' values and the names the user set (a value
the user did not set follows the GPU's usual system, not the option's default). ``sweep grid``
runs the grid through the engine (:func:`sweep.io.job.run_grid`, as a data-parallel grid), ``sweep
plan`` through :func:`write_plan`. Each takes ``say``, a function that shows one line to the user
(the CLI's stderr), for what it assumed or read from a launch file.
"""

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from netsweep_jax.sweep.core.axes import NUMERIC_AXES
from netsweep_jax.sweep.core.errors import Infeasible, InputError, literal
from netsweep_jax.sweep.core.layout_axes import (
    DEFAULT_GPU,
    LAYOUT_OPTIONS,
    OWN_AXES,
    SHARED_AXES,
    schedule_name,
)
from netsweep_jax.sweep.core.schema import assumed_line, option_of
from netsweep_jax.sweep.core.sweep_settings import SETTING_OPTIONS
from netsweep_jax.sweep.core.wording import counted, exact_text

if TYPE_CHECKING:
    import h5py
    import xarray as xr

    from netsweep_jax.sweep.core.families import Family
    from netsweep_jax.sweep.io.paths import Claim
    from netsweep_jax.sweep.io.plan_checkpoint import PlanCheckpoint

Say = Callable[[str], None]

# Every option a layout sweep takes: its own, the data-parallel network axes it shares (the GPU's system where
# not given), the model, GPU, precision and collective, and the engine's (kernel, compile cache, several machines).
LAYOUT_GRID_READS = frozenset(
    (*LAYOUT_OPTIONS, *SHARED_AXES, "model", "nodes", "gpu", "precision", "collective", "x64")
    + (
        "kernel",
        "compile_cache",
        "distributed",
        "coordinator",
        "num_processes",
        "process_id",
        "stitch_timeout",
    )
)
# The searched dims a stack preset sets (sweep.model.stacks): with --stack, sweep plan keeps them at the stack's
# (or the user's) values and searches the rest of the layout.
STACK_SET = ("zero", "sequence_parallel", "expert_tp")
# Options of a data-parallel profile: named in the refusal of one given to a layout sweep.
WORKLOAD_OPTIONS = ("profile", "iteration_time", "batch", "seq_len")


def family_of(model: str | None, arch: str | None, model_given: bool, profile: object = None) -> "Family":
    """The model family a command runs (:mod:`sweep.core.families`): the layout family (kernels.layout) for
    large-model presets or ``arch``, the data-parallel one for profiles; both in one sweep refused, and a name
    neither family knows. ``model_given``: whether the user set the model (its default stands for nothing beside
    ``arch``); ``profile``: a profile file given (``--profile``), whose refusal of a model beside it is the
    data-parallel family's ("give one")."""
    from netsweep_jax.sweep.core.families import DATA_PARALLEL, LAYOUTS
    from netsweep_jax.sweep.core.values import close_match
    from netsweep_jax.sweep.model.builtin import builtin_names
    from netsweep_jax.sweep.model.llms import LLMS
    from netsweep_jax.sweep.model.transformers import TRANSFORMERS

    text = model if model_given or arch is None else ""
    names = [n.strip().lower() for n in str(text or "").split(",") if n.strip()]
    profiles = (*builtin_names(), *TRANSFORMERS)
    unknown = next((n for n in names if n not in LLMS and n not in profiles and profile is None), None)
    if unknown is not None:  # neither family's: said before a family's options are refused for it (a typo)
        raise InputError(
            f"{unknown!r}: unknown; known: data-parallel {', '.join(profiles)}; large models {', '.join(LLMS)}"
            f"{close_match(unknown, (*profiles, *LLMS))}",
            param="model",
        )
    large = [n for n in names if n in LLMS]
    other = [n for n in names if n not in LLMS]
    if (large or arch is not None) and other:
        raise InputError(
            f"{text}: large-model presets or --arch and data-parallel profiles ({', '.join(other)}) "
            f"cannot share a sweep",
            param="model",
        )
    return LAYOUTS if large or arch is not None else DATA_PARALLEL


# The layout options a data-parallel sweep takes too (sweep grid's: NCCL's collective on a fabric).
DATA_PARALLEL_TAKES = ("fabric", "oversubscription")


def refuse_layout_options(settings: Mapping[str, Any]) -> None:
    """Refuse any layout option set for a data-parallel profile (but :data:`DATA_PARALLEL_TAKES`)."""
    for name in LAYOUT_OPTIONS:
        if settings.get(name) is not None and name not in DATA_PARALLEL_TAKES:
            raise InputError(
                f"applies to large-model presets (sweep models lists them) or --arch, not to "
                f"{settings.get('model')}",
                param=name,
            )


def refuse_data_parallel_options(settings: Mapping[str, Any], given: Collection[str]) -> None:
    """Refuse, for a layout sweep, every data-parallel option the user set (--ratio, --fusion-mb, --accum,
    --compressor, ...): never silently ignored."""
    for name in settings:
        if name not in LAYOUT_GRID_READS and name in given:
            hint = (
                "; large models take --arch, --micro-batch and --global-batch"
                if name in WORKLOAD_OPTIONS
                else ""
            )
            raise InputError(f"applies to data-parallel profiles, not to a layout sweep{hint}", param=name)


def layout_grid_from(
    settings: dict[str, Any],
    given: Collection[str],
    *,
    search: bool = False,
    say: Say = lambda _: None,
    **kept: Any,
) -> Any:
    """The layout grid the options describe (``settings``: option name to value, None where unset; ``given``:
    the names the user set). Network options the user did not set follow the GPU's system; with ``search``
    (``sweep plan``) the layout options not given are searched over :func:`~sweep.analysis.planning.search_space`.
    A ``launch`` file's settings are taken into ``settings`` first. ``kept``: what a cube keeps (``variables``,
    ``store``, ``reduce``: :func:`~sweep.engine.layout_options.make_layout_grid`'s)."""
    from netsweep_jax.sweep.engine.layouts import make_layout_grid

    if settings.get("launch") is not None:  # what it sets counts as given
        given = {*given, *take_launch(settings, given, say)}
    model = settings.get("model") if "model" in given or not settings.get("arch") else None
    kwargs = {
        name: settings.get(name) for name in (*OWN_AXES, "arch", *SETTING_OPTIONS, "collectives", "stack")
    }
    for name in SHARED_AXES:
        kwargs[name] = settings.get(name) if name in given else None
    # one option, one meaning: the fabric, a preset's name or a file (read before --nodes: its hosts count them)
    fabric = one_fabric(str(settings["fabric"])) if settings.get("fabric") is not None else None
    if settings.get("nodes") is not None and "nodes" in given:
        chosen = settings.get("gpu") if "gpu" in given else None
        kwargs["gpus"] = gpus_from_nodes(settings["nodes"], kwargs, chosen, fabric)
    if search and settings.get("dp") is not None and kwargs.get("gpus") is None:
        # The GPU count is tp x pp x cp x dp: with dp fixed each layout searched is another cluster, and the
        # best tokens/s the largest one (16,384 GPUs at an MFU of 0.11 for --dp 16).
        raise InputError(
            f"{settings['dp']}: a plan compares layouts on one cluster; give its size with --gpus (with --dp or "
            "without it), or --nodes without --dp",
            param="dp",
        )
    sized = kwargs.get("gpus") is not None or kwargs.get("dp") is not None  # else: refused as unsized, below
    if (
        settings.get("launch") is not None
        and kwargs.get("global_batch") is None
        and "micro_batch" in given
        and sized
    ):
        nodes = settings["nodes"] if "nodes" in given else None  # grid's default --nodes is not the user's
        kwargs["global_batch"] = megatron_global_batch(str(settings["launch"]), nodes, kwargs, say)
    space, text = searched(settings, model, search)

    def named(value: str | None, default: str) -> str:  # '' is a value to refuse, not "use the default"
        return default if value is None else value

    gpu = DEFAULT_GPU  # --gpu's default, or the fabric preset's GPU
    if fabric is not None:
        kwargs["fabric"] = fabric
        gpu = getattr(fabric, "gpu", "") or gpu
        if "gpu" in given and settings.get("gpu") is not None:
            refuse_other_hosts(kwargs["fabric"], str(settings["gpu"]))
    kwargs["oversubscription"] = settings.get("oversubscription")
    grid = make_layout_grid(
        model,
        # sweep plan's --gpu has a default of its own: a fabric's GPU wins over it unless --gpu is given.
        gpu=named(settings.get("gpu") if "gpu" in given else None, gpu),
        precision=settings.get("precision")
        if "precision" in given
        else None,  # None: the GPUs' (fp16 on Volta)
        schedule=text["schedule"],  # None: the default, which the assumed line says
        recompute=text["recompute"],
        attention=settings.get("attention"),
        collective=str(settings["collective"]) if "collective" in given else None,
        dtype="float64" if settings.get("x64") else "float32",
        search=space,
        **kept,
        **kwargs,
    )
    if not search:
        grid.spine()  # a grid evaluates one oversubscription: a list refused before any work
    return grid


def searched(
    settings: Mapping[str, Any], model: str | None, search: bool
) -> tuple[dict[str, str], dict[str, str | None]]:
    """What a layout grid searches and its text options: (``space``, each layout option searched to its values,
    empty without ``search``; ``text``, ``schedule`` and ``recompute`` as given, with
    ``--virtual-pipeline-model-parallel-size`` as schedules, and with ``search`` each not given searched but
    for a ``--stack``'s recompute, its own)."""
    space: dict[str, str] = {}
    text = {name: settings.get(name) for name in ("schedule", "recompute")}
    if settings.get("virtual_stages") is not None:
        text["schedule"] = schedule_of_virtual_stages(settings["virtual_stages"], text["schedule"])
    if search:  # planning (and xarray) at use: a layout grid written to a cube never loads them
        from netsweep_jax.sweep.analysis.planning import SEARCHED_TEXT, search_space
        from netsweep_jax.sweep.model.llms import parse_arch, resolve_llm

        models = tuple(resolve_llm(n) for n in str(model).split(",") if n.strip()) if model else ()
        if settings.get("arch"):
            models += (parse_arch(settings["arch"]),)
        space = search_space(models) if models else {}
        # The text options not given are searched too (said with the numbers: the assumed line's searched).
        space.update({name: SEARCHED_TEXT[name] for name, value in text.items() if value is None})
        text = {name: value if value is not None else SEARCHED_TEXT[name] for name, value in text.items()}
        if settings.get("stack") is not None:  # the stack's settings are its defaults, not searched
            space = {name: values for name, values in space.items() if name not in (*STACK_SET, "recompute")}
            text["recompute"] = settings.get("recompute")
    return space, text


def refuse_other_hosts(fabric: Any, gpus: str) -> None:
    """Refuse a ``--gpu`` of another chip than a fabric preset's hosts (``gpus``: the option's text): the preset
    is one system (its NVLink domain, NICs and NCCL's tables), and pricing another GPU on it would mix two, as a
    data-parallel sweep refuses too. A fabric file is the fabric's constants, for any GPU."""
    from netsweep_jax.sweep.core.values import parse_names
    from netsweep_jax.sweep.model.compute import GPUS
    from netsweep_jax.sweep.model.fabrics import FabricPreset

    if not isinstance(fabric, FabricPreset):
        return
    for name in parse_names(gpus.lower(), "gpu", tuple(GPUS)):
        if not fabric.built_of(name):
            # each option as the front end spells it (the API's gpu=, a hunt: it read --gpu)
            raise InputError(
                f"{{0}} {literal(fabric.name)}: built of {fabric.gpu} hosts; {{1}} {name} is another chip (leave {{1}} "
                f"out or give {{1}} {fabric.gpu} for the preset's, or a fabric file for your own hosts)",
                names=("fabric", "gpu"),
            )


def one_fabric(name: str) -> Any:
    """--fabric's one value for a layout grid: a preset (any case) or a fabric file; an empty value or a list
    refused."""
    from netsweep_jax.sweep.io.fabric_file import read_fabric
    from netsweep_jax.sweep.model.fabrics import FABRICS_HELP, fabric_preset, is_preset

    if not name.strip():  # an empty path would be the working directory
        raise InputError(
            f"{name!r}: not a fabric; give a preset ({FABRICS_HELP}) or a fabric file",
            param="fabric",
        )
    if len(fabric_values(name)) > 1:  # a list: one plan each, which only the command sweep plan makes
        raise InputError(
            f"{name}: give one fabric here (a sweep evaluates one fabric); the command sweep plan plans each "
            "value of a list",
            param="fabric",
        )
    # Neither a preset nor a file: refused naming the presets (a file's own errors name the file).
    return fabric_preset(name) if is_preset(name) or not Path(name).exists() else read_fabric(name)


def spine_of(
    settings: Mapping[str, Any], fabric: str | None, fabrics: Sequence[str | None]
) -> dict[str, Any]:
    """``settings`` for the plan of ``fabric``, one of the ``fabrics`` given: in a list beside a fabric with a
    spine, a rail-only preset takes no ``--oversubscription`` (it has none: planned once, as built, and said so);
    alone, or in a list of rail-only presets alone, it is refused (a hunt: "a 4:1 spine or rail-only?" refused
    the whole list; a review: a list of two rail-only presets took it in silence)."""
    from netsweep_jax.sweep.model.fabrics import FABRICS

    def rail_only(name: str | None) -> bool:
        preset = FABRICS.get(name.lower()) if name is not None else None
        return preset is not None and preset.rail_only

    if not rail_only(fabric) or all(map(rail_only, fabrics)) or settings.get("oversubscription") is None:
        return {**settings, "fabric": fabric}
    return {**settings, "fabric": fabric, "oversubscription": None}


def fabric_values(text: str) -> tuple[str, ...]:
    """``--fabric``'s values: ``text`` itself where it names a file (a path may hold a comma), else its comma
    list (``dgx-h100-superpod,aws-p5``), each once (a preset in any case, a file by its path); an empty item is
    refused."""
    from netsweep_jax.sweep.model.fabrics import is_preset

    if "," not in text or Path(text).is_file():
        return (text,)
    items = [item.strip() for item in text.split(",")]
    if not all(items):
        raise InputError(f"{text!r}: an empty value; give fabrics as NAME,NAME or FILE,NAME", param="fabric")
    seen: set[str] = set()
    for item in items:
        key = item.lower() if is_preset(item) else str(Path(item).resolve())
        if key in seen:
            raise InputError(f"{text!r}: value {item} appears twice; each value once", param="fabric")
        seen.add(key)
    labels = [fabric_label(item) for item in items]
    for label in labels:
        if labels.count(label) > 1:  # a plan's files are named by it
            raise InputError(
                f"{text!r}: two fabrics named {label} (a plan's files are named by a file's stem); rename one",
                param="fabric",
            )
    return tuple(items)


def fabric_label(text: str) -> str:
    """A fabric value as a plan's heading and file names say it: a preset's name, a file's stem."""
    from netsweep_jax.sweep.model.fabrics import is_preset

    return text.strip().lower() if is_preset(text) else Path(text).stem


def take_launch(settings: dict[str, Any], given: Collection[str], say: Say) -> tuple[str, ...]:
    """A Megatron-LM launch file's settings (``settings['launch']``) into ``settings``, each refused if also
    given as an option; one line on what was taken and what was not used. Returns the names taken."""
    from netsweep_jax.sweep.io.launch import read_launch

    path = settings["launch"]
    read, unused, defaulted, shape = read_launch(path)
    _same_shape(path, shape, settings.get("model"), settings.get("arch"))
    # What the command leaves out is Megatron-LM's default, which an option given replaces; what it states, not
    # (its 1F1B, left out, by --schedule too).
    replaced = set(given) | ({"virtual_stages"} if "schedule" in given else set())
    taken = {name: value for name, value in read.items() if not (name in defaulted and name in replaced)}
    if "expert_tp" in defaulted and "expert_tp" in taken and "tp" in given:  # Megatron-LM's: the TP size used
        from netsweep_jax.sweep.core.values import whole_number

        if whole_number(str(settings["tp"]).strip()) is None:
            raise InputError(
                f"{settings['tp']}: {path} leaves out --expert-tensor-parallel-size, which Megatron-LM sets to the "
                "TP size, one of a list here: give {0} too",
                param="tp",
                names=("expert_tp",),
            )
        taken["expert_tp"] = str(settings["tp"]).strip()
    for name, value in taken.items():
        if name in given:
            raise InputError(f"given twice: as an option and in {path}", param=name)
        if name == "virtual_stages" and "schedule" in given:  # the file's virtual stages are its schedule
            raise InputError(
                f"given twice: as an option and in {path} (its virtual pipeline stages)", param="schedule"
            )
        if (
            name == "moe_dispatcher" and value == "allgather"
        ):  # a MoE command's left out: Megatron-LM's, not modelled
            raise InputError(
                f"{path} leaves out --moe-token-dispatcher-type: Megatron-LM's default, allgather, is not "
                f"modelled; give {option_of('moe_dispatcher')} alltoall or flex"
            )
        if name == "precision" and value == "fp32":  # no --bf16, --fp16 or --fp8-format (a hunt: priced bf16)
            raise InputError(
                f"{path} gives no --bf16, --fp16 or --fp8-format: Megatron-LM then trains in fp32, which netsweep "
                f"does not model; give {option_of('precision')} bf16, fp16 or fp8"
            )
        settings[name] = value
    said = ", ".join(f"{option_of(name)} {value}" for name, value in taken.items() if name not in defaulted)
    filled = ", ".join(f"{option_of(name)} {value}" for name, value in taken.items() if name in defaulted)
    said += f"; Megatron-LM's defaults for what it leaves out: {filled}" if filled else ""
    more = f"; not used: {', '.join(unused[:6])}{f' and {len(unused) - 6} more' if len(unused) > 6 else ''}"
    say(f"from {path}: {said}{more if unused else ''}")
    return tuple(taken)


def megatron_global_batch(path: str, nodes: str | None, kwargs: Mapping[str, Any], say: Say) -> str:
    """The global batch of a launch command that gives ``--micro-batch-size`` and leaves ``--global-batch-size``
    out, as Megatron-LM sets it: the micro batch x the data-parallel size, the GPU count over tp x pp x cp
    (``arguments.py``: ``global_batch_size = micro_batch_size * data_parallel_size``); ``--dp`` is that size.
    Said in one line; refused where one of them is a list (a global batch each) or tp x pp x cp does not divide
    the GPU count (a hunt: such a command, which Megatron-LM runs, was refused as missing --global-batch).
    ``nodes``: --nodes as given (None: not given), which a refusal names where the GPU count came from it."""
    from netsweep_jax.sweep.core.layout_axes import AXES
    from netsweep_jax.sweep.core.values import parse_values

    def one(name: str) -> int:
        text = str(kwargs.get(name)).strip()
        values = parse_values(text, AXES[name])  # 64.0 and 1e2 are one value (a review: "several")
        if len(values) != 1:
            # a --nodes list given is named as typed, not as the --gpus it became (a review)
            shown, typed = ("nodes", nodes) if name == "gpus" and nodes is not None else (name, text)
            raise InputError(
                f"is needed: {path} leaves out --global-batch-size, which Megatron-LM sets to the micro batch x "
                f"the data-parallel size, and {{0}} {typed} gives several",
                param="global_batch",
                names=(shown,),
            )
        return int(values[0])

    micro = one("micro_batch")
    if kwargs.get("dp") is not None:
        dp = one("dp")
    else:
        gpus, model_parallel = one("gpus"), one("tp") * one("pp") * one("cp")
        if gpus % model_parallel:
            raise InputError(
                f"{gpus}: {path} leaves out --global-batch-size, which Megatron-LM sets to the micro batch x the "
                f"data-parallel size, and its tp x pp x cp, {model_parallel}, does not divide it: give {{0}} or "
                "another GPU count",
                param="gpus",
                names=("global_batch",),
            )
        dp = gpus // model_parallel
    say(
        f"{option_of('global_batch')} {micro * dp}: Megatron-LM's for a command without --global-batch-size, "
        f"the micro batch {micro} x the data-parallel size {dp}"
    )
    return str(micro * dp)


def _same_shape(
    path: str, shape: Mapping[str, tuple[str, int]], models: str | None, arch: str | None
) -> None:
    """Refuse a --model or --arch whose shape is not the one the launch command trains (``shape``: its
    :attr:`~sweep.io.launch.Launch.shape`; a hunt: a 16-layer command at sequence 2048 was priced as llama3-8b's
    32 layers at 8192, in silence)."""
    from netsweep_jax.sweep.model.llms import parse_arch, resolve_llm

    named = [("--arch", parse_arch(arch))] if arch else []
    named += [
        (f"--model {n.strip()}", resolve_llm(n))
        for n in str(models or "").split(",")
        if n.strip() and not arch
    ]
    for name, llm in named:
        for key, (said, value) in shape.items():
            own = getattr(llm, key)
            if key == "top_k" and not llm.experts:
                continue
            if own != value:
                raise InputError(
                    f"{path} gives {said}, where {name} has {key} {own}: the command trains "
                    "another shape; give it as --arch layers=...,hidden=...,seq=... (sweep models lists the keys)"
                )


def schedule_of_virtual_stages(text: str, schedule: str | None) -> str:
    """--virtual-pipeline-model-parallel-size V[,V...] as --schedule's values (V = 1: 1f1b)."""
    from netsweep_jax.sweep.core.values import whole_number

    if schedule is not None:
        raise InputError(
            "sets the schedule as {0} does: give it one way", param="virtual_stages", names=("schedule",)
        )
    chunks = [whole_number(item.strip()) for item in str(text).split(",")]
    whole = [v for v in chunks if v is not None and v >= 1]
    if not chunks or len(whole) < len(chunks):
        raise InputError(f"{text!r}: give whole numbers from 1 (V chunks per stage)", param="virtual_stages")
    return ",".join(schedule_name(v) for v in whole)


def gpus_from_nodes(nodes: str, kwargs: Mapping[str, Any], gpu: str | None, fabric: Any = None) -> str:
    """--nodes x GPUs per node (--gpus-per-node, else a ``fabric``'s hosts: a preset's, or those a file records,
    as the grid takes them (:func:`~sweep.engine.layout_options.make_layout_grid`), else the GPU preset's system:
    --gpu's, the fabric's GPU's, the default's) as --gpus values. Four nodes of a GB200 NVL72 were 32 GPUs on 8 trays (the default H100's 8 a node: a review)."""
    from netsweep_jax.sweep.core.values import parse_values
    from netsweep_jax.sweep.model.compute import GPUS

    if kwargs["gpus"] is not None or kwargs["dp"] is not None:
        raise InputError(
            "sets the GPU count as {0} and {1} do: give it one way", param="nodes", names=("gpus", "dp")
        )
    counts = parse_values(nodes, NUMERIC_AXES["nodes"])
    if kwargs["gpus_per_node"] is not None:
        per_node = parse_values(kwargs["gpus_per_node"], NUMERIC_AXES["gpus_per_node"])
        if len(per_node) != 1:
            raise InputError(
                f"{literal(str(kwargs['gpus_per_node']))}: with {{0}} give one value",
                param="gpus_per_node",
                names=("nodes",),
            )
        count = per_node[0]
    else:
        own = fabric.settings().get("gpus_per_node") if fabric is not None else None  # as _network fills it
        first = str(gpu or getattr(fabric, "gpu", "") or DEFAULT_GPU).split(",")[0].strip().lower()
        count = own or (GPUS[first].gpus_per_node if first in GPUS else 8)
    return ",".join(str(int(n * count)) for n in counts)


def layout_target(grid: Any, out: Path | None, force: bool, prefix: str, say: Say) -> Path:
    """The cube a layout command writes (default ``results/PREFIXMODEL-TIMESTAMP.h5``), checked before any
    work; then the one line on what was assumed."""
    from netsweep_jax.sweep.io.paths import CUBE_SUFFIXES, check_new_file, stamped

    target = out if out is not None else stamped(f"{prefix}{'+'.join(grid.names['model'])}", ".h5")
    check_new_file(target, force=force, suffixes=CUBE_SUFFIXES)  # its folders are made by the caller's checks
    if grid.assumed:
        say(f"assumed: {assumed_line(grid.assumed)}")
    return target


def layout_cube(grid: Any) -> "xr.Dataset":
    """Every layout of ``grid`` evaluated, as a layout cube (refused first if too large to keep), or reduced on
    the device as its ``reduce`` says (the reduction ``sweep grid --reduce`` writes, held in memory)."""
    from netsweep_jax.sweep.engine.evaluate import reduced_in_memory
    from netsweep_jax.sweep.engine.layout_blocks import BLOCK_CONFIGS
    from netsweep_jax.sweep.engine.layouts import check_in_memory, evaluate_layouts_arrays, layouts_dataset

    if grid.reduction is not None:
        reduced = reduced_in_memory(grid, BLOCK_CONFIGS)
        return reduced.assign_attrs({**grid.cube_attrs(), "dtype": grid.dtype, **reduced.attrs})
    check_in_memory(grid)
    return layouts_dataset(grid, evaluate_layouts_arrays(grid))


def configuration_counts(path: str | Path) -> str:
    """What a cube's configurations are where it keeps ``status`` and ``fits`` (a layout cube's layouts): ``N can
    exist, M fit in memory``, read back from the cube; "" for a cube that keeps neither."""
    import h5py
    import numpy as np

    parts = []
    with h5py.File(path, "r") as f:
        for name, value, said in (("status", 0, "can exist"), ("fits", 1, "fit in memory")):
            if name in f:
                data = f[name]
                count = sum(int(np.count_nonzero(data[i] == value)) for i in range(data.shape[0]))
                parts.append(f"{count:,} {said}")
    return ", ".join(parts)


def write_plan(
    grid: Any,
    out: Path | None,
    *,
    keep: int,
    force: bool,
    command: str,
    say: Say,
    resume: bool = False,
    progress_bar: Callable[[int, int], Any] | None = None,
    share: tuple[int, int] | None = None,
    stitch_timeout: float = 600.0,
) -> "tuple[xr.Dataset | None, Path]":
    """``sweep plan``: the ``keep`` best layouts per setting (:func:`~sweep.analysis.planning.plan`), written
    as a cube. ``progress_bar(total, done)``: a context giving an ``advance(n)`` function, or None. A plan
    refused after its search (no feasible layout) leaves no empty default ``results/``.

    The searches are checkpointed to ``OUT.partial`` (:class:`~sweep.io.plan_checkpoint.PlanCheckpoint`):
    SIGINT and SIGTERM stop the plan at a block boundary with the checkpoint kept (named on the exception,
    :func:`sweep.io.paths.kept_partial`), and ``resume`` goes on from it to the cube one run writes.

    ``share = (process, processes)`` (``--distributed``): this process searches its share of every search's
    blocks into its shard (:func:`plan_share`); process 0 then waits for every shard (at most
    ``stitch_timeout`` seconds unchanged), merges them and writes the cube, which equals one process's.
    Another process returns (None, its shard)."""
    from netsweep_jax.sweep.analysis.planning import check_size
    from netsweep_jax.sweep.io.accumulated import run_accumulated
    from netsweep_jax.sweep.io.job import check_output
    from netsweep_jax.sweep.io.paths import all_or_nothing, partial_path

    check_size(grid)  # before the output is claimed
    _check_some_layout_divides(grid)
    if share is not None:
        if out is None:
            raise InputError("needed with --distributed: a path every process can reach", param="out")
        return plan_share(grid, out, keep=keep, share=share, force=force, command=command, say=say,
                          stitch_timeout=stitch_timeout, resume=resume)  # fmt: skip
    # the folders made for this plan (the default results/) are not left empty by a refusal or an interrupt
    with all_or_nothing(out.parent if out is not None else Path("results")):
        said: list[str] = []  # the assumed line, said once OUT.partial passes: a refusal is one line (a hunt)
        target = layout_target(grid, out, force, "plan-", said.append)
        # the sweeps' rules for OUT.partial
        check_output(target, force=force, resume=resume, default=out is None)
        for line in said:
            say(line)
        job = _Plan(grid, keep, progress_bar, say)
        run_accumulated(job, target, partial_path(target), resume=resume, command=command, overwrite=force)
    return job.result, target


class _Plan:
    """A plan's searches (:func:`~sweep.analysis.planning.plan`) as an :class:`~sweep.io.accumulated.Accumulation`
    for the job runner a ``--reduce`` sweep runs through: each search's best layouts so far, checkpointed by
    :class:`~sweep.io.plan_checkpoint.PlanCheckpoint` every few blocks and as the plan stops;
    ``progress_bar(total, done)``: a context giving an ``advance(n)`` function, or None."""

    def __init__(
        self, grid: Any, keep: int, progress_bar: Callable[[int, int], Any] | None, say: Say
    ) -> None:
        self.grid, self.keep, self.progress_bar, self.say = grid, keep, progress_bar, say
        self.result: xr.Dataset | None = None
        self._checkpoint: PlanCheckpoint | None = None

    def checkpoint(self, path: Path, claim: "Claim | None" = None) -> "PlanCheckpoint":
        """The plan's searches kept at ``path`` (made at the runner's first call), under the runner's ``claim``
        (its lock on ``path``, moved onto each checkpoint written) once it has one."""
        from netsweep_jax.sweep.io.plan_checkpoint import PlanCheckpoint

        if self._checkpoint is None:
            self._checkpoint = PlanCheckpoint(path, self.fingerprint())
        if claim is not None:
            self._checkpoint.claim = claim
        return self._checkpoint

    def fingerprint(self) -> str:
        """What the plan's checkpoint holds: its grid's and its keep."""
        return f"{self.grid.fingerprint()}:keep={self.keep}"

    def load(self, path: Path) -> None:
        self.checkpoint(path).load()

    def save(self, path: Path, claim: "Claim") -> None:
        self.checkpoint(path, claim).save()

    def compute(self, path: Path, claim: "Claim") -> None:
        from netsweep_jax.sweep.analysis.planning import plan, searches

        checkpoint = self.checkpoint(path, claim)
        grid = self.grid
        # Every search's layouts, as the progress line counts them: the plan, on an ideal network, each overlap
        # switch flipped.
        times = len(searches(grid))
        self.say(
            f"searching {counted(grid.inner_size, 'layout')} x {counted(grid.outer_size, 'setting')}, {times} "
            "times (the plan, on an ideal network, each overlap switch flipped)"
        )
        if self.progress_bar is None:
            self.result = plan(grid, keep=self.keep, checkpoint=checkpoint)
            return
        total = times * grid.inner_size * grid.outer_size
        with self.progress_bar(total, 0) as advance:
            self.result = plan(grid, keep=self.keep, progress=advance, checkpoint=checkpoint)

    def dataset(self) -> "xr.Dataset":
        assert self.result is not None, "computed first"
        return self.result

    def attrs(self) -> dict[str, Any]:
        return {}

    def inputs(self, f: "h5py.File") -> None:
        from netsweep_jax.sweep.io.cube import grid_inputs

        grid_inputs(self.grid)(f)  # the layout family's: none (its models are in the attributes)


def plans_out(grids: "Sequence[tuple[str, Any]]", out: Path | None) -> Path:
    """The ``--out`` of :func:`write_plans`' plans: ``out``, else ``results/plan-<models>-<timestamp>.h5``."""
    from netsweep_jax.sweep.io.paths import stamped

    models = "+".join(grids[0][1].names["model"])
    return out if out is not None else stamped(f"plan-{models}", ".h5")


def write_plans(
    grids: "Sequence[tuple[str, Any]]",
    base: Path,
    *,
    keep: int,
    force: bool,
    command: str,
    say: Say,
    resume: bool = False,
) -> "Iterator[tuple[str, str]]":
    """``sweep plan --fabric A,B --oversubscription 1,2,4``: one plan per fabric (``grids``: each fabric's label,
    :func:`fabric_label`, and its grid; one unlabelled grid for one fabric) and per value of its
    oversubscription, in order (:func:`write_plan`, each its own cube, ``OUT`` with ``-fabric<label>`` where
    there are several fabrics and ``-oversubscription<V>`` where there are several values, before its suffix):
    (its heading, table and tiers; ``wrote CUBE``, or ``kept CUBE`` where ``resume`` kept it). Each distinct
    ``assumed:`` line is said once. Every value is validated (its grid made) before the first plan; they share
    one compile where their shapes are the same (the fabric's settings and the spine are columns of the
    kernel's inputs). ``base``: :func:`plans_out`'s. An infeasible plan: :func:`_searched` (all: refused).
    ``resume``: the plans of an interrupted run of the same command: a cube it finished is kept (read, not
    searched again; one of another plan refused), one it left in ``OUT.partial`` goes on from there, and the
    others are searched."""
    import numpy as np

    from netsweep_jax.sweep.analysis.plan_tiers import tier_lines
    from netsweep_jax.sweep.analysis.planning import plan_table
    from netsweep_jax.sweep.io.paths import CUBE_SUFFIXES, check_new_file

    for _, grid in grids:
        _check_some_layout_divides(grid)
    said: set[str] = set()

    def once(line: str) -> None:
        if line not in said:
            said.add(line)
            say(line)

    plans = [(grid, list(_each_plan(label, grid, len(grids) > 1, base))) for label, grid in grids]
    kept = _resumed(plans, keep, force) if resume else {}
    for _, ones in plans:  # every cube's name free before the first search: none written, then refused
        for *_, target in ones:
            if target not in kept:
                check_new_file(target, force=force, suffixes=CUBE_SUFFIXES)
    unplanned: list[tuple[str, Path]] = []  # infeasible plans' (text, cube), said once a plan is written
    refusal, planned = None, False
    for grid, ones in plans:
        # Where no group can cross the spine its oversubscription changes nothing: the first value's plan is
        # every value's (the same search, not run again), each written with its own value.
        first: tuple[Any, float] | None = None
        reachable = grid.spine_reachable()
        # One assumed line for a list (its spine phrase naming every value); each cube keeps its own.
        if len(ones) > 1:
            once(f"assumed: {assumed_line(grid.assumed)}")
            said.update(f"assumed: {assumed_line(one.assumed)}" for one, _, _ in ones)
        for one, heading, target in ones:
            value = one.oversubscription[0]
            if kept.get(target) is not None:  # said as kept, not searched again
                ds, written = kept[target], target
                first = first or (ds, value)  # a value the spine cannot reach is still its copy
            elif first is None or reachable or target in kept:  # a checkpoint --resume finishes, not copies
                got = _searched(one, heading, target, unplanned, keep, force, command, once, target in kept)
                if isinstance(got, Infeasible):
                    refusal = refusal or got
                    continue
                ds, written = got
                first = (ds, value)
            else:
                ds = first[0].assign_attrs(one.cube_attrs())
                written = _write_copy(ds, target, force=force, command=command)
                say(
                    f"{' '.join(heading)}: the plan of --oversubscription {exact_text(first[1])}, not searched "
                    f"again: no group of {np.max(grid.values['gpus']):g} GPUs crosses the spine (a leaf holds "
                    f"{grid.leaf_hosts * np.min(grid.values['gpus_per_node']):g})"
                )
            done = "kept" if kept.get(target) is not None else "wrote"
            yield from _unplanned(unplanned, force)
            unplanned, planned = [], True
            yield "\n".join([f"{' '.join(heading)}:", plan_table(ds), *tier_lines(ds)]), f"{done} {written}"
    if refusal is not None and not planned:  # nothing written or removed: refused, as one plan is
        raise refusal
    yield from _unplanned(unplanned, force)


def _searched(
    grid: Any,
    heading: list[str],
    target: Path,
    unplanned: list[tuple[str, Path]],
    keep: int,
    force: bool,
    command: str,
    say: Say,
    resume: bool,
) -> "tuple[Any, Path] | Infeasible":
    """One plan of :func:`write_plans`' list searched and written (:func:`write_plan`: the plan and its cube);
    where it has no feasible layout (:class:`Infeasible`, known only after its search), the refusal, with what
    to say in the plan's place appended to ``unplanned`` (:func:`_unplanned` says it): it writes no cube, and
    the list goes on (a hunt: the list had ended with exit 2 after writing its first plans, whose cubes then
    refused the command run again)."""
    try:
        ds, written = write_plan(
            grid, target, keep=keep, force=force, command=command, say=say, resume=resume
        )
    except Infeasible as e:
        unplanned.append((f"{' '.join(heading)}:\n  {e}", target))
        return Infeasible(f"{' '.join(heading)}: {e}; no plan of the list has one")  # raised where none has
    assert ds is not None
    return ds, written


def _unplanned(unplanned: list[tuple[str, Path]], force: bool) -> "Iterator[tuple[str, str]]":
    """The plans of ``unplanned`` (:func:`_searched`'s: their text, their cube) said, once a plan of their list is
    written (where none is, the command is refused: nothing of theirs removed, as one plan's refusal removes
    nothing). Nothing of such a plan is left as it is said: its checkpoint (``--resume``'s), and under
    ``--force`` an earlier run's cube of its name, which a later ``--resume`` would take for this plan's (a
    review); an interrupt before that leaves both, and its hint names the cube."""
    from netsweep_jax.sweep.io.paths import partial_path

    for text, target in unplanned:
        partial_path(target).unlink(missing_ok=True)
        gone = f" (the earlier {target} removed, as --force allows)" if force and target.exists() else ""
        if gone:
            target.unlink()
        yield text, f"no cube written for it{gone}"


def _resumed(
    plans: "Sequence[tuple[Any, list[tuple[Any, list[str], Path]]]]", keep: int, force: bool
) -> dict:
    """``--resume`` of :func:`write_plans`' ``plans``: each cube an interrupted run finished (its plan, read)
    or left in ``OUT.partial`` (None: resumed), refused where there is none, or where a finished cube holds
    another plan than this command's (:func:`_differs`)."""
    from netsweep_jax.sweep.io.paths import partial_path
    from netsweep_jax.sweep.io.reader import open_cube

    if force:  # as one plan's: --resume finishes, --force starts over
        raise InputError("and --force cannot go together: --resume finishes OUT.partial, --force starts over",
                         param="resume")  # fmt: skip
    kept: dict[Path, Any] = {}
    for _, ones in plans:
        for one, _, target in ones:
            if partial_path(target).exists():
                kept[target] = None
            elif target.exists():
                ds = open_cube(target)
                what = _differs(one, ds, keep)
                if what:
                    raise InputError(f"{target} holds another plan than this command's (its {what} differs); "
                                     "--force starts over", param="resume")  # fmt: skip
                kept[target] = ds
    if not kept:
        first = plans[0][1][0][2]
        raise InputError(f"finds nothing to resume: neither {first} nor {partial_path(first)} exists, nor any "
                         "other value's (a run without --out names its cubes anew: give its --out)",
                         param="resume")  # fmt: skip
    return kept


def _differs(grid: Any, ds: "xr.Dataset", keep: int) -> str:
    """What of the plan cube ``ds`` differs from the plan of ``grid`` keeping ``keep`` layouts ('' where
    nothing does): a setting's coordinates (``--gpus``, ``--bw``, ...), the attributes its grid writes (what was
    assumed and searched, the one-value settings, the models, the dtype), or the layouts kept (min(keep, layouts); a review:
    the attributes alone took a plan of 64 GPUs for one of 128)."""
    import numpy as np

    coords = grid.coords()
    for name in ds.dims:
        if name in coords and not np.array_equal(np.asarray(ds[name].values), np.asarray(coords[name])):
            return f"--{str(name).replace('_', '-')}"
    for key, value in {**grid.cube_attrs(), "dtype": grid.dtype}.items():  # dtype: --x64 (a review)
        if str(ds.attrs.get(key)) != str(value):
            return key
    return "--keep" if ds.sizes.get("rank") != min(keep, grid.inner_size) else ""


def _check_some_layout_divides(grid: Any) -> None:
    """Refuse, in one line naming the values, a plan none of whose tp x pp x cp divides any of its GPU counts:
    every layout would be masked, found only after the search ("no feasible layout", after the assumed line and
    the search's, a hunt)."""
    import itertools

    import numpy as np

    from netsweep_jax.kernels.layout import STATUS

    gpus, tp, pp, cp = (np.asarray(grid.values[d], np.float64) for d in ("gpus", "tp", "pp", "cp"))
    if not any(g % (t * p * c) == 0 for g, t, p, c in itertools.product(gpus, tp, pp, cp)):
        shown = ", ".join(f"{d} {','.join(f'{v:g}' for v in grid.values[d])}" for d in ("tp", "pp", "cp"))
        raise InputError(  # the GPU count, however given (--gpus, or --nodes x --gpus-per-node)
            f"no tp x pp x cp divides the GPU count {','.join(f'{v:g}' for v in gpus)} ({shown}); every layout "
            f"would be masked ({STATUS[1]})"  # the kernel's rule 1, as a masked cell says it
        )


def plan_cubes(grids: "Sequence[tuple[str, Any]]", base: Path) -> list[Path]:
    """The cube of each plan :func:`write_plans` makes of ``grids`` (``base``: :func:`plans_out`'s), in order."""
    return [target for label, grid in grids for *_, target in _each_plan(label, grid, len(grids) > 1, base)]


def _each_plan(label: str, grid: Any, fabrics: bool, base: Path) -> "Iterator[tuple[Any, list[str], Path]]":
    """(its grid of one oversubscription, heading, cube) of each plan :func:`write_plans` makes of the fabric
    ``label``'s ``grid``: ``base`` with ``-fabric<label>`` where there are several ``fabrics`` and
    ``-oversubscription<V>`` where the fabric has several values."""
    from netsweep_jax.sweep.engine.layout_grid import by_oversubscription

    for one in by_oversubscription(grid):
        value = exact_text(one.oversubscription[0])
        # a rail-only preset beside others: no spine, so no --oversubscription of the list (spine_of)
        heading = [f"--fabric {label}{' (rail-only: no spine)' if one.rail_only else ''}"] if fabrics else []
        suffix = [f"-fabric{label}"] if fabrics else []
        if len(grid.oversubscription) > 1:
            heading.append(f"--oversubscription {value}")
            suffix.append(f"-oversubscription{value}")
        yield one, heading, base.with_name(f"{base.stem}{''.join(suffix)}{base.suffix}")


def _write_copy(ds: "xr.Dataset", target: Path, *, force: bool, command: str) -> Path:
    """``ds`` written to ``target`` under the plan's rules for OUT (a file there refused without ``force``)."""
    from netsweep_jax.sweep.io.cube import write_dataset
    from netsweep_jax.sweep.io.paths import CUBE_SUFFIXES, check_new_file

    check_new_file(target, force=force, suffixes=CUBE_SUFFIXES)
    write_dataset(ds, target, command=command, overwrite=force)
    return target


def plan_share(
    grid: Any,
    out: Path,
    *,
    keep: int,
    share: tuple[int, int],
    force: bool,
    command: str,
    say: Say,
    stitch_timeout: float,
    resume: bool = False,
) -> "tuple[xr.Dataset | None, Path]":
    """``sweep plan --distributed`` as process ``share[0]`` of ``share[1]``: every search of the plan
    (:func:`~sweep.analysis.planning.searches`) over the blocks ``index % processes == process``, checkpointed
    as one machine's plan is (``resume``: on from there), its states written to a shard
    (``OUT.shard<p>of<n>.h5``); process 0 then merges every shard's states
    (:func:`~sweep.engine.layout_evaluation.merge_searches`) into the plan and writes it to ``out``: the job runner's
    share of work that accumulates (:func:`sweep.io.distributed.run_shared`)."""
    from netsweep_jax.sweep.io.distributed import run_shared

    pid, count = share
    target = layout_target(grid, out, force, "plan-", say if pid == 0 else (lambda _: None))
    job = _PlanShare(grid, keep, share)
    written = run_shared(
        job,
        target,
        share,
        stitch_timeout=stitch_timeout,
        command=command,
        overwrite=force,
        then="rerun every process with --resume to finish",
        resume=resume,
    )
    return job.result, written


class _PlanShare(_Plan):
    """A plan's searches shared among processes (:func:`plan_share`), as the job runner's
    :class:`~sweep.io.distributed.Shared`: each process's best layouts of its blocks of every search, checkpointed
    as :class:`_Plan` checkpoints a plan's, kept in a shard of the same format, and merged by process 0."""

    def __init__(self, grid: Any, keep: int, share: tuple[int, int]) -> None:
        super().__init__(grid, keep, None, lambda _: None)
        self.share = share
        self.found: list[dict[int, tuple[int, dict[str, Any]]]] = []  # every process's (process 0)

    def fingerprint(self, process: int | None = None) -> str:
        """What process ``process``'s checkpoint and shard hold (this one's by default; one process's is never
        taken for another's)."""
        return f"{super().fingerprint()}:share {self.share[0] if process is None else process} of {self.share[1]}"

    def compute(self, path: Path, claim: "Claim") -> None:
        from netsweep_jax.sweep.analysis.planning import searches
        from netsweep_jax.sweep.engine.blocks import share_of
        from netsweep_jax.sweep.engine.layouts import best_layouts

        checkpoint = self.checkpoint(path, claim)
        for index, searched in searches(self.grid):
            state = best_layouts(
                searched,
                keep=self.keep,
                only=share_of(*self.share),
                raw=True,
                start=checkpoint.start(index),
                after_block=checkpoint.after_block(index),
            )
            if index not in checkpoint.searches:  # a share with no block of this search
                checkpoint.record(index, 0, state)

    def compute_share(self, shard: Path, *, resume: bool) -> None:
        from netsweep_jax.sweep.io.accumulated import run_share
        from netsweep_jax.sweep.io.paths import partial_path
        from netsweep_jax.sweep.io.plan_checkpoint import PlanCheckpoint

        def finish() -> None:
            whole = PlanCheckpoint(shard, self.fingerprint())
            whole.searches = self.checkpoint(partial_path(shard)).searches
            whole.save()

        run_share(self, shard, resume=resume, finish=finish)

    def load_shares(self, shards: "Sequence[Path]") -> None:
        from netsweep_jax.sweep.io.plan_checkpoint import PlanCheckpoint

        self.found = []
        for process, path in enumerate(shards):
            checkpoint = PlanCheckpoint(path, self.fingerprint(process))
            checkpoint.load()
            self.found.append(checkpoint.searches)

    def merge(self) -> None:
        from netsweep_jax.sweep.analysis.planning import plan
        from netsweep_jax.sweep.engine.layouts import merge_searches

        found = self.found
        kept = min(self.keep, self.grid.inner_size)
        results = {index: merge_searches([f[index][1] for f in found], kept) for index in found[0]}
        self.result = plan(self.grid, keep=self.keep, search=lambda index, _: results[index])

    def dataset(self) -> "xr.Dataset":
        assert self.result is not None, "merged first"
        return self.result

    def attrs(self) -> dict[str, Any]:
        return {"processes": self.share[1]}
