"""The grad-mode flags, per thread: whether ops are recorded, inference mode, and how many
backward passes with ``create_graph=True`` are running.

``autograd/grad_mode.py`` holds the context managers that set them (``no_grad`` ...); the
flags live here, below the Tensor, because a Tensor reads them too (a tensor made in
inference mode is an inference tensor). This module imports nothing from teachgrad.

    >>> state.enabled, state.inference, state.layer
    (True, False, 0)
"""

from __future__ import annotations

import threading


class _GradState(threading.local):
    enabled = True  # ops are recorded (grad mode is on, and not in inference mode)
    inference = False
    grad_in_inference = False  # grad mode switched on inside inference mode: records nothing
    layer = 0  # how many backward passes with create_graph=True are running (tape.stamp)
    multithreading = True  # set_multithreading_enabled (teachgrad's backward has no threads)
    view_replay = False  # _force_original_view_tracking (teachgrad regenerates views one way)


state = _GradState()
