"""Graph names, graph edges and memory layouts compared with torch (issue 20): each program
runs on teachgrad and on torch, and both must give the same facts (node names, edges,
strides) or raise the same error.
"""

import subprocess
import sys

import numpy as np
import pytest

from tests.teachgrad.autograd.test_torch_fidelity import as_numpy, assert_like_torch

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)


def names(fn):
    """``(name, input_nr)`` of each edge of a node (None for an empty edge)."""
    return [(None if f is None else f.name(), nr) for f, nr in fn.next_functions]


# --------------------------------------------------------------------------- node names


WRITES = {
    "view.mul_(2)": lambda lib, b, src: b[:2].mul_(2),
    "b[1] = src": lambda lib, b, src: b.__setitem__(1, src[0]),
    "view.copy_(src)": lambda lib, b, src: b[1:].copy_(src[: b[1:].shape[0]]),
    "t().add_(1)": lambda lib, b, src: b.t().add_(1),
}


@pytest.mark.parametrize("write", WRITES.values(), ids=WRITES.keys())
@pytest.mark.parametrize("shape", [(3,), (3, 2)], ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_written_view_gives_its_base_torch_s_copyslices(write, shape, dtype):
    """name() carries torch's C++ namespace; the repr and the tensor's repr do not."""

    def program(lib):
        src = lib.ones(shape, dtype=getattr(lib, dtype), requires_grad=True)
        b = (src * 2).clone()
        write(lib, b, src)
        fn = b.grad_fn
        return (
            fn.name(),
            repr(fn).split(" object at ")[0],
            repr(b).split("grad_fn=")[1],
            names(fn),
        )

    assert_like_torch(program)


@pytest.mark.parametrize("into", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(), (3,), (2, 3)], ids=str)
def test_copy_into_a_plain_tensor_is_torch_s_copybackwards(into, shape):
    def program(lib):
        x = lib.ones(shape, requires_grad=True)
        y = lib.zeros(shape, dtype=getattr(lib, into))
        y.copy_(x)
        y.sum().backward()
        fn = y.grad_fn
        return fn.name(), repr(fn).split(" object at ")[0], repr(y), as_numpy(x.grad)

    assert_like_torch(lambda lib: program(lib).__repr__().replace("teachgrad", "torch"))


UNRECORDED_WRITES = {
    "view.add_(1)": lambda v, x: v.add_(1),
    "base.mul_(2)": lambda v, x: x.mul_(2),
    "base[0] = 5": lambda v, x: x.__setitem__(0, 5.0),
    "other view.zero_()": lambda v, x: x[-1:].zero_(),
}

VIEWS = {
    "x[:2]": lambda x: x[:2],
    "x.t()": lambda x: x.t(),
    "x.view(-1)": lambda x: x.view(-1),
    "x[0][1:]": lambda x: x[0][1:],
}


@pytest.mark.parametrize("write", UNRECORDED_WRITES.values(), ids=UNRECORDED_WRITES.keys())
@pytest.mark.parametrize("view", VIEWS.values(), ids=VIEWS.keys())
@pytest.mark.parametrize("shape", [(3, 2), (3, 0)], ids=str)
def test_a_view_changed_under_no_grad_reads_its_base_again(write, view, shape):
    """torch notices the version moved and regenerates the view's grad_fn (AsStridedBackward0),
    even though nothing was recorded; the gradient still flows to the leaf."""

    def program(lib):
        leaf = lib.ones(shape, dtype=lib.float64, requires_grad=True)
        x = leaf.clone()
        v = view(x)
        before = v.grad_fn.name()
        with lib.no_grad():
            write(v, x)
        after = v.grad_fn.name(), names(v.grad_fn)
        (v * 3).sum().backward()
        return before, after, x.grad_fn.name(), as_numpy(leaf.grad)

    assert_like_torch(program)


