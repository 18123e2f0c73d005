"""``teachgrad.autograd.profiler``: where does the time go?

A profiler watches a program run and writes down, for every operation, when it
started and when it ended. Each such record is a ``FunctionEvent``. Events nest:
an op that runs inside a ``record_function("step")`` range, or an ``aten::mul`` that a
backward node calls to compute its gradient, is a *child* of the enclosing event.
So every event has two times:

* **total time** (``cpu_time_total``): from its start to its end, children included;
* **self time** (``self_cpu_time_total``): total time minus the children's total
  times, i.e. the time spent in the event's own code.

Summed over all events, the self times add up to the time spent inside the
top-level events (nothing is counted twice); total times count nested work again
at every level.

Three kinds of event are recorded (``FunctionEvent.kind``):

* ``"forward"``: one ``Function.apply`` (an op), named as torch names the same op:
  ``aten::mul`` for ``x * y`` (the class ``Mul`` in ``teachgrad/ops``), ``aten::sum``
  for ``x.sum()`` (``SumAll``), see ``op_name``; your own Functions by their class. A
  public function that torch counts as one op (``F.linear``) is one event too, with the
  ops it runs inside it (``_profiling.recorded_as``). The ops a backward formula runs
  are forward events inside its node;
* ``"backward"``: one backward node run by the engine, as two nested events (torch's):
  ``autograd::engine::evaluate_function: MulBackward0``, the engine's whole work on the
  node (its hooks too), and inside it ``MulBackward0``, the node's backward formula, named
  by ``node.name()`` (torch's names). Both carry the ``sequence_nr`` of the forward op
  that recorded the node, so the op and its backward can be paired;
* ``"user"``: a ``record_function(name)`` range you put around your own code.

With ``profile_memory`` an event also says how many bytes of new arrays it made:
its outputs, except those sharing storage with an input (views, in-place results,
gradients passed on) and those a child event made (counted there). Like the times,
there is a total (children included) and a self part.

How it plugs in: ``teachgrad/_profiling.py`` holds one flag that ``Function.apply``
and the engine test once per op. ``profile()`` switches it on and installs a
recorder that times each op and each backward node; outside a profile the cost is
that single check. Timestamps come from ``time.perf_counter_ns``; the recorder's
own bookkeeping (shapes, stacks, memory) is done outside each event's timed window,
so it shows up in the self time of the enclosing event. Work that does not go
through ``Function.apply`` is not seen: e.g. an in-place ``x += 1`` that records no
graph takes a shortcut straight to the array.

What lives here: ``profile``, ``record_function``, the recorder and ``emit_nvtx`` (NVTX
ranges for NVIDIA's tools). Importable from here but living beside it: the events,
``FunctionEvent``, ``FunctionEventAvg`` and ``EventList`` (``key_averages``, ``table``,
``total_average``, ``export_chrome_trace``) in ``profiler_util.py``; ``load_nvprof``
(read an nvprof SQLite trace) and ``Kernel`` in ``profiler_nvprof.py``; the table and the
Chrome trace are drawn in ``profiler_report.py``. What does not live here: the hook itself.

    >>> import teachgrad as tg
    >>> from teachgrad.autograd import profiler
    >>> x = tg.ones(3, requires_grad=True)
    >>> with profiler.profile() as prof:
    ...     with profiler.record_function("step"):
    ...         (x * 2).sum().backward()
    >>> [(e.name, e.kind) for e in prof.function_events][:3]
    [('step', 'user'), ('aten::mul', 'forward'), ('aten::sum', 'forward')]
    >>> step = prof.function_events[0]
    >>> step.self_cpu_time_total <= step.cpu_time_total
    True
"""

from __future__ import annotations

import functools
import os
import re
import sys
import threading
import time
import warnings

from .. import _backend
from .._profiling import state as _profiling
from .._tensor import Tensor
from . import tape
from .grad_mode import state as _grad_state
from .profiler_nvprof import Kernel as Kernel
from .profiler_nvprof import load_nvprof as load_nvprof
from .profiler_util import BACKWARD, FORWARD, USER, EventList, FunctionEvent, FunctionEventAvg

