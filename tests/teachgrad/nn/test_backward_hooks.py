"""A Module's full backward hooks and pre-hooks (``nn/modules/backward_hooks.py``), as torch's
own tests (test_autograd.py: test_full_backward_hook_double_backward,
test_backward_hook_relative_ordering; test_nn's module hook tests) check them: each test runs
with teachgrad and with torch (the ``lib`` fixture) and asserts the same facts."""

import warnings

import pytest

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)


class Scale:
    """A module of two inputs and a number, ``x * w + y * 2 * k``: made per library."""

    @staticmethod
    def make(lib):
        class M(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.w = lib.nn.Parameter(lib.tensor([1.0, 2.0], dtype=lib.float64))

            def forward(self, x, k, y):
                return x * self.w + y * 2 * k

        return M()


def _inputs(lib, x_grad=True, y_grad=False):
    x = lib.tensor([3.0, 4.0], dtype=lib.float64, requires_grad=x_grad)
    y = lib.tensor([5.0, 6.0], dtype=lib.float64, requires_grad=y_grad)
    return x, y


def _listed(values):
    return [None if v is None else v.tolist() for v in values]


def test_the_hook_gets_the_gradients_of_the_inputs_and_the_outputs(lib):
    m, seen = Scale.make(lib), []
    m.register_full_backward_hook(lambda mod, gin, gout: seen.append((_listed(gin), _listed(gout))))
    x, y = _inputs(lib, y_grad=True)
    (m(x, 3, y) * lib.tensor([1.0, 10.0], dtype=lib.float64)).sum().backward()
    # one grad_input per positional argument: None for the number
    assert seen == [([[1.0, 20.0], None, [6.0, 60.0]], [[1.0, 10.0]])]
    assert x.grad.tolist() == [1.0, 20.0] and m.w.grad.tolist() == [3.0, 40.0]


def test_a_returned_grad_input_replaces_it_and_a_pre_hook_its_grad_output(lib):
    m = Scale.make(lib)
    m.register_full_backward_pre_hook(lambda mod, gout: (gout[0] * 2,))
    m.register_full_backward_hook(lambda mod, gin, gout: (gin[0] + 100, None, gin[2]))
    x, y = _inputs(lib)
    m(x, 3, y).sum().backward()
    assert x.grad.tolist() == [102.0, 104.0]  # (2 · w, then + 100)
    assert m.w.grad.tolist() == [6.0, 8.0]  # (the pre-hook's doubled grad_output)


def test_with_no_input_requiring_grad_the_hook_sees_nones(lib):
    m, seen = Scale.make(lib), []
    m.register_full_backward_hook(lambda mod, gin, gout: seen.append(gin))
    x, y = _inputs(lib, x_grad=False)
    with pytest.warns(UserWarning, match="^Full backward hook is firing when gradients are comp"):
        m(x, 3, y).sum().backward()
    assert seen == [(None, None, None)] and m.w.grad.tolist() == [3.0, 4.0]
    m.register_full_backward_hook(lambda mod, gin, gout: (lib.ones(2),))
    with (
        pytest.warns(UserWarning),
        pytest.raises(RuntimeError, match="^Backward hook for Modules where no input requires"),
    ):
        m(x, 3, y).sum().backward()


@pytest.mark.parametrize("pre", [False, True])
def test_a_hook_returning_the_wrong_number_of_gradients(lib, pre):
    m = Scale.make(lib)
    x, y = _inputs(lib)
    if pre:
        m.register_full_backward_pre_hook(lambda mod, gout: (gout[0], gout[0]))
        match = (
            "^Backward pre hook returned an invalid number of grad_output, got 2, but expected 1"
        )
    else:
        m.register_full_backward_hook(lambda mod, gin, gout: (gin[0],))
        match = "^Backward hook returned an invalid number of grad_input, got 1, but expected 3"
    with pytest.raises(RuntimeError, match=match):
        m(x, 3, y).sum().backward()


def test_hooks_run_in_order_pre_hooks_first_and_handles_remove_them(lib):
    m, order = lib.nn.Linear(2, 2), []
    h1 = m.register_full_backward_hook(lambda *a: order.append("hook 1"))
    m.register_full_backward_hook(lambda *a: order.append("hook 0"), prepend=True)
    m.register_full_backward_pre_hook(lambda *a: order.append("pre"))
    x = lib.ones(1, 2, requires_grad=True)
    m(x).sum().backward()
    h1.remove()
    m(x).sum().backward()
    assert order == ["pre", "hook 0", "hook 1", "pre", "hook 0"]


def test_a_module_with_several_outputs(lib):
    class Two(lib.nn.Module):
        def forward(self, x):
            return x * 2, x * 3

    m, seen = Two(), []
    m.register_full_backward_pre_hook(lambda mod, gout: seen.append(_listed(gout)))
    x = lib.ones(2, requires_grad=True)
    a, b = m(x)
    (a.sum() + 10 * b.sum()).backward()
    assert seen == [[[1.0, 1.0], [10.0, 10.0]]] and x.grad.tolist() == [32.0, 32.0]


def test_the_hook_runs_once_in_a_double_backward(lib):
    """test_full_backward_hook_double_backward: the first grad runs the hook; the second,
    through the graph of that gradient, does not."""
    x = lib.rand(1, requires_grad=True)
    y = lib.rand_like(x)
    func, counter = lib.nn.MSELoss(), [0]
    func.register_full_backward_hook(lambda *a: counter.__setitem__(0, counter[0] + 1))
    (gradx,) = lib.autograd.grad(func(x, y), x, create_graph=True)
    assert counter[0] == 1
    lib.autograd.grad(gradx, x)
    assert counter[0] == 1


def test_no_hook_without_grad_mode_and_a_warning_for_an_output_that_is_no_tensor(lib):
    m, seen = Scale.make(lib), []
    m.register_full_backward_hook(lambda *a: seen.append(a))
    x, y = _inputs(lib)
    with lib.no_grad():
        out = m(x, 3, y)
    assert not out.requires_grad and seen == []

    class Words(lib.nn.Module):
        def forward(self, x):
            return {"y": x * 2}

    w = Words()
    w.register_full_backward_hook(lambda *a: None)
    with pytest.warns(UserWarning, match="^For backward hooks to be called, module output should"):
        w(x)


# ---- register_backward_hook: torch's deprecated "non-full" hook (test_nn's
# test_hook_backward_size, test_hook_invalid_outputs, test_hook_incorrect_outputs style)
_MULTIPLE_NODES = "^Using a non-full backward hook when the forward contains multiple autograd"


class Times:
    """``x * y``: a module whose forward is one node, MulBackward0."""

    @staticmethod
    def make(lib):
        class M(lib.nn.Module):
            def forward(self, x, y):
                return x * y

        return M()


def test_the_legacy_hook_gets_the_output_nodes_gradients_and_may_replace_them(lib):
    m, seen = Times.make(lib), []
    handle = m.register_backward_hook(
        lambda mod, gin, gout: seen.append((mod is m, _listed(gin), _listed(gout)))
    )
    x, y = _inputs(lib, y_grad=True)
    # leaves' nodes are their AccumulateGrads, not the inputs' grad_fn None: torch warns
    with pytest.warns(FutureWarning, match=_MULTIPLE_NODES):
        out = m(x, y)
    (out * 2).sum().backward()
    assert seen == [(True, [[10.0, 12.0], [6.0, 8.0]], [[2.0, 2.0]])]
    m2 = Times.make(lib)
    m2.register_backward_hook(lambda mod, gin, gout: (gin[0] * 10, None))
    x.grad = y.grad = None
    with pytest.warns(FutureWarning):
        m2(x, y).sum().backward()
    assert x.grad.tolist() == [50.0, 60.0] and y.grad is None
    handle.remove()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no hook left: no warning either)
        m(x, y).sum().backward()
    assert len(seen) == 1


