"""Imports point downward: the Tensor, the tape and the engine never import the layers
above them.

teachgrad's layers: ``_backend``, ``_tensor``, ``autograd``, ``ops``, ``nn``. The engine's
modules (``autograd/engine.py``, ``function.py``, ``tape.py``) reach the few ops they
need only through the documented seam, ``teachgrad/_seam.py``; neither at the top nor
inside a function do they import ``ops``, ``nn``, ``optim`` or the observers built on
them (snapshots, the profiler's report). The seam holds exactly its documented names,
each filled in by its provider. And across the package, the imports still hidden inside
functions are a written list with a reason each, which may only shrink.
"""

import ast
import pathlib

import pytest

import teachgrad as tg
from teachgrad import _seam

PACKAGE = pathlib.Path(tg.__file__).parent
ABOVE = ("teachgrad.ops", "teachgrad.nn", "teachgrad.optim", "teachgrad.autograd.snapshot")
ENGINE = ["autograd/engine.py", "autograd/function.py", "autograd/tape.py"]


def _imported_modules(path: pathlib.Path) -> list:
    """Every module ``path`` imports (relative imports resolved), with the line."""
    package = "teachgrad." + ".".join(path.relative_to(PACKAGE).parent.parts)
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.rstrip(".").split(".")
            if node.level:
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            found.append((module, node.lineno))
            found += [(f"{module}.{alias.name}", node.lineno) for alias in node.names]
    return found


@pytest.mark.parametrize("name", ENGINE)
def test_the_engine_imports_nothing_above_it(name):
    upward = [
        (module, line)
        for module, line in _imported_modules(PACKAGE / name)
        if module.startswith(ABOVE)
    ]
    assert not upward, f"{name} imports from above its layer: {upward} (use teachgrad/_seam.py)"


# Who fills in each of the seam's names: always a module above the ones that use it.
PROVIDERS = {
    "sum_to": "teachgrad.ops",
    "clone_like": "teachgrad.ops",
    "stack": "teachgrad.ops",
    "check_inplace": "teachgrad.ops",
    "refuse_stale_view": "teachgrad.ops",
    "regenerate_view_grad_fn": "teachgrad.ops",
    "rebase_view_history": "teachgrad.ops",
    "backward": "teachgrad.autograd.engine",
    "AccumulateGrad": "teachgrad.autograd.tape",
    "tangent_of": "teachgrad.autograd.forward_ad",
}


def test_the_seam_holds_its_documented_names_filled_in_from_above():
    assert set(_seam.NAMES) == set(PROVIDERS)
    for name, provider in PROVIDERS.items():
        fn = getattr(_seam, name)
        assert fn is not _seam._not_yet and fn.__module__.startswith(provider), name
    with pytest.raises(ValueError, match="the seam has no 'softmax'"):
        _seam.provide(softmax=tg.softmax)


def test_the_tensor_reaches_up_only_through_the_seam():
    """``_tensor.py`` imports nothing from autograd, ops or nn, not even inside a function."""
    upward = [
        (module, line)
        for module, line in _imported_modules(PACKAGE / "_tensor.py")
        if module.startswith(("teachgrad.autograd", "teachgrad.ops", "teachgrad.nn"))
    ]
    assert not upward, f"_tensor.py imports from above it: {upward} (use teachgrad/_seam.py)"


# The imports inside functions that remain, each with its reason. The list may only
# shrink: an import hidden in a function to dodge a cycle is what the seam replaces.
FUNCTION_LEVEL_IMPORTS = {
    ("_backend.py", "cupy"): "lazy on purpose: CPU users never load CuPy",
    ("_backend.py", "cupyx"): "lazy on purpose: only pinning needs it",
    ("autograd/profiler_nvprof.py", "sqlite3"): "lazy on purpose: only reading a trace needs it",
}


def _function_level_imports() -> set:
    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        tree = ast.parse(path.read_text())
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.Import | ast.ImportFrom):
                    module = _resolved(path, node)
                    found.add((name, module))
    return found


