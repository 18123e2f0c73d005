"""Random programs with hooks, views changed in place, grad modes, empty and 0-d tensors,
mixed dtypes and strided inputs behave in teachgrad exactly as in PyTorch (issue 20).

Hypothesis builds each program step by step. The inputs are float64, float32 or int64
tensors of small shapes (0-d and empty ones included), each laid out plainly or as a
transposed, sliced or expanded view of a leaf. A step applies a pointwise, reduction, view
or in-place op, registers a tensor hook or calls ``retain_grad()``, and may run inside
``no_grad``, ``inference_mode`` or a mix of them. Each step runs on teachgrad and on torch
(tests/teachgrad/ops/_lockstep.py): both raise the same exception (class and first line)
or both give a tensor with the same dtype, shape, values, requires_grad, is_leaf and
strides. At the end a loss built from every value that requires grad is backpropagated
and the gradients of every leaf and retained value, and the hooks' log, must match too.

Strides are compared where torch's contract fixes them: every dim of a pointwise or
reduction result made from contiguous inputs, and the dims longer than one of any other
result (views above all); see ``_lockstep.strides_on_real_dims``.
"""

import math

import numpy as np
import pytest

import teachgrad as tg
from tests.teachgrad.ops._lockstep import MODES, Raised, call, differences, facts, numpy

pytest.importorskip("hypothesis")
from hypothesis import event, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)

MAX_NUMEL = 24  # keeps each program fast: ops that grow a value skip larger ones


# --------------------------------------------------------------------------- the ops
# Each table maps a name to (fn, ok). ``fn(lib, x, other, d)`` runs the op: ``x`` a tensor,
# ``other`` a second operand (a tensor or Python number, for binary and in-place ops), ``d``
# a dim of x drawn by hypothesis. ``ok(shape)`` says whether the op suits x's shape; an
# op that does not suit is not drawn (errors are still met: a dtype or grad-mode clash).


def _any(shape):
    return True


def _nd(n):
    return lambda shape: len(shape) >= n


def _nonempty_first(shape):
    return len(shape) >= 1 and shape[0] >= 1


def _small(shape):
    return math.prod(shape) <= MAX_NUMEL // 2


POINTWISE = {
    "neg": lambda lib, x, o, d: -x,
    "abs": lambda lib, x, o, d: x.abs(),
    "tanh": lambda lib, x, o, d: x.tanh(),
    "sigmoid": lambda lib, x, o, d: lib.sigmoid(x),
    "sin": lambda lib, x, o, d: x.sin(),
    "exp(tanh)": lambda lib, x, o, d: x.tanh().exp(),
    "relu": lambda lib, x, o, d: x.relu(),
    "clamp": lambda lib, x, o, d: x.clamp(-1, 1),
    "square": lambda lib, x, o, d: x.square(),
    "x * 2": lambda lib, x, o, d: x * 2,
    "x * 1.5": lambda lib, x, o, d: x * 1.5,
    "1 - x": lambda lib, x, o, d: 1 - x,
    "x / 2": lambda lib, x, o, d: x / 2,
    "x ** 2": lambda lib, x, o, d: x**2,
    "x.float()": lambda lib, x, o, d: x.float(),
    "x.double()": lambda lib, x, o, d: x.double(),
    "x.long()": lambda lib, x, o, d: x.long(),
    "clone": lambda lib, x, o, d: x.clone(),
    "contiguous": lambda lib, x, o, d: x.contiguous(),
}

BINARY = {
    "x + y": lambda lib, x, y, d: x + y,
    "x - y": lambda lib, x, y, d: x - y,
    "x * y": lambda lib, x, y, d: x * y,
    "y * x": lambda lib, x, y, d: y * x,
    "x / (y*y + 1)": lambda lib, x, y, d: x / (y * y + 1),
    "maximum": lambda lib, x, y, d: lib.maximum(x, lib.as_tensor(y)),
    "where(x > y)": lambda lib, x, y, d: lib.where(x > y, x, y),
    "add(alpha=2)": lambda lib, x, y, d: lib.add(x, y, alpha=2),
}

REDUCE = {
    "sum()": (lambda lib, x, o, d: x.sum(), _any),
    "sum(d)": (lambda lib, x, o, d: x.sum(d), _nd(1)),
    "mean(d, keepdim)": (lambda lib, x, o, d: x.mean(d, keepdim=True), _nd(1)),
    "amax(d)": (lambda lib, x, o, d: x.amax(d), lambda s: len(s) >= 1 and 0 not in s),
    "prod()": (lambda lib, x, o, d: x.prod(), _any),
}

