"""torch's own sample inputs for every op of the contract (and teachgrad's other public ops
torch has samples for), run through both libraries.

torch tests each of its ops on the samples of its OpInfo database
(``torch.testing._internal.common_methods_invocations``: shapes from 0-d to 5-d, broadcast,
strided and empty inputs, every keyword an op takes). Here each sample of each contract op
runs in teachgrad and in torch: the outputs (values, shapes, dtypes, whether they require
grad) and, for float dtypes, the gradients of a random combination of the outputs with
respect to every input must be torch's; in float64 so must the forward-mode tangents and
the second derivatives (double backward); the in-place variants must change their tensor
as torch's do (values, dtype, version) or refuse as torch's do; and the inputs torch lists
as errors must be refused as torch refuses them. (torch's test helpers import
``expecttest``, which the ``test`` extra installs.)

Where teachgrad refuses on purpose (docs/differences-from-torch.md: the norms of
singular values) it must refuse clearly (NotImplementedError,
or "not supported"), never answer wrongly; where torch has no kernel for a dtype
(NotImplementedError: "... not implemented for 'Long'"), teachgrad may compute.
"""

import functools

import numpy as np
import pytest

import teachgrad as tg
from tests import needs

# the contract's ops torch has an OpInfo for (its relu, clip, F.softmax and F.log_softmax are
# tested through nn.functional.relu, clamp, softmax and log_softmax)
CONTRACT = """
add sub mul div pow neg abs reciprocal sqrt rsqrt exp log log1p expm1 sin cos tan tanh sigmoid
clamp maximum minimum where sign floor ceil round square sum mean prod var std amax
amin max min argmax argmin logsumexp norm cumsum matmul mm bmm mv dot outer einsum reshape view
view_as flatten unflatten squeeze unsqueeze transpose t permute movedim expand expand_as narrow
select unbind split chunk diagonal unfold cat stack repeat tile flip roll gather scatter
index_select masked_fill tril triu softmax log_softmax eq ne lt le gt ge isnan isinf isfinite
allclose equal any all linalg.vector_norm linalg.matrix_norm linalg.norm nn.functional.relu
nn.functional.gelu nn.functional.silu nn.functional.linear nn.functional.mse_loss nn.functional.l1_loss nn.functional.nll_loss
nn.functional.cross_entropy nn.functional.binary_cross_entropy
nn.functional.binary_cross_entropy_with_logits nn.functional.conv2d nn.functional.max_pool2d
nn.functional.avg_pool2d nn.functional.layer_norm nn.functional.embedding
nn.functional.one_hot nn.functional.pad
""".split()  # noqa: SIM905 - a list of 110 names reads better as words
# teachgrad's other public ops that torch has OpInfos for
CONTRACT += ["clone", "constant_pad_nd", "floor_divide", "fmod", "remainder", "scatter_add"]
CONTRACT += ["index_put", "logical_and", "logical_not", "logical_or", "logical_xor"]
CONTRACT += ["full_like", "ones_like", "zeros_like"]
# OpInfos whose function takes its arguments in another order than the op's own
ADAPTERS = {
    "where": lambda self, condition, other, **kw: tg.where(condition, self, other, **kw),
    "einsum": lambda tensors, equation: tg.einsum(equation, tensors),
    "nn.functional.embedding": lambda weight, idx, **kw: tg.nn.functional.embedding(
        idx, weight, **kw
    ),
}
# what teachgrad refuses on purpose (OpInfo name, its variant)
GAPS = {
    ("norm", "nuc"),
    ("linalg.norm", ""),
    ("linalg.norm", "subgradients_at_zero"),
    ("linalg.matrix_norm", ""),
}
# by the output's dtype (an integer input may give a float32 result); exact otherwise
TOLERANCES = {"float64": (1e-7, 1e-9), "float32": (2e-5, 1e-5), "float16": (2e-3, 1e-3)}


@functools.cache
def op_db():
    needs.oracle()
    try:
        from torch.testing._internal.common_methods_invocations import op_db
    except ImportError as error:
        needs.missing("oracle", f"torch's OpInfo database could not be imported ({error})")
    return op_db


def to_tg(value):
    """A sample's argument for teachgrad: tensors copied (requires_grad kept), dtypes named."""
    import torch

    if isinstance(value, torch.Tensor):
        dtype = getattr(tg, str(value.dtype).split(".")[-1])
        t = tg.tensor(value.detach().numpy().copy(), dtype=dtype)
        return t.requires_grad_() if value.requires_grad else t
    if isinstance(value, torch.dtype):
        return getattr(tg, str(value).split(".")[-1])
    if isinstance(value, torch.Size):
        return tuple(value)
    if isinstance(value, list | tuple):
        return type(value)(to_tg(v) for v in value)
    if isinstance(value, dict):
        return {k: to_tg(v) for k, v in value.items()}
    return value


