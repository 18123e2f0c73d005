"""``teachgrad.autograd.profiler_nvprof``: read an nvprof trace into profiler events.

``nvprof --export-profile trace.sqlite python train.py`` records what the CUDA runtime
and the GPU did and writes it as a SQLite database: one table per CUPTI activity kind
(CUPTI is the CUDA profiling interface nvprof is built on), times in ns. Run the
script inside ``emit_nvtx()`` and the ops show up there as NVTX ranges. The tables read:

* ``StringTable``: the names (of ranges and kernels), by id;
* ``CUPTI_ACTIVITY_KIND_MARKER``: NVTX ranges, a start row (which names the range) and an
  end row (named 0) each;
* ``CUPTI_ACTIVITY_KIND_RUNTIME``: CUDA API calls (``cudaLaunchKernel``, ...), named by
  CUPTI callback id (``_RUNTIME_NAMES``: the common ones);
* ``CUPTI_ACTIVITY_KIND_KERNEL`` / ``_CONCURRENT_KERNEL``: the kernels, tied to the call
  that launched them by ``correlationId``.

What lives here: ``load_nvprof`` and ``Kernel`` (both re-exported by ``profiler``) and
the ``_nvprof_*`` readers. What does not: the events they become (``FunctionEvent``,
``EventList``: ``profiler.py``); Nsight Systems' own export layout (not read).
"""

from __future__ import annotations

import os
import pathlib

from .profiler_util import EventList, FunctionEvent

# names of the CUDA runtime calls seen most often (ids from CUPTI's cupti_runtime_cbid.h)
_RUNTIME_NAMES = {
    13: "cudaLaunch",
    31: "cudaMemcpy",
    41: "cudaMemcpyAsync",
    49: "cudaMemset",
    51: "cudaMemsetAsync",
    131: "cudaStreamSynchronize",
    137: "cudaEventSynchronize",
    165: "cudaDeviceSynchronize",
    211: "cudaLaunchKernel",
}
_THREAD_OBJECTS = (1, 2)  # CUPTI_ACTIVITY_OBJECT_PROCESS / _THREAD: objectId holds (pid, tid)


class Kernel:
    """One GPU kernel from an nvprof trace (times in µs on the trace's timeline).

    >>> Kernel("gemm", device=0, stream=7, start_us=1.0, end_us=4.0).duration_us
    3.0
    """

    def __init__(self, name, device, stream, start_us, end_us):
        self.name = name
        self.device = device
        self.stream = stream
        self.start_us = start_us
        self.end_us = end_us

    @property
    def duration_us(self) -> float:
        return self.end_us - self.start_us

    def __repr__(self):
        return f"<Kernel {self.name} device={self.device} {self.duration_us:.3f}us>"


def load_nvprof(path) -> EventList:
    """Read an nvprof SQLite trace (``nvprof --export-profile trace.sqlite ...``) into events.

    Uses the tables nvprof documents: ``StringTable(_id_, value)`` for names;
    ``CUPTI_ACTIVITY_KIND_MARKER`` (NVTX ranges: a start row and an end row share an
    ``id``; the start row names the range, the end row's name is 0, as torch's
    ``load_nvprof`` reads them; ``objectId`` holds the process and thread);
    ``CUPTI_ACTIVITY_KIND_RUNTIME`` (CUDA API calls, with ``correlationId``); and
    ``CUPTI_ACTIVITY_KIND_KERNEL`` / ``_CONCURRENT_KERNEL`` (kernels, matched to the call
    that launched them by ``correlationId``). NVTX ranges become ``"nvtx"`` events and
    API calls ``"runtime"`` events, nested by time on each thread; each launch keeps its
    ``kernels`` and its ``cuda_time_total``, which ranges add up. Times become µs since
    the first record. Instantaneous markers and unclosed ranges are skipped.

    >>> import os, sqlite3, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "trace.sqlite")
    >>> db = sqlite3.connect(path)
    >>> _ = db.executescript('''
    ...     CREATE TABLE StringTable(_id_ INTEGER PRIMARY KEY, value TEXT);
    ...     INSERT INTO StringTable VALUES (1, 'step');
    ...     CREATE TABLE CUPTI_ACTIVITY_KIND_MARKER(_id_ INTEGER PRIMARY KEY, flags INT,
    ...         timestamp INT, id INT, objectKind INT, objectId BLOB, name INT, domain INT);
    ...     INSERT INTO CUPTI_ACTIVITY_KIND_MARKER VALUES (1, 2, 1000, 7, 2, NULL, 1, 0);
    ...     INSERT INTO CUPTI_ACTIVITY_KIND_MARKER VALUES (2, 4, 4000, 7, 2, NULL, 0, 0);
    ... '''); db.close()
    >>> [(e.name, e.kind, e.start_us, e.end_us) for e in load_nvprof(path)]
    [('step', 'nvtx', 0.0, 3.0)]
    """
    import sqlite3  # noqa: PLC0415 - only this function needs it

    if not os.path.isfile(path):
        raise FileNotFoundError(f"load_nvprof: no such file: {path}")
    uri = pathlib.Path(path).absolute().as_uri() + "?mode=ro"  # read-only: never change a trace
    conn = sqlite3.connect(uri, uri=True)
    try:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        if "StringTable" not in tables:
            raise RuntimeError(
                f"{path} is not an nvprof trace: it has no StringTable. Write one with "
                "`nvprof --export-profile trace.sqlite ...` (Nsight Systems exports another layout)."
            )
        strings = dict(conn.execute("SELECT _id_, value FROM StringTable"))
        records = _nvprof_markers(conn, tables, strings) + _nvprof_runtime(conn, tables)
        kernels = _nvprof_kernels(conn, tables, strings)
    finally:
        conn.close()
    return _nvprof_events(records, kernels)


