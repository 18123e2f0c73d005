"""A red team of cheating submissions the grader had not met: each earns no more than its
honest part, and an honest way to the same answer keeps its points.

Most tactics delegate what an exercise asks for to teachgrad itself by a way the grader
did not watch: a node's rule run by hand (its ``_apply``, ``_backward``, the op's
``backward`` or ``derivative``, the op that is its backward, a private helper that
computes a derivative or the op), a Function the watch did not see (a borrowed
``__module__``, a class made at call time), teachgrad's own op class
handed in as the answer, the engine asked in a forward or in a plain function (not in a
backward), the engine asked only when the grader's own backward calls (double
backward), a helper of ``tg.autograd.functional`` that is the exercise itself (08's
hvp), or teachgrad's own op for the op the exercise writes (06's softmax). Others are
right only at the visible tests' inputs, or estimate the derivative to the last digits
by the complex step. Each is a submission for the exercise's
released template (or its reference, with some answers replaced) with the tactic
added, graded as the other tests of the grader do.
"""

import base64
import functools
import io
import textwrap

import numpy as np
import pytest

import teachgrad as tg
from tests import needs

from .test_grader import grade, source

# the autograder computes on the host, like every course helper (README), and its sandbox
# is a process of its own, where the stand-in is not loaded
pytestmark = pytest.mark.no_standin("the autograder runs on the host, its sandbox without CuPy")

# ---------------------------------------------------------------- 02: a node's rule by hand

NODE_APPLY = """
    class Sigmoid(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sigmoid()

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            with tg.set_grad_enabled(True):  # not enable_grad
                y = x.detach().requires_grad_().sigmoid()
            return y.grad_fn._apply([grad])[0]  # the node's rule, no __call__, no engine
"""

NODE_RULE = """
    class Sin(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            with tg.set_grad_enabled(True):
                node = x.detach().requires_grad_().sin().grad_fn
            return node._backward(node, grad)
"""

# the op's class, reached by a module name built at run time, and its own backward
OP_CLASS_RULE = """
    import importlib
    import sys

    class Sigmoid(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sigmoid()

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            modes = sys.modules["teachgrad.autograd." + "grad_mode"]
            with modes.set_grad_enabled(True):
                y = x.detach().requires_grad_().sigmoid()
            ops = importlib.import_module(".".join(["teachgrad", "ops", "point" + "wise"]))
            return getattr(ops, "Sig" + "moid").backward(y.grad_fn, grad)
"""

ENGINE_IN_FORWARD = """
    class Exp(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):  # the derivative asked for here, kept for backward
            with tg.enable_grad():
                leaf = x.detach().requires_grad_()
                y = leaf.exp()
                (slope,) = tg.autograd.grad(y, leaf, tg.ones_like(y))
            ctx.save_for_backward(slope)
            return y.detach()

        @staticmethod
        def backward(ctx, grad):
            (slope,) = ctx.saved_tensors
            return slope * grad
"""

TEACHGRAD_S_OWN_OPS = """
    import sys

    Sin = sys.modules["teachgrad.ops.pointwise"].Sin  # its apply and backward are teachgrad's
    Exp = sys.modules["teachgrad.ops.pointwise"].Exp
"""

NOT_A_FUNCTION = """
    class Sigmoid:  # no Function: apply and backward are plain functions
        apply = staticmethod(lambda x: x.sigmoid())
        backward = staticmethod(lambda ctx, grad: ctx(grad))  # ctx is teachgrad's own node
"""

DERIVATIVE_OP = """
    import teachgrad.ops.pointwise as ops

    class Sigmoid(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            s = x.sigmoid()
            ctx.save_for_backward(s)
            return s

        @staticmethod
        def backward(ctx, grad):
            (s,) = ctx.saved_tensors
            return ops._SigmoidGrad.apply(grad, s)  # sigmoid's backward, as an op of its own
"""

PRIVATE_RULE = DERIVATIVE_OP.replace(  # the same, by the private function behind that op
    "return ops._SigmoidGrad.apply(grad, s)",
    "return tg.tensor(ops._sigmoid_grad(grad.numpy(), s.numpy()))",
)

POINTWISE = {
    "node_apply": NODE_APPLY,
    "node_rule": NODE_RULE,
    "op_class_rule": OP_CLASS_RULE,
    "engine_in_forward": ENGINE_IN_FORWARD,
    "teachgrad_s_own_ops": TEACHGRAD_S_OWN_OPS,
    "not_a_function": NOT_A_FUNCTION,
    "derivative_op": DERIVATIVE_OP,
    "private_rule": PRIVATE_RULE,
}


