"""The random generators' state, as torch's ``torch.random``: save it, put it back, or run a
block whose random numbers leave it as it was.

The CPU generator is NumPy's (``_backend.generators``); its state is a small table of
numbers, handed out as a uint8 tensor (torch's type for it) holding that table as JSON, so
that ``set_rng_state`` reads numbers back, never code.

    >>> import teachgrad as tg
    >>> state = tg.get_rng_state(); a = tg.rand(2)
    >>> tg.set_rng_state(state); bool((tg.rand(2) == a).all())
    True
"""

from __future__ import annotations

import contextlib
import json

from . import _backend
from ._backend import manual_seed
from ._tensor import Tensor, wrap_array

__all__ = ["fork_rng", "get_rng_state", "manual_seed", "set_rng_state"]


def get_rng_state() -> Tensor:
    """The CPU generator's state, as a uint8 tensor for ``set_rng_state``.

    >>> import teachgrad as tg
    >>> tg.get_rng_state().dtype
    teachgrad.uint8
    """
    text = json.dumps(_backend.generators.cpu.bit_generator.state).encode()
    np = _backend.numpy_module()
    return wrap_array(np.frombuffer(text, dtype=np.uint8).copy())


def set_rng_state(new_state: Tensor) -> None:
    """Put back a state ``get_rng_state`` gave: the numbers drawn next repeat those drawn
    after it was taken.

    >>> import teachgrad as tg
    >>> s = tg.get_rng_state(); x = tg.randn(1); tg.set_rng_state(s); bool(tg.randn(1) == x)
    True
    """
    if not isinstance(new_state, Tensor) or new_state.dtype != _backend.uint8:
        raise TypeError(
            "expected a uint8 tensor from get_rng_state()\n  The state is what get_rng_state "
            "returned, unchanged."
        )
    state = json.loads(bytes(_backend.to_host(new_state._data)).decode())
    generator = _backend.generators.cpu
    generator.bit_generator.state = state


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True):
    """Run the block with the CPU generator's state saved, and put it back after it: random
    numbers drawn inside leave the numbers drawn after as they would have been. (torch
    also forks the GPUs' generators; teachgrad's CuPy generators are not forked.)

    >>> import teachgrad as tg
    >>> tg.manual_seed(1)
    >>> with fork_rng():
    ...     _ = tg.rand(3)
    >>> a = tg.rand(1); tg.manual_seed(1); bool(tg.rand(1) == a)
    True
    """
    if not enabled:
        yield
        return
    cpu = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(cpu)
