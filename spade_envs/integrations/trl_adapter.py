r"""TRL adapter: registry environments as ``GRPOTrainer(environment_factory=...)`` classes.

How TRL 1.16 uses an environment class (``trl/trainer/grpo_trainer.py``): it calls the
factory with no arguments, lists the PUBLIC functions of the class (``reset`` and
``get_reward`` excluded) as the tools, renders them into the prompt with transformers'
``get_json_schema`` (type hints + Google-style docstring), calls ``reset(**row)`` with the
dataset row (minus its ``environment`` column) and appends the returned string to the
last user message, calls a tool method with the model's arguments as keywords, and calls
``get_reward()`` once per finished rollout. Tools are read once per class, so every
instance of a class must expose the same tools.

Hence one class per **environment** (id + version): its tools are the union of the tool
specs its episodes show over the seeds of the dataset. A tool environment whose specs
depend on the seed (an ``enum`` of this episode's channel names, say) is handled inside
the class: the method's schema is the merge of the seeds' schemas (enums united), and
every call is still validated by the environment against THIS episode's exact spec.
Text-only environments share one class, ``SpadeTextEnv``. Each class has

- ``reset(env_id, seed, hint=False, env_kwargs=None, **row) -> str``: plays ``env_id``
  with ``seed`` and the program parameters ``env_kwargs`` (JSON text; all columns of the
  row) and returns the first observation;
- one typed method per tool (:mod:`.tool_methods`), which sends a ``<tool_call>`` to the
  environment and returns the observation;
- ``answer(answer: str) -> str``: the final action (``<answer>...</answer>`` for tool
  environments, ``\boxed{...}`` for text games; call it once per move in multi-step games);
- ``get_reward() -> float``: the episode return (last reward, clipped to [-1, 1]).

The factories (:class:`EnvironmentFactory`, one per class) are picklable: they carry the
class name and tool specs and rebuild the class in whatever process calls them, which is
what ``AsyncGRPOTrainer`` needs (it pickles ``environment_factory`` into a spawned child).
The system message of every prompt row is the environment's own
(``SpadeEnv.messages(answer_tool=True)``, :mod:`spade_envs.prompts`): the same instructions
``spade eval`` and the OpenEnv server give, asking for the final answer through ``answer``.

Per-row environment keywords (a difficulty curriculum): ``build_prompt_dataset(...,
env_kwargs=[{"difficulty": 0}, {"difficulty": 1}, ...])`` makes the rows of every level in
that order (column ``env_kwargs``, JSON text, and ``level``, the index in the list);
train with ``GRPOConfig(shuffle_dataset=False)`` to present them easiest first. Ready
reward functions for ``reward_funcs=`` are in :mod:`.trl_rewards` (``won``,
``finished``, ``episode_return``; TRL already adds each class's ``get_reward``).

Use::

    dataset = build_prompt_dataset(["spade/Env-00013", "spade/Env-00016"], seeds=range(64))
    trainer = GRPOTrainer(model=..., args=GRPOConfig(...), train_dataset=dataset,
                          environment_factory=environment_factories(dataset),
                          processing_class=install_tool_chat_template(tokenizer))

Chat templates: the template must render tool specs, assistant ``tool_calls`` and
``tool`` messages, and TRL must know how to parse the model's tool calls from it. Qwen2.5 /
Qwen3 (Hermes-style ``<tool_call>`` JSON), Llama 3.1/3.2, GLM-4-MoE, gpt-oss and the other
templates listed in ``trl.chat_template_utils.add_response_schema`` work. SmolLM2's own
template has no tool support (TRL refuses it); as SmolLM2 speaks ChatML
(``<|im_start|>``/``<|im_end|>``), :func:`install_tool_chat_template` installs TRL's
Qwen2.5 template (:func:`tool_chat_template`) on its tokenizer, which TRL recognises.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..actions import ToolCall
from ..errors import IntegrationError, SpadeError
from ..prompts import SYSTEM_PROMPT as BASE_PROMPT
from ..prompts import system_prompt
from .tool_merge import merge_tool_specs
from .tool_methods import make_tool_method

if TYPE_CHECKING:
    from datasets import Dataset

    from ..gym_env import SpadeEnv
    from ..registry.catalog import EnvRecord

#: System message of the prompt dataset (the observation becomes the user message): the
#: environment's own opening, in its ``answer_tool`` rendering.
SYSTEM_PROMPT = system_prompt(None, answer_tool=True)
TEXT_FAMILY = "SpadeTextEnv"
_CLASSES: dict[str, type] = {}


def tool_chat_template() -> str:
    """A tool-capable chat template for ChatML models such as SmolLM2: TRL's own Qwen2.5
    template (Hermes-style ``<tool_call>`` JSON), which TRL knows how to parse."""
    from trl.chat_template_utils import qwen2_5_chat_template

    return qwen2_5_chat_template


def install_tool_chat_template(tokenizer: Any) -> Any:
    """Set :func:`tool_chat_template` and TRL's matching response parser on ``tokenizer``
    (in place; returned for chaining)."""
    from trl.chat_template_utils import add_response_schema

    tokenizer.chat_template = tool_chat_template()
    return add_response_schema(tokenizer)


# -- the environment classes ------------------------------------------------------------
class _SpadeTRLEnv:
    """Base of the generated classes. Only ``reset``, ``get_reward``, ``answer`` and the
    tool methods are public: TRL exposes every other public function as a tool."""

    _family: str = ""
    _tool_specs: tuple = ()
    _text_game: bool = False
    _env_key: str | None = None  # "spade/Env-00013-v0" (None: the shared text-only class)
    _schedule: Any = None  # set by trl_owned.environment_factory: the environment owns the data

    def __init__(self) -> None:
        self._envs: dict[str, "SpadeEnv"] = {}
        self._env: "SpadeEnv | None" = None
        self._reward = 0.0
        self._done = True
        self.env_id: str | None = None
        self.seed: int | None = None
        self.trajectory: list[dict[str, Any]] = []

    def reset(self, env_id: str | None = None, seed: int | None = None, hint: bool = False,
              env_kwargs: str | dict | None = None, **row: Any) -> str:
        """Start an episode of ``env_id`` with ``seed`` and the program parameters
        ``env_kwargs`` (dataset columns); returns its first observation. Without a row
        (no ``env_id``) a factory of :func:`.trl_owned.environment_factory` picks the
        episode and the observation comes after the environment's system message."""
        prefix = ""
        if env_id is None and self._schedule is not None:
            env_id, seed, env_kwargs, hint, prefix = self._schedule.next()
        if env_id is None:
            raise IntegrationError(f"{type(self).__name__}.reset() needs the env_id column of the dataset row")
        seed = int(seed) if seed is not None else random.randrange(2**31 - 1)
        kwargs = parse_env_kwargs(env_kwargs)
        key = f"{env_id}|{json.dumps(kwargs, sort_keys=True)}"
        env = self._envs.get(key)
        if env is None:
            from ..gym_env import SpadeEnv

            env = self._envs[key] = SpadeEnv(env_id, env_kwargs=kwargs)
        env.use_hint = bool(hint)
        obs, info = env.reset(seed=seed)
        if self._env_key is not None and _env_key(env) != self._env_key:
            raise IntegrationError(
                f"{env_id} is not the environment of class {self._family} ({self._env_key}): "
                "build the dataset and the factories with build_prompt_dataset()/environment_factories()")
        if self._env_key is None and info["tools"]:
            raise IntegrationError(f"{env_id} has tools, so it has its own class, not {self._family}: "
                                   "build the dataset and the factories with build_prompt_dataset()/environment_factories()")
        known = {t["function"]["name"] for t in self._tool_specs}
        extra = sorted({t["function"]["name"] for t in info["tools"]} - known)
        if extra:
            raise IntegrationError(f"{env_id} seed {seed} has tools that class {self._family} lacks "
                                   f"({', '.join(extra)}): build the factories from a dataset with this seed")
        self._env, self.env_id, self.seed = env, env_id, seed
        self._reward, self._done = 0.0, False
        self.trajectory = [{"observation": obs}]
        return prefix + obs

    def get_reward(self) -> float:
        """Episode return: the last reward, clipped to [-1, 1] (0.0 before any action)."""
        return max(-1.0, min(1.0, float(self._reward)))

    def answer(self, answer: str) -> str:
        """Submit your final answer (or, in a text game, your next move).

        Args:
            answer: The answer or move, as plain text.
        """
        answer = str(answer)
        if self._text_game:
            return self._act(answer if "\\boxed{" in answer else f"\\boxed{{{answer}}}")
        return self._act(answer if "<answer>" in answer else f"<answer>{answer}</answer>")

    def _call_tool(self, name: str, arguments: dict[str, Any]) -> str:
        return self._act(ToolCall(name=name, arguments=arguments).to_text())

    def _act(self, action: str) -> str:
        if self._env is None:
            raise IntegrationError("call reset() before acting")
        if self._done:
            return "The episode is over; no more actions are accepted."
        obs, reward, terminated, truncated, info = self._env.step(action)
        self._reward = reward
        self._done = bool(terminated or truncated)
        self.trajectory.append({"action": action, "observation": obs, "reward": reward,
                                "terminated": terminated, "truncated": truncated})
        return obs

    def _close(self) -> None:
        for env in self._envs.values():
            env.close()
        self._envs.clear()