VIEWS = {
    "t()": (lambda lib, x, o, d: x.t(), lambda s: len(s) <= 2),
    "transpose(0, d)": (lambda lib, x, o, d: x.transpose(0, d), _nd(1)),
    "mT": (lambda lib, x, o, d: x.mT, _nd(2)),
    "permute(reversed)": (lambda lib, x, o, d: x.permute(*reversed(range(x.dim()))), _any),
    "x[1:]": (lambda lib, x, o, d: x[1:], _nd(1)),
    "x[::2]": (lambda lib, x, o, d: x[::2], _nd(1)),
    "x[..., 1:]": (lambda lib, x, o, d: x[..., 1:], _nd(1)),
    "x[0]": (lambda lib, x, o, d: x[0], _nonempty_first),
    "x[..., None]": (lambda lib, x, o, d: x[..., None], _any),
    "unsqueeze(d)": (lambda lib, x, o, d: x.unsqueeze(d), _any),
    "squeeze(d)": (lambda lib, x, o, d: x.squeeze(d), _any),
    "squeeze()": (lambda lib, x, o, d: x.squeeze(), _any),
    "expand(2, ...)": (lambda lib, x, o, d: x.expand(2, *x.shape), _small),
    "narrow(d, 0, 1)": (lambda lib, x, o, d: x.narrow(d, 0, 1), lambda s: len(s) >= 1),
    "select(d, -1)": (lambda lib, x, o, d: x.select(d, -1), _nd(1)),
    "diagonal()": (lambda lib, x, o, d: x.diagonal(), _nd(2)),
    "view(-1)": (lambda lib, x, o, d: x.view(-1), _any),
    "reshape(-1)": (lambda lib, x, o, d: x.reshape(-1), _any),
    "flatten()": (lambda lib, x, o, d: x.flatten(), _any),
    "unbind(d)[0]": (lambda lib, x, o, d: x.unbind(d)[0], lambda s: len(s) >= 1 and s[0] > 0),
    "split(1, d)[-1]": (lambda lib, x, o, d: x.split(1, d)[-1], _nd(1)),
    "view_as(x)": (lambda lib, x, o, d: x.view_as(x), _any),
    "detach()": (lambda lib, x, o, d: x.detach(), _any),
}

# in-place ops return x itself; ``o`` is a tensor that broadcasts to x, or a number
INPLACE = {
    "add_(1)": lambda lib, x, o, d: x.add_(1),
    "mul_(2)": lambda lib, x, o, d: x.mul_(2),
    "div_(2)": lambda lib, x, o, d: x.div_(2),
    "neg_()": lambda lib, x, o, d: x.neg_(),
    "tanh_()": lambda lib, x, o, d: x.tanh_(),
    "sigmoid_()": lambda lib, x, o, d: x.sigmoid_(),
    "relu_()": lambda lib, x, o, d: x.relu_(),
    "clamp_(-1, 1)": lambda lib, x, o, d: x.clamp_(-1, 1),
    "zero_()": lambda lib, x, o, d: x.zero_(),
    "fill_(0.5)": lambda lib, x, o, d: x.fill_(0.5),
    "x += o": lambda lib, x, o, d: _iadd(x, o),
    "mul_(o)": lambda lib, x, o, d: x.mul_(o),
    "sub_(o, alpha=2)": lambda lib, x, o, d: x.sub_(o, alpha=2),
    "copy_(o)": lambda lib, x, o, d: x.copy_(lib.as_tensor(o)),
    "x[...] = o": lambda lib, x, o, d: _setitem(x, Ellipsis, o),
    "x[0] = 1.5": lambda lib, x, o, d: _setitem(x, 0, 1.5),
}


KERNEL_SAFE_INPLACE = ["add_(1)", "fill_(0.5)", "mul_(2)", "neg_()", "zero_()"]


def _iadd(x, o):
    x += o
    return x


def _setitem(x, key, o):
    x[key] = o
    return x


