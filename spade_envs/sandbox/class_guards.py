"""Class statements in the sandbox: which bases and class bodies a program may use.

RestrictedPython puts ``__metaclass__`` (:data:`build_class`) on every class statement:
it checks the bases (:data:`ALLOWED_BASES` or the program's own classes) and the class
namespace (only the dunders :data:`~.dunders.ALLOWED_DUNDER_DEFS` allows, plain
``__slots__``), builds the class with the proper metaclass and registers it as own
(:func:`register_class`). Own classes are sealed: numpy's array protocols
(:data:`ARRAY_PROTOCOL`) are absent on them, the pickling protocol (:data:`CLASS_ONLY`)
is always the class's, and a program's ``__getattr__`` never answers dunder names.
"""

from __future__ import annotations

import builtins
from typing import Any

from .dunders import ALLOWED_DUNDER_DEFS
from .own import OWN_CLASSES, SandboxViolation, _current_session_classes

ALLOWED_BASES: set[type] = {object, dict, list, set, frozenset, tuple, str, int, float, Exception, BaseException}
ALLOWED_BASES |= {v for v in vars(builtins).values() if isinstance(v, type) and issubclass(v, BaseException)}


def _winner(bases: tuple) -> type:
    meta = type
    for b in bases:
        m = type(b)
        if issubclass(m, meta):
            meta = m
        elif not issubclass(meta, m):
            raise TypeError("metaclass conflict among the bases")
    return meta


#: numpy's array protocols: never answerable by the program's objects
ARRAY_PROTOCOL = (
    "__array__", "__array_interface__", "__array_struct__", "__array_priority__", "__array_function__",
    "__array_ufunc__", "__array_wrap__", "__array_finalize__", "__array_prepare__", "__dlpack__",
    "__dlpack_device__", "__buffer__", "__release_buffer__",
)
#: what a class body may bind besides the dunder methods the policy allows
_CLASS_NAMESPACE_EXTRA = frozenset(
    {"__module__", "__qualname__", "__doc__", "__annotations__", "__classcell__", "__orig_bases__"}
)


class _Blocked:
    """A data descriptor that makes an attribute absent on the class and its instances
    (it wins over the instance ``__dict__``) and refuses to be set."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        raise AttributeError(self.name)

    def __set__(self, obj: Any, value: Any) -> None:
        raise SandboxViolation(f"setting '{self.name}' is not allowed in the sandbox")

    def __delete__(self, obj: Any) -> None:
        raise SandboxViolation(f"deleting '{self.name}' is not allowed in the sandbox")


#: protocol methods library code (``copy``) looks up on the *instance*: on own classes
#: they are always the class's, never an entry the program put in an instance ``__dict__``
CLASS_ONLY = ("__reduce_ex__", "__reduce__", "__getstate__", "__setstate__")


class _ClassOnly:
    """A data descriptor that resolves ``name`` along the class's MRO, skipping the
    instance ``__dict__`` (where ``self.__dict__["__reduce_ex__"] = f`` would otherwise
    hand ``copy`` a reduction that calls setattr on anything)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        owner = type(obj) if owner is None else owner
        for klass in owner.__mro__:
            value = klass.__dict__.get(self.name)
            if value is not None and type(value) is not _ClassOnly:
                return value.__get__(obj, owner) if hasattr(value, "__get__") else value
        raise AttributeError(self.name)

    def __set__(self, obj: Any, value: Any) -> None:
        raise SandboxViolation(f"setting '{self.name}' is not allowed in the sandbox")

    def __delete__(self, obj: Any) -> None:
        raise SandboxViolation(f"deleting '{self.name}' is not allowed in the sandbox")


_BLOCKERS: dict[str, Any] = {name: _Blocked(name) for name in ARRAY_PROTOCOL}
_BLOCKERS.update({name: _ClassOnly(name) for name in CLASS_ONLY})


def _seal(cls: type) -> None:
    for name, blocker in _BLOCKERS.items():
        try:
            type.__setattr__(cls, name, blocker)
        except (AttributeError, TypeError):  # pragma: no cover - immutable library type
            pass


def register_class(cls: Any) -> Any:
    if isinstance(cls, type):
        _seal(cls)
        OWN_CLASSES.add(cls)
        _current_session_classes[0].append(cls)
    return cls


def _guard_getattr_hook(user: Any) -> Any:
    """Wrap a program's ``__getattr__`` so it never answers dunder names (library code
    probes protocols such as ``__array_interface__`` or ``__setstate__`` that way)."""

    def __getattr__(self: Any, name: str) -> Any:
        if name[:2] == "__" and name[-2:] == "__":
            raise AttributeError(name)
        return user(self, name)

    __getattr__.__qualname__ = getattr(user, "__qualname__", "__getattr__")
    return __getattr__


def _check_slots(name: str, slots: Any) -> None:
    """``__slots__`` names plain attributes only (a str, or a tuple/list of str; no dunder
    slot such as ``__dict__``)."""
    items = [slots] if type(slots) is str else list(slots) if type(slots) in (tuple, list) else None
    if items is None or not all(type(i) is str and i.isidentifier() and not (i[:2] == "__" and i[-2:] == "__")
                                for i in items):
        raise SandboxViolation(f"class {name}: __slots__ must be a tuple of plain attribute names in the sandbox")


def _check_namespace(name: str, namespace: Any) -> None:
    for key in list(namespace):
        if type(key) is not str:
            raise SandboxViolation(f"class {name}: non-string attribute names are not allowed in the sandbox")
        if key == "__slots__":
            _check_slots(name, namespace[key])
        elif key[:2] == "__" and key[-2:] == "__" and key not in ALLOWED_DUNDER_DEFS and key not in _CLASS_NAMESPACE_EXTRA:
            raise SandboxViolation(f"class {name} may not define '{key}' in the sandbox")
    user = namespace.get("__getattr__")
    if user is not None:
        namespace["__getattr__"] = _guard_getattr_hook(user)


class _ClassHook:
    """The ``__metaclass__`` RestrictedPython puts on every class statement: checks the
    bases and the class namespace, builds the class with the proper metaclass and
    registers it as own (sealed against numpy's array protocols)."""

    def __prepare__(self, name: str, bases: tuple, **kwargs: Any):
        for b in bases:
            if b not in ALLOWED_BASES and b not in OWN_CLASSES:
                raise SandboxViolation(f"class {name} may not derive from {getattr(b, '__name__', b)!r} in the sandbox")
        meta = _winner(bases)
        return meta.__prepare__(name, bases, **kwargs)

    def __call__(self, name: str, bases: tuple, namespace: dict, **kwargs: Any) -> type:
        _check_namespace(name, namespace)
        return register_class(_winner(bases)(name, bases, namespace, **kwargs))


build_class = _ClassHook()
