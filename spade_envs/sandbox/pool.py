"""Worker lifecycle on the caller's side: the zygote, worker handles, deadlines.

:class:`WorkerPool` starts one zygote (:func:`.worker.zygote_main`) lazily and asks it
for workers (a fork each, milliseconds). :meth:`WorkerPool.exchange` sends one request
frame to each of several workers and collects the replies with ``poll``; while waiting
it reads each worker's progress page, so every *call* inside a batch gets its own
wall-clock deadline. A worker whose current call is past its deadline is killed with
SIGKILL and replaced at once; a worker that dies or breaks the protocol is replaced
too. Nothing here uses signals inside workers (``math_verify`` resets SIGALRM).
"""

from __future__ import annotations

import json
import mmap
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from ..errors import EnvExecutionError
from .protocol import PROGRESS, FrameReader, ProtocolError, pack, write_all


_ENCODER = json.JSONEncoder(ensure_ascii=False)


@dataclass
class Lost:
    """Why a worker's reply did not come: ``timeout`` (slot ``culprit`` ran past its
    deadline) or ``crash`` (the worker died or broke the protocol)."""

    kind: str
    culprit: int
    detail: str


@dataclass(eq=False)
class Worker:
    pid: int
    req_w: int
    rep_r: int
    shm: mmap.mmap
    sessions: set = field(default_factory=set)
    calls_started: int = 0  # calls sent before the current message
    alive: bool = True

    def kill(self) -> None:
        if self.alive:
            self.alive = False
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            for fd in (self.req_w, self.rep_r):
                try:
                    os.close(fd)
                except OSError:
                    pass
            self.shm.close()


class Zygote:
    """The pre-loaded process workers are forked from."""

    def __init__(self, memory_mb: int, cpu_s: int, startup_timeout_s: float = 120.0) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
                   PYTHONDONTWRITEBYTECODE="1")
        code = "import sys; from spade_envs.sandbox.worker import zygote_main; zygote_main(*map(int, sys.argv[1:]))"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code, str(theirs.fileno()), str(memory_mb), str(cpu_s)],
            pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            start_new_session=True, env=env,
        )
        theirs.close()
        self.sock = ours
        ours.settimeout(startup_timeout_s)
        line = b""
        try:
            while not line.endswith(b"\n"):
                chunk = ours.recv(4096)
                if not chunk:
                    raise EnvExecutionError("the sandbox zygote exited during start-up", kind="crash")
                line += chunk
        except socket.timeout:
            self.close()
            raise EnvExecutionError("the sandbox zygote did not start in time", kind="timeout") from None
        self.info: dict[str, Any] = json.loads(line)
        ours.settimeout(10.0)

    def spawn(self) -> Worker:
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        shm_fd = os.memfd_create("spade-progress")
        try:
            os.ftruncate(shm_fd, mmap.PAGESIZE)
            socket.send_fds(self.sock, [b"S"], [req_r, rep_w, shm_fd])
            raw = b""
            while len(raw) < 8:
                chunk = self.sock.recv(8 - len(raw))
                if not chunk:
                    raise OSError("zygote closed its socket")
                raw += chunk
            shm = mmap.mmap(shm_fd, PROGRESS.size)
        except BaseException:
            for fd in (req_w, rep_r):
                os.close(fd)
            raise
        finally:
            for fd in (req_r, rep_w, shm_fd):
                os.close(fd)
        os.set_blocking(rep_r, False)
        return Worker(int.from_bytes(raw, "little"), req_w, rep_r, shm)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        try:
            self.sock.close()
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()


