"""The restricted namespace of sandboxed programs: module copies, imports, prelude names.

Whitelisted modules are exposed as read-only :class:`SandboxModule` copies holding the
allow-list of :mod:`.vetted` (vetted callables and constants, never "everything public
minus a deny list"); mutable containers are copied. Replaced or special entries:

- ``functools.update_wrapper``/``wraps``/``total_ordering``, ``dataclasses.dataclass``
  and ``operator.attrgetter``/``methodcaller`` are the guarded versions of :mod:`.vetted`;
- ``collections.namedtuple`` registers its classes as the program's own (``p._replace``);
- ``enum``'s classes are sandbox subclasses whose functional API refuses dunder, private
  and ``module=``/``qualname=`` arguments (``global_enum`` is not exposed);
- ``math_verify`` exposes only ``parse`` and ``verify``; parsed answers are opaque
  handles (the sympy objects behind them are never handed to the program: sympy's
  ``sympify`` evaluates strings with real builtins);
- ``numpy``/``np`` is the vetted array-math subset of :data:`.vetted.NUMPY_ALLOW` with
  the ``random``, ``linalg`` and ``fft`` submodules listed the same way;
- ``tool_use_base_env`` is the alias module SPADE's loader provides (``ToolUseBaseEnv``);
- ``__future__`` imports work (the compiler has already applied them).

The sandbox ``__import__`` hands out only these copies to ``import`` statements (which
the policy has checked at compile time). C code inside numpy and datetime imports its
helpers lazily through the ``__import__`` of the *calling* frame (``PyImport_Import``
reads it from the sandboxed globals, then takes the module from ``sys.modules`` itself);
for those (recognised by ``PyImport_Import``'s list ``fromlist``; import statements pass
``None`` or a tuple) it answers
``None`` after making sure the module is loaded: modules already in ``sys.modules`` and
the few of :data:`LAZY_INTERNAL` (``time``, ``_strptime``, loaded when the namespace is
built). The program never sees those modules: its own import statements cannot name them.
"""

from __future__ import annotations

import copy
import enum as _enum
import importlib
import sys
from types import ModuleType
from typing import Any

from ..program import ALIAS_MODULES, NUMPY_NAMES, PRELUDE_MODULES, PRELUDE_NAMES, alias_module_attrs
from . import class_guards, guards, own, vetted

#: modules a program may import (``import x``/``from x import y``)
IMPORTABLE = frozenset(vetted.ALLOW) - {"__future__"} | {"math_verify", "numpy", *ALIAS_MODULES}

#: modules C code of whitelisted libraries imports lazily (through the caller's ``__import__``)
LAZY_INTERNAL = frozenset({"time", "_strptime"})


class SandboxModule:
    """A read-only copy of a module's allow-listed attributes."""

    def __init__(self, name: str, attrs: dict[str, Any]) -> None:
        self.__dict__.update(attrs)
        self.__dict__["__name__"] = name

    def __repr__(self) -> str:
        return f"<sandboxed module {self.__dict__['__name__']!r}>"


class LazySandboxModule(SandboxModule):
    """A module copy built on first use of a public attribute (``numpy``,
    ``math_verify``: imports a quick zygote leaves to the workers that need them).
    :func:`load_heavy` builds every pending one (the full zygote does, before forking)."""

    def __init__(self, name: str) -> None:
        self.__dict__["__name__"] = name

    def __getattr__(self, name: str) -> Any:
        if name[:1] == "_" or not _load(self):
            raise AttributeError(f"sandboxed module {self.__dict__['__name__']!r} has no attribute {name!r}")
        try:
            return self.__dict__[name]
        except KeyError:
            raise AttributeError(f"sandboxed module {self.__dict__['__name__']!r} has no attribute {name!r}") from None

    def __repr__(self) -> str:
        return f"<sandboxed module {self.__dict__['__name__']!r}>"


#: the lazy copies of this process and their pending builders (by ``id`` of the copy)
_LAZY: list[LazySandboxModule] = []
_PENDING: dict[int, Any] = {}


