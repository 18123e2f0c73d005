"""tg.nn.Parameter: a leaf that requires grad, shares its data's memory, prints like torch's."""

import copy
import pickle

import pytest

import teachgrad as tg

from ._common import torch_text


def test_parameter_is_a_leaf_tensor_that_requires_grad():
    p = tg.nn.Parameter(tg.zeros(2, 3))
    assert isinstance(p, tg.nn.Parameter) and isinstance(p, tg.Tensor)
    assert p.requires_grad and p.is_leaf and p.grad_fn is None
    assert p.shape == (2, 3)


def test_requires_grad_false_is_kept():
    assert not tg.nn.Parameter(tg.zeros(2), requires_grad=False).requires_grad


def test_no_data_gives_an_empty_parameter(torch):
    assert tuple(tg.nn.Parameter().shape) == tuple(torch.nn.Parameter().shape) == (0,)


def test_shares_memory_and_version_counter_with_its_data_like_torch(torch):
    """Change the source in place: torch's Parameter sees it and shares the version counter."""
    for lib, make in ((tg, tg.nn.Parameter), (torch, torch.nn.Parameter)):
        t = lib.ones(3)
        p = make(t)
        assert p.data_ptr() == t.data_ptr()
        t.mul_(2.0)
        assert p.tolist() == [2.0, 2.0, 2.0]
        assert p._version == t._version == 1


def test_parameter_of_a_computed_tensor_is_a_new_leaf():
    x = tg.ones(2, requires_grad=True)
    p = tg.nn.Parameter(x * 3)
    assert p.is_leaf and p.grad_fn is None and p.requires_grad
    (p * p).sum().backward()
    assert p.grad.tolist() == [6.0, 6.0] and x.grad is None


def test_integer_data_cannot_require_grad(torch):
    with pytest.raises(RuntimeError, match="(?i)only Tensors of floating point"):
        torch.nn.Parameter(torch.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="(?i)only Tensors of floating point"):
        tg.nn.Parameter(tg.tensor([1, 2]))


def test_data_must_be_a_tensor():
    with pytest.raises(TypeError, match="must be a Tensor"):
        tg.nn.Parameter([1.0, 2.0])


@pytest.mark.no_standin("compares printed text with torch's CPU tensors, which print no device")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("requires_grad", [True, False])
def test_repr_matches_torch(torch, dtype, requires_grad):
    values = [[1.5, -2.0], [0.25, 3.0]]
    ours = tg.nn.Parameter(tg.tensor(values, dtype=getattr(tg, dtype)), requires_grad)
    theirs = torch.nn.Parameter(torch.tensor(values, dtype=getattr(torch, dtype)), requires_grad)
    assert repr(ours).startswith("Parameter containing:\n")
    assert torch_text(repr(ours)) == repr(theirs)


def test_results_of_ops_are_plain_tensors(torch):
    p = tg.nn.Parameter(tg.ones(2))
    for result in (p * 2, p + p, p.detach(), p.clone(), p.data, p[0]):
        assert type(result) is tg.Tensor
    assert type(torch.nn.Parameter(torch.ones(2)) * 2) is torch.Tensor


def test_deepcopy_is_a_parameter_with_its_own_memory():
    p = tg.nn.Parameter(tg.tensor([1.0, 2.0]))
    q = copy.deepcopy(p)
    assert isinstance(q, tg.nn.Parameter) and q.requires_grad
    assert q.tolist() == p.tolist() and q.data_ptr() != p.data_ptr()


def test_pickle_round_trip_keeps_the_type_and_flag():
    p = tg.nn.Parameter(tg.tensor([1.0, 2.0]), requires_grad=False)
    q = pickle.loads(pickle.dumps(p))
    assert isinstance(q, tg.nn.Parameter) and not q.requires_grad and q.tolist() == [1.0, 2.0]