def _nvprof_markers(conn, tables, strings) -> list:
    """NVTX ranges as ``(kind, name, thread, start ns, end ns, correlation id)``.

    A range is two rows with one ``id``, paired as torch pairs them: the start row names
    the range (its ``name`` is a string's id), the end row's ``name`` is 0. (Their ``flags``
    say which is which too, but not every trace fills them in.) A start without an end,
    such as an instantaneous marker, is no range.
    """
    table = "CUPTI_ACTIVITY_KIND_MARKER"
    if table not in tables:
        return []
    columns = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
    kind = "objectKind" if "objectKind" in columns else "2"  # absent: a thread marker
    thread = "objectId" if "objectId" in columns else "NULL"
    starts, ends = {}, {}
    query = f"SELECT name, timestamp, id, {kind}, {thread} FROM {table} WHERE name IS NOT NULL"
    for name, timestamp, marker_id, object_kind, object_id in conn.execute(query):
        if name == 0:
            ends[marker_id] = timestamp
        else:
            where = _thread_of(object_kind, object_id)
            starts[marker_id] = (strings.get(name, str(name)), where, timestamp)
    return [
        ("nvtx", name, where, start, ends[marker_id], None)
        for marker_id, (name, where, start) in starts.items()
        if marker_id in ends
    ]


def _thread_of(object_kind, object_id) -> int:
    """The thread id inside a marker's ``objectId`` (12 bytes: processId, threadId, 0)."""
    if object_kind not in _THREAD_OBJECTS or not isinstance(object_id, bytes | bytearray):
        return 0
    return int.from_bytes(object_id[4:8], "little")


def _nvprof_runtime(conn, tables) -> list:
    table = "CUPTI_ACTIVITY_KIND_RUNTIME"
    if table not in tables:
        return []
    query = f"SELECT cbid, start, end, threadId, correlationId FROM {table}"
    return [
        ("runtime", _RUNTIME_NAMES.get(cbid, f"cudaRuntime (cbid {cbid})"), thread, s, e, corr)
        for cbid, s, e, thread, corr in conn.execute(query)
    ]


def _nvprof_kernels(conn, tables, strings) -> dict:
    """Kernels by the correlation id of the call that launched them."""
    by_call = {}
    for table in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL"):
        if table not in tables:
            continue
        query = f"SELECT name, start, end, deviceId, streamId, correlationId FROM {table}"
        for name, start, end, device, stream, corr in conn.execute(query):
            by_call.setdefault(corr, []).append(
                (strings.get(name, str(name)), device, stream, start, end)
            )
    return by_call


def _nvprof_events(records, kernels) -> EventList:
    """Turn trace records (ns) into nested FunctionEvents (µs since the first record)."""
    if not records:
        return EventList()
    zero = min(r[3] for r in records)
    # by thread, then start; at equal starts the longer (enclosing) one and ranges first
    records.sort(key=lambda r: (r[2], r[3], -r[4], r[0] != "nvtx"))
    events, open_ = [], []
    for kind, name, thread, start, end, corr in records:
        event = FunctionEvent(len(events), name, thread, (start - zero) / 1000, kind=kind)
        event.end_us = (end - zero) / 1000
        for k_name, device, stream, k_start, k_end in kernels.get(corr, ()) if corr else ():
            k = Kernel(k_name, device, stream, (k_start - zero) / 1000, (k_end - zero) / 1000)
            event.kernels.append(k)
        while open_ and (open_[-1].thread != thread or open_[-1].end_us < event.end_us):
            open_.pop()
        if open_:
            event.cpu_parent = open_[-1]
            open_[-1].cpu_children.append(event)
        open_.append(event)
        events.append(event)
    for event in reversed(events):  # children come after their parents: sum bottom-up
        own = sum(k.duration_us for k in event.kernels)
        event.cuda_time_total = own + sum(c.cuda_time_total for c in event.cpu_children)
    events.sort(key=lambda e: e.start_us)
    for i, event in enumerate(events):
        event.id = i
    return EventList(events, use_cuda=bool(kernels))
