"""TRL adapter: tool methods round-trip through transformers' schema extraction, the
generated classes follow TRL's environment_factory contract, and one GRPO step runs on
CPU with the tiny model through environment_factory (a scripted policy makes half of the
rollouts call the tools and win, so the tool loop and get_reward are really exercised)."""

from __future__ import annotations

import inspect
import json
import re

import pytest

import spade_envs  # noqa: F401
from spade_envs.actions import extract_answer, parse_tool_calls
from spade_envs.errors import EnvProgramError, IntegrationError
from spade_envs.gym_env import SpadeEnv
from spade_envs.integrations import trl_adapter
from spade_envs.integrations.tool_methods import VALIDATION_ONLY_KEYWORDS, make_tool_method, visible_tool_schema
from spade_envs.registry.catalog import seed_records

TOOL_ENVS = [f"spade/Env-{i:05d}" for i in range(13, 21)]


def _seed_tool_specs() -> list[dict]:
    """Every distinct tool spec of the seed suite (specs vary with the seed: several seeds)."""
    out: dict[str, dict] = {}
    for rec in seed_records():
        try:
            env = SpadeEnv(rec.env_id.base)
        except EnvProgramError:  # multi-player games are not Gymnasium environments
            continue
        for seed in range(4):
            _, info = env.reset(seed=seed)
            for spec in info["tools"]:
                out[json.dumps(spec, sort_keys=True)] = spec
        env.close()
    return list(out.values())


SPECS = _seed_tool_specs()


def _strip(schema, had_description: bool = True):
    """The spec as a type hint can carry it: validation-only keywords removed."""
    if isinstance(schema, dict):
        return {k: _strip(v) for k, v in schema.items() if k not in VALIDATION_ONLY_KEYWORDS}
    return schema


def test_schema_round_trip_every_seed_tool():
    from transformers.utils import get_json_schema

    assert len(SPECS) >= 37  # 8 tool environments, 4-6 tools each, some seed-dependent
    for spec in SPECS:
        method = make_tool_method(spec)
        extracted = get_json_schema(method)
        assert extracted == visible_tool_schema(spec), spec["function"]["name"]
        fn, got = spec["function"], extracted["function"]
        # independent of visible_tool_schema: everything but validation keywords survives verbatim
        assert got["name"] == fn["name"] and got["description"] == fn["description"]
        params = fn["parameters"]
        assert got["parameters"].get("required", []) == params.get("required", [])
        assert set(got["parameters"]["properties"]) == set(params.get("properties", {}))
        for pname, pschema in params.get("properties", {}).items():
            seen = dict(got["parameters"]["properties"][pname])
            want = _strip(pschema)
            if "description" not in pschema:  # filled in, naming the dropped constraints
                desc = seen.pop("description")
                assert desc.startswith(f"The {pname} argument")
                if "pattern" in pschema:
                    assert pschema["pattern"] in desc
            assert seen == want, (fn["name"], pname)


def test_trl_extracts_the_same_tools_from_a_class():
    """TRL's own path: public functions of the class, bound, rendered by the chat template."""
    ds = trl_adapter.build_prompt_dataset(["spade/Env-00013"], seeds=[0])
    cls = trl_adapter.environment_factories(ds)[ds[0]["environment"]]
    env = cls()
    names = [n for n, _ in inspect.getmembers(type(env), predicate=inspect.isfunction)
             if n not in ("reset", "get_reward") and not n.startswith("_")]
    assert sorted(names) == ["answer", "find_customer", "get_balance", "list_accounts", "pending_transactions"]
    from transformers.utils import get_json_schema

    specs = {s["function"]["name"]: s for s in type(env)._tool_specs}
    for name in names:
        schema = get_json_schema(getattr(env, name))
        if name == "answer":
            assert schema["function"]["parameters"]["required"] == ["answer"]
        else:
            assert schema == visible_tool_schema(specs[name])


def test_methods_validate_against_the_original_schema():
    spec = next(s for s in SPECS if s["function"]["name"] == "list_accounts")
    ds = trl_adapter.build_prompt_dataset("spade/Env-00013", seeds=[1])
    env = trl_adapter.environment_factories(ds)[ds[0]["environment"]]()
    env.reset(**{k: v for k, v in ds[0].items() if k != "environment"})
    out = env.list_accounts(customer_id="not-an-id")  # violates the dropped "pattern"
    assert "does not match" in out and "was not run" in out
    assert spec["function"]["parameters"]["properties"]["customer_id"]["pattern"] in out
    with pytest.raises(TypeError):
        env.list_accounts(wrong_argument="x")  # TRL reports a TypeError as a failed tool call
    assert env.get_reward() == 0.0


def test_reserved_and_non_identifier_names_are_refused():
    base = {"type": "function", "function": {"name": "x", "description": "d", "parameters": {
        "type": "object", "properties": {"from": {"type": "string"}}, "required": ["from"]}}}
    with pytest.raises(IntegrationError, match="not a Python identifier"):
        make_tool_method(base)
    clash = {"type": "function", "function": {"name": "reset", "parameters": {"type": "object", "properties": {}}}}
    with pytest.raises(IntegrationError, match="reserved"):
        make_tool_method(clash)


def _play_reference(env, row) -> float:
    """Play the episode's reference solution through the typed methods, as a model would."""
    env.reset(**{k: v for k, v in row.items() if k != "environment"})
    for action in env._env.solution_actions():
        answer = extract_answer(action)
        if answer is not None:
            env.answer(answer)
            continue
        calls = parse_tool_calls(action)
        if not calls:  # a text game's move, already \\boxed{...}
            env.answer(action)
        for call in calls:
            getattr(env, call.name)(**call.arguments)
    return env.get_reward()