def parse_env_kwargs(value: str | dict | None) -> dict[str, Any]:
    """The ``env_kwargs`` column of a row (JSON text, a dict, or empty) as a dict."""
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise IntegrationError(f"the env_kwargs column must be JSON text of an object, got {value[:80]!r}") from None
    if not isinstance(value, dict):
        raise IntegrationError(f"env_kwargs must be an object of program parameters, got {type(value).__name__}")
    return dict(value)


def _env_key(env: "SpadeEnv") -> str:
    return f"{env.env_id}-v{env.version}" if env.env_id is not None else "source"


def _class_name(record: "EnvRecord") -> str:
    return f"{record.class_name or 'Spade'}_{record.env_id.seq:05d}v{record.env_id.version}"


def build_class(name: str, specs: list[dict[str, Any]], env_key: str | None) -> type:
    """The environment class ``name`` with these (merged) tool specs, built once per process."""
    cls = _CLASSES.get(name)
    if cls is not None and list(cls._tool_specs) == list(specs):
        return cls
    namespace: dict[str, Any] = {"_family": name, "_tool_specs": tuple(specs), "_env_key": env_key,
                                 "__module__": __name__,
                                 "__doc__": f"spade environment {env_key or 'text-only family'} (generated for TRL)."}
    for spec in specs:
        method = make_tool_method(spec)
        namespace[method.__name__] = method
    if not specs:
        namespace["_text_game"] = True
    cls = type(name, (_SpadeTRLEnv,), namespace)
    _CLASSES[name] = cls
    return cls


