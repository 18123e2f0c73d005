"""Containers: Modules that hold other Modules.

* ``Sequential``: children run one after the other, each output the next input;
* ``ModuleList``: a list of children (you write the forward that uses them);
* ``ModuleDict``: a dict of children.

A plain Python list of layers would hide them from ``parameters()``; these
register every element as a child, named ``"0"``, ``"1"`` ... or by its key.

    >>> import teachgrad as tg
    >>> layers = tg.nn.ModuleList([tg.nn.Linear(2, 2) for _ in range(3)])
    >>> len(list(layers.parameters()))
    6
"""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable, Mapping

from .module import Module, _addindent


def _absolute_index(index, length: int) -> int:
    """``index`` as a non-negative position, with torch's error when it is out of range."""
    index = operator.index(index)
    if not -length <= index < length:
        raise IndexError(f"index {index} is out of range")
    return index % length if length else index


class Sequential(Module):
    """Run modules in order: ``Sequential(a, b, c)(x)`` is ``c(b(a(x)))``.

    Children are named ``"0"``, ``"1"`` ..., or by the keys of an OrderedDict.
    Indexing gives a child, slicing a new Sequential of the same children.

    >>> import teachgrad as tg
    >>> net = tg.nn.Sequential(tg.nn.Linear(4, 3), tg.nn.ReLU(), tg.nn.Linear(3, 1))
    >>> net(tg.ones(2, 4)).shape, len(net), net[1]
    (teachgrad.Size([2, 1]), 3, ReLU())
    >>> net[:2]
    Sequential(
      (0): Linear(in_features=4, out_features=3, bias=True)
      (1): ReLU()
    )
    """

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for i, module in enumerate(args):
                self.add_module(str(i), module)

    def forward(self, input):
        for module in self:
            input = module(input)
        return input

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def _key(self, index) -> str:
        return list(self._modules)[_absolute_index(index, len(self))]

    def __getitem__(self, index):
        if isinstance(index, slice):  # keeps the children's names, as torch does
            return type(self)(OrderedDict(list(self._modules.items())[index]))
        return self._modules[self._key(index)]

    def __setitem__(self, index, module: Module) -> None:
        setattr(self, self._key(index), module)

    def __delitem__(self, index) -> None:
        keys = list(self._modules)[index] if isinstance(index, slice) else [self._key(index)]
        for key in keys:
            delattr(self, key)
        # renumber so that the names stay "0", "1", ... (as torch does, even for named children)
        self._modules = dict(zip(map(str, range(len(self._modules))), self._modules.values()))

    def append(self, module: Module) -> Sequential:
        """Add ``module`` at the end; returns self.

        >>> import teachgrad as tg
        >>> tg.nn.Sequential(tg.nn.ReLU()).append(tg.nn.Tanh())[1]
        Tanh()
        """
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> Sequential:
        """Append each of ``modules``; returns self.

        >>> import teachgrad as tg
        >>> len(tg.nn.Sequential().extend([tg.nn.ReLU(), tg.nn.Tanh()]))
        2
        """
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> Sequential:
        """Put ``module`` at position ``index``, shifting the later ones; returns self.

        >>> import teachgrad as tg
        >>> tg.nn.Sequential(tg.nn.ReLU()).insert(0, tg.nn.Tanh())[0]
        Tanh()
        """
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        index = index + n if index < 0 else index
        for i in range(n, index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module
        return self


class ModuleList(Module):
    """A list of modules, registered as children named ``"0"``, ``"1"`` ...

    It has no ``forward``: loop over it in yours. Repeated identical layers print once
    with a count, as in torch.

    >>> import teachgrad as tg
    >>> blocks = tg.nn.ModuleList([tg.nn.Linear(2, 2), tg.nn.Linear(2, 2), tg.nn.ReLU()])
    >>> blocks
    ModuleList(
      (0-1): 2 x Linear(in_features=2, out_features=2, bias=True)
      (2): ReLU()
    )
    """

    def __init__(self, modules: Iterable[Module] | None = None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __getitem__(self, index):
        if isinstance(index, slice):
            return type(self)(list(self._modules.values())[index])
        return self._modules[str(_absolute_index(index, len(self)))]

    def __setitem__(self, index: int, module: Module) -> None:
        setattr(self, str(_absolute_index(index, len(self))), module)

    def __delitem__(self, index) -> None:
        if isinstance(index, slice):
            for key in list(self._modules)[index]:
                delattr(self, key)
        else:
            delattr(self, str(_absolute_index(index, len(self))))
        self._modules = dict(zip(map(str, range(len(self._modules))), self._modules.values()))

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        return ModuleList([*self, *other])

    def append(self, module: Module) -> ModuleList:
        """Add ``module`` at the end; returns self.

        >>> import teachgrad as tg
        >>> len(tg.nn.ModuleList().append(tg.nn.ReLU()))
        1
        """
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        """Append each of ``modules``; returns self.

        >>> import teachgrad as tg
        >>> len(tg.nn.ModuleList([tg.nn.ReLU()]).extend([tg.nn.Tanh(), tg.nn.Tanh()]))
        3
        """
        if not isinstance(modules, Iterable):
            raise TypeError(
                "ModuleList.extend should be called with an iterable, but got "
                + type(modules).__name__
            )
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> None:
        """Put ``module`` before position ``index``.

        >>> import teachgrad as tg
        >>> m = tg.nn.ModuleList([tg.nn.ReLU()]); m.insert(0, tg.nn.Tanh()); m[0]
        Tanh()
        """
        for i in range(len(self), index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module

    def pop(self, index: int = -1) -> Module:
        """Remove and return the module at ``index``.

        >>> import teachgrad as tg
        >>> m = tg.nn.ModuleList([tg.nn.ReLU(), tg.nn.Tanh()]); m.pop(0), len(m)
        (ReLU(), 1)
        """
        module = self[index]
        del self[index]
        return module

    def __repr__(self) -> str:
        # Consecutive children that print the same are shown once: "(0-5): 6 x Linear(...)".
        groups = []  # [first_index, last_index, text]
        for i, child in enumerate(self):
            text = repr(child)
            if groups and groups[-1][2] == text:
                groups[-1][1] = i
            else:
                groups.append([i, i, text])
        if not groups:
            return self._get_name() + "()"
        lines = []
        for first, last, text in groups:
            label = f"({first}): " if first == last else f"({first}-{last}): {last - first + 1} x "
            lines.append(_addindent(label + text, 2))
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """A dict of modules, registered as children under their keys (insertion order kept).

    >>> import teachgrad as tg
    >>> heads = tg.nn.ModuleDict({"cls": tg.nn.Linear(4, 3), "box": tg.nn.Linear(4, 2)})
    >>> heads["box"](tg.ones(1, 4)).shape, list(heads.keys())
    (teachgrad.Size([1, 2]), ['cls', 'box'])
    """

    def __init__(self, modules: Mapping[str, Module] | None = None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key: str) -> bool:
        return key in self._modules

    def keys(self):
        """The names, in insertion order.

        >>> import teachgrad as tg
        >>> list(tg.nn.ModuleDict({"a": tg.nn.ReLU()}).keys())
        ['a']
        """
        return self._modules.keys()

    def values(self):
        """The modules, in insertion order.

        >>> import teachgrad as tg
        >>> list(tg.nn.ModuleDict({"a": tg.nn.ReLU()}).values())
        [ReLU()]
        """
        return self._modules.values()

    def items(self):
        """``(name, module)`` pairs, in insertion order.

        >>> import teachgrad as tg
        >>> list(tg.nn.ModuleDict({"a": tg.nn.ReLU()}).items())
        [('a', ReLU())]
        """
        return self._modules.items()

    def pop(self, key: str) -> Module:
        """Remove and return the module named ``key``.

        >>> import teachgrad as tg
        >>> d = tg.nn.ModuleDict({"a": tg.nn.ReLU()}); d.pop("a"), len(d)
        (ReLU(), 0)
        """
        module = self[key]
        del self[key]
        return module

    def clear(self) -> None:
        """Remove every module.

        >>> import teachgrad as tg
        >>> d = tg.nn.ModuleDict({"a": tg.nn.ReLU()}); d.clear(); len(d)
        0
        """
        self._modules.clear()

    def update(self, modules) -> None:
        """Add the modules of a mapping or of an iterable of ``(name, module)`` pairs.

        >>> import teachgrad as tg
        >>> d = tg.nn.ModuleDict(); d.update([("act", tg.nn.Tanh())]); d["act"]
        Tanh()
        """
        if not isinstance(modules, Iterable):
            raise TypeError(
                "ModuleDict.update should be called with an iterable of key/value pairs, but got "
                + type(modules).__name__
            )
        pairs = modules.items() if isinstance(modules, Mapping | ModuleDict) else modules
        for i, pair in enumerate(pairs):
            if not isinstance(pair, Iterable) or isinstance(pair, str):
                raise TypeError(
                    f"ModuleDict update sequence element #{i} should be Iterable; is "
                    + type(pair).__name__
                )
            pair = tuple(pair)
            if len(pair) != 2:
                raise ValueError(
                    f"ModuleDict update sequence element #{i} has length {len(pair)}; 2 is required"
                )
            self[pair[0]] = pair[1]
