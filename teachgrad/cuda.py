"""``teachgrad.cuda``: is there a GPU, how many, and waiting for it.

CUDA tensors are CuPy arrays underneath; CuPy is imported only when a GPU is used.

    >>> import teachgrad as tg
    >>> isinstance(tg.cuda.is_available(), bool)
    True
"""

from __future__ import annotations

from . import _backend


def is_available() -> bool:
    """True when CuPy is installed and at least one NVIDIA GPU is visible."""
    return _backend.cuda_is_available()


def device_count() -> int:
    """Number of visible GPUs (0 without CuPy or a driver)."""
    if not is_available():
        return 0
    return _backend.cupy().cuda.runtime.getDeviceCount()


def current_device() -> int:
    """The index of the current GPU."""
    return _backend.cupy().cuda.runtime.getDevice()


def get_device_name(device=None) -> str:
    """The GPU's name, e.g. ``'NVIDIA H100 80GB HBM3'`` (needs CuPy and a GPU).

    >>> import teachgrad as tg
    >>> tg.cuda.get_device_name() if tg.cuda.is_available() else "no GPU"  # doctest: +ELLIPSIS
    '...'
    """
    if not is_available():
        raise RuntimeError("get_device_name(): no CUDA GPU is available")
    index = None if device is None else _backend.as_device(device).index
    name = _backend.cupy().cuda.runtime.getDeviceProperties(index or 0)["name"]
    return name.decode() if isinstance(name, bytes) else name


def synchronize(device=None) -> None:
    """Wait until every kernel queued on the GPU has finished (for timing), and report a
    check an op left on the GPU that failed (a class index out of range, say), as torch
    reports a device-side assert.

    >>> import teachgrad as tg
    >>> tg.cuda.synchronize() if tg.cuda.is_available() else None
    """
    if not is_available():
        raise RuntimeError("synchronize(): no CUDA GPU is available")
    cp = _backend.cupy()
    index = None if device is None else _backend.as_device(device).index
    with cp.cuda.Device(index or 0):
        cp.cuda.Device().synchronize()
    _backend.raise_pending_device_errors()


def manual_seed(seed: int) -> None:
    """Seed the GPU generators (``teachgrad.manual_seed`` seeds them too)."""
    _backend.manual_seed(seed)


manual_seed_all = manual_seed
