"""Process layer of the sandbox: what confines a worker process.

Applied in two places (see :mod:`.worker`):

- once in the **zygote** (the pre-loaded process workers are forked from):
  :func:`isolate_network` and :func:`drop_privileges`;
- in every **worker** right after the fork: :func:`apply_limits` and
  :func:`install_audit_hook`.

Network: the zygote calls ``unshare(CLONE_NEWNET)`` through libc (``os.unshare`` only
exists from Python 3.12), falling back to ``CLONE_NEWUSER | CLONE_NEWNET`` for
unprivileged users. Inside the new namespace only a downed loopback exists, so no
connection can be made, not even to 127.0.0.1 of the host. When the kernel refuses
both, the audit hook is the only barrier: it denies every ``socket.*`` event.
:func:`network_mode` reports which applies (``"netns"`` or ``"audit-hook"``); the worker
answers it to ``ping``. The audit hook is installed in every case (defence in depth)
and also denies process creation, ``os.system``, signals, ``ctypes``, file writes and
file-system changes.

Privileges: when running as root the zygote switches to ``nobody`` (``setgroups([])``,
``setgid``, ``setuid``) after unsharing and sets ``PR_SET_NO_NEW_PRIVS``.

Limits per worker: ``RLIMIT_AS`` (address space of the zygote plus ``memory_mb``),
``RLIMIT_CPU`` (``cpu_s`` seconds over the worker's life; a worker over it is killed
and replaced, failing its sessions with ``crash``), ``RLIMIT_FSIZE`` 0 (any file write
fails), ``RLIMIT_NOFILE`` 32 and ``RLIMIT_NPROC`` 0 (no processes, no threads).
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import sys

CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000
PR_SET_PDEATHSIG = 1
PR_SET_NO_NEW_PRIVS = 38

_network_mode = "audit-hook"


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def isolate_network() -> str:
    """Move this process into a private network namespace; returns the mode in force."""
    global _network_mode
    libc = _libc()
    for flags in (CLONE_NEWNET, CLONE_NEWUSER | CLONE_NEWNET):
        if libc.unshare(flags) == 0:
            _network_mode = "netns"
            return _network_mode
    _network_mode = "audit-hook"
    return _network_mode


def network_mode() -> str:
    return _network_mode


def set_parent_death_signal() -> None:
    """Die with SIGKILL when the parent process goes away."""
    _libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def drop_privileges() -> bool:
    """Switch to ``nobody`` when root; set no-new-privs. Returns True when dropped."""
    dropped = False
    if os.geteuid() == 0:
        import pwd

        try:
            nobody = pwd.getpwnam("nobody")
            uid, gid = nobody.pw_uid, nobody.pw_gid
        except KeyError:
            uid = gid = 65534
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
        dropped = True
    _libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    return dropped


def _vm_bytes() -> int:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def apply_limits(memory_mb: int, cpu_s: int) -> None:
    """Resource limits of one worker (after the fork, before running any program)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write over the limit fails, no kill
    address_space = _vm_bytes() + memory_mb * 1024 * 1024
    for limit, value in (
        (resource.RLIMIT_AS, address_space),
        (resource.RLIMIT_CPU, cpu_s),
        (resource.RLIMIT_FSIZE, 0),
        (resource.RLIMIT_NOFILE, 32),
        (resource.RLIMIT_NPROC, 0),
        (resource.RLIMIT_CORE, 0),
    ):
        try:
            resource.setrlimit(limit, (value, value))
        except (ValueError, OSError):
            pass


_DENIED_EVENTS = frozenset(
    """os.system os.exec os.posix_spawn os.spawn os.fork os.forkpty os.kill os.killpg os.putenv
    os.unsetenv os.remove os.rename os.rmdir os.mkdir os.symlink os.link os.chmod os.chown
    os.truncate os.utime os.chdir os.chroot os.startfile subprocess.Popen shutil.rmtree
    shutil.copyfile shutil.move ctypes.dlopen ctypes.dlsym ctypes.cdata ctypes.call_function
    ctypes.addressof ctypes.string_at ctypes.wstring_at ctypes.create_string_buffer
    ctypes.PyObj_FromPtr sys.addaudithook sys.settrace sys.setprofile sys.remote_exec
    _thread.start_new_thread socket.__new__ mmap.__new__ pty.spawn webbrowser.open""".split()
)


def _audit(event: str, args: tuple) -> None:
    if event in _DENIED_EVENTS or event.startswith("socket."):
        raise PermissionError(f"sandbox: '{event}' is not allowed")
    if event == "open" and len(args) > 1:
        mode, flags = args[1], args[2] if len(args) > 2 else 0
        writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC)
        )
        if writes:
            raise PermissionError("sandbox: opening files for writing is not allowed")


def install_audit_hook() -> None:
    """Deny-all hook for network, processes, signals, ctypes and file writes."""
    sys.addaudithook(_audit)
