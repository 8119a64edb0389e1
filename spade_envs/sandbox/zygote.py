"""The caller's handles on sandbox processes: zygotes and workers.

A :class:`Zygote` is one pre-loaded process (:func:`.worker.zygote_main`) started with
``python -S``, the caller's module path and a clean environment
(:func:`.confine.clean_environment`); it forks a :class:`Worker` per :meth:`Zygote.spawn`
(known by pid and pidfd, so killing it never hits a recycled pid). *Full* zygotes have
numpy and math_verify loaded, *quick* ones do not (:func:`needs_full` tells which
programs need a full one); :class:`~.pool.WorkerPool` runs the two stages.

A zygote dies with its caller through ``PR_SET_PDEATHSIG``, which the kernel fires when
the *thread* that started it exits, not the process. So every zygote of a process is
started by one long-lived thread of that process (:func:`_launch`, the
``spade-zygote-launcher`` daemon thread, which waits for work for as long as the process
lives): a thread that opened the first environment and then finished (a request handler,
a pool thread) takes nobody's workers with it.

Locks: a :class:`Worker` has ``lock`` (held by whoever is in a call on it; one call at a
time per worker) and a private state lock that is only held around non-blocking system
calls. :meth:`Worker.kill` never waits: it signals at once and leaves the descriptors
to the caller in a call, who closes them when it lets go (:meth:`Worker.finish`), so a
descriptor is never closed under a ``poll`` and never reused while one is pending. A
zygote's control socket has its own lock, held for one fork request (milliseconds).
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
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..errors import EnvExecutionError, FailureKind
from . import confine
from .protocol import FrameReader, ProtocolError

_HELLO_TIMEOUT_S = 10.0


@dataclass(eq=False)
class Worker:
    """A forked sandbox worker: its pid, pidfd and request/reply pipes."""

    pid: int
    pidfd: int
    req_w: int
    rep_r: int
    layers: dict = field(default_factory=dict)
    reader: FrameReader = field(default_factory=FrameReader)
    alive: bool = True
    #: held for the length of one exchange with this worker (see the module docstring)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _state: threading.RLock = field(default_factory=threading.RLock, repr=False)

    def kill(self) -> None:
        """SIGKILL the worker now; never blocks. Its descriptors are closed here when
        nobody is in a call on it, else by that caller (:meth:`finish`)."""
        with self._state:
            if self.alive:
                self.alive = False
                if self.pidfd >= 0:
                    try:
                        signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
                    except OSError:  # already gone
                        pass
            if self.lock.acquire(blocking=False):
                try:
                    self._close_fds()
                finally:
                    self.lock.release()

    def finish(self) -> None:
        """Called by the holder of :attr:`lock` before releasing it: a worker killed
        meanwhile gets its descriptors closed now."""
        if not self.alive:
            with self._state:
                self._close_fds()

    def _close_fds(self) -> None:
        fds = (self.req_w, self.rep_r, self.pidfd)
        self.req_w = self.rep_r = self.pidfd = -1
        for fd in fds:
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass


class WorkerStartError(OSError):
    """A forked worker did not say hello (the zygote itself answered)."""


_T = TypeVar("_T")


class _Launcher:
    """The one thread of this process that starts zygotes (see the module docstring).
    Started on first use, again in a forked child (threads do not survive a fork)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pid = -1
        self._jobs: Any = None
        self._thread = threading.Thread()  # not started: replaced on first use
        os.register_at_fork(after_in_child=self._forked)

    def _forked(self) -> None:  # the child has no launcher thread, and maybe a lock held at the fork
        self._lock = threading.Lock()
        self._pid = -1

    def run(self, fn: Callable[[], _T]) -> _T:
        """``fn()`` run on the launcher thread; its result, or its exception re-raised."""
        import queue

        with self._lock:
            if self._pid != os.getpid() or not self._thread.is_alive():
                self._pid = os.getpid()
                self._jobs = queue.SimpleQueue()
                self._thread = threading.Thread(target=self._serve, args=(self._jobs,), name="spade-zygote-launcher",
                                                daemon=True)
                self._thread.start()
            jobs, thread = self._jobs, self._thread
        done = threading.Event()
        box: list[Any] = []
        jobs.put((fn, box, done))
        while not done.wait(1.0):
            if not thread.is_alive():  # only at interpreter exit: never wait for a dead thread
                raise OSError("the sandbox's zygote launcher thread is gone")
        if box[0]:
            return box[1]
        raise box[1]

    @staticmethod
    def _serve(jobs: Any) -> None:
        while True:  # lives as long as the process: its zygotes' parent-death signal is tied to it
            fn, box, done = jobs.get()
            try:
                box[:] = [True, fn()]
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller
                box[:] = [False, exc]
            finally:
                del fn
                done.set()


_launcher = _Launcher()


def _launch(fn: Callable[[], _T]) -> _T:
    """Run ``fn`` (which starts a process) on this process's zygote launcher thread."""
    return _launcher.run(fn)


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
        argv = [sys.executable, "-S", "-c", _ZYGOTE_CODE, str(theirs.fileno()), str(memory_mb), str(cpu_s),
                str(int(full)), _module_path()]
        try:
            self.proc = _launch(lambda: subprocess.Popen(
                argv, pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                start_new_session=True, env=env, cwd="/",
            ))
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self.sock = ours
        self._spawn_lock = threading.Lock()
        self.startup_timeout_s = startup_timeout_s
        if wait:
            self.wait_ready()

    def wait_ready(self) -> None:
        """Block until the zygote says it is ready (raises ``EnvExecutionError`` when it
        exits or does not answer in time)."""
        ours = self.sock
        line = b""
        try:
            with self._spawn_lock:  # close() kills the zygote first: this read then ends with EOF
                ours.settimeout(self.startup_timeout_s)
                while not line.endswith(b"\n"):
                    chunk = ours.recv(1 << 16)
                    if not chunk:
                        raise EnvExecutionError("the sandbox zygote exited during start-up", kind=FailureKind.CRASH)
                    line += chunk
                ours.settimeout(10.0)
        except socket.timeout:
            self.close()
            raise EnvExecutionError("the sandbox zygote did not start in time", kind=FailureKind.TIMEOUT) from None
        except OSError as exc:
            raise EnvExecutionError(f"the sandbox zygote could not start ({exc})", kind=FailureKind.CRASH) from None
        self.info = json.loads(line)

    def spawn(self) -> Worker:
        """Fork a worker and wait for its hello (it is jailed once it has said hello)."""
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        try:
            with self._spawn_lock:  # one fork request at a time on the control socket
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
            raise WorkerStartError("the new sandbox worker did not start")
        worker.layers = hello.get("layers") or {}
        return worker

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        """Kill the zygote (its workers die with it) and close its socket; never waits
        long (it runs at interpreter exit too)."""
        if self.proc.poll() is None:
            self.proc.kill()  # a fork request in flight ends with EOF
        if self._spawn_lock.acquire(timeout=2.0):  # never close the socket under a request
            try:
                self.sock.close()
            finally:
                self._spawn_lock.release()
        try:
            self.proc.wait(timeout=5.0)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL is not refused
            pass


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
