"""Sandbox worker processes: the zygote and the per-worker main loop.

A **zygote** is started by a :class:`~.pool.WorkerPool` (one interpreter start-up, with
``python -S`` and a clean environment), pre-imports what programs need (RestrictedPython,
the module copies; a *full* zygote also numpy and math_verify, warmed up; a *quick* one
leaves those to the full one, see :func:`zygote_main`), computes the read-only file view
of its workers (:func:`.confine.module_read_paths`) and builds their Landlock ruleset
once, moves into a private network namespace
and then forks a worker for every ``spawn`` request received on its control socket
together with the worker's two pipes (request, reply). It answers each request with
the worker's pid and a pidfd for it, so the caller can kill exactly that process.
Forking a warm zygote takes milliseconds: no interpreter start-up per environment.

A **worker** holds exactly one program (one session; a second ``open`` is refused),
jails itself (:func:`.confine.jail_worker`), sends its hello frame (pid and the layer
report), then serves request frames (:mod:`.protocol`) until its request pipe closes,
writing one reply frame per call as soon as that call returns. The operations it serves
are the program format's (:func:`spade_envs.format_spec.operation`), besides its own
``open`` and ``ping``: ``step`` (a fast path), ``reset`` (which also sends the tool specs
when they changed) and ``close`` are handled here, every other one by
:func:`spade_envs.format_spec.call_operation`. It validates every
result with :mod:`spade_envs.contract` (inside the session) and caps its size, nesting
and element count. It keeps no clock the caller relies on: deadlines are the caller's.
After each reply it polls for the next request for :data:`SPIN_S` (yielding the CPU
between polls) before it blocks: an RL loop sends the next step within microseconds, and
a worker that went to sleep costs a cross-CPU wake-up (tens of microseconds in a VM).
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import sys
import time
from typing import Any

from .. import format_spec
from ..errors import FailureKind
from . import confine
from .protocol import MAX_RESULT_BYTES, check_value, pack, read_frame, write_all

#: replies made before they are needed: out of memory, there may be none to make them then
_OOM_REPLY = json.dumps([0, {"type": "execution", "msg": "out of memory", "kind": FailureKind.MEMORY}]).encode()
_MALFORMED_REPLY = json.dumps([0, {"type": "execution", "msg": "malformed request", "kind": FailureKind.ERROR}]).encode()


def _error(exc: BaseException) -> list:
    from ..errors import EnvExecutionError, EnvProgramError

    if isinstance(exc, EnvProgramError):
        return [0, {"type": "program", "msg": str(exc), "stage": exc.stage}]
    if isinstance(exc, EnvExecutionError):
        return [0, {"type": "execution", "msg": str(exc), "kind": exc.kind}]
    if isinstance(exc, MemoryError):
        return [0, {"type": "execution", "msg": "out of memory", "kind": FailureKind.MEMORY}]
    if isinstance(exc, RecursionError):
        return [0, {"type": "execution", "msg": "recursion limit exceeded", "kind": FailureKind.RECURSION}]
    return [0, {"type": "execution", "msg": f"{type(exc).__name__}: {exc}", "kind": FailureKind.ERROR}]


class WorkerState:
    """The one session of a worker and the dispatch of calls to it."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader
        self.sid: int | None = None
        self.session: Any = None
        self.sent_tools: Any = None
        self.opened = False

    def _tools_delta(self, session: Any) -> Any:
        tools = session.tools
        if self.opened and self.sent_tools == tools:
            return None
        self.sent_tools = tools
        self.opened = True
        return tools

    def call(self, op: str, sid: int, arg: Any) -> Any:
        session = self.session
        if op == "step" and session is not None and sid == self.sid:  # the hot path
            try:
                return list(session.step(arg))
            except Exception as exc:
                raise _security_kind(exc) from None
        if op == "open":
            if self.sid is not None:
                raise RuntimeError("this worker already ran a program (one program per worker)")
            self.sid = sid
            arg = arg if isinstance(arg, dict) else {}
            self.session = self.loader.open(
                arg["source"], arg["class_name"], kwargs=arg.get("kwargs") or {},
                filename=arg.get("filename", "<env>"), module_name=f"spade_env_{sid}",
            )
            return self._tools_delta(self.session)
        if op == "ping":
            return {"pid": os.getpid(), "network": confine.network_mode(), "uid": os.getuid()}
        if session is None or sid != self.sid:
            raise KeyError(f"no session {sid} in this worker")
        if format_spec.operation(op) is None:
            raise ValueError(f"unknown operation {op!r}")
        try:
            if op == "reset":  # the tool specs travel with it when they changed
                obs, info = session.reset(arg)
                return [obs, info, self._tools_delta(session)]
            if op == "close":
                self.session = None
                session.close()
                return None
            return format_spec.call_operation(session, op, arg)  # every other operation of the format
        except Exception as exc:
            raise _security_kind(exc) from None

    def answer(self, op: str, sid: int, arg: Any) -> bytes:
        """One call -> its encoded reply frame payload (never raises)."""
        try:
            value = self.call(op, sid, arg)
            problem = check_value(value, lenient=True)
            if problem is not None:
                raise _output_error(f"{op}() returned {problem}")
            encoded = _ENCODER.encode([1, value])
        except ValueError as exc:
            if "JSON compliant" in str(exc):
                exc = _output_error(f"{op}() returned a non-finite float")
            encoded = json.dumps(_error(exc))
        except BaseException as exc:  # environment code may raise anything
            encoded = json.dumps(_error(exc))
        data = encoded.encode("utf-8", "surrogatepass")
        if len(data) > MAX_RESULT_BYTES:
            data = json.dumps(_error(_output_error(f"{op}() result of {len(data)} bytes exceeds the cap"))).encode()
        return data