def test_the_legacy_hook_sees_only_the_last_node_of_a_longer_forward(lib):
    class Two(lib.nn.Module):
        def forward(self, x):
            return (x * 2).exp()

    m, seen = Two(), []
    m.register_backward_hook(lambda mod, gin, gout: seen.append(len(gin)))
    x = lib.zeros(2, requires_grad=True)
    with pytest.warns(FutureWarning, match=_MULTIPLE_NODES):
        out = m(x * 1)  # (a non-leaf input: its node is MulBackward0, not exp's edge)
    out.sum().backward()
    assert seen == [1]  # ExpBackward0's one grad_input, not the module's


def test_no_warning_when_the_forward_is_one_node_on_non_leaf_inputs(lib):
    m, seen = Times.make(lib), []
    m.register_backward_hook(lambda mod, gin, gout: seen.append(_listed(gin)))
    x, y = _inputs(lib, y_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = m(x * 1, y * 1)
    out.sum().backward()
    assert seen == [[[5.0, 6.0], [3.0, 4.0]]]


@pytest.mark.parametrize(
    "forward, args, match",
    [
        (
            lambda x: {"y": x * 2},
            (),
            "^Using non-full backward hooks on a Module that does not ret",
        ),
        (lambda x, k: x * k, (3,), "^Using non-full backward hooks on a Module that does not tak"),
        (
            lambda x: (x * 2, x * 3),
            (),
            "^Using a non-full backward hook when outputs are generated",
        ),
    ],
)
def test_the_legacy_hooks_warnings(lib, forward, args, match):
    class M(lib.nn.Module):
        def forward(self, *a):
            return forward(*a)

    m, seen = M(), []
    m.register_backward_hook(lambda mod, gin, gout: seen.append(_listed(gout)))
    x = lib.ones(2, requires_grad=True)
    with pytest.warns(FutureWarning, match=match) as caught:
        out = m(x, *args)
    assert len(caught) == 1 and "register_full_backward_hook" in str(caught[0].message)
    first = out["y"] if isinstance(out, dict) else out[0] if isinstance(out, tuple) else out
    first.sum().backward()
    assert seen == [[[1.0, 1.0]]]  # (the first output's node only)


def test_legacy_and_full_hooks_cannot_share_a_module(lib):
    message = "^Cannot use both regular backward hooks and full backward hooks on a single Module"
    legacy, full = lib.nn.Identity(), lib.nn.Identity()
    legacy.register_backward_hook(lambda *a: None).remove()  # (removing does not free the kind)
    full.register_full_backward_hook(lambda *a: None)
    with pytest.raises(RuntimeError, match=message):
        legacy.register_full_backward_hook(lambda *a: None)
    with pytest.raises(RuntimeError, match=message):
        full.register_backward_hook(lambda *a: None)


def test_no_legacy_hook_without_a_graph(lib):
    m, seen = Times.make(lib), []
    m.register_backward_hook(lambda *a: seen.append(a))
    x, y = _inputs(lib)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (nothing is watched, so nothing is warned about)
        m(x.detach(), y)
        with lib.no_grad():
            m(x, y)
    assert seen == []
