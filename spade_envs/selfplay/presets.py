"""The named starting points of ``spade selfplay`` (:data:`PRESETS`) and the load order of
a run's settings: the preset (``cpu-tiny`` by default) -> a YAML file (``--config
FILE.yaml``, a mapping of field names) -> CLI flags / keyword overrides
(:func:`build_config`). Every field a preset sets is a :class:`~.config.SelfPlayConfig`
field; an unknown one is a :class:`~.config.SelfPlayConfigError`.

Presets:

- ``cpu-tiny``: the 2-layer random Llama (``transformers:tiny-random``), short turns, two
  environments per round; finishes in a few minutes on 2 cores (CI, README main job);
- ``cpu-harness``: ``cpu-tiny`` with the scripted designer ``scripted:seed-variants``
  (renamed seeds, novelty check off) to exercise registration and evaluation end to end;
- ``cpu-smol``: the packaged SmolLM2-135M-Instruct on CPU, seeds at their easiest level,
  mostly ``params`` design (the main job, ``make run``);
- ``gpu-tiny``: the random model with vLLM colocated (for ``benchmarks/gpu_selfplay.sh``);
- ``gpu-4b`` / ``gpu-8b`` / ``gpu-30b``: SPADE-like shapes (temperature 0.6, clip
  0.2/0.28, lr 1e-6, no std division, at most 25 turns, designer regeneration every 4
  rollouts, mostly ``code`` design) with vLLM, bf16 autocast over float32 master weights;
  gpu-4b fits one H200, gpu-8b and gpu-30b one 8-GPU node with ZeRO-3 (``zero_stage=3``;
  gpu-30b with a vLLM server elsewhere): ``spade selfplay --plan`` shows the memory;
  ``model`` must name a local checkpoint folder (models are never downloaded), e.g.
  ``--model /models/Qwen3-4B``;
- ``spade``: SPADE's released tool-use 4B recipe as closely as this trainer allows
  (per-skill centred designer rewards, invalid 0, step timeout -0.5, KL 0.005, 4 hinted
  plays once per environment, failed plays -1, unterminated 0, equal-reward groups
  dropped); see :data:`SPADE` for where it differs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..designer.skills import SKILLS
from .config import SelfPlayConfig, SelfPlayConfigError

_SPADE_RECIPE = dict(
    temperature=0.6, epsilon=0.2, epsilon_high=0.28, beta=0.0, learning_rate=1e-6, max_turns=25,
    designer_every=4, use_vllm=True, dtype="bfloat16", agent_group_size=8, hint_plays=4,
    designer_group_size=8, agent_max_new_tokens=1024, designer_max_new_tokens=4096, reward_mode="regret",
    play_window=4, register_every=4, gradient_checkpointing=True, model_hints=True, micro_batch_size=4,
    max_context=16384, designer_prompt_tokens=4096, params_share=0.25,
    scale_rewards="none",  # SPADE: --disable-grpo-std-normalization (groups of 2 would make every gap +-0.707)
)

#: SPADE's released recipe (spade-rl/spade cmd/tool_use/train_spade_4b.sh, spare/core/utils/
#: delayed_env_rewards.py and rewards.py): 16 environments per rollout x 16 plays, 4 hinted
#: plays per environment, regeneration every 32 rollouts, delayed designer rewards centred
#: per skill, invalid 0, step timeout -0.5, no std division (--disable-grpo-std-normalization),
#: groups of equal rewards dropped (check_reward_nonzero_std), KL 0.005, clip 0.2/0.28, Adam
#: lr 1e-6, beta2 0.98, weight decay 0.1, temperature 0.6, 25 turns, 8192/16384/32768 tokens.
#: Where this preset still differs from it:
#:
#: - the designer is trained in GRPO groups of ``designer_group_size`` >= 2 (SPADE samples
#:   one environment per prompt; its baseline is the per-skill centring alone);
#: - designer rows get an optimizer step of their own, normalised over their own tokens,
#:   instead of being mixed into the agent's batch; so SPADE's designer reward scale
#:   ``min(50, agent/designer rows x regen)``, which offsets that mixing, is 1 here;
#: - the KL term is TRL's k3 estimator (SPADE: low_var_kl, the same k3 clipped to [-10, 10]);
#: - rollouts run through TRL + vLLM on this trainer's ranks (DeepSpeed ZeRO-3 over one
#:   8-GPU node, micro-batches of one 32k row) instead of slime/Megatron (TP 2, CP 2,
#:   8192 tokens per GPU) with sglang, and TRL's token-level importance-sampling
#:   correction stands in for slime's TIS;
#: - SPADE's rollout temperature flag (0.7) is not used by its own actor (0.6): 0.6 here.
SPADE = dict(
    _SPADE_RECIPE, rounds=500, agent_group_size=16, hint_plays=4, hint_once=True, play_window=32,
    designer_every=32, register_every=32, envs_per_round=16, designer_prompts=8, designer_group_size=2,
    beta=0.005, weight_decay=0.1, scale_rewards="none", designer_center="skill", designer_reward_scale=None,
    invalid_penalty=0.0, step_timeout_penalty=-0.5, failed_play_reward=-1.0, unterminated_reward=0.0,
    agent_max_new_tokens=8192, designer_max_new_tokens=16384, max_context=32768, designer_prompt_tokens=8192,
    model="Qwen3-4B", vllm_gpu_memory_utilization=0.3, params_share=0.0, zero_stage=3, micro_batch_size=1,
    filter_zero_std=True, trl={"adam_beta2": 0.98},
)

PRESETS: dict[str, dict[str, Any]] = {
    "cpu-tiny": dict(learning_rate=1e-3),
    # harness check: a scripted designer proposes renamed train-split seeds (valid) and prose
    # (invalid), so registration, a new generation and `spade eval` on it run end to end
    "cpu-harness": dict(learning_rate=1e-3, designer="scripted:seed-variants", novelty_check=False),
    # the packaged SmolLM2-135M on 2 CPU cores (the main job): seeds at their easiest
    # level so the agent wins some plays, mostly params-mode design (a 135M model cannot
    # write a program that passes acceptance, but it can pick a variant)
    # (replay_share: new variants are often beyond the 135M, so two of the six plays per
    # round are seeds at their easiest level, where it wins some and the agent learns;
    # checkpointing and micro-batches of 4 keep a step's peak memory in a few GiB: a CPU
    # attention step otherwise keeps every layer's attention weights for the backward pass)
    "cpu-smol": dict(model="default", learning_rate=5e-5, rounds=2, agent_max_new_tokens=48, max_turns=2,
                     designer_max_new_tokens=192, envs_per_round=6, replay_share=0.34, agent_group_size=4,
                     hint_plays=2, designer_prompts=3, designer_group_size=4, params_share=0.67, seed_levels="easiest",
                     seed_games=False, micro_batch_size=4, gradient_checkpointing=True, max_context=1536,
                     designer_prompt_tokens=1024, model_hints=False, reward_mode="blend",
                     # tool-use seeds carry 600-1600 prompt tokens of tool specs: on 2 cores one
                     # GRPO step over them outlasts the 10-minute main job, so it plays the rest
                     seed_skills=[*SKILLS, "multi-step game"]),
    "gpu-tiny": dict(use_vllm=True, vllm_mode="colocate", vllm_gpu_memory_utilization=0.2, rounds=3,
                     learning_rate=1e-3, agent_group_size=4, hint_plays=2, envs_per_round=4,
                     agent_max_new_tokens=64, designer_max_new_tokens=256, designer_group_size=4,
                     designer_prompts=2, max_turns=4, micro_batch_size=8, max_context=2048, params_share=0.5),
    # layouts checked by `spade selfplay --plan` (fp32 masters + AdamW: 16 B per parameter):
    # gpu-4b: ONE H200, vLLM colocated; gpu-8b: one 8-GPU node, ZeRO-3 (zero3.yaml with
    # num_processes 8), vLLM colocated; gpu-30b: 8 training GPUs with ZeRO-3 plus a
    # `trl vllm-serve` on other GPUs (server mode)
    "gpu-4b": dict(_SPADE_RECIPE, model="Qwen3-4B", envs_per_round=32, designer_prompts=16,
                   vllm_gpu_memory_utilization=0.25, rounds=200, micro_batch_size=1, max_context=8192),
    "gpu-8b": dict(_SPADE_RECIPE, model="Qwen3-8B", envs_per_round=32, designer_prompts=16,
                   vllm_gpu_memory_utilization=0.3, rounds=200, micro_batch_size=1, max_context=8192, zero_stage=3),
    "gpu-30b": dict(_SPADE_RECIPE, model="Qwen3-30B-A3B", envs_per_round=64, designer_prompts=32,
                    vllm_mode="server", rounds=200, micro_batch_size=1, max_context=8192, zero_stage=3),
    "spade": SPADE,
}


def preset(name: str) -> SelfPlayConfig:
    """The named preset (:data:`PRESETS`)."""
    if name not in PRESETS:
        raise SelfPlayConfigError(f"unknown preset {name!r}; choose one of: {', '.join(PRESETS)}")
    try:  # not replace(): a preset may set a field to None on purpose
        return SelfPlayConfig(**{**SelfPlayConfig().to_dict(), **PRESETS[name], "preset": name})
    except (TypeError, ValueError) as exc:
        raise SelfPlayConfigError(f"preset {name!r}: {exc}") from None


def load_yaml(path: str | Path) -> dict[str, Any]:
    """The mapping in a YAML config file (raises :class:`SelfPlayConfigError`)."""
    import yaml

    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    except OSError as exc:
        raise SelfPlayConfigError(f"cannot read {p}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise SelfPlayConfigError(f"{p}: not valid YAML ({exc})") from None
    if not isinstance(data, dict):
        raise SelfPlayConfigError(f"{p}: expected a mapping of setting names to values")
    return data


def build_config(preset_name: str | None = None, config_file: str | Path | None = None,
                 **overrides: Any) -> SelfPlayConfig:
    """Preset (the file's ``preset`` key, else ``preset_name``, else cpu-tiny), then the
    YAML file, then ``overrides`` (None values ignored)."""
    data = load_yaml(config_file) if config_file else {}
    name = preset_name or data.pop("preset", None) or "cpu-tiny"
    data.pop("preset", None)
    return preset(name).replace(**data).replace(**overrides)
