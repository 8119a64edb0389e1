"""``SandboxRuntime``: the default runtime for untrusted programs (DESIGN.md section 5).

Each session is one environment instance living in **its own worker process** (one
program per process: no two sessions, no two clients ever share one). Every method of
:class:`SandboxSession` has the semantics of :class:`spade_envs.runtime.InProcessSession`
(the worker runs that very class over the restricted program) and additionally:

- a wall-clock deadline per call on the caller's clock (``step_timeout_s``, also for
  ``solution``/``hint``/``snapshot``/``close``; ``open_timeout_s`` for compiling and
  constructing): on expiry the worker is killed and the call fails with
  ``EnvExecutionError(kind=FailureKind.TIMEOUT)``; the episode is over, ``reset`` re-opens the
  program in a fresh worker;
- every reply is parsed defensively (:func:`.protocol.decode_reply`: size, nesting,
  element count, integers, lone surrogates) and checked again here (string
  observations of capped length, finite rewards, bools, dict infos, valid tool specs);
  a malformed reply fails that session alone (``kind="crash"``);
- nothing the program does can raise anything but ``EnvProgramError`` /
  ``EnvExecutionError`` here, nor stop or slow the caller's process.

``step_batch``/``reset_batch`` send one message per worker for the whole batch. Calls on
different sessions never wait for each other (each worker has its own lock,
:mod:`.pool`), whichever threads make them. After a step ended the episode, the next
``step`` is answered here with :class:`~spade_envs.errors.EpisodeOverError` (the rule of
:mod:`spade_envs.runtime`), after checking that the worker is alive and quiet.
``info()`` reports the confinement layers the kernel applied to workers; when it
refused one, a ``RuntimeWarning`` is issued once per process.
"""

from __future__ import annotations

import abc
import itertools
import os
import warnings
from collections.abc import Sequence
from typing import Any

from ..contract import StepResult, check_reset_result, check_step_result
from ..errors import EnvExecutionError, EnvProgramError, EpisodeOverError, FailureKind, SpadeError
from .. import format_spec
from ..format_spec import Argument, method
from ..parameters import resolve_kwargs
from ..program import inspect_program
from ..runtime import EnvRuntime, EnvSession, ends_episode, keeps_episode_rule
from .load import scaled
from .confine import refused_layers
from .pool import Worker, WorkerPool, _has_data, needs_full

_ids = itertools.count(1)
_KINDS = frozenset(k.value for k in FailureKind if k is not FailureKind.OPEN)  #: what a worker may report
_warned = [False]


def _text(value: Any, default: str, limit: int = 4000) -> str:
    return value[:limit] if isinstance(value, str) else default


def _to_error(err: Any) -> SpadeError:
    """The error a worker reported, rebuilt from untrusted fields."""
    err = err if isinstance(err, dict) else {}
    if err.get("type") == "program":
        return EnvProgramError(_text(err.get("msg"), "program error"), stage=_text(err.get("stage"), "interface", 64))
    kind = err.get("kind")
    return EnvExecutionError(_text(err.get("msg"), "execution error"), kind=kind if kind in _KINDS else FailureKind.ERROR)


def _warn_refused(layers: dict) -> None:
    refused = refused_layers(layers)
    if refused and not _warned[0]:
        _warned[0] = True
        detail = "; ".join(f"{k}: {layers[k]}" for k in refused)
        warnings.warn(f"spade-envs sandbox: the kernel refused part of the process jail ({detail})",
                      RuntimeWarning, stacklevel=3)


def _proxy_of(name: str) -> Any:
    def call(self: SandboxSession) -> Any:
        return self._proxy(name)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"The program's ``{name}()``, run in the worker; its result through the format's check."
    call._from_format = True  # type: ignore[attr-defined]
    return call


def format_proxies(cls: type) -> type:
    """Give ``cls`` a proxy for every no-argument operation of the program format
    (:data:`~spade_envs.format_spec.METHODS`) it does not define itself, as the worker's
    dispatch is built from the same table: a method added there is offered here too
    (``close``, which also ends the worker, is written out)."""
    for spec in format_spec.METHODS:
        if spec.op and spec.argument is Argument.NONE and spec.name not in vars(cls):
            setattr(cls, spec.name, _proxy_of(spec.name))
    abc.update_abstractmethods(cls)
    return cls