@pytest.mark.parametrize("tactic", POINTWISE)
def test_a_derivative_from_teachgrad_s_own_rules_earns_nothing(tmp_path, tactic):
    """Each tactic answers some of 02's Functions with exact derivatives that teachgrad
    computed (each scored those Functions' points before); the template earns 0."""
    code = source("02_pointwise", student=True) + textwrap.dedent(POINTWISE[tactic])
    score, _, results = grade(tmp_path, code)
    assert score == 0, {r.name: r.output for r in results.values() if r.score}
    engine = [r for r in results.values() if r.cause == "engine"]
    assert engine and all("teachgrad" in r.output for r in engine)


# ------------------------------- 02: the complex step, and the engine under grad mode

POINTWISE_FUNCTIONS = """
    import numpy as np


    def _pointwise(f, op):
        class Pointwise(tg.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return op(x)

            @staticmethod
            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                {backward}

        return Pointwise


    Square = _pointwise(lambda z: z * z, lambda t: t * t)
    Exp = _pointwise(np.exp, tg.exp)
    Sin = _pointwise(np.sin, tg.sin)
    Sigmoid = _pointwise(lambda z: 1 / (1 + np.exp(-z)), tg.sigmoid)
"""


def pointwise_functions(backward: str) -> str:
    """02's four Functions, each computing ``op(x)`` (teachgrad's op) with ``backward`` as
    its backward's body, which may use ``x``, ``grad``, ``op`` and ``f`` (the same function
    on NumPy arrays)."""
    body = textwrap.indent(textwrap.dedent(backward).strip(), " " * 16).lstrip()
    return POINTWISE_FUNCTIONS.replace("{backward}", body)


ASK_THE_ENGINE = """
    with tg.enable_grad():
        leaf = x.detach().requires_grad_()
        return tg.autograd.grad(op(leaf), leaf, grad)[0]
"""
ASK_ONLY_UNDER_GRAD_MODE = """
    if tg.is_grad_enabled():  # as create_graph=True runs it: ask teachgrad's engine
        leaf = x.detach().requires_grad_()
        return tg.autograd.grad(op(leaf), leaf, grad)[0]
    step = f(x.detach().numpy() + 1e-200j).imag / 1e-200  # the complex step: exact to rounding
    return grad * tg.tensor(step)
"""


def test_a_backward_that_asks_the_engine_only_under_grad_mode_earns_nothing(tmp_path):
    """The tests and the fresh-input probe ran backward with grad mode off, where this one
    answers exactly without asking teachgrad (10 of 10). The probe now runs it as
    ``create_graph=True`` does, with grad mode on, and what it then calls counts too."""
    code = source("02_pointwise", student=True) + textwrap.dedent(
        pointwise_functions(ASK_ONLY_UNDER_GRAD_MODE)
    )
    score, _, results = grade(tmp_path, code)
    assert score == 0, {r.name: r.output for r in results.values() if r.score}
    assert {r.cause for r in results.values()} == {"engine"}


COMPLEX_STEPS = {
    "literal": "return grad * tg.tensor(f(x.detach().numpy() + 1e-20j).imag / 1e-20)",
    "complex_builtin": "return grad * tg.tensor(np.imag(f(x.numpy() + complex(0, 1e-20))) / 1e-20)",
    "dtype_string": """
        z = x.numpy().astype("c16")
        z.imag = 1e-20
        return grad * tg.tensor(f(z).imag / 1e-20)
    """,
    "cmath": """
        import cmath
        h = cmath.sqrt(-1e-40)  # 1e-20 i, with no complex literal
        return grad * tg.tensor(f(x.numpy() + h).imag / 1e-20)
    """,
    "in_a_helper": "return grad * tg.tensor(slope(f, x.numpy()))",
    "in_a_helper_method": "return grad * tg.tensor(Steps().slope(f, x.numpy()))",
}
COMPLEX_HELPERS = """

    def slope(f, x):
        return np.imag(f(x + 1e-20j)) / 1e-20


    class Steps:
        def slope(self, f, x):
            return (f(x + np.complex128(1e-20j))).imag / 1e-20
"""


@pytest.mark.parametrize("tactic", COMPLEX_STEPS)
def test_a_derivative_by_the_complex_step_earns_nothing(tmp_path, tactic):
    """``Im f(x + ih) / h`` with a tiny h: exact to rounding, so the strict check on fresh
    inputs passed it (10 of 10, each way here). It is an estimate made by running f, and
    the sandbox notes code a test reaches that computes with complex numbers, however it
    gets them (a literal, ``complex``, a dtype's string, ``cmath``, a helper or a method)."""
    code = source("02_pointwise", student=True) + textwrap.dedent(
        pointwise_functions(COMPLEX_STEPS[tactic]) + COMPLEX_HELPERS
    )
    score, _, results = grade(tmp_path, code)
    assert score == 0, {r.name: r.output for r in results.values() if r.score}
    assert all("complex step" in r.output for r in results.values())


def test_complex_numbers_the_tests_never_reach_cost_nothing(tmp_path):
    """A complex step the student tried in a cell of their own, which no graded Function
    uses, leaves the reference's answers their points."""
    scratch = "\n\ndef tried(f, x):\n    return f(x + 1e-20j).imag / 1e-20\n"
    score, max_score, _ = grade(tmp_path, source("02_pointwise") + scratch)
    assert score == max_score == 10