# tensor hooks: ``log`` collects (value name, shape of the incoming grad) as hooks fire
HOOKS = {
    "register_hook(g * 2)": lambda lib, x, name, log: x.register_hook(
        lambda g: _logged(log, name, g, g * 2)
    ),
    "register_hook(ones)": lambda lib, x, name, log: x.register_hook(
        lambda g: _logged(log, name, g, lib.ones_like(g) * 0.5)
    ),
    "register_hook(observe)": lambda lib, x, name, log: x.register_hook(
        lambda g: _logged(log, name, g, None)
    ),
    "register_hook + remove": lambda lib, x, name, log: x.register_hook(
        lambda g: _logged(log, name, g, g * 100)
    ).remove(),
    "retain_grad()": lambda lib, x, name, log: x.retain_grad(),
}


def _logged(log, name, grad, result):
    log.append((name, tuple(grad.shape), str(grad.dtype).split(".")[-1]))
    return result


# --------------------------------------------------------------------------- the inputs

DTYPES = ("float64", "float32", "int64")
LAYOUTS = ("plain", "transposed", "sliced", "expanded")


def _make_input(lib, array, dtype, layout, requires_grad):
    """The leaf holding ``array`` and the input the program sees (a view of the leaf for
    the strided layouts, the leaf itself when plain)."""
    dt = getattr(lib, dtype)
    if layout == "transposed":  # a row-major leaf of the transposed values, viewed back
        # (a fresh copy: torch.tensor() keeps a NumPy array's odd strides on dims of size 1,
        # which swapaxes gives and ascontiguousarray keeps; teachgrad lays it out row-major)
        leaf = lib.tensor(array.swapaxes(-1, -2).copy(), dtype=dt)
        view = lambda t: t.transpose(-1, -2)  # noqa: E731
    elif layout == "sliced":  # every second row of a leaf twice as long
        leaf = lib.tensor(np.repeat(array, 2, axis=0), dtype=dt)
        view = lambda t: t[::2]  # noqa: E731
    elif layout == "expanded":  # the first row repeated with stride 0
        leaf = lib.tensor(array[:1], dtype=dt)
        view = lambda t: t.expand(array.shape)  # noqa: E731
    else:
        leaf, view = lib.tensor(array, dtype=dt), None
    leaf.requires_grad_(requires_grad)
    return [leaf] if view is None else [leaf, view(leaf)]


def _draw_inputs(data, dims, dtypes, layouts, grad_inputs):
    """Draw 1-3 inputs: (numpy values, dtype, layout, requires_grad) each; with
    ``grad_inputs`` every float input requires grad."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    base = data.draw(st.lists(dims, min_size=0, max_size=3).map(tuple), label="base shape")
    inputs = []
    for _ in range(data.draw(st.integers(1, 3), label="number of inputs")):
        keep = data.draw(st.integers(0, len(base)))  # broadcasts with base
        mask = data.draw(st.lists(st.booleans(), min_size=keep, max_size=keep))
        shape = tuple(s if m else 1 for s, m in zip(base[len(base) - keep :], mask))
        dtype = data.draw(st.sampled_from(dtypes))
        layout = data.draw(st.sampled_from(layouts)) if len(shape) >= 2 else "plain"
        if layout == "sliced" and shape[0] == 0:
            layout = "plain"
        if dtype == "int64":
            array = rng.integers(-3, 4, shape).astype(np.float64)
        else:
            array = rng.uniform(-2, 2, shape).round(3)
        if layout == "expanded":
            array = np.broadcast_to(array[:1], shape).copy()  # (fresh, as above)
        requires_grad = dtype != "int64" and (grad_inputs or data.draw(st.booleans()))
        inputs.append((array, dtype, layout, requires_grad))
    return inputs


# --------------------------------------------------------------------------- the program


class Program:
    """Values made so far on both libraries (``values["tg"][k]`` and ``values["torch"][k]``
    are value ``k``), which strides of each are compared, the text of the steps, and each
    library's hook log."""

    def __init__(self, torch, inputs):
        self.libs = {"tg": tg, "torch": torch}
        self.values = {"tg": [], "torch": []}
        self.logs = {"tg": [], "torch": []}
        self.strides = []
        self.inference_views = set()  # values that are views of a view made in inference mode
        self.text = []
        for array, dtype, layout, requires_grad in inputs:
            for key, lib in self.libs.items():
                made = _make_input(lib, array, dtype, layout, requires_grad)
                self.values[key].extend(made)
            self.strides.extend(["real dims"] * len(made))
            k = len(self.values["tg"]) - 1
            what = f"{dtype}, shape {array.shape}, requires_grad={requires_grad}"
            if layout == "plain":
                self.text.append(f"v{k} = input({what})")
            else:
                self.text.append(f"v{k - 1} = leaf({dtype}); v{k} = {layout} view of it ({what})")

    def __len__(self):
        return len(self.values["tg"])

    def torch_value(self, k):
        return self.values["torch"][k]

    def where(self):
        return "program:\n  " + "\n  ".join(self.text)

    def run(self, mode, line, fn, *refs, strides="real dims", new_value=True):
        """Run ``fn(lib, *values)`` on both libraries inside ``mode``; compare what came out.
        Returns False when both raised (the program stops there)."""
        self.text.append(line + ("" if mode == "grad" else f"   [{mode}]"))
        out = {}
        for key, lib in self.libs.items():
            args = [self.values[key][r.k] if isinstance(r, Ref) else r for r in refs]
            out[key] = call(lib, mode, fn, *args)
        if isinstance(out["tg"], Raised) or isinstance(out["torch"], Raised):
            self.expect_same(out["tg"], out["torch"], "outcome")
            self.last_error = out["torch"].first_line
            return False
        if new_value and out["torch"] is not None:
            seen = {key: call(self.libs[key], "grad", _facts, out[key], strides) for key in out}
            self.expect_same(seen["tg"], seen["torch"], "result")
            for key in out:
                self.values[key].append(out[key])
            self.strides.append(strides)
        return True

    def wrote_before_raising(self):
        """Whether the step that raised may have changed torch's values anyway.

        Excluded torch quirk: an in-place op on an inference tensor outside inference_mode
        runs its kernel before the check raises "Inplace update to inference tensor outside
        InferenceMode is not allowed", so torch's tensor holds the new values after the
        error (teachgrad refuses first). The error itself was compared; values are not.
        """
        return self.last_error.startswith("Inplace update to inference tensor")

    def expect_same(self, got, want, what):
        """Fail with the program so far when teachgrad's outcome differs from torch's."""
        if isinstance(got, Raised) != isinstance(want, Raised):
            diffs = [f"teachgrad {_brief(got)}, torch {_brief(want)}"]
        else:
            float32 = any(str(v.dtype).endswith("float32") for v in self.values["torch"])
            diffs = differences(got, want, what, loose=float32)
        assert not diffs, self.where() + "\n" + "\n".join(diffs)


