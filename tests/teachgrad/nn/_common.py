"""Helpers shared by the nn tests: move tensors and state dicts between torch and teachgrad.

The layers of both libraries have the same names and arguments, so a model is
written once as ``build(nn)`` and built with ``teachgrad.nn`` and ``torch.nn``.
"""

from __future__ import annotations

import numpy as np

import teachgrad as tg
from tests.teachgrad.inplace._common import torch_phrase


def from_torch(t) -> tg.Tensor:
    """A teachgrad copy of a torch tensor (through NumPy)."""
    return tg.tensor(t.detach().cpu().numpy())


def to_numpy(t) -> np.ndarray:
    """The values of a teachgrad or torch tensor as a NumPy array."""
    return np.array(t.detach().cpu().numpy() if hasattr(t, "detach") else t)


def state_dict_from_torch(module) -> dict:
    """A torch module's state_dict with teachgrad tensors."""
    return {key: from_torch(value) for key, value in module.state_dict().items()}


def twin(build, torch):
    """The same model in both libraries, the teachgrad one holding the torch one's weights."""
    reference = build(torch.nn)
    model = build(tg.nn)
    model.load_state_dict(state_dict_from_torch(reference))
    return model, reference


def assert_close(actual, expected, rtol=1e-5, atol=1e-6) -> None:
    np.testing.assert_allclose(to_numpy(actual), to_numpy(expected), rtol=rtol, atol=atol)


def torch_text(text: str) -> str:
    """torch's spelling of a teachgrad message or repr (``teachgrad.float64`` -> ``torch.float64``),
    with the device left out of legacy type names as ``torch_phrase`` leaves it out."""
    return torch_phrase(text).replace("LIB.", "torch.")
