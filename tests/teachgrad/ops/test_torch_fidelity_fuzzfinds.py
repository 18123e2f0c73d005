"""Differences from torch found by a differential fuzzer (mixed dtypes, 0-d and empty
tensors, strided inputs, error messages), each compared with torch across its variations:
the same program runs on both libraries, and either both raise (same class, same first
line) or both give the same dtype, shape, strides, values and node names.
"""

import math

import pytest

import teachgrad as tg
from tests.teachgrad.autograd.test_torch_fidelity import assert_like_torch
from tests.teachgrad.inplace._common import name, node_name, numpy

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)


def facts(t):
    """What a result looks like, strides included."""
    return {
        "dtype": str(t.dtype).split(".")[-1],
        "shape": tuple(t.shape),
        "stride": t.stride(),
        "values": numpy(t),
        "grad_fn": name(t),
    }


def bools(lib, transposed=False):
    x = lib.tensor([[True, False, True], [False, False, True]])
    return x.t() if transposed else x


# --------------------------------------------------------------------------- powers of bools

BOOL_POWERS = {
    "bools ** True": lambda lib, x: x**True,
    "bools ** False": lambda lib, x: x**False,
    "bools ** 2": lambda lib, x: x**2,
    "bools ** 0": lambda lib, x: x.pow(0),
    "bools ** 2.0": lambda lib, x: x**2.0,
    "bools ** bools": lambda lib, x: x**x,
    "True ** bools": lambda lib, x: True**x,
    "2 ** bools": lambda lib, x: 2**x,
    "bools ** int tensor": lambda lib, x: x ** lib.tensor(2),
    "square(bools)": lambda lib, x: x.square(),
}


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("power", BOOL_POWERS.values(), ids=BOOL_POWERS.keys())
def test_powers_of_bools_promote_as_torch_does(power, transposed):
    """A power of bools by a bool stays bool, by an int is int64; two bool tensors raise."""
    assert_like_torch(lambda lib: facts(power(lib, bools(lib, transposed))))


LAYOUTS = {  # (3, 2)-shaped views of a leaf, each laid out differently
    "row-major": lambda x: x,
    "transposed": lambda x: x.t(),
    "stepped": lambda x: x.repeat(2, 1)[::2],
    "expanded": lambda x: x[:1].expand(3, 2),
    "empty": lambda x: x[:0].t(),
}


@pytest.mark.parametrize("dtype", ["float64", "int64", "bool"])
@pytest.mark.parametrize("layout", LAYOUTS.values(), ids=LAYOUTS.keys())
def test_a_number_to_a_tensor_power_is_row_major(layout, dtype):
    """torch writes ``number ** tensor`` into a fresh row-major result."""

    def program(lib):
        x = lib.tensor([[1, 0], [2, 1], [0, 3]], dtype=getattr(lib, dtype))
        return facts(2 ** layout(x)), facts(lib.pow(1.5, layout(x)))

    assert_like_torch(program)


# --------------------------------------------------------------------------- whole numbers

ROUNDINGS = {
    "floor": lambda x: x.floor(),
    "ceil": lambda x: x.ceil(),
    "round": lambda x: x.round(),
    "round(decimals=1)": lambda x: x.round(decimals=1),
    "sign": lambda x: x.sign(),
    "relu": lambda x: x.relu(),
}


@pytest.mark.parametrize("dtype", ["float64", "int64", "bool"])
@pytest.mark.parametrize("layout", LAYOUTS.values(), ids=LAYOUTS.keys())
@pytest.mark.parametrize("op", ROUNDINGS.values(), ids=ROUNDINGS.keys())
def test_rounding_whole_numbers_copies_them_and_bools_have_no_kernel(op, layout, dtype):
    """An integer tensor is its own floor (a copy laid out like it); a bool one raises."""

    def program(lib):
        x = lib.tensor([[1, 0], [-2, 1], [0, 3]], dtype=getattr(lib, dtype))
        return facts(op(layout(x)))

    assert_like_torch(program)


# --------------------------------------------------------------------------- fresh layouts

FRESH = {  # ops whose result torch allocates row-major whatever the input's layout
    "softmax(1)": lambda lib, x: x.softmax(1),
    "log_softmax(0)": lambda lib, x: lib.log_softmax(x, 0),
    "cumsum(1)": lambda lib, x: x.cumsum(1),
    "cumsum(0) of ints": lambda lib, x: x.long().cumsum(0),
    "roll(1, 0)": lambda lib, x: x.roll(1, 0),
    "roll(1)": lambda lib, x: x.roll(1),
    "any(1)": lambda lib, x: x.any(1),
    "all(0, keepdim)": lambda lib, x: (x > 0).all(0, keepdim=True),
    "flip(0) (laid out as the input)": lambda lib, x: x.flip(0),
    "flip(0, 1) (laid out as the input)": lambda lib, x: x.flip(0, 1),
}