class Ref:
    """An index into the program's values (a plain int or float argument is a number)."""

    def __init__(self, k):
        self.k = k

    def __repr__(self):
        return f"v{self.k}"


def _facts(lib, t, strides):
    return facts(t, strides)


def _brief(outcome):
    return repr(outcome) if isinstance(outcome, Raised) else "a result"


def _broadcasts_to(shape, target):
    try:
        return np.broadcast_shapes(shape, target) == tuple(target)
    except ValueError:
        return False


class Step:
    """What a step works on: value ``k`` (torch's tensor ``x``), a dim ``d`` of it, and the
    grad ``mode`` it runs in."""

    def __init__(self, data, prog, config):
        self.k = data.draw(st.sampled_from(range(len(prog))), label="value")
        self.x = prog.torch_value(self.k)
        self.shape = tuple(self.x.shape)
        n = len(self.shape)
        self.d = data.draw(st.integers(-n, n - 1)) if n else 0
        self.mode = data.draw(st.sampled_from(config["modes"]), label="mode")


def _draw_step(data, prog, config):
    """Draw one step and run it; False when both libraries raised."""
    step = Step(data, prog, config)
    kind = data.draw(st.sampled_from(config["kinds"]), label="kind")
    return STEPS[kind](data, prog, step)


def _pointwise_step(data, prog, step):
    name = data.draw(st.sampled_from(sorted(POINTWISE)))
    line = f"v{len(prog)} = {name}(v{step.k})"
    strides = _computed_strides(prog, [Ref(step.k)])
    return prog.run(step.mode, line, _op(POINTWISE[name], step.d), Ref(step.k), strides=strides)


def _binary_step(data, prog, step):
    o = _draw_other(data, prog, lambda s: _broadcast_small(s, step.shape))
    name = data.draw(st.sampled_from(sorted(BINARY)))
    line = f"v{len(prog)} = {name}(x=v{step.k}, y={_show(o)})"
    strides = _computed_strides(prog, [Ref(step.k), o])
    return prog.run(step.mode, line, _binary(BINARY[name]), Ref(step.k), o, strides=strides)


