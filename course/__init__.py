"""course: exercises and the autograder.

This package will hold the course material built on teachgrad's public API
(it never reaches into the engine; teachgrad never imports course).

Planned contents:

- ``exercises/NN_topic/`` -- per exercise: the student notebook, the graded
  tests and a reference solution
- ``grader/``             -- pytest plugin, Gradescope ``results.json`` writer,
  submission isolation and the ``python -m course.grade`` command line
- ``check.py``            -- ``course.check(...)``: instant feedback inside a notebook
"""