@pytest.mark.parametrize(
    "layout", [*LAYOUTS.values(), lambda x: x.t()[:, ::2]], ids=[*LAYOUTS, "t-step"]
)
@pytest.mark.parametrize("op", FRESH.values(), ids=FRESH.keys())
def test_the_layout_of_softmax_cumsum_roll_flip_any_all(op, layout):
    def program(lib):
        x = lib.tensor([[1.0, -0.5], [2.0, 0.0], [-1.0, 3.0]], dtype=lib.float64)
        x.requires_grad_()
        out = op(lib, layout(x))
        if out.requires_grad:
            (out * lib.arange(float(out.numel())).reshape(out.shape)).sum().backward()
        return facts(out), numpy(x.grad) if x.grad is not None else None

    assert_like_torch(program)


# --------------------------------------------------------------------------- empty dim lists

NO_DIMS = {
    "sum": lambda x, dims, keep: x.sum(dims, keepdim=keep),
    "mean": lambda x, dims, keep: x.mean(dims, keepdim=keep),
    "amax": lambda x, dims, keep: x.amax(dims, keepdim=keep),
    "amin": lambda x, dims, keep: x.amin(dims, keepdim=keep),
    "var(correction=0)": lambda x, dims, keep: x.var(dims, keepdim=keep, correction=0),
    "std(correction=0)": lambda x, dims, keep: x.std(dims, keepdim=keep, correction=0),
    "norm": lambda x, dims, keep: x.norm(dim=dims, keepdim=keep),
    "norm(p=1)": lambda x, dims, keep: x.norm(p=1, dim=dims, keepdim=keep),
    "logsumexp": lambda x, dims, keep: x.logsumexp(dims, keepdim=keep),
}


# torch's var and std backward divide by the number of elements in no dims (1), not in all
# of them: those gradients are wrong in torch (docs/differences-from-torch.md)
WRONG_GRAD_IN_TORCH = {"var(correction=0)", "std(correction=0)"}


@pytest.mark.parametrize("shape", [(2, 3), (3,), ()])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dims", [(), []], ids=["()", "[]"])
@pytest.mark.parametrize("name", NO_DIMS)
def test_reducing_over_an_empty_list_of_dims_reduces_all_of_them(name, dims, keepdim, shape):
    """torch reads ``dim=()`` as every dim (logsumexp can only keep them: torch's quirk)."""

    def program(lib):
        x = lib.arange(float(max(1, len(shape) * 3))).reshape(shape).double().requires_grad_()
        out = NO_DIMS[name](x, dims, keepdim)
        if name in WRONG_GRAD_IN_TORCH:
            return facts(out)
        out.sum().backward()
        return facts(out), numpy(x.grad)

    assert_like_torch(program)


@pytest.mark.parametrize("name", sorted(WRONG_GRAD_IN_TORCH))
def test_var_and_std_over_no_dims_differentiate_as_over_all_dims(name):
    x = tg.arange(6.0, dtype=tg.float64).reshape(2, 3).requires_grad_()
    NO_DIMS[name](x, (), False).backward()
    every_dim = x.grad.clone()
    x.grad = None
    NO_DIMS[name](x, None, False).backward()
    assert tg.equal(x.grad, every_dim)


# --------------------------------------------------------------------------- errors