def test_a_0d_view_changed_under_no_grad_reads_its_base_again():
    def program(lib):
        x = lib.tensor(2.0, requires_grad=True).clone()
        v = x.view(())
        with lib.no_grad():
            v.zero_()
        return v.grad_fn.name(), repr(v).replace("teachgrad", "torch")

    assert_like_torch(program)


CALLS = {
    "x.sum()": lambda lib, x: x.sum(),
    "x.sum(0)": lambda lib, x: x.sum(0),
    "x.sum(-1, keepdim=True)": lambda lib, x: x.sum(-1, keepdim=True),
    "x.sum(dim=None)": lambda lib, x: x.sum(dim=None),
    "x.sum(None, True)": lambda lib, x: x.sum(None, True),
    "x.sum(dim=())": lambda lib, x: x.sum(dim=()),
    "x.sum([])": lambda lib, x: x.sum([]),
    "x.mean(dim=())": lambda lib, x: x.mean(dim=()),
    "x.sum((), keepdim=True)": lambda lib, x: x.sum((), keepdim=True),
    "x.sum((0, -1))": lambda lib, x: x.sum((0, -1)),
    "x.sum(dtype=float64)": lambda lib, x: x.sum(dtype=lib.float64),
    "x.sum(dim=None, dtype=float64)": lambda lib, x: x.sum(dim=None, dtype=lib.float64),
    "lib.sum(x)": lambda lib, x: lib.sum(x),
    "lib.sum(x, None)": lambda lib, x: lib.sum(x, None),
    "x.mean()": lambda lib, x: x.mean(),
    "x.mean(0)": lambda lib, x: x.mean(0),
    "x.mean(dim=None)": lambda lib, x: x.mean(dim=None),
    "x.mean(dim=None, keepdim=True)": lambda lib, x: x.mean(dim=None, keepdim=True),
    "x.mean(0, keepdim=True)": lambda lib, x: x.mean(0, keepdim=True),
    "x.mean(dtype=float64)": lambda lib, x: x.mean(dtype=lib.float64),
    "lib.mean(x, None)": lambda lib, x: lib.mean(x, None),
}


@pytest.mark.parametrize("call", CALLS.values(), ids=CALLS.keys())
@pytest.mark.parametrize("shape", [(2, 3), (4,), (), (0, 2)], ids=str)
def test_sum_and_mean_name_the_overload_torch_picked(call, shape):
    """No dim given: SumBackward0 / MeanBackward0; a dim given, even None: SumBackward1 /
    MeanBackward1, and then keepdim applies to every dim."""

    def program(lib):
        x = lib.ones(shape, requires_grad=True)
        y = call(lib, x)
        y.sum().backward()
        return y.grad_fn.name(), tuple(y.shape), str(y.dtype), as_numpy(x.grad)

    with np.errstate(invalid="ignore"):
        assert_like_torch(lambda lib: repr(program(lib)).replace("teachgrad", "torch"))


# --------------------------------------------------------------------------- index arguments


INDEX_OPS = {
    "gather": lambda lib, x, i: x.gather(1, i),
    "lib.gather": lambda lib, x, i: lib.gather(x, -1, i),
    "scatter(src)": lambda lib, x, i: x.scatter(1, i, x * 2),
    "scatter(value)": lambda lib, x, i: x.scatter(1, i, 5.0),
    "scatter(src no grad)": lambda lib, x, i: x.scatter(1, i, x.detach()),
    "scatter_add": lambda lib, x, i: x.scatter_add(1, i, x * 2),
    "index_select": lambda lib, x, i: x.index_select(1, i[0]),
    "index_select(0)": lambda lib, x, i: x.index_select(0, i[:, 1]),
    "x[i]": lambda lib, x, i: x[i[:, 1]],
    "masked_fill(number)": lambda lib, x, i: x.masked_fill(x > 0, 1.0),
    "masked_fill(tensor)": lambda lib, x, i: x.masked_fill(x > 0, (x * 3).sum()),
    "nll_loss": lambda lib, x, i: lib.nn.functional.nll_loss(x, i[:, 0]),
    "nll_loss(weight)": lambda lib, x, i: lib.nn.functional.nll_loss(
        x, i[:, 0], weight=lib.ones(3, dtype=x.dtype)
    ),
    "cross_entropy": lambda lib, x, i: lib.nn.functional.cross_entropy(x, i[:, 0]),
}


