"""The restricted namespace of sandboxed programs: module copies, imports, prelude names.

Whitelisted modules are exposed as :class:`SandboxModule` copies holding only public,
non-module attributes (through public attributes ``re`` reaches ``sys`` and ``json``
reaches ``codecs.open``; copies cut those paths). Mutable containers are copied so a
program cannot change what other programs in the same worker see; the copies are
read-only (``_write_`` refuses them). Some attributes are removed or replaced:

- ``string.Formatter`` (attribute walks in format fields) is removed;
- ``typing.get_type_hints``/``ForwardRef`` (they ``eval`` strings with real builtins);
- ``operator.attrgetter``/``methodcaller`` go through the guards;
- ``collections.namedtuple`` registers its classes as the program's own (``p._replace``);
- ``math_verify`` exposes only ``parse`` and ``verify``; parsed answers are opaque
  handles (the sympy objects behind them are never handed to the program: sympy's
  ``sympify`` evaluates strings with real builtins);
- ``numpy``/``np`` is a vetted subset: no file I/O (``load``/``save``/``fromfile``/
  ``memmap``/``loadtxt``...), no ``ctypeslib``/``lib``, no ``tofile``/``dump`` on arrays;
  submodules ``random``, ``linalg`` and ``fft`` are copied the same way.
"""

from __future__ import annotations

import copy
import importlib
from types import ModuleType
from typing import Any

from ..program import PRELUDE_MODULES, PRELUDE_NAMES
from . import guards

#: modules a program may import (``import x``/``from x import y``)
IMPORTABLE = frozenset(
    """math random re json string itertools functools collections collections.abc heapq bisect
    fractions decimal statistics datetime copy enum typing textwrap operator abc dataclasses
    math_verify numpy""".split()
)

_REMOVED = {
    "string": {"Formatter"},
    "typing": {"get_type_hints", "ForwardRef", "evaluate_forward_ref"},
    "dataclasses": {"make_dataclass"},
    "numpy": set(
        """load save savez savez_compressed savetxt loadtxt genfromtxt fromfile fromregex memmap
        DataSource ctypeslib lib show_config show_runtime info source lookfor who test get_include
        setbufsize seterrcall set_string_function set_printoptions printoptions tofile""".split()
    ),
}


class SandboxModule:
    """A read-only copy of a module's public, non-module attributes."""

    def __init__(self, name: str, attrs: dict[str, Any]) -> None:
        self.__dict__.update(attrs)
        self.__dict__["__name__"] = name

    def __repr__(self) -> str:
        return f"<sandboxed module {self.__dict__['__name__']!r}>"


guards.MODULE_TYPES.add(SandboxModule)


def _copy_module(name: str, module: ModuleType, extra: dict[str, Any] | None = None) -> SandboxModule:
    removed = _REMOVED.get(name, set())
    attrs: dict[str, Any] = {}
    for key, value in vars(module).items():
        if key.startswith("_") or key in removed or isinstance(value, ModuleType):
            continue
        if type(value) in (list, dict, set, bytearray):
            value = copy.copy(value)
        attrs[key] = value
    attrs.update(extra or {})
    return SandboxModule(name, attrs)


class ParsedAnswer:
    """Opaque result of ``math_verify.parse``: a sequence of parsed forms, printable,
    comparable with ``verify``; the sympy objects inside are not reachable."""

    __slots__ = ("_items",)

    def __init__(self, items: list[Any]) -> None:
        self._items = list(items)

    def __len__(self) -> int:
        return len(self._items)

    def __bool__(self) -> bool:
        return bool(self._items)

    def __getitem__(self, index: Any) -> ParsedAnswer:
        got = self._items[index]
        return ParsedAnswer(got if isinstance(index, slice) else [got])

    def __str__(self) -> str:
        return str(self._items[0]) if len(self._items) == 1 else str([str(x) for x in self._items])

    def __repr__(self) -> str:
        return f"ParsedAnswer({[str(x) for x in self._items]})"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, ParsedAnswer) and [str(x) for x in self._items] == [str(x) for x in other._items]

    __hash__ = None  # type: ignore[assignment]