def _load(module: LazySandboxModule) -> bool:
    """Build a lazy copy now; False when it had nothing (more) to build."""
    build = _PENDING.pop(id(module), None)
    if build is None:
        return False
    try:
        built = build()
    except BaseException:
        _PENDING[id(module)] = build  # try again on the next use
        raise
    if built is not None:
        module.__dict__.update({k: v for k, v in built.__dict__.items() if k != "__name__"})
    return True


def _lazy(name: str, build: Any) -> LazySandboxModule:
    module = LazySandboxModule(name)
    _LAZY.append(module)
    _PENDING[id(module)] = build
    return module


def load_heavy() -> None:
    """Import numpy (with the submodules programs use) and math_verify, and build every
    pending lazy copy (the full zygote, before it forks; with the static layer off too,
    where programs use the real modules)."""
    for name in ("numpy", *(f"numpy.{s}" for s in vetted.NUMPY_SUBMODULES), "math_verify"):
        try:
            importlib.import_module(name)
        except ImportError:  # pragma: no cover - dependencies of the package
            pass
    for module in list(_LAZY):
        _load(module)


guards.MODULE_TYPES.update({SandboxModule, LazySandboxModule})


def _copy_module(name: str, module: Any, names: str, extra: dict[str, Any] | None = None) -> SandboxModule:
    attrs: dict[str, Any] = {}
    for key, value in vetted.pick(module, names).items():
        if isinstance(value, ModuleType):  # pragma: no cover - lists name no modules
            continue
        if type(value) in (list, dict, set, bytearray):
            value = copy.copy(value)
        attrs[key] = value
    attrs.update(vetted.REPLACE.get(name, {}))
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
    subs = {
        s: _copy_module(f"numpy.{s}", getattr(numpy, s), names) for s, names in vetted.NUMPY_SUBMODULES.items()
    }
    return _copy_module("numpy", numpy, vetted.NUMPY_ALLOW, subs)


def _namedtuple_factory(real):
    def namedtuple(*args: Any, **kwargs: Any):
        kwargs.pop("module", None)  # the class belongs to the program
        return class_guards.register_class(real(*args, **kwargs))
    return namedtuple


class _SandboxEnumType(type(_enum.Enum)):  # type: ignore[misc]
    """Metaclass of the sandbox's enum bases: the functional API (``Enum("Color", "RED
    GREEN")``) takes plain member names only, and no ``module=``/``qualname=``/``type=``."""

    def __call__(cls, value, names=None, *args: Any, **kwargs: Any):
        if names is None:
            return super().__call__(value, *args, **kwargs)
        if args or set(kwargs) - {"start", "boundary"}:
            raise guards.SandboxViolation("the Enum functional API takes only names and start= in the sandbox")
        items = names.replace(",", " ").split() if isinstance(names, str) else list(names)
        for item in items:
            key = item if isinstance(item, str) else (item[0] if isinstance(item, (tuple, list)) and item else None)
            if not isinstance(key, str) or not key.isidentifier() or key.startswith("_"):
                raise guards.SandboxViolation(f"enum member name {key!r} is not allowed in the sandbox")
        if isinstance(names, dict):
            for key in names:
                if not isinstance(key, str) or not key.isidentifier() or key.startswith("_"):
                    raise guards.SandboxViolation(f"enum member name {key!r} is not allowed in the sandbox")
        return class_guards.register_class(super().__call__(value, names, **kwargs))


def _enum_module() -> SandboxModule:
    bases: dict[str, Any] = {}
    for name in ("Enum", "IntEnum", "Flag", "IntFlag", "StrEnum"):
        real = getattr(_enum, name, None)
        if real is not None:
            ns = _SandboxEnumType.__prepare__(name, (real,))
            ns["__module__"] = "enum"
            ns["__qualname__"] = name
            bases[name] = _SandboxEnumType(name, (real,), ns)
    for cls in bases.values():
        class_guards.ALLOWED_BASES.add(cls)
    return _copy_module("enum", _enum, vetted.ALLOW["enum"], bases)


