"""torch's memory formats (``contiguous_format``, ``channels_last``, ``channels_last_3d``,
``preserve_format``): the strides each maker and copy gives, when a copy is skipped (``to``,
``contiguous``), ``is_contiguous`` in each format, the nodes recorded, the gradients' layouts
and the errors. Each program runs on teachgrad and on torch and must end the same way (same
facts, or the same error class and first line).
"""

import warnings

import pytest

from tests.teachgrad.autograd.test_torch_fidelity import as_numpy, assert_like_torch

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)


def _grid(lib, *shape):
    """A fresh row-major float64 tensor 1, 2, 3, ... of ``shape``."""
    n = 1
    for size in shape:
        n *= size
    return lib.arange(1.0, n + 1, dtype=lib.float64).reshape(*shape)


def _facts(out):
    """What a program's result says: its layout, node and values (or the value itself)."""
    if not hasattr(out, "stride"):
        return out
    node = None if out.grad_fn is None else type(out.grad_fn).__name__
    return tuple(out.shape), out.stride(), node, as_numpy(out)


# the shapes whose size-1 and size-0 dims torch's channels-last rules treat apart
SHAPES = [
    (2, 3, 4, 5),
    (2, 1, 4, 5),
    (2, 3, 1, 1),
    (1, 3, 4, 5),
    (2, 3, 4, 1),
    (1, 1, 1, 1),
    (0, 3, 4, 5),
    (2, 0, 4, 5),
    (1, 3, 1, 1),
    (2, 3, 4, 5, 6),
    (2, 1, 4, 5, 6),
    (1, 3, 1, 1, 1),
]


def _format(lib, shape):
    return lib.channels_last if len(shape) == 4 else lib.channels_last_3d


MADE = {  # fn(lib, shape): a tensor made or copied in the shape's channels-last format
    "empty": lambda lib, s: lib.empty(s, memory_format=_format(lib, s)).zero_(),
    "contiguous": lambda lib, s: _grid(lib, *s).contiguous(memory_format=_format(lib, s)),
    "to": lambda lib, s: _grid(lib, *s).to(memory_format=_format(lib, s)),
    "clone": lambda lib, s: _grid(lib, *s).clone(memory_format=_format(lib, s)),
    "zeros_like": lambda lib, s: lib.zeros_like(_grid(lib, *s), memory_format=_format(lib, s)),
    "to(float32)": lambda lib, s: _grid(lib, *s).to(lib.float32, memory_format=_format(lib, s)),
    "permuted, to": lambda lib, s: _grid(lib, *s).transpose(0, 2).to(memory_format=_format(lib, s)),
    "back to contiguous": lambda lib, s: (
        lib.empty(s, memory_format=_format(lib, s))
        .fill_(1.0)
        .to(memory_format=lib.contiguous_format)
    ),
}


@pytest.mark.parametrize("make", MADE.values(), ids=MADE.keys())
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_channels_last_strides_are_torchs(make, shape):
    """The strides of a channels-last tensor, size-1 and empty dims included; a tensor
    already contiguous in the format is returned as it is (its strides kept)."""

    def program(lib):
        out = make(lib, shape)
        fmt = _format(lib, shape)
        return _facts(out), out.is_contiguous(), out.is_contiguous(memory_format=fmt)

    assert_like_torch(program)