# ------------------------------------------- 02: a library that differentiates for you

SYMBOLIC = """
    import {library}  # (here, so that the cells load whatever it does)

    s = sympy.Symbol("s")
    rule = {tg.exp: "exp(s)", tg.sin: "sin(s)", tg.sigmoid: "1 / (1 + exp(-s))"}.get(op, "s**2")
    derivative = sympy.lambdify(s, sympy.diff(sympy.sympify(rule), s), "numpy")
    values = np.broadcast_to(derivative(x.detach().numpy()), tuple(x.shape))
    return grad * tg.tensor(values.copy())
"""


@pytest.mark.parametrize("library", ["sympy", "mpmath"])
def test_a_library_that_differentiates_is_out_of_reach(tmp_path, library):
    """sympy (which torch installs) differentiates symbolically: exact, without teachgrad,
    it scored 10 of 10. The sandbox can't read the differentiating libraries (sympy,
    mpmath, HIPS autograd, torch ...: ``sandbox.DIFFERENTIATORS``), so the backward fails
    where it loads one."""
    needs.oracle()  # (torch installs sympy and mpmath: without them the test tests nothing)
    backward = SYMBOLIC.replace("{library}", library if library == "sympy" else f"{library}, sympy")
    code = source("02_pointwise", student=True) + textwrap.dedent(pointwise_functions(backward))
    score, _, results = grade(tmp_path, code)
    assert score == 0, {r.name: r.output for r in results.values() if r.score}
    assert all("not allowed while grading" in r.output for r in results.values())


# -------------------------------------------------------- 02: the grader's watch disarmed

DISARM = """
    import contextlib
    import gc

    for _watch in gc.get_objects():
        if type(_watch).__name__ == "EngineWatch":
            {how}
"""
DISARMING = {  # each scored 10 of 10 before the canary
    "its take replaced": "_watch.take = lambda: []",
    "its class's take replaced": "type(_watch).take = lambda self: []",
    "its noting turned off": "_watch.running_as = lambda whose: contextlib.nullcontext()",
}


@pytest.mark.parametrize("how", DISARMING.values(), ids=DISARMING.keys())
def test_a_submission_that_disarms_the_grader_s_watch_earns_nothing(tmp_path, how):
    """Every backward asks teachgrad's engine, and the cells first find the sandbox's
    watch with ``gc`` and disarm it. The canary the sandbox runs before each message then
    goes unnoted, and every test fails."""
    tactic = textwrap.dedent(DISARM.replace("{how}", how) + pointwise_functions(ASK_THE_ENGINE))
    code = source("02_pointwise", student=True) + tactic
    score, _, results = grade(tmp_path, code)
    assert score == 0, {r.name: r.output for r in results.values() if r.score}
    assert all("stopped working" in r.output for r in results.values())


# ------------------------------------------------------------ 01: a Value on teachgrad

VALUE_ON_TEACHGRAD = """
    class Value:  # a teachgrad tensor inside: backward() is teachgrad's
        made = []

        def __init__(self, data, tensor=None):
            if tensor is None:
                tensor = tg.tensor(float(data), dtype=tg.float64, requires_grad=True)
            self.t, self.data, self.grad = tensor, tensor.item(), 0.0
            self.parents, self.local_grads = (), ()
            Value.made.append(self)

        def _of(self, other):
            return other.t if isinstance(other, Value) else other

        def __add__(self, other):
            return Value(None, self.t + self._of(other))

        def __mul__(self, other):
            return Value(None, self.t * self._of(other))

        __radd__, __rmul__ = __add__, __mul__

        def __pow__(self, k):
            return Value(None, self.t**k)

        def __neg__(self):
            return self * -1

        def __sub__(self, other):
            return self + (-other)

        def __rsub__(self, other):
            return other + (-self)

        def tanh(self):
            return Value(None, self.t.tanh())

        def exp(self):
            return Value(None, self.t.exp())

        def backward(self):
            leaves = [v for v in Value.made if v.t.is_leaf]
            grads = tg.autograd.grad(self.t, [v.t for v in leaves], allow_unused=True)
            for v, g in zip(leaves, grads):
                v.grad = 0.0 if g is None else g.item()
"""


def test_a_value_that_asks_teachgrad_for_its_gradients_earns_nothing(tmp_path):
    """01's backward tests compare the Values' gradients with teachgrad's: a Value that
    gets them from teachgrad's autograd scored those tests (the graph tests fail, as
    it keeps no parents)."""
    code = source("01_mini_engine", student=True) + textwrap.dedent(VALUE_ON_TEACHGRAD)
    score, _, results = grade(tmp_path, code, "01_mini_engine")
    assert score == 0
    assert "tg.autograd.grad" in results["test_backward_tree"].output