def _table_step(kind):
    """A step applying a reduction or a view op (``kind``)."""

    def draw(data, prog, step):
        table = REDUCE if kind == "reduce" else VIEWS
        names = [n for n, (_, ok) in table.items() if ok(step.shape)]
        name = data.draw(st.sampled_from(sorted(names)))
        line = f"v{len(prog)} = {name}(v{step.k}, d={step.d})"
        strides = _computed_strides(prog, [Ref(step.k)]) if kind == "reduce" else "real dims"
        fn = _op(table[name][0], step.d)
        made = prog.run(step.mode, line, fn, Ref(step.k), strides=strides)
        if made and kind == "view" and (step.k in prog.inference_views or "inf" in step.mode):
            prog.inference_views.add(len(prog) - 1)
        return made

    return draw


def _inplace_step(data, prog, step):
    """An in-place op on value k; then k itself (and so its views' bases) is compared."""
    k = step.k
    o = _draw_other(data, prog, lambda s: _broadcasts_to(s, step.shape))
    names = sorted(INPLACE)
    if step.x.is_inference() and "inference" not in step.mode:
        # Excluded torch quirk: torch runs an in-place kernel on an inference tensor before
        # it refuses the update outside inference_mode (see wrote_before_raising), so a
        # kernel error (int.div_(2), x.sub_(True)) comes first there: only ops whose
        # kernel accepts any x are drawn, and they meet the refusal itself.
        names = KERNEL_SAFE_INPLACE
    name = data.draw(st.sampled_from(names))
    line = f"{name}(x=v{k}, o={_show(o)})"
    if not prog.run(step.mode, line, _inplace(INPLACE[name]), Ref(k), o, new_value=False):
        return False
    seen = {
        key: call(lib, "grad", _facts, prog.values[key][k], prog.strides[k])
        for key, lib in prog.libs.items()
    }
    prog.expect_same(seen["tg"], seen["torch"], f"v{k} after")
    return True


def _hook_step(data, prog, step):
    name = data.draw(st.sampled_from(sorted(HOOKS)))
    fn = _hook(HOOKS[name], prog, step.k)
    return prog.run(step.mode, f"v{step.k}.{name}", fn, Ref(step.k), new_value=False)


STEPS = {
    "pointwise": _pointwise_step,
    "binary": _binary_step,
    "reduce": _table_step("reduce"),
    "view": _table_step("view"),
    "inplace": _inplace_step,
    "hook": _hook_step,
}


def _computed_strides(prog, operands):
    """Which strides of a pointwise or reduction result to compare: all of them when every
    tensor operand is laid out row-major; none when one is expanded (excluded, reported:
    NumPy puts a stride-0 dim innermost in a new array, torch keeps row-major order there,
    and teachgrad follows NumPy) or when two operands are not both row-major (the layout
    of such a result follows NumPy's choice: docs/differences-from-torch.md); else those of
    the dims longer than one."""
    tensors = [prog.torch_value(o.k) for o in operands if isinstance(o, Ref)]
    if all(_row_major(t) for t in tensors):
        return "all"
    if len(tensors) > 1 or any(
        s == 0 and n > 1 for t in tensors for s, n in zip(t.stride(), t.shape)
    ):
        return "none"
    return "real dims"


def _row_major(t):
    """Whether ``t`` has the strides of a fresh contiguous tensor: then torch's pointwise ops
    and reductions give results with those strides too (on other inputs, torch's choice
    for dims of size 1 follows its TensorIterator's heuristics)."""
    strides, step = [], 1
    for n in reversed(t.shape):
        strides.append(step)
        step *= max(n, 1)
    # (an empty result's strides are left out: torch's vary with the op and never matter)
    return t.numel() > 0 and tuple(t.stride()) == tuple(reversed(strides))


def _op(fn, d):
    return lambda lib, x: fn(lib, x, None, d)


def _binary(fn):
    return lambda lib, x, y: fn(lib, x, y, 0)


def _inplace(fn):
    """Run the in-place op, then return None: x itself is compared after the step."""

    def run(lib, x, o):
        fn(lib, x, o, 0)

    return run


def _hook(fn, prog, k):
    def register(lib, x):
        key = "tg" if lib is tg else "torch"
        # Excluded torch bug: register_hook() on a view whose base was changed in place since
        # the view's grad_fn was last read crashes torch 2.13 (segmentation fault), e.g.
        # s = x * 2; v = s.unsqueeze(0); s.neg_(); v.register_hook(f). Reading grad_fn first
        # rebuilds the view's history, as register_hook itself should.
        x.grad_fn  # noqa: B018
        fn(lib, x, f"v{k}", prog.logs[key])

    return register