ERRORS = {
    "int index into an empty dim": lambda lib: lib.ones(2, 0)[:, [0]],
    "two int indices, one into an empty dim": lambda lib: lib.ones(2, 0)[[0], [0]],
    "int tensor index into an empty tensor": lambda lib: lib.ones(0)[lib.tensor([0, 0])],
    "a plain int into an empty dim": lambda lib: lib.ones(0)[0],
    "index_put_ into an empty tensor": lambda lib: lib.zeros(0).index_put_(
        (lib.tensor([0]),), lib.tensor(1.0)
    ),
    "slice of a 0-d tensor": lambda lib: lib.tensor(1.0)[1:],
    "[:] of a 0-d tensor": lambda lib: lib.tensor(1.0)[:],
    "reversed slice of a 0-d tensor": lambda lib: lib.tensor(1.0)[::-1],
    "zero step slice of a 0-d tensor": lambda lib: lib.tensor(1.0)[::0],
    "[..., 1:] of a 0-d tensor": lambda lib: lib.tensor(1.0)[..., 1:],
    "max(-1) over no elements": lambda lib: lib.ones(2, 0).max(-1),
    "min(-1, keepdim) over no elements": lambda lib: lib.ones(2, 0).min(-1, keepdim=True),
    "argmax(-1) over no elements": lambda lib: lib.ones(0).argmax(-1),
    "argmin(-1) over no elements": lambda lib: lib.ones(3, 0).argmin(-1),
    "amax(-1) over no elements": lambda lib: lib.ones(2, 0).amax(-1),
    "norm of longs": lambda lib: lib.ones(2, dtype=lib.int64).norm(),
    "norm of bools": lambda lib: lib.ones(2, dtype=lib.bool).norm(dim=0),
    "inf norm over an empty dim": lambda lib: lib.ones(2, 0).norm(p=float("inf"), dim=-1),
    "inf norm of an empty tensor": lambda lib: lib.ones(0).norm(p=float("inf")),
    "-1 norm over dims, one empty": lambda lib: lib.ones(2, 0).norm(p=-1, dim=(0, 1)),
    "-inf norm over a full dim": lambda lib: lib.ones(2, 0).norm(p=-float("inf"), dim=(0,)),
    "-2 norm of an empty tensor": lambda lib: lib.ones(2, 0).norm(p=-2.0),
    "0.5 norm over an empty dim": lambda lib: lib.ones(2, 0).norm(p=0.5, dim=1),
}


@pytest.mark.parametrize("program", ERRORS.values(), ids=ERRORS.keys())
def test_errors_of_empty_and_0d_tensors(program):
    assert_like_torch(lambda lib: facts(program(lib)))


# --------------------------------------------------------------------------- products of bools

PRODUCTS = {  # (op, shape of a, shape of b)
    "dot": (lambda lib, a, b: a.dot(b), (2,), (2,)),
    "dot, sizes differ": (lambda lib, a, b: a.dot(b), (3,), (2,)),
    "mv": (lambda lib, a, b: a.mv(b), (2, 2), (2,)),
    "mm": (lambda lib, a, b: a.mm(b), (2, 2), (2, 2)),
    "mm, sizes differ": (lambda lib, a, b: a.mm(b), (2, 3), (2, 3)),
    "bmm": (lambda lib, a, b: a.bmm(b), (2, 2, 2), (2, 2, 2)),
    "1-d @ 1-d": (lambda lib, a, b: a @ b, (2,), (2,)),
    "1-d @ 2-d": (lambda lib, a, b: a @ b, (2,), (2, 3)),
    "2-d @ 1-d": (lambda lib, a, b: a @ b, (3, 2), (2,)),
    "3-d @ 1-d": (lambda lib, a, b: a @ b, (2, 3, 2), (2,)),
    "3-d @ 2-d": (lambda lib, a, b: a @ b, (2, 3, 2), (2, 2)),
    "2-d @ 3-d": (lambda lib, a, b: a @ b, (2, 2), (2, 2, 3)),
    "outer": (lambda lib, a, b: lib.outer(a, b), (2,), (3,)),
    "einsum ij,jk->ik": (lambda lib, a, b: lib.einsum("ij,jk->ik", a, b), (2, 2), (2, 3)),
    "einsum i,j->ij": (lambda lib, a, b: lib.einsum("i,j->ij", a, b), (2,), (3,)),
    "einsum ij->j": (lambda lib, a, b: lib.einsum("ij->j", a), (2, 3), (1,)),
    "einsum ij->ji": (lambda lib, a, b: lib.einsum("ij->ji", a), (2, 3), (1,)),
}


@pytest.mark.parametrize("dtype", ["bool", "int32", "int64"])
@pytest.mark.parametrize("case", PRODUCTS.values(), ids=PRODUCTS.keys())
def test_products_of_bools_have_no_kernel_and_integer_sums_are_int64(case, dtype):
    op, shape_a, shape_b = case

    def program(lib):
        a = (lib.arange(math.prod(shape_a)).reshape(shape_a) % 2).to(getattr(lib, dtype))
        b = (lib.arange(math.prod(shape_b)).reshape(shape_b) % 3).to(getattr(lib, dtype))
        return facts(op(lib, a, b))

    assert_like_torch(program)


# --------------------------------------------------------------------------- cat and stack