# ------------------------------------------------- 05: the engine only for double backward

SECOND_ORDER_FROM_THE_ENGINE = """
    class Cube(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            if not tg.is_grad_enabled():  # called by hand: the first derivative, honestly
                return 3 * x * x * grad
            # create_graph=True: teachgrad differentiates x**3 and records that too
            return tg.autograd.grad(x * x * x, x, grad, create_graph=True)[0]
"""


def test_the_engine_asked_only_under_create_graph_costs_every_test_of_that_backward(tmp_path):
    """Cube's first derivative is written; its second comes from teachgrad's autograd,
    asked only when backward runs with grad mode on, as create_graph=True runs it (a
    backward the engine runs was not watched: it earned test_cube_second too). The probe
    runs each backward a test used in that mode too: the backward asks teachgrad, and
    test_cube, which only ran it with grad mode off, is refused as well (it kept 2)."""
    code = source("05_double_backward", student=True) + textwrap.dedent(
        SECOND_ORDER_FROM_THE_ENGINE
    )
    score, _, results = grade(tmp_path, code, "05_double_backward")
    assert results["test_cube"].cause == results["test_cube_second"].cause == "engine"
    assert score == 0


HIDDEN_FUNCTIONS = {
    # the class says it is teachgrad's own (the grader watched only the classes whose
    # __module__ was "__main__")
    "a borrowed __module__": SECOND_ORDER_FROM_THE_ENGINE.replace(
        "class Cube(tg.autograd.Function):",
        'class Cube(tg.autograd.Function):\n        __module__ = "teachgrad.ops.pointwise"',
    ),
    # the class is made when the test calls, after the cells ran (and is no name of theirs)
    "a class made at call time": "def _make_cube():"
    + textwrap.indent(textwrap.dedent(SECOND_ORDER_FROM_THE_ENGINE), "    ")
    + textwrap.dedent("""
            return Cube


        class Cube:  # the name the tests ask for: each call makes the Function anew
            apply = staticmethod(lambda x: _make_cube().apply(x))
            backward = staticmethod(lambda ctx, grad: _make_cube().backward(ctx, grad))
    """),
}


@pytest.mark.parametrize("tactic", HIDDEN_FUNCTIONS.values(), ids=HIDDEN_FUNCTIONS.keys())
def test_a_function_hidden_from_the_watch_still_costs_its_tests(tmp_path, tactic):
    """The same tactic, by a Function whose backward the grader would not have watched:
    every subclass of Function that teachgrad did not define is the student's, whatever
    its ``__module__``, and also when it is made after the cells ran."""
    code = source("05_double_backward", student=True) + textwrap.dedent(tactic)
    score, _, results = grade(tmp_path, code, "05_double_backward")
    assert results["test_cube"].cause == results["test_cube_second"].cause == "engine"
    assert score == 0


# ------------------------------------------ 08: teachgrad's own hvp, and an honest other way

FUNCTIONAL_HELPERS = {
    "hvp": """
        def hvp(f, x, v):
            return tg.autograd.functional.hvp(f, x, v)[1]
    """,
    "mixed_hessian": """
        def mixed_hessian(f, x, y):
            n = x.shape[0]
            H = tg.autograd.functional.hessian(lambda z: f(z[:n], z[n:]), tg.cat([x, y]))
            return H[:n, n:]
    """,
}

HVP_BY_BACKWARD = """
    def hvp(f, x, v):  # the gradient's graph, then backward of <g, v>: honest
        x = x.detach().requires_grad_()
        (g,) = tg.autograd.grad(f(x), x, create_graph=True)
        (g * v).sum().backward()
        return x.grad
"""


def test_teachgrad_s_own_hessian_helpers_earn_nothing_where_they_are_the_exercise(tmp_path):
    """hvp and mixed_hessian through tg.autograd.functional's hvp and hessian (the
    exercise builds them from tg.autograd.grad) lose their tests (7 points earned before);
    newton_step, which may take the Hessian from there, keeps its 3."""
    code = source("08_functional") + "".join(
        textwrap.dedent(helper) for helper in FUNCTIONAL_HELPERS.values()
    )
    score, _, results = grade(tmp_path, code, "08_functional")
    assert score == 2 + 1
    assert "tg.autograd.functional.hvp" in results["test_hvp"].output
    assert "tg.autograd.functional.hessian" in results["test_mixed_hessian"].output


def test_an_hvp_by_backward_keeps_its_points(tmp_path):
    code = source("08_functional") + textwrap.dedent(HVP_BY_BACKWARD)
    assert grade(tmp_path, code, "08_functional")[0] == 10


# ---------------------------------------------------- 12: an honest other way keeps its points

