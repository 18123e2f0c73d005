"""The public namespace: what ``import teachgrad`` gives is torch's, and each Tensor method
is defined in one place.

* ``teachgrad.ops.__all__`` is written out by hand; every name in it is a function of
  torch's top level (checked against the oracle), and none is a module;
* the family modules (``pointwise``, ``linalg`` ...) and helpers torch does not have at
  the top level (``sum_to``, ``expand``) do not leak into ``teachgrad``;
* the method table in ``ops/__init__.py``, the in-place family's table and the Tensor
  class body never define the same name twice, and what is in force on ``Tensor`` is
  what the table says.
"""

import ast
import pathlib
import types

import teachgrad as tg
import teachgrad.ops as ops
from teachgrad.ops import inplace
from tests import needs

PACKAGE = pathlib.Path(tg.__file__).parent


def test_every_exported_op_is_a_torch_top_level_function():
    torch = needs.oracle()
    assert len(ops.__all__) == len(set(ops.__all__)) > 90
    assert not [n for n in ops.__all__ if not hasattr(torch, n)]
    assert not [n for n in ops.__all__ if isinstance(getattr(ops, n), types.ModuleType)]


def test_autograd_exports_what_torch_autograd_exports_of_the_names_it_has():
    """``teachgrad.autograd.__all__`` holds every name of ``torch.autograd.__all__`` that
    teachgrad.autograd has (``NestedIOFunction``, the ``variable`` module ...), and names
    only what it has."""
    torch = needs.oracle()
    shared = [n for n in torch.autograd.__all__ if hasattr(tg.autograd, n)]
    assert not [n for n in shared if n not in tg.autograd.__all__]
    assert "NestedIOFunction" in tg.autograd.__all__
    assert not [n for n in tg.autograd.__all__ if not hasattr(tg.autograd, n)]


def test_family_modules_and_helpers_do_not_leak_into_teachgrad():
    for name in ("pointwise", "reduce", "shape", "views", "index", "inplace", "annotations"):
        assert not hasattr(tg, name), f"teachgrad.{name} leaks from teachgrad.ops"
    for name in ("sum_to", "expand", "expand_as", "view"):
        assert name not in ops.__all__
    assert getattr(tg, "linalg", None) is not ops.linalg  # not torch's linalg
    assert tg.nn.Linear  # the real nn package, not ops/nn.py


def _class_body_names() -> set:
    tree = ast.parse((PACKAGE / "_tensor.py").read_text())
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Tensor"]
    names = set()
    for node in cls.body:
        if isinstance(node, ast.FunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


def _table_keys() -> list:
    """The keys written in ops/__init__.py's ``_METHODS = {...}``, in order, repeats kept."""
    tree = ast.parse((PACKAGE / "ops" / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.AnnAssign | ast.Assign) and isinstance(node.value, ast.Dict):
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            if any(getattr(t, "id", None) == "_METHODS" for t in targets):
                return [k.value for k in node.value.keys]
    raise AssertionError("no _METHODS table in teachgrad/ops/__init__.py")


def test_each_tensor_method_is_defined_once_and_the_table_is_in_force():
    keys = _table_keys()
    assert len(keys) == len(set(keys)), "a name written twice in the method table"
    assert not set(keys) & set(inplace.METHODS)
    assert not (set(keys) | set(inplace.METHODS)) & _class_body_names()
    for name in keys:
        assert getattr(tg.Tensor, name) is ops._METHODS[name], f"Tensor.{name} is not the table's"
    source = (PACKAGE / "ops" / "__init__.py").read_text()
    assert "_METHODS.update(" in source and source.count("_METHODS.update(") == 1  # in-place only


def test_the_public_function_has_only_torchs_surface():
    """Built-in-only knobs (node_name, saved_names, view_of_input ...) live on the ops'
    own base class, ``teachgrad.autograd.builtin.Builtin``, not on the public Function."""
    torch = needs.oracle()
    ours = {n for n in dir(tg.autograd.Function) if not n.startswith("_")}
    theirs = {n for n in dir(torch.autograd.Function) if not n.startswith("_")}
    assert ours <= theirs, f"Function has names torch's has not: {sorted(ours - theirs)}"
    from teachgrad.autograd.builtin import Builtin

    assert issubclass(tg.ops.pointwise.Mul, Builtin) and tg.ops.pointwise.Mul._builtin