JOINS = {
    "cat": lambda lib, ts: lib.cat(ts),
    "cat(dim=1)": lambda lib, ts: lib.cat(ts, 1),
    "stack": lambda lib, ts: lib.stack(ts),
    "stack(dim=-1)": lambda lib, ts: lib.stack(ts, -1),
}
PIECES = {  # each makes the list of tensors joined from a (3, 2) leaf x
    "x.t(), x.t()": lambda lib, x: [x.t(), x.t()],
    "x.t() alone": lambda lib, x: [x.t()],
    "legacy empty, x.t()": lambda lib, x: [lib.zeros(0, dtype=x.dtype), x.t()],
    "stepped": lambda lib, x: [x[::2], x[::2]],
    "expanded": lambda lib, x: [x[:1].expand(3, 2), x],
    "x, 0-d": lambda lib, x: [x, x[0, 0]],
    "x, legacy empty, 0-d": lambda lib, x: [x, lib.zeros(0, dtype=x.dtype), x[0, 0]],
    "0-d, 0-d": lambda lib, x: [x[0, 0], x[1, 1]],
}


@pytest.mark.parametrize("pieces", PIECES.values(), ids=PIECES.keys())
@pytest.mark.parametrize("join", JOINS.values(), ids=JOINS.keys())
def test_cat_and_stack_are_row_major_and_refuse_0d_tensors_by_position(join, pieces):
    def program(lib):
        x = lib.arange(6.0, dtype=lib.float64).reshape(3, 2).requires_grad_()
        out = join(lib, pieces(lib, x))
        (out * lib.arange(float(out.numel())).reshape(out.shape)).sum().backward()
        return facts(out), numpy(x.grad)

    assert_like_torch(program)


# --------------------------------------------------------------------------- a number first

NUMBER_FIRST = {
    "add": lambda lib, n, x: lib.add(n, x),
    "add(alpha=2)": lambda lib, n, x: lib.add(n, x, alpha=2),
    "sub": lambda lib, n, x: lib.sub(n, x),
    "mul": lambda lib, n, x: lib.mul(n, x),
    "div": lambda lib, n, x: lib.div(n, x),
    "n / x (the operator)": lambda lib, n, x: n / x,
    "div(rounding_mode='floor')": lambda lib, n, x: lib.div(n, x, rounding_mode="floor"),
}
NUMBERS = [2, 2.5, True]
SECONDS = {  # the second operand
    "float64 leaf": lambda lib: lib.tensor([[1.0, -2.0], [4.0, 0.5]], dtype=lib.float64),
    "float64 transposed": lambda lib: lib.tensor([[1.0, -2.0], [4.0, 0.5]], dtype=lib.float64).t(),
    "float32 0-d": lambda lib: lib.tensor(4.0),
    "int64": lambda lib: lib.tensor([1, 2]),
    "int32 0-d": lambda lib: lib.tensor(3, dtype=lib.int32),
    # (no False: a division by it is an error on the CPU only, CuPy gives 0 as CUDA does)
    "bool": lambda lib: lib.tensor([True, True]),
    "a number": lambda lib: 4,
    "a float": lambda lib: 0.5,
}


@pytest.mark.parametrize("second", SECONDS.values(), ids=SECONDS.keys())
@pytest.mark.parametrize("number", NUMBERS, ids=repr)
@pytest.mark.parametrize("op", NUMBER_FIRST.values(), ids=NUMBER_FIRST.keys())
def test_a_number_as_the_first_operand_is_wrapped_as_torch_does(op, number, second):
    """``torch.add(2, x)`` records AddBackward0 whose first edge is empty."""

    def program(lib):
        x = second(lib)
        if isinstance(x, lib.Tensor) and x.is_floating_point():
            x.requires_grad_()
        out = op(lib, number, x)
        if not out.requires_grad:
            return facts(out)
        out.sum().backward()
        edges = [node_name(fn) for fn, _ in out.grad_fn.next_functions]
        return facts(out), edges, numpy(x.grad if x.is_leaf else x._base.grad)

    assert_like_torch(program)


@pytest.mark.parametrize("op", ["add", "sub", "mul"])
@pytest.mark.parametrize("first", [None, [1.0], "2"], ids=repr)
def test_a_first_operand_neither_tensor_nor_number_is_a_type_error(op, first):
    assert_like_torch(lambda lib: getattr(lib, op)(first, lib.ones(2)))


BOOL_ARITHMETIC = {
    "bools // True": lambda lib, x: x // True,
    "bools // bools": lambda lib, x: x // x,
    "div(bools, bools, rounding_mode='trunc')": lambda lib, x: x.div(x, rounding_mode="trunc"),
    "div(bools, True, rounding_mode='floor')": lambda lib, x: x.div(True, rounding_mode="floor"),
    "div(bools, 2, rounding_mode='floor')": lambda lib, x: x.div(2, rounding_mode="floor"),
    "add(bools, bools, alpha=2)": lambda lib, x: lib.add(x, x, alpha=2),
    "add(bools, True, alpha=0)": lambda lib, x: lib.add(x, True, alpha=0),
    "add(bools, ints, alpha=2)": lambda lib, x: lib.add(x, x.long(), alpha=2),
    "bools / bools": lambda lib, x: x / x,
}


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("op", BOOL_ARITHMETIC.values(), ids=BOOL_ARITHMETIC.keys())
def test_rounded_quotients_of_bools_have_no_kernel_and_scaled_sums_stay_bool(op, transposed):
    assert_like_torch(lambda lib: facts(op(lib, bools(lib, transposed))))