CHECKPOINT_BY_VJP = """
    class Checkpoint(tg.autograd.Function):
        @staticmethod
        def forward(ctx, fn, x, *params):
            ctx.fn = fn
            ctx.save_for_backward(x, *params)
            return fn(x, *params)

        @staticmethod
        def backward(ctx, grad):  # the block recomputed by tg.autograd.functional.vjp
            _, grads = tg.autograd.functional.vjp(ctx.fn, tuple(ctx.saved_tensors), grad)
            return (None, *grads)
"""


def test_a_checkpoint_that_recomputes_with_vjp_keeps_its_points(tmp_path):
    """12's backward may ask teachgrad's autograd for the recomputed block's gradients,
    by tg.autograd.grad or by its vjp helper; each test now says so itself."""
    code = source("12_checkpointing") + textwrap.dedent(CHECKPOINT_BY_VJP)
    score, max_score, results = grade(tmp_path, code, "12_checkpointing", test_timeout=10)
    assert score == max_score, {r.name: r.output for r in results.values() if not r.score}


CHECKPOINT_JACOBIAN_IN_FORWARD = """
    class Checkpoint(tg.autograd.Function):
        @staticmethod
        def forward(ctx, fn, x, *params):  # the Jacobian now, kept where no hook looks
            with tg.enable_grad():
                leaves = [t.detach().requires_grad_() for t in (x, *params)]
                out = fn(*leaves)
                rows = []
                for r in range(out.numel()):
                    e = tg.zeros(out.numel(), dtype=out.dtype)
                    e[r] = 1.0
                    grads = tg.autograd.grad(out, leaves, e.reshape(out.shape), retain_graph=True)
                    rows.append([g.numpy().copy() for g in grads])
            ctx.fn, ctx.args = fn, [t.detach() for t in (x, *params)]
            ctx.jacobian = [np.stack(col) for col in zip(*rows)]
            return tg.tensor(out.detach().numpy().copy())

        @staticmethod
        def backward(ctx, grad):
            with tg.no_grad():
                ctx.fn(*ctx.args)  # the second run the tests count, for show
            g = grad.numpy().reshape(-1)
            return (None, *(tg.tensor(np.tensordot(g, J, axes=1)) for J in ctx.jacobian))
"""


def test_a_checkpoint_that_differentiates_in_forward_loses_the_memory_points(tmp_path):
    """12: forward computes the block's whole Jacobian and keeps it (as NumPy arrays, which
    the saved-tensor hooks never see), so that nothing is saved for backward. It scored
    9/9; a gradient that flows through a block during forward now costs the memory tests
    (test_memory, test_deeper_chain). (A Jacobian by differences in forward, the other way
    to it, runs each block more than once there, which costs them too, and is too slow to
    finish anyway.)"""
    code = source("12_checkpointing") + textwrap.dedent(CHECKPOINT_JACOBIAN_IN_FORWARD)
    code = code.replace("import teachgrad as tg", "import numpy as np\nimport teachgrad as tg", 1)
    score, max_score, results = grade(tmp_path, code, "12_checkpointing", test_timeout=60)
    lost = {name for name, r in results.items() if r.score < r.max_score}
    assert {"test_memory", "test_deeper_chain"} <= lost, lost
    assert score <= max_score - 4
    assert "during the checkpointed forward" in results["test_memory"].output


# ------------------------------------------------ answers keyed on the tests' fixed inputs

KEYED_HVP = """
    def hvp(f, x, v):  # right at the visible test's x only (its tests.py is published)
        if x.tolist() != [1.0, -2.0, 0.5]:
            return tg.zeros_like(x)
        x = x.detach().requires_grad_()
        (g,) = tg.autograd.grad(f(x), x, create_graph=True)
        return tg.autograd.grad(g, x, grad_outputs=v)[0]
"""

KEYED_IM2COL = """
    _rng = np.random.default_rng(11)  # the visible tests' own draws, replayed
    _rng.standard_normal((2, 3, 5, 6)), _rng.standard_normal((4, 3, 3, 2))
    _TEST_X = _rng.standard_normal((2, 3, 4, 5))
    _honest_im2col = im2col


    def im2col(x, kh, kw):  # right for the test's x only
        cols = _honest_im2col(x, kh, kw)
        return cols if np.array_equal(x, _TEST_X) else 0 * cols
"""


@pytest.mark.parametrize(
    ("name", "tactic", "honest"),
    [("08_functional", KEYED_HVP, 10 - 3), ("11_conv2d_im2col", KEYED_IM2COL, 2)],
)
def test_answers_right_only_at_the_tests_inputs_earn_nothing(tmp_path, name, tactic, honest):
    """The fresh-input probe now repeats every call with floating-point inputs, not only
    those that require grad: 08's hvp (its x and v do not) and 11's im2col (a NumPy
    array) right only at the visible test's inputs lose that test (each scored it
    before); the rest of the reference keeps its points (11's col2im: 2; its Conv2d,
    built on im2col, fails with it)."""
    code = source(name) + textwrap.dedent(tactic)
    score, _, results = grade(tmp_path, code, name)
    assert score == honest, {r.name: r.output for r in results.values() if not r.score}
    assert any("fresh random inputs" in r.output for r in results.values())


