"""Inference mode, as PyTorch's own tests (test/autograd/test_inference_mode.py, run with
test_autograd.py: TestAutogradInferenceMode) check it: the mode flag, tensors made in it,
and inference tensors and normal tensors meeting functional, view and in-place ops inside
and outside the mode.

Each test runs once with teachgrad and once with torch (the ``lib`` fixture) and asserts the
facts torch's test asserts. torch's tests change tensors in place with ``add_`` and
``transpose_``; teachgrad has no ``transpose_``, so the second change here is ``x[0] = 5``
(an in-place change through a view).
"""

import numpy as np
import pytest

from tests.teachgrad.autograd._port import same

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)

REQUIRES_GRAD = pytest.mark.parametrize("requires_grad", [True, False])


def write_first_row(x):
    """``x[0] = 5``: an in-place change through a view of ``x``."""
    x[0] = 5.0
    return x


IN_PLACE = {"add_": lambda x: x.add_(2), "x[0] = 5": write_first_row}
EACH_IN_PLACE = pytest.mark.parametrize("change", IN_PLACE.values(), ids=IN_PLACE.keys())


def is_inference_tensor(lib, t):
    """torch's test helper: an inference tensor has no version counter to read."""
    try:
        t._version
    except RuntimeError as exc:
        assert "Inference tensors do not track version counter" in str(exc)
        return True
    return False


def inference_ones(lib, requires_grad=False):
    """``ones(1, 2, 3)`` made inside ``inference_mode()``: an inference tensor."""
    with lib.inference_mode():
        return lib.ones(1, 2, 3, requires_grad=requires_grad)


def normal_non_leaf(lib, requires_grad):
    """``ones(1, 2, 3).clone()`` made outside the mode: a normal tensor (not a leaf when it
    requires grad)."""
    return lib.ones(1, 2, 3, requires_grad=requires_grad).clone()


# --------------------------------------------------------------------------- the mode


def test_inference_mode_context_manager(lib):
    assert not lib.is_inference_mode_enabled()
    with lib.inference_mode():
        assert lib.is_inference_mode_enabled()
        with lib.inference_mode(False):
            assert not lib.is_inference_mode_enabled()
        assert lib.is_inference_mode_enabled()
    assert not lib.is_inference_mode_enabled()


@REQUIRES_GRAD
def test_inference_mode_decorator(lib, requires_grad):
    @lib.inference_mode()
    def func(x):
        assert lib.is_inference_mode_enabled()
        return x * x

    d = func(lib.ones(1, 2, 3, requires_grad=requires_grad))
    assert lib.is_inference(d)
    assert not d.requires_grad


def test_the_decorator_without_parentheses_and_with_false(lib):
    @lib.inference_mode
    def inside():
        return lib.is_inference_mode_enabled()

    @lib.inference_mode(False)
    def outside():
        return lib.is_inference_mode_enabled()

    assert inside()
    with lib.inference_mode():
        assert not outside()
    assert not lib.is_inference_mode_enabled()


def test_inference_mode_tensor_creation(lib):
    with lib.inference_mode():
        c = lib.ones(1, 2, 3)
        assert not c.requires_grad
        assert lib.is_inference(c)
        tmp = lib.ones(1, 2, 3, requires_grad=True)  # requires_grad changes nothing here
        assert tmp.requires_grad
        assert lib.is_inference(tmp)
        tmp = lib.ones(1, 2, 3).requires_grad_(False)
        assert not tmp.requires_grad
        assert lib.is_inference(tmp)


def test_inference_tensors_have_no_version_counter(lib):
    assert is_inference_tensor(lib, inference_ones(lib))
    assert not is_inference_tensor(lib, lib.ones(1, 2, 3))


def test_inference_mode_existing_autograd_session(lib):
    a = normal_non_leaf(lib, True)
    out = a * a  # a is saved outside inference mode
    with lib.inference_mode():
        a.add_(2)
    assert not lib.is_inference(a)  # its version counter is still tracked
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward(lib.ones_like(out))


# --------------------------------------------------------------------------- inference tensors


@REQUIRES_GRAD
def test_inference_tensor_in_inference_mode_functional_op(lib, requires_grad):
    with lib.inference_mode():
        c = lib.ones(1, 2, 3, requires_grad=requires_grad)
        func_out = c * c
        assert lib.is_inference(func_out)
        assert not func_out.requires_grad


@REQUIRES_GRAD
@EACH_IN_PLACE
def test_inference_tensor_in_inference_mode_inplace_op(lib, requires_grad, change):
    with lib.inference_mode():
        c = lib.ones(1, 2, 3, requires_grad=requires_grad)
        change(c)
        assert lib.is_inference(c)
        assert c.requires_grad == requires_grad