class WorkerPool:
    """Up to ``max_workers`` workers; sessions are placed on the least loaded one."""

    def __init__(self, max_workers: int, memory_mb: int, cpu_s: int) -> None:
        self.max_workers = max(1, max_workers)
        self.memory_mb = memory_mb
        self.cpu_s = cpu_s
        self.workers: list[Worker] = []
        self.lock = threading.RLock()
        self._zygote: Zygote | None = None
        self.owner_pid = os.getpid()

    def check_owner(self) -> None:
        """A forked copy of the caller must not talk to its parent's workers: it gets a
        fresh pool of its own (sessions opened before the fork stay with the parent)."""
        if os.getpid() != self.owner_pid:
            self.owner_pid = os.getpid()
            self.lock = threading.RLock()
            self.workers = []
            self._zygote = None

    @property
    def zygote(self) -> Zygote:
        if self._zygote is None or not self._zygote.alive():
            if self._zygote is not None:
                self._zygote.close()
            self._zygote = Zygote(self.memory_mb, self.cpu_s)
        return self._zygote

    def spawn(self) -> Worker:
        try:
            return self.zygote.spawn()
        except OSError:
            self._zygote.close() if self._zygote else None
            self._zygote = None
            return self.zygote.spawn()

    def pick(self) -> Worker:
        """A worker for a new session."""
        self.check_owner()
        with self.lock:
            self.workers = [w for w in self.workers if w.alive]
            if len(self.workers) < self.max_workers:
                worker = self.spawn()
                self.workers.append(worker)
                return worker
            return min(self.workers, key=lambda w: len(w.sessions))

    def replace(self, worker: Worker) -> None:
        """Kill ``worker`` and start its replacement straight away."""
        with self.lock:
            worker.kill()
            if worker in self.workers:
                self.workers[self.workers.index(worker)] = self.spawn()

    def exchange(self, requests: dict[Worker, list], deadline_s: float) -> dict[Worker, list | Lost]:
        """Send each worker its calls; return its decoded reply or a :class:`Lost`.

        Every call gets ``deadline_s`` seconds of wall-clock time from the moment the
        worker starts it (read from the worker's progress page)."""
        out: dict[Worker, list | Lost] = {}
        pending: dict[int, tuple[Worker, FrameReader, int, float]] = {}
        poller = select.poll()
        for worker, calls in requests.items():
            base = worker.calls_started
            worker.calls_started += len(calls)
            try:
                write_all(worker.req_w, pack(_ENCODER.encode(calls).encode("utf-8", "surrogatepass")))
            except (OSError, ProtocolError) as exc:
                out[worker] = self._lost(worker, "crash", 0, f"the worker could not be reached ({exc})")
                continue
            pending[worker.rep_r] = (worker, FrameReader(), base, time.monotonic())
            poller.register(worker.rep_r, select.POLLIN)
        while pending:
            now = time.monotonic()
            wait = min(self._due(w, base, sent, deadline_s) for w, _, base, sent in pending.values()) - now
            events = poller.poll(max(0.0, wait) * 1000.0 + 0.5) if wait > 0 else []
            for fd, _ev in events:
                worker, reader, base, sent = pending[fd]
                try:
                    data = os.read(fd, 1 << 20)
                    if not data:
                        raise EOFError
                    payload = reader.feed(data)
                except BlockingIOError:
                    continue
                except (EOFError, OSError, ProtocolError):
                    _, started = self._progress(worker, base)
                    out[worker] = self._lost(worker, "crash", started, "the worker process died")
                    poller.unregister(fd)
                    del pending[fd]
                    continue
                if payload is not None:
                    poller.unregister(fd)
                    del pending[fd]
                    try:
                        out[worker] = json.loads(payload)
                    except ValueError:
                        out[worker] = self._lost(worker, "crash", 0, "the worker sent a malformed reply")
            now = time.monotonic()
            for fd, (worker, _reader, base, sent) in list(pending.items()):
                if self._due(worker, base, sent, deadline_s) <= now:
                    _, started = self._progress(worker, base)
                    poller.unregister(fd)
                    del pending[fd]
                    out[worker] = self._lost(worker, "timeout", started, f"exceeded the {deadline_s:g} s deadline")
        return out

    @staticmethod
    def _progress(worker: Worker, base: int) -> tuple[float | None, int]:
        """(start time of the current call or None, its slot in the message)."""
        count, start_ns = PROGRESS.unpack_from(worker.shm, 0)
        if count <= base:
            return None, 0
        return start_ns / 1e9, count - base - 1

    def _due(self, worker: Worker, base: int, sent: float, deadline_s: float) -> float:
        started, _ = self._progress(worker, base)
        return max(sent, started or 0.0) + deadline_s

    def _lost(self, worker: Worker, kind: str, culprit: int, detail: str) -> Lost:
        self.replace(worker)
        return Lost(kind, culprit, detail)

    def close(self) -> None:
        self.check_owner()  # never kill a parent's workers from a forked child
        with self.lock:
            for worker in self.workers:
                worker.kill()
            self.workers = []
            if self._zygote is not None:
                self._zygote.close()
                self._zygote = None