def _resolved(path: pathlib.Path, node) -> str:
    """The module an import statement names, relative imports resolved."""
    if isinstance(node, ast.Import):
        return node.names[0].name
    if not node.level:
        return node.module
    package = ["teachgrad", *path.relative_to(PACKAGE).parent.parts]
    base = package[: len(package) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def test_no_new_import_hides_in_a_function():
    found = _function_level_imports()
    new = sorted(found - set(FUNCTION_LEVEL_IMPORTS))
    assert not new, f"imports hidden in functions: {new}; import at the top, or use the seam"
    gone = sorted(set(FUNCTION_LEVEL_IMPORTS) - found)
    assert not gone, f"remove these from FUNCTION_LEVEL_IMPORTS, they are gone: {gone}"


# The layers, lowest first. A module may import its own layer or the ones below it; the
# package itself (teachgrad/__init__.py, importing everything) sits on top.
LAYERS = [
    ("_backend", "_events", "_grad_state", "_hooks", "_profiling", "_seam"),
    ("_tensor", "_printing", "_arguments", "_out", "_layout", "_creation", "random"),
    ("serialization", "tensortypes"),
    ("autograd",),
    ("ops",),
    ("nn", "optim", "cuda", "testing", "linalg", "utils", "_C", "_vmap_internals"),
]


def _modules() -> dict:
    """teachgrad's modules: dotted name -> file."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = [p for p in path.relative_to(PACKAGE).with_suffix("").parts if p != "__init__"]
        found[".".join(["teachgrad", *parts])] = path
    return found


def _layer(module: str) -> int:
    top = module.split(".")[1] if "." in module else None
    for rank, names in enumerate(LAYERS):
        if top in names:
            return rank
    assert module == "teachgrad", f"{module} is in no layer: add it to LAYERS"
    return len(LAYERS)


def _import_graph() -> dict:
    """module -> the teachgrad modules it imports (anywhere in the file). ``from . import x``
    names the package only to reach ``x``: a module's own packages are left out."""
    modules = _modules()

    def resolve(name):  # "teachgrad.ops.pointwise.where" -> "teachgrad.ops.pointwise"
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name

    graph = {}
    for module, path in modules.items():
        targets = {resolve(name) for name, _ in _imported_modules(path)}
        ancestors = {".".join(module.split(".")[:k]) for k in range(1, module.count(".") + 1)}
        graph[module] = targets - ancestors - {module, ""}
    return graph


def test_every_import_in_the_package_points_down_its_layers():
    upward = [
        f"{module} ({LAYERS[_layer(module)][0]} layer) imports {target}"
        for module, targets in _import_graph().items()
        if module != "teachgrad"
        for target in sorted(targets)
        if _layer(target) > _layer(module)
    ]
    assert not upward, "\n".join(upward)


def test_the_import_graph_has_no_cycle():
    """Not even inside a layer: a cycle is what function-level imports used to hide."""
    graph = _import_graph()
    state = {}  # module -> "open" while on the DFS path, "done" after

    def visit(module, path):
        state[module] = "open"
        for target in sorted(graph[module]):
            if state.get(target) == "open":
                cycle = path[path.index(target) :] + [target]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if target not in state:
                visit(target, [*path, target])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])


def test_the_layer_checks_see_an_upward_import_and_a_cycle(monkeypatch):
    """(So the two checks above are not vacuous.)"""
    graph = _import_graph()
    graph["teachgrad._tensor"] = graph["teachgrad._tensor"] | {"teachgrad.ops.pointwise"}
    graph["teachgrad.ops.pointwise"] = graph["teachgrad.ops.pointwise"] | {"teachgrad._tensor"}
    monkeypatch.setitem(globals(), "_import_graph", lambda: graph)
    with pytest.raises(AssertionError, match="_tensor .* imports teachgrad.ops.pointwise"):
        test_every_import_in_the_package_points_down_its_layers()
    with pytest.raises(pytest.fail.Exception, match="import cycle"):
        test_the_import_graph_has_no_cycle()