# where teachgrad's own files live: ``with_stack`` leaves those frames out
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep

# the name of the engine's event around each node: this, then the node's name (torch's)
_EVALUATE = "autograd::engine::evaluate_function: "

_ALREADY_ENABLED = (
    "Profiler is already enabled on this thread\n  profile() and emit_nvtx() blocks cannot nest: "
    "one recorder watches every op. Use a single profile() and mark the parts you want to "
    "see with record_function('name') ranges inside it."
)


# ============================================================================== recording


class _Frame:
    """An event being recorded (between ``enter`` and ``exit``)."""

    __slots__ = ("event", "parent", "start_ns", "counters", "made", "cuda_start", "closed")

    def __init__(self, event, parent):
        self.event = event
        self.parent = parent
        self.counters = ()  # version counters of the inputs: outputs sharing one are not new memory
        self.made = []  # storages (version counters) counted by this event or its children
        self.cuda_start = None
        self.closed = False


class _Hook:
    """What ``profile`` and ``emit_nvtx`` install as ``_profiling.state.recorder``.

    ``forward``/``evaluate``/``backward``/``op`` are the calls the engine and the ops make;
    each brackets the work with ``enter(name, kind, inputs)`` and ``exit(token, outputs,
    inputs)``, which subclasses define (``record_function`` calls them too).
    """

    def forward(self, cls, args, kwargs):
        def run():
            _profiling.bypass = True  # the apply below is this op itself: run it, don't come back
            return cls.apply(*args, **kwargs)

        inputs = cls.torch_inputs(args, kwargs) if cls._builtin else args
        return self._around(op_name(cls), FORWARD, inputs, run)

    def evaluate(self, node, run, grads):
        """The engine's whole work on one node, ``run(node, grads)``: torch's outer event
        ``autograd::engine::evaluate_function: <node>``. It records no inputs (torch shows
        no shapes for it); ``backward`` below times the formula inside it."""
        return self._around(_EVALUATE + node.name(), BACKWARD, (), lambda: run(node, grads), node)

    def backward(self, node, run, grads, batch):
        """The node's backward formula, ``run(node, grads, batch)``: the event ``<node>``."""
        return self._around(node.name(), BACKWARD, grads, lambda: run(node, grads, batch), node)

    def op(self, name, fn, args, kwargs):
        return self._around(name, FORWARD, args, lambda: fn(*args, **kwargs))

    def _around(self, name, kind, inputs, run, node=None):
        """``run()``, between ``enter`` and ``exit`` (also when it raises); ``node``: the
        backward node being run."""
        token = self.enter(name, kind, inputs, node)
        out = None
        try:
            out = run()
            return out
        finally:
            self.exit(token, out, inputs)


def _profiler_enabled() -> bool:
    """Whether a ``profile()`` records now (torch's ``torch.autograd._profiler_enabled``).

    >>> _profiler_enabled()
    False
    """
    return bool(_profiling.active)


def kineto_available() -> bool:
    """Whether torch's C++ profiler backend, Kineto, is there: never in teachgrad, which
    has one profiler, this module (torch's tests pass this to ``profile(use_kineto=...)``,
    which takes and ignores it).

    >>> kineto_available()
    False
    """
    return False


def op_name(cls) -> str:
    """The name of the event for one call of the Function ``cls``: torch's.

    For teachgrad's own ops that is torch's name for the same op, ``aten::`` and the op's
    name: the name of its node without ``Backward<N>``, in snake_case (torch names a node
    after its op: ``MulBackward0`` is the node of ``aten::mul``, ``Log1PBackward0`` of
    ``aten::log1p``), except for the few ops in ``_ATEN_NAMES`` and those that say it
    (``aten_name``). For your own Functions
    it is the class's name, as in torch.

    >>> from teachgrad.ops import nn, pointwise
    >>> op_name(pointwise.Mul), op_name(nn.MaxPool2d), op_name(pointwise.ToCopy)
    ('aten::mul', 'aten::max_pool2d_with_indices', 'aten::to')
    """
    if not cls._builtin:
        return cls.__name__
    name = _ATEN_CACHE.get(cls)
    if name is None:
        name = _ATEN_CACHE[cls] = _aten_name(cls)
    return name


