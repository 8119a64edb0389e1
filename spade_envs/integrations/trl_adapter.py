r"""TRL adapter: registry environments as ``GRPOTrainer(environment_factory=...)`` classes.

How TRL 1.16 uses an environment class (``trl/trainer/grpo_trainer.py``): it calls the
factory with no arguments, lists the PUBLIC functions of the class (``reset`` and
``get_reward`` excluded) as the tools, renders them into the prompt with transformers'
``get_json_schema`` (type hints + Google-style docstring), calls ``reset(**row)`` with the
dataset row (minus its ``environment`` column) and appends the returned string to the
last user message, calls a tool method with the model's arguments as keywords, and calls
``get_reward()`` once per finished rollout. Tools are read once per class, so every
instance of a class must expose the same tools.

Hence one class per **family**: the environments (and seeds) that share one tool set.
A tool environment whose tool specs depend on the seed (an ``enum`` of this episode's
channel names, say) has one family per distinct spec set; text-only environments share
one family, ``SpadeTextEnv``. Each class has

- ``reset(env_id, seed, hint=False, **row) -> str``: plays ``env_id`` with ``seed`` (both
  columns of the row) and returns the first observation;
- one typed method per tool (:mod:`.tool_methods`), which sends a ``<tool_call>`` to the
  environment and returns the observation; arguments are validated against the original
  JSON Schema first;
- ``answer(answer: str) -> str``: the final action (``<answer>...</answer>`` for tool
  environments, ``\boxed{...}`` for text games; call it once per move in multi-step games);
- ``get_reward() -> float``: the episode return (last reward, clipped to [-1, 1]).

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

import hashlib
import json
import random
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..actions import ToolCall
from ..errors import IntegrationError, SpadeError
from .tool_methods import make_tool_method

if TYPE_CHECKING:
    from datasets import Dataset

    from ..gym_env import SpadeEnv
    from ..registry.catalog import EnvRecord

#: System message of the prompt dataset (the observation becomes the user message).
SYSTEM_PROMPT = (
    "You are an agent acting in an interactive environment. Use the provided tools to gather "
    "what you need. When the task asks for a final answer (for example <answer>...</answer> or "
    "\\boxed{...}), call the `answer` tool with it instead of writing it."
)
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

    def __init__(self) -> None:
        self._envs: dict[str, "SpadeEnv"] = {}
        self._env: "SpadeEnv | None" = None
        self._reward = 0.0
        self._done = True
        self.env_id: str | None = None
        self.seed: int | None = None
        self.trajectory: list[dict[str, Any]] = []

    def reset(self, env_id: str | None = None, seed: int | None = None, hint: bool = False, **row: Any) -> str:
        """Start an episode of ``env_id`` with ``seed`` (dataset columns); returns its first observation."""
        if env_id is None:
            raise IntegrationError(f"{type(self).__name__}.reset() needs the env_id column of the dataset row")
        seed = int(seed) if seed is not None else random.randrange(2**31 - 1)
        env = self._envs.get(env_id)
        if env is None:
            from ..gym_env import SpadeEnv

            env = self._envs[env_id] = SpadeEnv(env_id)
        env.use_hint = bool(hint)
        obs, info = env.reset(seed=seed)
        if _spec_hash(info["tools"]) != _spec_hash(list(self._tool_specs)):
            raise IntegrationError(
                f"{env_id} seed {seed} has other tools than environment family {self._family}: "
                "build the dataset and the factories with build_prompt_dataset()/environment_factories()")
        self._env, self.env_id, self.seed = env, env_id, seed
        self._reward, self._done = 0.0, False
        self.trajectory = [{"observation": obs}]
        return obs

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


def _spec_hash(specs: list[dict[str, Any]]) -> str:
    return hashlib.sha256(json.dumps(specs, sort_keys=True).encode()).hexdigest()[:10]


def family_of(specs: list[dict[str, Any]], class_name: str | None) -> str:
    """The family (= generated class) name for an episode with these tool specs."""
    if not specs:
        return TEXT_FAMILY
    return f"{class_name or 'Spade'}_{_spec_hash(specs)}"


def family_class(specs: list[dict[str, Any]], class_name: str | None) -> type:
    """The generated class for a tool set (built once per process, then cached)."""
    name = family_of(specs, class_name)
    cls = _CLASSES.get(name)
    if cls is not None:
        return cls
    namespace: dict[str, Any] = {"_family": name, "_tool_specs": tuple(specs),
                                 "__doc__": f"spade environment family {name} (generated for TRL)."}
    if specs:
        for spec in specs:
            method = make_tool_method(spec)
            namespace[method.__name__] = method
    else:
        namespace["_text_game"] = True
    cls = type(name, (_SpadeTRLEnv,), namespace)
    _CLASSES[name] = cls
    return cls


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


def episode_families(selection: "str | EnvRecord | Iterable[str | EnvRecord]",
                     seeds: int | Iterable[int] = 1) -> list[tuple[str, int, type]]:
    """``(versioned env id, seed, class)`` for every environment of the selection and seed:
    each (env, seed) is reset once to read its tool specs."""
    from ..gym_env import SpadeEnv

    out = []
    for rec in _records(selection):
        env_id = str(rec.env_id)
        env = SpadeEnv(rec.env_id.base, rec.env_id.version)
        try:
            for seed in _seeds(seeds):
                _, info = env.reset(seed=seed)
                out.append((env_id, seed, family_class(info["tools"], rec.class_name)))
        finally:
            env.close()
    return out


def build_prompt_dataset(selection: "str | EnvRecord | Iterable[str | EnvRecord]", seeds: int | Iterable[int] = 1,
                         *, hint: bool = False, system_prompt: str = SYSTEM_PROMPT) -> "Dataset":
    """The prompt dataset for a registry selection (ids such as ``"spade/Env-00013"`` or
    ``EnvRecord`` objects from ``Registry.list()``) and seeds (an int ``n`` means
    ``range(n)``): one row per (environment, seed) with columns ``prompt`` (system message
    and an empty user message that ``reset`` fills with the observation), ``environment``
    (the family class name, the key of :func:`environment_factories`), ``env_id`` (with
    version), ``seed`` and ``hint``."""
    from datasets import Dataset

    rows = episode_families(selection, seeds)
    return Dataset.from_dict({
        "prompt": [[{"role": "system", "content": system_prompt}, {"role": "user", "content": ""}] for _ in rows],
        "environment": [cls.__name__ for _, _, cls in rows],
        "env_id": [env_id for env_id, _, _ in rows],
        "seed": [seed for _, seed, _ in rows],
        "hint": [bool(hint)] * len(rows),
    })


def environment_factories(dataset: Any) -> dict[str, type]:
    """``{environment column value: class}`` for ``GRPOTrainer(environment_factory=...)``.

    Classes made by :func:`build_prompt_dataset` in this process are reused; for a dataset
    built elsewhere (saved, then loaded) the first row of each family is replayed to
    rebuild its class. Raises :class:`IntegrationError` when a row does not match."""
    names = dataset["environment"]
    out: dict[str, type] = {}
    for i, name in enumerate(names):
        if name in out:
            continue
        cls = _CLASSES.get(name)
        if cls is None:
            row = dataset[i]
            try:
                (_, _, cls), = episode_families([row["env_id"]], [row["seed"]])
            except SpadeError as exc:
                raise IntegrationError(f"cannot rebuild environment family {name}: {exc}") from None
            if cls.__name__ != name:
                raise IntegrationError(f"row {i}: {row['env_id']} seed {row['seed']} is family {cls.__name__}, "
                                       f"but the dataset says {name}")
        out[name] = cls
    return out
