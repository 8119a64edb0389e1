r"""verifiers interop: spade environments as a verifiers ``MultiTurnEnv``.

The Environments Hub convention is a module with ``load_environment(**kwargs)`` returning
a ``verifiers.Environment``; ``spade_envs`` itself answers it, so both work::

    import verifiers as vf
    env = vf.load_environment("spade-envs", ids=["spade/Env-00013"], seeds=4)
    from spade_envs.integrations.verifiers import load_environment
    env = load_environment(split="heldout", seeds=8)
    results = env.evaluate_sync(client=AsyncOpenAI(...), model="...")

Needs the ``verifiers`` package (``pip install "spade-envs[evals]"``, which pins the
tested 0.1 release). The environment API it uses (``MultiTurnEnv``, ``Rubric``,
``cleanup``) is taken from the top level of verifiers 0.1/0.2 or from
``verifiers.legacy`` (0.3, where that API moved); a release without it (0.4 keeps only
``verifiers.v1``) is one :class:`IntegrationError` saying so; verifiers' v1 stack can play
spade environments through its OpenEnv taskset against ``spade serve``. Without
verifiers or ``datasets``, one line names the extra. Contract:

- the dataset has one row per (environment, seed): ``prompt`` is the environment's own
  opening (``SpadeEnv.messages()``: the protocol, the tool specs as text, the first
  observation), ``answer`` is empty (the environment judges), ``task`` is ``"spade"``
  (not with verifiers 0.3, which reads ``task`` as a serialized payload) and
  ``info`` (a dict) holds ``env_id`` (with version), ``seed`` and ``env_kwargs``;
- a rollout opens the environment (sandboxed unless it is a shipped seed) and resets it
  with the row's seed; each model message is stepped as ONE action as soon as the model
  answers (its text; native ``tool_calls`` become ``<tool_call>`` JSON), so the last
  action of a capped rollout is still judged; the observation is the next user message
  (``env_response``); the episode ending (terminated or truncated) ends the rollout
  with that observation as the final environment response;
- the rubric's reward is the episode return (the last reward, clipped to [-1, 1]); metric
  ``won`` is 1.0 when the return reaches 1.0 (the win rule of ``spade eval``);
- ``ids`` (ids or ``EnvRecord``\ s; default every active verified single-agent entry),
  ``split`` (``all``, ``train``, ``heldout``), ``seeds`` (an int ``n`` is ``range(n)``),
  ``hint``, ``env_kwargs`` (the programs' parameters, e.g. ``{"difficulty": 3}``, the same
  for every row), ``max_turns`` (model turns per rollout) and the usual
  ``verifiers.Environment`` keywords (``system_prompt`` replaces every row's system message).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..errors import IntegrationError

if TYPE_CHECKING:
    from ..gym_env import SpadeEnv

TASK = "spade"


EXTRA = 'pip install "spade-envs[evals]"'


def _verifiers() -> Any:
    """verifiers' environment API: ``verifiers.legacy`` where it exists (0.3, whose top
    level only forwards to it), else its top level (0.1/0.2)."""
    try:
        import verifiers as vf
    except ImportError as exc:
        raise IntegrationError(f"the verifiers package is not installed ({exc.name or exc}): {EXTRA}") from None
    try:
        import verifiers.legacy as legacy
    except ImportError:
        legacy = None
    if legacy is not None and hasattr(legacy, "MultiTurnEnv"):
        return legacy
    if hasattr(vf, "MultiTurnEnv"):
        return vf
    version = getattr(vf, "__version__", "?")
    raise IntegrationError(f"verifiers {version} has no MultiTurnEnv (at its top level or in verifiers.legacy); "
                           f"install the tested release: {EXTRA}, or play spade environments from verifiers.v1 "
                           "through its OpenEnv taskset against `spade serve`")


def _records(ids: Iterable[Any] | None, split: str | None) -> list[Any]:
    from ..evals.registry_suite import active_records, select_records
    from ..evals.splits import in_split
    from ..registry.catalog import EnvRecord, resolve

    if split not in (None, "all", "train", "heldout"):
        raise IntegrationError(f"split must be all, train or heldout, got {split!r}")
    if ids is None:
        records = select_records(active_records(), split=split)
    else:
        items = [ids] if isinstance(ids, (str, EnvRecord)) else list(ids)
        records = [i if isinstance(i, EnvRecord) else resolve(str(i)) for i in items]
        records = [r for r in records if in_split(r.env_id, split)]
    if not records:
        raise IntegrationError("the selection is empty: no environment matches these ids and split")
    return records


def episode_rows(ids: Iterable[Any] | None = None, split: str | None = "all", seeds: int | Iterable[int] = 1, *,
                 hint: bool = False, env_kwargs: dict[str, Any] | None = None,
                 system_prompt: str | None = None) -> list[dict[str, Any]]:
    """The dataset rows (see the module docstring), one per (environment, seed)."""
    from ..gym_env import SpadeEnv

    seed_list = list(range(seeds)) if isinstance(seeds, int) else [int(s) for s in seeds]
    rows = []
    for rec in _records(ids, split):
        env = SpadeEnv(rec.env_id.base, rec.env_id.version, hint=hint, env_kwargs=dict(env_kwargs or {}))
        try:
            for seed in seed_list:
                env.reset(seed=seed)
                prompt = [dict(m) for m in env.messages()]
                if system_prompt is not None:
                    prompt[0]["content"] = system_prompt
                info = {"env_id": str(rec.env_id), "seed": seed, "env_kwargs": dict(env_kwargs or {})}
                rows.append({"prompt": prompt, "answer": "", "task": TASK, "info": info})
        finally:
            env.close()
    return rows


def action_text(completion: Any) -> str:
    """The action of one model turn: the text of its last assistant message, with native
    ``tool_calls`` written as ``<tool_call>`` JSON (the environments' text protocol)."""
    def field(obj: Any, key: str) -> Any:  # dict messages (0.1) or message objects (0.3)
        return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)

    messages = completion if isinstance(completion, list) else [{"role": "assistant", "content": completion}]
    msg = next((m for m in reversed(messages) if field(m, "role") == "assistant"), None)
    if msg is None:
        return ""
    content = field(msg, "content") or ""
    if isinstance(content, list):
        content = "".join(str(field(p, "text") or "") for p in content)
    calls = []
    for call in field(msg, "tool_calls") or []:
        fn = call.get("function", {}) if isinstance(call, dict) else getattr(call, "function", None)
        name = fn.get("name") if isinstance(fn, dict) else getattr(fn, "name", None)
        args = fn.get("arguments") if isinstance(fn, dict) else getattr(fn, "arguments", None)
        try:
            args = json.loads(args) if isinstance(args, str) else (args or {})
        except ValueError:
            args = {}
        calls.append(f'<tool_call>{json.dumps({"name": name, "arguments": args})}</tool_call>')
    return "\n".join([str(content), *calls]).strip() if calls else str(content)


