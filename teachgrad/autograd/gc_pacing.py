"""Graphs and Python's cyclic garbage collector: two speed tricks, kept out of the engine.

A recorded graph has no reference cycles, so reference counting frees it the moment the
last tensor of it goes; the cyclic GC never has anything to find in it. Yet each node
leaves a few objects the GC tracks (the node, its edges and metadata tuples, a saved
tensor and its version counter), and the GC visits them anyway, in two ways:

1. *Young collections.* Python collects its youngest generation every 700 new tracked
   objects, visiting every one of them still alive. A graph lives from forward to
   backward, so nearly all of it is alive then: a 1,000-op chain is visited about ten
   times over, and what survives is visited again one generation up.
2. *Full collections.* Python starts one, which visits every tracked object, whenever
   the objects that survived the young generations have grown by a quarter since the
   last one. So while a graph of n nodes is being recorded, it is visited again and
   again, at sizes n, 0.8 n, 0.64 n ...: about five visits of the whole graph. Per node,
   building a graph gets slower the bigger it is.

``pace_collections`` runs after every collection and paces both while graphs are being
recorded: (1) the young generation waits for ``YOUNG_WHILE_RECORDING`` new objects, so
a graph of a few thousand nodes is usually freed by backward before any collection sees
it; (2) after a full collection that leaves N tracked objects, if the nodes recorded
since the previous one could make up half of the growth, the next full collection waits
until about 3 N more objects have come through the young generations (Python's own rule
waits for N/4): a big graph then costs one or two visits in all. A collection that finds
no node recorded since the last one gives the user's thresholds back; a user who sets
thresholds (``gc.set_threshold``) is obeyed, the pacing only ever lengthens the waits.

    >>> import gc
    >>> pace_collections in gc.callbacks
    True
"""

from __future__ import annotations

import gc

_OBJECTS_PER_NODE = 4  # what the GC tracks per recorded node, at least (node, edges, ...)
YOUNG_WHILE_RECORDING = 20_000  # the young generation's threshold while nodes are recorded
# the user's thresholds, ours, the nodes counted at the last collection and at the last
# full one, the objects that one left, and the full collections' wait we set
_paced = {"user": None, "ours": None, "seen": 0, "nodes": 0, "left": 0, "wait": None}
_count_nodes = []  # the tape's count of the nodes it has recorded so far (see ``watch``)


def watch(count_nodes) -> None:
    """Pace collections by the nodes that ``count_nodes()`` says were recorded (the tape
    calls this once, with its counter).

        >>> import itertools
        >>> tapes_count = _count_nodes[0]
        >>> watch(itertools.count().__next__)  # a count of one's own...
        >>> watch(tapes_count)  # (...and the tape's again: the pacing follows one count)
    """
    _count_nodes[:] = [count_nodes]
    if pace_collections not in gc.callbacks:
        gc.callbacks.append(pace_collections)


def pace_collections(phase: str, info: dict) -> None:
    """After a collection, while nodes are being recorded: let the young generation wait
    for ``YOUNG_WHILE_RECORDING`` objects, and after a full collection, let the next one
    wait for three times as many objects as are left.

    Speed trick (the reasons are the module docstring). Gains, measured on the chain of
    ``benchmarks/bench.py`` (a): full collections, 100,000 nodes recorded then backward:
    the objects they visit go from about 25 per node to about 9 (and ~0 on a second run);
    young collections, 1,000-op chains one after another: 8.67 -> 8.08 µs per op (-7%,
    as fast as with the GC off), interleaved, 2026-11-29.

        >>> pace_collections("stop", {"generation": 0}) is None
        True
    """
    if phase != "stop" or not _count_nodes:
        return
    now = gc.get_threshold()
    if _paced["ours"] is None or now != _paced["ours"]:  # first time, or the user set them
        _paced["user"], _paced["wait"] = now, None
    young, middle, full = _paced["user"]
    if not young or not middle:  # the user turned collection off in their own way
        return
    made = _count_nodes[0]()  # (asking takes a number too: 1 more is no node recorded)
    recording, _paced["seen"] = made > _paced["seen"] + 1, made
    young = max(young, YOUNG_WHILE_RECORDING) if recording else young
    if info["generation"] == 2:
        _paced["wait"] = _full_collections_wait(made, full, young * middle)
    paced = (young, middle, _paced["wait"] or full)
    _paced["ours"] = paced if paced != _paced["user"] else None
    gc.set_threshold(*paced)


def _full_collections_wait(made: int, full: int, per_full: int) -> int | None:
    """After a full collection: the wait for the next one (Python's ``full``, or three
    times the objects left while the nodes recorded since the last one make up half of
    the growth), None for the user's own. ``per_full``: the new objects that make one
    count of ``full`` (young threshold times middle threshold)."""
    recent, _paced["nodes"] = made - _paced["nodes"], made
    left = len(gc.get_objects(generation=2))
    grown, _paced["left"] = left - _paced["left"], left
    recording = grown > 0 and recent * _OBJECTS_PER_NODE * 2 >= grown  # nodes: half the growth
    wait = max(full, 3 * left // per_full) if recording else full
    return wait if wait != full else None
