"""Sandbox worker processes: the zygote and the per-worker main loop.

The **zygote** is started once per :class:`~.pool.WorkerPool` (one interpreter start-up),
pre-imports everything programs need (RestrictedPython, the module copies, numpy,
math_verify warmed up), moves into a private network namespace, drops root, and then
forks a worker for every ``spawn`` request received on its control socket together
with the worker's three file descriptors (request pipe, reply pipe, progress page).
Forking a warm zygote takes milliseconds: no interpreter start-up per environment.

A **worker** applies its limits and audit hook (:mod:`.confine`), then serves frames
(:mod:`.protocol`) until its request pipe closes. It holds many sessions (one live
environment each, :class:`~.restricted.RestrictedSession`), validates every result
with :mod:`spade_envs.contract` (inside the session) and caps each result's size.
Before each call it records (call number, start time) on the progress page, which
is how the caller enforces per-call wall-clock deadlines without SIGALRM.
"""

from __future__ import annotations

import json
import mmap
import os
import signal
import socket
import sys
import time
from typing import Any

from . import confine
from .protocol import MAX_MESSAGE_BYTES, MAX_RESULT_BYTES, PROGRESS, pack, read_frame, write_all


def _error(exc: BaseException) -> list:
    from ..errors import EnvExecutionError, EnvProgramError

    if isinstance(exc, EnvProgramError):
        return [0, {"type": "program", "msg": str(exc), "stage": exc.stage}]
    if isinstance(exc, EnvExecutionError):
        return [0, {"type": "execution", "msg": str(exc), "kind": exc.kind}]
    if isinstance(exc, MemoryError):
        return [0, {"type": "execution", "msg": "out of memory", "kind": "memory"}]
    if isinstance(exc, RecursionError):
        return [0, {"type": "execution", "msg": "recursion limit exceeded", "kind": "recursion"}]
    return [0, {"type": "execution", "msg": f"{type(exc).__name__}: {exc}", "kind": "error"}]