async def episode_return(state: Any) -> float:
    """Reward: the episode return (last reward, clipped to [-1, 1]); 0.0 before any step."""
    spade = state.get("spade") or {}
    return max(-1.0, min(1.0, float(spade.get("return", 0.0))))


async def won(state: Any) -> float:
    """Metric: 1.0 when the episode return reached 1.0."""
    return 1.0 if await episode_return(state) >= 1.0 else 0.0


def spade_rubric() -> Any:
    """The rubric of every spade environment: reward ``episode_return``, metric ``won``."""
    vf = _verifiers()
    rubric = vf.Rubric(funcs=[episode_return], weights=[1.0])
    rubric.add_metric(won)
    return rubric


def _env_class() -> type:
    vf = _verifiers()

    class SpadeVerifiersEnv(vf.MultiTurnEnv):
        """spade environments as one verifiers ``MultiTurnEnv`` (see the module docstring)."""

        def __init__(self, *, hint: bool = False, **kwargs: Any) -> None:
            kwargs.setdefault("rubric", spade_rubric())
            super().__init__(**kwargs)
            self.hint = bool(hint)
            self._live: dict[str, "SpadeEnv"] = {}

        def _open(self, info: dict[str, Any]) -> "SpadeEnv":
            from ..gym_env import SpadeEnv
            from ..registry.ids import parse_env_id

            eid = parse_env_id(str(info["env_id"]))
            env = SpadeEnv(eid.base, eid.version, hint=self.hint, env_kwargs=dict(info.get("env_kwargs") or {}))
            env.reset(seed=int(info["seed"]))
            return env

        async def setup_state(self, state: Any, **kwargs: Any) -> Any:
            info = state["info"]
            if isinstance(info, str):  # rows saved by an older spade-envs held JSON text
                info = json.loads(info)
            state["spade"] = {"env_id": info["env_id"], "seed": int(info["seed"]), "return": 0.0, "steps": 0,
                              "terminated": False, "truncated": False, "observation": None}
            self._live[state["trajectory_id"]] = await asyncio.to_thread(self._open, info)
            return await super().setup_state(state, **kwargs)

        async def add_trajectory_step(self, state: Any, trajectory_step: Any) -> None:
            await super().add_trajectory_step(state, trajectory_step)
            env = self._live.get(state["trajectory_id"])
            spade = state["spade"]
            if env is None or spade["terminated"] or spade["truncated"]:
                return
            obs, reward, terminated, truncated, _ = await asyncio.to_thread(
                env.step, action_text(trajectory_step["completion"]))
            spade.update(observation=obs, steps=spade["steps"] + 1, terminated=bool(terminated),
                         truncated=bool(truncated), **{"return": float(reward)})
            if terminated or truncated:
                state["final_env_response"] = [{"role": "user", "content": obs}]
                self._close(state)

        async def env_response(self, messages: Any, state: Any, **kwargs: Any) -> Any:
            return [{"role": "user", "content": state["spade"]["observation"] or ""}]

        @vf.cleanup
        async def close_spade_env(self, state: Any) -> None:
            self._close(state)

        def _close(self, state: Any) -> None:
            env = self._live.pop(state.get("trajectory_id"), None)
            if env is not None:
                env.close()

        async def render_completion(self, state: Any) -> None:
            await super().render_completion(state)
            self._close(state)  # the rollout is over, whichever stop condition ended it

    return SpadeVerifiersEnv


