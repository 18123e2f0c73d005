"""``teachgrad.autograd.profiler_report``: the profiler's results as a table or a trace.

``EventList.table()`` draws an aligned text table in torch's column layout: one row
per event (or per ``key_averages`` group), columns for self and total CPU time with
their percentages of the sum of all self times, the average per call and ``# of
Calls``; CUDA times, memory, input shapes and the source location when they were
recorded; a footer with the totals. ``EventList.export_chrome_trace()`` writes the
Chrome trace event format (JSON that Perfetto and chrome://tracing open): metadata
(``"ph": "M"``) naming each process and thread row, and one complete event
(``"ph": "X"``, ``ts`` and ``dur`` in µs) per event, per kernel and per GPU time.

What lives here: those two and the number formats they use. What does not: the
events themselves (``profiler.py``).

    >>> _format_time(2500.0), _format_memory(2048)
    ('2.500ms', '2.00 Kb')
"""

from __future__ import annotations

import os


def _format_time(us, unit=None) -> str:
    """A time in µs, in the unit its size calls for, or in ``unit`` ("s", "ms", "us"; any
    other value is ignored, as torch ignores it)."""
    unit = unit if unit in ("s", "ms", "us") else None
    if unit == "s" or unit is None and abs(us) >= 1e6:
        return f"{us / 1e6:.3f}s"
    if unit == "ms" or unit is None and abs(us) >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _cut_end(text, width) -> str:
    """``text`` cut to ``width`` characters at its end (long shapes)."""
    return text if width is None or len(text) <= width else text[: max(width - 3, 0)] + "..."


def _cut_start(text, width) -> str:
    """``text`` cut to ``width`` characters at its start (a source path: its end is the file
    and line that matter)."""
    return text if width is None or len(text) <= width else "..." + text[len(text) - width + 3 :]


def _format_memory(nbytes) -> str:
    for unit, size in (("Gb", 1024**3), ("Mb", 1024**2), ("Kb", 1024)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} B"


def _percent(part, whole) -> str:
    return f"{100 * part / whole:.2f}%" if whole else "0.00%"


def _columns(events, cpu_total, cuda_total, widths) -> list:
    """``(header, right-aligned?, value of a row)`` for each column to show; ``widths``: the
    table's ``(time unit, widest shapes, widest source location)``."""
    unit, shapes_width, src_width = widths

    def time(field):
        return lambda e: _format_time(getattr(e, field), unit)

    cols = [
        ("Name", False, lambda e: e.key),
        ("Self CPU %", True, lambda e: _percent(e.self_cpu_time_total, cpu_total)),
        ("Self CPU", True, time("self_cpu_time_total")),
        ("CPU total %", True, lambda e: _percent(e.cpu_time_total, cpu_total)),
        ("CPU total", True, time("cpu_time_total")),
        ("CPU time avg", True, time("cpu_time")),
    ]
    if events._use_cuda:
        cols += [
            ("Self CUDA", True, time("self_cuda_time_total")),
            ("Self CUDA %", True, lambda e: _percent(e.self_cuda_time_total, cuda_total)),
            ("CUDA total", True, time("cuda_time_total")),
            ("CUDA time avg", True, time("cuda_time")),
        ]
    if events._profile_memory:
        cols += [
            ("CPU Mem", True, lambda e: _format_memory(e.cpu_memory_usage)),
            ("Self CPU Mem", True, lambda e: _format_memory(e.self_cpu_memory_usage)),
        ]
        if events._use_cuda:
            cols += [
                ("CUDA Mem", True, lambda e: _format_memory(e.cuda_memory_usage)),
                ("Self CUDA Mem", True, lambda e: _format_memory(e.self_cuda_memory_usage)),
            ]
    cols.append(("# of Calls", True, lambda e: str(e.count)))
    if events._with_shapes:
        cols.append(("Input Shapes", False, lambda e: _cut_end(str(e.input_shapes), shapes_width)))
    if events._stack_depth:
        cols.append(
            (
                "Source Location",
                False,
                lambda e: _cut_start(e.stack[0], src_width) if e.stack else "",
            )
        )
    return cols