CALLS = {  # fn(lib): one call with a memory format, its result or its error
    "contiguous: a node": lambda lib: _leaf(lib).contiguous(memory_format=lib.channels_last),
    "clone: a node": lambda lib: _leaf(lib).clone(memory_format=lib.channels_last),
    "clone(memory_format=None)": lambda lib: _grid(lib, 2, 3).t().clone(memory_format=None),
    "clone to contiguous": lambda lib: _channels_last(lib).clone(
        memory_format=lib.contiguous_format
    ),
    "torch.clone": lambda lib: lib.clone(_grid(lib, 2, 3, 4, 5), memory_format=lib.channels_last),
    "to: a node": lambda lib: _leaf(lib).to(memory_format=lib.channels_last),
    "to(float32): a node": lambda lib: _leaf(lib).to(lib.float32, memory_format=lib.channels_last),
    "to(cpu)": lambda lib: _grid(lib, 2, 3, 4, 5).to("cpu", memory_format=lib.channels_last),
    "to(other)": lambda lib: _grid(lib, 2, 3, 4, 5).to(
        lib.zeros(1), memory_format=lib.channels_last
    ),
    "to(copy=True)": lambda lib: _channels_last(lib).to(
        lib.float64, copy=True, memory_format=lib.channels_last
    ),
    "cpu(memory_format=)": lambda lib: _leaf(lib).cpu(memory_format=lib.channels_last),
    "to(contiguous_format) is self": lambda lib: _is_self(
        lib, _grid(lib, 2, 3, 4, 5), memory_format=lib.contiguous_format
    ),
    "to(memory_format=None) is self": lambda lib: _is_self(
        lib, _grid(lib, 2, 3, 4, 5), memory_format=None
    ),
    "to(channels_last) of channels_last is self": lambda lib: _is_self(
        lib, _channels_last(lib), memory_format=lib.channels_last
    ),
    "to(channels_last) of an N1HW copies": lambda lib: _grid(lib, 2, 1, 4, 5).to(
        memory_format=lib.channels_last
    ),
    "contiguous() of channels_last copies": lambda lib: _channels_last(lib).contiguous(),
    "clone() of channels_last keeps it": lambda lib: _channels_last(lib).clone(),
    "channels_last + 1": lambda lib: _channels_last(lib) + 1,
    "channels_last * row-major": lambda lib: _channels_last(lib) * _grid(lib, 2, 3, 4, 5),
    "zeros_like(channels_last)": lambda lib: lib.zeros_like(_channels_last(lib)),
    "ones_like": lambda lib: lib.ones_like(_grid(lib, 2, 3, 4, 5), memory_format=lib.channels_last),
    "full_like": lambda lib: lib.full_like(
        _grid(lib, 2, 3, 4, 5), 2.0, memory_format=lib.channels_last
    ),
    "empty_like, shape only": lambda lib: tuple(
        lib.empty_like(_grid(lib, 2, 3, 4, 5), memory_format=lib.channels_last).stride()
    ),
    "rand_like, shape only": lambda lib: tuple(
        lib.rand_like(_grid(lib, 2, 3, 4, 5), memory_format=lib.channels_last).stride()
    ),
    "randn_like, shape only": lambda lib: tuple(
        lib.randn_like(_grid(lib, 2, 3, 4, 5), memory_format=lib.channels_last_3d).stride()
    ),
    "zeros_like(contiguous_format) of a transposed": lambda lib: lib.zeros_like(
        _grid(lib, 2, 3, 4, 5).transpose(1, 2), memory_format=lib.contiguous_format
    ),
    "empty(contiguous_format)": lambda lib: lib.empty(
        2, 3, memory_format=lib.contiguous_format
    ).zero_(),
    "empty(memory_format=None)": lambda lib: lib.empty((2, 3), memory_format=None).zero_(),
    "is_contiguous(preserve_format)": lambda lib: (
        _grid(lib, 2, 3).is_contiguous(memory_format=lib.preserve_format),
        _grid(lib, 2, 3).t().is_contiguous(memory_format=lib.preserve_format),
    ),
    "is_contiguous(channels_last) of other ranks": lambda lib: (
        _grid(lib, 2, 3).is_contiguous(memory_format=lib.channels_last),
        _grid(lib, 2, 3, 4, 5).is_contiguous(memory_format=lib.channels_last_3d),
    ),
    "contiguous(preserve_format) of a contiguous": lambda lib: _grid(lib, 2, 3).contiguous(
        memory_format=lib.preserve_format
    ),
    # the errors
    "contiguous(preserve_format)": lambda lib: (
        _grid(lib, 2, 3).t().contiguous(memory_format=lib.preserve_format)
    ),
    "contiguous(channels_last) of a 2-d": lambda lib: _grid(lib, 2, 3).contiguous(
        memory_format=lib.channels_last
    ),
    "contiguous(channels_last_3d) of a 4-d": lambda lib: _grid(lib, 2, 3, 4, 5).contiguous(
        memory_format=lib.channels_last_3d
    ),
    "to(channels_last) of a 5-d": lambda lib: _grid(lib, 2, 3, 4, 5, 6).to(
        memory_format=lib.channels_last
    ),
    "clone(channels_last) of a 2-d": lambda lib: _grid(lib, 2, 3).clone(
        memory_format=lib.channels_last
    ),
    "empty(channels_last) of a 2-d": lambda lib: lib.empty(2, 3, memory_format=lib.channels_last),
    "empty(preserve_format)": lambda lib: lib.empty(2, 3, memory_format=lib.preserve_format),
    "empty_like(channels_last) of a 2-d": lambda lib: lib.empty_like(
        _grid(lib, 2, 3), memory_format=lib.channels_last
    ),
    "zeros(memory_format=)": lambda lib: lib.zeros(2, 3, memory_format=lib.channels_last),
    "contiguous(memory_format=None)": lambda lib: _grid(lib, 2).contiguous(memory_format=None),
    "contiguous(a str)": lambda lib: _grid(lib, 2).contiguous(memory_format="channels_last"),
    "contiguous(by position)": lambda lib: _grid(lib, 2).contiguous(lib.channels_last),
    "is_contiguous(an int)": lambda lib: _grid(lib, 2).is_contiguous(memory_format=1),
    "is_contiguous(None)": lambda lib: _grid(lib, 2).is_contiguous(memory_format=None),
    "is_contiguous(by position)": lambda lib: _grid(lib, 2).is_contiguous(lib.channels_last),
    "clone(a str)": lambda lib: _grid(lib, 2).clone(memory_format="x"),
    "torch.clone(a str)": lambda lib: lib.clone(_grid(lib, 2), memory_format="x"),
    "to(a str)": lambda lib: _grid(lib, 2).to(memory_format="channels_last"),
    "cpu(a str)": lambda lib: _grid(lib, 2).cpu(memory_format="x"),
    "float(a str)": lambda lib: _grid(lib, 2).float(memory_format="x"),
    "empty(a str)": lambda lib: lib.empty((2, 3), memory_format="x"),
    "empty(an int, a bad dtype)": lambda lib: lib.empty((2, 3), memory_format=1, dtype=1),
    "zeros_like(a bad dtype, an int)": lambda lib: lib.zeros_like(
        _grid(lib, 2), dtype=1, memory_format=1
    ),
    "full_like(a str)": lambda lib: lib.full_like(_grid(lib, 2), 1.0, memory_format="x"),
    "rand_like(a str)": lambda lib: lib.rand_like(_grid(lib, 2), memory_format="x"),
}