# --------------------------------------------------------------------------- small ones

SMALL = {
    "size(0) of a 0-d tensor": lambda lib: lib.tensor(1.0).size(0),
    "size(-1) of a 0-d tensor": lambda lib: lib.tensor(1.0).size(-1),
    "stride(0) of a 0-d tensor": lambda lib: lib.tensor(1.0).stride(0),
    "stride(1) of a 0-d tensor": lambda lib: lib.tensor(1.0).stride(1),
    "size(2) of a 1-d tensor": lambda lib: lib.ones(2).size(2),
    "stride(-1) of a 1-d tensor": lambda lib: lib.ones(2).stride(-1),
    "detach_() of a view": lambda lib: (lib.ones(3, 3) * 1).t().detach_(),
    "detach_() of a view of a leaf": lambda lib: lib.ones(3, requires_grad=True)[1:].detach_(),
}


@pytest.mark.parametrize("program", SMALL.values(), ids=SMALL.keys())
def test_small_differences(program):
    assert_like_torch(program)


# --------------------------------------------------------------------------- mixed-dtype powers

POWER_DTYPES = ["float64", "float32", "int64"]


@pytest.mark.parametrize("exponent_dtype", POWER_DTYPES)
@pytest.mark.parametrize("base_dtype", POWER_DTYPES)
@pytest.mark.parametrize("base_shape", [(), (3, 1)], ids=["0-d base", "(3, 1) base"])
def test_powers_of_mixed_dtypes_differentiate_in_the_result_dtype(
    base_dtype, exponent_dtype, base_shape
):
    """torch computes both derivatives of ``a ** b`` in the result's dtype: an integer
    exponent must not turn a float64 power into a float32 one, nor log(a) stay float32."""

    def program(lib):
        base = lib.full(base_shape, 1.3 if base_dtype != "int64" else 2)
        base = base.to(getattr(lib, base_dtype))
        exponent = lib.tensor(
            [[2.0, 3.0, -1.0, 0.0]] if exponent_dtype != "int64" else [[2, 3, 1, 0]]
        )
        exponent = exponent.to(getattr(lib, exponent_dtype))
        leaves = [t.requires_grad_() for t in (base, exponent) if t.is_floating_point()]
        out = base**exponent
        if not leaves:
            return facts(out)
        grads = lib.autograd.grad(out.sum(), leaves, create_graph=True)
        return facts(out), [facts(g) for g in grads]

    assert_like_torch(program)


MORE_ERRORS = {
    "mm of empty bools": lambda lib: lib.ones(2, 0, dtype=lib.bool).mm(
        lib.ones(0, 2, dtype=lib.bool)
    ),
    "mv of empty bools": lambda lib: lib.ones(0, 2, dtype=lib.bool).mv(lib.ones(2, dtype=lib.bool)),
    "bmm of empty bools": lambda lib: lib.ones(2, 2, 0, dtype=lib.bool).bmm(
        lib.ones(2, 0, 2, dtype=lib.bool)
    ),
    "dot of empty bools": lambda lib: lib.ones(0, dtype=lib.bool).dot(lib.ones(0, dtype=lib.bool)),
    "softmax of longs, last dim": lambda lib: lib.ones(3, dtype=lib.int64).softmax(0),
    "softmax of longs, first dim": lambda lib: lib.ones(3, 2, dtype=lib.int64).softmax(0),
    "log_softmax of bools, last dim": lambda lib: lib.log_softmax(
        lib.ones(3, 2, dtype=lib.bool), -1
    ),
    "log_softmax of bools, first dim": lambda lib: lib.log_softmax(
        lib.ones(3, 2, dtype=lib.bool), 0
    ),
    "softmax of a 0-d long": lambda lib: lib.tensor(1).softmax(0),
    "softmax of a 0-d long, bad dim": lambda lib: lib.tensor(1).softmax(2),
    "unbind(-1) of a 0-d tensor": lambda lib: lib.tensor(1.0).unbind(-1),
    "unbind(1) of a 0-d tensor": lambda lib: lib.tensor(1.0).unbind(1),
    "mean of bools over repeated dims": lambda lib: lib.ones(2, 3, dtype=lib.bool).mean((-1, 1)),
    "var of longs over repeated dims": lambda lib: lib.ones(2, 3, dtype=lib.int64).var((0, 0)),
    "std of longs over repeated dims": lambda lib: lib.ones(2, 3, dtype=lib.int64).std((0, -2)),
    "norm of bools over repeated dims": lambda lib: lib.ones(2, 3, dtype=lib.bool).norm(
        p=1, dim=(0, -2)
    ),
    "mean of floats over repeated dims": lambda lib: lib.ones(2, 3).mean((0, 0)),
    "argmax of bools": lambda lib: lib.ones(2, 3, dtype=lib.bool).argmax(),
    "argmin(-1) of empty bools": lambda lib: lib.ones(2, 0, dtype=lib.bool).argmin(-1),
    "argmax(1, keepdim) of bools": lambda lib: lib.ones(2, 3, dtype=lib.bool).argmax(
        1, keepdim=True
    ),
    "logsumexp(()) of an empty tensor": lambda lib: lib.ones(0, 2).logsumexp(()),
    "logsumexp(()) of empty ints": lambda lib: lib.ones(0, dtype=lib.int64).logsumexp(()),
    "one_hot of a transposed tensor": lambda lib: lib.nn.functional.one_hot(
        lib.tensor([[0, 2], [1, 0], [2, 2]]).t()
    ),
}