def load_environment(ids: Iterable[Any] | None = None, split: str | None = "all", seeds: int | Iterable[int] = 8,
                     *, max_turns: int = 10, hint: bool = False, env_kwargs: dict[str, Any] | None = None,
                     system_prompt: str | None = None, **kwargs: Any) -> Any:
    """A verifiers environment whose rollouts play spade environments (module docstring)."""
    if not isinstance(max_turns, int) or max_turns < 1:
        raise IntegrationError(f"max_turns must be a positive integer, got {max_turns!r}")
    cls = _env_class()  # the friendly check of verifiers comes first
    try:
        from datasets import Dataset
    except ImportError as exc:
        raise IntegrationError(f"the datasets package is not installed ({exc.name or exc}): {EXTRA}") from None
    rows = episode_rows(ids, split, seeds, hint=hint, env_kwargs=env_kwargs, system_prompt=system_prompt)
    if _verifiers().__name__.endswith(".legacy"):  # 0.3 reads a `task` column as a serialized payload
        rows = [{k: v for k, v in row.items() if k != "task"} for row in rows]
    dataset = Dataset.from_list(rows)
    return cls(dataset=dataset, eval_dataset=dataset, max_turns=max_turns, hint=hint, env_id="spade-envs",
               env_args={"ids": None if ids is None else [str(getattr(i, "env_id", i)) for i in
                                                          ([ids] if isinstance(ids, str) else ids)],
                         "split": split}, message_type="chat", **kwargs)
