"""The dunder methods sandboxed classes may define: one list for the compile-time policy
(:mod:`.policy`) and the run-time guards (:mod:`.guards`), which both check it."""

from __future__ import annotations

#: Dunder methods a program may define on its own classes.
ALLOWED_DUNDER_DEFS = frozenset(
    """__init__ __new__ __post_init__ __str__ __repr__ __format__ __eq__ __ne__ __lt__ __le__
    __gt__ __ge__ __hash__ __bool__ __len__ __iter__ __next__ __reversed__ __contains__
    __getitem__ __setitem__ __delitem__ __missing__ __call__ __enter__ __exit__ __getattr__
    __add__ __radd__ __iadd__ __sub__ __rsub__ __isub__ __mul__ __rmul__ __imul__ __truediv__
    __rtruediv__ __floordiv__ __rfloordiv__ __mod__ __rmod__ __pow__ __rpow__ __neg__ __pos__
    __abs__ __invert__ __and__ __or__ __xor__ __rand__ __ror__ __lshift__ __rshift__ __int__
    __float__ __index__ __round__ __copy__ __deepcopy__""".split()
)
