"""Each exercise's graded tests: full marks for the reference solution, nothing for the
untouched template, and the expected partial marks and diagnosis for realistic bugs."""

import json

import pytest

from course import exercises
from course.check import check

from .conftest import NAMES, definitions

# (exercise, (old, new) edit of the reference solution or a list of such edits, failing
# tests, diagnosed cause)
BUGS = [
    (
        "02_pointwise",
        ("return 2 * x * grad", "return x * grad"),
        {"test_square", "test_other_shapes"},
        "factor_of_2",
    ),
    (
        "02_pointwise",
        ("return x.cos() * grad", "return -x.cos() * grad"),
        {"test_sin", "test_other_shapes"},
        "sign",
    ),
    (
        "02_pointwise",  # the chain rule forgotten: backward returns the local derivative 2x
        ("return 2 * x * grad", "return 2 * x"),
        {"test_square", "test_other_shapes"},
        "forgot_grad",
    ),
    (
        "02_pointwise",  # forward saves the input x, but s (1 - s) is written with the output s
        ("ctx.save_for_backward(s)", "ctx.save_for_backward(x)"),
        {"test_sigmoid", "test_other_shapes"},
        "saved_tensor",
    ),
    (
        "03_broadcasting",
        ("return unbroadcast(grad, a_shape), unbroadcast(grad, b_shape)", "return grad, grad"),
        {"test_add_broadcast", "test_both_broadcast"},
        "unbroadcast",
    ),
    (
        "03_broadcasting",
        (
            "unbroadcast(grad * b, a.shape), unbroadcast(grad * a, b.shape)",
            "unbroadcast(grad * a, a.shape), unbroadcast(grad * b, b.shape)",
        ),
        {"test_mul_same_shape", "test_mul_broadcast", "test_both_broadcast"},
        "swapped",
    ),  # fmt: skip
    (
        "03_broadcasting",  # no None for dim: the engine wants one gradient per argument
        ("return grad.expand(*ctx.shape), None", "return grad.expand(*ctx.shape)"),
        {"test_sum_dims"},
        "wrong_count",
    ),
    (
        "04_linear",
        ("A.T @ grad", "grad.T @ A"),
        {"test_matmul", "test_matmul_square", "test_one_sample"},
        "transposed",
    ),
    ("04_linear", ("grad.sum(dim=0)", "grad"), {"test_linear", "test_one_sample"}, "unbroadcast"),
    (
        "04_linear",  # dA = grad @ B, not grad @ B^T: it runs only where B is square
        ("grad @ B.T, A.T @ grad", "grad @ B, A.T @ grad"),
        {"test_matmul", "test_matmul_square", "test_one_sample"},
        "transpose_missing",
    ),
    (
        "06_softmax",  # no max subtraction: exp(1000) overflows
        ("z = x - x.max(dim=-1, keepdim=True).values", "z = x"),
        {"test_softmax_large_logits"},
        "overflow",
    ),
    (
        "06_softmax",  # only the diagonal of the Jacobian: the - y_i y_j term is missing
        ("y * (grad - (grad * y).sum(dim=-1, keepdim=True))", "y * grad"),
        {"test_softmax", "test_softmax_large_logits", "test_second_order"},
        "wrong_values",
    ),
    (
        "06_softmax",  # the mean's 1/N forgotten in backward: N = 4 times too large
        ("(p - onehot) * grad / n", "(p - onehot) * grad"),
        {"test_cross_entropy"},
        "scaled",
    ),
    ("08_functional", ("return hv", "return g.detach()"), {"test_hvp"}, "first_order"),
    (
        "08_functional",  # rows stacked as columns: the (y, x) block, A^T on a non-symmetric A
        ("tg.stack(rows)", "tg.stack(rows, dim=1)"),
        {"test_mixed_hessian", "test_mixed_hessian_rectangular"},
        "transposed",
    ),
    (
        "07_layernorm",  # the variance's term of dx forgotten
        (" - x_hat * (d_hat * x_hat).mean(dim=-1, keepdim=True)", ""),
        {"test_backward", "test_one_sample_many_features"},
        "wrong_values",
    ),
    (
        "07_layernorm",  # dw not summed over the batch
        ("(grad * x_hat).sum(dim=0)", "grad * x_hat"),
        {"test_backward", "test_one_sample_many_features"},
        "unbroadcast",
    ),
    (
        "07_layernorm",  # db not summed over the batch either
        ("grad.sum(dim=0)", "grad"),
        {"test_backward", "test_one_sample_many_features"},
        "unbroadcast",
    ),
    (
        "09_inplace_versions",  # b mispredicted: x + 1 saves nothing, so y.mul_(2) is harmless
        ('"b": False', '"b": True'),
        {"test_predictions"},
        "prediction",
    ),
    (
        "09_inplace_versions",  # the fix keeps the in-place division of exp's saved output
        ("y = y / y.sum()", "y /= y.sum()"),
        {"test_normalize_fixed", "test_fixes_other_input"},
        "inplace",
    ),
    (
        "09_inplace_versions",  # the final .sum() forgotten: the loss is a vector
        ("y = y / y.sum()\n    return (y * y).sum()", "y = y / y.sum()\n    return y * y"),
        {"test_normalize_fixed", "test_fixes_other_input"},
        "scalar_loss",
    ),
    (
        "01_mini_engine",  # no topological order: each node passes its gradient on at once
        (
            "        self.grad = 1.0\n"
            "        for v in reversed(topological_order(self)):  # every user of v comes before v\n"
            "            for parent, local in zip(v.parents, v.local_grads):\n"
            "                parent.grad += local * v.grad\n",
            "        def push(v):\n"
            "            for parent, local in zip(v.parents, v.local_grads):\n"
            "                parent.grad += local * v.grad\n"
            "                push(parent)\n"
            "\n"
            "        self.grad = 1.0\n"
            "        push(self)\n",
        ),
        {"test_random_graphs", "test_deep_diamonds", "test_train_deeper"},  # shared layer outputs
        "topological_order",
    ),
    (
        "01_mini_engine",  # topological_order builds the list but never returns it
        ("    visit(root)\n    return order\n", "    visit(root)\n"),
        {
            "test_topological_order",
            "test_backward_tree",
            "test_shared_inputs",
            "test_random_graphs",
            "test_deep_diamonds",
            "test_sub_pow_backward",
            "test_train",
            "test_train_deeper",
        },
        "no_return",
    ),
    (
        "01_mini_engine",  # = instead of +=: a Value used twice keeps its last contribution
        ("parent.grad += local * v.grad", "parent.grad = local * v.grad"),
        {
            "test_shared_inputs",
            "test_random_graphs",
            "test_deep_diamonds",
            "test_sub_pow_backward",
            "test_train",
            "test_train_deeper",
        },
        "accumulate",
    ),
    (
        "01_mini_engine",  # the power rule without its factor k
        ("(k * self.data ** (k - 1),)", "(self.data ** (k - 1),)"),
        {"test_sub_pow", "test_sub_pow_backward", "test_train", "test_train_deeper"},
        "wrong_values",
    ),
    (
        "01_mini_engine",  # b - a instead of a - b (the squared loss does not mind)
        ("return self + (-other)", "return other + (-self)"),
        {"test_sub_pow", "test_sub_pow_backward"},
        "forward",
    ),
    (
        "01_mini_engine",  # the neuron forgets its tanh
        ("self.b).tanh()", "self.b)"),
        {"test_neuron", "test_train", "test_train_deeper"},
        "forward",
    ),
    (
        "01_mini_engine",  # no p.grad = 0: each step follows the sum of all past gradients
        ("        for p in model.parameters():\n            p.grad = 0.0\n", ""),
        {"test_train", "test_train_deeper"},
        "zero_grad",
    ),
    (
        "05_double_backward",  # backward leaves teachgrad: the second derivative is zero
        ("return 3 * x * x * grad", "return tg.tensor(3 * x.detach().numpy() ** 2) * grad"),
        {"test_cube_second", "test_gradgradcheck"},
        "detached",
    ),
    (
        # backward in NumPy: .numpy() of a tensor that requires grad works where backward runs
        # with grad mode off (as in torch), and is refused under create_graph=True
        "05_double_backward",
        ("return 3 * x * x * grad", "return tg.tensor(3 * x.numpy() ** 2) * grad"),
        {"test_cube_second", "test_gradgradcheck"},
        "detached",
    ),
    (
        "05_double_backward",  # one factor detached: the second derivative is 3x, not 6x
        ("return 3 * x * x * grad", "return 3 * x * x.detach() * grad"),
        {"test_cube_second", "test_gradgradcheck"},
        "factor_of_2",
    ),
    (
        "05_double_backward",  # 1 / r saved to multiply in backward: an intermediate, a constant
        [
            ("ctx.save_for_backward(a, b, r)", "ctx.save_for_backward(a, b, 1 / r)"),
            (
                "a, b, r = ctx.saved_tensors\n        return grad * a / r, grad * b / r",
                "a, b, inv_r = ctx.saved_tensors\n        return grad * a * inv_r, grad * b * inv_r",
            ),
        ],
        {"test_hypot_second", "test_hypot_gradgradcheck"},
        "constant",
    ),
    (
        "10_train_digits",  # no zero_grad: each step follows the sum of all past gradients
        ("            opt.zero_grad()\n", ""),
        {"test_loss_decreases", "test_learns", "test_other_split"},
        "accuracy",
    ),
    (
        "10_train_digits",  # MSE pulls all ten scores toward the class index: argmax is noise
        (
            "F.cross_entropy(model(X[idx]), y[idx])",
            "F.mse_loss(model(X[idx]), y[idx].float().unsqueeze(1))",
        ),
        {"test_loss_decreases", "test_learns", "test_other_split"},
        "accuracy",
    ),
    (
        "11_conv2d_im2col",  # patches overwrite each other: a pixel keeps one contribution
        (
            "x[:, :, i : i + OH, j : j + OW] += cols[:, :, i, j]",
            "x[:, :, i : i + OH, j : j + OW] = cols[:, :, i, j]",
        ),
        {"test_col2im", "test_conv_backward"},
        "overlap",
    ),
    (
        "11_conv2d_im2col",  # dW of the first image only, not summed over the batch
        (".sum(axis=0)  # (F, C kh kw)", "[0]  # (F, C kh kw)"),
        {"test_conv_backward"},
        "unbroadcast",
    ),
    (
        "12_checkpointing",  # the recomputation runs with grad mode off: no graph to differentiate
        (
            "        with tg.enable_grad():\n            y = ctx.fn(*leaves)\n",
            "        y = ctx.fn(*leaves)\n",
        ),
        {"test_gradients", "test_runs_twice", "test_deeper_chain"},
        "no_graph",
    ),
    (
        "12_checkpointing",  # the gradient of x only: the weights get nothing
        (
            "return (None, *tg.autograd.grad(y, leaves, grad))",
            "return (None, *tg.autograd.grad(y, leaves[:1], grad), *[None] * (len(leaves) - 1))",
        ),
        {"test_gradients", "test_deeper_chain"},
        "parameters",
    ),
    (
        "12_checkpointing",  # forward records the block and keeps its graph "just in case"
        (
            "        return fn(x, *params)\n",
            "        with tg.enable_grad():\n"
            "            ctx.y = fn(x.detach().requires_grad_(), *params)\n"
            "        return ctx.y.detach()\n",
        ),
        {"test_memory", "test_deeper_chain"},
        "memory",
    ),
]