def teachgrad_op(info):
    """The teachgrad function of an OpInfo (its adapter, the function, or the method)."""
    if info.name in ADAPTERS:
        return ADAPTERS[info.name]
    fn = tg
    for part in info.name.split("."):
        fn = getattr(fn, part, None)
    if fn is not None:
        return fn
    return lambda x, *args, **kwargs: getattr(x, info.name)(*args, **kwargs)


def tensors_in(value) -> list:
    if hasattr(value, "requires_grad") and hasattr(value, "shape"):
        return [value]
    if isinstance(value, list | tuple):
        return [t for v in value for t in tensors_in(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in tensors_in(v)]
    return []


def host(t) -> np.ndarray:
    return np.asarray(t.detach().cpu().numpy())


def run(fn, sample, convert):
    args = (sample.input, *sample.args)
    args, kwargs = (to_tg(args), to_tg(sample.kwargs)) if convert else (args, sample.kwargs)
    try:
        return args, kwargs, fn(*args, **kwargs), None
    except Exception as error:  # noqa: BLE001 - compared with torch's below
        return args, kwargs, None, error


def compare(info, k, sample, dtype) -> str | None:
    """Why sample ``k`` of ``info`` differs between the libraries (None: it does not)."""
    import torch

    targs, tkwargs, want, torch_error = run(info.op, sample, convert=False)
    args, kwargs, got, error = run(teachgrad_op(info), sample, convert=True)
    if torch_error is not None or error is not None:
        if error is None and isinstance(torch_error, NotImplementedError):
            return None  # (torch has no kernel for this dtype; teachgrad computes)
        gap = (info.name, info.variant_test_name) in GAPS
        clear = isinstance(error, NotImplementedError) or "not supported" in str(error)
        if torch_error is None and gap and clear:
            return None
        if torch_error is None or error is None or type(error) is not type(torch_error):
            return f"torch: {torch_error!r:.150} | teachgrad: {error!r:.150}"
        return None
    outs_want = tensors_in(want)
    outs_got = tensors_in(got)
    if len(outs_got) != len(outs_want):
        return f"{len(outs_got)} outputs, torch {len(outs_want)}"
    for g, w in zip(outs_got, outs_want, strict=True):
        a, b = host(g), host(w)
        if a.shape != b.shape or a.dtype != b.dtype or g.requires_grad != w.requires_grad:
            return f"output {a.shape} {a.dtype} {g.requires_grad}, torch's {b.shape} {b.dtype}"
        rtol, atol = TOLERANCES.get(str(b.dtype), (0, 0))
        if not np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True):
            return f"output values differ by {np.nanmax(np.abs(a.astype(float) - b)):.3g}"
    wanted = [o for o in outs_want if o.requires_grad]
    leaves = [t for t in tensors_in((targs, tkwargs)) if t.requires_grad]
    if not wanted or not leaves:
        return None
    rng = np.random.default_rng(k)
    weights = [rng.standard_normal(tuple(o.shape)).astype(dtype) for o in wanted]
    grads_want = torch.autograd.grad(
        wanted, leaves, [torch.tensor(w) for w in weights], allow_unused=True
    )
    grads_got = tg.autograd.grad(
        [o for o in outs_got if o.requires_grad],
        [t for t in tensors_in((args, kwargs)) if t.requires_grad],
        [tg.tensor(w) for w in weights],
        allow_unused=True,
    )
    rtol, atol = TOLERANCES[dtype]
    for j, (g, w) in enumerate(zip(grads_got, grads_want, strict=True)):
        a = np.zeros(tuple(leaves[j].shape)) if g is None else host(g)
        b = np.zeros(tuple(leaves[j].shape)) if w is None else host(w)
        if a.shape != b.shape or not np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True):
            return f"gradient of input {j} differs"
    return None


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32", "bool"])
@pytest.mark.parametrize("name", CONTRACT)
def test_torch_s_samples_give_torch_s_results(name, dtype):
    import torch

    infos = [info for info in op_db() if info.name == name]
    assert infos, f"torch has no OpInfo named {name}"
    torch_dtype = getattr(torch, dtype)
    differences = []
    for info in infos:
        if not info.supports_dtype(torch_dtype, "cpu"):
            continue  # (torch has no samples of this dtype for it)
        grad = info.supports_autograd and torch_dtype.is_floating_point
        for k, sample in enumerate(info.sample_inputs("cpu", torch_dtype, requires_grad=grad)):
            why = compare(info, k, sample, dtype)
            if why is not None:
                key = f"{info.name}.{info.variant_test_name}" if info.variant_test_name else name
                differences.append(f"{key} sample {k} ({sample.summary()}): {why}")
    assert not differences, "\n".join(differences[:10])


