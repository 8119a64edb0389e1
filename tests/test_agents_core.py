"""Agents: specs, prompt building (native tools and fallback), replay agents."""

from __future__ import annotations

import json

import pytest

from spade_envs.agents import AgentError, PlayTask, load_agent, load_backend, parse_spec
from spade_envs.agents import chat
from spade_envs.games import is_multiplayer
from spade_envs.registry.catalog import seed_records

SEED_IDS = [rec.env_id.base for rec in seed_records() if not is_multiplayer(rec)]
TOOLS = [{"type": "function", "function": {"name": "get_balance", "description": "Balance of an account.",
                                           "parameters": {"type": "object", "properties": {"account": {"type": "string"}},
                                                          "required": ["account"]}}}]
TOOL_TEMPLATE = (
    "{% if tools %}<|im_start|>tools\n{% for t in tools %}{{ t | tojson }}\n{% endfor %}<|im_end|>\n{% endif %}"
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@pytest.fixture(scope="module")
def tokenizer():
    from spade_envs.agents.models import ensure_tokenizer

    return ensure_tokenizer()


def test_parse_spec_and_errors():
    assert parse_spec("transformers:default") == ("transformers", "default")
    assert parse_spec("openai:http://127.0.0.1:1/v1#m") == ("openai", "http://127.0.0.1:1/v1#m")
    for bad in ("default", "nope:x", "transformers:"):
        with pytest.raises(AgentError):
            parse_spec(bad)
    with pytest.raises(AgentError):
        load_backend("replay:reference")
    with pytest.raises(AgentError):
        load_agent("transformers:/no/such/model/folder")
    with pytest.raises(AgentError):
        load_agent("replay:/no/such/file.jsonl")


def test_fallback_prompt_lists_tools(tokenizer):
    assert not chat.template_supports_tools(tokenizer)  # SmolLM2's template has no tools
    msgs = chat.initial_messages("Find the balance.", TOOLS, native_tools=False)
    system = msgs[0]["content"]
    assert "<tool_call>" in system and "<answer>" in system and '"get_balance"' in system
    text = chat.render(tokenizer, msgs, TOOLS)
    assert "get_balance" in text and text.endswith("<|im_start|>assistant\n")
    plain = chat.initial_messages("Solve.", [], native_tools=False)[0]["content"]
    assert "\\boxed{" in plain and "<tool_call>" not in plain


def test_native_tools_go_through_template(tokenizer):
    tok = type(tokenizer).from_pretrained(tokenizer.name_or_path) if tokenizer.name_or_path else tokenizer
    tok.chat_template = TOOL_TEMPLATE
    assert chat.template_supports_tools(tok)
    msgs = chat.initial_messages("Find the balance.", TOOLS, native_tools=True)
    assert "get_balance" not in msgs[0]["content"]  # not in the system prompt...
    text = chat.render(tok, msgs, TOOLS)
    assert text.startswith("<|im_start|>tools\n") and '"get_balance"' in text  # ...but rendered by the template
    assert chat.observation_message("42", native_tools=True, called_tool=True)["role"] == "tool"
    assert chat.observation_message("42", native_tools=False, called_tool=True)["role"] == "user"


def test_continuation_text_matches_full_render(tokenizer):
    msgs = chat.initial_messages("obs1", [], native_tools=False)
    msgs += [{"role": "assistant", "content": "act"}, {"role": "user", "content": "obs2"}]
    before = chat.render(tokenizer, msgs[:-2])
    full = chat.render(tokenizer, msgs)
    for generated in ("act<|im_end|>", "act"):  # stopped at end of turn / cut by the token limit
        cont, exact = chat.continuation_text(tokenizer, msgs, [], generated, "act")
        assert exact and before + generated + cont == full


def test_replay_reference_wins_every_seed_env():
    assert len(SEED_IDS) >= 2
    agent = load_agent("replay:reference")
    tasks = [PlayTask(env_id, seed) for env_id in SEED_IDS for seed in (0, 7)]
    episodes = agent.play(tasks)
    assert len(episodes) == len(tasks)
    lost = [(e.task.env_id, e.task.seed, e.error) for e in episodes if not e.won]
    assert not lost
    for e in episodes:
        assert e.terminated and e.episode_return == 1.0 and e.turns == len(e.actions) >= 1
        assert e.final_state is not None and e.token_ids == [] and e.mask == []


def test_replay_file(tmp_path):
    ref = load_agent("replay:reference").play([PlayTask("spade/Env-00001", 3), PlayTask("spade/Env-00013", 3)])
    path = tmp_path / "traj.jsonl"
    rows = [
        {"id": "spade/Env-00001-v0", "seed": 3, "turns": [["\\boxed{0}"], ref[0].actions]},  # wrong, then right
        {"id": "spade/Env-00013", "turns": [[a] for a in ref[1].actions]},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    agent = load_agent(f"replay:{path}")
    eps = agent.play([PlayTask("spade/Env-00001", 3), PlayTask("spade/Env-00013", 3), PlayTask("spade/Env-00002", 0)])
    assert eps[0].won and eps[0].actions[0] == "\\boxed{0}" and eps[0].rewards[0] < 1.0
    assert eps[1].won and eps[1].actions == ref[1].actions
    assert not eps[2].won and "no trajectory" in eps[2].error
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x"}\n', encoding="utf-8")
    with pytest.raises(AgentError, match="bad.jsonl:1"):
        load_agent(f"replay:{bad}")


def test_replay_sandboxed_if_available():
    try:
        from spade_envs.sandbox import SandboxRuntime  # noqa: F401
    except ImportError:
        pytest.skip("the sandbox is not built yet")
    agent = load_agent("replay:reference", sandbox=True)
    source = next(r.source for r in seed_records() if r.env_id.seq == 1)
    eps = agent.play([PlayTask(env_id, 1) for env_id in SEED_IDS] + [PlayTask("untrusted", 2, source=source)])
    assert all(e.won for e in eps), [(e.task.env_id, e.error) for e in eps if not e.won]