def _aten_name(cls) -> str:
    if cls.__name__ in _ATEN_NAMES:
        return _ATEN_NAMES[cls.__name__]
    if "aten_name" in vars(cls):  # (an op made by a factory names it: ops/upsample.py)
        return cls.aten_name
    op = re.sub(r"Backward\d+$", "", cls.node_name)
    return "aten::" + re.sub(r"(?<!^)(?=[A-Z][a-z])", "_", op).lower()


_ATEN_CACHE = {}  # teachgrad's op (Function class) -> its aten name, worked out once

# the ops whose node's name does not say torch's name for them
_ATEN_NAMES = {
    "ToCopy": "aten::to",  # x.to(...): its node is named after the op inside, _to_copy
    "Copy": "aten::copy_",  # the in-place ops that are only in-place
    "Fill": "aten::fill_",
    "FillTensor": "aten::fill_",
    "Zero": "aten::zero_",
    "FloorDivide": "aten::floor_divide",  # no derivative: the node is NotImplemented
    "NumberRemainder": "aten::remainder",  # no derivative: the node is NotImplemented
    "ScatterReduce": "aten::scatter",
    "UnsafeView": "aten::_unsafe_view",  # torch's internal ops start with "_"
    "Unique": "aten::_unique2",
    "Matmul": "aten::_unsafe_view",  # (a batched matmul: torch's last step names its node)
    "ReshapeAlias": "aten::_reshape_alias",
    "_IndexPut": "aten::_index_put_impl_",
    "SoftmaxBackwardData": "aten::_softmax_backward_data",
    "LogSoftmaxBackwardData": "aten::_log_softmax_backward_data",
    "_PdistBackward": "aten::_pdist_backward",
    "Im2Col": "aten::im2col",  # (the digit: snake_case would make it im2_col)
    "Col2Im": "aten::col2im",
}