IN_PLACE = ["add", "sub", "mul", "div", "pow", "neg", "abs", "exp", "log", "sqrt", "sin", "cos"]
IN_PLACE += ["tanh", "sigmoid", "clamp", "masked_fill", "index_put", "fill", "zero", "copy"]


def compare_in_place(info, sample) -> str | None:
    """``x.<op>_(...)`` on a copy of the sample's input in each library: the same refusal
    (class and first line), or the same values, dtype and version, and ``x`` returned."""
    want_x = sample.input.clone()
    x = to_tg(sample.input.clone())
    torch_error = None
    try:
        info.inplace_variant(want_x, *sample.args, **sample.kwargs)
    except Exception as error:  # noqa: BLE001 - compared below
        torch_error = error
    try:
        got, error = getattr(x, f"{info.name}_")(*to_tg(sample.args), **to_tg(sample.kwargs)), None
    except Exception as caught:  # noqa: BLE001 - compared below
        got, error = None, caught
    if torch_error is not None or error is not None:
        first = [str(e).split("\n")[0].replace("teachgrad", "torch") for e in (error, torch_error)]
        if type(error) is not type(torch_error) or first[0] != first[1]:
            return f"torch: {torch_error!r:.150} | teachgrad: {error!r:.150}"
        return None
    a, b = host(x), host(want_x)
    rtol, atol = TOLERANCES.get(str(b.dtype), (0, 0))
    same = a.shape == b.shape and a.dtype == b.dtype
    if not (same and np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)):
        return f"values {a.dtype} {a.shape}, torch's {b.dtype} {b.shape}"
    if x._version != want_x._version or got is not x:
        return f"version {x._version} (torch {want_x._version}), x returned: {got is x}"
    return None


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "bool"])
@pytest.mark.parametrize("name", IN_PLACE)
def test_torch_s_samples_in_place_give_torch_s_results(name, dtype):
    import torch

    torch_dtype = getattr(torch, dtype)
    differences = []
    for info in op_db():
        if info.name != name or info.inplace_variant is None:
            continue
        if not info.supports_dtype(torch_dtype, "cpu"):
            continue
        for k, sample in enumerate(info.sample_inputs("cpu", torch_dtype, requires_grad=False)):
            why = compare_in_place(info, sample)
            if why is not None:
                differences.append(f"{name}_ sample {k} ({sample.summary()}): {why}")
    assert not differences, "\n".join(differences[:10])


def host_grad(t) -> np.ndarray:
    """A gradient on the host (torch may give a ZeroTensor, which NumPy can't read)."""
    if getattr(t, "_is_zerotensor", lambda: False)():
        return np.zeros(tuple(t.shape))
    return host(t)


def _substituted(value, duals: dict):
    """``value`` with each tensor in ``duals`` (by id) replaced by its dual tensor."""
    if id(value) in duals:
        return duals[id(value)]
    if isinstance(value, list | tuple):
        return type(value)(_substituted(v, duals) for v in value)
    if isinstance(value, dict):
        return {k: _substituted(v, duals) for k, v in value.items()}
    return value


def _tangents_out(lib, fn, args, kwargs, tangents) -> list:
    """The tangents of ``fn``'s float outputs when its inputs that require grad move along
    ``tangents`` (forward-mode AD, each library's own)."""
    fw = lib.autograd.forward_ad
    leaves = [t for t in tensors_in((args, kwargs)) if t.requires_grad]
    with fw.dual_level():
        duals = {id(t): fw.make_dual(t.detach(), lib.tensor(v)) for t, v in zip(leaves, tangents)}
        out = fn(*_substituted(args, duals), **_substituted(kwargs, duals))
        found = []
        for o in tensors_in(out):
            if o.is_floating_point():
                tangent = fw.unpack_dual(o).tangent
                found.append(np.zeros(tuple(o.shape)) if tangent is None else host_grad(tangent))
        return found


def _second_order(lib, fn, args, kwargs, k) -> list | None:
    """d/dinputs of <grad(outputs · w), v> (a Hessian-vector product), None where the op has
    no gradient to differentiate."""
    leaves = [t for t in tensors_in((args, kwargs)) if t.requires_grad]
    outs = [o for o in tensors_in(fn(*args, **kwargs)) if o.requires_grad]
    if not outs or not leaves:
        return None
    rng = np.random.default_rng(k)
    weights = [lib.tensor(rng.standard_normal(tuple(o.shape))) for o in outs]
    grads = lib.autograd.grad(outs, leaves, weights, create_graph=True, allow_unused=True)
    live = [g for g in grads if g is not None and g.requires_grad]
    if not live:
        return []
    vs = [lib.tensor(rng.standard_normal(tuple(g.shape))) for g in live]
    second = lib.autograd.grad(live, leaves, vs, allow_unused=True)
    return [None if h is None else host_grad(h) for h in second]