_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, default=repr)


def _security_kind(exc: BaseException) -> BaseException:
    from .restricted import security_kind

    return security_kind(exc)


def _output_error(msg: str) -> BaseException:
    from ..errors import EnvExecutionError

    return EnvExecutionError(msg, kind=FailureKind.OUTPUT)


_FLUSH_S = 0.001
#: how long a worker polls for the next request after replying before it blocks
SPIN_S = 0.0002


def _spin_for_request(poller: Any, seconds: float) -> None:
    """Return as soon as the request pipe is readable, or after ``seconds``."""
    end = time.monotonic() + seconds
    while not poller.poll(0) and time.monotonic() < end:
        os.sched_yield()


def worker_main(req_fd: int, rep_fd: int, memory_mb: int, cpu_s: int, loader: Any, read_paths: list[str],
                ruleset: Any = None) -> None:
    """Jail this process, say hello, serve frames until the request pipe closes."""
    (req_fd, rep_fd), layers = confine.jail_worker(memory_mb, cpu_s, read_paths, (req_fd, rep_fd), ruleset)
    state = WorkerState(loader)
    write_all(rep_fd, pack(json.dumps({"pid": os.getpid(), "uid": os.getuid(), "layers": layers}).encode()))
    poller = select.poll()
    poller.register(req_fd, select.POLLIN)
    while True:
        try:
            _spin_for_request(poller, SPIN_S)
            request = read_frame(req_fd)
            calls = json.loads(request)
        except (EOFError, OSError, ValueError, RecursionError):
            os._exit(0)
        if not isinstance(calls, list):
            os._exit(0)
        # replies go out as soon as calls take time: written together while they are fast
        # (the caller's deadline for a call starts when the previous reply arrives, so
        # holding fast replies back a moment only ever shortens it)
        pending: list[bytes] = []
        last_flush = time.monotonic()
        for call in calls:
            try:
                op, sid, arg = call
                reply = state.answer(op, sid, arg)
            except MemoryError:
                reply = _OOM_REPLY
            except (TypeError, ValueError):
                reply = _MALFORMED_REPLY
            pending.append(pack(reply))
            now = time.monotonic()
            if now - last_flush > _FLUSH_S:
                write_all(rep_fd, b"".join(pending))
                pending.clear()
                last_flush = now
        if pending:
            write_all(rep_fd, b"".join(pending))


def _warm_up(loader: Any, full: bool) -> None:
    """Run a tiny program once so lazy imports and caches are paid in the zygote (with
    ``full``, math_verify's and numpy's too)."""
    source = (
        ("from math_verify import parse, verify\n" if full else "")
        + "class WarmEnv:\n"
        "    def __init__(self):\n        self._n = 0\n        self.reset()\n"
        "    def reset(self, seed=None):\n        self._n = 0\n        return f'{self._n}', {}\n"
        "    def step(self, action):\n        self._n += 1\n"
        + ("        ok = verify(parse('$1/2$'), parse('$0.5$')) and np.arange(3).sum() == 3\n" if full else "        ok = True\n")
        + "        return 'x', float(ok), True, False, {}\n"
        "    def solution(self):\n        return '1'\n"
    )
    session = loader.open(source, "WarmEnv")
    session.step("\\boxed{1}")
    session.forget()


