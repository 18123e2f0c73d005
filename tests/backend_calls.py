"""Every call teachgrad makes into the array module, found by reading its source (``ast``).

Ops never name NumPy or CuPy: they ask ``xp = array_module(x)`` (or ``_backend.cupy()``,
``_backend.on_device(dev)``), or take ``xp`` as a parameter, and call ``xp.<name>(...)``. So the names and keywords a GPU
run needs can be listed without running anything: :func:`backend_calls` finds

* ``xp.exp(x)``, ``xp.add.at(...)``, ``xp.lib.stride_tricks.as_strided(...)``, and the same
  on ``array_module(x).<name>(...)`` directly, as ``Call("exp", ...)``;
* ``getattr(xp, "zeros")(...)`` when the name is a constant string;
* names used without a call, ``xp.inf``, ``xp.int32``, as ``Call("inf", None, ...)``;
* methods of the random generators (``generators.for_device(dev).integers(...)``,
  ``xp.random.default_rng(seed).random(...)``), as ``Call("random.Generator.integers", ...)``.

tests/teachgrad/test_cupy_surface.py checks each against real CuPy; tests/cupy_standin.py's
own name list is checked the same way.
"""

from __future__ import annotations

import ast
import dataclasses
import pathlib

MODULE_SOURCES = {"array_module", "cupy", "on_device"}  # calls that hand out an array module
GENERATOR_SOURCES = {"for_device", "default_rng"}  # calls that hand out a random generator


@dataclasses.dataclass(frozen=True)
class Call:
    name: str  # dotted, relative to the cupy module: "exp", "add.at", "random.Generator.integers"
    keywords: tuple | None  # keyword names used at the call (``**kw`` is not counted);
    # None for a name used but not called (``xp.inf``), and for each prefix of a dotted name
    where: str  # "ops/pointwise.py:828"


def _called_name(func) -> str | None:
    """``f`` for ``f(...)``, ``g`` for ``a.b.g(...)``."""
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _dotted(node) -> list | None:
    """``[Name(xp), "lib", "as_strided"]`` for ``xp.lib.as_strided``, ``[Call(...), "prod"]``
    for ``array_module(x).prod``; None for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name | ast.Call):
        return [node, *reversed(parts)]
    return None


class _Scanner(ast.NodeVisitor):
    def __init__(self, where_prefix: str):
        self.prefix = where_prefix
        # names bound to an array module in the current function; ``xp`` always is one, by
        # the project's convention (helpers and lambdas take it as a parameter)
        self.modules: set = {"xp"}
        self.generators: set = set()
        self.calls: list = []

    def visit_FunctionDef(self, node):
        saved = self.modules, self.generators
        self.modules, self.generators = set(saved[0]), set(saved[1])
        for sub in ast.walk(node):  # a function's bindings hold in its whole body
            if isinstance(sub, ast.Assign) and isinstance(sub.value, ast.Call):
                source = _called_name(sub.value.func)
                target = sub.targets[0]
                if isinstance(target, ast.Tuple) and target.elts:  # xp, where = on_device(dev)
                    target = target.elts[0]
                if not isinstance(target, ast.Name):
                    continue
                if source in MODULE_SOURCES:
                    self.modules.add(target.id)
                elif source in GENERATOR_SOURCES:
                    self.generators.add(target.id)
        self.generic_visit(node)
        self.modules, self.generators = saved

    visit_AsyncFunctionDef = visit_FunctionDef

    def _is_module(self, node) -> bool:
        if isinstance(node, ast.Name):
            return node.id in self.modules
        return isinstance(node, ast.Call) and _called_name(node.func) in MODULE_SOURCES

    def _is_generator(self, node) -> bool:
        if isinstance(node, ast.Name):
            return node.id in self.generators
        return isinstance(node, ast.Call) and _called_name(node.func) in GENERATOR_SOURCES

    def visit_Attribute(self, node):  # a name used without a call: xp.inf, xp.int32
        parts = _dotted(node)
        if parts is not None and self._is_module(parts[0]):
            self.calls.append(Call(".".join(parts[1:]), None, f"{self.prefix}:{node.lineno}"))
        self.generic_visit(node)

    def visit_Call(self, node):
        name = self._name_of(node.func)
        if name is not None:
            keywords = tuple(k.arg for k in node.keywords if k.arg is not None)
            self.calls.append(Call(name, keywords, f"{self.prefix}:{node.lineno}"))
        self.generic_visit(node)

    def _name_of(self, func) -> str | None:
        if (  # getattr(xp, "zeros")(...)
            isinstance(func, ast.Call)
            and _called_name(func.func) == "getattr"
            and len(func.args) == 2
            and self._is_module(func.args[0])
            and isinstance(func.args[1], ast.Constant)
        ):
            return func.args[1].value
        parts = _dotted(func)
        if parts is None or len(parts) < 2:
            return None
        root, rest = parts[0], parts[1:]
        if self._is_generator(root) and len(rest) == 1:
            return f"random.Generator.{rest[0]}"
        if self._is_module(root):
            return ".".join(rest)
        return None


def backend_calls(package: pathlib.Path) -> list:
    """Every array-module call in the ``.py`` files under ``package`` (see the module doc)."""
    calls = []
    for path in sorted(package.rglob("*.py")):
        scanner = _Scanner(path.relative_to(package).as_posix())
        scanner.visit(ast.parse(path.read_text()))
        calls += scanner.calls
    return calls
