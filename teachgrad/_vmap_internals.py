"""``teachgrad._vmap_internals``: torch's first, deprecated ``vmap`` (``torch._vmap_internals``),
which code written for older torch still imports.

``vmap(func, in_dims, out_dims)(*args)`` is ``func`` mapped over one dimension of its
inputs: as if ``func`` ran on each slice along ``in_dims``, its results stacked along
``out_dims``. torch runs ``func`` once, on "batched" tensors whose ops know about the extra
dimension; teachgrad has no batched tensors, so it does exactly what the definition says:
one call of ``func`` per slice, then ``stack``. The values and gradients are the same; what
differs is that ``func``'s Python code runs once per slice (a ``print`` in it prints each
time), and that an op torch's batching refuses inside ``func`` (``.item()``) simply works.

>>> import teachgrad as tg
>>> x, y = tg.arange(6.0).reshape(2, 3), tg.arange(3.0)
>>> _vmap(lambda a, b: a * b, in_dims=(0, None))(x, y)
tensor([[ 0.,  1.,  4.],
        [ 0.,  4., 10.]])
"""

import functools
import warnings

from ._creation import zeros
from ._tensor import Tensor
from .ops import stack


def vmap(func, in_dims=0, out_dims=0):
    """Deprecated, as in torch: ``_vmap(func, in_dims, out_dims)`` with a FutureWarning.

    >>> import teachgrad as tg, warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     vmap(lambda a: a.sum())(tg.ones(2, 3))
    tensor([3., 3.])
    """
    warnings.warn(
        "Please use `torch.vmap` instead of `torch._vmap_internals.vmap`.",
        FutureWarning,
        stacklevel=2,
    )
    return _vmap(func, in_dims, out_dims)


def _vmap(func, in_dims=0, out_dims=0, allow_none_pass_through=False):
    """``func`` mapped over dimension ``in_dims`` of its inputs (an int for all of them, or a
    tuple with one entry per argument, nested like the arguments; None: not mapped),
    its results stacked along ``out_dims`` (an int, or one per result).
    ``allow_none_pass_through``: a result may be None (as ``autograd.grad`` gives for an
    unused input); it stays None.

    >>> import teachgrad as tg
    >>> _vmap(lambda a: (a, a.sum()), out_dims=(1, 0))(tg.ones(2, 3))
    (tensor([[1., 1.],
            [1., 1.],
            [1., 1.]]), tensor([3., 3.]))
    """

    @functools.wraps(func)
    def wrapped(*args):
        _check_out_dims(out_dims, func)
        leaves = _leaves(args)
        dims = _mapped_dims(in_dims, args, leaves, func)
        size = _batch_size(dims, leaves)
        results = [func(*_slice(args, leaves, dims, i)) for i in range(size)]
        if not results:  # (no slice: func runs once on zeros, for the results' shapes)
            results = [func(*_slice(args, leaves, dims, None))]
        for result in results:
            _check_results(result, func, allow_none_pass_through)
        return _stacked(results, out_dims, func, size)

    return wrapped


def _name(func) -> str:
    return getattr(func, "__name__", repr(func))


# --------------------------------------------------------------------------- the inputs


def _leaves(tree) -> list:
    """The values of nested tuples, lists and dicts, in order (torch's pytree leaves)."""
    if isinstance(tree, tuple | list):
        return [leaf for item in tree for leaf in _leaves(item)]
    if isinstance(tree, dict):
        return [leaf for item in tree.values() for leaf in _leaves(item)]
    return [tree]


def _dims_per_leaf(dims, tree):
    """``dims`` spread over the leaves of ``tree``: a single value stands for all the leaves
    below it, a tuple, list or dict must match the structure it stands for (else None)."""
    if isinstance(dims, tuple | list) and isinstance(tree, tuple | list):
        if len(dims) != len(tree):
            return None
        pairs = zip(dims, tree, strict=True)
    elif isinstance(dims, dict) and isinstance(tree, dict):
        if dims.keys() != tree.keys():
            return None
        pairs = ((dims[k], tree[k]) for k in tree)
    elif isinstance(dims, tuple | list | dict):
        return None
    else:
        return [dims] * len(_leaves(tree))
    flat = []
    for d, t in pairs:
        below = _dims_per_leaf(d, t)
        if below is None:
            return None
        flat += below
    return flat


