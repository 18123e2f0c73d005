"""Saving and loading, as torch's ``torch.save`` / ``torch.load``: tensors, a model's
``state_dict``, and containers of them, in a file (or any file-like object).

The format is Python's pickle of the objects (a tensor pickles as its values, dtype,
device, ``requires_grad`` and name; not its history nor ``.grad``). Loading a pickle can run
any code it names, so ``load`` reads, by default, only what ``save`` writes for those
objects (``weights_only=True``, torch's default too): tensors, Parameters, numbers,
strings, and lists, tuples and dicts of them. ``weights_only=False`` loads anything: only
for files you trust.

    >>> import io, teachgrad as tg
    >>> f = io.BytesIO(); tg.save({"w": tg.ones(2)}, f); _ = f.seek(0)
    >>> tg.load(f)
    {'w': tensor([1., 1.])}
"""

from __future__ import annotations

import os
import pickle

from ._tensor import Tensor

__all__ = ["load", "save"]

# (module, name) of each global a weights-only load may meet: what save writes for tensors,
# Parameters, dtypes, devices, sizes and NumPy's arrays inside them
_WEIGHTS = {
    ("teachgrad._tensor", "_rebuild"),
    ("teachgrad._tensor", "Tensor"),
    ("teachgrad._tensor", "Size"),
    ("teachgrad.nn.parameter", "Parameter"),
    ("teachgrad._backend", "_dtype_by_name"),
    ("teachgrad._backend", "device"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("collections", "OrderedDict"),
    ("_codecs", "encode"),
}


def save(obj, f, pickle_module=pickle, pickle_protocol=2) -> None:
    """Write ``obj`` (a tensor, a ``state_dict``, containers of them) to ``f``: a path or a
    file opened for writing bytes.

    >>> import io, teachgrad as tg
    >>> f = io.BytesIO(); tg.save(tg.tensor([1, 2]), f); f.tell() > 0
    True
    """
    if isinstance(f, str | os.PathLike):
        with open(f, "wb") as opened:
            return save(obj, opened, pickle_module, pickle_protocol)
    pickle_module.dump(obj, f, protocol=pickle_protocol)
    return None


def load(f, map_location=None, pickle_module=None, *, weights_only=True, **pickle_load_args):
    """Read what ``save`` wrote to ``f`` (a path or a file opened for reading bytes); with
    ``map_location``, its tensors are put on that device.

    >>> import io, teachgrad as tg
    >>> f = io.BytesIO(); tg.save([tg.ones(1)], f); _ = f.seek(0); tg.load(f)
    [tensor([1.])]
    """
    if isinstance(f, str | os.PathLike):
        with open(f, "rb") as opened:
            return load(opened, map_location, pickle_module, weights_only=weights_only)
    if weights_only:
        obj = _WeightsUnpickler(f, **pickle_load_args).load()
    else:
        obj = (pickle_module or pickle).load(f, **pickle_load_args)
    return obj if map_location is None else _moved(obj, map_location)


class _WeightsUnpickler(pickle.Unpickler):
    """An unpickler that builds only the globals in ``_WEIGHTS``."""

    def find_class(self, module, name):
        if (module, name) not in _WEIGHTS:
            raise pickle.UnpicklingError(
                "Weights only load failed. In PyTorch 2.6, we changed the default value of the "
                "`weights_only` argument in `torch.load` from `False` to `True`. Re-running "
                "`torch.load` with `weights_only` set to `False` will likely succeed, but it can "
                "result in arbitrary code execution. Do it only if you got the file from a "
                f"trusted source.\n\nTrying to load unsupported GLOBAL {module}.{name}: the file "
                "names code to run, not only tensors and numbers."
            )
        return super().find_class(module, name)


def _moved(obj, device):
    """``obj`` with each tensor in it moved to ``device``."""
    if isinstance(obj, Tensor):
        return obj.to(device)
    if isinstance(obj, dict):
        return type(obj)((k, _moved(v, device)) for k, v in obj.items())
    if isinstance(obj, list | tuple):
        return type(obj)(_moved(v, device) for v in obj)
    return obj
