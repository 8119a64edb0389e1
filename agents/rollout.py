"""The episode loop: N environments played together by one LLM backend.

Each round generates one action for every live episode in ONE batched backend call,
then steps all their environments through ``envloop.step_batch`` (batched per runtime),
until each episode is terminated, truncated or reaches its turn limit.

Token-level trajectories (backends with ``token_level`` and a tokenizer): the prompt is
rendered once with the chat template; generated tokens are appended as the model
produced them (mask 1, their sampling logprobs); after each step the text the template
writes for the observation and the next generation prompt is tokenized and appended
(mask 0, logprob 0.0). The next generation is conditioned on exactly these token ids,
so ``token_ids``/``logprobs``/``mask`` can be fed to a trainer as they are.

Message-level backends (HTTP) re-render the conversation each turn; their token fields
are filled best-effort from the ids the server returns (empty when it returns none).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ..actions import parse_tool_calls
from ..errors import EnvFailure
from . import chat, envloop
from .api import Agent, Backend, Episode, Generation, PlayTask


@dataclass
class _Live:
    task: PlayTask
    env: Any
    tools: list[dict]
    messages: list[dict]
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    mask: list[int] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    terminated: bool = False
    truncated: bool = False
    error: EnvFailure | None = None
    done: bool = False
    generation_s: float = 0.0
    environment_s: float = 0.0

    def extend(self, ids: list[int], logprobs: list[float] | None, model: bool) -> None:
        self.token_ids.extend(ids)
        self.logprobs.extend(logprobs if logprobs is not None and len(logprobs) == len(ids) else [0.0] * len(ids))
        self.mask.extend([1 if model else 0] * len(ids))


class LLMAgent(Agent):
    """An agent driven by a generation :class:`Backend`.

    Options: ``max_new_tokens`` per turn (256), ``temperature`` (0.6; 0 = greedy),
    ``seed`` (sampling seed of the first round; later rounds use seed + round),
    ``sandbox`` (run registered environments in the sandbox too), ``trust_remote_code``
    (run task sources in-process), ``system_prompt``, ``reuse_cache`` (True: a
    token-level backend that offers ``new_session()`` keeps each episode's KV cache across
    its turns and encodes the shared prompt prefix once; False re-encodes every turn).
    """

    def __init__(
        self,
        backend: Backend,
        *,
        name: str | None = None,
        max_new_tokens: int = 256,
        temperature: float = 0.6,
        seed: int | None = None,
        sandbox: bool = False,
        trust_remote_code: bool = False,
        system_prompt: str = chat.SYSTEM_PROMPT,
        reuse_cache: bool = True,
    ) -> None:
        self.backend = backend
        self.name = name or backend.name
        self.max_new_tokens = int(max_new_tokens)
        self.temperature = float(temperature)
        self.seed = seed
        self.env_options = {"sandbox": sandbox, "trust_remote_code": trust_remote_code}
        self.system_prompt = system_prompt
        self.reuse_cache = bool(reuse_cache)
        self._session: Any = None
        self.last_timings: dict[str, float] = {}
        tokenizer = backend.tokenizer
        self.token_level = bool(backend.token_level and tokenizer is not None)
        native = getattr(backend, "native_tools", None)  # HTTP backends say so explicitly
        self.native_tools = bool(native) if native is not None else (
            tokenizer is not None and chat.template_supports_tools(tokenizer))
        self.max_positions = getattr(backend, "max_positions", None)

    def close(self) -> None:
        self.backend.close()

    # -- the loop ---------------------------------------------------------------------
    def play(self, tasks: list[PlayTask], *, progress: bool = False) -> list[Episode]:
        t0 = time.perf_counter()
        timings = {"generation_s": 0.0, "environment_s": 0.0}
        bar = _progress(len(tasks), progress)
        episodes: list[Episode | None] = [None] * len(tasks)
        lives: list[_Live | None] = []
        for i, task in enumerate(tasks):
            t = time.perf_counter()
            env, obs, info, error = envloop.start(task, **self.env_options)
            spent = time.perf_counter() - t
            timings["environment_s"] += spent
            if error is not None:
                episodes[i] = _failed_episode(task, error)
                lives.append(None)
                bar.update(1)
                continue
            tools = list(info.get("tools") or [])
            if hasattr(env, "messages"):  # the environment's own opening (one prompt for every surface)
                messages = env.messages(native_tools=self.native_tools, system_prompt=self.system_prompt)
            else:
                messages = chat.initial_messages(obs, tools, native_tools=self.native_tools,
                                                 system_prompt=self.system_prompt)
            live = _Live(task=task, env=env, tools=tools, messages=messages, environment_s=spent)
            if self.token_level:
                live.extend(chat.prompt_ids(self.backend.tokenizer, messages, tools), None, model=False)
            lives.append(live)
        reuse = self.reuse_cache and self.token_level and hasattr(self.backend, "new_session")
        self._session = self.backend.new_session() if reuse else None
        round_no = 0
        while True:
            active = [(i, lv) for i, lv in enumerate(lives) if lv is not None and not lv.done]
            if not active:
                break
            t = time.perf_counter()
            gens = self._generate([lv for _, lv in active], round_no)
            gen_s = time.perf_counter() - t
            timings["generation_s"] += gen_s
            actions = []
            for (_, lv), gen in zip(active, gens):
                lv.generation_s += gen_s
                self._record_generation(lv, gen)
                actions.append(gen.text)
            t = time.perf_counter()
            outcomes = envloop.step_batch([lv.env for _, lv in active], actions)
            env_s = time.perf_counter() - t
            timings["environment_s"] += env_s
            for (i, lv), action, out in zip(active, actions, outcomes):
                lv.environment_s += env_s
                self._record_step(lv, action, out)
                if lv.done:
                    episodes[i] = self._close(lv)
                    bar.update(1)
            round_no += 1
        bar.close()
        if self._session is not None:
            timings.update({k: float(v) for k, v in self._session.stats.items()})
        self._session = None  # frees the cache
        wall = time.perf_counter() - t0
        timings["wall_s"] = wall
        timings["other_s"] = max(0.0, wall - timings["generation_s"] - timings["environment_s"])
        timings["rounds"] = float(round_no)
        self.last_timings = timings
        return [ep for ep in episodes if ep is not None]

    def _generate(self, lives: list[_Live], round_no: int) -> list[Generation]:
        seed = None if self.seed is None else self.seed + round_no
        opts = {"max_new_tokens": self.max_new_tokens, "temperature": self.temperature, "seed": seed}
        if self.token_level:
            if self._session is not None:
                opts.update(session=self._session, keys=[id(lv) for lv in lives])
            return self.backend.generate([lv.token_ids for lv in lives], **opts)
        return self.backend.chat([lv.messages for lv in lives], tools=[lv.tools for lv in lives], **opts)

    def _record_generation(self, lv: _Live, gen: Generation) -> None:
        if not self.token_level and gen.prompt_token_ids:
            prompt = list(gen.prompt_token_ids)
            if prompt[: len(lv.token_ids)] == lv.token_ids:
                lv.extend(prompt[len(lv.token_ids):], None, model=False)
            else:  # the server re-tokenized differently: restart the record from its prompt
                lv.token_ids, lv.logprobs, lv.mask = [], [], []
                lv.extend(prompt, None, model=False)
        if self.token_level or gen.prompt_token_ids:
            lv.extend(list(gen.token_ids), list(gen.logprobs), model=True)
        lv.messages.append({"role": "assistant", "content": gen.text})
        lv.actions.append(gen.text)

    def _record_step(self, lv: _Live, action: str, out: envloop.StepOutcome) -> None:
        lv.rewards.append(out.reward)
        lv.terminated, lv.truncated = out.terminated, out.truncated
        if out.error:
            lv.error, lv.truncated = out.error, True
        turns = len(lv.actions)
        if not (lv.terminated or lv.truncated) and turns >= lv.task.max_turns:
            lv.truncated = True
        if lv.terminated or lv.truncated:
            lv.done = True
            return
        called = bool(parse_tool_calls(action))
        lv.messages.append(chat.observation_message(out.observation, native_tools=self.native_tools, called_tool=called))
        if self.token_level:
            generated = lv.token_ids[len(lv.token_ids) - _last_gen_len(lv):]
            lv.extend(chat.continuation_ids(self.backend.tokenizer, lv.messages, lv.tools, generated, action), None,
                      model=False)
            if self.max_positions and len(lv.token_ids) + self.max_new_tokens > self.max_positions:
                lv.truncated, lv.done = True, True  # the context is full

    def _close(self, lv: _Live) -> Episode:
        t = time.perf_counter()
        state = envloop.finish(lv.env)
        lv.environment_s += time.perf_counter() - t
        ret = envloop.episode_return(lv.rewards)
        return Episode(
            task=lv.task, messages=lv.messages, actions=lv.actions, rewards=lv.rewards,
            episode_return=ret, won=ret >= 1.0, turns=len(lv.actions),
            terminated=lv.terminated, truncated=lv.truncated and not lv.terminated,
            token_ids=lv.token_ids, logprobs=lv.logprobs, mask=lv.mask, error=lv.error,
            final_state=state,
            timings={"generation_s": lv.generation_s, "environment_s": lv.environment_s},
        )


def _last_gen_len(lv: _Live) -> int:
    """Length of the trailing run of model tokens (the generation just recorded)."""
    n = 0
    for m in reversed(lv.mask):
        if m != 1:
            break
        n += 1
    return n


def _failed_episode(task: PlayTask, error: EnvFailure) -> Episode:
    return Episode(
        task=task, messages=[], actions=[], rewards=[], episode_return=0.0, won=False, turns=0,
        terminated=False, truncated=True, token_ids=[], logprobs=[], mask=[], error=error,
    )


class _NoBar:
    def update(self, n: int = 1) -> None: ...
    def close(self) -> None: ...


def _progress(total: int, enabled: bool):
    if not enabled:
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, desc="episodes", unit="ep")
