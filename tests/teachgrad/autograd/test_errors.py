"""Errors that teach (API.md section 4, DESIGN.md "Errors that teach").

Each error keeps torch's exception class and key phrase (so a web search finds
torch's explanations) and adds what a learner needs: the node, the input index or
shape, and a hint. The table below triggers each error in both libraries: torch
must raise the same class with the same phrase (so the phrase really is torch's),
and teachgrad's message must say more than torch's.
"""

import re

import pytest

import teachgrad as tg


def _bump(L, t, times=1):
    """An in-place change of ``t`` that autograd notices (its version goes up)."""
    for _ in range(times):
        if L is tg:
            t._data[...] = t._data + 0
            t._counter.version += 1
        else:
            t.add_(0)


def _non_scalar_backward(L):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    (x * 3).backward()


def _non_scalar_grad(L):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    L.autograd.grad(x * 3, x)


def _second_backward(L):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    y.backward()


def _second_grad(L):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp().sum()
    L.autograd.grad(y, x)
    L.autograd.grad(y, x)


def _no_grad_fn(L):
    (L.tensor([1.0, 2.0]) * 3).sum().backward()


def _no_grad_fn_made_under_no_grad(L):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    with L.no_grad():
        y = (x * 3).sum()
    y.backward()


def _no_grad_fn_in_grad(L):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    L.autograd.grad(x.detach().sum(), x)


def _unused_input(L):
    x = L.tensor(2.0, requires_grad=True)
    z = L.tensor([2.0, 3.0], requires_grad=True)
    L.autograd.grad(x * 3, [x, z])


def _input_without_grad(L):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    L.autograd.grad((x * 2).sum(), [x, L.ones(2)])


def _saved_input_modified(L):
    a = L.tensor([1.0, 2.0], requires_grad=True)
    b = a * 1
    c = b.sin()
    _bump(L, b)
    c.sum().backward()


def _saved_output_modified(L):
    a = L.tensor([1.0, 2.0], requires_grad=True)
    c = (a * 1).exp()
    _bump(L, c)
    c.sum().backward()


def _modified_twice_after_saving_at_version_one(L):
    a = L.tensor([1.0, 2.0], requires_grad=True)
    b = a * 1
    _bump(L, b)
    c = b * b
    _bump(L, b, 2)
    c.sum().backward()


def _grad_output_shape(L):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    (x * x).backward(L.ones(3))


def _int_requires_grad(L):
    L.tensor([1, 2]).requires_grad_()


def _non_leaf_requires_grad_false(L):
    (L.ones(2, requires_grad=True) * 2).requires_grad_(False)


def _leaf_in_place(L):
    x = L.ones(2, requires_grad=True)
    x.add_(1)


def _inference_tensor_saved(L):
    with L.inference_mode():
        t = L.ones(2)
    x = L.ones(2, requires_grad=True)
    x * t


