"""The autograder: student code in a sandbox, verdicts computed by the grader.

``python -m course.grade SUBMISSIONS... --exercise 06_softmax --out results/``

- :mod:`.core`    -- grade one submission (tests.py run here on proxies of the student's
  objects, plus a fresh-input probe against the reference solution)
- :mod:`.sandbox` -- the ``python -I`` child process: limits, timeouts, nonce-checked pipes,
  its own namespaces, its folder's quota
- :mod:`.child`   -- what runs inside the sandbox (student cells, each under a time limit,
  then the wire's peer, which also says when the student's code asked teachgrad's autograd)
- :mod:`.confine` -- what the child forbids itself with the kernel's help: new processes,
  a folder larger than its quota (beside :mod:`.landlock`'s file rules)
- :mod:`.wire`    -- the protocol both sides speak: values, proxies, remote autograd
- :mod:`.remote`  -- the grader's end of the wire
- :mod:`.report`  -- Gradescope results.json, JUnit XML, the class summary CSV
- :mod:`.cli`     -- the command line: parallel grading and a progress bar

The trust model: nothing the submission's process says is a verdict. It only returns
raw numbers for inputs the grader chose; the grader compares them with its own
finite differences and its own copy of the reference solution, which the sandbox
can neither import nor read. What it says of itself (a cell it stopped, a backward
that called the engine) can only cost the submission points, never earn any. The
sandbox can call back only the functions a test handed to the student's code, with
bounded inputs.
"""

from .core import Graded, grade_submission, load_submission, reference_namespace

__all__ = ["Graded", "grade_submission", "load_submission", "reference_namespace"]
