"""Where a source runs: the one decision between in-process execution and the sandbox.

:func:`get_runtime` returns the in-process runtime for code shipped with this package
(``trusted``) or when the user passed ``trust_remote_code=True``, and the process-wide
sandbox otherwise (DESIGN.md section 5). It lives apart from :mod:`spade_envs.runtime`
because the sandbox is built on that module's interfaces: ``runtime`` <- ``sandbox`` <-
``trust`` keeps the imports one-way.
"""

from __future__ import annotations

import threading

from .errors import UntrustedCodeError
from .runtime import EnvRuntime, InProcessRuntime

_SHARED: dict[str, EnvRuntime] = {}
_LOCK = threading.Lock()


def get_runtime(*, trusted: bool = False, trust_remote_code: bool = False) -> EnvRuntime:
    """The runtime for a source: in-process when the code ships with this package
    (``trusted``) or the user passed ``trust_remote_code=True``; otherwise the sandbox
    (raises :class:`UntrustedCodeError` when no sandbox is available)."""
    with _LOCK:
        if trusted or trust_remote_code:
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
