"""``tg.linalg``'s norms (``vector_norm``, ``matrix_norm``, ``norm``): values, node names (and
so the graph torch builds: a matrix 1-norm is amax over vector 1-norms), gradients, dtypes
compared with PyTorch; first and second derivatives by gradcheck; torch's refusals.
"""

import math

import pytest

import teachgrad as tg

from ._cases import A, case_id, compare_with_torch, run_gradchecks

INF = math.inf

NORMS = {
    "vector_norm": [
        (lambda lib, x: lib.linalg.vector_norm(x), [A(2, 3)]),
        (lambda lib, x: lib.linalg.vector_norm(x, 1, dim=0), [A(3, 2)]),
        (lambda lib, x: lib.linalg.vector_norm(x, 3, dim=(0, 2), keepdim=True), [A(2, 3, 2)]),
        (lambda lib, x: lib.linalg.vector_norm(x, INF, dim=-1), [A(2, 3)]),
        (lambda lib, x: lib.linalg.vector_norm(x, -INF), [A(4)]),
        (lambda lib, x: lib.linalg.vector_norm(x, 0.5, dim=1), [A(2, 3, layout="transposed")]),
    ],
    "matrix_norm": [
        (lambda lib, x: lib.linalg.matrix_norm(x), [A(3, 4)]),
        (lambda lib, x: lib.linalg.matrix_norm(x, 1), [A(3, 4)]),
        (lambda lib, x: lib.linalg.matrix_norm(x, -1, keepdim=True), [A(2, 3, 4)]),
        (lambda lib, x: lib.linalg.matrix_norm(x, INF, dim=(0, 2)), [A(3, 2, 4)]),
        (lambda lib, x: lib.linalg.matrix_norm(x, -INF, dim=(2, 0), keepdim=True), [A(3, 2, 4)]),
        (
            lambda lib, x: lib.linalg.matrix_norm(x, "fro", dim=(-1, 0)),
            [A(3, 2, layout="transposed")],
        ),
    ],
    "norm": [
        (lambda lib, x: lib.linalg.norm(x), [A(2, 3, 2)]),
        (lambda lib, x: lib.linalg.norm(x, dim=1), [A(2, 3)]),
        (lambda lib, x: lib.linalg.norm(x, 3, dim=[0]), [A(3, 2)]),
        (lambda lib, x: lib.linalg.norm(x, INF), [A(5)]),
        (lambda lib, x: lib.linalg.norm(x, 1), [A(3, 4)]),
        (lambda lib, x: lib.linalg.norm(x, "fro", dim=(0, 1), keepdim=True), [A(2, 2, 2)]),
        (lambda lib, x: lib.linalg.norm(x, -INF, dim=(1, 0)), [A(3, 4)]),
    ],
}
CASES = [
    pytest.param(fn, args, id=f"{name}{k}-{case_id(args)}")
    for name, cases in NORMS.items()
    for k, (fn, args) in enumerate(cases)
]


@pytest.mark.parametrize("fn,args", CASES)
def test_norm_gradcheck_and_gradgradcheck(fn, args):
    run_gradchecks(fn, args)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("fn,args", CASES)
def test_norm_matches_torch(torch, fn, args, dtype):
    """Value, dtype, node name (LinalgVectorNormBackward0, AmaxBackward0, AminBackward0) and
    the gradient equal torch's."""
    compare_with_torch(torch, fn, args, dtype)


def test_a_matrix_one_norm_is_torch_s_graph(torch):
    """amax of vector 1-norms down the columns, as torch builds it."""
    chains = []
    for lib in (tg, torch):
        y = lib.linalg.matrix_norm(lib.ones(3, 4, requires_grad=True), ord=1)
        node, chain = y.grad_fn, []
        while node is not None:
            chain.append(node.name().removeprefix("torch::autograd::"))
            node = node.next_functions[0][0] if node.next_functions else None
        chains.append(chain)
    assert (
        chains[0] == chains[1] == ["AmaxBackward0", "LinalgVectorNormBackward0", "AccumulateGrad"]
    )


REFUSED = {
    "a 3-D input with ord and no dim": (
        lambda lib: lib.linalg.norm(lib.ones(2, 3, 4), ord=1),
        "linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got 3D.",
    ),
    "three dims": (
        lambda lib: lib.linalg.norm(lib.ones(2, 3, 4), dim=(0, 1, 2)),
        "linalg.norm: If dim is specified, it must be of length 1 or 2. Got [0, 1, 2]",
    ),
    "a matrix order over one dim": (
        lambda lib: lib.linalg.norm(lib.ones(2, 3), ord="fro", dim=1),
        "linalg.matrix_norm: dim must be a 2-tuple. Got 1",
    ),
    "a vector": (
        lambda lib: lib.linalg.matrix_norm(lib.ones(3)),
        "linalg.matrix_norm: The input tensor A must have at least 2 dimensions.",
    ),
    "the same dim twice": (
        lambda lib: lib.linalg.matrix_norm(lib.ones(2, 3), dim=(1, 1)),
        "linalg.matrix_norm: dims must be different. Got (1, 1)",
    ),
    "an unknown order": (
        lambda lib: lib.linalg.matrix_norm(lib.ones(2, 3), ord=3),
        "linalg.matrix_norm: Order 3 not supported.",
    ),
    "a name as a vector order": (
        lambda lib: lib.linalg.vector_norm(lib.ones(2, 3), ord="fro"),
        "linalg_vector_norm(): argument 'ord' must be Number, not str",
    ),
}


@pytest.mark.parametrize("call, first_line", REFUSED.values(), ids=REFUSED.keys())
def test_refused_in_torch_s_words(torch, call, first_line):
    for lib in (torch, tg):
        with pytest.raises((RuntimeError, TypeError)) as raised:
            call(lib)
        assert str(raised.value).split("\n")[0] == first_line


@pytest.mark.parametrize("ord", ["nuc", 2, -2])
def test_norms_of_singular_values_are_refused(ord):
    """torch computes them from an SVD, which teachgrad does not have: a clear refusal."""
    with pytest.raises(NotImplementedError, match="singular values"):
        tg.linalg.matrix_norm(tg.ones(2, 3), ord=ord)