def _sorted_rows(events, sort_by, row_limit, top_level_events_only) -> list:
    rows = list(events)
    if top_level_events_only:
        rows = [e for e in rows if e.cpu_parent is None]
    if sort_by is not None:
        field = sort_by.replace("device", "cuda")
        if field not in events._SORT_KEYS:
            raise AttributeError(
                f"cannot sort the profiler table by {sort_by!r}; "
                f"choose one of {', '.join(events._SORT_KEYS)}"
            )
        rows.sort(key=lambda e: getattr(e, field), reverse=True)
    if row_limit is not None and row_limit >= 0:
        rows = rows[:row_limit]
    return rows


def _build_table(events, sort_by, row_limit, widths, header, top_level_events_only) -> str:
    """The table; ``widths``: ``(widest name, time unit, widest shapes, widest source)``."""
    name_width, *column_widths = widths
    cpu_total = events.self_cpu_time_total
    cuda_total = sum(e.self_cuda_time_total for e in events)
    cols = _columns(events, cpu_total, cuda_total, column_widths)
    rows = _sorted_rows(events, sort_by, row_limit, top_level_events_only)
    cells = [[value(e) for _, _, value in cols] for e in rows]
    if events._stack_depth:  # deeper frames go on lines of their own under the row
        cells = _with_stack_lines(cells, rows, len(cols), column_widths[2])
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, (h, _, _) in enumerate(cols)]
    widths[0] = min(widths[0], name_width)

    def line(values):
        parts = []
        for (_, right, _), width, text in zip(cols, widths, values):
            text = text if len(text) <= width else text[: width - 3] + "..."
            parts.append(text.rjust(width) if right else text.ljust(width))
        return "  ".join(parts).rstrip()

    rule = "  ".join("-" * w for w in widths)
    out = []
    if header is not None:
        out += ["=" * len(rule), header]
    if top_level_events_only:
        out += ["Only top-level events are shown (those not inside another event)"]
    out += [rule, line([h for h, _, _ in cols]), rule]
    out += [line(r) for r in cells]
    out += [rule, f"Self CPU time total: {_format_time(cpu_total, column_widths[0])}"]
    if events._use_cuda:
        out.append(f"Self CUDA time total: {_format_time(cuda_total, column_widths[0])}")
    return "\n".join(out)


def _with_stack_lines(cells, rows, n_cols, src_width) -> list:
    result = []
    for cell, event in zip(cells, rows):
        result.append(cell)
        for frame in event.stack[1:]:
            result.append([""] * (n_cols - 1) + [_cut_start(frame, src_width)])
    return result


def _chrome_trace(events) -> dict:
    """The Chrome trace event format: metadata rows plus one complete event per event."""
    pid = os.getpid()
    trace = [_meta("process_name", pid, 0, "teachgrad (CPU)")]
    threads, devices = set(), set()
    for e in events:
        if e.thread not in threads:
            threads.add(e.thread)
            trace.append(_meta("thread_name", pid, e.thread, f"thread {e.thread}"))
        args = {"kind": e.kind}
        if e.input_shapes is not None:
            args["Input Dims"] = e.input_shapes
        if e.stack:
            args["Call stack"] = ";".join(e.stack)
        if e.cpu_memory_usage or e.cuda_memory_usage:
            args["Allocated bytes"] = e.cpu_memory_usage + e.cuda_memory_usage
        trace.append(_complete(e.name, e.kind, pid, e.thread, e.start_us, e.end_us, args))
        for k in e.kernels:
            devices.add(k.device)
            trace.append(_complete(k.name, "kernel", k.device, k.stream, k.start_us, k.end_us, {}))
        if e.device_range is not None:
            device, start, end = e.device_range
            devices.add(device)
            trace.append(_complete(e.name, "cuda", device, 0, start, end, {"kind": e.kind}))
    for device in sorted(devices):
        trace.append(_meta("process_name", device, 0, f"GPU {device}"))
    return {"traceEvents": trace, "displayTimeUnit": "ms"}


def _meta(what, pid, tid, name) -> dict:
    return {"ph": "M", "name": what, "pid": pid, "tid": tid, "args": {"name": name}}


def _complete(name, category, pid, tid, start_us, end_us, args) -> dict:
    return {
        "ph": "X",
        "name": name,
        "cat": category,
        "ts": round(start_us, 3),  # (to the nanosecond: no float noise in the file)
        "dur": round(end_us - start_us, 3),
        "pid": pid,
        "tid": tid,
        "args": args,
    }