def _preload_jail() -> None:
    """Import what :func:`.confine.jail_worker` needs: a worker's uid cannot read most
    of the file system, and its Landlock view holds only what is loaded here."""
    import _strptime  # noqa: F401  (datetime.strptime imports it lazily: see prelude.LAZY_INTERNAL)
    import time  # noqa: F401

    from . import landlock, syscalls  # noqa: F401

    try:
        syscalls.build()
    except (ImportError, OSError):  # reported as a refused layer by every worker
        pass


def _landlock_ruleset(read_paths: list[str]) -> Any:
    """The Landlock ruleset of every worker, built once here (each worker only applies
    it), or the kernel's refusal (reported by each worker)."""
    from . import landlock

    try:
        return landlock.build(read_paths)
    except OSError as exc:
        return exc


def _prepare_lazy(read_paths: list[str]) -> None:
    """What a quick zygote's workers need to import jsonschema later (tool programs):
    its standard-library dependencies loaded here; jsonschema itself too when a worker
    could not read its package (see :func:`.confine.readable_by_workers`)."""
    import importlib
    import sysconfig

    sysconfig.get_config_vars()
    for name in confine.LAZY_STDLIB + confine.LAZY_NATIVE:
        try:
            importlib.import_module(name)
        except ImportError:  # pragma: no cover - then jsonschema is loaded below
            pass
    where = confine.package_paths(confine.JSONSCHEMA_PACKAGES)
    if not where or not confine.readable_by_workers(where):
        from ..tools import _jsonschema

        _jsonschema()
        read_paths[:] = confine.module_read_paths(confine.LAZY_PACKAGES)


def zygote_main(control_fd: int, memory_mb: int, cpu_s: int, full: int = 1) -> None:
    """Pre-load, isolate the network, then fork a worker per request on the control socket.

    A *quick* zygote (``full=0``) leaves the heavy imports (numpy, math_verify) to the
    workers that use them: its read view already holds their packages
    (:data:`.confine.LAZY_PACKAGES`). A *full* one imports them before it forks (started
    in the background by the pool, at a lower priority while it loads, it takes over
    from the quick one when ready)."""
    import gc

    from . import prelude
    from .restricted import RestrictedLoader

    confine.set_parent_death_signal()
    env = confine.clean_environment(os.environ)  # the caller passed a clean one already
    os.environ.clear()
    os.environ.update(env)
    sys.path[:] = [p for p in sys.path if p not in ("", os.getcwd())]
    priority = _lower_priority() if full else None
    loader = RestrictedLoader()
    if full:
        from ..tools import _jsonschema

        prelude.load_heavy()
        _jsonschema()
    try:
        _warm_up(loader, bool(full))
    except Exception:  # pragma: no cover - a broken warm-up must not stop the zygote
        pass
    _preload_jail()
    read_paths = confine.module_read_paths(confine.LAZY_PACKAGES)
    if not full:
        _prepare_lazy(read_paths)
    if priority is not None:
        try:
            os.setpriority(os.PRIO_PROCESS, 0, priority)
        except OSError:  # pragma: no cover - only lowered when it can be restored
            pass
    ruleset = _landlock_ruleset(read_paths)
    sock = socket.socket(fileno=control_fd)
    mode = confine.isolate_network()
    confine.set_parent_death_signal()  # credentials may have changed: the setting was cleared
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # workers are reaped automatically
    gc.collect()
    gc.freeze()
    try:
        sock.sendall(json.dumps({"network": mode, "uid": os.getuid(), "read_paths": read_paths}).encode() + b"\n")
    except OSError:  # the caller is gone (or closed the pool) while this zygote loaded
        os._exit(0)
    while True:
        try:
            msg, fds, _flags, _addr = socket.recv_fds(sock, 16, 2)
        except OSError:
            os._exit(0)
        if not msg:
            os._exit(0)
        if len(fds) != 2:
            for fd in fds:
                os.close(fd)
            continue
        pid = os.fork()
        if pid == 0:
            try:
                sock.close()
                worker_main(fds[0], fds[1], memory_mb, cpu_s, loader, read_paths, ruleset)
            finally:
                os._exit(1)
        for fd in fds:
            os.close(fd)
        try:
            pidfd = [os.pidfd_open(pid)]
        except (OSError, AttributeError):
            pidfd = []
        socket.send_fds(sock, [pid.to_bytes(8, "little")], pidfd)
        for fd in pidfd:
            os.close(fd)


def _lower_priority() -> int | None:
    """Load at a lower priority (the caller's first environment runs meanwhile); only
    where the old one can be restored (root), so workers never run reniced."""
    if os.geteuid() != 0:
        return None
    try:
        old = os.getpriority(os.PRIO_PROCESS, 0)
        os.setpriority(os.PRIO_PROCESS, 0, min(19, old + 10))
    except OSError:
        return None
    return old