def _show(o):
    return repr(o)


def _broadcast_small(shape, target):
    try:
        return math.prod(np.broadcast_shapes(shape, target)) <= MAX_NUMEL
    except ValueError:
        return False


def _draw_other(data, prog, fits):
    """A second operand: a value of the program that ``fits``, or a Python number."""
    refs = [Ref(j) for j in range(len(prog)) if fits(tuple(prog.torch_value(j).shape))]
    numbers = [2, -1, 0.5, 1.5, True]
    return data.draw(st.sampled_from(refs + numbers) if refs else st.sampled_from(numbers))


def _finish(lib, values, log):
    """Backpropagate a weighted sum of every value that requires grad; return the grads of
    the leaves and retained values, and the hook log."""
    loss = None
    for k, v in enumerate(values):
        if v.requires_grad:
            term = v.sum() * (1.0 / (k + 1))
            loss = term if loss is None else loss + term
    if loss is not None:
        loss.backward()
    grads = [
        numpy(v.grad) if (v.is_leaf or v.retains_grad) and v.grad is not None else None
        for v in values
    ]
    return grads, [v.retains_grad for v in values], list(log)


def _check_program(data, torch, config):
    """Draw inputs and steps per ``config``, run them, then compare every value and the
    gradients of the final loss."""
    grad_inputs = config.get("grad_inputs", False)
    inputs = _draw_inputs(data, config["dims"], config["dtypes"], config["layouts"], grad_inputs)
    prog = Program(torch, inputs)
    n_steps = data.draw(st.integers(1, config["steps"]), label="number of steps")
    for _ in range(n_steps):
        if not _draw_step(data, prog, config):
            event("a step raised (in both libraries)")
            if prog.wrote_before_raising():
                return
            break
    prog.text.append("backward of the loss")
    seen = {
        key: call(lib, "grad", _all_facts, prog.values[key], prog.strides)
        for key, lib in prog.libs.items()
    }
    prog.expect_same(seen["tg"], seen["torch"], "values at the end")
    end = {
        key: call(
            lib, "grad", lambda lib, v, log: _finish(lib, v, log), prog.values[key], prog.logs[key]
        )
        for key, lib in prog.libs.items()
    }
    prog.expect_same(end["tg"], end["torch"], "grads")
    event("backward raised" if isinstance(end["torch"], Raised) else "backward ran")
    event(f"hooks fired: {'yes' if prog.logs['torch'] else 'no'}")


def _all_facts(lib, values, strides):
    return [facts(v, how) for v, how in zip(values, strides)]


# --------------------------------------------------------------------------- the tests

SMALL_DIMS = st.integers(1, 3)
ALL_KINDS = ("pointwise", "binary", "reduce", "view", "inplace", "hook")


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_hooks_and_retain_grad(torch, data):
    """Hooks that scale, replace or only watch a gradient, removed hooks and retain_grad()
    on leaves and intermediates: the same gradients arrive, the hooks see the same grads."""
    config = dict(
        dims=SMALL_DIMS,
        dtypes=("float64",),
        layouts=("plain",),
        modes=("grad",),
        kinds=("pointwise", "binary", "view", "hook", "hook", "reduce"),
        steps=6,
        grad_inputs=True,
    )
    _check_program(data, torch, config)


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_in_place_ops_on_views(torch, data):
    """In-place ops on views of non-leaf tensors (``x[1:].mul_(2)``, ``x.t().add_(1)``)
    and on the bases of views rewrite the graph as torch's do."""
    config = dict(
        dims=SMALL_DIMS,
        dtypes=("float64",),
        layouts=("plain",),
        modes=("grad",),
        kinds=("pointwise", "view", "view", "inplace", "inplace", "hook"),
        steps=7,
    )
    _check_program(data, torch, config)


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_grad_modes_inside_programs(torch, data):
    """Steps inside no_grad, inference_mode and their mixes are not recorded; using their
    results later (in place too) is allowed or refused as torch does."""
    config = dict(
        dims=SMALL_DIMS,
        dtypes=("float64",),
        layouts=("plain",),
        modes=tuple(MODES),
        kinds=ALL_KINDS,
        steps=6,
    )
    _check_program(data, torch, config)


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_empty_and_0d_tensors(torch, data):
    """Shapes with zero-length dims and 0-d tensors go through every kind of step."""
    config = dict(
        dims=st.integers(0, 2),
        dtypes=("float64",),
        layouts=("plain",),
        modes=("grad",),
        kinds=ALL_KINDS,
        steps=5,
    )
    _check_program(data, torch, config)


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_mixed_dtypes(torch, data):
    """float32 with float64, integers with floats, and Python numbers promote as torch's
    do, in results, in-place ops and gradients."""
    config = dict(
        dims=SMALL_DIMS,
        dtypes=DTYPES,
        layouts=("plain",),
        modes=("grad",),
        kinds=("pointwise", "binary", "binary", "reduce", "inplace", "view"),
        steps=5,
    )
    _check_program(data, torch, config)


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_strided_inputs(torch, data):
    """Transposed, sliced and expanded inputs: views of them have torch's strides, and
    values and gradients match."""
    config = dict(
        dims=st.integers(1, 3),
        dtypes=("float64",),
        layouts=LAYOUTS,
        modes=("grad",),
        kinds=ALL_KINDS,
        steps=5,
    )
    _check_program(data, torch, config)


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_everything_together(torch, data):
    """All of the above in one program."""
    config = dict(
        dims=st.integers(0, 3),
        dtypes=DTYPES,
        layouts=LAYOUTS,
        modes=tuple(MODES),
        kinds=ALL_KINDS,
        steps=6,
    )
    _check_program(data, torch, config)