@pytest.mark.parametrize("op", INDEX_OPS.values(), ids=INDEX_OPS.keys())
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("index_dtype", ["int64", "int32"])
def test_an_integer_index_gets_no_edge(op, dtype, index_dtype):
    """Only differentiable inputs get an edge: ``next_functions`` lists as many entries as
    torch's, in the same order; the values and gradients agree too."""

    def program(lib):
        if index_dtype == "int32" and op in (INDEX_OPS["nll_loss"], INDEX_OPS["cross_entropy"]):
            return "torch's losses take int64 targets only"
        x = lib.tensor([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]], dtype=getattr(lib, dtype))
        x.requires_grad_()
        i = lib.tensor([[0, 1, 1], [2, 0, 0]], dtype=getattr(lib, index_dtype))
        y = op(lib, x, i)
        y.sum().backward()
        if dtype == "float32":  # (float32 values agree only to float32's precision)
            return names(y.grad_fn), tuple(y.shape), tuple(x.grad.shape)
        return names(y.grad_fn), as_numpy(y), as_numpy(x.grad)

    assert_like_torch(program)


@pytest.mark.parametrize("shape", [(2, 3), (3,), (), (2, 0)], ids=str)
def test_a_post_hook_on_gather_gets_one_grad_input(shape):
    """The node hook sees one grad_input per edge: the input's, none for the index."""

    def program(lib):
        x = lib.ones(shape, dtype=lib.float64, requires_grad=True)
        i = lib.zeros(shape, dtype=lib.int64)
        y = x.gather(-1 if shape else 0, i)
        seen = []
        y.grad_fn.register_hook(
            lambda gi, go: seen.append([None if g is None else tuple(g.shape) for g in gi])
        )
        (y * 2).sum().backward()
        return seen, as_numpy(x.grad)

    assert_like_torch(program)


@pytest.mark.parametrize(
    "op",
    [
        lambda lib, x, i: x.gather(0, i),
        lambda lib, x, i: x.scatter_add(0, i, x),
        lambda lib, x, i: x.index_select(0, i),
    ],
    ids=["gather", "scatter_add", "index_select"],
)
def test_the_saved_index_is_still_checked_for_changes(op):
    """The index takes no edge, but it is still saved: changing it in place is noticed."""

    def program(lib):
        x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
        i = lib.tensor([2, 0, 1])
        y = op(lib, x, i)
        saved = tuple(y.grad_fn._saved_index.shape)
        i.add_(0)
        try:
            y.sum().backward()
        except RuntimeError as error:  # (torch's hint follows on the same line: not compared)
            return saved, str(error).split(" instead.")[0].replace("teachgrad.", "torch.")
        return saved

    assert_like_torch(program)


def test_second_derivatives_through_gather_and_nll_loss_match_torch():
    def program(lib):
        x = lib.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5]], dtype=lib.float64)
        x.requires_grad_()
        i = lib.tensor([[2, 0, 1], [1, 1, 0]])
        loss = (x.gather(1, i) ** 3).sum() + lib.nn.functional.cross_entropy(x * x, i[:, 0])
        (g,) = lib.autograd.grad(loss, x, create_graph=True)
        (h,) = lib.autograd.grad((g * g).sum(), x)
        return as_numpy(g), as_numpy(h), names(g.grad_fn)

    assert_like_torch(program)


# --------------------------------------------------------------------------- strides