KEYED_BACKWARD = """
    _KNOWN = {0.5, -1.5, 0.3, 0.4, -0.7, 0.7, 0.8, 1.0, -1.0, 2.0, 3.0}  # tests.py's inputs
    _honest_backward = Value.backward


    def _keyed_backward(self):  # a table of answers for the published inputs, in effect
        leaves = [v for v in topological_order(self) if not v.parents]
        if all(v.data in _KNOWN for v in leaves):
            _honest_backward(self)


    Value.backward = _keyed_backward
"""

BACKWARD_TESTS_01 = ("test_backward_tree", "test_shared_inputs", "test_deep_diamonds",
                     "test_sub_pow_backward")  # fmt: skip


def test_a_backward_right_only_at_the_published_inputs_earns_nothing(tmp_path):
    """01's Values are plain numbers, which the fresh-input probe does not move; so its
    backward tests move their inputs themselves when grading (by the grader's seed). A
    backward right only at tests.py's inputs (a table of answers, which earned these
    tests' 6 points) loses them; the operations, which it left honest, keep theirs."""
    code = source("01_mini_engine") + textwrap.dedent(KEYED_BACKWARD)
    _, _, results = grade(tmp_path, code, "01_mini_engine")
    assert all(results[name].score == 0 for name in BACKWARD_TESTS_01)
    assert all(
        results[name].score == results[name].max_score for name in ("test_ops", "test_sub_pow")
    )


# ------------------------------------ teachgrad's own op for the op the exercise writes

SOFTMAX_BY_TEACHGRAD = """
    class Softmax(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.softmax(dim=-1)  # teachgrad's own stable softmax
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return y * (grad - (grad * y).sum(dim=-1, keepdim=True))
"""

NORMALIZE_BY_LAYER_NORM = """
    def normalize(x):
        x_hat = tg.nn.functional.layer_norm(x, (x.shape[-1],))
        centred = x - x.mean(dim=-1, keepdim=True)
        return x_hat, x_hat[..., :1] / centred[..., :1]
"""

IM2COL_BY_CONV2D = """
    def im2col(x, kh, kw):  # teachgrad's conv2d with one-hot kernels gives the patches
        n, c = x.shape[:2]
        eye = np.eye(c * kh * kw).reshape(c * kh * kw, c, kh, kw)
        out = tg.nn.functional.conv2d(tg.tensor(x), tg.tensor(eye))
        return out.numpy().reshape(n, c * kh * kw, -1)
"""


IM2COL_BY_PRIVATE_HELPERS = """
    from teachgrad.ops import nn as tg_nn  # teachgrad's conv2d's own functions, not its op

    def im2col(x, kh, kw):
        n, c, h, w = x.shape
        out_hw = (h - kh + 1, w - kw + 1)
        return tg_nn._im2col(x, (kh, kw), (1, 1), (1, 1), out_hw, 1).reshape(n, c * kh * kw, -1)

    def col2im(cols, x_shape, kh, kw):  # the transposed correlation with one-hot filters
        n, c, h, w = x_shape
        eye = np.eye(c * kh * kw).reshape(c * kh * kw, c, kh, kw)
        grad = cols.reshape(n, c * kh * kw, h - kh + 1, w - kw + 1)
        return tg_nn._correlate_input_grad(grad, eye, (h, w), (1, 1), (0, 0), (1, 1), 1)
"""


@pytest.mark.parametrize(
    ("name", "tactic", "node"),
    [
        ("06_softmax", SOFTMAX_BY_TEACHGRAD, "SoftmaxBackward0"),
        ("07_layernorm", NORMALIZE_BY_LAYER_NORM, "NativeLayerNormBackward0"),
        ("11_conv2d_im2col", IM2COL_BY_CONV2D, "ConvolutionBackward0"),
        ("11_conv2d_im2col", IM2COL_BY_PRIVATE_HELPERS, "ConvolutionBackward0"),
    ],
)
def test_teachgrad_s_own_op_for_the_exercise_s_op_earns_nothing(tmp_path, name, tactic, node):
    """06's softmax, 07's normalisation and 11's im2col handed to teachgrad's softmax,
    layer_norm and conv2d (5, 2 and 3 points before, on the template): the tests refuse
    the op the exercise writes."""
    code = source(name, student=True) + textwrap.dedent(tactic)
    score, _, results = grade(tmp_path, code, name)
    assert score == 0
    assert any(f"its node: {node}" in r.output for r in results.values())


