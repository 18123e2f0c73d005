"""The Tensor itself (API.md section 1): autograd attributes, memory, conversions,
printing, creation functions, dtypes and seeding.

Where PyTorch is importable it is the oracle (same expression evaluated with
``L = torch`` and ``L = teachgrad``); every other test states the expected value
itself, so the file also runs without torch.
"""

import threading
import warnings

import numpy as np
import pytest

import teachgrad as tg


def _run(expr, lib):
    """Evaluate ``expr`` with ``L`` bound to a library; exceptions become ("raises", class name)."""
    namespace = {"L": lib, "np": np, "inf": float("inf"), "nan": float("nan")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return eval(expr, namespace)
        except Exception as exc:  # noqa: BLE001 - the class is the result here
            return ("raises", type(exc).__name__)


def _as_tg_text(value) -> str:
    return repr(value).replace("torch", "teachgrad")


# =============================================================================== .data


def test_data_shares_memory_with_the_tensor():
    x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    d = x.data
    assert d.data_ptr() == x.data_ptr()
    d._data[0] = 10.0
    assert x.tolist() == [10.0, 2.0, 3.0]


def test_data_has_its_own_version_counter():
    """Changes made through .data are invisible to autograd: x's version is not bumped."""
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    d = x.data
    d._counter.version += 1  # what an in-place op on d would do
    assert d._version == 1
    assert x._version == 0


def test_data_is_a_leaf_that_does_not_require_grad():
    y = tg.tensor([1.0, 2.0], requires_grad=True) * 2
    d = y.data
    assert (d.requires_grad, d.is_leaf, d.grad_fn) == (False, True, None)


def test_data_setter_swaps_the_values_but_keeps_the_tensor():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    x.data = tg.tensor([5.0, 6.0, 7.0])
    assert x.tolist() == [5.0, 6.0, 7.0]
    assert x.requires_grad and x.is_leaf


def test_data_setter_rejects_integer_data_for_a_tensor_requiring_grad():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError):
        x.data = tg.tensor([1, 2])


# =============================================================================== .grad


def test_grad_is_none_before_backward_and_settable_to_a_matching_tensor():
    x = tg.ones(3, requires_grad=True)
    assert x.grad is None
    g = tg.full((3,), 2.0)
    x.grad = g
    assert x.grad is g
    x.grad = None
    assert x.grad is None
    x.grad = g
    del x.grad
    assert x.grad is None


@pytest.mark.parametrize(
    "make_grad, error, phrase",
    [
        (lambda: tg.ones(2), RuntimeError, "size"),
        (lambda: tg.ones(3, dtype=tg.float64), RuntimeError, "type"),
        (lambda: 3.0, TypeError, "expected to be a Tensor or None"),
        (lambda: [1.0, 1.0, 1.0], TypeError, "expected to be a Tensor or None"),
    ],
    ids=["wrong-shape", "wrong-dtype", "python-float", "list"],
)
def test_grad_setter_validates_like_torch(make_grad, error, phrase):
    x = tg.ones(3, requires_grad=True)
    with pytest.raises(error, match=phrase):
        x.grad = make_grad()
    assert x.grad is None


def test_reading_grad_of_a_non_leaf_warns_and_returns_none():
    y = tg.ones(2, requires_grad=True) * 2
    with pytest.warns(UserWarning, match="not a leaf Tensor"):
        assert y.grad is None


def test_reading_grad_of_a_non_leaf_that_retains_grad_does_not_warn():
    y = tg.ones(2, requires_grad=True) * 2
    y.retain_grad()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert y.grad is None


# =============================================================================== requires_grad


@pytest.mark.parametrize("dtype", [tg.float16, tg.float32, tg.float64])
def test_floating_tensors_can_require_grad(dtype):
    assert tg.zeros(2, dtype=dtype, requires_grad=True).requires_grad
    assert tg.zeros(2, dtype=dtype).requires_grad_().requires_grad