# --------------------------------------------------------------------------- found by the fuzzer
# Each program is a minimised mismatch the tests above found; teachgrad now answers as torch.


def _no_grad_view_in_the_loss(lib):
    x = lib.tensor(1.0, dtype=lib.float64, requires_grad=True)
    with lib.no_grad():
        v = x.flatten()
    (x * 0.5 + v.sum()).backward()  # v requires grad, but has no gradient slot: v gets nothing
    return x.grad, v.grad, v.requires_grad, v.is_leaf


def _stale_no_grad_view(read):
    def program(lib):
        x = lib.ones(2, requires_grad=True).clone()
        with lib.no_grad():
            v = x[:1]
            x.add_(1)
        if read == "requires_grad":
            return v.requires_grad  # asking is fine ...
        with lib.no_grad():
            return v.grad_fn  # ... reading the history is refused, even under no_grad

    return program


def _view_of_a_no_grad_view_changed(mode):
    def program(lib):
        x = lib.ones(2, 2, requires_grad=True).clone()
        with getattr(lib, mode)():
            v = x[0]
        v[:1].add_(1)

    return program


def _hook_of_a_view_whose_base_changed(lib):
    x = lib.ones(1, 1, dtype=lib.float64, requires_grad=True)
    v = x.t()
    v.register_hook(lambda g: g * 2)  # on v's grad_fn then; the change below gives v a new one
    with lib.no_grad():
        x.add_(1)
    (v.sum() + x.sum()).backward()
    return x.grad, v.grad_fn.name()


def _setitem(value, target_shape=()):
    def program(lib):
        x = lib.zeros(target_shape, dtype=lib.float64, requires_grad=True).clone()
        x[...] = value(lib)
        return x, x.grad_fn.name().removeprefix("torch::autograd::")

    return program


def _view_made_before_its_base_required_grad(make, read_first):
    """A view of a tensor that needs no grad; the tensor then copies one that does (now it
    has a history); then the view changes in place. torch's check sees a leaf that requires
    grad unless the view's new history was read first (fuzzer seeds 302, 303)."""

    def program(lib):
        source = lib.tensor([2.0, 3.0], dtype=lib.float64, requires_grad=True)
        base = lib.ones(2, dtype=lib.float64)
        view = make(base)
        base.copy_(source)
        if read_first:
            view.grad_fn  # noqa: B018 - reading it rebuilds the view's history
        view.add_(1)
        base.sum().backward()
        return source.grad

    return program


