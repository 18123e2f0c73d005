"""Complex numbers in the student's code: the sign of a complex-step derivative.

The complex step estimates ``f'(x)`` as ``Im f(x + ih) / h`` with a tiny ``h`` (1e-20,
say). Unlike a finite difference it subtracts nothing, so it is good to the last digits,
and the grader's strict check of a gradient on fresh inputs (``core.STRICT``) cannot tell
it from a derivative by its numbers. It is still an estimate made by running ``f``, not
the derivative the exercises ask for; and it needs complex numbers, which no exercise's
answer does. So the sandbox looks for them in the code a call of the grader's reaches.

It looks at code, not at values: ``Im f(x + 1e-20j)`` can live in one expression, whose
complex values no hook sees. From the object a test calls (a Function's ``apply`` or
``backward``, a function, the class of an instance an operator runs on), it follows the
student's code (the code objects compiled from the submission's cells) to every function
and method a name in it may mean: a global of that name, or any method of that name of a
student's class (over-approximate, as a name alone can tell). A code object that holds a
complex constant (``1e-20j``), names a complex type or ``.imag`` (``complex``,
``np.complex128``, ``cmath``, ``np.emath`` ...) or a complex dtype's string (``"c16"``)
marks the call. FFTs (11's convolution could use them) name none of these.

Like the rest of the sandbox's watch (``child.EngineWatch``), a submission that builds
those names at run time can get past it: this catches the complex step as written, not
every disguise of it.

    >>> ns = {}
    >>> exec(compile("def d(f, x): return (f(x + 1e-20j)).imag / 1e-20", "cell 1", "exec"), ns)
    >>> exec(compile("def g(x): return 2 * x", "cell 2", "exec"), ns)
    >>> scan = ComplexScan(ns, ["cell 1", "cell 2"])
    >>> scan.reaches_complex(ns["d"]), scan.reaches_complex(ns["g"])
    (True, False)
"""

from __future__ import annotations

import inspect
import types

# names that make or read complex numbers: types, the modules of complex math, ``.imag``
NAMES = frozenset(
    {"complex", "complex64", "complex128", "complex256", "complex_", "complexfloating"}
    | {"csingle", "cdouble", "clongdouble", "cfloat", "imag", "cmath", "emath", "scimath"}
)
# complex dtypes as strings (``x.astype("c16")``); not "F", which is also ``order="F"``
STRINGS = frozenset({"complex", "complex64", "complex128", "complex256", "c8", "c16", "c32"})
STRINGS |= {"D", "G", "cfloat", "cdouble", "csingle", "clongdouble"}


class ComplexScan:
    """Which student code a call reaches, and whether any of it computes with complex
    numbers. ``ns``: the namespace the cells ran in; ``files``: the cells' file names
    (their labels), which tell the student's code objects from everybody else's."""

    def __init__(self, ns, files):
        self.files = frozenset(files)
        self.by_name = {}  # a name -> the student's code objects it may mean
        self.classes = {}  # a class -> its MRO's classes the student wrote (asked often)
        for name, value in list(ns.items()):
            self._index(name, value)

    def reaches_complex(self, *values) -> bool:
        """Whether the student's code reachable from ``values`` (what a call runs: the
        function, its arguments) names or holds a complex number."""
        todo = [code for value in values for code in self._codes_of(value)]
        seen = set()
        while todo:
            code = todo.pop()
            if code in seen:
                continue
            seen.add(code)
            if _marked(code):
                return True
            todo += [c for c in code.co_consts if isinstance(c, types.CodeType)]
            for name in code.co_names:
                todo += self.by_name.get(name, ())
        return False

    def _index(self, name, value):
        """File the student's code of ``value`` under ``name`` (a global's name), and each
        method of a student's class under its own name too."""
        codes = self._codes_of(value)
        if codes:
            self.by_name.setdefault(name, []).extend(codes)
        if isinstance(value, type):
            for cls in self._own_classes(value):
                for attr, member in vars(cls).items():
                    self.by_name.setdefault(attr, []).extend(self._functions(member))

    def _codes_of(self, value) -> list:
        """The student's code objects ``value`` runs: a function's, a method's (and its
        class's), a class's methods, an instance's class's methods."""
        if isinstance(value, types.MethodType):
            return self._codes_of(value.__func__) + self._codes_of(value.__self__)
        functions = self._functions(value)
        if functions:
            return functions
        cls = value if isinstance(value, type) else type(value)
        members = [m for k in self._own_classes(cls) for m in vars(k).values()]
        return [code for m in members for code in self._functions(m)]

    def _own_classes(self, cls) -> list:
        """The classes of ``cls``'s MRO the student wrote (one of their methods is theirs)."""
        if cls not in self.classes:
            mro = cls.__mro__
            self.classes[cls] = [k for k in mro if any(map(self._functions, vars(k).values()))]
        return self.classes[cls]

    def _functions(self, member) -> list:
        """The student's code objects of one class member or value: a function (unwrapped
        from a wrapper of the watch's), a static or class method, a property's accessors."""
        if isinstance(member, staticmethod | classmethod):
            member = member.__func__
        if isinstance(member, property):
            return [c for f in (member.fget, member.fset) for c in self._functions(f)]
        if not isinstance(member, types.FunctionType):
            return []
        code = inspect.unwrap(member).__code__
        return [code] if code.co_filename in self.files else []


def _marked(code) -> bool:
    """Whether one code object holds a complex constant, a complex name or dtype string."""
    return not NAMES.isdisjoint(code.co_names) or any(_complex_constant(c) for c in code.co_consts)


def _complex_constant(value) -> bool:
    if isinstance(value, tuple | frozenset):  # (constants folded together: (1j, 2))
        return any(_complex_constant(v) for v in value)
    return isinstance(value, complex) or isinstance(value, str) and value in STRINGS
