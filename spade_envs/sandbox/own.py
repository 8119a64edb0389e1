"""Which objects are the sandboxed program's own: the shared state of the run-time guards.

:mod:`.class_guards` registers every class a program defines in :data:`OWN_CLASSES`;
:mod:`.guards` reads it to decide what an attribute access may see (:func:`is_own`).
A refused access anywhere in the sandbox raises :class:`SandboxViolation`.
"""

from __future__ import annotations

from typing import Any


class SandboxViolation(Exception):
    """Sandboxed code tried something the policy forbids."""


#: classes the sandboxed program created (own classes); maintained by build_class
OWN_CLASSES: set[type] = set()
#: trusted base classes whose private/dunder *reads* are allowed (never writes)
TRUSTED_BASES: set[type] = set()
#: the list of own classes of the session currently running (for cleanup on close)
_current_session_classes: list[list[type]] = [[]]


def is_own(obj: Any) -> bool:
    """Whether ``obj`` is the program's: an own class, an instance of one, or ``super()``
    over one."""
    return _is_own(obj)


def _is_own(obj: Any) -> bool:
    cls = type(obj)
    if cls in OWN_CLASSES:
        return True
    if cls is super:
        owner = getattr(obj, "__self__", None)
        return type(owner) in OWN_CLASSES or owner in OWN_CLASSES
    return isinstance(obj, type) and obj in OWN_CLASSES
