"""``teachgrad.autograd.profiler_util``: what the profiler records, and lists of it.

A ``FunctionEvent`` is one timed interval (a forward op, a backward node, a
``record_function`` range, or a row of an nvprof trace); ``EventList`` holds them and
sums them up (``key_averages`` into ``FunctionEventAvg`` rows, ``table``,
``export_chrome_trace``). ``profiler.py`` records them; ``profiler_nvprof.py`` reads
them from a trace; both import them from here, and ``profiler`` re-exports them.

    >>> e = FunctionEvent(0, "aten::mul", 1, 0.0); e.end_us = 2.5
    >>> EventList([e]).key_averages()[0].key, e.cpu_time_total
    ('aten::mul', 2.5)
"""

from __future__ import annotations

import json

from .profiler_report import _build_table, _chrome_trace, _format_time

FORWARD, BACKWARD, USER = "forward", "backward", "user"  # FunctionEvent.kind


class FunctionEvent:
    """One timed interval: a forward op, a backward node or a ``record_function`` range.

    Times are in microseconds since the profile started. ``cpu_children`` are the
    events that ran inside this one (on the same thread), ``cpu_parent`` the one it
    ran inside (None at the top level). Filled only when asked for: ``input_shapes``
    (``record_shapes``; ``[]`` for an argument that is not a Tensor), memory
    (``profile_memory``), ``stack`` (``with_stack``: your frames, innermost first),
    CUDA times (``use_cuda``).

    ``sequence_nr`` ties an op to its backward, as torch: an op run in grad mode gets the
    sequence number of the node it records (``grad_fn._sequence_nr()``), and that node's
    backward event the same number, with ``fwd_thread``, the ``thread`` the op ran on; the
    other events have -1 and ``fwd_thread`` 0 (the profiler's; None for events made by hand).

    The constructor takes torch's arguments (``id, name, thread, start_us, end_us`` and, by
    keyword, ``node_id``, ``input_shapes``, ``stack``, ``is_user_annotation``,
    ``sequence_nr``, ``fwd_thread``) and teachgrad's ``kind``.

    >>> e = FunctionEvent(0, "aten::mul", thread=1, start_us=2.0, end_us=5.0)
    >>> e.cpu_time_total, e.self_cpu_time_total, e.is_user_annotation
    (3.0, 3.0, False)
    """

    def __init__(
        self,
        id,
        name,
        thread,
        start_us=0.0,
        end_us=0.0,
        *,
        kind=FORWARD,
        node_id=-1,
        input_shapes=None,
        stack=None,
        is_user_annotation=False,
        sequence_nr=-1,
        fwd_thread=None,
    ):
        self.id = id
        self.name = name
        # "forward", "backward", "user" (a record_function range); load_nvprof: "nvtx", "runtime"
        self.kind = USER if is_user_annotation else kind
        self.thread = thread
        self.sequence_nr = sequence_nr
        self.fwd_thread = fwd_thread
        self.node_id = node_id  # (torch's: the machine of a distributed run; -1 here)
        self.start_us = start_us
        self.end_us = end_us
        self.count = 1
        self.input_shapes = input_shapes
        self.stack = list(stack or [])
        self.cpu_parent = None
        self.cpu_children = []
        self.cpu_memory_usage = 0  # bytes of new arrays made inside this event, children included
        self.self_cpu_memory_usage = 0  # ... made by this event itself
        self.cuda_memory_usage = 0
        self.self_cuda_memory_usage = 0
        self.cuda_time_total = 0.0  # GPU time (use_cuda, or kernels read by load_nvprof)
        self.device_range = None  # (device, start µs, end µs) on the GPU's clock, if timed
        self.kernels = []  # load_nvprof: the GPU kernels this CUDA call launched

    @property
    def key(self) -> str:
        """What ``key_averages`` groups by (the name)."""
        return self.name

    # Times are rounded to the clock's resolution (1 ns = 0.001 µs) so that float noise
    # never makes a self time come out as -0.0000001.
    @property
    def cpu_time_total(self) -> float:
        """Inclusive time: end minus start, children included (µs)."""
        return round(self.end_us - self.start_us, 3)

    @property
    def self_cpu_time_total(self) -> float:
        """Exclusive time: total minus the children's total times (µs)."""
        return round(self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children), 3)

    @property
    def cpu_time(self) -> float:
        """Average time per call (one call: the total)."""
        return self.cpu_time_total

    @property
    def self_cuda_time_total(self) -> float:
        """GPU time minus the children's GPU time (µs)."""
        return self.cuda_time_total - sum(c.cuda_time_total for c in self.cpu_children)

    @property
    def cuda_time(self) -> float:
        return self.cuda_time_total

    # torch's newer names for the CUDA times
    device_time_total = property(lambda self: self.cuda_time_total, doc="GPU time (µs).")
    self_device_time_total = property(lambda self: self.self_cuda_time_total, doc="Own GPU time.")
    device_time = property(lambda self: self.cuda_time, doc="GPU time per call (µs).")

    @property
    def is_user_annotation(self) -> bool:
        """True for ``record_function`` ranges."""
        return self.kind == USER

    def __repr__(self):
        return (
            f"<FunctionEvent id={self.id} name={self.name} kind={self.kind} "
            f"cpu_time={_format_time(self.cpu_time_total)} start_us={self.start_us:.3f} "
            f"end_us={self.end_us:.3f} thread={self.thread} input_shapes={self.input_shapes} "
            f"cpu_children={[c.id for c in self.cpu_children]}>"
        )