class WorkerState:
    """The sessions of one worker and the dispatch of calls to them."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader
        self.sessions: dict[int, Any] = {}
        self.sent_tools: dict[int, Any] = {}

    def _tools_delta(self, sid: int, session: Any) -> Any:
        tools = session.tools
        if sid in self.sent_tools and self.sent_tools[sid] == tools:
            return None
        self.sent_tools[sid] = tools
        return tools

    def call(self, op: str, sid: int, arg: Any) -> Any:
        if op == "step":  # the hot path
            session = self.sessions.get(sid)
            if session is not None:
                try:
                    return list(session.step(arg))
                except Exception as exc:
                    raise _security_kind(exc) from None
        if op == "open":
            session = self.loader.open(
                arg["source"], arg["class_name"], kwargs=arg.get("kwargs") or {},
                filename=arg.get("filename", "<env>"), module_name=f"spade_env_{sid}",
            )
            self.sessions[sid] = session
            return self._tools_delta(sid, session)
        if op == "ping":
            return {"pid": os.getpid(), "network": confine.network_mode(), "uid": os.getuid()}
        session = self.sessions.get(sid)
        if session is None:
            raise KeyError(f"no session {sid} in this worker")
        try:
            if op == "step":
                return list(session.step(arg))
            if op == "reset":
                obs, info = session.reset(arg)
                return [obs, info, self._tools_delta(sid, session)]
            if op == "solution":
                return session.solution()
            if op == "hint":
                return session.hint()
            if op == "snapshot":
                return session.snapshot()
            if op == "close":
                try:
                    session.close()
                finally:
                    self.sessions.pop(sid, None)
                    self.sent_tools.pop(sid, None)
                    session.forget()
                return None
        except Exception as exc:
            raise _security_kind(exc) from None
        raise ValueError(f"unknown operation {op!r}")

    def handle(self, request: bytes, progress: Any, counter: list[int]) -> bytes:
        parts = []
        total = 2
        for op, sid, arg in json.loads(request):
            counter[0] += 1
            PROGRESS.pack_into(progress, 0, counter[0], time.monotonic_ns())
            try:
                encoded = _ENCODER.encode([1, self.call(op, sid, arg)])
            except (ValueError, TypeError) as exc:
                if isinstance(exc, ValueError) and "JSON compliant" in str(exc):
                    encoded = json.dumps(_error(_output_error(f"{op}() returned a non-finite float")))
                else:
                    encoded = json.dumps(_error(exc))
            except BaseException as exc:  # environment code may raise anything
                encoded = json.dumps(_error(exc))
            if len(encoded) > MAX_RESULT_BYTES or total + len(encoded) > MAX_MESSAGE_BYTES - 1024:
                encoded = json.dumps(_error(_output_error(f"{op}() result of {len(encoded)} bytes exceeds the cap")))
            total += len(encoded) + 1
            parts.append(encoded)
        return ("[" + ",".join(parts) + "]").encode("utf-8", "surrogatepass")


_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, default=repr)


def _security_kind(exc: BaseException) -> BaseException:
    from .restricted import security_kind

    return security_kind(exc)


def _output_error(msg: str) -> BaseException:
    from ..errors import EnvExecutionError

    return EnvExecutionError(msg, kind="output")


def worker_main(req_fd: int, rep_fd: int, shm_fd: int, memory_mb: int, cpu_s: int, loader: Any) -> None:
    """Serve frames until the request pipe closes. Never returns normally."""
    confine.set_parent_death_signal()
    progress = mmap.mmap(shm_fd, PROGRESS.size)
    os.close(shm_fd)
    confine.apply_limits(memory_mb, cpu_s)
    confine.install_audit_hook()
    state = WorkerState(loader)
    counter = [0]
    while True:
        try:
            request = read_frame(req_fd)
        except (EOFError, OSError):
            os._exit(0)
        try:
            reply = state.handle(request, progress, counter)
        except MemoryError:
            reply = b"[]"
        if len(reply) > MAX_MESSAGE_BYTES:  # pragma: no cover - handle() caps results
            os._exit(3)
        write_all(rep_fd, pack(reply))


def _warm_up(loader: Any) -> None:
    """Run a tiny program once so lazy imports and caches are paid in the zygote."""
    source = (
        "from math_verify import parse, verify\n"
        "class WarmEnv:\n"
        "    def __init__(self):\n        self._n = 0\n        self.reset()\n"
        "    def reset(self, seed=None):\n        self._n = 0\n        return f'{self._n}', {}\n"
        "    def step(self, action):\n        self._n += 1\n"
        "        ok = verify(parse('$1/2$'), parse('$0.5$'))\n"
        "        return 'x', float(ok), True, False, {}\n"
        "    def solution(self):\n        return '1'\n"
    )
    session = loader.open(source, "WarmEnv")
    session.step("\\boxed{1}")
    session.forget()


def zygote_main(control_fd: int, memory_mb: int, cpu_s: int) -> None:
    """Pre-load, confine, then fork a worker per request on the control socket."""
    import gc

    from .restricted import RestrictedLoader

    confine.set_parent_death_signal()
    loader = RestrictedLoader()
    try:
        _warm_up(loader)
    except Exception:  # pragma: no cover - a broken warm-up must not stop the zygote
        pass
    sock = socket.socket(fileno=control_fd)
    mode = confine.isolate_network()
    confine.drop_privileges()
    confine.set_parent_death_signal()  # credentials changed: the setting was cleared
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # workers are reaped automatically
    gc.collect()
    gc.freeze()
    sock.sendall(json.dumps({"network": mode, "uid": os.getuid()}).encode() + b"\n")
    while True:
        try:
            msg, fds, _flags, _addr = socket.recv_fds(sock, 16, 3)
        except OSError:
            os._exit(0)
        if not msg:
            os._exit(0)
        if len(fds) != 3:
            for fd in fds:
                os.close(fd)
            continue
        pid = os.fork()
        if pid == 0:
            try:
                sock.close()
                worker_main(fds[0], fds[1], fds[2], memory_mb, cpu_s, loader)
            finally:
                os._exit(1)
        for fd in fds:
            os.close(fd)
        sock.sendall(pid.to_bytes(8, "little"))


if __name__ == "__main__":  # pragma: no cover - started by pool.py
    zygote_main(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
