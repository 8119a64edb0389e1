"""Run-time guards of the sandbox: what RestrictedPython's rewritten code calls.

``a.b`` becomes ``_getattr_(a, "b")``, ``a.b = v`` becomes ``_write_(a).b = v``; this
module decides, per object:

- *own* objects (:mod:`.own`) are instances of classes the program defined (registered
  by :data:`.class_guards.build_class`, the ``__metaclass__`` hook RestrictedPython puts
  on every class statement), those classes themselves, and ``super()`` proxies over them. Their
  single-underscore attributes are readable and writable (``self._answer``), and a few
  dunders (:data:`~.policy.ALLOWED_DUNDER_READS`) readable.
- *foreign* objects (modules copies, builtins, library objects) expose only public
  attributes, minus :data:`DENIED_ATTRS` (frames, generators, file writers, ``ctypes``);
  ``__name__``/``__qualname__``/``__doc__`` are readable everywhere. ``str.format`` and
  ``format_map`` are replaced by a formatter whose field lookups go through these same
  guards, so ``"{0.__class__}".format(x)`` is refused.
- writes go to own objects and plain containers only (never to shared modules/classes).
- ``type`` is :data:`type_function`: ``type(x)`` of an instance is its class, but it
  never hands out a metaclass (``type(int)`` is ``type_function`` itself) and refuses
  three-argument class creation; ``isinstance(x, type)`` still works.
- classes the program defines are checked and sealed by :mod:`.class_guards` (only the
  dunders the policy allows; no ``__array_interface__`` for numpy; a ``__getattr__``
  that never answers dunder names).

A refused access raises :class:`SandboxViolation`; the worker reports an environment
that let one escape with ``EnvExecutionError(kind="security")``.
"""

from __future__ import annotations

import builtins
import collections
import functools
import string
import types
from typing import Any

from RestrictedPython.Guards import safe_builtins
from RestrictedPython.PrintCollector import PrintCollector

from .class_guards import build_class
from .dunders import ALLOWED_DUNDER_DEFS
from .own import OWN_CLASSES, TRUSTED_BASES, SandboxViolation, _is_own

try:  # string.Formatter internals: the C splitter of "a.b[c]" field names
    from _string import formatter_field_name_split
except ImportError:  # pragma: no cover
    formatter_field_name_split = None


_ANY_DUNDERS = frozenset({"__name__", "__qualname__", "__doc__"})
_OWN_DUNDERS = ALLOWED_DUNDER_DEFS | _ANY_DUNDERS | {"__module__"}
_INSTANCE_DUNDERS = _OWN_DUNDERS | {"__class__", "__dict__"}
DENIED_ATTRS = frozenset(
    """gi_frame gi_code gi_yieldfrom cr_frame cr_code cr_await cr_origin ag_frame ag_code ag_await
    tb_frame tb_next f_back f_builtins f_code f_globals f_locals f_trace co_code
    tofile dump dumps ctypes cffi resize __array_interface__ __array_struct__""".split()
)
_OPAQUE_TYPES = (types.FrameType, types.TracebackType, types.CodeType)
_GEN_TYPES = (types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType)
_GEN_PUBLIC = frozenset({"send", "throw", "close"})
#: types of the module copies (their public functions may be called ``dump(s)``)
MODULE_TYPES: set[type] = set()
_SPECIAL = DENIED_ATTRS | {"format", "format_map"}
_OPAQUE_SET = frozenset(_OPAQUE_TYPES + _GEN_TYPES)
#: public names :func:`guarded_getattr` treats specially, on some objects or all: every
#: other public name it passes to ``getattr`` whatever the object (on an opaque object
#: such a name does not exist), so the policy compiles ``a.b`` for those as plain reads
GUARDED_PUBLIC_NAMES = _SPECIAL | frozenset(
    name for cls in _OPAQUE_SET for name in dir(cls) if not name.startswith("_")
)
WRITABLE_CONTAINERS: set[type] = {
    list, dict, set, bytearray, collections.deque, collections.OrderedDict, collections.defaultdict, collections.Counter
}


