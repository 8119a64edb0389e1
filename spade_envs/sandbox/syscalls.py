"""The seccomp allow-list of a sandbox worker, built with libseccomp (``pyseccomp``).

Default action: fail with ``EPERM`` (Python sees an ``OSError``; nothing is killed).
Allowed: what a running CPython interpreter with numpy needs once everything is
imported — memory management, reading and writing **already open** descriptors, clocks,
futexes, ``stat``/``getdents`` and opening files **read-only** (``open``/``openat`` with
``O_WRONLY``, ``O_RDWR``, ``O_CREAT``, ``O_TRUNC`` or ``O_APPEND`` is refused; ``openat2``
cannot be inspected and is refused). Signals only to the worker itself (the pid and
thread id are fixed into the filter when it is installed, after the fork). Everything
else is refused, in particular: ``clone``/``fork``/``vfork``/``clone3`` (no processes, no
threads), ``execve``, ``socket``/``connect``/``bind``, ``ptrace``,
``process_vm_readv/writev``, ``pidfd_*``, ``mount``/``umount2``/``pivot_root``/``chroot``/
``unshare``/``setns``, ``kill`` of other pids, ``prctl``, ``seccomp``, ``bpf``,
``perf_event_open``, ``io_uring_*``, ``userfaultfd``, ``memfd_create``, ``keyctl``,
every call that creates, removes, renames, links or changes files, and ``set*id``.
Syscalls of foreign architectures (x32, i386) kill the process (libseccomp's default).
"""

from __future__ import annotations

import errno
import os

ALLOWED = """
read write readv writev pread64 preadv preadv2 close close_range fstat newfstatat stat lstat statx
lseek mmap munmap mprotect mremap madvise brk mincore rt_sigaction rt_sigprocmask rt_sigreturn
sigaltstack getpid getppid gettid getuid geteuid getgid getegid getresuid getresgid getgroups
getpgrp getpgid getsid clock_gettime clock_getres clock_nanosleep nanosleep gettimeofday time
getrandom futex futex_waitv exit exit_group getdents64 getdents readlink readlinkat access faccessat
faccessat2 getcwd fcntl dup dup2 dup3 poll ppoll select pselect6 sched_yield sched_getaffinity
sched_getparam sched_getscheduler getrusage times getrlimit sysinfo uname set_robust_list
get_robust_list rseq set_tid_address restart_syscall getcpu membarrier fadvise64 arch_prctl
""".split()

#: ``ioctl`` requests CPython issues on its own descriptors
_IOCTLS = (0x5401, 0x541B, 0x5421, 0x5451, 0x5450)  # TCGETS FIONREAD FIONBIO FIOCLEX FIONCLEX
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def install() -> int:
    """Load the allow-list into this thread (irreversible, inherited). Needs
    ``PR_SET_NO_NEW_PRIVS`` or ``CAP_SYS_ADMIN``. Returns the number of rules."""
    import pyseccomp as sc

    flt = sc.SyscallFilter(sc.ERRNO(errno.EPERM))
    rules = 0
    for name in ALLOWED:
        try:
            flt.add_rule(sc.ALLOW, name)
            rules += 1
        except (OSError, ValueError, RuntimeError):  # not a syscall of this architecture
            continue
    for name, flags_arg in (("open", 1), ("openat", 2)):
        try:
            flt.add_rule(sc.ALLOW, name, sc.Arg(flags_arg, sc.MASKED_EQ, _WRITE_FLAGS, 0))
            rules += 1
        except (OSError, ValueError, RuntimeError):
            continue
    for request in _IOCTLS:
        flt.add_rule(sc.ALLOW, "ioctl", sc.Arg(1, sc.EQ, request))
        rules += 1
    pid, tid = os.getpid(), _gettid()
    flt.add_rule(sc.ALLOW, "kill", sc.Arg(0, sc.EQ, pid))
    flt.add_rule(sc.ALLOW, "tgkill", sc.Arg(0, sc.EQ, pid), sc.Arg(1, sc.EQ, tid))
    flt.add_rule(sc.ALLOW, "tkill", sc.Arg(0, sc.EQ, tid))
    flt.add_rule(sc.ALLOW, "prlimit64", sc.Arg(0, sc.EQ, 0), sc.Arg(2, sc.EQ, 0))  # read own limits only
    flt.load()
    return rules + 6


def _gettid() -> int:
    try:
        import threading

        return threading.get_native_id()
    except (ImportError, AttributeError):  # pragma: no cover
        return os.getpid()