@pytest.mark.parametrize("program", MORE_ERRORS.values(), ids=MORE_ERRORS.keys())
def test_kernel_names_and_check_order(program):
    assert_like_torch(lambda lib: facts(program(lib)))


# --------------------------------------------------------------------------- writing in place

WRITES = {
    "ints /= ints": lambda lib, x: x.long().__itruediv__(x.long()),
    "ints.div_(ints)": lambda lib, x: x.long().div_(x.long()),
    "copy_(0.5)": lambda lib, x: x.copy_(0.5),
    "copy_(True) into ints": lambda lib, x: x.long().copy_(True),
    "copy_(2) of a graph": lambda lib, x: (x * 1).copy_(2),
    "copy_('a')": lambda lib, x: x.copy_("a"),
    "copy_(None)": lambda lib, x: x.copy_(None),
    "index_put_ of a number": lambda lib, x: x.index_put_((lib.tensor([0]),), 2),
    "x[int tensor] = number": lambda lib, x: x.__setitem__(lib.tensor([0]), 2),
    "x[0] = 1-d": lambda lib, x: x.__setitem__(0, lib.ones(2, 3)),
    "bools[0] = 1-d bools": lambda lib, x: (x > 0).__setitem__(0, lib.ones(2, 3, dtype=lib.bool)),
    "longs[0] = 1-d longs": lambda lib, x: x.long().__setitem__(0, lib.ones(2, 3, dtype=lib.int64)),
    "x[mask] = 0-d float32": lambda lib, x: x.__setitem__(x > 0, lib.tensor(2.0)),
    "x[mask] = (1, 1) float32": lambda lib, x: x.index_put_((x > 0,), lib.ones(1, 1)),
    "x[mask, 0] = 0-d float32": lambda lib, x: x.__setitem__((x[:, 0] > 0, 0), lib.tensor(2.0)),
    "x[mask] += 0-d float32": lambda lib, x: x.index_put_(
        (x > 0,), lib.tensor(2.0), accumulate=True
    ),
    "x[ints] = 0-d float32": lambda lib, x: x.__setitem__(lib.tensor([0, 1]), lib.tensor(2.0)),
    "bools[ints] = 3 floats": lambda lib, x: (x > 0).__setitem__(lib.tensor([0, 0]), lib.ones(3)),
    "x[mask] = (1, 3)": lambda lib, x: x.__setitem__(x > 0, lib.ones(1, 3, dtype=x.dtype)),
    "x[ints] = (1, 1, 4)": lambda lib, x: x.__setitem__(lib.tensor([0]), lib.ones(1, 1, 4)),
    "x[ints] = (1, 1, 2)": lambda lib, x: x.__setitem__(lib.tensor([0]), lib.ones(1, 1, 2)),
    "x[..., :1] = (3, 2)": lambda lib, x: x.__setitem__((Ellipsis, slice(None, 1)), lib.ones(3, 2)),
    "x[:1] = (3, 2) bools": lambda lib, x: x.__setitem__(slice(0, 1), lib.ones(3, 2) > 0),
    "x[0] = (1, 2)": lambda lib, x: x.__setitem__(0, lib.ones(1, 2, dtype=x.dtype)),
    "bools.clamp_(min=0.5)": lambda lib, x: (x > 0).clamp_(min=0.5),
    "longs.clamp_(min=0.5)": lambda lib, x: x.long().clamp_(min=0.5),
    "longs.clip_(0.5, 1)": lambda lib, x: x.long().clip_(0.5, 1),
    "bools.pow_(-1)": lambda lib, x: (x > 0).pow_(-1),
    "bools ** -1": lambda lib, x: (x > 0) ** -1,
    "bools ** -1.5": lambda lib, x: (x > 0) ** -1.5,
}