def guarded_getattr(obj: Any, name: str, *default: Any) -> Any:
    """``getattr`` for sandboxed code (also the ``getattr`` builtin it sees)."""
    if type(name) is not str:
        raise TypeError("attribute name must be a string")
    if name[:1] != "_":
        if name not in _SPECIAL and type(obj) not in _OPAQUE_SET:
            return getattr(obj, name, *default)  # the common case: a public attribute
    elif name[1:2] != "_" and type(obj) in OWN_CLASSES:
        return getattr(obj, name, *default)  # the next most common: self._private
    if name[:1] == "_":
        if name in _ANY_DUNDERS:
            pass
        elif _is_own(obj):
            if name[:2] == "__" and name[-2:] == "__":
                allowed = _OWN_DUNDERS if isinstance(obj, (type, super)) else _INSTANCE_DUNDERS
                if name not in allowed:
                    raise SandboxViolation(f"access to '{name}' is not allowed in the sandbox")
        elif isinstance(obj, type) and obj in TRUSTED_BASES and name not in ("__dict__", "__class__"):
            if name[:2] == "__" and name not in ALLOWED_DUNDER_DEFS:
                raise SandboxViolation(f"access to '{name}' is not allowed in the sandbox")
        else:
            raise SandboxViolation(
                f"access to '{name}' of a {type(obj).__name__} object is not allowed in the sandbox"
            )
        return getattr(obj, name, *default)
    if name in DENIED_ATTRS and not _is_own(obj) and type(obj) not in MODULE_TYPES:
        raise SandboxViolation(f"access to '{name}' is not allowed in the sandbox")
    if name == "format" or name == "format_map":
        return _safe_format_of(getattr(obj, name, *default), name)
    if isinstance(obj, _OPAQUE_TYPES) or (isinstance(obj, _GEN_TYPES) and name not in _GEN_PUBLIC):
        raise SandboxViolation(f"access to '{name}' of a {type(obj).__name__} is not allowed in the sandbox")
    return getattr(obj, name, *default)


def _safe_format_of(value: Any, name: str) -> Any:
    """Replace ``str.format``/``format_map`` however they were reached: on a ``str``, a
    ``str`` subclass (instance or class), or through ``super()``."""
    if value is _STR_FORMAT:
        return safe_format
    if value is _STR_FORMAT_MAP:
        return safe_format_map
    if type(value) is _BUILTIN_METHOD and isinstance(getattr(value, "__self__", None), str):
        if value.__name__ == "format":
            return functools.partial(safe_format, value.__self__)
        if value.__name__ == "format_map":
            return functools.partial(safe_format_map, value.__self__)
    return value


_STR_FORMAT = str.format
_STR_FORMAT_MAP = str.format_map
_BUILTIN_METHOD = type("".format)


def guarded_hasattr(obj: Any, name: str) -> bool:
    try:
        guarded_getattr(obj, name)
    except (AttributeError, SandboxViolation):
        return False
    return True


def guarded_write(obj: Any) -> Any:
    """``_write_``: own objects and plain containers are writable, nothing else."""
    cls = type(obj)
    if cls in OWN_CLASSES or cls in WRITABLE_CONTAINERS or (isinstance(obj, type) and obj in OWN_CLASSES):
        return obj
    raise SandboxViolation(f"a {cls.__name__} object cannot be modified in the sandbox")


def _check_write_name(name: Any) -> None:
    if not isinstance(name, str) or (name[:2] == "__" and name[-2:] == "__"):
        raise SandboxViolation(f"setting '{name}' is not allowed in the sandbox")


def guarded_setattr(obj: Any, name: str, value: Any) -> None:
    _check_write_name(name)
    setattr(guarded_write(obj), name, value)


def guarded_delattr(obj: Any, name: str) -> None:
    _check_write_name(name)
    delattr(guarded_write(obj), name)


def guarded_vars(obj: Any) -> dict:
    if type(obj) in OWN_CLASSES:
        return vars(obj)
    raise SandboxViolation("vars() is only allowed on the program's own objects")


class _TypeFunction:
    """The sandbox's ``type``: one argument only, and never a metaclass."""

    __slots__ = ()
    __name__ = "type"
    __qualname__ = "type"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) != 1 or kwargs:
            raise SandboxViolation("type() with three arguments (class creation) is not allowed in the sandbox; use a class statement")
        cls = type(args[0])
        return self if issubclass(cls, type) else cls

    def __instancecheck__(self, obj: Any) -> bool:
        return isinstance(obj, type)

    def __subclasscheck__(self, cls: Any) -> bool:
        return cls is self or (isinstance(cls, type) and issubclass(cls, type))

    def __getitem__(self, item: Any) -> Any:
        import typing

        return typing.Type[item]

    def __repr__(self) -> str:
        return "<class 'type'>"