class _Recorder(_Hook):
    """Collects ``FunctionEvent``s for one ``profile()`` block."""

    def __init__(self, record_shapes, profile_memory, with_stack, cupy=None):
        self.events = []  # every event, in order of start
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.cupy = cupy  # set when CUDA work is timed (use_cuda)
        self.cuda_marks = []  # (event, device, start CUDA event, end CUDA event)
        self._open = {}  # thread ident -> stack of open frames
        self._fwd_threads = {}  # sequence_nr -> the thread of the forward op that took it
        self._finished = False
        if cupy is not None:  # the GPU clock's zero: CUDA events are timed relative to it
            self.cuda_zero = cupy.cuda.Event()
            self.cuda_zero.record()
        self.t0 = time.perf_counter_ns()

    def enter(self, name, kind, inputs, node=None):
        if self._finished:
            return None
        frames = self._open.setdefault(threading.get_ident(), [])
        parent = frames[-1] if frames else None
        event = FunctionEvent(len(self.events), name, threading.get_native_id(), kind=kind)
        self._number(event, inputs, node)
        if self.record_shapes:
            event.input_shapes = _shapes(inputs)
        if self.with_stack:
            event.stack = _user_stack()
        if parent is not None:
            event.cpu_parent = parent.event
            parent.event.cpu_children.append(event)
        self.events.append(event)
        frame = _Frame(event, parent)
        if self.profile_memory:
            frame.counters = [t._counter for t in inputs if isinstance(t, Tensor)]
        frames.append(frame)
        if self.cupy is not None:
            frame.cuda_start = self.cupy.cuda.Event()
            frame.cuda_start.record()
        frame.start_ns = time.perf_counter_ns()  # last: the bookkeeping above is not timed
        return frame

    def _number(self, event, inputs, node) -> None:
        """torch's ``sequence_nr`` and ``fwd_thread``. An op on tensors run in grad mode gets
        the number the tape gives its next node (the op's own, unless the op records none,
        or runs others that record first); the backward event of a node gets the node's
        number, and the thread of the op that took that number (its own when that op ran
        before the profile began); so does the engine's event around it. An AccumulateGrad
        has no number: -1, as torch shows it."""
        event.fwd_thread = 0
        on_tensors = any(isinstance(t, Tensor) for t in inputs)  # (torch: not tg.ones(...))
        numbered = on_tensors and event.name not in _profiling.makers  # (nor zeros_like(x))
        if event.kind == FORWARD and _grad_state.enabled and numbered:
            event.sequence_nr = tape.peek_sequence_nr()
            self._fwd_threads[event.sequence_nr] = event.thread
        elif node is not None and not isinstance(node, tape.AccumulateGrad):
            event.sequence_nr = node._sequence_nr()
            event.fwd_thread = self._fwd_threads.get(event.sequence_nr, event.thread)

    def exit(self, frame, outputs, inputs):
        end_ns = time.perf_counter_ns()  # first, for the same reason
        if frame is None or frame.closed:
            return  # a range that outlived its profile() block
        if self.cupy is not None:
            cuda_end = self.cupy.cuda.Event()
            cuda_end.record()
            device = self.cupy.cuda.Device().id
            self.cuda_marks.append((frame.event, device, frame.cuda_start, cuda_end))
        self._close(frame, end_ns)
        if self.profile_memory:
            _count_memory(frame, outputs)

    def _close(self, frame, end_ns):
        frame.closed = True
        event = frame.event
        event.start_us = (frame.start_ns - self.t0) / 1000
        event.end_us = (end_ns - self.t0) / 1000
        frames = self._open.get(threading.get_ident(), [])
        if frame in frames:
            frames.remove(frame)

    def finish(self) -> list:
        """End of the block: close what is still open, read the GPU timings."""
        end_ns = time.perf_counter_ns()
        for frames in self._open.values():
            for frame in reversed(frames[:]):  # (a copy: closing removes it from the list)
                self._close(frame, end_ns)
        self._open.clear()
        self._finished = True
        if self.cupy is not None:
            self.cupy.cuda.Device().synchronize()  # CUDA events finish after their kernels
            elapsed = self.cupy.cuda.get_elapsed_time  # milliseconds between two events
            for event, device, start, end in self.cuda_marks:
                event.cuda_time_total = elapsed(start, end) * 1000
                begin = elapsed(self.cuda_zero, start) * 1000
                event.device_range = (device, begin, begin + event.cuda_time_total)
        return self.events


def _count_memory(frame, outputs) -> None:
    """Memory an event allocated: the bytes of the new arrays among its outputs.

    An output is not new when it shares storage with an input (a view, an in-place
    op, a gradient passed through) or when a child event made it (then it is the
    child's). The event's total also includes its children's allocations.
    """
    event = frame.event
    own_cpu = own_cuda = 0
    for t in outputs if isinstance(outputs, tuple) else (outputs,):
        if not isinstance(t, Tensor):
            continue
        # a storage is known by its version counter (shared by all views of it)
        counter = t._counter
        if any(counter is c for c in frame.counters) or any(counter is m for m in frame.made):
            continue
        frame.made.append(counter)
        data = t._data
        if isinstance(data, _backend.numpy_module().ndarray):
            own_cpu += data.nbytes
        else:
            own_cuda += data.nbytes
    event.self_cpu_memory_usage = own_cpu
    event.self_cuda_memory_usage = own_cuda
    event.cpu_memory_usage = own_cpu + sum(c.cpu_memory_usage for c in event.cpu_children)
    event.cuda_memory_usage = own_cuda + sum(c.cuda_memory_usage for c in event.cpu_children)
    parent = frame.parent
    if parent is not None and parent.event.kind != USER:  # an op may return its child's output
        parent.made.extend(frame.made)
    frame.made = []


def _shapes(inputs) -> list:
    return [list(t._data.shape) if isinstance(t, Tensor) else [] for t in inputs]


def _user_stack() -> list:
    """The caller's frames outside teachgrad, innermost first, as ``file(line): function``."""
    frames = []
    f = sys._getframe(1)
    while f is not None:
        filename = f.f_code.co_filename
        if not filename.startswith(_PACKAGE_DIR):
            frames.append(f"{filename}({f.f_lineno}): {f.f_code.co_name}")
        f = f.f_back
    return frames