@pytest.mark.parametrize("write", WRITES.values(), ids=WRITES.keys())
def test_in_place_writes_of_other_dtypes_and_shapes(write):
    """Values of another dtype: torch casts one value filled through a lone mask (and a
    number given to copy_); otherwise it checks the shapes, then refuses the dtype."""

    def program(lib):
        x = lib.tensor([[1.0, -2.0], [0.5, 3.0], [-1.0, 2.0]], dtype=lib.float64)
        out = write(lib, x)
        return facts(x if out is None else out)

    assert_like_torch(program)


def test_a_value_filled_through_a_mask_gets_its_gradient_in_its_own_dtype():
    def program(lib):
        x = lib.ones(3, requires_grad=True).clone()
        v = lib.tensor(2.0, dtype=lib.float64, requires_grad=True)
        x[x > 0] = v
        (x * lib.arange(3.0)).sum().backward()
        return facts(x), facts(v.grad)

    assert_like_torch(program)


# --------------------------------------------------------------------------- integer powers, clamp of bools, @

INTEGER_POWERS = {
    "ints ** negative ints": lambda lib: (
        lib.tensor([0, 1, -1, 2, -2]) ** lib.tensor([-1, -1, -3, -2, -2])
    ),
    "ints ** mixed ints": lambda lib: lib.tensor([[3, -1], [1, 0]]) ** lib.tensor([2, -1]),
    "int32 ** int32": lambda lib: (
        lib.tensor([3, -2], dtype=lib.int32) ** lib.tensor([2, 3], dtype=lib.int32)
    ),
    "0-d int ** negative 0-d": lambda lib: lib.tensor(3) ** lib.tensor(-2),
    "2 ** negative ints": lambda lib: 2 ** lib.tensor([-1, 0, 2]),
    "pow(-1, negative ints)": lambda lib: lib.pow(-1, lib.tensor([-1, -2, -3])),
    "bools ** negative ints": lambda lib: lib.tensor([True, False]) ** lib.tensor([-1, -2]),
    "floats ** negative ints": lambda lib: lib.tensor([2.0, 4.0]) ** lib.tensor([-1, -2]),
    "ints ** -1 (a number)": lambda lib: lib.tensor([1, 2]) ** -1,
}
CLAMPS = {
    "min=True": lambda lib, x: x.clamp(min=True),
    "max=False": lambda lib, x: x.clamp(max=False),
    "False, True": lambda lib, x: x.clamp(False, True),
    "0, 1 (ints)": lambda lib, x: x.clamp(0, 1),
    "min=tensor(True)": lambda lib, x: x.clamp(min=lib.tensor(True)),
    "max=bool tensor": lambda lib, x: x.clamp(max=lib.tensor([True, False, True])),
    "two bool tensors": lambda lib, x: x.clamp(lib.tensor(False), lib.tensor(True)),
    "clamp_(min=True)": lambda lib, x: x.clamp_(min=True),
}
MATMULS = {
    "x @ 0": lambda lib, x: x @ 0,
    "0 @ x": lambda lib, x: 0 @ x,
    "x @ 1.5": lambda lib, x: x @ 1.5,
    "matmul(x, 0)": lambda lib, x: lib.matmul(x, 0),
    "matmul(0, x)": lambda lib, x: lib.matmul(0, x),
    "x @ None": lambda lib, x: x @ None,
    "x @ x": lambda lib, x: x @ x,
}


@pytest.mark.parametrize("program", INTEGER_POWERS.values(), ids=INTEGER_POWERS.keys())
def test_integer_powers_with_negative_exponent_tensors(program):
    """torch's integer kernel: 1 for a base of 1, ±1 for -1, else 0 (a number exponent raises)."""
    assert_like_torch(lambda lib: facts(program(lib)))


@pytest.mark.parametrize("clamp", CLAMPS.values(), ids=CLAMPS.keys())
def test_clamping_bools_to_a_bool_has_no_kernel(clamp):
    assert_like_torch(lambda lib: facts(clamp(lib, lib.tensor([True, False, True]))))


@pytest.mark.parametrize("product", MATMULS.values(), ids=MATMULS.keys())
def test_matmul_with_a_non_tensor_is_a_type_error(product):
    assert_like_torch(lambda lib: facts(product(lib, lib.ones(2))))