def _wrong_number_of_grads(L):
    class TwoGrads(L.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g, g

    TwoGrads.apply(L.ones(2, requires_grad=True)).sum().backward()


def _wrong_grad_shape(L):
    class BadShape(L.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return L.ones(3)

    BadShape.apply(L.ones(2, requires_grad=True)).sum().backward()


# name: (trigger, exception class, torch's key phrase, details teachgrad adds (regexes))
ERRORS = {
    "non-scalar backward": (
        _non_scalar_backward,
        RuntimeError,
        "grad can be implicitly created only for scalar outputs",
        [r"\(2,\)", "sum"],
    ),
    "non-scalar grad": (
        _non_scalar_grad,
        RuntimeError,
        "grad can be implicitly created only for scalar outputs",
        [r"\(2,\)"],
    ),
    "second backward": (
        _second_backward,
        RuntimeError,
        "Trying to backward through the graph a second time",
        ["MulBackward0"],
    ),
    "second grad": (
        _second_grad,
        RuntimeError,
        "Trying to backward through the graph a second time",
        ["ExpBackward0"],
    ),
    "no grad_fn": (
        _no_grad_fn,
        RuntimeError,
        "element 0 of tensors does not require grad and does not have a grad_fn",
        ["requires_grad=True", "no_grad"],
    ),
    "no grad_fn (no_grad)": (
        _no_grad_fn_made_under_no_grad,
        RuntimeError,
        "does not require grad and does not have a grad_fn",
        ["no_grad"],
    ),
    "no grad_fn (grad)": (
        _no_grad_fn_in_grad,
        RuntimeError,
        "does not require grad and does not have a grad_fn",
        ["detach"],
    ),
    "unused input": (
        _unused_input,
        RuntimeError,
        "appears to not have been used in the graph",
        ["allow_unused=True", r"[Ii]nput 1", r"\(2,\)"],
    ),
    "input without grad": (
        _input_without_grad,
        RuntimeError,
        "One of the differentiated Tensors does not require grad",
        [r"input 1", "requires_grad"],
    ),
    "saved input modified": (
        _saved_input_modified,
        RuntimeError,
        "has been modified by an inplace operation",
        ["is at version 1; expected version 0 instead", "SinBackward0", "self", "clone"],
    ),
    "saved output modified": (
        _saved_output_modified,
        RuntimeError,
        "has been modified by an inplace operation",
        ["is at version 1; expected version 0 instead", "ExpBackward0", "result"],
    ),
    "saved at version 1": (
        _modified_twice_after_saving_at_version_one,
        RuntimeError,
        "has been modified by an inplace operation",
        ["is at version 3; expected version 1 instead", "MulBackward0"],
    ),
    "grad_output shape": (_grad_output_shape, RuntimeError, "Mismatch in shape", [r"\[3\]|\(3,\)"]),
    "int requires grad": (
        _int_requires_grad,
        RuntimeError,
        "only Tensors of floating point",
        ["int64", "float"],
    ),
    "non-leaf requires_grad": (
        _non_leaf_requires_grad_false,
        RuntimeError,
        "you can only change requires_grad flags of leaf variables",
        ["detach"],
    ),
    "leaf in-place": (
        _leaf_in_place,
        RuntimeError,
        "a leaf Variable that requires grad is being used in an in-place operation",
        ["no_grad|clone"],
    ),
    "inference tensor saved": (
        _inference_tensor_saved,
        RuntimeError,
        "Inference tensors cannot be saved for backward",
        ["MulBackward0", "inference_mode"],
    ),
    "wrong number of grads": (
        _wrong_number_of_grads,
        RuntimeError,
        "returned an incorrect number of gradients (expected 1, got 2)",
        ["TwoGradsBackward", "None"],
    ),
    "wrong grad shape": (
        _wrong_grad_shape,
        RuntimeError,
        "returned an invalid gradient at index 0 - got [3] but expected shape compatible with [2]",
        ["BadShapeBackward", r"\(2,\)"],
    ),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_error_class_and_key_phrase(name):
    trigger, error, phrase, _ = ERRORS[name]
    with pytest.raises(error) as info:
        trigger(tg)
    assert phrase.lower() in str(info.value).lower()


@pytest.mark.parametrize("name", list(ERRORS))
def test_key_phrase_is_torchs(name, torch):
    """The phrase we promise is really in torch's message, with the same exception class."""
    trigger, error, phrase, _ = ERRORS[name]
    with pytest.raises(error) as info:
        trigger(torch)
    assert phrase.lower() in str(info.value).lower()


@pytest.mark.parametrize("name", list(ERRORS))
def test_error_teaches_more_than_torch_says(name):
    """Beyond torch's phrase the message names what went wrong where, or how to fix it."""
    trigger, error, _, details = ERRORS[name]
    with pytest.raises(error) as info:
        trigger(tg)
    message = str(info.value)
    missing = [d for d in details if not re.search(d, message)]
    assert not missing, f"message lacks {missing}:\n{message}"


@pytest.mark.parametrize("name", list(ERRORS))
def test_error_is_longer_than_torchs(name, torch):
    trigger, error, _, _ = ERRORS[name]
    messages = {}
    for lib in (torch, tg):
        with pytest.raises(error) as info:
            trigger(lib)
        messages[lib.__name__] = str(info.value).replace("teachgrad", "torch")
    # torch's own "Hint: enable anomaly detection ..." tail does not count
    assert len(messages["teachgrad"]) > len(messages["torch"].split("Hint:")[0]) + 20


@pytest.mark.parametrize("times", [1, 2, 3])
def test_version_numbers_in_the_in_place_error(times):
    a = tg.tensor([1.0, 2.0], requires_grad=True)
    b = a * 1
    c = b.tanh() * b
    _bump(tg, b, times)
    with pytest.raises(RuntimeError, match=rf"is at version {times}; expected version 0 instead"):
        c.sum().backward()


def test_in_place_error_names_the_tensor_like_torch(torch):
    """torch's prefix '[torch.FloatTensor [2]], which is output 0 of ...' with 'teachgrad'."""
    messages = {}
    for lib in (torch, tg):
        with pytest.raises(RuntimeError) as info:
            _saved_output_modified(lib)
        messages[lib.__name__] = str(info.value)
    prefix = re.search(
        r"\[\w+\.FloatTensor \[2\]\], which is output 0 of \w+", messages["torch"]
    ).group(0)
    assert prefix.replace("torch", "teachgrad") in messages["teachgrad"]


def test_errors_do_not_corrupt_later_backward_calls():
    """After an error the grad mode is back on and a fresh graph works."""
    with pytest.raises(RuntimeError):
        _saved_input_modified(tg)
    assert tg.is_grad_enabled()
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]


@pytest.mark.cuda
def test_mixed_devices_name_both_devices():
    a = tg.ones(2, requires_grad=True)
    b = tg.ones(2, device="cuda")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device") as info:
        a * b
    assert "cpu" in str(info.value) and "cuda" in str(info.value)
