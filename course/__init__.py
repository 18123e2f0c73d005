"""course: exercises and (later) the autograder, built on teachgrad's public API.

It never reaches into the engine; teachgrad never imports course.

- ``exercises/NN_topic/`` -- per exercise: ``instructor.ipynb`` (solutions and hidden
  tests), the generated ``student.ipynb`` and the graded ``tests.py``
- ``testing.py``          -- what graded tests are made of: points, diagnoses, gradient checks
- ``check.py``            -- ``course.check(...)``: instant feedback inside a notebook
- ``release.py``          -- ``python -m course.release``: instructor -> student notebooks
"""

from .check import check