class EnvironmentFactory:
    """A picklable zero-argument factory of one environment class (what TRL's
    ``environment_factory`` takes): it carries the class name, the environment and the
    merged tool specs, and builds the class in the process that calls it."""

    def __init__(self, name: str, tool_specs: list[dict[str, Any]], env_key: str | None) -> None:
        self.name = self.__name__ = name
        self.tool_specs = [copy.deepcopy(s) for s in tool_specs]
        self.env_key = env_key

    @property
    def env_class(self) -> type:
        return build_class(self.name, self.tool_specs, self.env_key)

    def __call__(self) -> _SpadeTRLEnv:
        return self.env_class()

    def __repr__(self) -> str:
        return f"EnvironmentFactory({self.name!r}, {len(self.tool_specs)} tools)"


# -- dataset and factories ----------------------------------------------------------------
def _records(selection: "str | EnvRecord | Iterable[str | EnvRecord]") -> list["EnvRecord"]:
    from ..registry.catalog import EnvRecord, resolve

    items = [selection] if isinstance(selection, (str, EnvRecord)) else list(selection)
    out = []
    for item in items:
        out.append(item if isinstance(item, EnvRecord) else resolve(item))
    if not out:
        raise IntegrationError("the registry selection is empty")
    return out


def _seeds(seeds: int | Iterable[int]) -> list[int]:
    return list(range(seeds)) if isinstance(seeds, int) else [int(s) for s in seeds]


def _levels(env_kwargs: dict | Iterable[dict] | None) -> list[dict[str, Any]]:
    if env_kwargs is None:
        return [{}]
    levels = [env_kwargs] if isinstance(env_kwargs, dict) else list(env_kwargs)
    if not levels or not all(isinstance(k, dict) for k in levels):
        raise IntegrationError("env_kwargs must be a dict of program parameters or a non-empty list of them")
    return [dict(k) for k in levels]


def episode_families(selection: "str | EnvRecord | Iterable[str | EnvRecord]", seeds: int | Iterable[int] = 1,
                     env_kwargs: dict | Iterable[dict] | None = None) -> list[tuple[str, int, EnvironmentFactory, str, int, dict]]:
    """``(versioned env id, seed, factory, system message, level, env kwargs)`` for every
    level of ``env_kwargs`` (outermost), environment of the selection and seed: each
    (level, env, seed) is reset once to read its tool specs; the specs of one environment
    over all its levels and seeds make its one class."""
    from ..gym_env import SpadeEnv

    levels = _levels(env_kwargs)
    seen: dict[str, list[tuple[int, int, list, str]]] = {}
    records = _records(selection)
    for level, kwargs in enumerate(levels):
        for rec in records:
            env = SpadeEnv(rec.env_id.base, rec.env_id.version, env_kwargs=kwargs)
            try:
                for seed in _seeds(seeds):
                    _, info = env.reset(seed=seed)
                    seen.setdefault(str(rec.env_id), []).append(
                        (level, seed, info["tools"], env.messages(answer_tool=True)[0]["content"]))
            finally:
                env.close()
    factories = {}
    for rec in records:
        episodes = seen[str(rec.env_id)]
        if any(tools for _, _, tools, _ in episodes):
            specs = merge_tool_specs(tools for _, _, tools, _ in episodes)
            factories[str(rec.env_id)] = EnvironmentFactory(_class_name(rec), specs, str(rec.env_id))
        else:
            factories[str(rec.env_id)] = EnvironmentFactory(TEXT_FAMILY, [], None)
    out = []
    for level, kwargs in enumerate(levels):  # level by level: the curriculum order
        for rec in records:
            out.extend((str(rec.env_id), seed, factories[str(rec.env_id)], system, level, kwargs)
                       for lv, seed, _, system in seen[str(rec.env_id)] if lv == level)
    return out


