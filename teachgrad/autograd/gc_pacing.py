"""Big graphs and Python's cyclic garbage collector: the pacing of full collections.

A recorded graph has no reference cycles, so reference counting frees it the moment the
last tensor of it goes; the cyclic GC never has anything to find in it. Yet each node
leaves a few objects the GC tracks (the node, its edges, a saved tensor and its version
counter), and Python starts a *full* collection, which visits every tracked object,
whenever the objects that survived the young generations have grown by a quarter since
the last one. So while a graph of n nodes is being recorded, it is visited again and
again, at sizes n, 0.8 n, 0.64 n ...: about five visits of the whole graph, and each
visit of an object costs about as much as recording a small op's share of it. Per node,
building a graph gets slower the bigger it is.

``pace_full_collections`` spaces full collections while graphs are being recorded: after
a full collection that leaves N tracked objects, if the nodes recorded since the previous
one could make up half of the change (a graph grew, or one was freed and the next is on
its way), the next full collection waits until about 10 N more objects have come through
the young generations (Python's own rule waits for N/4). A graph then costs under two
visits per node in all, however big it is. The first full collection after that which
finds no new nodes gives the user's thresholds back; a user who sets thresholds
(``gc.set_threshold``) is obeyed, the pacing only ever lengthens the wait. (Garbage with
reference cycles that lives long enough to reach the oldest generation waits longer for
its collection while graphs grow: up to about ten times the live objects, against
Python's quarter.)

A backward pass makes no reference cycles either, yet a collection that falls inside it
visits the whole graph it runs: the engine switches the collector off for the length of
a pass (``engine._collector_paused``).

    >>> import gc
    >>> pace_full_collections in gc.callbacks
    True
"""

from __future__ import annotations

import gc

_OBJECTS_PER_NODE = 4  # what the GC tracks per recorded node (node, edges, saved tensor, version)
# the user's thresholds, ours, and what the previous full collection saw: nodes, objects left
_paced = {"user": None, "ours": None, "nodes": 0, "left": 0}
_count_nodes = []  # the tape's count of the nodes it has recorded so far (see ``watch``)


def watch(count_nodes) -> None:
    """Pace full collections by the nodes that ``count_nodes()`` says were recorded (the
    tape calls this once, with its counter).

        >>> import itertools
        >>> tapes_count = _count_nodes[0]
        >>> watch(itertools.count().__next__)  # a count of one's own...
        >>> watch(tapes_count)  # (...and the tape's again: the pacing follows one count)
    """
    _count_nodes[:] = [count_nodes]
    if pace_full_collections not in gc.callbacks:
        gc.callbacks.append(pace_full_collections)


def pace_full_collections(phase: str, info: dict) -> None:
    """After a full collection, while graphs are being recorded, let the next one wait
    for ten times as many objects as are left.

    Speed trick (the reason is the module docstring). Gain, measured on a chain of ``*``
    and ``tanh`` on 4 floats, 60,000 nodes recorded then backward, in a fresh interpreter
    (``tests/teachgrad/autograd/test_gc_pacing.py``): the objects full collections visit go
    from about 21 per node to 1.8 (with a wait of three times: 6.9). ``benchmarks/bench.py``
    (e), a node's time at 100,000 nodes over its time at 1,000 (2026-11-29): 1.55 and 1.58
    with a wait of three times; 1.36 and 1.38 with ten; 1.19 to 1.41 with ten and the
    pacing kept from one graph to the next; 1.16 to 1.20 once the engine also switched
    the collector off during backward.

        >>> pace_full_collections("stop", {"generation": 2}) is None
        True
    """
    if phase != "stop" or info["generation"] != 2 or not _count_nodes:
        return
    now = gc.get_threshold()
    if _paced["ours"] is None or now != _paced["ours"]:  # first time, or the user set them
        _paced["user"] = now
    young, middle, full = _paced["user"]
    made = _count_nodes[0]()
    recent, _paced["nodes"] = made - _paced["nodes"], made
    if not young or not middle:  # the user turned collection off in their own way
        return
    left = len(gc.get_objects(generation=2))
    grown, _paced["left"] = left - _paced["left"], left
    # nodes: half the change (a graph grew, or one was freed and the next is being recorded)
    recording = recent > 0 and recent * _OBJECTS_PER_NODE * 2 >= abs(grown)
    wait = max(full, 10 * left // (young * middle)) if recording else full
    _paced["ours"] = (young, middle, wait) if wait != full else None
    gc.set_threshold(young, middle, wait)