_INT_REQUIRES_GRAD = {
    "tensor(requires_grad=True)": lambda dt: tg.tensor([1, 2], dtype=dt, requires_grad=True),
    "requires_grad_()": lambda dt: tg.tensor([1, 2], dtype=dt).requires_grad_(),
    "zeros(requires_grad=True)": lambda dt: tg.zeros(2, dtype=dt, requires_grad=True),
    "attribute set": lambda dt: setattr(tg.tensor([1, 2], dtype=dt), "requires_grad", True),
}


@pytest.mark.parametrize("how", list(_INT_REQUIRES_GRAD))
@pytest.mark.parametrize("dtype", [tg.int64, tg.int32, tg.bool])
def test_only_floating_point_tensors_can_require_grad(how, dtype):
    with pytest.raises(RuntimeError, match="(?i)only Tensors of floating point"):
        _INT_REQUIRES_GRAD[how](dtype)


def test_integer_tensor_may_set_requires_grad_false():
    assert not tg.tensor([1, 2]).requires_grad_(False).requires_grad


def test_non_leaf_cannot_stop_requiring_grad():
    y = tg.ones(2, requires_grad=True) * 2
    with pytest.raises(
        RuntimeError, match="you can only change requires_grad flags of leaf variables"
    ):
        y.requires_grad_(False)
    with pytest.raises(RuntimeError, match="var_no_grad = var.detach()"):
        y.requires_grad = False


def test_non_leaf_requires_grad_true_is_a_no_op():
    """torch only refuses *changing* the flag of a non-leaf; setting True again is fine."""
    y = tg.ones(2, requires_grad=True) * 2
    assert y.requires_grad_(True) is y
    y.requires_grad = True
    assert y.requires_grad and y.grad_fn is not None


def test_requires_grad_propagates_through_ops():
    a = tg.ones(2, requires_grad=True)
    b = tg.ones(2)
    assert (a * b).requires_grad
    assert not (b * b).requires_grad


# =============================================================================== is_leaf / grad_fn


def test_is_leaf_and_grad_fn_follow_torchs_rules():
    x = tg.ones(2, requires_grad=True)
    c = tg.ones(2)
    y = x * 2
    assert x.is_leaf and x.grad_fn is None
    assert c.is_leaf and c.grad_fn is None
    assert not y.is_leaf and y.grad_fn.name() == "MulBackward0"
    assert (c * 2).is_leaf, "results of ops on tensors that need no grad are leaves"
    assert y.detach().is_leaf


def test_is_leaf_table_matches_torch(torch):
    def facts(L):
        x = L.ones(2, requires_grad=True)
        y = x * 2
        with L.no_grad():
            z = x * 2
        return [t.is_leaf for t in (x, y, z, y.detach(), L.ones(2) * 2, x.clone(), x[0])]

    assert facts(tg) == facts(torch)


# =============================================================================== retain_grad


def test_retain_grad_keeps_the_grad_of_a_non_leaf():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    assert not y.retains_grad
    y.retain_grad()
    assert y.retains_grad
    (y * y).sum().backward()
    assert y.grad.tolist() == [6.0, 12.0]


def test_retain_grad_on_a_leaf_is_a_no_op():
    x = tg.ones(2, requires_grad=True)
    x.retain_grad()
    assert not x.retains_grad
    (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_retain_grad_on_a_tensor_without_grad_raises():
    with pytest.raises(
        RuntimeError, match="can't retain_grad on Tensor that has requires_grad=False"
    ):
        tg.ones(2).retain_grad()


# =============================================================================== detach / clone / _version


def test_detach_shares_memory_and_version_counter_but_leaves_the_graph():
    x = tg.ones(3, requires_grad=True)
    y = x * 2
    d = y.detach()
    assert d.data_ptr() == y.data_ptr()
    assert (d.requires_grad, d.is_leaf, d.grad_fn) == (False, True, None)
    d._counter.version += 1  # an in-place change through d ...
    assert y._version == 1  # ... is seen by y: same version counter


def test_detach_in_place_turns_a_non_leaf_into_a_leaf():
    y = tg.ones(2, requires_grad=True) * 2
    assert y.detach_() is y
    assert (y.requires_grad, y.is_leaf, y.grad_fn) == (False, True, None)


def test_detach_in_place_on_a_view_raises():
    x = tg.ones(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="Can't detach views in-place"):
        x[0].detach_()


def test_clone_copies_memory_and_is_differentiable():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    c = x.clone()
    assert c.data_ptr() != x.data_ptr()
    assert c.grad_fn.name() == "CloneBackward0" and c._version == 0
    (c * c).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]


