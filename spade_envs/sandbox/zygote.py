"""The caller's handles on sandbox processes: zygotes and workers.

A :class:`Zygote` is one pre-loaded process (:func:`.worker.zygote_main`) started with
``python -S``, the caller's module path and a clean environment
(:func:`.confine.clean_environment`); it forks a :class:`Worker` per :meth:`Zygote.spawn`
(known by pid and pidfd, so killing it never hits a recycled pid). *Full* zygotes have
numpy and math_verify loaded, *quick* ones do not (:func:`needs_full` tells which
programs need a full one); :class:`~.pool.WorkerPool` runs the two stages.
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from ..errors import EnvExecutionError
from . import confine
from .protocol import FrameReader, ProtocolError

_HELLO_TIMEOUT_S = 10.0


@dataclass(eq=False)
class Worker:
    pid: int
    pidfd: int
    req_w: int
    rep_r: int
    layers: dict = field(default_factory=dict)
    reader: FrameReader = field(default_factory=FrameReader)
    alive: bool = True

    def kill(self) -> None:
        if not self.alive:
            return
        self.alive = False
        if self.pidfd >= 0:
            try:
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
            except OSError:  # already gone
                pass
        for fd in (self.req_w, self.rep_r, self.pidfd):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass


def _package_parent() -> str:
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


#: the zygote's start, under ``python -S`` (no ``site``: the caller's module path is
#: given instead, in its order): the package and ``sandbox`` without their ``__init__``
#: (which register the gym environments, importing gymnasium and numpy, and load the
#: caller's side of the sandbox: nothing a worker needs), then the zygote's main
_ZYGOTE_CODE = (
    "import sys, json; sys.path[:] = json.loads(sys.argv.pop()); import importlib.util as u\n"
    "for n in ('spade_envs', 'spade_envs.sandbox'): sys.modules[n] = u.module_from_spec(u.find_spec(n))\n"
    "from spade_envs.sandbox.worker import zygote_main; zygote_main(*map(int, sys.argv[1:]))"
)


def _module_path() -> str:
    """The caller's ``sys.path`` (directories only; no current directory), the package's
    parent first."""
    cwd = os.getcwd()
    paths = [_package_parent()]
    for p in sys.path:
        if p and p != "." and os.path.abspath(p) != cwd and p not in paths and os.path.isdir(p):
            paths.append(p)
    return json.dumps(paths)


class Zygote:
    """The pre-loaded process workers are forked from: ``full`` pre-imports numpy and
    math_verify, a quick one (``full=False``, ready in a fraction of the time) leaves
    them to the workers that use them. The constructor starts the process;
    :meth:`wait_ready` reads its ready line."""

    def __init__(self, memory_mb: int, cpu_s: int, startup_timeout_s: float = 120.0, *, full: bool = True,
                 wait: bool = True) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        env = confine.clean_environment(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_package_parent(), env.get("PYTHONPATH")) if p)
        self.full = full
        self.info: dict[str, Any] = {}
        self.proc = subprocess.Popen(
            [sys.executable, "-S", "-c", _ZYGOTE_CODE, str(theirs.fileno()), str(memory_mb), str(cpu_s), str(int(full)),
             _module_path()],
            pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            start_new_session=True, env=env, cwd="/",
        )
        theirs.close()
        self.sock = ours
        self.startup_timeout_s = startup_timeout_s
        if wait:
            self.wait_ready()

    def wait_ready(self) -> None:
        """Block until the zygote says it is ready (raises ``EnvExecutionError`` when it
        exits or does not answer in time)."""
        ours = self.sock
        ours.settimeout(self.startup_timeout_s)
        line = b""
        try:
            while not line.endswith(b"\n"):
                chunk = ours.recv(1 << 16)
                if not chunk:
                    raise EnvExecutionError("the sandbox zygote exited during start-up", kind="crash")
                line += chunk
        except socket.timeout:
            self.close()
            raise EnvExecutionError("the sandbox zygote did not start in time", kind="timeout") from None
        except OSError as exc:
            raise EnvExecutionError(f"the sandbox zygote could not start ({exc})", kind="crash") from None
        self.info = json.loads(line)
        ours.settimeout(10.0)

    def spawn(self) -> Worker:
        """Fork a worker and wait for its hello (it is jailed once it has said hello)."""
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        try:
            socket.send_fds(self.sock, [b"S"], [req_r, rep_w])
            msg, fds, _flags, _addr = socket.recv_fds(self.sock, 8, 1)
            if len(msg) != 8:
                raise OSError("zygote closed its socket")
        except BaseException:
            for fd in (req_w, rep_r):
                os.close(fd)
            raise
        finally:
            for fd in (req_r, rep_w):
                os.close(fd)
        worker = Worker(int.from_bytes(msg, "little"), fds[0] if fds else -1, req_w, rep_r)
        os.set_blocking(rep_r, False)
        hello = _read_hello(worker)
        if hello is None:
            worker.kill()
            raise OSError("the new sandbox worker did not start")
        worker.layers = hello.get("layers") or {}
        return worker

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        try:
            self.sock.close()
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()


def _read_hello(worker: Worker) -> dict | None:
    poller = select.poll()
    poller.register(worker.rep_r, select.POLLIN)
    end = time.monotonic() + _HELLO_TIMEOUT_S
    while time.monotonic() < end:
        if not poller.poll(max(0.0, end - time.monotonic()) * 1000.0):
            break
        try:
            data = os.read(worker.rep_r, 1 << 16)
        except BlockingIOError:
            continue
        if not data:
            return None
        worker.reader.feed(data)
        try:
            frame = worker.reader.pop()
        except ProtocolError:
            return None
        if frame is not None:
            try:
                hello = json.loads(frame)
            except ValueError:
                return None
            return hello if isinstance(hello, dict) else None
    return None


def _static_layer_on() -> bool:
    """The rule of :func:`.restricted.static_layer_enabled`, read here without loading it."""
    return os.environ.get("SPADE_SANDBOX_STATIC", "1").strip() != "0"


#: what makes a program need a full zygote: the heavy module copies it may use (a
#: superset by design: a match in a comment only means waiting for the full zygote)
HEAVY_NAMES = re.compile(r"\b(?:np|numpy|math_verify)\b")


def needs_full(source: str) -> bool:
    """Whether ``source`` may use numpy or math_verify (their names are the only way in:
    the static layer admits import statements and prelude names only)."""
    return HEAVY_NAMES.search(source) is not None