def test_dataset_families_and_reference_wins_through_methods():
    ds = trl_adapter.build_prompt_dataset(TOOL_ENVS + ["spade/Env-00001"], seeds=[0, 1])
    assert ds.column_names == ["prompt", "environment", "env_id", "seed", "hint", "env_kwargs", "level"]
    assert len(ds) == 18
    factories = trl_adapter.environment_factories(ds)
    assert set(factories) == set(ds["environment"])
    assert "SpadeTextEnv" in factories
    for row in ds:
        env = factories[row["environment"]]()
        assert env.reset(**{k: v for k, v in row.items() if k != "environment"})  # the first observation
        assert row["prompt"][-1] == {"role": "user", "content": ""}
        assert _play_reference(env, row) == 1.0, row["env_id"]
        assert env.answer("again").startswith("The episode is over")
    # one class per environment: 9 environments, 9 classes (the text-only one shared)
    assert len(factories) == 9
    # a row of another environment is refused, not silently played
    ledger = factories[next(r["environment"] for r in ds if r["env_id"] == "spade/Env-00013-v0")]()
    with pytest.raises(IntegrationError, match="not the environment of class"):
        ledger.reset(env_id="spade/Env-00016-v0", seed=0)


def test_factories_rebuild_in_a_fresh_process_state():
    ds = trl_adapter.build_prompt_dataset(["spade/Env-00017"], seeds=[2, 3])
    name = ds[0]["environment"]
    saved = trl_adapter._FACTORIES.pop(name)
    try:
        rebuilt = trl_adapter.environment_factories(ds)[name]
        assert rebuilt.name == name and rebuilt.tool_specs == saved.tool_specs
    finally:
        trl_adapter._FACTORIES[name] = saved


def _scripted_generation(trainer, original):
    """Wrap GRPOTrainer._generate_single_turn: even rollouts of the first turn call every
    reference tool at once, their next turn calls `answer`; odd rollouts are the model's."""
    tok = trainer.processing_class
    end = "<|im_end|>"

    def call_text(calls):
        return "\n".join(f"<tool_call>\n{json.dumps(c)}\n</tool_call>" for c in calls) + end

    def scripted(prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False):
        out: list = [None] * len(prompt_ids)
        real = []
        for i, ids in enumerate(prompt_ids):
            text = tok.decode(ids)
            env = next(e for e in trainer.environments if e.trajectory[0]["observation"] in text)
            actions = env._env.solution_actions()
            if "<tool_response>" in text:
                answer = next(extract_answer(a) for a in actions if extract_answer(a) is not None)
                out[i] = tok.encode(call_text([{"name": "answer", "arguments": {"answer": answer}}]),
                                    add_special_tokens=False)
            elif i % 2 == 0:
                calls = [{"name": c.name, "arguments": c.arguments} for a in actions for c in parse_tool_calls(a)]
                out[i] = tok.encode(call_text(calls), add_special_tokens=False)
            else:
                real.append(i)
        if real:  # the model's own rollouts: kept short, it is random anyway
            config = trainer.generation_config
            saved, config.max_new_tokens = config.max_new_tokens, 8
            try:
                generated, _ = original([prompt_ids[i] for i in real], images, multimodal_fields, 1, has_tool_images)
            finally:
                config.max_new_tokens = saved
            for i, ids in zip(real, generated):
                out[i] = ids
        return out, None

    return scripted


@pytest.mark.slow  # ~20 s on an idle 2-core CPU: a real GRPO step (generation, tool loop, backward)
def test_one_grpo_step_on_cpu_with_the_tiny_model(tmp_path):
    from trl import GRPOConfig, GRPOTrainer

    from spade_envs.agents.models import load_model

    model, tokenizer = load_model("tiny-random", device="cpu")
    trl_adapter.install_tool_chat_template(tokenizer)
    ds = trl_adapter.build_prompt_dataset(["spade/Env-00013", "spade/Env-00016"], seeds=[0])
    args = GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=4, num_generations=2,
                      max_completion_length=1024, max_steps=1, logging_steps=1, report_to="none", use_cpu=True,
                      save_strategy="no", shuffle_dataset=False, max_tool_calling_iterations=3, seed=0)
    trainer = GRPOTrainer(model=model, args=args, train_dataset=ds, processing_class=tokenizer,
                          environment_factory=trl_adapter.environment_factories(ds))
    trainer._generate_single_turn = _scripted_generation(trainer, trainer._generate_single_turn)
    before = [p.detach().clone() for p in model.parameters()]
    trainer.train()
    log = trainer.state.log_history[0]
    assert log["tools/call_frequency"] > 0 and log["tools/failure_frequency"] == 0
    played = [e for pool in trainer._environment_pool.values() for e in pool if e.env_id]
    assert sorted({(e.env_id, e.seed) for e in played}) == [("spade/Env-00013-v0", 0), ("spade/Env-00016-v0", 0)]
    rewards = sorted(e.get_reward() for e in played)
    assert rewards[-1] == 1.0 and rewards[0] <= 0.0  # scripted rollouts won, the model's did not
    reward_keys = [k for k in log if re.match(r"rewards/(BankLedgerEnv|TripBookingEnv)_\w+/mean", k)]
    assert len(reward_keys) == 2 and log["reward"] > 0
    assert log["grad_norm"] > 0  # scripted wins vs. model losses: a non-zero advantage
    assert any(not (a == b).all() for a, b in zip(before, model.parameters()))  # the step updated the model