def _math_verify_module() -> SandboxModule:
    import math_verify

    def parse(text: Any, *args: Any, **kwargs: Any) -> ParsedAnswer:
        return ParsedAnswer(math_verify.parse(str(text), *args, **kwargs))

    def unwrap(x: Any) -> Any:
        if isinstance(x, ParsedAnswer):
            return x._items
        if isinstance(x, (list, tuple)):
            return [y for v in x for y in (unwrap(v) if isinstance(v, ParsedAnswer) else [v])]
        return x

    def verify(gold: Any, target: Any, *args: Any, **kwargs: Any) -> bool:
        return bool(math_verify.verify(unwrap(gold), unwrap(target), *args, **kwargs))

    return SandboxModule("math_verify", {"parse": parse, "verify": verify})


def _numpy_module() -> SandboxModule | None:
    try:
        import numpy
    except ImportError:  # pragma: no cover - numpy is a dependency
        return None
    guards.WRITABLE_CONTAINERS.add(numpy.ndarray)
    subs = {s: _copy_module(f"numpy.{s}", getattr(numpy, s)) for s in ("random", "linalg", "fft")}
    return _copy_module("numpy", numpy, subs)


def _namedtuple_factory(real):
    def namedtuple(*args: Any, **kwargs: Any):
        return guards.register_class(real(*args, **kwargs))
    return namedtuple


def build_modules() -> dict[str, SandboxModule]:
    """The copies of every importable module (built once per worker)."""
    out: dict[str, SandboxModule] = {}
    for name in sorted(IMPORTABLE):
        if name == "math_verify":
            out[name] = _math_verify_module()
            continue
        if name == "numpy":
            np_mod = _numpy_module()
            if np_mod is not None:
                out[name] = np_mod
            continue
        module = importlib.import_module(name)
        extra: dict[str, Any] = {}
        if name == "operator":
            extra = {"attrgetter": guards.attrgetter, "methodcaller": guards.methodcaller}
        elif name == "collections":
            extra = {"namedtuple": _namedtuple_factory(module.namedtuple)}
        out[name] = _copy_module(name, module, extra)
    return out


def safe_import(modules: dict[str, SandboxModule]):
    """The ``__import__`` of sandboxed code: whitelisted copies only."""

    def __import__(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0):
        if level != 0:
            raise ImportError("relative imports are not allowed in the sandbox")
        mod = modules.get(name)
        if mod is None or ("." in name and not fromlist):
            raise ImportError(f"import of '{name}' is not allowed in the sandbox")
        return mod

    return __import__


def build_base_namespace() -> dict[str, Any]:
    """Globals shared (by copy) by every program of a worker: builtins, guards, the SPADE
    prelude names (``PRELUDE_MODULES``/``PRELUDE_NAMES``), ``np``/``numpy`` and
    ``ToolUseBaseEnv`` (the trusted base class, readable but not writable)."""
    from ..toolbase import ToolUseBaseEnv

    modules = build_modules()
    builtins_dict = guards.safe_builtins_dict()
    builtins_dict["__import__"] = safe_import(modules)
    guards.TRUSTED_BASES.add(ToolUseBaseEnv)
    guards.ALLOWED_BASES.add(ToolUseBaseEnv)
    _allow_library_bases(modules)
    ns: dict[str, Any] = {"__builtins__": builtins_dict, **guards.guard_globals()}
    for name in PRELUDE_MODULES:
        ns[name] = modules[name]
    for name, (mod, attr) in PRELUDE_NAMES.items():
        ns[name] = getattr(modules[mod], attr)
    if "numpy" in modules:
        ns["np"] = ns["numpy"] = modules["numpy"]
    ns["ToolUseBaseEnv"] = ToolUseBaseEnv
    return ns


def _allow_library_bases(modules: dict[str, SandboxModule]) -> None:
    """Library classes programs commonly derive from."""
    import abc
    import collections
    import enum
    import typing

    guards.ALLOWED_BASES.update(
        {
            collections.OrderedDict, collections.defaultdict, collections.Counter, collections.deque,
            collections.UserDict, collections.UserList, enum.Enum, enum.IntEnum, enum.Flag, enum.IntFlag,
            abc.ABC, typing.Generic, getattr(typing, "_NamedTuple", object),
        }
    )
    if hasattr(enum, "StrEnum"):
        guards.ALLOWED_BASES.add(enum.StrEnum)