def _install(hook) -> None:
    if _profiling.active:
        raise RuntimeError(_ALREADY_ENABLED)
    _profiling.recorder = hook
    _profiling.bypass = False
    _profiling.active = True


def _uninstall() -> None:
    _profiling.active = False
    _profiling.bypass = False
    _profiling.recorder = None


# ============================================================================== public API


class profile:
    """Record every op, backward node and ``record_function`` range run inside the block.

    ``use_cuda`` (or ``use_device="cuda"``): also time the GPU work of each event with
    CUDA events (needs CuPy and a GPU; without one it warns, like torch, and profiles
    the CPU only). ``record_shapes``: keep the input shapes of each op.
    ``profile_memory``: count the bytes of the new arrays each event makes.
    ``with_stack``: keep the Python call stack (your frames) of each event.
    ``use_kineto`` is accepted and changes nothing: teachgrad has one profiler, torch
    picks its C++ backend with it.
    Blocks cannot nest. Results, after the block: ``function_events``,
    ``key_averages()``, ``table()``, ``total_average()``, ``self_cpu_time_total``,
    ``export_chrome_trace(path)``.

    >>> import teachgrad as tg
    >>> x = tg.ones(2, 3, requires_grad=True)
    >>> with profile(record_shapes=True, profile_memory=True) as prof:
    ...     y = (x * 2).sum()
    ...     y.backward()
    >>> mul = prof.function_events[0]
    >>> mul.name, mul.input_shapes, mul.cpu_memory_usage
    ('aten::mul', [[2, 3], []], 24)
    >>> [e.name for e in prof.function_events if e.kind == "backward"][:2]
    ['autograd::engine::evaluate_function: SumBackward0', 'SumBackward0']
    """

    def __init__(
        self,
        enabled=True,
        *,
        use_cuda=False,
        use_device=None,
        record_shapes=False,
        profile_memory=False,
        with_stack=False,
        use_kineto=False,
    ):
        self.enabled = enabled
        self.use_cuda = use_cuda or use_device == "cuda"
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self._recorder = None
        self._events = None if enabled else EventList()

    def __enter__(self):
        if not self.enabled:
            return self
        if _profiling.active:
            raise RuntimeError(_ALREADY_ENABLED)
        cupy = None
        if self.use_cuda:
            if _backend.cuda_is_available():
                cupy = _backend.cupy()
            else:
                warnings.warn("CUDA is not available, disabling CUDA profiling", stacklevel=2)
                self.use_cuda = False
        self._recorder = _Recorder(self.record_shapes, self.profile_memory, self.with_stack, cupy)
        _install(self._recorder)
        return self

    def __exit__(self, *exc):
        if self._recorder is None:
            return False
        _uninstall()
        events = self._recorder.finish()
        self._recorder = None
        self._events = EventList(
            events,
            use_cuda=self.use_cuda,
            profile_memory=self.profile_memory,
            with_shapes=self.record_shapes,
        )
        return False

    @property
    def function_events(self) -> EventList:
        """Every recorded event, in order of start (available after the block)."""
        if self._events is None:
            raise RuntimeError(
                "Profiler didn't finish running\n  Read the results after the `with profile()` block."
            )
        return self._events

    @property
    def self_cpu_time_total(self) -> float:
        """Sum of the self times of all events, in µs."""
        return self.function_events.self_cpu_time_total

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0) -> EventList:
        """See ``EventList.key_averages``."""
        return self.function_events.key_averages(group_by_input_shape, group_by_stack_n)

    def total_average(self) -> FunctionEventAvg:
        """See ``EventList.total_average``."""
        return self.function_events.total_average()

    def table(self, *args, **kwargs) -> str:
        """See ``EventList.table`` (one row per event; ``key_averages().table()`` sums them)."""
        return self.function_events.table(*args, **kwargs)

    def export_chrome_trace(self, path) -> None:
        """See ``EventList.export_chrome_trace``."""
        self.function_events.export_chrome_trace(path)

    def __str__(self):
        return str(self.function_events)


