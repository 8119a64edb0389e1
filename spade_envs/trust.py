"""Where a source runs, and what data may never decide it (DESIGN.md section 5).

:func:`get_runtime` returns the in-process runtime for code shipped with this package
(``trusted``) or when the user passed ``trust_remote_code=True``, and the process-wide
sandbox otherwise. It lives apart from :mod:`spade_envs.runtime` because the sandbox is
built on that module's interfaces: ``runtime`` <- ``sandbox`` <- ``trust`` keeps the
imports one-way.

Trust comes only from the caller's own argument, never from data:

- :func:`reserved_keywords` is THE set of ``SpadeEnv``'s own keyword names (importing
  :mod:`spade_envs.gym_env` fails if ``SpadeEnv.__init__``'s signature drifts from it). A variant's params, a
  program's ``PARAMETERS`` and any stored kwargs may use none of them;
  :func:`check_params` refuses them with one :class:`InvalidParametersError`.
- A pickled environment never carries trust: unpickling runs the program in the sandbox
  unless the receiving code opted in itself, with :func:`trust_remote_code_on_unpickle`
  (and then only environments that were made with ``trust_remote_code=True``).
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from .errors import UntrustedCodeError
from .runtime import EnvRuntime, InProcessRuntime

_SHARED: dict[str, EnvRuntime] = {}
_LOCK = threading.Lock()


def get_runtime(*, trusted: bool = False, trust_remote_code: bool = False) -> EnvRuntime:
    """The runtime for a source: in-process when the code ships with this package
    (``trusted``) or the user passed ``trust_remote_code=True``; otherwise the sandbox
    (raises :class:`UntrustedCodeError` when no sandbox is available)."""
    with _LOCK:
        if trusted:  # the shipped seed suite: its own turn limits (SPADE never plays it)
            return _SHARED.setdefault("seeds", InProcessRuntime(turn_cap=None))
        if trust_remote_code:
            return _SHARED.setdefault("inprocess", InProcessRuntime())
        if "sandbox" not in _SHARED:
            try:
                from .sandbox import SandboxRuntime
            except ImportError:
                raise UntrustedCodeError(
                    "this source is not shipped with spade-envs and the sandbox is unavailable; "
                    "pass trust_remote_code=True to run it in-process at your own risk"
                ) from None
            _SHARED["sandbox"] = SandboxRuntime()
        return _SHARED["sandbox"]


def reserved_keywords() -> frozenset[str]:
    """``SpadeEnv``'s own keyword names (``env_id``, ``version``, ``source``, ``hint``,
    ``trust_remote_code``, ``runtime``, ``render_mode``, ``env_kwargs``, ``opponent``,
    ``seat``): :data:`spade_envs.parameters.RESERVED_KEYWORDS`, which ``SpadeEnv``'s
    signature is checked against when :mod:`spade_envs.gym_env` is imported. No stored
    params may use them."""
    from .parameters import RESERVED_KEYWORDS

    return RESERVED_KEYWORDS


def check_params(params: Any, where: str = "variant params") -> dict[str, Any]:
    """``params`` (a dict of a program's keyword arguments) when no key is one of
    :func:`reserved_keywords`; else :class:`~spade_envs.parameters.InvalidParametersError`.
    A variant's params reach the program's constructor only, never ``SpadeEnv``'s own
    keywords (trust, id, hint, runtime...)."""
    from .parameters import InvalidParametersError

    if not isinstance(params, Mapping):
        raise InvalidParametersError(f"{where} must be a JSON object of keyword arguments, got {type(params).__name__}")
    bad = sorted(str(k) for k in params if not isinstance(k, str) or k in reserved_keywords())
    if bad:
        raise InvalidParametersError(
            f"{where}: {', '.join(repr(b) for b in bad)} cannot be a program parameter: it is one of SpadeEnv's own "
            f"keywords ({', '.join(sorted(reserved_keywords()))}), which only the caller's own code may pass",
            bad[0])
    return dict(params)


_UNPICKLE_TRUST: contextvars.ContextVar[bool] = contextvars.ContextVar("spade_unpickle_trust", default=False)


@contextlib.contextmanager
def trust_remote_code_on_unpickle() -> Iterator[None]:
    """Inside this block (this thread or task), environments that were made with
    ``trust_remote_code=True`` run in-process again when unpickled; everywhere else an
    unpickled environment runs its program in the sandbox, whatever its pickle says."""
    token = _UNPICKLE_TRUST.set(True)
    try:
        yield
    finally:
        _UNPICKLE_TRUST.reset(token)


def unpickle_trusted() -> bool:
    """Whether the code unpickling now opted in with :func:`trust_remote_code_on_unpickle`."""
    return _UNPICKLE_TRUST.get()