def test_clone_of_a_plain_tensor_is_a_leaf():
    c = tg.ones(2).clone()
    assert (c.requires_grad, c.is_leaf) == (False, True)


def test_version_starts_at_zero_and_is_shared_by_views():
    x = tg.zeros(2, 3)
    v = x[0]
    assert x._version == v._version == 0
    x._counter.version += 1
    assert v._version == 1


# =============================================================================== shape facts


def test_shape_size_dim_numel_dtype():
    x = tg.zeros(2, 3, 4, dtype=tg.float64)
    assert x.shape == (2, 3, 4) and isinstance(x.shape, tg.Size)
    assert x.size() == x.shape
    assert (x.size(0), x.size(-1)) == (2, 4)
    assert (x.dim(), x.ndim, x.numel()) == (3, 3, 24)
    assert x.dtype is tg.float64
    assert repr(x.shape) == "teachgrad.Size([2, 3, 4])"


def test_a_size_sliced_added_or_repeated_is_a_size_as_torch_s(torch):
    """torch.Size's slices, sums (on either side of a tuple) and repetitions are Sizes;
    an element is an int."""

    def facts(lib):
        s = lib.zeros(3, 2, 4).shape
        made = (s[1:], s[::-1], s[:0], s + (5,), (5,) + s, s + s, s * 2, 2 * s)
        return [(type(m).__name__, tuple(m)) for m in made] + [type(s[-1]).__name__]

    assert facts(tg) == facts(torch)
    with pytest.raises(TypeError):
        tg.zeros(2).shape + [1]


def test_size_with_a_bad_dim_raises_index_error():
    with pytest.raises(IndexError, match="Dimension out of range"):
        tg.zeros(2, 3).size(2)


def test_transposes():
    x = tg.zeros(2, 3)
    assert x.T.shape == (3, 2) and x.T.stride() == (1, 3)
    b = tg.zeros(5, 2, 3)
    assert b.mT.shape == (5, 3, 2)
    assert b.mT.stride() == (6, 1, 3)


def test_mT_of_a_vector_raises_runtime_error_like_torch():
    with pytest.raises(RuntimeError, match="only supported on matrices or batches of matrices"):
        tg.zeros(3).mT


def test_transposes_are_differentiable_views():
    x = tg.ones(2, 3, requires_grad=True)
    assert x.T.grad_fn is not None and x.T._base is x
    (x.mT * tg.arange(6.0).reshape(3, 2)).sum().backward()
    assert x.grad.tolist() == [[0.0, 2.0, 4.0], [1.0, 3.0, 5.0]]


_MEMORY_CASES = [
    "L.arange(12.).reshape(3, 4)",
    "L.arange(12.).reshape(3, 4).t()",
    "L.arange(12.).reshape(3, 4)[1:]",
    "L.arange(12.).reshape(3, 4)[:, 1]",
    "L.arange(12.).reshape(3, 4)[1:, ::2]",
    "L.arange(24.).reshape(2, 3, 4).permute(2, 0, 1)",
    "L.arange(12.).reshape(3, 4).t().contiguous()",
    "L.arange(12.).reshape(3, 4)[2]",
]


@pytest.mark.parametrize("expr", _MEMORY_CASES)
def test_memory_layout_matches_torch(expr, torch):
    """stride (in elements), contiguity, storage offset and view-ness agree with torch."""

    def facts(L):
        t = eval(expr, {"L": L})
        return (
            t.stride(),
            t.is_contiguous(),
            t.storage_offset(),
            t._is_view(),
            t._base is not None,
        )

    assert facts(tg) == facts(torch)


def test_data_ptr_of_a_view_points_into_the_base():
    x = tg.tensor(np.arange(12.0).reshape(3, 4))
    row = x[1]
    assert row.data_ptr() == x.data_ptr() + 4 * x.element_size()
    assert row._base is x and row._is_view() and not x._is_view()


def test_view_of_a_view_has_the_root_as_base():
    x = tg.zeros(3, 4)
    assert x[1:].t()._base is x