# an integer tensor expanded along a dim (stride 0), made float by the op: NumPy's astype
# ordered the result's dims by those strides (column-major), torch's result is row-major
INT_TO_FLOAT = {
    "tanh": lambda lib, v: v.tanh(),
    "exp(tanh)": lambda lib, v: v.tanh().exp(),
    "sqrt": lambda lib, v: v.sqrt(),
    "sigmoid": lambda lib, v: v.sigmoid(),
    "v / 2": lambda lib, v: v / 2,
    "v / v": lambda lib, v: v / v,
    "v.div(2)": lambda lib, v: v.div(2),
    "1 - v.tanh()": lambda lib, v: 1 - v.tanh(),
}


@pytest.mark.parametrize("base", [(1, 3), (2, 1), (1, 1)], ids=str)
@pytest.mark.parametrize("op", INT_TO_FLOAT.values(), ids=INT_TO_FLOAT.keys())
def test_an_expanded_integer_tensor_made_float_is_laid_out_like_torch(op, base):
    assert_like_torch(lambda lib: facts(op(lib, lib.full(base, 2).expand(2, 3))))


# ------------------------------------ found by running torch's OpInfo samples (test_torch_opinfo_samples)

OPINFO_FINDS = {
    # torch sums a letter only one operand has out of it first: bools and ints become int64
    "einsum of bools with a letter of one operand": lambda lib: lib.einsum(
        "...ik,...j->ij", lib.ones(1, 2, 3, dtype=lib.bool), lib.ones(3, dtype=lib.bool)
    ),
    "einsum of bools whose private letter has size 1": lambda lib: lib.einsum(
        "ik,j->ij", lib.ones(2, 1, dtype=lib.bool), lib.ones(3, dtype=lib.bool)
    ),
    "einsum of int32 summing every letter": lambda lib: lib.einsum(
        "i,j->", lib.ones(2, dtype=lib.int32), lib.ones(3, dtype=lib.int32)
    ),
    # a number scattered into integers is made an integer first: -2.5 adds -2
    "scatter add of -2.5 into int64": lambda lib: lib.tensor([3, -3]).scatter(
        0, lib.tensor([0, 1]), -2.5, reduce="add"
    ),
    "scatter add of 2.5 into int64": lambda lib: lib.tensor([-3]).scatter(
        0, lib.tensor([0]), 2.5, reduce="add"
    ),
    "scatter multiply by 2.7 into int64": lambda lib: lib.tensor([3]).scatter(
        0, lib.tensor([0]), 2.7, reduce="multiply"
    ),
    "scatter of 2.5 into bool": lambda lib: lib.zeros(2, dtype=lib.bool).scatter(
        0, lib.tensor([1]), 2.5, reduce="add"
    ),
    # the dtype check comes before the order's
    "matrix_norm 'nuc' of int64": lambda lib: lib.linalg.matrix_norm(lib.ones(2, 2).long(), "nuc"),
}


@pytest.mark.parametrize("program", OPINFO_FINDS.values(), ids=OPINFO_FINDS.keys())
def test_what_torch_s_own_samples_found(program):
    assert_like_torch(lambda lib: facts(program(lib)))


@pytest.mark.parametrize("p", [1.5, 2, 2.5, 3, 3.5, 4])
def test_second_derivatives_of_a_norm_at_zero_are_torch_s(p):
    """At a zero norm torch's backward zeroes the incoming gradient times 1/norm^(p-1): a
    second derivative there is 0 for p >= 3 (teachgrad gave NaN), NaN below, as torch."""

    def program(lib):
        x = lib.tensor([[0.5, -1.0, 0.0], [0.0, 0.0, 0.0]], dtype=lib.float64, requires_grad=True)
        (g,) = lib.autograd.grad(lib.linalg.vector_norm(x, p, dim=1).sum(), x, create_graph=True)
        (h,) = lib.autograd.grad((g * g).sum(), x)
        return facts(h)

    assert_like_torch(program)


@pytest.mark.parametrize("p", [6, 2, 2.5, 1, 0])
def test_float16_norms_are_summed_in_float32_as_torch_s(p):
    """torch's norm kernel sums float16 in float32: 9**6 overflows float16, the 6-norm of 9s
    does not (teachgrad gave inf; found by torch's OpInfo samples in float16)."""
    assert_like_torch(
        lambda lib: facts(
            lib.linalg.vector_norm(
                lib.tensor([[9.0, 8.0, 7.5], [300.0, 2.0, 1.0]], dtype=lib.float16), p, dim=1
            )
        )
    )
