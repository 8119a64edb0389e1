"""Environment side of rollouts: opening tasks' environments and stepping them in batch.

Every environment is a :class:`~spade_envs.gym_env.SpadeEnv`, so hint handling and the
choice of runtime follow the Gymnasium surface: registered seeds run in-process unless
``sandbox=True``; a task's ``source`` is untrusted and runs through ``get_runtime()``
(the sandbox) unless ``trust_remote_code=True``. Steps of many environments are grouped
by runtime and sent through ``EnvRuntime.step_batch`` (one round trip per runtime for a
sandbox; :func:`spade_envs.gym_env.step_many`), and a failing environment ends only its
own episode. The opening messages of an episode come from the environment
(``SpadeEnv.messages``), like every other surface's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import EnvFailure, FailureKind, SpadeError
from .api import PlayTask


@dataclass
class StepOutcome:
    observation: str
    reward: float
    terminated: bool
    truncated: bool
    info: dict = field(default_factory=dict)
    error: EnvFailure | None = None  #: why the step failed (its ``kind`` says how); None if it did not


def open_env(task: PlayTask, *, sandbox: bool = False, trust_remote_code: bool = False):
    """A :class:`SpadeEnv` for ``task`` (not yet reset)."""
    from ..gym_env import SpadeEnv
    from ..trust import get_runtime

    runtime = get_runtime() if sandbox and not trust_remote_code else None
    params = dict(getattr(task, "kwargs", None) or {})
    if task.source is not None:
        return SpadeEnv(source=task.source, hint=task.hint, trust_remote_code=trust_remote_code, runtime=runtime,
                        env_kwargs=params)
    return SpadeEnv(env_id=task.env_id, hint=task.hint, runtime=runtime, env_kwargs=params)


def start(task: PlayTask, **options: Any) -> tuple[Any, str, dict, EnvFailure | None]:
    """Open and reset ``task``'s environment: ``(env or None, observation, info, failure)``."""
    try:
        env = open_env(task, **options)
    except SpadeError as exc:
        return None, "", {}, EnvFailure.from_exception(exc, default=FailureKind.OPEN,
                                                       prefix="cannot open environment: ")
    try:
        obs, info = env.reset(seed=task.seed)
    except SpadeError as exc:
        close_env(env)
        return None, "", {}, EnvFailure.from_exception(exc, default=FailureKind.OPEN, prefix="reset failed: ")
    return env, obs, info, None


def step_batch(envs: list[Any], actions: list[str]) -> list[StepOutcome]:
    """Step every env with its action. :class:`SpadeEnv` steps go through
    :func:`spade_envs.gym_env.step_many` (batched per runtime through ``step_batch``, with
    the same ``info`` as ``env.step``: ``turn``, ``terminated_by``/``truncated_by``)."""
    from ..gym_env import SpadeEnv, step_many

    outcomes: list[StepOutcome | None] = [None] * len(envs)
    spade = [i for i, env in enumerate(envs) if isinstance(env, SpadeEnv)]
    for i, env in enumerate(envs):
        if i not in set(spade):
            outcomes[i] = _direct_step(env, actions[i])
    results = step_many([envs[i] for i in spade], [str(actions[i]) for i in spade])
    for i, (obs, reward, terminated, truncated, info) in zip(spade, results):
        outcomes[i] = StepOutcome(obs, float(reward), bool(terminated), bool(truncated), dict(info),
                                  error=_failure(info))
    return [o for o in outcomes if o is not None]


def _direct_step(env: Any, action: str) -> StepOutcome:
    try:
        obs, reward, terminated, truncated, info = env.step(action)
    except SpadeError as exc:
        failure = EnvFailure.from_exception(exc)
        return StepOutcome(f"Environment error: {exc}", 0.0, False, True,
                           {"error": str(exc), "verdict": failure.kind.value}, error=failure)
    info = dict(info)
    return StepOutcome(obs, float(reward), bool(terminated), bool(truncated), info, error=_failure(info))


def _failure(info: dict) -> EnvFailure | None:
    """The failure a step's ``info`` reports (``error`` + its ``verdict`` kind), if any."""
    error = info.get("error")
    if error is None:
        return None
    kind = info.get("verdict") or FailureKind.ERROR
    return EnvFailure(FailureKind.of(kind), f"{kind}: {error}" if info.get("verdict") else str(error))


def finish(env: Any) -> Any:
    """The env's ``snapshot()`` (None if it fails), then close it."""
    state = None
    if env is not None:
        try:
            state = env.snapshot()
        except SpadeError:
            state = None
        close_env(env)
    return state


def close_env(env: Any) -> None:
    try:
        env.close()
    except Exception:  # closing must never fail a batch
        pass


def episode_return(rewards: list[float]) -> float:
    """The last reward clipped to [-1, 1] (0.0 when there was no step)."""
    return max(-1.0, min(1.0, rewards[-1])) if rewards else 0.0