def test_contiguous_returns_self_when_already_contiguous():
    x = tg.zeros(2, 3)
    assert x.contiguous() is x
    t = x.t()
    c = t.contiguous()
    assert c is not t and c.is_contiguous() and c.stride() == (2, 1)


def test_stride_of_one_dim():
    x = tg.zeros(2, 3)
    assert (x.stride(0), x.stride(-1)) == (3, 1)


# =============================================================================== conversions


def test_item_and_tolist():
    assert tg.tensor([2.5]).item() == 2.5
    assert isinstance(tg.tensor([7]).item(), int)
    assert tg.tensor(True).item() is True
    assert tg.tensor([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    assert tg.tensor(2.5).tolist() == 2.5
    with pytest.raises(
        RuntimeError, match="a Tensor with 2 elements cannot be converted to Scalar"
    ):
        tg.ones(2).item()


def test_item_and_tolist_work_on_tensors_that_require_grad():
    y = tg.tensor([1.5, 2.0], requires_grad=True) * 2
    assert y.tolist() == [3.0, 4.0]
    assert y[0].item() == 3.0


def test_numpy_shares_memory():
    x = tg.zeros(3)
    a = x.numpy()
    a[0] = 7.0
    assert x.tolist() == [7.0, 0.0, 0.0]


@pytest.mark.parametrize("leaf", [True, False], ids=["leaf", "non-leaf"])
def test_numpy_raises_when_requires_grad(leaf):
    x = tg.ones(2, requires_grad=True)
    t = x if leaf else x * 2
    with pytest.raises(RuntimeError, match=r"Can't call numpy\(\) on Tensor that requires grad"):
        t.numpy()
    with pytest.raises(RuntimeError, match="requires grad"):
        np.asarray(t)
    assert t.detach().numpy().tolist() == ([1.0, 1.0] if leaf else [2.0, 2.0])


@pytest.mark.parametrize(
    "method, dtype",
    [("float", tg.float32), ("double", tg.float64), ("long", tg.int64)],
)
def test_casting_methods(method, dtype):
    x = tg.tensor([1.5, 2.5], dtype=tg.float64 if method != "double" else tg.float32)
    y = getattr(x, method)()
    assert y.dtype is dtype
    assert y.tolist() == ([1, 2] if dtype is tg.int64 else [1.5, 2.5])


def test_type_as_takes_the_other_tensors_dtype():
    assert tg.ones(2).type_as(tg.ones(1, dtype=tg.float64)).dtype is tg.float64
    assert tg.ones(2).type_as(tg.ones(1, dtype=tg.int64)).dtype is tg.int64


def test_to_returns_self_when_nothing_changes():
    x = tg.ones(3, requires_grad=True)
    assert x.to(tg.float32) is x
    assert x.to("cpu") is x
    assert x.cpu() is x
    assert x.float() is x
    assert x.to(tg.float32, copy=True) is not x


def test_to_another_float_dtype_is_differentiable():
    x = tg.ones(3, requires_grad=True)
    y = x.double()
    assert y.grad_fn.name() == "ToCopyBackward0"
    (y * 2).sum().backward()
    assert x.grad.dtype is tg.float32 and x.grad.tolist() == [2.0, 2.0, 2.0]


def test_to_an_integer_dtype_leaves_the_graph():
    y = tg.tensor([1.5], requires_grad=True).long()
    assert (y.requires_grad, y.grad_fn, y.dtype) == (False, None, tg.int64)


def test_to_accepts_a_tensor_to_copy_dtype_and_device_from():
    assert tg.ones(2).to(tg.ones(1, dtype=tg.float64)).dtype is tg.float64


@pytest.mark.skipif(tg.cuda.is_available(), reason="this checks the error raised without a GPU")
@pytest.mark.parametrize(
    "make",
    [lambda: tg.ones(2).cuda(), lambda: tg.ones(2).to("cuda"), lambda: tg.ones(2, device="cuda")],
    ids=["cuda()", "to(cuda)", "factory"],
)
def test_cuda_without_a_gpu_raises_a_clear_runtime_error(make):
    with pytest.raises(RuntimeError, match="(?i)(gpu|cuda|cupy)") as info:
        make()
    assert "is_available" in str(info.value) or "CuPy" in str(info.value)


def test_array_protocol_shares_memory_and_honours_dtype():
    x = tg.arange(6.0).reshape(2, 3)
    a = np.asarray(x)
    a[0, 0] = 100.0
    assert x[0, 0].item() == 100.0
    assert np.asarray(x, dtype=np.float64).dtype == np.float64


def test_dlpack_exports_to_numpy_without_copy():
    x = tg.arange(6.0).reshape(2, 3)
    a = np.from_dlpack(x)
    a[1, 2] = -1.0
    assert x[1, 2].item() == -1.0
    assert tuple(x.__dlpack_device__()) == (1, 0)  # (kDLCPU, device 0)


def test_dlpack_refuses_tensors_that_require_grad_with_torchs_buffer_error():
    """torch raises BufferError (the DLPack protocol's error), not RuntimeError."""
    with pytest.raises(BufferError, match="Can't export tensors that require gradient"):
        np.from_dlpack(tg.ones(2, requires_grad=True))


def test_len_and_iter():
    x = tg.arange(6).reshape(3, 2)
    assert len(x) == 3
    rows = list(x)
    assert [r.tolist() for r in rows] == [[0, 1], [2, 3], [4, 5]]
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(tg.tensor(1.0))
    with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
        iter(tg.tensor(1.0))


def test_iterating_a_tensor_that_requires_grad_matches_torchs_graph(torch):
    names = {
        L.__name__: [t.grad_fn.name() for t in L.ones(3, requires_grad=True)] for L in (torch, tg)
    }
    assert names["teachgrad"] == names["torch"]


def test_python_number_conversions():
    assert float(tg.tensor(2.5)) == 2.5
    assert int(tg.tensor(3)) == 3
    assert bool(tg.tensor([0.0])) is False
    assert [10, 20, 30][tg.tensor(1)] == 20
    with pytest.raises(
        RuntimeError, match="Boolean value of Tensor with more than one value is ambiguous"
    ):
        bool(tg.ones(2))


# =============================================================================== printing

_REPR_CASES = [
    "L.tensor([1, 2, 3])",
    "L.tensor([[1, -20], [300, 4]])",
    "L.tensor(3)",
    "L.tensor(3.5)",
    "L.tensor(-2.0)",
    "L.tensor([1., 2., 3.])",
    "L.tensor([1.5, 2.25, -3.0])",
    "L.tensor([-1., 0., 1.])",
    "L.tensor([0., 0.])",
    "L.tensor([0.1, 100.0])",
    "L.tensor([0.001, 1000.0])",
    "L.tensor(12345.678)",
    "L.arange(10.).reshape(2, 5) / 3",
    "L.arange(40.) * 1.1",
    # scientific notation
    "L.tensor([1e-5, 1.0])",
    "L.tensor([0.0001, 1.])",
    "L.tensor([1e10, 1.0])",
    "L.tensor([1e-10, 1e-12])",
    "L.tensor(1e-5)",
    "L.tensor([[1e-5, 1.0], [2., 3.]])",
    "L.tensor([123456789.0, 1.0])",
    "L.tensor([1e8, 1.0])",
    "L.tensor([100000., 1.])",
    # nan / inf / negative zero
    "L.tensor([nan, 1.5, -inf])",
    "L.tensor([nan, 1.0, inf])",
    "L.tensor([-0.0, 1.0])",
    # 2-D / 3-D
    "L.tensor([[1., 2.], [3., 4.]])",
    "L.tensor([[[1., 2.], [3., 4.]], [[5., 6.], [7., 8.]]])",
    "L.arange(12.).reshape(3, 4)",
    # autograd suffixes
    "L.tensor([1., 2.], requires_grad=True)",
    "L.tensor([1., 2.], requires_grad=True) * 2",
    "L.tensor([1.0, -2.5], requires_grad=True).sum()",
    "L.tensor([[1., 2.], [3., 4.]], requires_grad=True) * 2",
    # dtype suffixes
    "L.tensor([1., 2.], dtype=L.float64)",
    "L.tensor([1., 2.], dtype=L.float64, requires_grad=True)",
    "L.tensor([1, 2], dtype=L.int32)",
    "L.tensor([1, 2], dtype=L.float16)",
    "L.tensor([True, False])",
    "L.tensor(True)",
    # empty
    "L.tensor([])",
    "L.tensor([[]])",
    "L.zeros(0, 3)",
    "L.zeros(2, 0)",
    "L.zeros(3, 0, 2)",
    # summarised (more than 1000 elements)
    "L.arange(1001)",
    "L.arange(2000.)",
    "L.arange(2000).reshape(40, 50)",
    "L.arange(2000.).reshape(40, 50) / 7",
    "L.tensor([True] * 2000)",
]


@pytest.mark.parametrize("expr", _REPR_CASES)
def test_repr_matches_torch(expr, torch):
    expected = _as_tg_text(_run(expr, torch))
    assert repr(_run(expr, tg)) == expected


@pytest.mark.parametrize(
    "make, text",
    [
        (lambda: tg.tensor([1.0, 2.0]), "tensor([1., 2.])"),
        (lambda: tg.tensor([1, 2]), "tensor([1, 2])"),
        (lambda: tg.tensor([1e-5, 1.0]), "tensor([1.0000e-05, 1.0000e+00])"),
        (
            lambda: tg.tensor([1.5, 2.0], requires_grad=True),
            "tensor([1.5000, 2.0000], requires_grad=True)",
        ),
        (lambda: tg.tensor([1.0], dtype=tg.float64), "tensor([1.], dtype=teachgrad.float64)"),
        (lambda: tg.tensor([2.0], requires_grad=True) * 2, "tensor([4.], grad_fn=<MulBackward0>)"),
        (lambda: tg.tensor([[1.0, 2.0], [3.0, 4.0]]), "tensor([[1., 2.],\n        [3., 4.]])"),
        (lambda: tg.tensor([]), "tensor([])"),
        (lambda: tg.tensor([1e8, 1.0]), "tensor([1.0000e+08, 1.0000e+00])"),
        (lambda: tg.tensor([float("nan"), 1.0]), "tensor([nan, 1.])"),
        (lambda: tg.arange(1001), "tensor([   0,    1,    2,  ...,  998,  999, 1000])"),
    ],
    ids=[
        "floats",
        "ints",
        "sci",
        "requires_grad",
        "float64",
        "grad_fn",
        "2-D",
        "empty",
        "whole-sci",
        "nan-width",
        "summarised",
    ],
)
def test_repr_known_values(make, text):
    """The same layout as torch's repr, with 'teachgrad' for 'torch' (runs without torch)."""
    assert repr(make()) == text


# =============================================================================== creation and dtypes

_INFERRED = [
    ("L.tensor(1.)", "float32"),
    ("L.tensor(1)", "int64"),
    ("L.tensor(True)", "bool"),
    ("L.tensor([1, 2.])", "float32"),
    ("L.tensor([True, 1])", "int64"),
    ("L.tensor([True, 1.5])", "float32"),
    ("L.tensor([True, False])", "bool"),
    ("L.tensor([])", "float32"),
    ("L.tensor(np.float32(1))", "float32"),
    ("L.tensor(np.float64(1.5))", "float64"),
    ("L.tensor(np.array([1, 2], dtype=np.int32))", "int32"),
    ("L.tensor(np.array(1.5))", "float64"),
    ("L.from_numpy(np.arange(3.))", "float64"),
    ("L.as_tensor([1, 2])", "int64"),
    ("L.zeros(2, 3)", "float32"),
    ("L.ones(2, dtype=L.int64)", "int64"),
    ("L.full((2,), 7)", "int64"),
    ("L.full((2,), 7.)", "float32"),
    ("L.full((2,), True)", "bool"),
    ("L.arange(5)", "int64"),
    ("L.arange(5.)", "float32"),
    ("L.arange(0, 1, 0.25)", "float32"),
    ("L.linspace(0, 1, 5)", "float32"),
    ("L.eye(2)", "float32"),
    ("L.rand(2)", "float32"),
    ("L.randn(2, dtype=L.float64)", "float64"),
    ("L.randint(0, 10, (3,))", "int64"),
    ("L.zeros_like(L.ones(2, dtype=L.int32))", "int32"),
    ("L.randn_like(L.ones(2, dtype=L.float64))", "float64"),
    ("L.Tensor([1, 2])", "float32"),
]


@pytest.mark.parametrize("expr, dtype_name", _INFERRED)
def test_creation_dtype_inference(expr, dtype_name):
    """Python floats -> default float32, ints -> int64, bools -> bool, NumPy keeps its dtype."""
    assert _run(expr, tg).dtype.name == dtype_name


@pytest.mark.parametrize("expr", [e for e, _ in _INFERRED])
def test_creation_dtype_inference_matches_torch(expr, torch):
    assert _run(expr, tg).dtype.name == str(_run(expr, torch).dtype).replace("torch.", "")


_VALUES = [
    "L.arange(5)",
    "L.arange(1, 4)",
    "L.arange(0, 10, 3)",
    "L.arange(0, 1, 0.25)",
    "L.linspace(0, 1, 5)",
    "L.linspace(0, 10, 5, dtype=L.int64)",
    "L.eye(3)",
    "L.eye(2, 3)",
    "L.zeros(2, 3)",
    "L.zeros((2, 3))",
    "L.ones([2, 3])",
    "L.ones(())",
    "L.full((2, 2), 1.5)",
    "L.full_like(L.ones(2), 3)",
    "L.ones_like(L.ones(2, requires_grad=True))",
    "L.zeros(2, requires_grad=True)",
    "L.as_tensor([1., 2.], dtype=L.float64)",
    "L.ones(2, dtype=L.float64).new_ones(3)",
    "L.zeros(1).new_full((2,), 3)",
]


@pytest.mark.parametrize("expr", _VALUES)
def test_creation_values_match_torch(expr, torch):
    assert repr(_run(expr, tg)) == _as_tg_text(_run(expr, torch))


def test_from_numpy_and_as_tensor_share_memory_but_tensor_copies():
    a = np.arange(3.0)
    shared, also_shared, copied = tg.from_numpy(a), tg.as_tensor(a), tg.tensor(a)
    a[0] = 9.0
    assert shared[0].item() == also_shared[0].item() == 9.0
    assert copied[0].item() == 0.0


def test_factories_accept_requires_grad():
    for t in (
        tg.zeros(2, requires_grad=True),
        tg.randn(2, requires_grad=True),
        tg.tensor([1.0], requires_grad=True),
    ):
        assert t.requires_grad and t.is_leaf


def test_factories_refuse_negative_sizes():
    with pytest.raises(RuntimeError, match="negative"):
        tg.zeros(-1)


def test_random_factories_refuse_integer_dtypes():
    with pytest.raises((RuntimeError, NotImplementedError)):
        tg.randn(2, dtype=tg.int64)


# --------------------------------------------------------------------------- default dtype


@pytest.fixture
def restore_default_dtype():
    yield
    tg.set_default_dtype(tg.float32)


def test_default_dtype_is_float32():
    assert tg.get_default_dtype() is tg.float32
    assert tg.float is tg.float32 and tg.double is tg.float64 and tg.long is tg.int64


def test_set_default_dtype_changes_float_factories_only(restore_default_dtype):
    tg.set_default_dtype(tg.float64)
    for t in (
        tg.tensor(1.0),
        tg.zeros(1),
        tg.randn(1),
        tg.arange(1.0),
        tg.linspace(0, 1, 2),
        tg.eye(1),
    ):
        assert t.dtype is tg.float64
    assert tg.tensor([1, 2]).dtype is tg.int64
    assert (tg.tensor([1, 2]) * 1.5).dtype is tg.float64
    assert repr(tg.tensor([1.5])) == "tensor([1.5000])", "the default dtype is never printed"
    assert repr(tg.tensor([1.5], dtype=tg.float32)) == "tensor([1.5000], dtype=teachgrad.float32)"


def test_set_default_dtype_rejects_non_float_types(restore_default_dtype):
    with pytest.raises(
        TypeError, match="only floating-point types are supported as the default type"
    ):
        tg.set_default_dtype(tg.int64)
    assert tg.get_default_dtype() is tg.float32


def test_default_dtype_is_process_wide_like_torch(restore_default_dtype):
    """torch.set_default_dtype is global, not per thread: a worker thread sees it too."""
    seen = {}
    tg.set_default_dtype(tg.float64)
    worker = threading.Thread(target=lambda: seen.setdefault("dtype", tg.get_default_dtype()))
    worker.start()
    worker.join()
    assert seen["dtype"] is tg.float64


# --------------------------------------------------------------------------- promotion

_DTYPE_NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]


def test_promote_types_known_values():
    assert tg.promote_types(tg.int32, tg.int64) is tg.int64
    assert tg.promote_types(tg.bool, tg.float16) is tg.float16
    assert tg.promote_types(tg.float32, tg.float64) is tg.float64
    assert tg.promote_types(tg.int64, tg.float32) is tg.float32, (
        "torch: an int never widens a float"
    )


@pytest.mark.parametrize("a", _DTYPE_NAMES)
def test_promote_types_matches_torch(a, torch):
    got = [tg.promote_types(getattr(tg, a), getattr(tg, b)).name for b in _DTYPE_NAMES]
    want = [
        str(torch.promote_types(getattr(torch, a), getattr(torch, b))).replace("torch.", "")
        for b in _DTYPE_NAMES
    ]
    assert got == want


_RESULT_DTYPE = [
    "L.tensor([1, 2]) + 1.5",
    "L.tensor([1, 2], dtype=L.int32) + L.tensor(5)",
    "L.tensor([1., 2.]) * L.tensor(5., dtype=L.float64)",
    "L.tensor([True]) + True",
    "L.tensor([True]) + 1",
    "L.tensor([1], dtype=L.float16) + 1.0",
    "L.tensor(1, dtype=L.int32) + 1",
    "L.tensor(1, dtype=L.int32) + L.tensor([1], dtype=L.int64)",
    "L.tensor([1.], dtype=L.float16) + L.tensor(1., dtype=L.float64)",
    "L.tensor([1], dtype=L.int32) + L.tensor(1.)",
    "L.tensor([1], dtype=L.uint8) + L.tensor([1], dtype=L.int8)",
    "L.tensor([1, 2]) + L.tensor([1.5, 2.5])",
    "L.tensor([1, 2], dtype=L.int32) * L.tensor([1.5, 2.5])",
    "L.tensor([1, 2]) / 2",
    "L.tensor([1, 2]) / L.tensor([2, 2])",
    "L.tensor([True, False]) / L.tensor([True, True])",
]


@pytest.mark.parametrize("expr", _RESULT_DTYPE)
def test_result_dtype_and_values_match_torch(expr, torch):
    got, want = _run(expr, tg), _run(expr, torch)
    assert got.dtype.name == str(want.dtype).replace("torch.", "")
    assert got.tolist() == want.tolist()


def test_true_division_of_integers_gives_floats():
    assert tg.tensor([1, 2]).div(2).tolist() == [0.5, 1.0]
    assert (tg.tensor([1, 2]) / 2).dtype is tg.float32


# --------------------------------------------------------------------------- seeding


@pytest.mark.parametrize(
    "draw",
    [
        lambda: tg.randn(4, 3),
        lambda: tg.rand(5),
        lambda: tg.randint(0, 100, (6,)),
        lambda: tg.randn_like(tg.zeros(3, dtype=tg.float64)),
    ],
    ids=["randn", "rand", "randint", "randn_like"],
)
def test_manual_seed_makes_random_factories_repeat(draw):
    tg.manual_seed(1234)
    first = [draw().tolist() for _ in range(2)]
    tg.manual_seed(1234)
    second = [draw().tolist() for _ in range(2)]
    assert first == second
    assert first[0] != first[1], "consecutive draws differ"


def test_different_seeds_give_different_numbers():
    tg.manual_seed(0)
    a = tg.randn(8).tolist()
    tg.manual_seed(1)
    assert tg.randn(8).tolist() != a


def test_random_ranges():
    tg.manual_seed(0)
    u = tg.rand(1000)
    assert u.min().item() >= 0.0 and u.max().item() < 1.0
    k = tg.randint(3, 5, (1000,))
    assert set(k.tolist()) == {3, 4}