def build_prompt_dataset(selection: "str | EnvRecord | Iterable[str | EnvRecord]", seeds: int | Iterable[int] = 1,
                         *, hint: bool = False, system_prompt: str | None = None,
                         env_kwargs: dict | Iterable[dict] | None = None) -> "Dataset":
    """The prompt dataset for a registry selection (ids such as ``"spade/Env-00013"`` or
    ``EnvRecord`` objects from ``Registry.list()``) and seeds (an int ``n`` means
    ``range(n)``): one row per (level, environment, seed) with columns ``prompt`` (the
    environment's system message and an empty user message that ``reset`` fills with the
    observation), ``environment`` (the class name, the key of
    :func:`environment_factories`), ``env_id`` (with version), ``seed``, ``hint``,
    ``env_kwargs`` (the program parameters of the row, JSON text) and ``level``.
    ``env_kwargs``: one dict for every row, or a list of dicts (levels, e.g.
    ``[{"difficulty": d} for d in range(4)]``): the rows of level 0 come first, then level
    1..., a curriculum when trained with ``GRPOConfig(shuffle_dataset=False)``.
    ``system_prompt`` replaces the system message of every row (default: the environment's)."""
    from datasets import Dataset

    rows = episode_families(selection, seeds, env_kwargs)
    _remember(rows)
    return Dataset.from_dict({
        "prompt": [[{"role": "system", "content": system_prompt or r[3]}, {"role": "user", "content": ""}]
                   for r in rows],
        "environment": [r[2].name for r in rows],
        "env_id": [r[0] for r in rows],
        "seed": [r[1] for r in rows],
        "hint": [bool(hint)] * len(rows),
        "env_kwargs": [json.dumps(r[5], sort_keys=True) for r in rows],
        "level": [r[4] for r in rows],
    })


_FACTORIES: dict[str, EnvironmentFactory] = {}


def _remember(rows: list[tuple]) -> None:
    for row in rows:
        _FACTORIES[row[2].name] = row[2]


def environment_factories(dataset: Any) -> dict[str, EnvironmentFactory]:
    """``{environment column value: factory}`` for ``GRPOTrainer(environment_factory=...)``
    (and ``AsyncGRPOTrainer``: the factories pickle).

    Factories made by :func:`build_prompt_dataset` in this process are reused; for a
    dataset built elsewhere (saved, then loaded) each environment's rows are replayed to
    rebuild its factory. Raises :class:`IntegrationError` when a row does not match."""
    names = list(dataset["environment"])
    out: dict[str, EnvironmentFactory] = {}
    pending: dict[str, list[int]] = {}
    for i, name in enumerate(names):
        if name in out or name in pending:
            pending.get(name, []).append(i)
            continue
        if name in _FACTORIES:
            out[name] = _FACTORIES[name]
        else:
            pending[name] = [i]
    for name, rows in pending.items():
        by_env: dict[str, list[int]] = {}
        levels: dict[str, list[dict]] = {}
        for i in rows:
            by_env.setdefault(dataset[i]["env_id"], []).append(int(dataset[i]["seed"]))
            kwargs = parse_env_kwargs(dataset[i].get("env_kwargs"))
            if kwargs not in levels.setdefault(dataset[i]["env_id"], []):
                levels[dataset[i]["env_id"]].append(kwargs)
        if name != TEXT_FAMILY and len(by_env) != 1:
            raise IntegrationError(f"environment class {name} holds rows of several environments: {sorted(by_env)}")
        try:
            built = [episode_families([env_id], sorted(set(seeds)), levels[env_id]) for env_id, seeds in by_env.items()]
        except SpadeError as exc:
            raise IntegrationError(f"cannot rebuild environment class {name}: {exc}") from None
        factory = built[0][0][2]
        for env_rows in built:
            if env_rows[0][2].name != name:
                raise IntegrationError(f"{env_rows[0][0]} is environment class {env_rows[0][2].name}, "
                                       f"but the dataset says {name}")
        out[name] = _FACTORIES[name] = factory
    return out