def build_modules() -> dict[str, SandboxModule]:
    """The copies of every importable module (built once per worker)."""
    out: dict[str, SandboxModule] = {}
    for name in sorted(IMPORTABLE):
        if name == "math_verify":  # heavy imports: built on first use (see LazySandboxModule)
            out[name] = _lazy(name, _math_verify_module)
        elif name == "numpy":
            out[name] = _lazy(name, _numpy_module)
        elif name == "enum":
            out[name] = _enum_module()
        elif name in ALIAS_MODULES:
            out[name] = SandboxModule(name, alias_module_attrs(name))
        else:
            module = importlib.import_module(name)
            extra: dict[str, Any] = {}
            if name == "collections":
                extra = {"namedtuple": _namedtuple_factory(module.namedtuple)}
            out[name] = _copy_module(name, module, vetted.ALLOW[name], extra)
    import __future__
    import decimal

    for lazy in LAZY_INTERNAL:  # loaded now, before the worker is confined
        importlib.import_module(lazy)
    out["collections"].__dict__["abc"] = out["collections.abc"]
    guards.WRITABLE_CONTAINERS.add(decimal.Context)  # getcontext().prec = 50
    out["__future__"] = _copy_module("__future__", __future__, vetted.ALLOW["__future__"])
    return out


def safe_import(modules: dict[str, SandboxModule]):
    """The ``__import__`` of sandboxed code: whitelisted copies for import statements;
    ``None`` for the lazy internal imports of C code (see the module docstring)."""

    def __import__(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0):
        if level != 0:
            raise ImportError("relative imports are not allowed in the sandbox")
        mod = modules.get(name)
        if mod is not None:
            # ``import collections.abc`` binds the top-level copy, which holds the child
            return mod if "." not in name or fromlist else modules[name.partition(".")[0]]
        # PyImport_Import (C code) passes a list as fromlist; import statements None or a tuple
        lazy = type(fromlist) is list
        if lazy and type(name) is str and mod is None:
            if name in sys.modules:
                return None
            if name in LAZY_INTERNAL:
                importlib.import_module(name)
                return None
        raise ImportError(f"import of '{name}' is not allowed in the sandbox")

    return __import__


def build_base_namespace() -> dict[str, Any]:
    """Globals shared (by copy) by every program of a worker: builtins, guards, the SPADE
    prelude names (``PRELUDE_MODULES``/``PRELUDE_NAMES``), ``np``/``numpy`` and
    ``ToolUseBaseEnv`` (the trusted base class, readable but not writable)."""
    from ..toolbase import ToolUseBaseEnv

    modules = build_modules()
    builtins_dict = guards.safe_builtins_dict()
    builtins_dict["__import__"] = safe_import(modules)
    own.TRUSTED_BASES.add(ToolUseBaseEnv)
    class_guards.ALLOWED_BASES.add(ToolUseBaseEnv)
    _allow_library_bases(modules)
    ns: dict[str, Any] = {"__builtins__": builtins_dict, **guards.guard_globals()}
    for name in PRELUDE_MODULES:
        ns[name] = modules[name]
    for name, (mod, attr) in PRELUDE_NAMES.items():
        ns[name] = getattr(modules[mod], attr)
    ns.update(dict.fromkeys(NUMPY_NAMES, modules["numpy"]))
    ns["ToolUseBaseEnv"] = ToolUseBaseEnv
    return ns


def _allow_library_bases(modules: dict[str, SandboxModule]) -> None:
    """Library classes programs commonly derive from."""
    import abc
    import collections
    import typing

    class_guards.ALLOWED_BASES.update(
        {
            collections.OrderedDict, collections.defaultdict, collections.Counter, collections.deque,
            collections.UserDict, collections.UserList, abc.ABC, typing.Generic,
            getattr(typing, "_NamedTuple", object),
        }
    )