@REQUIRES_GRAD
def test_inference_tensor_in_inference_mode_view_op(lib, requires_grad):
    with lib.inference_mode():
        c = lib.ones(1, 2, 3, requires_grad=requires_grad)
        view_out = c.view(-1)
        assert lib.is_inference(view_out)
        assert not view_out.requires_grad


@pytest.mark.parametrize("requires_grad", [True, False])
def test_inference_tensor_in_normal_mode_functional_op(lib, requires_grad):
    c = inference_ones(lib, requires_grad)
    func_out = c * c
    assert not lib.is_inference(func_out)
    assert not func_out.requires_grad
    assert func_out.is_leaf


@EACH_IN_PLACE
def test_inference_tensor_in_normal_mode_inplace_op(lib, change):
    c = inference_ones(lib)
    with pytest.raises(
        RuntimeError, match="^Inplace update to inference tensor outside InferenceMode"
    ):
        change(c)


@REQUIRES_GRAD
def test_inference_tensor_in_normal_mode_view_op(lib, requires_grad):
    out = inference_ones(lib, requires_grad).view(-1)
    assert lib.is_inference(out)
    assert not out.requires_grad
    assert not out._is_view()
    assert out.is_leaf


# --------------------------------------------------------------------------- normal tensors in the mode


@REQUIRES_GRAD
@EACH_IN_PLACE
def test_normal_tensor_inplace_output_in_inference_mode(lib, requires_grad, change):
    a = normal_non_leaf(lib, requires_grad)
    with lib.inference_mode():
        change(a)
        assert not lib.is_inference(a)
        assert a.requires_grad == requires_grad
        change(a)  # in place, then in place again
        assert not lib.is_inference(a)
        assert a.requires_grad == requires_grad
        view_out = a.view(-1)  # ... then a view
        assert not lib.is_inference(view_out)
        assert view_out.requires_grad == requires_grad


@REQUIRES_GRAD
@EACH_IN_PLACE
def test_normal_tensor_inplace_output_in_normal_mode(lib, requires_grad, change):
    a = normal_non_leaf(lib, requires_grad)
    with lib.inference_mode():
        change(a)
        assert not lib.is_inference(a)
        assert a.requires_grad == requires_grad
    change(a)
    assert not lib.is_inference(a)
    assert a.requires_grad == requires_grad
    change(a)
    assert not lib.is_inference(a)
    assert a.requires_grad == requires_grad
    view_out = a.view(-1)
    assert not lib.is_inference(view_out)
    assert view_out.requires_grad == requires_grad


@REQUIRES_GRAD
def test_normal_tensor_view_output_in_inference_mode(lib, requires_grad):
    a = normal_non_leaf(lib, requires_grad)
    with lib.inference_mode():
        out = a.view(-1)
        assert not lib.is_inference(out)
        assert out.requires_grad == requires_grad
        assert out._is_view()
        tmp = out.view(-1)  # a view of a view
        assert not lib.is_inference(tmp)
        assert tmp.requires_grad == requires_grad
        assert tmp._is_view()
        assert tmp.is_leaf
        tmp.add_(2)  # ... changed in place
        assert not lib.is_inference(tmp)
        assert tmp.requires_grad == requires_grad
        assert a._version == tmp._version


@REQUIRES_GRAD
def test_normal_tensor_view_output_in_normal_mode(lib, requires_grad):
    a = normal_non_leaf(lib, requires_grad)
    with lib.inference_mode():
        out = a.view(-1)
        assert not lib.is_inference(out)
        assert out.requires_grad == requires_grad
        assert out._is_view()
        assert out.is_leaf
    tmp = out * out
    assert not lib.is_inference(tmp)
    assert tmp.requires_grad == requires_grad
    if requires_grad:
        with pytest.raises(
            RuntimeError,
            match="^A view was created in inference mode and is being modified inplace",
        ):
            out.add_(2)
    else:
        out.add_(2)
    tmp = out.view(2, 3)
    assert not lib.is_inference(tmp)
    assert tmp.requires_grad == requires_grad


@REQUIRES_GRAD
@EACH_IN_PLACE
def test_inference_mode_handle_direct_view_on_rebase(lib, requires_grad, change):
    a = normal_non_leaf(lib, requires_grad)
    with lib.inference_mode():
        view_out = a.view_as(a)
    if requires_grad:
        # (a view of the view, for x[0] = 5: "Output 0 of Select is a view of a view which was...")
        with pytest.raises(
            RuntimeError, match="was created in inference mode and is being modified inplace"
        ):
            change(view_out)
    else:
        change(view_out)
        assert a._version == 1