def edits(edit):
    """A planted bug's edits, as a list of (old, new) pairs."""
    return edit if isinstance(edit, list) else [edit]


def total(results):
    return sum(r.score for r in results), sum(r.max_score for r in results)


@pytest.mark.parametrize("name", NAMES)
def test_reference_solution_gets_full_marks(name):
    results = exercises.grade(name, definitions(name), hidden=True)
    score, max_score = total(results)
    assert score == max_score > 0, [r for r in results if r.score < r.max_score]


@pytest.mark.parametrize("name", NAMES)
def test_student_template_gets_zero(name):
    results = exercises.grade(name, definitions(name, student=True), hidden=True)
    assert total(results)[0] == 0
    assert {r.cause for r in results} == {"not_written"}


@pytest.mark.parametrize(("name", "edit", "failing", "cause"), BUGS, ids=[b[3] for b in BUGS])
def test_bug_gets_partial_marks_and_diagnosis(name, edit, failing, cause):
    ns = definitions(name, replace=edits(edit))
    results = exercises.grade(name, ns, hidden=True)
    assert {r.name for r in results if r.score < r.max_score} == failing
    score, max_score = total(results)
    lost = sum(r.max_score for r in results if r.name in failing)
    assert score == max_score - lost > 0
    report = check(name, ns, quiet=True)  # visible tests only
    causes = [r.cause for r in report.results if r.cause]
    assert causes[0] == cause, report.text()  # the first failure is diagnosed exactly


