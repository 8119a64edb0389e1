"""Process layer of the sandbox (the security boundary): what confines a worker.

Applied in three places:

- by the **caller** when it starts the zygote: :func:`clean_environment` (an allow-list
  of variables; no tokens, no credentials reach the zygote or any worker);
- once in the **zygote**: :func:`isolate_network` (``unshare(CLONE_NEWNET)``, falling
  back to ``CLONE_NEWUSER | CLONE_NEWNET`` for unprivileged users; only a downed loopback
  exists inside, so no connection can be made, not even to the host's 127.0.0.1);
- in every **worker**, right after the fork and before any program arrives:
  :func:`jail_worker`, in this order —

  1. descriptors: everything but the request and reply pipes is closed, 0-2 read
     ``/dev/null``;
  2. rlimits: ``RLIMIT_AS`` (the zygote's address space plus ``memory_mb``),
     ``RLIMIT_CPU`` (``cpu_s`` over the worker's life), ``RLIMIT_FSIZE`` 0,
     ``RLIMIT_NOFILE`` 32, ``RLIMIT_NPROC`` 0, ``RLIMIT_CORE`` 0;
  3. ``PR_SET_NO_NEW_PRIVS``;
  4. Landlock (:mod:`.landlock`, the ruleset built once by the zygote): read-only access
     beneath the directories of the modules the zygote loaded (the standard library and
     each imported package) and of :data:`LAZY_PACKAGES`, nothing else; TCP and signals outside the worker's own domain denied where the ABI has them;
  5. a distinct uid per worker when the zygote runs as root (``WORKER_UID_BASE`` + the
     worker's pid, unique among live processes; groups dropped), so no worker can signal
     or inspect another worker, the zygote or the caller by the kernel's permission
     checks; ``PR_SET_DUMPABLE`` 0;
  6. the seccomp allow-list (:mod:`.syscalls`);
  7. the audit hook (defence in depth only: a program that escapes the static layer can
     replace its code object; the kernel layers above do not depend on it).

Each step that the kernel refuses is recorded with its errno in the layer report
(:func:`jail_worker`'s result), which the worker sends to the caller before serving;
:class:`~.runtime.SandboxRuntime` exposes it as ``info()["layers"]`` and warns once.
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import sys
from collections.abc import Iterable, Mapping
from typing import Any

CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38
#: workers of a root zygote run as this uid plus their pid (never a real account's uid)
WORKER_UID_BASE = 1 << 30

#: variables a zygote inherits from the caller (anything else, tokens included, is dropped)
ENV_ALLOWED = ("LANG", "LC_ALL", "LC_CTYPE", "TZ", "PYTHONPATH", "PYTHONHASHSEED", "SPADE_SANDBOX_STATIC")

_network_mode = "audit-hook"


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _errno_text() -> str:
    import errno

    err = ctypes.get_errno()
    return f"{errno.errorcode.get(err, err)} ({os.strerror(err)})"


def clean_environment(source: Mapping[str, str]) -> dict[str, str]:
    """The zygote's environment: allow-listed variables of ``source`` plus fixed ones."""
    env = {k: source[k] for k in ENV_ALLOWED if k in source}
    env.update(PATH="/usr/bin:/bin", HOME="/nonexistent", OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               MKL_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1", PYTHONNOUSERSITE="1")
    return env


def isolate_network() -> str:
    """Move this process into a private network namespace; returns the mode in force."""
    global _network_mode
    libc = _libc()
    for flags in (CLONE_NEWNET, CLONE_NEWUSER | CLONE_NEWNET):
        if libc.unshare(flags) == 0:
            _network_mode = "netns"
            return _network_mode
    _network_mode = f"audit-hook (unshare refused: {_errno_text()})"
    return _network_mode


def network_mode() -> str:
    return _network_mode


def set_parent_death_signal() -> None:
    """Die with SIGKILL when the parent process goes away."""
    _libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


#: top-level packages a quick zygote's workers may import later, dependencies included:
#: jsonschema (tool specs) and those of the lazily built module copies
#: (:class:`.prelude.LazySandboxModule`: numpy, math_verify); the full zygote's view
#: holds them anyway. A test checks the list against a real import.
JSONSCHEMA_PACKAGES = (
    "jsonschema", "jsonschema_specifications", "referencing", "rpds", "attr", "attrs", "idna", "typing_extensions",
)
LAZY_PACKAGES = JSONSCHEMA_PACKAGES + ("numpy", "math_verify", "latex2sympy2_extended", "sympy", "mpmath", "antlr4")
#: standard-library modules jsonschema needs, loaded by a quick zygote (a worker's uid may
#: not reach the standard library; see :func:`readable_by_workers`)
LAZY_STDLIB = ("uuid", "zipfile", "pprint", "unicodedata", "binascii", "importlib.resources", "importlib.readers")
#: compiled modules of jsonschema's dependencies, loaded by a quick zygote too: their
#: shared libraries (``libgcc_s``) lie outside a worker's file view
LAZY_NATIVE = ("rpds",)


def readable_by_workers(paths: Iterable[str]) -> bool:
    """Whether a worker can read ``paths`` by the file modes: always when it keeps the
    zygote's uid; with a distinct uid (root zygote), when each path and every directory
    above it grants read and search to other users."""
    import stat

    if os.geteuid() != 0:
        return True
    for path in paths:
        node = os.path.realpath(path)
        while True:
            try:
                mode = os.stat(node).st_mode
            except OSError:
                return False
            need = stat.S_IXOTH | (stat.S_IROTH if node == os.path.realpath(path) else 0)
            if stat.S_ISDIR(mode) and mode & need != need:
                return False
            if not stat.S_ISDIR(mode) and not mode & stat.S_IROTH:
                return False
            parent = os.path.dirname(node)
            if parent == node:
                break
            node = parent
    return True


def package_paths(names: Iterable[str]) -> list[str]:
    """Where the top-level packages ``names`` live (found without importing them)."""
    import importlib.util

    paths = []
    for name in names:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is None:
            continue
        if spec.submodule_search_locations:
            paths.extend(os.path.realpath(p) for p in spec.submodule_search_locations)
        elif spec.origin and os.path.isfile(spec.origin):
            paths.append(os.path.realpath(spec.origin))
    return paths


def module_read_paths(lazy: Iterable[str] = ()) -> list[str]:
    """What a worker may read: the standard library and the directory (or single file)
    of every top-level package currently imported, or named in ``lazy`` (found without
    importing it) — never a whole ``sys.path`` entry, which for an editable install is
    a repository checkout."""
    import sysconfig

    paths = {os.path.realpath(sysconfig.get_paths()[k]) for k in ("stdlib", "platstdlib")}
    paths.update(package_paths(lazy))
    entries = sorted({os.path.realpath(p) for p in sys.path if p and os.path.isdir(p)}, key=len, reverse=True)
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if not isinstance(file, str):
            continue
        real = os.path.realpath(file)
        for entry in entries:
            if real.startswith(entry + os.sep):
                first = real[len(entry) + 1 :].split(os.sep, 1)[0]
                paths.add(os.path.join(entry, first))
                break
    libs = {os.path.join(os.path.dirname(p), os.path.basename(p) + ".libs") for p in paths}
    paths |= {p for p in libs if os.path.isdir(p)}  # vendored shared libraries (numpy.libs)
    kept: list[str] = []
    for path in sorted(p for p in paths if os.path.exists(p)):
        if not any(path.startswith(k + os.sep) for k in kept):
            kept.append(path)
    return kept


def _close_fds(keep: Iterable[int]) -> list[int]:
    """Move ``keep`` to 3, 4, ...; close every other descriptor; 0-2 read /dev/null."""
    keep = list(keep)
    moved = []
    for i, fd in enumerate(keep):
        target = 10_000 + i
        os.dup2(fd, target, inheritable=False)
        moved.append(target)
    null = os.open(os.devnull, os.O_RDONLY)
    for std in (0, 1, 2):
        os.dup2(null, std)
    final = []
    for i, fd in enumerate(moved):
        os.dup2(fd, 3 + i, inheritable=False)
        final.append(3 + i)
    os.closerange(3 + len(final), 1 << 16)
    return final


def _rlimits(memory_mb: int, cpu_s: int) -> str:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write over the limit fails, no kill
    address_space = _vm_bytes() + memory_mb * 1024 * 1024
    failed = []
    for name, limit, value in (
        ("AS", resource.RLIMIT_AS, address_space), ("CPU", resource.RLIMIT_CPU, cpu_s),
        ("FSIZE", resource.RLIMIT_FSIZE, 0), ("NOFILE", resource.RLIMIT_NOFILE, 32),
        ("NPROC", resource.RLIMIT_NPROC, 0), ("CORE", resource.RLIMIT_CORE, 0),
    ):
        try:
            resource.setrlimit(limit, (value, value))
        except (ValueError, OSError) as exc:
            failed.append(f"{name}: {exc}")
    return "applied" if not failed else "partly: " + "; ".join(failed)


def _vm_bytes() -> int:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _distinct_uid() -> str:
    if os.geteuid() != 0:
        return f"shared uid {os.getuid()} (not root; Landlock signal scoping and seccomp still apply)"
    uid = WORKER_UID_BASE + os.getpid()
    try:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    except OSError as exc:
        return f"refused: {exc}"
    return f"uid {uid}"


def jail_worker(memory_mb: int, cpu_s: int, read_paths: Iterable[str], keep_fds: Iterable[int],
                ruleset: Any = None) -> tuple[list[int], dict]:
    """Confine this (freshly forked) worker. Returns the new numbers of ``keep_fds`` and
    the layer report ``{layer: "applied..." | "refused: ERRNO ..."}``. ``ruleset``: the
    zygote's :class:`.landlock.Ruleset` for ``read_paths`` (else one is built here), or
    the :class:`OSError` the kernel answered when the zygote tried to build it."""
    layers: dict[str, str] = {"environment": "allow-list", "network": _network_mode}
    keep = list(keep_fds)
    prebuilt = ruleset is not None and not isinstance(ruleset, OSError)
    fds = _close_fds(keep + [ruleset.fd] if prebuilt else keep)
    ruleset_fd = fds.pop() if prebuilt else None
    layers["descriptors"] = "pipes only"
    layers["rlimits"] = _rlimits(memory_mb, cpu_s)
    libc = _libc()
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        layers["no_new_privs"] = f"refused: {_errno_text()}"
    try:
        from . import landlock

        if isinstance(ruleset, OSError):
            raise ruleset
        got = ruleset.apply(ruleset_fd) if prebuilt else landlock.restrict(read_paths)
        extra = ", signals scoped" if got["signals_scoped"] else ""
        layers["landlock"] = f"applied (ABI {got['abi']}, read-only beneath {len(list(read_paths))} paths{extra})"
    except OSError as exc:
        layers["landlock"] = f"refused: {exc}"
    if ruleset_fd is not None:
        os.close(ruleset_fd)
    layers["uid"] = _distinct_uid()
    set_parent_death_signal()  # changing credentials cleared it
    if os.getppid() == 1:  # the zygote is already gone
        os._exit(0)
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    try:
        from . import syscalls

        layers["seccomp"] = f"applied ({syscalls.install()})"
    except ImportError as exc:
        layers["seccomp"] = f"refused: libseccomp bindings unavailable ({exc})"
    except OSError as exc:
        layers["seccomp"] = f"refused: {exc}"
    install_audit_hook()
    layers["audit_hook"] = "applied"
    return fds, layers


def refused_layers(layers: Mapping[str, str]) -> list[str]:
    """Names of layers the kernel refused (or that apply only partly)."""
    return sorted(k for k, v in layers.items() if v.startswith(("refused", "partly", "audit-hook", "shared")))


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
    """Deny hook for network, processes, signals, ctypes and file writes (defence in depth)."""
    sys.addaudithook(_audit)
