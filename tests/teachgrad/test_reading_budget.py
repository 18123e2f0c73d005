"""The reading budget: how much code a student reads to follow one ``backward()``.

The program is the engine notebook's: ``y = (x * x).sum(); y.backward(); x.grad``. What
a student reads is every teachgrad function that runs for it (found by tracing the calls,
so the measure can never drift from the code), counted in *code lines of function
bodies*: no docstrings, comments or blank lines; one-line lambdas in the gradient tables
count as part of the table, not as functions.

The issue that set the budget (the engine in layers) aims at 350 lines in 3 files. The
lines are met; the files are not: the program meets two op families (``*`` in
``ops/pointwise.py``, ``sum`` in ``ops/reduce.py``) besides the Tensor, the autograd core
(``Function.apply`` and the node, the tape, the engine) and the NumPy/CuPy seam, each a
module of its own. The ceilings below are today's measure, and they may only come down.
Lower them when a change reads shorter; never raise them for speed or convenience. (Once
raised, by 3 lines, for torch's behaviour: ``_run`` lets a hook's StopIteration out as it
is, which Python's generators would otherwise turn into a RuntimeError.) (The backward formulas of ``*``
and ``sum`` run on the arrays, so backward does not read the forward machinery a second
time.)
"""

import ast
import collections
import gc
import pathlib
import sys

import teachgrad as tg
from teachgrad.autograd import engine

PACKAGE = pathlib.Path(tg.__file__).parent
MAX_LINES = 345  # measured 343 on 2026-11-29 (652 at its start), then 346, 345; the target: 350
MAX_FILES = 8  # measured 8; the target: 3
MAX_LOOP_LINES = 50  # the engine loop itself (engine._execute)


def body_lines(fn_node: ast.FunctionDef, source_lines: list) -> int:
    """Code lines of a function's body: not its docstring, comments or blank lines."""
    body = fn_node.body
    first = body[0]
    skip = set()
    docstring = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
    if docstring and isinstance(first.value.value, str):
        skip = set(range(first.lineno, first.end_lineno + 1))
    count = 0
    for number in range(first.lineno, fn_node.end_lineno + 1):
        text = source_lines[number - 1].strip()
        if number not in skip and text and not text.startswith("#"):
            count += 1
    return count


def _functions(path: pathlib.Path) -> dict:
    """(line of ``def`` or of its first decorator) -> the function's node, in one file."""
    tree = ast.parse(path.read_text())
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found[node.lineno] = node
            if node.decorator_list:
                found[node.decorator_list[0].lineno] = node
    return found


def functions_run(program) -> set:
    """The code objects of teachgrad's functions that run in ``program()``."""
    seen = set()
    root = str(PACKAGE)

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_filename.startswith(root):
            seen.add(frame.f_code)

    collecting = gc.isenabled()
    gc.disable()  # (Python's GC may run at any moment, with teachgrad's gc_pacing: not the path)
    sys.setprofile(profile)
    try:
        program()
    finally:
        sys.setprofile(None)
        if collecting:
            gc.enable()
    return seen


def reading(program) -> dict:
    """file -> code lines of the functions of that file that run in ``program()``."""
    per_file = collections.Counter()
    parsed = {}
    for code in functions_run(program):
        path = pathlib.Path(code.co_filename)
        if path not in parsed:
            parsed[path] = (_functions(path), path.read_text().splitlines())
        functions, lines = parsed[path]
        node = functions.get(code.co_firstlineno)
        if node is not None and node.name == code.co_name:  # (not a lambda or comprehension)
            per_file[path.relative_to(PACKAGE).as_posix()] += body_lines(node, lines)
    return dict(per_file)


def one_backward():
    x = tg.tensor([1.0, 2.0], requires_grad=True)

    def program():
        y = (x * x).sum()
        y.backward()
        return x.grad

    return program


def test_following_one_backward_stays_within_the_reading_budget():
    per_file = reading(one_backward())
    total = sum(per_file.values())
    detail = ", ".join(f"{name} {n}" for name, n in sorted(per_file.items(), key=lambda kv: -kv[1]))
    assert total <= MAX_LINES, f"{total} lines to read (budget {MAX_LINES}): {detail}"
    assert len(per_file) <= MAX_FILES, (
        f"{len(per_file)} files to read (budget {MAX_FILES}): {detail}"
    )


def test_the_engine_loop_fits_on_one_screen():
    lines = pathlib.Path(engine.__file__).read_text().splitlines()
    loop = next(
        node
        for node in ast.walk(ast.parse("\n".join(lines)))
        if isinstance(node, ast.FunctionDef) and node.name == "_execute"
    )
    assert body_lines(loop, lines) <= MAX_LOOP_LINES


def test_the_count_skips_docstrings_comments_and_blank_lines():
    source = 'def f(x):\n    """Doc\n    string."""\n    # why\n\n    y = x + 1\n    return y\n'
    (fn,) = ast.parse(source).body
    assert body_lines(fn, source.splitlines()) == 2


def test_the_trace_sees_the_engine_and_the_op():
    """(So the budget is not met by a trace that sees nothing.)"""
    per_file = reading(one_backward())
    assert {"autograd/engine.py", "autograd/tape.py", "_tensor.py"} <= set(per_file)
    assert per_file["autograd/engine.py"] > 50