type_function = _TypeFunction()
guarded_type = type_function


def guarded_inplacevar(op: str, x: Any, y: Any) -> Any:
    return _INPLACE[op](x, y)


import operator as _op  # noqa: E402

_INPLACE = {
    "+=": _op.iadd, "-=": _op.isub, "*=": _op.imul, "/=": _op.itruediv, "%=": _op.imod,
    "**=": _op.ipow, "<<=": _op.ilshift, ">>=": _op.irshift, "|=": _op.ior, "^=": _op.ixor,
    "&=": _op.iand, "//=": _op.ifloordiv, "@=": _op.imatmul,
}


class _SafeFormatter(string.Formatter):
    """``str.format`` whose ``{0.attr}``/``{0[key]}`` lookups go through the guards."""

    def get_field(self, field_name, args, kwargs):
        first, rest = formatter_field_name_split(field_name)
        obj = self.get_value(first, args, kwargs)
        for is_attr, key in rest:
            obj = guarded_getattr(obj, key) if is_attr else obj[key]
        return obj, first


_FORMATTER = _SafeFormatter()


def safe_format(template: str, /, *args: Any, **kwargs: Any) -> str:
    if not isinstance(template, str):
        raise TypeError("format() needs a str template")
    return _FORMATTER.vformat(template, args, kwargs)


def safe_format_map(template: str, mapping: Any, /) -> str:
    if not isinstance(template, str):
        raise TypeError("format_map() needs a str template")
    return _FORMATTER.vformat(template, (), mapping)


def attrgetter(*names: str):
    """``operator.attrgetter`` through the guards."""
    def get(obj):
        out = []
        for dotted in names:
            value = obj
            for part in dotted.split("."):
                value = guarded_getattr(value, part)
            out.append(value)
        return out[0] if len(names) == 1 else tuple(out)
    return get


def methodcaller(name: str, /, *args: Any, **kwargs: Any):
    """``operator.methodcaller`` through the guards."""
    return lambda obj: guarded_getattr(obj, name)(*args, **kwargs)




def safe_builtins_dict() -> dict[str, Any]:
    """The ``__builtins__`` of sandboxed code (shared, never exposed as an object)."""
    b = {k: v for k, v in safe_builtins.items() if k != "_getattr_"}
    for name in (
        "all any enumerate filter map max min sum sorted reversed zip list dict set frozenset tuple "
        "iter next object property staticmethod classmethod super bytes bytearray format ascii bin "
        "NotImplemented"
    ).split():
        b[name] = getattr(builtins, name)
    b.update(
        getattr=guarded_getattr, hasattr=guarded_hasattr, setattr=guarded_setattr, delattr=guarded_delattr,
        vars=guarded_vars, type=guarded_type,
    )
    b.update({k: v for k, v in vars(builtins).items() if isinstance(v, type) and issubclass(v, BaseException)})
    for name in ("__build_class__",):
        b[name] = getattr(builtins, name)
    return b


def plain_unpack(it: Any, spec: Any, _getiter_: Any) -> Any:
    """``a, b = it``: RestrictedPython's ``guarded_unpack_sequence`` runs every level of
    the target through ``_getiter_``, which here is the plain ``iter``: unpacking ``it``
    itself is the same (and stops at the first surplus item instead of reading all)."""
    return it


def plain_iter_unpack(it: Any, spec: Any, _getiter_: Any) -> Any:
    """``for a, b in it``: the same for loop targets (see :func:`plain_unpack`)."""
    return it


def guard_globals() -> dict[str, Any]:
    """The helper names RestrictedPython's rewritten code calls."""
    return {
        "_getattr_": guarded_getattr,
        "_type_": type,  # the real one: with _own_, the policy's inline check for own instances
        "_own_": OWN_CLASSES,
        "_write_": guarded_write,
        "_getitem_": _op.getitem,
        "_getiter_": iter,
        "_iter_unpack_sequence_": plain_iter_unpack,
        "_unpack_sequence_": plain_unpack,
        "_inplacevar_": guarded_inplacevar,
        "_apply_": lambda f, *a, **k: f(*a, **k),
        "_print_": PrintCollector,
        "__metaclass__": build_class,
    }