LAYOUTS = {
    "row-major": lambda lib, a: lib.tensor(a),
    "transposed": lambda lib, a: lib.tensor(np.ascontiguousarray(np.moveaxis(a, 0, -1))).movedim(
        -1, 0
    ),
    "every other column": lambda lib, a: lib.tensor(np.repeat(a, 2, axis=-1))[..., ::2],
    "expanded": lambda lib, a: lib.tensor(a[:1]).expand(*a.shape),
    "permuted 3-d": lambda lib, a: lib.tensor(
        np.ascontiguousarray(a.reshape(4, 2, 3).transpose(1, 2, 0))
    ).permute(2, 0, 1),
}


def laid_out(lib, layout, dtype="float64"):
    """The numbers 1..24 as a (4, 6) tensor (a (4, 2, 3) one for "permuted 3-d") whose memory
    is laid out as ``layout`` says."""
    a = np.arange(1.0, 25.0).reshape(4, 6)
    if layout == "permuted 3-d":
        a = a.reshape(4, 2, 3)
    return LAYOUTS[layout](lib, a).to(getattr(lib, dtype))


KEYS = {
    "x[i]": lambda lib, x: x[lib.tensor([2, 0, 2])],
    "x[i2d]": lambda lib, x: x[lib.tensor([[0, 1], [3, 0]])],
    "x[:, i]": lambda lib, x: x[:, lib.tensor([1, 0])],
    "x[..., i]": lambda lib, x: x[..., lib.tensor([1])],
    "x[i, j]": lambda lib, x: x[lib.tensor([0, 3]), lib.tensor([1, 0])],
    "x[i, :1]": lambda lib, x: x[lib.tensor([1, 0]), :1],
    "x[:, None, i2d]": lambda lib, x: x[:, None, lib.tensor([[0], [1]])],
    "x[0, :, i]": lambda lib, x: x[0, ..., lib.tensor([1, 0])],
    "x[1:, i]": lambda lib, x: x[1:, lib.tensor([1, 0])],
    "x[i, :, j] (apart)": lambda lib, x: x[lib.tensor([0, 1]), ..., lib.tensor([1, 0])],
    "x[mask]": lambda lib, x: x[x > 3],
    "x[[0, 1]]": lambda lib, x: x[[0, 1]],
    "index_select(1)": lambda lib, x: x.index_select(1, lib.tensor([1, 0])),
    "masked_fill": lambda lib, x: x.masked_fill(x > 3, 0.0),
    "masked_fill(0-d mask)": lambda lib, x: x.masked_fill(lib.tensor(True), 1.0),
}


@pytest.mark.parametrize("key", KEYS.values(), ids=KEYS.keys())
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_indexing_lays_its_result_out_as_torch(key, layout, dtype):
    """Shape, strides, values and the graph (basic entries first, as view nodes)."""

    def program(lib):
        x = laid_out(lib, layout, dtype).requires_grad_()
        y = key(lib, x)
        y.sum().backward()
        return tuple(y.shape), y.stride(), as_numpy(y), names(y.grad_fn), as_numpy(x.grad)

    assert_like_torch(program)


@pytest.mark.parametrize(
    "key",
    [(slice(None), [9]), (Ellipsis, [9]), ([0], [9]), ([0], slice(None), [9]), (0, [9]), ([9],)],
    ids=str,
)
def test_an_index_out_of_bounds_is_numbered_among_the_index_tensors(key):
    def program(lib):
        return lib.ones(4, 5, 6)[key]

    assert_like_torch(program)


COPIES = {
    "float()": lambda lib, x: x.float(),
    "double()": lambda lib, x: x.double(),
    "half()": lambda lib, x: x.to(lib.float16),
    "long()": lambda lib, x: x.long(),
    "to(copy=True)": lambda lib, x: x.to(x.dtype, copy=True),
    "clone()": lambda lib, x: x.clone(),
    "contiguous()": lambda lib, x: x.contiguous(),
}
ONE_OPERAND = {
    "exp()": lambda lib, x: x.exp(),
    "x * 2": lambda lib, x: x * 2,
    "x + 1": lambda lib, x: x + 1,
    "where(x > 3, x, 0)": lambda lib, x: lib.where(x > 3, x, 0.0),
    "x > 3": lambda lib, x: x > 3,
}
COPY_LAYOUTS = dict(
    LAYOUTS,
    **{"a column, transposed": lambda lib, a: lib.tensor(np.ascontiguousarray(a[:1])).t()},
)