def _mapped_dims(in_dims, args, leaves, func) -> list:
    """The dimension each of the ``leaves`` of ``args`` is mapped over (None: not mapped),
    with torch's checks of ``in_dims``."""
    where = f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): "
    if not isinstance(in_dims, int | tuple):
        raise ValueError(
            where + "expected `in_dims` to be int or a (potentially nested) tuple matching the "
            f"structure of inputs, got: {type(in_dims)}."
        )
    if not args:
        raise ValueError(
            f"vmap({_name(func)})(<inputs>): got no inputs. Maybe you forgot to add inputs, or "
            "you are trying to vmap over a function with no inputs. The latter is unsupported."
        )
    dims = _dims_per_leaf(in_dims, args)
    if dims is None:
        raise ValueError(
            where + "in_dims is not compatible with the structure of `inputs`.\n  in_dims must "
            "be one int for all the inputs, or nest like them: one entry per argument, a tuple "
            "(or list, or dict) for an argument that is one."
        )
    for arg, dim in zip(leaves, dims, strict=True):
        if dim is not None and not isinstance(dim, int):
            raise ValueError(
                where + f"Got in_dim={dim} for an input but in_dim must be either an integer "
                "dimension or None."
            )
        if dim is not None and not isinstance(arg, Tensor):
            raise ValueError(
                where + f"Got in_dim={dim} for an input but the input is of type {type(arg)}. "
                "We cannot vmap over non-Tensor arguments, please use None as the respective "
                "in_dim"
            )
        if dim is not None and not 0 <= dim < arg.dim():
            raise ValueError(
                where + f"Got in_dim={dim} for some input, but that input is a Tensor of "
                f"dimensionality {arg.dim()} so expected in_dim to satisfy 0 <= in_dim < "
                f"{arg.dim()}."
            )
    if all(dim is None for dim in dims):
        raise ValueError(
            where + "no input is mapped\n  Give at least one Tensor input an in_dim that is "
            "not None: vmap needs a dimension to map over."
        )
    return dims


def _batch_size(dims, leaves) -> int:
    """The size of the mapped dimension, which all mapped inputs must share."""
    sizes = [leaf.size(dim) for leaf, dim in zip(leaves, dims, strict=True) if dim is not None]
    if any(size != sizes[0] for size in sizes):
        raise ValueError(
            "vmap: Expected all tensors to have the same size in the mapped dimension, got "
            f"sizes {sizes} for the mapped dimension"
        )
    return sizes[0]


def _slice(args, leaves, dims, i):
    """``args`` with each mapped leaf replaced by its slice ``i`` (``i`` None: zeros of a
    slice's shape, for a mapped dimension of size 0)."""
    leaves, dims = iter(leaves), iter(dims)

    def rebuild(tree):
        if isinstance(tree, tuple | list):
            items = [rebuild(item) for item in tree]
            return type(tree)(*items) if hasattr(tree, "_fields") else type(tree)(items)
        if isinstance(tree, dict):
            return {k: rebuild(v) for k, v in tree.items()}
        leaf, dim = next(leaves), next(dims)
        if dim is None:
            return leaf
        if i is None:
            shape = leaf.shape[:dim] + leaf.shape[dim + 1 :]
            return zeros(shape, dtype=leaf.dtype, device=leaf.device)
        return leaf.select(dim, i)

    return rebuild(args)


# --------------------------------------------------------------------------- the results


def _check_out_dims(out_dims, func) -> None:
    if isinstance(out_dims, int):
        return
    if not isinstance(out_dims, tuple) or not all(isinstance(d, int) for d in out_dims):
        raise ValueError(
            f"vmap({_name(func)}, ..., out_dims={out_dims}): `out_dims` must be an int or a "
            "tuple of int representing where in the outputs the vmapped dimension should appear."
        )


def _check_results(result, func, allow_none) -> None:
    """``func`` must return one Tensor or a tuple of them (or None in one, when allowed)."""
    name = _name(func)
    if isinstance(result, Tensor):
        return
    if not isinstance(result, tuple):
        raise ValueError(
            f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(result)} as "
            "the return."
        )
    for k, item in enumerate(result):
        if not (isinstance(item, Tensor) or allow_none and item is None):
            raise ValueError(
                f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(item)} "
                f"for return {k}."
            )


def _stacked(results, out_dims, func, size):
    """Each result of the slices stacked along its out_dim (empty along it when ``size`` is 0)."""
    single = isinstance(results[0], Tensor)
    n = 1 if single else len(results[0])
    if isinstance(out_dims, tuple) and len(out_dims) != n:
        raise ValueError(
            f"vmap({_name(func)}, ..., out_dims={out_dims}): `out_dims` must have one dim per "
            f"output (got {n} outputs) of {_name(func)}."
        )
    dims = out_dims if isinstance(out_dims, tuple) else (out_dims,) * n
    columns = [[r] for r in results] if single else results
    out = []
    for k, dim in enumerate(dims):
        items = [column[k] for column in columns]
        if items[0] is None:
            out.append(None)
        else:
            joined = stack(items, dim=dim)
            out.append(joined if size else joined.narrow(dim, 0, 0))
    return out[0] if single else tuple(out)