def _leaf(lib):
    return _grid(lib, 2, 3, 4, 5).requires_grad_()


def _channels_last(lib):
    return _grid(lib, 2, 3, 4, 5).contiguous(memory_format=lib.channels_last)


def _is_self(lib, x, **kwargs):
    return x.to(**kwargs) is x


@pytest.mark.parametrize("call", CALLS.values(), ids=CALLS.keys())
def test_memory_format_calls_as_torchs(call):
    assert_like_torch(lambda lib: _facts(call(lib)))


def test_memory_formats_are_torchs_constants():
    """Named as torch's, one object each (equal to itself alone, also after a pickle)."""
    import copy
    import pickle

    def program(lib):
        formats = [lib.contiguous_format, lib.channels_last, lib.channels_last_3d]
        formats.append(lib.preserve_format)
        return (
            [repr(f).partition(".")[2] for f in formats],
            [str(f).partition(".")[2] for f in formats],
            all(isinstance(f, lib.memory_format) for f in formats),
            lib.channels_last == lib.channels_last,
            lib.channels_last == lib.contiguous_format,
            pickle.loads(pickle.dumps(lib.channels_last)) is lib.channels_last,
            copy.deepcopy(lib.channels_last_3d) is lib.channels_last_3d,
        )

    assert_like_torch(program)


LEAVES = {
    "contiguous_format": lambda lib: lib.contiguous_format,
    "channels_last": lambda lib: lib.channels_last,
}


@pytest.mark.parametrize("format_b", LEAVES.values(), ids=LEAVES.keys())
@pytest.mark.parametrize("format_a", LEAVES.values(), ids=LEAVES.keys())
def test_a_leaf_s_grad_keeps_its_memory_format(format_a, format_b):
    """torch's gradient layout contract for channels_last leaves: the first ``.grad`` has the
    leaf's strides (broadcast or not, also under ``create_graph``), and adding into it keeps
    them without a layout warning."""

    def program(lib):
        a = _grid(lib, 2, 3, 4, 5).to(memory_format=format_a(lib)).requires_grad_()
        b = _grid(lib, 2, 3, 4, 5).to(memory_format=format_b(lib)).requires_grad_()
        a.sum().backward()
        facts = [a.grad.stride()]
        a.grad = None
        (a * b).sum().backward()
        facts += [a.grad.stride(), b.grad.stride()]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            (a * b).sum().backward()
        facts += [a.grad.stride(), [str(w.message)[:30] for w in caught], as_numpy(a.grad)]
        a.grad = None
        grad = lib.autograd.grad((a * b).sum(), a, create_graph=True)[0]
        (a * b).sin().sum().backward(inputs=[a])
        return facts + [grad.stride(), a.grad.stride()]

    assert_like_torch(program)