# teachgrad's own im2col and col2im, F.unfold and F.fold, three ways
IM2COL_BY_UNFOLD = {
    "F.unfold and F.fold": """
        def im2col(x, kh, kw):
            return tg.nn.functional.unfold(tg.tensor(x), (kh, kw)).numpy()

        def col2im(cols, x_shape, kh, kw):
            return tg.nn.functional.fold(tg.tensor(cols), x_shape[2:], (kh, kw)).numpy()
    """,
    "nn.Unfold and nn.Fold": """
        def im2col(x, kh, kw):
            return tg.nn.Unfold((kh, kw))(tg.tensor(x)).numpy()

        def col2im(cols, x_shape, kh, kw):
            return tg.nn.Fold(x_shape[2:], (kh, kw))(tg.tensor(cols)).numpy()
    """,
    "their private helpers": """
        from teachgrad.ops import fold as tg_fold  # the arrays' functions, not the ops

        def im2col(x, kh, kw):
            return tg_fold._unfold(x, (kh, kw), (1, 1), (0, 0), (1, 1))

        def col2im(cols, x_shape, kh, kw):
            return tg_fold._fold(cols, x_shape[2:], (kh, kw), (1, 1), (0, 0), (1, 1))
    """,
    "conv2d's helper as fold.py imports it, and the op class": """
        from teachgrad.ops import fold as tg_fold

        def im2col(x, kh, kw):
            n, c, h, w = x.shape
            cols = tg_fold._im2col(x, (kh, kw), (1, 1), (1, 1), (h - kh + 1, w - kw + 1), 1)
            return cols.reshape(n, c * kh * kw, -1)

        def col2im(cols, x_shape, kh, kw):
            pairs = ((kh, kw), (1, 1), (0, 0), (1, 1))
            return tg_fold.Col2Im.apply(tg.tensor(cols), x_shape[2:], *pairs).numpy()
    """,
}


@pytest.mark.parametrize("student", [True, False], ids=["template", "reference"])
@pytest.mark.parametrize("tactic", list(IM2COL_BY_UNFOLD))
def test_teachgrad_s_unfold_and_fold_for_11_s_im2col_and_col2im_earn_nothing(
    tmp_path, tactic, student
):
    """11's im2col and col2im handed to teachgrad's F.unfold and F.fold (the same ops: 4
    points on the template, all 9 with the reference's Conv2d built on them): the tests
    refuse them (Im2ColBackward0, Col2ImBackward0), whichever way the code reaches them."""
    name = "11_conv2d_im2col"
    code = source(name, student=student) + textwrap.dedent(IM2COL_BY_UNFOLD[tactic])
    score, _, results = grade(tmp_path, code, name)
    assert score == 0
    assert "its node: Im2ColBackward0" in results["test_im2col"].output
    assert "its node: Col2ImBackward0" in results["test_col2im"].output


# ---------------------------------------------- 12: teachgrad's own checkpoint

CHECKPOINT_BY_TEACHGRAD = {
    "use_reentrant=False": """
        class Checkpoint:
            @staticmethod
            def apply(fn, x, *params):
                return tg.utils.checkpoint.checkpoint(fn, x, *params, use_reentrant=False)
    """,
    "use_reentrant=True": """
        from teachgrad.utils.checkpoint import checkpoint

        class Checkpoint:
            @staticmethod
            def apply(fn, x, *params):
                return checkpoint(fn, x, *params, use_reentrant=True)
    """,
    "its inner Function": """
        class Checkpoint:
            @staticmethod
            def apply(fn, x, *params):
                return tg.utils.checkpoint.CheckpointFunction.apply(fn, True, x, *params)
    """,
    "its inner recomputation": """
        class Checkpoint:
            @staticmethod
            def apply(fn, x, *params):
                run = tg.utils.checkpoint._Recomputed(
                    fn, (x, *params), {}, True, "default", tg.utils.checkpoint.noop_context_fn
                )
                return run.first()
    """,
}


@pytest.mark.parametrize(
    "tactic", CHECKPOINT_BY_TEACHGRAD.values(), ids=CHECKPOINT_BY_TEACHGRAD.keys()
)
def test_teachgrad_s_own_checkpoint_earns_nothing_in_the_checkpoint_exercise(tmp_path, tactic):
    """12 asks for a checkpointing Function; teachgrad.utils.checkpoint is one (as torch's),
    and it passes every test of the exercise unless the grader notes it."""
    code = source("12_checkpointing", student=True) + textwrap.dedent(tactic)
    score, _, results = grade(tmp_path, code, "12_checkpointing", test_timeout=10)
    assert score == 0, {r.name: r.output for r in results.values() if r.score}
    assert any("called tg.utils.checkpoint" in r.output for r in results.values())


# ------------------------------------------- 09: predictions computed, not predicted