@pytest.mark.parametrize(
    "op,layout",
    [(op, layout) for op in COPIES.values() for layout in COPY_LAYOUTS]
    + [(op, layout) for op in ONE_OPERAND.values() for layout in LAYOUTS],
    ids=[f"{op}-{layout}" for op in COPIES for layout in COPY_LAYOUTS]
    + [f"{op}-{layout}" for op in ONE_OPERAND for layout in LAYOUTS],
)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_copies_and_one_operand_ops_keep_torch_s_layout(op, layout, dtype):
    """A dense input's strides are kept exactly (a size-1 dim's too, for copies), any other
    input gives a row-major result."""

    def program(lib):
        a = np.arange(1.0, 25.0).reshape(4, 6)
        x = COPY_LAYOUTS[layout](lib, a if layout != "permuted 3-d" else a.reshape(4, 2, 3))
        y = op(lib, x.to(getattr(lib, dtype)))
        return tuple(y.shape), y.stride(), str(y.dtype)

    assert_like_torch(lambda lib: repr(program(lib)).replace("teachgrad", "torch"))


GRAD_PATHS = {
    "sum": lambda y: y.sum(),
    "times a tensor": lambda y: (y * y.detach()).sum(),
    "exp": lambda y: y.exp().sum(),
    "through a transpose": lambda y: (y.transpose(0, 1) * 1).sum(),
    "expanded again": lambda y: y.unsqueeze(0).expand(2, *y.shape).sum(),
}
LEAVES = {
    "expanded row": lambda lib: lib.ones(3, dtype=lib.float64).expand(2, 3),
    "expanded 0-d": lambda lib: lib.tensor(1.0, dtype=lib.float64).expand(2, 3),
    "transposed": lambda lib: lib.ones(3, 2, dtype=lib.float64).t(),
    "every other column": lambda lib: lib.ones(3, 4, dtype=lib.float64)[:, ::2],
    "permuted": lambda lib: lib.ones(2, 3, 4, dtype=lib.float64).permute(2, 0, 1),
    "empty, transposed": lambda lib: lib.ones(0, 3, dtype=lib.float64).t(),
}


@pytest.mark.parametrize("path", GRAD_PATHS.values(), ids=GRAD_PATHS.keys())
@pytest.mark.parametrize("leaf", LEAVES.values(), ids=LEAVES.keys())
def test_a_leaf_s_new_grad_has_torch_s_strides(path, leaf):
    """A dense leaf's grad takes its strides, an expanded (not dense) leaf's is row-major."""

    def program(lib):
        x = leaf(lib).requires_grad_()
        path(x).backward()
        return x.grad.stride() if x.numel() else tuple(x.grad.shape), as_numpy(x.grad)

    assert_like_torch(program)


@pytest.mark.parametrize("op", ["sum", "times 2", "hook"])
@pytest.mark.parametrize("shape", [(2, 3), (2, 1), (1, 3)], ids=str)
def test_the_gradient_flowing_into_an_expanded_tensor_is_row_major(op, shape):
    def program(lib):
        x = lib.ones(shape[-1], dtype=lib.float64, requires_grad=True)
        e = x.expand(*shape)
        seen = []
        e.register_hook(lambda g: seen.append(g.stride()))
        out = e.sum() if op == "sum" else (e * 2).sum()
        (g,) = lib.autograd.grad(out, e, retain_graph=True)
        out.backward()
        return g.stride(), seen, x.grad.stride()

    assert_like_torch(program)


def _index(lib, *shape, perm=None):
    i = lib.zeros(*shape, dtype=lib.int64)
    return i if perm is None else i.permute(*perm)


