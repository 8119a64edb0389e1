"""Worker lifecycle on the caller's side: the zygotes, worker handles, deadlines.

:class:`WorkerPool` starts its zygotes (:mod:`.zygote`) lazily — a quick one first, a
full one in the background that takes over — and asks them for a fresh worker per
session (a fork each, milliseconds): **one program per worker process**, never shared
between sessions or clients.

:meth:`WorkerPool.exchange` sends one request frame to each of several workers and
collects the reply frames (one per call) with ``poll``. Every call has ``deadline_s``
seconds of wall-clock time measured **on the caller's own clock** from the moment the
previous call of that message was answered (or the message was sent); nothing a worker
writes can move it. A worker past its deadline is killed with SIGKILL; a worker that
dies, floods, or sends anything that :func:`.protocol.decode_reply` refuses is killed
too, and only its own session fails. Nothing here uses signals inside workers
(``math_verify`` resets SIGALRM). Waiting on a single worker, the first :data:`SPIN_S`
polls without blocking, yielding the CPU between polls (a cheap call answers within it,
and a caller that went to sleep costs a cross-CPU wake-up); then it blocks in ``poll``
until the next deadline.

Sessions never wait for each other: an exchange holds the locks of its own workers only
(see :class:`WorkerPool`), and the pool's lock covers bookkeeping, never a call.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import threading
import time
import weakref
from dataclasses import dataclass

from ..errors import EnvExecutionError, FailureKind
from .protocol import ProtocolError, decode_reply, pack, write_all
from .zygote import Worker, WorkerStartError, Zygote, _static_layer_on, needs_full

__all__ = ["Lost", "Worker", "WorkerPool", "Zygote", "needs_full"]

_ENCODER = json.JSONEncoder(ensure_ascii=False)
#: how long :meth:`WorkerPool.exchange` polls without blocking before it sleeps in ``poll``
SPIN_S = 0.0005
#: bytes asked of one read(): below malloc's mmap threshold, so a reply does not cost
#: an mmap, a page fault and an munmap (20 us); larger frames take several reads
READ_CHUNK = 1 << 16


@dataclass
class Lost:
    """Why a worker's remaining replies did not come: ``timeout`` (call ``culprit`` of
    the message ran past its deadline) or ``crash`` (the worker died or broke the
    protocol)."""

    kind: FailureKind
    culprit: int
    detail: str


def _has_data(fd: int) -> bool:
    """Whether a reply pipe holds bytes (or EOF) before any request was sent."""
    try:
        return bool(select.select([fd], [], [], 0)[0])
    except (OSError, ValueError):
        return True


class WorkerPool:
    """The zygotes and the live workers (one per open session) of one runtime.

    ``lock`` guards the pool's bookkeeping only (the worker set, which zygote serves) and
    is never held across a blocking call: calls into workers take each worker's own lock
    (:meth:`exchange`), starting a zygote takes ``_start_lock``. So a slow call in one
    session never delays another session, and :meth:`close` (also run from ``__del__``
    and at interpreter exit) never waits for a call in flight."""

    def __init__(self, max_workers: int, memory_mb: int, cpu_s: int) -> None:
        self.max_workers = max(1, max_workers)
        self.memory_mb = memory_mb
        self.cpu_s = cpu_s
        self.workers: set[Worker] = set()
        self.lock = threading.RLock()
        self._start_lock = threading.Lock()
        self._generation = 0  # bumped by close(): a zygote started meanwhile is not kept
        self._zygote: Zygote | None = None
        self._retired: list[Zygote] = []  # zygotes no longer forking whose workers may still run
        self._loading: Zygote | None = None
        self._loaded = threading.Event()
        self.owner_pid = os.getpid()
        self.layers: dict[str, str] = {}
        _POOLS.add(self)

    def check_owner(self) -> None:
        """A forked copy of the caller must not talk to its parent's workers: it gets a
        fresh pool of its own (sessions opened before the fork stay with the parent)."""
        if os.getpid() != self.owner_pid:
            self.owner_pid = os.getpid()
            self.lock = threading.RLock()
            self._start_lock = threading.Lock()
            self.workers = set()
            self._zygote = None
            self._retired = []
            self._loading = None

    @property
    def zygote(self) -> Zygote:
        """The zygote new workers come from. With the static layer on, a quick one first
        (ready in a fraction of the time), and a full one started in the background at
        once, which takes over when it is ready; with it off, a full one."""
        current = self._zygote
        if current is not None and current.alive():
            return current
        with self._start_lock:
            with self.lock:
                current = self._zygote
                if current is not None and current.alive():
                    return current
                self._zygote = None
                generation = self._generation
            if current is not None:
                current.close()
            quick = _static_layer_on()  # with it off, programs may import anything: all pre-loaded
            new = Zygote(self.memory_mb, self.cpu_s, full=not quick)
            with self.lock:
                kept = generation == self._generation
                if kept:
                    self._zygote = new
            if not kept:
                new.close()
                raise EnvExecutionError("the sandbox runtime was closed while it started", kind=FailureKind.CLOSED)
            if quick:
                self._start_full()
            return new

    def _start_full(self) -> None:
        with self.lock:
            if self._loading is not None:
                return
        try:
            full = Zygote(self.memory_mb, self.cpu_s, full=True, wait=False)
        except OSError:  # the quick zygote keeps serving
            return
        with self.lock:
            self._loading = full
            self._loaded = loaded = threading.Event()
            owner = self.owner_pid
        threading.Thread(target=self._adopt, args=(full, loaded, owner), name="spade-zygote",
                         daemon=True).start()

    def _adopt(self, full: Zygote, loaded: threading.Event, owner: int) -> None:
        try:
            full.wait_ready()
            ok = True
        except EnvExecutionError:
            full.close()
            ok = False
        stale = None
        try:
            with self.lock:
                if self.owner_pid != owner or self._loading is not full:  # closed meanwhile
                    stale = full if ok else None
                else:
                    self._loading = None
                    if ok:
                        if self._zygote is not None:
                            self._retired.append(self._zygote)  # closing it would end its workers
                        self._zygote = full
        finally:
            loaded.set()
        if stale is not None:
            stale.close()

    def wait_full(self, timeout_s: float = 120.0) -> bool:
        """Wait (without the lock) until new workers come from a full zygote; False when
        none could be started (the quick one goes on serving)."""
        self.zygote  # noqa: B018 - starts them
        with self.lock:
            if self._zygote is not None and self._zygote.full:
                return True
            loaded = self._loaded if self._loading is not None else None
        if loaded is not None:
            loaded.wait(timeout_s)
        with self.lock:
            return self._zygote is not None and self._zygote.full

    def spawn(self, full: bool = False) -> Worker:
        """A fresh, jailed worker; with ``full``, from a full zygote (waiting for it to
        load). A zygote that fails to fork is retired, not killed (other sessions' workers
        live on), and a new one is started once."""
        self.check_owner()
        if full:
            self.wait_full()
        for attempt in range(2):
            zygote = self.zygote
            try:
                worker = zygote.spawn()
                break
            except WorkerStartError as exc:  # the worker's failure, not the zygote's: try once more
                if attempt:
                    raise EnvExecutionError(f"could not start a sandbox worker: {exc}", kind=FailureKind.CRASH) from None
            except OSError as exc:  # the zygote's socket failed: a new zygote serves from now on
                with self.lock:
                    if self._zygote is zygote:
                        self._zygote = None
                        self._retired.append(zygote)
                if attempt:
                    raise EnvExecutionError(f"could not start a sandbox worker: {exc}", kind=FailureKind.CRASH) from None
        with self.lock:
            self.layers = worker.layers
            self.workers.add(worker)
        return worker

    def release(self, worker: Worker) -> None:
        """Kill ``worker`` (its session is over); never waits for a call in flight."""
        worker.kill()
        with self.lock:
            self.workers.discard(worker)

    def exchange(self, requests: dict[Worker, list], deadline_s: float) -> dict[Worker, tuple[list, Lost | None]]:
        """Send each worker its calls; return, per worker, the decoded replies that came
        (``[ok, value]`` each, in call order) and why the rest did not (or None).

        Holds the lock of each worker involved (taken in one global order, so two
        batches sharing workers never deadlock), and no other lock."""
        order = sorted(requests, key=id) if len(requests) > 1 else list(requests)
        for worker in order:
            worker.lock.acquire()
        try:
            return self._exchange(requests, deadline_s)
        finally:
            for worker in reversed(order):
                if not worker.alive:
                    worker.finish()
                worker.lock.release()

    def _exchange(self, requests: dict[Worker, list], deadline_s: float) -> dict[Worker, tuple[list, Lost | None]]:
        replies: dict[Worker, list] = {}
        lost: dict[Worker, Lost | None] = {}
        pending: dict[int, tuple[Worker, int]] = {}
        due: dict[int, float] = {}
        poller = select.poll()
        for worker, calls in requests.items():
            replies[worker] = []
            lost[worker] = None
            if not worker.alive:  # killed by another thread (its session was closed) meanwhile
                lost[worker] = Lost(FailureKind.CRASH, 0, "the worker process was ended")
                continue
            if worker.reader.buf or _has_data(worker.rep_r):
                lost[worker] = self._lost(worker, FailureKind.CRASH, 0, "the worker sent data nobody asked for")
                continue
            try:
                write_all(worker.req_w, pack(_ENCODER.encode(calls).encode("utf-8", "surrogatepass")))
            except (OSError, ProtocolError, ValueError) as exc:
                lost[worker] = self._lost(worker, FailureKind.CRASH, 0, f"the worker could not be reached ({exc})")
                continue
            pending[worker.rep_r] = (worker, len(calls))
            due[worker.rep_r] = time.monotonic() + deadline_s
            poller.register(worker.rep_r, select.POLLIN)
        spin_end = time.monotonic() + (SPIN_S if len(pending) == 1 else 0.0)  # one call: a reply within microseconds
        while pending:
            now = time.monotonic()
            wait = min(due.values()) - now
            if wait > 0 and now < spin_end:
                events = poller.poll(0)
                if not events:
                    os.sched_yield()  # a worker waiting for this CPU gets it
            else:
                events = poller.poll(wait * 1000.0 + 0.5) if wait > 0 else []
            for fd, _ev in events:
                worker, expected = pending[fd]
                got = replies[worker]
                try:
                    data = os.read(fd, READ_CHUNK)
                    if not data:
                        raise EOFError("the worker process died")
                    worker.reader.feed(data)
                    while (frame := worker.reader.pop()) is not None:
                        if len(got) >= expected:
                            raise ProtocolError("the worker sent more replies than calls")
                        got.append(decode_reply(frame))
                        due[fd] = time.monotonic() + deadline_s
                except BlockingIOError:
                    continue
                except (EOFError, OSError, ProtocolError) as exc:
                    detail = str(exc) if isinstance(exc, (EOFError, ProtocolError)) else "the worker process died"
                    lost[worker] = self._lost(worker, FailureKind.CRASH, len(got), detail)
                    got_all = True
                else:
                    got_all = len(got) >= expected
                if got_all and lost[worker] is None and worker.reader.buf:
                    lost[worker] = self._lost(worker, FailureKind.CRASH, len(got), "the worker sent more replies than calls")
                if got_all:
                    poller.unregister(fd)
                    del pending[fd], due[fd]
            now = time.monotonic()
            for fd in [fd for fd, t in due.items() if t <= now]:
                worker, _ = pending.pop(fd)
                del due[fd]
                poller.unregister(fd)
                lost[worker] = self._lost(worker, FailureKind.TIMEOUT, len(replies[worker]),
                                          f"exceeded the {deadline_s:g} s deadline")
        return {w: (replies[w], lost[w]) for w in requests}

    def _lost(self, worker: Worker, kind: FailureKind, culprit: int, detail: str) -> Lost:
        self.release(worker)
        return Lost(kind, culprit, detail)

    def close(self) -> None:
        """Kill every worker and zygote of this pool. Never blocks for long (it runs from
        ``__del__`` and at interpreter exit, possibly while a call times out in another
        thread, or after a daemon thread died holding the lock)."""
        self.check_owner()  # never kill a parent's workers from a forked child
        got = self.lock.acquire(timeout=0.5)
        try:
            workers = self.workers.copy()
            self.workers = set()
            zygotes = [z for z in (self._zygote, self._loading, *self._retired) if z is not None]
            self._zygote = self._loading = None
            self._retired = []
            self._generation += 1
        finally:
            if got:
                self.lock.release()
        for worker in workers:
            worker.kill()
        for zygote in zygotes:
            zygote.close()


#: every live pool of this process, closed at interpreter exit (while threads still run)
_POOLS: weakref.WeakSet[WorkerPool] = weakref.WeakSet()


@atexit.register
def _close_pools() -> None:
    for pool in list(_POOLS):
        try:
            pool.close()
        except Exception:  # noqa: BLE001 - best effort at exit
            pass