FOUND = {
    "a no_grad view in the loss": _no_grad_view_in_the_loss,
    "requires_grad of a stale no_grad view": _stale_no_grad_view("requires_grad"),
    "grad_fn of a stale no_grad view": _stale_no_grad_view("grad_fn"),
    "view of a no_grad view changed": _view_of_a_no_grad_view_changed("no_grad"),
    "view of an inference view changed": _view_of_a_no_grad_view_changed("inference_mode"),
    "no_grad view changed after its base": lambda lib: _changed_after_base(lib),
    "hook of a view whose base changed": _hook_of_a_view_whose_base_changed,
    "x - True": lambda lib: lib.tensor(1.0) - True,
    "True - x": lambda lib: True - lib.tensor(1.0),
    "expanded.sub_(True)": lambda lib: lib.tensor(1.0).expand(2).sub_(True),
    "mean of int": lambda lib: lib.ones(2, dtype=lib.int64).mean(),
    "add_ on an empty tensor": lambda lib: lib.zeros(0, 2).add_(1),
    "add_ on an empty expanded tensor": lambda lib: lib.zeros(0).expand(3, 0).add_(1),
    "leaf.copy_(its diagonal)": lambda lib: _leaf_copy_diagonal(lib),
    "copy_ of the same expanded data": lambda lib: _copy_same_expanded(lib),
    "y[..., -1] = y[..., -1], y expanded": lambda lib: _setitem_same_expanded(lib),
    "0-d[...] = 0-d tensor": _setitem(lambda lib: lib.tensor(1.0, dtype=lib.float64)),
    "0-d[...] = number": _setitem(lambda lib: 1.5),
    "0-d[...] = [1.]": _setitem(lambda lib: lib.ones(1, dtype=lib.float64)),
    "(3,)[...] = ones(1, 1, 3)": _setitem(lambda lib: lib.ones(1, 1, 3, dtype=lib.float64), (3,)),
    "(3,)[...] = ones(1, 2, 3)": _setitem(lambda lib: lib.ones(1, 2, 3, dtype=lib.float64), (3,)),
    "double() of an expanded view": lambda lib: lib.arange(2.0)[None].expand(2, 2).double(),
    "strides of zeros(2, 0)": lambda lib: lib.zeros(2, 0).stride(),
    "empty view of a changed base": lambda lib: _empty_view_of_changed_base(lib),
    **{
        f"{name} made before its base required grad{', read' if read else ''}": (
            _view_made_before_its_base_required_grad(make, read)
        )
        for name, make in {
            "x[:]": lambda t: t[:],
            "x.view(2)": lambda t: t.view(2),
            "x[:1].expand(2)": lambda t: t[:1].expand(2),
            "x[0]": lambda t: t[0],
        }.items()
        for read in (False, True)
    },
}


def _changed_after_base(lib):
    x = lib.ones(1, dtype=lib.float64, requires_grad=True)
    with lib.no_grad():
        v = x.expand(2, 1)
        x.add_(1)
    v.add_(1)


def _leaf_copy_diagonal(lib):
    x = lib.ones(1, 1, requires_grad=True)
    x.copy_(x.diagonal())


def _copy_same_expanded(lib):
    x = lib.ones(1, 3, dtype=lib.float64, requires_grad=True).clone()
    v = x.expand(2, 3)
    v.copy_(x.expand(2, 3))  # torch returns at once: the same elements, the same layout
    return v, v._version


def _setitem_same_expanded(lib):
    x = lib.ones(3, 4, dtype=lib.float64, requires_grad=True)
    y = (x * 1).expand(2, 3, 4)[..., ::2]
    y[..., -1] = y[..., -1]
    return y, y._version, y.grad_fn.name()


def _empty_view_of_changed_base(lib):
    x = lib.zeros(0, 1, dtype=lib.float64, requires_grad=True)
    v = x.t()
    with lib.no_grad():
        x.add_(1)
    (v.sum() + x.sum()).backward()
    return x.grad, v.grad_fn.name()


def _outcome(lib, program):
    """What ``program(lib)`` gives, as comparable facts (tensors read with :func:`facts`)."""
    out = call(lib, "grad", lambda lib: program(lib))
    if isinstance(out, Raised):
        return out
    items = out if isinstance(out, tuple | list) else [out]
    return [
        facts(v, "real dims")
        if hasattr(v, "grad_fn")
        else (repr(v).split(" object")[0] if v else v)
        for v in items
    ]


@pytest.mark.parametrize("program", FOUND.values(), ids=FOUND.keys())
def test_found_by_the_fuzzer(torch, program):
    got, want = _outcome(tg, program), _outcome(torch, program)
    if isinstance(got, Raised) != isinstance(want, Raised):
        pytest.fail(f"teachgrad {got!r}, torch {want!r}")
    assert not differences(got, want)