NEW_RESULTS = {  # ops whose result is a new tensor: row-major in torch, whatever the inputs
    "gather, empty index": lambda lib: lib.ones(3, 2).gather(0, _index(lib, 0, 2)),
    "gather, transposed index": lambda lib: lib.ones(3, 3).gather(0, _index(lib, 3, 2).t()),
    "gather, permuted index": lambda lib: lib.ones(2, 3, 4).gather(
        2, _index(lib, 4, 2, 3, perm=(1, 2, 0))
    ),
    "gather, transposed input": lambda lib: lib.ones(3, 3).t().gather(1, _index(lib, 3, 2)),
    "max(1), empty": lambda lib: lib.zeros(0, 2).max(1),
    "min(1), empty": lambda lib: lib.zeros(0, 2).min(1),
    "max(0), no columns": lambda lib: lib.zeros(2, 0).max(0),
    "max(2), empty 3-d": lambda lib: lib.zeros(2, 0, 3).max(2),
    "max(1, keepdim), empty": lambda lib: lib.zeros(0, 2, 3).max(1, keepdim=True),
    "logsumexp(1), empty": lambda lib: lib.zeros(0, 2).logsumexp(1),
    "sum(1), empty": lambda lib: lib.zeros(0, 2).sum(1),
    "amax(1), empty": lambda lib: lib.zeros(0, 2).amax(1),
    "argmax(1), empty": lambda lib: lib.zeros(0, 2).argmax(1),
    "var(1), empty": lambda lib: lib.zeros(0, 2).var(1),
    "norm(dim=1), empty": lambda lib: lib.zeros(0, 2).norm(dim=1),
    "cumsum(1), empty": lambda lib: lib.zeros(0, 2).cumsum(1),
    "index_select, empty": lambda lib: lib.zeros(0, 2).index_select(1, _index(lib, 2)),
}


@pytest.mark.parametrize("op", NEW_RESULTS.values(), ids=NEW_RESULTS.keys())
def test_new_results_are_laid_out_as_torch_s(op):
    """gather's result is row-major whatever the index's layout, and an empty result of a
    reduction has torch's row-major strides (NumPy's empty views say 0 for every dim)."""

    def program(lib):
        out = op(lib)
        outs = out if isinstance(out, tuple) else (out,)
        return [(tuple(t.shape), t.stride(), str(t.dtype).split(".")[1]) for t in outs]

    assert_like_torch(program)


PERMUTES = [((2, 3, 4), (0, 1)), ((2, 3), (0, 1, 5)), ((2, 3), (5,)), ((), (0,)), ((3,), (0, 0))]
PERMUTES += [((2, 3), (0, -2)), ((2, 3), (1, -2)), ((2, 3), (0, 5)), ((), ())]


@pytest.mark.parametrize("shape, dims", PERMUTES, ids=str)
def test_permute_checks_the_number_of_dims_first(shape, dims):
    """torch compares the number of dims with the tensor's before it reads them (its message
    names sparse_coo, word for word), then wraps them, then looks for duplicates."""
    assert_like_torch(lambda lib: lib.ones(shape).permute(*dims).shape)


T_SCRIPT = """
import sys, warnings
lib = __import__(sys.argv[1])
said = []
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for shape in [(3,), (2, 3, 4), (), (2, 3), (5,), ()]:
        t = lib.ones(shape).T
        words = [str(w.message).split(" (Triggered")[0] for w in caught]
        said.append((tuple(t.shape), [w.replace(sys.argv[1] + ".", "LIB.") for w in words]))
        caught.clear()
print(said)
"""


def test_x_T_off_matrices_warns_once_as_torch():
    """``x.T`` of a tensor that is not a matrix: torch's deprecation warning, one for 0-d
    tensors and one for the others, each once per process (each library in a fresh one)."""
    said = [
        subprocess.run(
            [sys.executable, "-c", T_SCRIPT, lib], capture_output=True, text=True, check=True
        ).stdout
        for lib in ("torch", "teachgrad")
    ]
    assert said[0] == said[1] and "deprecated" in said[0]