@format_proxies
class SandboxSession(EnvSession):
    """A live environment inside a sandbox worker. ``reset``, ``step`` and ``close`` are
    written out; the program's other methods (``solution``, ``hint``, ``snapshot``) are
    proxies built from the format's table (:func:`format_proxies`)."""

    def __init__(self, runtime: SandboxRuntime, source: str, class_name: str, kwargs: dict, filename: str) -> None:
        self._runtime = runtime
        self._spec = (source, class_name, kwargs, filename)
        self._full = needs_full(source)  # numpy/math_verify: a worker of the full zygote
        self.tools: list[dict[str, Any]] = []
        self.worker: Worker | None = None
        self.sid = 0
        self._dead: SpadeError | None = None
        self.closed = False
        self._owner = os.getpid()

    # -- plumbing --------------------------------------------------------------------
    def _attach(self) -> None:
        source, class_name, kwargs, filename = self._spec
        self.worker = self._runtime.pool.spawn(full=self._full)
        _warn_refused(self.worker.layers)
        self._owner = os.getpid()
        self.sid = next(_ids)
        self._dead = None
        arg = {"source": source, "class_name": class_name, "kwargs": kwargs, "filename": filename}
        tools = self._runtime._call([(self, "open", arg)], self._runtime.open_timeout_s)[0]
        if not isinstance(tools, SpadeError):
            try:
                self._set_tools(tools)
            except SpadeError as exc:
                tools = exc
        if isinstance(tools, SpadeError):
            self._detach()
            raise tools

    def _detach(self) -> None:
        if self.worker is not None:
            self._runtime.pool.release(self.worker)

    def _set_tools(self, tools: Any) -> None:
        if tools is not None:
            from ..tools import validate_tool_specs

            try:
                self.tools = validate_tool_specs(tools)
            except SpadeError:
                raise
            except Exception as exc:  # a hostile worker may send anything shaped like specs
                raise EnvProgramError(f"the worker returned malformed tool specs ({type(exc).__name__})") from None

    def _unavailable(self) -> SpadeError | None:
        if self.closed:
            return EnvExecutionError("this session is closed", kind=FailureKind.CLOSED)
        if self._dead is not None:
            return self._dead
        if self._owner != os.getpid():
            return EnvExecutionError("this session was opened in another process (before a fork)", kind=FailureKind.CRASH)
        if self.worker is None or not self.worker.alive:
            return EnvExecutionError(
                "the sandbox worker running this environment is gone (it crashed, broke the protocol "
                "or ran past a deadline); reset() starts a new episode", kind=FailureKind.CRASH)
        return None

    def _over(self) -> SpadeError:
        """The answer to a step after the episode ended, which the runtime gives without a
        message. A worker that is gone, or that sent data nobody asked for (checked when
        no call is in flight), fails the session as that call would have: a protocol
        break is caught at the next call, answered by the runtime or not."""
        worker = self.worker
        if worker is not None and worker.alive and worker.lock.acquire(blocking=False):
            try:
                unsolicited = bool(worker.reader.buf) or _has_data(worker.rep_r)
            finally:
                worker.lock.release()
            if unsolicited:
                self._runtime.pool.release(worker)
                self.episode_over = False
                return EnvExecutionError("step() was lost: the worker sent data nobody asked for", kind=FailureKind.CRASH)
        problem = self._unavailable()
        if problem is not None:
            self.episode_over = False
            return problem
        return EpisodeOverError()

    def _one(self, op: str, arg: Any) -> Any:
        result = self._runtime._call([(self, op, arg)], self._runtime.step_timeout_s)[0]
        if isinstance(result, SpadeError):
            raise result
        return result

    def _proxy(self, name: str) -> Any:
        """Method ``name`` of the program format (no argument) run in the worker, its
        result through the spec's check (:mod:`spade_envs.format_spec`)."""
        spec = method(name)
        value = self._one(spec.op, None)
        return value if spec.check is None else spec.check(value)

    # -- EnvSession ------------------------------------------------------------------
    @keeps_episode_rule  # reset_batch: a successful reset starts a playable episode
    def reset(self, seed: int | None = None) -> tuple[str, dict]:
        result = self._runtime.reset_batch([(self, seed)])[0]
        if isinstance(result, SpadeError):
            raise result
        return result

    @keeps_episode_rule  # step_batch answers a finished episode (after checking on the worker)
    def step(self, action: str) -> StepResult:
        result = self._runtime.step_batch([(self, action)])[0]
        if isinstance(result, SpadeError):
            raise result
        return result

    def close(self) -> None:
        """Run the program's ``close()`` under the step deadline, then end the worker.
        Raises ``EnvExecutionError`` when ``close()`` raised or hung (the session is
        closed either way)."""
        if self.closed:
            return
        if self._owner != os.getpid():  # a forked copy: the parent's worker is not ours
            self.closed = True
            return
        try:
            if self._unavailable() is None:
                self._proxy("close")
        finally:
            self.closed = True
            self._detach()


    def __del__(self) -> None:  # an abandoned session must not keep its process alive
        try:
            worker = self.worker
            if worker is not None and worker.alive and self._owner == os.getpid():
                worker.kill()
                self._runtime.pool.workers.discard(worker)
        except Exception:  # noqa: BLE001 - best effort, possibly at interpreter exit
            pass


