"""``SelfPlayConfig``: every knob of ``spade selfplay`` in one dataclass, with presets.

Load order (later wins): the preset (``cpu-tiny`` by default) -> a YAML file
(``--config FILE.yaml``, a mapping of field names) -> CLI flags / keyword overrides.
Unknown keys are an error (:class:`SelfPlayConfigError`), never silently ignored.

Each field is declared with its help, as TRL's ``GRPOConfig`` does it
(``field(default=..., metadata={"help": ...})``): :func:`settings_help` reads them, and
``spade selfplay --help`` lists every setting from it; a ``--set key=value`` string
becomes the field's declared type (:func:`field_types`). ``--preset`` lists :data:`~.presets.PRESETS`.

Presets, the YAML loader and :func:`~.presets.build_config` are in :mod:`.presets`.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from dataclasses import dataclass, field
from typing import Any

from ..designer.skills import DEFAULT_MODES, SKILLS
from ..errors import SpadeError


#: settings that ARE ``trl.GRPOConfig`` fields of the same name and meaning, forwarded by
#: name (``grpo.grpo_args``); any other GRPOConfig field goes in ``SelfPlayConfig.trl``
GRPO_FIELDS = ("learning_rate", "beta", "epsilon", "epsilon_high", "loss_type", "scale_rewards", "max_grad_norm",
               "weight_decay", "temperature", "gradient_checkpointing", "seed", "use_vllm", "vllm_mode",
               "vllm_server_base_url", "vllm_gpu_memory_utilization", "vllm_importance_sampling_mode")


#: the values of :attr:`SelfPlayConfig.seed_levels`
SEED_LEVELS = ("default", "easiest", "ladder")


class SelfPlayConfigError(SpadeError):
    """A self-play configuration is malformed (unknown key, bad value, unreadable file)."""


@dataclass
class SelfPlayConfig:
    """Every knob of the self-play trainer. Defaults are the ``cpu-tiny`` preset."""

    # -- run ------------------------------------------------------------------------------
    preset: str = field(
        default="cpu-tiny", metadata={"help": "name of the preset this config started from (informational)"})
    rounds: int = field(default=2, metadata={"help": "self-play rounds to run (a round = one agent rollout batch)"})
    out_dir: str = field(
        default="spade-selfplay", metadata={"help": "checkpoints, metrics.jsonl, plot, tensorboard logs"})
    seed: int = field(
        default=0, metadata={"help": "master seed (python, numpy, torch RNGs; sampling seeds derive from it)"})
    registry_path: str | None = field(
        default=None, metadata={"help": "registry store file (None: $SPADE_HOME/registry.sqlite3)"})
    push_to_hub: str | None = field(
        default=None, metadata={"help": "dataset repo to push after each generation (hub_sync)"})
    checkpoint_every: int = field(
        default=1, metadata={"help": "save a checkpoint every N rounds (and always at the end)"})
    keep_checkpoints: int = field(default=2, metadata={"help": "how many round checkpoints to keep"})

    # -- model ----------------------------------------------------------------------------
    model: str = field(
        default="tiny-random", metadata={"help": "``default``, ``tiny-random`` or a local checkpoint folder"})
    dtype: str = field(default="float32", metadata={"help": (
        "compute dtype; ``bfloat16`` = bf16 autocast over float32 master weights (mixed precision)")})
    device: str | None = field(default=None, metadata={"help": "None: cuda when available, else cpu"})
    use_vllm: bool = field(default=False, metadata={"help": "generate with vLLM (TRL's ``use_vllm``)"})
    vllm_mode: str = field(
        default="colocate", metadata={"help": "``colocate`` (same GPU) or ``server`` (``trl vllm-serve``)"})
    vllm_server_base_url: str | None = field(
        default=None, metadata={"help": "server mode: e.g. http://127.0.0.1:8000"})
    vllm_gpu_memory_utilization: float = field(
        default=0.3, metadata={"help": "colocate mode share of GPU memory for vLLM"})
    vllm_max_model_length: int | None = field(
        default=None, metadata={"help": "vLLM context (None: max of max_context and designer prompt + completion)"})
    vllm_importance_sampling_mode: str = field(
        default="token_truncate", metadata={"help": "TRL's IS correction (token level: long designer programs)"})
    gradient_checkpointing: bool = field(
        default=False, metadata={"help": "recompute activations in the backward pass (less memory, more time)"})
    zero_stage: int = field(default=0, metadata={"help": (
        "3: launched with accelerate/zero3.yaml (weights, gradients, Adam partitioned; --plan uses it)")})
    micro_batch_size: int = field(default=8, metadata={"help": (
        "rows per forward/backward per device; a step accumulates gradients over the rest")})
    max_context: int = field(
        default=4096, metadata={"help": "token budget of one agent episode (the rollout stops when it is full)"})
    designer_prompt_tokens: int = field(
        default=2048, metadata={"help": "token budget of a designer prompt (with memory examples)"})

    # -- GRPO (both roles, one model, one optimizer) --------------------------------------
    learning_rate: float = field(
        default=1e-6, metadata={"help": "SPADE: 1e-6 (cpu-tiny uses a large one so weights visibly move)"})
    beta: float = field(default=0.0, metadata={"help": "KL coefficient (0: no reference model)"})
    epsilon: float = field(default=0.2, metadata={"help": "lower clip"})
    epsilon_high: float = field(default=0.28, metadata={"help": "upper clip (DAPO-style clip-higher)"})
    loss_type: str = field(default="dapo", metadata={"help": "TRL loss type"})
    scale_rewards: str = field(
        default="group", metadata={"help": 'TRL: "group" divides by the group std; "none" only centres (SPADE)'})
    max_grad_norm: float = field(default=1.0, metadata={"help": "gradient clipping norm (TRL's max_grad_norm)"})
    weight_decay: float = field(default=0.0, metadata={"help": "AdamW weight decay"})
    temperature: float = field(default=0.6, metadata={"help": "sampling temperature of both roles"})
    filter_zero_std: bool = field(default=True, metadata={"help": (
        "groups whose rewards are all equal train nothing (SPADE's check_reward_nonzero_std)")})
    trl: dict[str, Any] = field(
        default_factory=dict, metadata={"help": "any other ``trl.GRPOConfig`` field, passed as is (e.g. adam_beta2)"})

    # -- agent role -------------------------------------------------------------------------
    agent_group_size: int = field(default=2, metadata={"help": (
        "plain plays per environment per round = the GRPO group (``PlayBudget.plain_plays``)")})
    hint_plays: int = field(default=1, metadata={"help": (
        "hinted plays per environment per round, for regret (``PlayBudget.hint_plays``)")})
    max_turns: int = field(default=2, metadata={"help": "turns per episode (SPADE: at most 25)"})
    agent_max_new_tokens: int = field(default=12, metadata={"help": "tokens per agent turn"})
    envs_per_round: int = field(default=2, metadata={"help": (
        "at most this many environments per round (waiting candidates first, then replay)")})
    replay_share: float = field(default=0.0, metadata={"help": (
        "share of ``envs_per_round`` kept for replay entries (waiting candidates never take it)")})
    failed_play_reward: float = field(
        default=0.0, metadata={"help": "agent reward of a play whose environment failed (SPADE: -1)"})
    unterminated_reward: float | None = field(
        default=None, metadata={"help": "reward of a play that never terminated (None: its last reward; SPADE: 0)"})
    prefix_sliding: list[int] | None = field(
        default=None, metadata={"help": "``[P, W]``: Prefix Sliding for the agent role"})
    sandbox_seeds: bool = field(default=False, metadata={"help": "run the seed suite in the sandbox too"})

    # -- designer role ----------------------------------------------------------------------
    designer: str = field(default="policy", metadata={"help": (
        "``policy`` (the trained model), ``scripted:seed-variants`` or ``off`` (fixed environments: no "
        "proposals)")})
    designer_every: int = field(
        default=1, metadata={"help": "designer regeneration every N rounds (SPADE: every 4 rollouts)"})
    designer_prompts: int = field(
        default=1, metadata={"help": "designer prompts (skill x document) per regeneration"})
    designer_group_size: int = field(default=2, metadata={"help": "candidates per prompt = designer GRPO group"})
    designer_max_new_tokens: int = field(
        default=64, metadata={"help": "tokens per candidate (real models need ~2048)"})
    reward_mode: str = field(
        default="regret", metadata={"help": "``regret`` | ``blend`` | ``solve_rate`` (designer.regret.RewardMode)"})
    invalid_penalty: float = field(
        default=-1.0, metadata={"help": "designer reward of a candidate the acceptance pipeline rejects (SPADE: 0)"})
    step_timeout_penalty: float = field(
        default=-1.0, metadata={"help": "designer reward of a candidate whose step timed out in play (SPADE: -0.5)"})
    play_window: int = field(
        default=1, metadata={"help": "rounds of plays before a candidate's regret is final (reward delay)"})
    hint_once: bool = field(default=False, metadata={"help": (
        "hinted plays once per environment, when first played (SPADE); else every round")})
    designer_center: str = field(
        default="none", metadata={"help": '"skill": centre designer rewards on their skill\'s mean, no std (SPADE)'})
    designer_reward_scale: float | None = field(default=1.0, metadata={"help": (
        "multiply designer rewards (None: SPADE's setting, 1 here: rewards.designer_scale)")})
    params_share: float = field(
        default=0.0, metadata={"help": "share of designer prompts in ``params`` mode (propose a registry variant)"})
    corpus: str = field(default="stdlib", metadata={"help": "grounding documents (designer.corpus.Corpus source)"})
    skills: list[str] = field(default_factory=lambda: list(SKILLS), metadata={"help": (
        "the skills the designer's prompts train (SPADE's six: designer.skills.SKILLS)")})
    modes: list[str] = field(default_factory=lambda: list(DEFAULT_MODES), metadata={"help": (
        "program kinds the designer's prompts ask for (designer.skills.DEFAULT_MODES)")})
    model_hints: bool = field(
        default=False, metadata={"help": "let the policy write a hint for envs without a usable hint()"})
    novelty_check: bool = field(
        default=True, metadata={"help": "reject near-duplicates of the memory (designer.memory)"})
    acceptance_seeds: list[int] = field(default_factory=lambda: [0, 1, 2], metadata={"help": (
        "episode seeds the acceptance pipeline plays each candidate on")})

    # -- registry and replay ------------------------------------------------------------------
    register_every: int = field(
        default=1, metadata={"help": "register accepted environments as a new generation every R rounds"})
    replay_capacity: int = field(default=256, metadata={"help": "replay buffer size (environments)"})
    replay_recent: int = field(
        default=4, metadata={"help": "regrets remembered per environment (priority = their mean)"})
    replay_temperature: float = field(default=0.5, metadata={"help": "priority sharpness; 0 = uniform"})
    replay_min_priority: float = field(
        default=0.05, metadata={"help": "floor so unscored / zero-regret envs still get picked"})
    include_seeds: bool = field(
        default=True, metadata={"help": "start the replay buffer with the train split of the seed suite"})
    seed_levels: str = field(default="default", metadata={"help": (
        'seeds at their defaults, at the "easiest" difficulty level, or every "ladder" level')})
    seed_games: bool = field(default=True, metadata={"help": (
        "include the multi-agent seed games (vs their built-in opponent) in the replay buffer")})
    seed_skills: list[str] | None = field(
        default=None, metadata={"help": "only seeds (and params-mode parents) of these skills (None: every skill)"})

    # -- logging ------------------------------------------------------------------------------
    tensorboard: bool = field(default=True, metadata={"help": "write TensorBoard logs when tensorboard is installed"})
    plot: bool = field(default=True, metadata={"help": "write metrics.png after each round"})

    def __post_init__(self) -> None:
        if self.designer == "off":  # the fixed-environment baseline: the train split's seeds only
            self.designer_prompts = 0
        self.validate()

    def validate(self) -> None:
        """Raise :class:`SelfPlayConfigError` naming the first bad value."""
        positive = ("rounds", "agent_group_size", "hint_plays", "max_turns", "agent_max_new_tokens",
                    "designer_every", "designer_group_size", "designer_max_new_tokens", "play_window",
                    "register_every", "replay_capacity", "replay_recent", "checkpoint_every", "keep_checkpoints")
        for name in positive:
            if int(getattr(self, name)) < 1:
                raise SelfPlayConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.agent_group_size < 2 or self.designer_group_size < 2:
            raise SelfPlayConfigError("agent_group_size and designer_group_size must be >= 2 (GRPO groups)")
        if int(self.micro_batch_size) < 1 or int(self.max_context) < 64 or int(self.designer_prompt_tokens) < 64:
            raise SelfPlayConfigError("micro_batch_size must be >= 1, max_context and designer_prompt_tokens >= 64")
        if not 0.0 <= float(self.replay_share) <= 1.0:
            raise SelfPlayConfigError(f"replay_share must be in [0, 1], got {self.replay_share}")
        if not 0.0 <= float(self.params_share) <= 1.0:
            raise SelfPlayConfigError(f"params_share must be in [0, 1], got {self.params_share}")
        if self.seed_levels not in SEED_LEVELS:
            raise SelfPlayConfigError(f"seed_levels must be default, easiest or ladder, got {self.seed_levels!r}")
        if self.designer_center not in ("none", "skill"):
            raise SelfPlayConfigError(f"designer_center must be none or skill, got {self.designer_center!r}")
        if self.scale_rewards not in ("group", "batch", "none"):
            raise SelfPlayConfigError(f"scale_rewards must be group, batch or none, got {self.scale_rewards!r}")
        if self.envs_per_round < 0 or self.designer_prompts < 0:
            raise SelfPlayConfigError("envs_per_round and designer_prompts must be >= 0")
        if self.zero_stage not in (0, 3):
            raise SelfPlayConfigError(f"zero_stage must be 0 (one GPU or DDP) or 3 (DeepSpeed ZeRO-3), got {self.zero_stage}")
        if self.zero_stage == 3 and not self.use_vllm:
            raise SelfPlayConfigError("zero_stage=3 needs use_vllm=true: under ZeRO-3 every forward is a collective and "
                                      "ranks generate different numbers of turns and tokens, so transformers "
                                      "generation would hang; without vLLM use DDP or ZeRO-2")
        if self.dtype not in ("float32", "bfloat16"):
            raise SelfPlayConfigError(f"dtype must be float32 or bfloat16 (bf16 autocast), got {self.dtype!r}")
        if not isinstance(self.trl, dict):
            raise SelfPlayConfigError("trl must be a mapping of trl.GRPOConfig field names to values")
        clash = sorted(set(self.trl) & set(GRPO_FIELDS))
        if clash:
            raise SelfPlayConfigError(f"trl: set {', '.join(clash)} as self-play settings, not under trl")
        if self.vllm_mode not in ("colocate", "server"):
            raise SelfPlayConfigError(f"vllm_mode must be colocate or server, got {self.vllm_mode!r}")
        from ..designer.regret import RewardMode

        if self.reward_mode not in {m.value for m in RewardMode}:
            raise SelfPlayConfigError(f"reward_mode must be one of {', '.join(m.value for m in RewardMode)}, "
                                      f"got {self.reward_mode!r}")
        if self.designer not in ("policy", "off") and not self.designer.startswith("scripted:"):
            raise SelfPlayConfigError(f"designer must be 'policy', 'off' or 'scripted:NAME', got {self.designer!r}")
        if self.prefix_sliding is not None and (len(self.prefix_sliding) != 2 or int(self.prefix_sliding[1]) < 1):
            raise SelfPlayConfigError("prefix_sliding must be [P, W] with W >= 1")
        if self.seed_skills is not None and not self.seed_skills:
            raise SelfPlayConfigError("seed_skills must be null (every skill) or a non-empty list")
        if not self.skills or not self.modes:
            raise SelfPlayConfigError("skills and modes must not be empty")

    # -- (de)serialization ------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def field_names(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]

    def replace(self, **overrides: Any) -> "SelfPlayConfig":
        """A copy with ``overrides`` applied (None values are ignored); unknown keys raise."""
        unknown = sorted(set(overrides) - set(self.field_names()))
        if unknown:
            raise SelfPlayConfigError(f"unknown self-play setting(s): {', '.join(unknown)} "
                                      f"(known: {', '.join(self.field_names())})")
        values = {**self.to_dict(), **{k: _coerce(k, v) for k, v in overrides.items() if v is not None}}
        try:
            return SelfPlayConfig(**values)
        except (TypeError, ValueError) as exc:
            raise SelfPlayConfigError(f"bad self-play setting: {exc}") from None


def field_types() -> dict[str, Any]:
    """Each setting's declared type (resolved from the annotations, once)."""
    global _TYPES
    if _TYPES is None:
        _TYPES = typing.get_type_hints(SelfPlayConfig)
    return _TYPES


