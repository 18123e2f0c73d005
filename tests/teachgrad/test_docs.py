"""Every public function and Tensor method has a docstring with an example, and it runs.

pytest's ``--doctest-modules`` runs the examples of functions defined in modules;
methods that teachgrad/ops attaches to Tensor (``x.exp()``, ``x.add_()`` ...) are not
found that way, so they are checked here.
"""

import doctest
import inspect

import pytest

import teachgrad as tg

TENSOR_METHODS = sorted(
    name
    for name in dir(tg.Tensor)
    if not name.startswith("_")
    and callable(getattr(tg.Tensor, name))
    and not inspect.isclass(getattr(tg.Tensor, name))
)
PUBLIC_FUNCTIONS = sorted(
    name
    for name in dir(tg)
    if not name.startswith("_")
    and (inspect.isfunction(getattr(tg, name)) or inspect.isclass(getattr(tg, name)))
    and name not in ("return_types",)
)


def _run_examples(obj, name):
    doc = inspect.getdoc(obj) or ""
    assert ">>>" in doc, f"{name} has no example in its docstring"
    test = doctest.DocTestParser().get_doctest(doc, {}, name, None, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.failures == 0, f"the example of {name} fails (run it with doctest to see how)"


@pytest.mark.parametrize("name", TENSOR_METHODS)
def test_tensor_method_has_a_working_example(name):
    """``Tensor.<name>`` documents itself with an example that runs."""
    _run_examples(getattr(tg.Tensor, name), f"Tensor.{name}")


@pytest.mark.parametrize("name", PUBLIC_FUNCTIONS)
def test_public_function_has_a_working_example(name):
    """``teachgrad.<name>`` documents itself with an example that runs."""
    _run_examples(getattr(tg, name), f"teachgrad.{name}")