class SandboxRuntime(EnvRuntime):
    """Runs untrusted programs in jailed, resource-limited worker processes, one per
    session.

    ``max_workers`` is kept for compatibility and no longer bounds anything (every
    session has its own process); ``memory_mb`` is each worker's address-space budget
    on top of the pre-loaded zygote; ``cpu_s`` its CPU-second limit over its life."""

    def __init__(self, *, max_workers: int | None = None, step_timeout_s: float = 10.0,
                 open_timeout_s: float = 30.0, memory_mb: int = 1024, cpu_s: int = 3600) -> None:
        self.step_timeout_s = step_timeout_s
        self.open_timeout_s = open_timeout_s
        self.pool = WorkerPool(max_workers or os.cpu_count() or 2, memory_mb, cpu_s)

    def open(self, source: str, *, kwargs: dict[str, Any] | None = None, filename: str = "<env>") -> EnvSession:
        info = inspect_program(source, filename)
        kwargs = resolve_kwargs(source, kwargs, filename)  # validated against PARAMETERS here, in the host
        session = SandboxSession(self, source, info.class_name, kwargs, filename)
        session._attach()
        return session

    def info(self) -> dict[str, Any]:
        """How workers are confined here: ``network`` (``netns`` or ``audit-hook ...``),
        ``uid`` (of a worker), ``layers`` (each confinement layer: ``applied ...`` or
        ``refused: ERRNO ...``), ``refused`` (names of refused layers), ``read_paths``
        (the read-only file view)."""
        zygote = self.pool.zygote
        if not self.pool.layers:
            self.pool.release(self.pool.spawn())  # a probe worker reports the layers
        layers = dict(self.pool.layers)
        uid = layers.get("uid", "")
        return {"network": zygote.info.get("network"), "zygote_uid": zygote.info.get("uid"),
                "uid": int(uid.split()[1]) if uid.startswith("uid ") else zygote.info.get("uid"),
                "layers": layers, "refused": refused_layers(layers),
                "read_paths": list(zygote.info.get("read_paths", []))}

    # -- batching ----------------------------------------------------------------------
    def _call(self, calls: Sequence[tuple[SandboxSession, str, Any]], deadline_s: float) -> list[Any]:
        """Run calls (grouped into one message per worker); each slot gets the payload
        or the SpadeError of that call."""
        out: list[Any] = [None] * len(calls)
        requests: dict[Worker, list] = {}
        slots: dict[Worker, list[int]] = {}
        for i, (session, op, arg) in enumerate(calls):
            problem = session._unavailable() if op != "open" else None
            if problem is not None:
                out[i] = problem
                continue
            requests.setdefault(session.worker, []).append([op, session.sid, arg])
            slots.setdefault(session.worker, []).append(i)
        if not requests:
            return out
        # the deadline stretched by the machine's load (sandbox.load): busy cores never refuse a valid call
        replies = self.pool.exchange(requests, scaled(deadline_s))  # each worker's own lock, no shared one
        for worker, (items, lost) in replies.items():
            idx = slots[worker]
            for j, i in enumerate(idx):
                session, op, _ = calls[i]
                if j < len(items):
                    ok, payload = items[j]
                    out[i] = payload if ok == 1 else _to_error(payload)
                elif lost is not None and lost.kind == FailureKind.TIMEOUT and j == lost.culprit:
                    out[i] = EnvExecutionError(f"{op}() {lost.detail}; the worker was killed", kind=FailureKind.TIMEOUT)
                    session._dead = EnvExecutionError(f"this episode ended with a timeout in {op}()", kind=FailureKind.TIMEOUT)
                else:
                    detail = lost.detail if lost is not None else "no reply"
                    out[i] = EnvExecutionError(f"{op}() was lost: {detail}", kind=FailureKind.CRASH)
        return out

    def _revive(self, session: SandboxSession) -> SpadeError | None:
        """Re-open a session whose worker was lost (a reset starts a new episode)."""
        if session.closed:
            return EnvExecutionError("this session is closed", kind=FailureKind.CLOSED)
        if session._unavailable() is None:
            return None
        session._detach()
        try:
            session._attach()
        except SpadeError as exc:
            return exc
        return None

    def step_batch(self, calls: Sequence[tuple[EnvSession, str]]) -> list[StepResult | SpadeError]:
        """Step sessions in one message per worker. The post-termination rule holds per
        call (:mod:`spade_envs.runtime`): a session whose episode is over gets
        :class:`EpisodeOverError` without a message, and so does every later call of a
        session within the batch once one of its steps ended the episode."""
        out: list[Any] = [None] * len(calls)
        live = []
        for i, (session, _action) in enumerate(calls):
            if session.episode_over:
                out[i] = session._over()  # type: ignore[attr-defined]
            else:
                live.append(i)
        texts = [(calls[i][0], "step", calls[i][1] if isinstance(calls[i][1], str) else str(calls[i][1])) for i in live]
        raw = self._call(texts, self.step_timeout_s)  # type: ignore[arg-type]
        for i, payload in zip(live, raw):
            session = calls[i][0]
            if session.episode_over:  # an earlier call of this batch ended its episode
                lost = isinstance(payload, EnvExecutionError) and not (session.worker and session.worker.alive)
                out[i] = payload if lost else EpisodeOverError()  # a worker lost meanwhile: its verdict
                if lost:  # later calls report the loss too (``_unavailable``), not the rule
                    session.episode_over = False
                continue
            if isinstance(payload, SpadeError):
                out[i] = payload
                continue
            try:
                if not isinstance(payload, list) or len(payload) != 5:
                    raise EnvProgramError("the worker returned a malformed step result")
                out[i] = result = check_step_result(tuple(payload))
            except SpadeError as exc:
                out[i] = exc
                continue
            if ends_episode(result):
                session.episode_over = True
        return out

    def reset_batch(self, calls: Sequence[tuple[EnvSession, int | None]]) -> list[tuple[str, dict] | SpadeError]:
        out: list[Any] = [None] * len(calls)
        live = []
        for i, (session, seed) in enumerate(calls):
            problem = self._revive(session)  # type: ignore[arg-type]
            if problem is not None:
                out[i] = problem
            else:
                live.append(i)
        raw = self._call([(calls[i][0], "reset", calls[i][1]) for i in live], self.step_timeout_s)
        for i, payload in zip(live, raw):
            if isinstance(payload, SpadeError):
                out[i] = payload
                continue
            try:
                if not isinstance(payload, list) or len(payload) != 3:
                    raise EnvProgramError("the worker returned a malformed reset result")
                calls[i][0]._set_tools(payload[2])  # type: ignore[attr-defined]
                out[i] = check_reset_result((payload[0], payload[1]))
                calls[i][0].episode_over = False
            except SpadeError as exc:
                out[i] = exc
        return out

    def close(self) -> None:
        self.pool.close()

    def __del__(self) -> None:  # pragma: no cover - best effort at interpreter exit
        try:
            self.pool.close()
        except Exception:
            pass
