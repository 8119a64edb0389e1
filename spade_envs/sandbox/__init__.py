"""Sandbox: isolated execution of untrusted environment code (DESIGN.md section 5).

Two layers: a RestrictedPython policy (:mod:`.policy`, :mod:`.guards`, :mod:`.prelude`)
and confined worker processes forked from a pre-loaded zygote (:mod:`.confine`,
:mod:`.worker`, :mod:`.pool`), driven by :class:`SandboxRuntime` (:mod:`.runtime`).
Importing this package is light: the worker side loads on first use.
"""

from .runtime import SandboxRuntime, SandboxSession

__all__ = ["SandboxRuntime", "SandboxSession"]
