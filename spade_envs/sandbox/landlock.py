"""Landlock: a read-only view of the few directories a worker needs (kernel >= 5.13).

:func:`build` makes a Landlock ruleset (once, in the zygote) that handles every file-system right the
kernel knows (so anything not granted is denied: writing, creating, removing, renaming,
linking, truncating, ioctl on devices, executing) and grants only ``READ_FILE`` and
``READ_DIR`` beneath the given paths. From ABI 4 it also handles TCP bind/connect with
no rule (denied); from ABI 6 it scopes signals and abstract UNIX sockets, so a worker
cannot signal or connect to any process outside its own Landlock domain (each worker
creates its own). The kernel interface is three system calls, reached through libc's
``syscall``; the numbers are those of the generic syscall table (x86-64 and arm64).

:meth:`Ruleset.apply` (each worker) and :func:`restrict` (both at once) confine the
calling process. The restriction is irreversible and inherited; it needs ``PR_SET_NO_NEW_PRIVS`` (set by
the caller) or ``CAP_SYS_ADMIN``.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterable

_SYS_CREATE_RULESET = 444
_SYS_ADD_RULE = 445
_SYS_RESTRICT_SELF = 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1

READ_FILE = 1 << 2
READ_DIR = 1 << 3
#: every file-system access right, by the ABI version that introduced it
_FS_RIGHTS = {1: (1 << 13) - 1, 2: 1 << 13, 3: 1 << 14, 5: 1 << 15}  # REFER, TRUNCATE, IOCTL_DEV
_NET_BIND_TCP, _NET_CONNECT_TCP = 1, 2
_SCOPE_ABSTRACT_UNIX, _SCOPE_SIGNAL = 1, 2


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class LandlockError(OSError):
    """The kernel refused a Landlock call (errno and step in the message)."""


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def abi_version() -> int:
    """The kernel's Landlock ABI (0 when unsupported or disabled)."""
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    version = libc.syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return max(0, int(version))


class Ruleset:
    """A built ruleset (its descriptor) and what it covers: :func:`build` makes one once
    (the zygote), :meth:`apply` confines the calling process with it (each worker)."""

    def __init__(self, fd: int, abi: int, paths: int) -> None:
        self.fd, self.abi, self.paths = fd, abi, paths

    def apply(self, fd: int | None = None) -> dict:
        """``landlock_restrict_self`` with this ruleset (``fd``: its descriptor's number
        in this process, when it was moved). Returns what :func:`restrict` returns."""
        libc = _libc()
        libc.syscall.restype = ctypes.c_long
        if libc.syscall(_SYS_RESTRICT_SELF, ctypes.c_int(self.fd if fd is None else fd), ctypes.c_uint32(0)) != 0:
            err = ctypes.get_errno()
            raise LandlockError(err, f"landlock_restrict_self: {os.strerror(err)}")
        return {"abi": self.abi, "signals_scoped": self.abi >= 6, "tcp_denied": self.abi >= 4}

    def close(self) -> None:
        try:
            os.close(self.fd)
        except OSError:
            pass


def build(read_paths: Iterable[str]) -> Ruleset:
    """A ruleset granting ``READ_FILE``/``READ_DIR`` beneath ``read_paths`` and denying
    every other right the kernel handles; raises :class:`LandlockError` when refused."""
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    abi = abi_version()
    if abi < 1:
        err = ctypes.get_errno()
        raise LandlockError(err, f"landlock_create_ruleset: {os.strerror(err)}")
    fs = sum(bits for version, bits in _FS_RIGHTS.items() if version <= abi)
    attr = _RulesetAttr(fs, (_NET_BIND_TCP | _NET_CONNECT_TCP) if abi >= 4 else 0,
                        (_SCOPE_ABSTRACT_UNIX | _SCOPE_SIGNAL) if abi >= 6 else 0)
    size = ctypes.sizeof(_RulesetAttr) if abi >= 6 else (16 if abi >= 4 else 8)
    ruleset = libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        err = ctypes.get_errno()
        raise LandlockError(err, f"landlock_create_ruleset: {os.strerror(err)}")
    count = 0
    try:
        for path in read_paths:
            count += 1
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                access = READ_FILE | (READ_DIR if os.path.isdir(path) else 0)
                rule = _PathBeneath(access, fd)
                if libc.syscall(_SYS_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH),
                                ctypes.byref(rule), ctypes.c_uint32(0)) != 0:
                    err = ctypes.get_errno()
                    raise LandlockError(err, f"landlock_add_rule({path}): {os.strerror(err)}")
            finally:
                os.close(fd)
    except BaseException:
        os.close(ruleset)
        raise
    return Ruleset(ruleset, abi, count)


def restrict(read_paths: Iterable[str]) -> dict:
    """Confine this process (and its future children) to reading ``read_paths``.

    Returns ``{"abi": n, "signals_scoped": bool, "tcp_denied": bool}``; raises
    :class:`LandlockError` with the errno when the kernel refuses."""
    ruleset = build(read_paths)
    try:
        return ruleset.apply()
    finally:
        ruleset.close()