def _differ(got: list, want: list) -> bool:
    # no second derivatives at all (the gradient has no graph: a linear op) equal zeros (torch's
    # backward of some linear ops reads their input, so its gradient has a graph, of zeros)
    got, want = got or [None] * len(want), want or [None] * len(got)
    if len(got) != len(want):
        return True
    for a, b in zip(got, want, strict=True):
        if a is None and b is None:
            continue
        if a is None or b is None:
            a, b = (np.zeros_like(b) if a is None else a), (np.zeros_like(a) if b is None else b)
        if a.shape != b.shape or not np.allclose(a, b, rtol=1e-7, atol=1e-9, equal_nan=True):
            return True
    return False


@pytest.mark.parametrize("order", ["forward-mode tangents", "second derivatives"])
@pytest.mark.parametrize("name", CONTRACT)
def test_torch_s_samples_give_torch_s_derivatives(name, order):
    """float64: each sample's forward-mode tangents (random input tangents), or its second
    derivatives (double backward), equal torch's."""
    import torch

    differences = []
    for info in op_db():
        supported = (
            info.supports_forward_ad if order.startswith("forward") else info.supports_gradgrad
        )
        if info.name != name or not supported or not info.supports_dtype(torch.float64, "cpu"):
            continue
        for k, sample in enumerate(info.sample_inputs("cpu", torch.float64, requires_grad=True)):
            args, kwargs = (sample.input, *sample.args), sample.kwargs
            if not [t for t in tensors_in((args, kwargs)) if t.requires_grad]:
                continue
            mine = (teachgrad_op(info), to_tg(args), to_tg(kwargs))
            try:
                if order.startswith("forward"):
                    rng = np.random.default_rng(k)
                    leaves = [t for t in tensors_in((args, kwargs)) if t.requires_grad]
                    tangents = [rng.standard_normal(tuple(t.shape)) for t in leaves]
                    got = _tangents_out(tg, *mine, tangents)
                    want = _tangents_out(torch, info.op, args, kwargs, tangents)
                else:
                    got = _second_order(tg, *mine, k)
                    want = _second_order(torch, info.op, args, kwargs, k)
                    if want is None and got is None:
                        continue
            except (NotImplementedError, RuntimeError) as error:
                refused = isinstance(error, NotImplementedError) or "not supported" in str(error)
                if (info.name, info.variant_test_name) in GAPS and refused:
                    continue  # (a sample teachgrad refuses on purpose: tested above)
                raise
            if want is None or got is None or _differ(got, want):
                differences.append(f"{info.name} sample {k} ({sample.summary()})")
    assert not differences, "\n".join(differences[:10])


def _refusal(info, error_input) -> str | None:
    """Why teachgrad does not refuse ``error_input`` as torch's OpInfo says torch does (the
    exception's class, and its message matching torch's pattern), or None."""
    import re

    sample = error_input.sample_input
    if "out" in sample.kwargs:
        return None  # (out= aliasing an input: copies made for teachgrad share no memory)
    if any(isinstance(v, complex) for v in (*sample.args, *sample.kwargs.values())):
        return None  # (complex numbers are not teachgrad's)
    try:
        args, kwargs = to_tg((sample.input, *sample.args)), to_tg(sample.kwargs)
    except (AttributeError, ValueError):
        return None  # (a complex dtype, or more dims than NumPy has: not teachgrad's)
    try:
        teachgrad_op(info)(*args, **kwargs)
    except Exception as error:  # noqa: BLE001 - compared with torch's below
        message = str(error).replace("teachgrad", "torch")
        if isinstance(error, error_input.error_type) and re.search(
            error_input.error_regex, message
        ):
            return None
        return f"{type(error).__name__}: {str(error).splitlines()[0][:150]}"
    return "no error"


@pytest.mark.parametrize("name", CONTRACT)
def test_torch_s_error_inputs_are_refused_as_torch_refuses_them(name):
    """torch's OpInfos list inputs each op must refuse, with the exception's class and a
    pattern of its message (``error_inputs``): teachgrad refuses them the same way."""
    differences = []
    for info in op_db():
        if info.name != name or info.error_inputs_func is None:
            continue
        for k, error_input in enumerate(info.error_inputs("cpu")):
            why = _refusal(info, error_input)
            if why is not None:
                want = f"{error_input.error_type.__name__} ~ {error_input.error_regex!r}"
                differences.append(f"{name} error input {k}: {why}; torch: {want}")
    assert not differences, "\n".join(differences[:10])