def test_bug_edits_apply():
    """Each planted bug really changes the solution (a stale edit would test nothing)."""
    for name, edit, _failing, _cause in BUGS:
        text = json.loads((exercises.path(name) / "instructor.ipynb").read_text())
        for old, _new in edits(edit):
            assert any(old in "".join(c["source"]) for c in text["cells"]), (name, old)


def test_results_unpack_for_an_autograder():
    name, score, max_score, output, _cause, _failure = exercises.grade(
        "02_pointwise", definitions("02_pointwise")
    )[0]
    assert (name, score, max_score, output) == ("test_square", 2, 2, "passed")


@pytest.mark.parametrize("name", [n for n in NAMES if n != "10_train_digits"])
def test_check_works_without_scikit_learn(monkeypatch, name):
    """A `[notebook]` install may lack scikit-learn, which only exercise 10 needs: checking
    any other exercise, by name or by one of its objects (which loads every exercise's
    tests to find the right one), still works there."""
    import sys

    for module in [m for m in sys.modules if m == "sklearn" or m.startswith("sklearn.")]:
        monkeypatch.setitem(sys.modules, module, None)
    monkeypatch.setitem(sys.modules, "sklearn", None)  # `import sklearn` now fails
    ns = definitions(name)
    report = check(name, ns, quiet=True)
    assert report.score == report.max_score > 0, report.text()
    first = next(t for t in exercises.load_tests(name) if t.uses and not t.hidden)
    report = check(ns[first.uses[0]], ns, quiet=True)
    assert report.exercise == name and report.results, report.text()


def test_names_from_before_the_reordering_still_find_their_exercise():
    """The topic is the stable name: 01_pointwise (now 02) and 08_mini_engine (now 01)."""
    assert exercises.path("01_pointwise").name == "02_pointwise"
    assert exercises.path("08_mini_engine").name == "01_mini_engine"
    assert exercises.path("softmax").name == exercises.path("06").name == "06_softmax"
    with pytest.raises(ValueError, match="13_nothing"):
        exercises.path("13_nothing")


def test_an_object_name_belongs_to_one_exercise():
    """check(obj) finds its exercise by the object's name: two exercises testing objects of
    the same name (a `train` in 01 and in 10) would grade one with the other's tests."""
    owners = {}
    for name in exercises.names():
        for used in {u for t in exercises.load_tests(name) for u in t.uses}:
            assert owners.setdefault(used, name) == name, (used, owners[used], name)