class FunctionEventAvg:
    """The events sharing one key (name, kind, and shapes/stack if grouped by them), summed.

    ``count`` calls; ``*_total`` fields are sums; ``cpu_time`` and ``cuda_time`` are
    averages per call.

    Made without a key (as torch's), it takes the key, kind, shapes and stack of the first
    event added.

    >>> avg = FunctionEventAvg()
    >>> for start, end in [(0.0, 2.0), (5.0, 9.0)]:
    ...     _ = avg.add(FunctionEvent(0, "aten::mul", 1, start_us=start, end_us=end))
    >>> avg.key, avg.count, avg.cpu_time_total, avg.cpu_time
    ('aten::mul', 2, 6.0, 3.0)
    """

    _SUMMED = (
        "count",
        "cpu_time_total",
        "self_cpu_time_total",
        "cuda_time_total",
        "self_cuda_time_total",
        "cpu_memory_usage",
        "self_cpu_memory_usage",
        "cuda_memory_usage",
        "self_cuda_memory_usage",
    )

    def __init__(self, key=None, kind=None, input_shapes=None, stack=None):
        self.key = key
        self.kind = kind
        self.input_shapes = input_shapes
        self.stack = list(stack or [])
        self.cpu_parent = None  # like torch: the parent of the first event added
        self._first = True
        for field in self._SUMMED:
            setattr(self, field, 0)

    def add(self, other) -> FunctionEventAvg:
        """Add one event (or another average) into this one; returns self."""
        if self._first:
            self.cpu_parent = other.cpu_parent
            self._first = False
            if self.key is None:  # (made without one: the first event's)
                self.key, self.kind = other.key, other.kind
                self.input_shapes, self.stack = other.input_shapes, list(other.stack)
        for field in self._SUMMED:
            setattr(self, field, getattr(self, field) + getattr(other, field))
        return self

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / self.count if self.count else 0.0

    @property
    def cuda_time(self) -> float:
        return self.cuda_time_total / self.count if self.count else 0.0

    device_time_total = FunctionEvent.device_time_total
    self_device_time_total = FunctionEvent.self_device_time_total
    device_time = FunctionEvent.device_time

    @property
    def is_user_annotation(self) -> bool:
        return self.kind == USER

    def __repr__(self):
        return (
            f"<FunctionEventAvg key={self.key} count={self.count} "
            f"self_cpu_time={_format_time(self.self_cpu_time_total)} "
            f"cpu_time={_format_time(self.cpu_time)} input_shapes={self.input_shapes}>"
        )