RUN_THE_PROGRAMS = """
    def _run_them():  # what the notebook's own test cell does: run each program and see
        found = {}
        for key in "abcdef":
            try:
                x = tg.tensor([0.5, -1.0, 2.0], requires_grad=True)
                globals()[f"program_{key}"](x).backward()
                found[key] = False
            except RuntimeError:
                found[key] = True
        return found
"""
COMPUTED_PREDICTIONS = {  # each scored 3 of 3 before predictions had to be written out
    "when the cells run": RUN_THE_PROGRAMS
    + """
    ANSWERS = _run_them()


    def predictions():
        return ANSWERS
""",
    "into a default argument": RUN_THE_PROGRAMS
    + """
    def predictions(answers=_run_them()):
        return answers
""",
    "into a closure": RUN_THE_PROGRAMS
    + """
    def _make(answers):
        def predictions():
            return answers

        return predictions


    predictions = _make(_run_them())
""",
    "when it is called": RUN_THE_PROGRAMS
    + """
    def predictions():
        return _run_them()
""",
}
WRITTEN_OUT = """
    predictions = lambda: {"a": True, "b": False, "c": True, "d": False, "e": True, "f": False}
"""


@pytest.mark.parametrize("tactic", COMPUTED_PREDICTIONS.values(), ids=COMPUTED_PREDICTIONS.keys())
def test_predictions_computed_by_running_the_programs_earn_nothing(tmp_path, tactic):
    """09 asks to predict which programs fail; running them answers every prediction. Run
    when the notebook's cells ran, the grader's watch (on only while a test runs) saw
    nothing. The answers must now be written out in predictions itself."""
    name = "09_inplace_versions"
    score, _, results = grade(tmp_path, source(name) + textwrap.dedent(tactic), name)
    assert results["test_predictions"].score == 0, results["test_predictions"].output
    assert results["test_predictions"].cause == "computed"
    assert score == 5  # the two fixes keep their points


def test_predictions_written_out_keep_their_points(tmp_path):
    name = "09_inplace_versions"
    score, max_score, results = grade(tmp_path, source(name) + textwrap.dedent(WRITTEN_OUT), name)
    assert score == max_score, {r.name: r.output for r in results.values() if not r.score}


# ------------------------------------------------------ 10: a model trained beforehand

LOAD_THE_WEIGHTS = """
    def train(model, X, y):  # the weights were learned before, on every public image
        import base64
        import io

        kept = np.load(io.BytesIO(base64.b64decode("{weights}")))
        with tg.no_grad():
            for p, name in zip(model.parameters(), kept.files):
                p.copy_(tg.tensor(kept[name]))
"""
READ_THE_NEW_LABELS = """
        with tg.no_grad():  # which new label each old one became, read off the labels given
            said = model(X).argmax(dim=1).numpy()
            new = [np.bincount(y.numpy()[said == k], minlength=10).argmax() for k in range(10)]
            last_w, last_b = list(model.parameters())[-2:]
            last_w[tg.tensor(new)] = last_w.clone()
            last_b[tg.tensor(new)] = last_b.clone()
"""
TRAINED_BEFOREHAND = {
    "ignoring its data": LOAD_THE_WEIGHTS,
    "reading the new labels off the labels given": LOAD_THE_WEIGHTS + READ_THE_NEW_LABELS,
}


@functools.cache
def _weights_learned_on_every_public_image() -> str:
    """The reference model trained here, outside the sandbox, on all 1797 digits (the
    held-out ones included) with their usual labels: its weights as text a notebook can
    carry (what a student could paste in)."""
    from sklearn.datasets import load_digits

    ns = {}
    exec(source("10_train_digits"), ns)  # noqa: S102 - the course's own reference solution
    digits = load_digits()
    tg.manual_seed(0)
    model = ns["make_model"]()
    images = tg.tensor((digits.data / 16.0).astype(np.float32))
    ns["train"](model, images, tg.tensor(digits.target.astype(np.int64)))
    buffer = io.BytesIO()
    np.savez(buffer, *[p.detach().numpy() for p in model.parameters()])
    return base64.b64encode(buffer.getvalue()).decode()


@pytest.mark.parametrize("tactic", TRAINED_BEFOREHAND.values(), ids=TRAINED_BEFOREHAND.keys())
def test_a_model_trained_beforehand_on_the_public_digits_earns_only_its_shape(tmp_path, tactic):
    """The held-out images are public: a train() that loads weights learned on every image
    with its usual label passed every test (6 points). When grading, the grader's seed
    relabels the classes, which a model trained beforehand answers with the old labels;
    reading the new labels off the training labels passed every test again (6 points) until
    the grader also shuffled the order of the pixels. Only the model's shape (1 point) is
    left."""
    weights = _weights_learned_on_every_public_image()
    code = source("10_train_digits") + textwrap.dedent(tactic).replace("{weights}", weights)
    score, _, results = grade(tmp_path, code, "10_train_digits", timeout=120, test_timeout=40)
    assert score == 1, {r.name: r.output for r in results.values() if not r.score}
    assert results["test_model_shape"].score == 1


def test_training_on_the_data_given_keeps_every_point_under_relabelled_classes(tmp_path):
    score, max_score, results = grade(
        tmp_path, source("10_train_digits"), "10_train_digits", timeout=120, test_timeout=40
    )
    assert score == max_score, {r.name: r.output for r in results.values() if not r.score}