_TYPES: dict[str, Any] | None = None


def _coerce(name: str, value: Any) -> Any:
    """Strings from ``--set key=value`` become the field's declared type (JSON for lists
    and mappings; ``null``/``none`` for an optional one)."""
    kind = field_types()[name]
    if not isinstance(value, str) or kind is str:
        return value
    args = typing.get_args(kind)
    if type(None) in args:  # X | None
        if value.lower() in ("null", "none"):
            return None
        kind = next(a for a in args if a is not type(None))
    if kind is bool:
        if value.lower() in ("1", "true", "yes", "on"):
            return True
        if value.lower() in ("0", "false", "no", "off"):
            return False
        raise SelfPlayConfigError(f"{name} expects true/false, got {value!r}")
    try:
        if kind is int:
            return int(value)
        if kind is float:
            return float(value)
        if value.lower() in ("null", "none"):
            return None
        if typing.get_origin(kind) in (list, dict):
            return json.loads(value)
    except ValueError:
        raise SelfPlayConfigError(f"{name} expects {_type_name(kind)}, got {value!r}") from None
    return value


def _type_name(kind: Any) -> str:
    return kind.__name__ if isinstance(kind, type) and not typing.get_args(kind) else str(kind).replace("typing.", "")


def settings_help() -> list[tuple[str, str, str, str]]:
    """``(name, type, default, help)`` of every setting, in declaration order: the one
    source of ``spade selfplay --help``'s settings list and of the docs' table."""
    out = []
    for f in dataclasses.fields(SelfPlayConfig):
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        out.append((f.name, _type_name(field_types()[f.name]), json.dumps(default), f.metadata["help"]))
    return out
