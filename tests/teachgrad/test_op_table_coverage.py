"""Every op of the API contract (API.md section 2) has an entry in an op table.

The op tables (``tests/teachgrad/ops``, ``tests/teachgrad/nn``, ``tests/teachgrad/inplace``)
drive gradcheck, gradgradcheck, the forward-mode and batched-gradient checks and the
comparison with torch. An op missing from them is untested, so this test lists the
contract's ops and fails, naming them, when one has no table entry. Add a row to the
right table when you add an op.
"""

import re

import pytest

from tests.teachgrad.inplace import test_inplace_ops
from tests.teachgrad.nn import test_functional
from tests.teachgrad.ops import (
    test_linalg,
    test_pointwise,
    test_reduce,
    test_shape_index_ops,
    test_views,
)

TABLES = {
    "pointwise": [*test_pointwise.UNARY, *test_pointwise.BINARY],
    "reduce": [*test_reduce.REDUCTIONS, *test_reduce.ARG_REDUCTIONS],
    "linalg": [
        *test_linalg.PRODUCTS,
        *test_linalg.NAMED,
        *(f"einsum {row}" for row in test_shape_index_ops.EINSUMS),
    ],
    "views": [*test_views.VIEWS, *test_views.JOINS],
    "shape and index": [*test_shape_index_ops.OPS, *test_shape_index_ops.SOFTMAX],
    "in-place": list(test_inplace_ops.OPS),
    "nn.functional": list(test_functional.TABLE),
}

# API.md section 2, op by op: the pattern its table rows are named by (a word by default)
CONTRACT = {
    "arithmetic": {
        "+": r"\+",
        "-": r"x - ",
        "*": r"\*",
        "/": r" / ",
        "**": r"\*\*",
        "@": r"@",
        "-x": r"^neg",
        "add": "add",
        "sub": "sub",
        "mul": "mul",
        "div": "div",
        "pow": "pow",
        "neg": "neg",
        "abs": "abs",
        "reciprocal": "reciprocal",
        "sqrt": "sqrt",
        "rsqrt": "rsqrt",
        "exp": "exp",
        "log": "log",
        "log1p": "log1p",
        "expm1": "expm1",
        "sin": "sin",
        "cos": "cos",
        "tan": "tan",
        "tanh": "tanh",
        "sigmoid": "sigmoid",
        "relu": "relu",
        "clamp": "clamp",
        "clip": "clip",
        "maximum": "maximum",
        "minimum": "minimum",
        "where": "where",
        "sign": "sign",
        "floor": "floor",
        "ceil": "ceil",
        "round": "round",
        "square": "square",
    },
    "reductions": {
        name: name
        for name in (
            [
                "sum",
                "mean",
                "prod",
                "var",
                "std",
                "amax",
                "amin",
                "max",
                "min",
                "argmax",
                "argmin",
                "logsumexp",
                "norm",
                "cumsum",
            ]
        )
    },
    "linear algebra": {
        name: name for name in ["matmul", "mm", "bmm", "mv", "dot", "outer", "einsum"]
    },
    "shape and views": {
        **{
            name: name
            for name in [
                "reshape",
                "view",
                "view_as",
                "flatten",
                "unflatten",
                "squeeze",
                "unsqueeze",
                "transpose",
                "permute",
                "movedim",
                "expand",
                "expand_as",
                "narrow",
                "select",
                "unbind",
                "split",
                "chunk",
                "diagonal",
                "cat",
                "stack",
                "repeat",
                "tile",
                "flip",
                "roll",
                "gather",
                "scatter",
                "index_select",
                "masked_fill",
                "tril",
                "triu",
                "pad",
            ]
        },
        "t": r"t\(\)",
        "x[i]": r"x\[-?\d\]",
        "x[a:b:c]": r"x\[-?\d*:",
        "x[..., None]": r"x\[\.\.\., None\]",
        "advanced indexing (integer)": r"x\[\[\d",
        "advanced indexing (mask)": r"mask",
    },
    "in-place": {
        name: re.escape(name)
        for name in [
            "add_",
            "sub_",
            "mul_",
            "div_",
            "pow_",
            "neg_",
            "abs_",
            "exp_",
            "log_",
            "sqrt_",
            "sin_",
            "cos_",
            "tanh_",
            "sigmoid_",
            "relu_",
            "clamp_",
            "zero_",
            "fill_",
            "copy_",
            "masked_fill_",
            "index_put_",
            "+=",
            "-=",
            "*=",
            "/=",
        ]
    }
    | {"__setitem__": r"^t\["},
    "nn.functional": {
        name: name
        for name in [
            "relu",
            "gelu",
            "silu",
            "sigmoid",
            "tanh",
            "softmax",
            "log_softmax",
            "linear",
            "mse_loss",
            "l1_loss",
            "nll_loss",
            "cross_entropy",
            "binary_cross_entropy",
            "binary_cross_entropy_with_logits",
            "conv2d",
            "max_pool2d",
            "avg_pool2d",
            "layer_norm",
            "embedding",
            "pad",
        ]
    },
}

WHERE = {  # which tables a family's rows live in
    "arithmetic": ["pointwise", "linalg"],
    "reductions": ["reduce", "shape and index"],
    "linear algebra": ["linalg"],
    "shape and views": ["views", "shape and index", "nn.functional"],
    "in-place": ["in-place"],
    "nn.functional": ["nn.functional"],
}


def _pattern(pattern: str) -> re.Pattern:
    if re.fullmatch(r"\w+", pattern):  # a bare name: as a whole word
        return re.compile(rf"(?<![\w.]){pattern}(?!\w)")
    return re.compile(pattern)


@pytest.mark.parametrize("family", list(CONTRACT))
def test_every_contract_op_has_a_table_entry(family):
    rows = [row for table in WHERE[family] for row in TABLES[table]]
    missing = [
        op
        for op, pattern in CONTRACT[family].items()
        if not any(_pattern(pattern).search(r) for r in rows)
    ]
    assert not missing, f"{family}: no op-table entry for {missing}; add rows to {WHERE[family]}"


def test_the_coverage_check_can_fail():
    """A made-up op is reported missing (so the check above is not vacuous)."""
    assert not any(_pattern("frobnicate").search(r) for table in TABLES.values() for r in table)
    assert any(_pattern("logsumexp").search(r) for r in TABLES["reduce"])