@REQUIRES_GRAD
@EACH_IN_PLACE
def test_inference_mode_handle_indirect_view_on_rebase(lib, requires_grad, change):
    a = normal_non_leaf(lib, requires_grad)
    with lib.inference_mode():
        view_out = a.view(-1)
    change(a)
    if requires_grad:
        with pytest.raises(
            RuntimeError,
            match="^A view was created in inference mode and its base or another view ",
        ):
            view_out.grad_fn
    else:
        assert view_out.grad_fn is None


# --------------------------------------------------------------------------- the two mixed


@REQUIRES_GRAD
def test_mix_inference_and_normal_tensor_functional_op(lib, requires_grad):
    s = lib.ones(1, 2, 3, requires_grad=requires_grad)
    c = inference_ones(lib, requires_grad)
    out = c.add(s)  # add saves nothing for backward, so this is allowed
    assert not lib.is_inference(out)
    assert out.requires_grad == requires_grad
    if requires_grad:
        out.backward(lib.ones_like(out))  # a leaf inference tensor still gets a gradient
        assert same(c.grad, np.ones((1, 2, 3)))
        with pytest.raises(RuntimeError, match="^Inference tensors cannot be saved for backward"):
            c * s


@REQUIRES_GRAD
def test_mix_inference_and_normal_tensor_inplace_op(lib, requires_grad):
    a = normal_non_leaf(lib, requires_grad)
    c = inference_ones(lib)
    assert lib.is_inference(c)
    s = lib.ones(1, 2, 3, requires_grad=requires_grad)
    if requires_grad:
        with pytest.raises(RuntimeError, match="^Inference tensors cannot be saved for backward"):
            a.mul_(c)
        with pytest.raises(
            RuntimeError, match=r"^mul\(\): functions with out=\.\.\. arguments don't"
        ):
            lib.mul(s, s, out=c)
    else:
        a.mul_(c)
        assert a._version == 1
        with pytest.raises(
            RuntimeError, match="^Inplace update to inference tensor outside InferenceMode"
        ):
            lib.mul(s, s, out=c)


@REQUIRES_GRAD
def test_mix_inference_and_normal_tensor_view_op(lib, requires_grad):
    s = lib.ones(1, 2, 3, requires_grad=requires_grad)
    c = inference_ones(lib)
    tmp1 = c.view_as(s)  # a view of c: one tensor goes in
    assert lib.is_inference(tmp1)
    assert not tmp1.requires_grad
    tmp2 = s.view_as(c)  # a view of s with c's shape: not a mix either
    assert not lib.is_inference(tmp2)
    assert tmp2.requires_grad == requires_grad


IN_PLACE_ON_INFERENCE = {  # -> whether torch's autograd layer (the leaf error) comes first
    "zero_": (lambda lib, c: c.zero_(), False),
    "fill_(2.0)": (lambda lib, c: c.fill_(2.0), False),
    "exp_": (lambda lib, c: c.exp_(), False),
    "pow_(2)": (lambda lib, c: c.pow_(2), False),
    "clamp_(0, 1)": (lambda lib, c: c.clamp_(0, 1), False),
    "add_(itself)": (lambda lib, c: c.add_(c), False),
    "c[0] = 1.0": (lambda lib, c: c.__setitem__(0, 1.0), False),
    "add_(1)": (lambda lib, c: c.add_(1), True),
    "div_(2)": (lambda lib, c: c.div_(2), True),
    "copy_(tensor)": (lambda lib, c: c.copy_(lib.ones(3)), True),
    "fill_(tensor)": (lambda lib, c: c.fill_(lib.tensor(2.0)), True),
    "masked_fill_": (lambda lib, c: c.masked_fill_(lib.tensor([True, False, True]), 0.0), True),
    "index_put_": (lambda lib, c: c.index_put_((lib.tensor([0]),), lib.tensor(5.0)), True),
}


@pytest.mark.parametrize("case", IN_PLACE_ON_INFERENCE.values(), ids=IN_PLACE_ON_INFERENCE.keys())
def test_inference_mode_inf_tensor_in_normal_mode_inplace_op(lib, case):
    """An inference tensor that requires grad, changed in place outside inference mode: with
    only inference tensors (and numbers torch does not wrap) the op goes straight to the
    kernel, whose inference error comes first; meeting a normal tensor, autograd's leaf
    error does."""
    change, leaf_first = case
    with lib.inference_mode():
        c = lib.ones(3, requires_grad=True)
    first = "a leaf Variable that requires grad" if leaf_first else "Inplace update to inference"
    with pytest.raises(RuntimeError, match=f"^{first}"):
        change(lib, c)