class EventList(list):
    """A list of events (or of averages) that can summarise and export itself.

    ``profile.function_events`` is one (every event, in order of start), and so is
    ``key_averages()`` (one row per key). The flags say which columns ``table`` shows.

    >>> events = EventList([FunctionEvent(0, "aten::mul", thread=1, end_us=4.0)])
    >>> events.self_cpu_time_total
    4.0
    """

    # what ``table(sort_by=...)`` accepts: the per-call averages and every summed number
    _SORT_KEYS = ("cpu_time", "cuda_time", *FunctionEventAvg._SUMMED)

    def __init__(
        self,
        events=(),
        *,
        use_cuda=False,
        profile_memory=False,
        with_shapes=False,
        stack_depth=0,
    ):
        super().__init__(events)
        self._use_cuda = use_cuda
        self._profile_memory = profile_memory
        self._with_shapes = with_shapes
        self._stack_depth = stack_depth

    @property
    def self_cpu_time_total(self) -> float:
        """The sum of every event's self time: how long the profiled code ran (µs)."""
        return sum(e.self_cpu_time_total for e in self)

    def _populate_cpu_children(self) -> None:
        """Work out which event ran inside which from their times alone (for events made by
        hand; the profiler links them as it records). On each thread, an event's parent is
        the latest-starting event that contains it; of two events that start together the
        longer one is the outer.

        >>> events = EventList([FunctionEvent(0, "outer", 1, 0.0, 9.0),
        ...                     FunctionEvent(1, "inner", 1, 2.0, 5.0)])
        >>> events._populate_cpu_children(); [c.name for c in events[0].cpu_children]
        ['inner']
        """
        for event in self:
            event.cpu_parent, event.cpu_children = None, []
        by_thread = {}
        for event in self:
            by_thread.setdefault((event.thread, event.node_id), []).append(event)
        for events in by_thread.values():
            open_events = []  # each one inside the one below it
            for event in sorted(events, key=lambda e: (e.start_us, -e.end_us)):
                while open_events and not (
                    event.start_us < open_events[-1].end_us
                    and event.end_us <= open_events[-1].end_us
                ):
                    open_events.pop()  # (ended before this one, or ends inside it)
                if open_events:
                    event.cpu_parent = open_events[-1]
                    open_events[-1].cpu_children.append(event)
                open_events.append(event)

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0) -> EventList:
        """One ``FunctionEventAvg`` per name (and kind), in order of first appearance.

        ``group_by_input_shape``: ops called with different shapes get separate rows
        (needs ``record_shapes``); ``group_by_stack_n``: also split by the innermost
        ``n`` frames of the call stack (needs ``with_stack``).

        >>> import teachgrad as tg
        >>> x = tg.ones(3, requires_grad=True)
        >>> with tg.autograd.profiler.profile() as prof:
        ...     y = x * 2
        ...     z = y * 3
        >>> [(row.key, row.count) for row in prof.key_averages()]
        [('aten::mul', 2)]
        """
        groups = {}
        for event in self:
            shapes = event.input_shapes if group_by_input_shape else None
            stack = event.stack[:group_by_stack_n] if group_by_stack_n > 0 else []
            key = (event.key, event.kind, str(shapes), tuple(stack))
            if key not in groups:
                groups[key] = FunctionEventAvg(event.key, event.kind, shapes, stack)
            groups[key].add(event)
        return EventList(
            groups.values(),
            use_cuda=self._use_cuda,
            profile_memory=self._profile_memory,
            with_shapes=group_by_input_shape,
            stack_depth=max(group_by_stack_n, 0),
        )

    def total_average(self) -> FunctionEventAvg:
        """Every event summed into one ``FunctionEventAvg`` with key ``"Total"``.

        >>> events = EventList([FunctionEvent(0, "aten::mul", 1, 0.0, 3.0),
        ...                     FunctionEvent(1, "Sum", 1, 3.0, 4.0)])
        >>> total = events.total_average()
        >>> total.key, total.count, total.cpu_time_total
        ('Total', 2, 4.0)
        """
        total = FunctionEventAvg("Total")
        for event in self:
            total.add(event)
        total.cpu_parent = None
        return total

    def table(
        self,
        sort_by=None,
        row_limit=100,
        max_src_column_width=75,
        max_name_column_width=55,
        max_shapes_column_width=80,
        header=None,
        top_level_events_only=False,
        time_unit=None,
    ) -> str:
        """An aligned text table, one row per item, in torch's column layout.

        ``sort_by``: a numeric field such as ``"self_cpu_time_total"``, ``"cpu_time_total"``
        or ``"count"`` (largest first; None keeps the list's order); ``row_limit``: at
        most that many rows (None: all); ``top_level_events_only``: only rows with no
        parent. The percentages are of the sum of all self times, shown in the footer.
        Long names and shapes are cut at their end, source locations at their start, to
        the ``max_*_width``s; ``time_unit`` ("s", "ms" or "us") writes every time in it.

        >>> events = EventList([FunctionEvent(0, "aten::mul", 1, 0.0, 3.0)])
        >>> print(events.table())  # doctest: +NORMALIZE_WHITESPACE
        ---------  ----------  --------  -----------  ---------  ------------  ----------
        Name       Self CPU %  Self CPU  CPU total %  CPU total  CPU time avg  # of Calls
        ---------  ----------  --------  -----------  ---------  ------------  ----------
        aten::mul     100.00%   3.000us      100.00%    3.000us       3.000us           1
        ---------  ----------  --------  -----------  ---------  ------------  ----------
        Self CPU time total: 3.000us
        """
        widths = (max_name_column_width, time_unit, max_shapes_column_width, max_src_column_width)
        return _build_table(self, sort_by, row_limit, widths, header, top_level_events_only)

    def export_chrome_trace(self, path) -> None:
        """Write the events as a Chrome trace (JSON) that Perfetto and chrome://tracing open.

        Each event is a "complete" event (``"ph": "X"``) with ``ts`` and ``dur`` in
        microseconds, the process id as ``pid`` and the thread as ``tid``; GPU times
        (``use_cuda`` or nvprof kernels) go to a separate process row per device.

        >>> import json, os, tempfile
        >>> events = EventList([FunctionEvent(0, "aten::mul", 7, 1.0, 3.5)])
        >>> path = os.path.join(tempfile.mkdtemp(), "trace.json")
        >>> events.export_chrome_trace(path)
        >>> with open(path) as f:
        ...     [e for e in json.load(f)["traceEvents"] if e["ph"] == "X"][0]["dur"]
        2.5
        """
        with open(path, "w") as f:
            json.dump(_chrome_trace(self), f)

    def __str__(self):
        return self.table()