class record_function:
    """Mark a range of your code with a name: a context manager or a decorator.

    Inside ``profile()``, the range becomes a ``"user"`` event and the ops and backward
    nodes run inside it become its children; under ``emit_nvtx()`` it is an NVTX range.
    Anywhere else it does nothing.

    >>> import teachgrad as tg
    >>> @record_function("double")
    ... def double(t):
    ...     return t * 2
    >>> x = tg.ones(2)
    >>> with profile() as prof:
    ...     _ = double(x)
    >>> [(e.name, [c.name for c in e.cpu_children]) for e in prof.function_events]
    [('double', ['aten::mul']), ('aten::mul', [])]
    """

    def __init__(self, name, args=None):
        self.name = name
        self.args = args
        self._hook = None
        self._token = None

    def __enter__(self):
        if _profiling.active:
            self._hook = _profiling.recorder
            self._token = self._hook.enter(self.name, USER, ())
        return self

    def __exit__(self, *exc):
        if self._hook is not None:
            hook, self._hook = self._hook, None
            hook.exit(self._token, None, ())
        return False

    def __call__(self, fn):
        """Decorator use: every call of ``fn`` is one range (a fresh one, so recursion works)."""

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with record_function(self.name, self.args):
                return fn(*args, **kwargs)

        return wrapper


class _NvtxEmitter(_Hook):
    """Pushes an NVTX range around every op and backward node (for Nsight / nvprof)."""

    def __init__(self, nvtx, record_shapes):
        self.nvtx = nvtx
        self.record_shapes = record_shapes

    def enter(self, name, kind, inputs, node=None):
        if self.record_shapes and kind != USER:
            name = f"{name}, sizes = {_shapes(inputs)}"
        self.nvtx.RangePush(name)
        return True

    def exit(self, token, outputs, inputs):
        self.nvtx.RangePop()


def _nvtx_module():
    """CuPy's NVTX bindings when a CUDA GPU is usable, else None."""
    if not _backend.cuda_is_available():
        return None
    nvtx = _backend.cupy().cuda.nvtx
    if not getattr(nvtx, "available", True):  # a CuPy built without the NVTX library
        warnings.warn(
            "emit_nvtx: CuPy has no NVTX support here; no ranges are emitted", stacklevel=3
        )
        return None
    return nvtx


class emit_itt:  # noqa: N801 - torch's name
    """Mark every op with an Intel ITT range, for Intel VTune, in torch: teachgrad has no ITT
    bindings, so the block runs as it would without it (as ``emit_nvtx`` does without a
    GPU). The arguments are torch's.

    >>> import teachgrad as tg
    >>> with emit_itt(record_shapes=True):
    ...     y = tg.ones(2) * 3
    >>> y
    tensor([3., 3.])
    """

    def __init__(self, enabled=True, record_shapes=False):
        self.enabled, self.record_shapes = enabled, record_shapes

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class emit_nvtx:
    """Mark every op and backward node with an NVTX range, for NVIDIA's profilers.

    Run your script under ``nsys profile`` (or ``nvprof``) and the ranges appear on
    the timeline above the kernels they launched, named like the profiler's events
    (``aten::mul``, ``MulBackward0``; with ``record_shapes``: ``"aten::mul, sizes = [[2, 3], []]"``).
    Uses ``cupy.cuda.nvtx``; without a CUDA GPU it does nothing (but still works
    as a context manager, so the same script runs on a laptop).

    >>> import teachgrad as tg
    >>> with emit_nvtx():
    ...     y = tg.ones(2) * 3
    >>> y
    tensor([3., 3.])
    """

    def __init__(self, enabled=True, record_shapes=False):
        self.enabled = enabled
        self.record_shapes = record_shapes
        self._installed = False

    def __enter__(self):
        if not self.enabled:
            return self
        nvtx = _nvtx_module()
        if nvtx is None:
            return self  # on the CPU there is no NVIDIA profiler to talk to
        _install(_NvtxEmitter(nvtx, self.record_shapes))
        self._installed = True
        return self

    def __exit__(self, *exc):
        if self._installed:
            _uninstall()
            self._installed = False
        return False
