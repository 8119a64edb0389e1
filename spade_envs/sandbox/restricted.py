"""Restricted execution of one program, in the current process (the worker's half).

:class:`RestrictedLoader` compiles a source under :class:`~.policy.SpadePolicy`, runs its
module body in a fresh copy of the restricted namespace and constructs the environment
class; the live object is wrapped in :class:`spade_envs.runtime.InProcessSession`, so the
session semantics (tool gate, contract checks, error mapping) are the same code as the
trusted runtime. Used inside sandbox workers, and in-process by the benchmark.

Testing switch ``SPADE_SANDBOX_STATIC=0``
    Read once, when a loader is built (in the worker's zygote). With ``0`` the static
    layer is OFF: programs are compiled with plain ``compile`` and run with the real
    builtins and real modules (the trusted prelude), still inside the jailed worker
    process. It exists only to test that the process jail holds on its own (DESIGN.md
    section 5); it is never a default, and the jail stays on. Any other value (or the
    variable unset) keeps the static layer on.
"""

from __future__ import annotations

import os
import sys
import types
from typing import Any

from ..errors import EnvExecutionError, EnvProgramError, FailureKind, SpadeError
from ..runtime import InProcessSession
from . import guards, own
from .policy import compile_program


#: environment variable of the testing switch (see the module docstring)
STATIC_SWITCH = "SPADE_SANDBOX_STATIC"


def static_layer_enabled() -> bool:
    """False only when ``SPADE_SANDBOX_STATIC=0`` (testing the jail alone)."""
    return os.environ.get(STATIC_SWITCH, "1").strip() != "0"


def security_kind(exc: BaseException) -> BaseException:
    """Turn an ``EnvExecutionError`` caused by a :class:`~.guards.SandboxViolation` into
    ``kind="security"``; other errors are returned unchanged."""
    ctx = exc.__context__
    if isinstance(exc, EnvExecutionError) and isinstance(ctx, guards.SandboxViolation):
        return EnvExecutionError(f"sandbox violation: {ctx}", kind=FailureKind.SECURITY)
    return exc


class RestrictedSession(InProcessSession):
    """An :class:`InProcessSession` over a restricted program; remembers the classes the
    program created so :meth:`forget` can unregister them."""

    classes: list[type]
    module_name: str = ""

    def forget(self) -> None:
        sys.modules.pop(self.module_name, None)
        for cls in self.classes:
            own.OWN_CLASSES.discard(cls)
        self.classes = []


class RestrictedLoader:
    """Opens restricted programs; the base namespace is built once."""

    def __init__(self, static: bool | None = None) -> None:
        self.static = static_layer_enabled() if static is None else static
        if self.static:
            from .prelude import build_base_namespace

            self.base = build_base_namespace()
        else:
            from ..program import install_alias_modules, trusted_prelude

            install_alias_modules()
            self.base = trusted_prelude()

    def open(self, source: str, class_name: str, *, kwargs: dict[str, Any] | None = None,
             filename: str = "<env>", module_name: str = "spade_env") -> RestrictedSession:
        """Compile, run the module body, construct ``class_name(**kwargs)``.

        Raises ``EnvProgramError`` (stage ``sandbox_compile`` for policy refusals,
        ``compile`` when the module body raises, ``interface`` when the class is missing)
        or ``EnvExecutionError`` (the constructor raised; ``kind="security"`` for a
        policy violation at run time)."""
        code = compile_program(source, filename) if self.static else _plain_compile(source, filename)
        # the program's globals are a module registered under its name, so library code
        # that looks a class's module up (dataclasses, enum, pickle-free copy) finds it
        module = types.ModuleType(module_name)
        namespace = module.__dict__
        namespace.update(self.base)
        namespace["__name__"] = module_name
        sys.modules[module_name] = module
        classes: list[type] = []
        own._current_session_classes[0] = classes
        try:
            try:
                exec(code, namespace)  # noqa: S102 - restricted code object
            except guards.SandboxViolation as exc:
                raise EnvExecutionError(f"{filename}: sandbox violation in the module body: {exc}", kind=FailureKind.SECURITY) from None
            except RecursionError:
                raise EnvExecutionError(f"{filename}: module body exceeded the recursion limit", kind=FailureKind.RECURSION) from None
            except MemoryError:
                raise EnvExecutionError(f"{filename}: module body ran out of memory", kind=FailureKind.MEMORY) from None
            except Exception as exc:
                raise EnvProgramError(f"{filename}: module body raised {type(exc).__name__}: {exc}", stage="compile") from None
            cls = namespace.get(class_name)
            if not isinstance(cls, type):
                raise EnvProgramError(f"{filename}: class {class_name} was not defined by the module body")
            try:
                env = _construct(cls, class_name, kwargs or {})
                session = RestrictedSession(env)
            except SpadeError as exc:
                raise security_kind(exc) from None
        except BaseException:
            for c in classes:
                own.OWN_CLASSES.discard(c)
            sys.modules.pop(module_name, None)
            raise
        session.classes = classes
        session.module_name = module_name
        return session


def _plain_compile(source: str, filename: str) -> Any:
    """Compilation with the static layer off: the plain compiler, same error stage."""
    try:
        return compile(source, filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise EnvProgramError(f"{filename}: cannot compile ({type(exc).__name__}: {exc})", stage="sandbox_compile") from None


def _construct(cls: type, class_name: str, kwargs: dict[str, Any]) -> Any:
    from ..program import construct_env
    from ..runtime import guarded_call

    return guarded_call(f"{class_name}()", lambda: construct_env(cls, kwargs))
