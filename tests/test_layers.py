"""The house's floors: every import statement (function-local ones too) points down or sideways.

Floors, bottom up: ``kernels``; ``sweep.core``; ``sweep.model``; ``sweep.engine``;
``sweep.io``; ``sweep.analysis``; ``sweep.cli``; the package ``sweep`` itself (the public
API) on top. Within a floor, modules may import each other, but never in a circle.
"""

import ast
import functools
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
NS = "netsweep_jax"
FLOORS = [
    "kernels",
    "sweep.core",
    "sweep.model",
    "sweep.engine",
    "sweep.io",
    "sweep.analysis",
    "sweep.cli",
    "sweep",
]


@functools.cache  # read once: each module's imports are checked against it (117 walks of the tree at collection)
def modules():
    """{module name: path} for every module of both packages."""
    found = {}
    for top in ("kernels", "sweep"):
        for path in sorted((ROOT / top).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[f"{NS}." + ".".join(parts)] = path
    return found


def imports(name, path):
    """The netsweep modules ``name`` imports, by any import statement anywhere in it."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                )
            out.add(base)
            out |= {f"{base}.{a.name}" for a in node.names}
    known = modules()
    return {m for m in out if m in known and m != name}


def floor(name):
    """The index in FLOORS of the floor module ``name`` lives on."""
    rest = name.removeprefix(f"{NS}.")
    return max(i for i, f in enumerate(FLOORS) if rest == f or rest.startswith(f + "."))


GRAPH = {name: imports(name, path) for name, path in modules().items()}


def test_every_module_has_a_floor():
    assert all(name.startswith(f"{NS}.kernels") or name.startswith(f"{NS}.sweep") for name in GRAPH)


@pytest.mark.parametrize("name", sorted(GRAPH))
def test_imports_point_down(name):
    up = sorted(m for m in GRAPH[name] if floor(m) > floor(name) and not m.startswith(name))
    assert not up, f"{name} (floor {FLOORS[floor(name)]}) imports from above: {up}"


def test_no_circles():
    # Package __init__ modules are containers: an import of a package's submodule passes through it.
    graph = {n: {m for m in deps if not n.startswith(m + ".")} for n, deps in GRAPH.items()}
    state, stack, circles = {}, [], []

    def visit(n):
        state[n] = "open"
        stack.append(n)
        for m in sorted(graph[n]):
            if state.get(m) == "open":
                circles.append(stack[stack.index(m) :] + [m])
            elif m not in state:
                visit(m)
        stack.pop()
        state[n] = "done"

    for n in sorted(graph):
        if n not in state:
            visit(n)
    assert not circles, "import circles: " + "; ".join(" -> ".join(c) for c in circles)


def test_every_module_is_in_the_development_map():
    # #24: a newcomer finds every module, the large-model family's included, in docs/development.md's map.
    text = (ROOT / "docs" / "development.md").read_text()
    modules = (
        sorted(ROOT.glob("kernels/*.py"))
        + sorted(ROOT.glob("sweep/*.py"))
        + sorted(ROOT.glob("sweep/*/*.py"))
    )
    missing = [
        str(path.relative_to(ROOT))
        for path in modules
        if path.name != "__init__.py" and f"`{path.relative_to(ROOT)}`" not in text
    ]
    assert not missing, f"not in docs/development.md's module map: {', '.join(missing)}"
