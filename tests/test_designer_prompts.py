"""Prompt builder (designer/prompts.py) and hints (designer/hints.py)."""

from __future__ import annotations

import ast

import pytest

from spade_envs.designer.corpus import Document
from spade_envs.designer.hints import resolve_hint, strip_answer, with_hint
from spade_envs.designer.memory import MemoryEntry, Retrieval
from spade_envs.designer.prompts import (
    DEFAULT_MODES, MODES, SKILLS, abbreviate, build_prompt, prompt_hash, repair_messages,
)
from spade_envs.registry.catalog import seed_records
from designer_fakes import VALID_ENV, ScriptedBackend

DOC = Document("stdlib:heapq.merge", "Merge multiple sorted inputs into a single sorted output.")


def _retrieval() -> Retrieval:
    seed = seed_records()[0]
    pos = MemoryEntry("spade/Env-01001", seed.source, skill="mathematical reasoning", name="Lock",
                      win_rate_plain=0.5, win_rate_hint=0.9, regret=0.4)
    easy = MemoryEntry("spade/Env-01002", "", skill="mathematical reasoning", name="Adder",
                       description="add two numbers", win_rate_plain=1.0, win_rate_hint=1.0, regret=0.0)
    hard = MemoryEntry("spade/Env-01003", "", skill="mathematical reasoning", name="Factor",
                       description="factor a 40-digit number", win_rate_plain=0.0, win_rate_hint=0.0, regret=0.0)
    return Retrieval("mathematical reasoning", [pos], [easy, hard], None, ["Lock"], "Make something different.")


def test_six_skills_three_modes_plus_multiplayer():
    assert len(SKILLS) == 6 and set(DEFAULT_MODES) == {"puzzle", "game", "tool"}
    assert set(MODES) == set(DEFAULT_MODES) | {"multiplayer"}


def test_multiplayer_prompt_uses_the_game_format():
    user = build_prompt("multiplayer", "logical deduction", DOC, _retrieval())[1]["content"]
    assert DOC.text in user and "TWO-PLAYER" in user
    for needle in ("current_player(self)", "observe(self, player)", "num_players", "scripted_action"):
        assert needle in user
    assert "Make something different." in user


@pytest.mark.parametrize("mode", DEFAULT_MODES)
def test_prompt_contents_per_mode(mode):
    msgs = build_prompt(mode, "mathematical reasoning", DOC, _retrieval())
    assert [m["role"] for m in msgs] == ["system", "user"]
    user = msgs[1]["content"]
    # grounding document, skill, contract
    assert DOC.text in user and DOC.ref in user and "mathematical reasoning" in user
    for needle in ("reset(self, seed=None)", "step(self, action", "solution(self)", "hint(self)", "ends in \"Env\""):
        assert needle in user
    # memory: positive source abbreviated, negatives with why, the instruction
    assert "GOOD EXAMPLE spade/Env-01001" in user and "class ModularLockEnv" in user
    assert "too easy" in user and "Adder" in user and "too hard" in user and "Factor" in user
    assert "Make something different." in user
    if mode == "tool":
        assert "ToolUseBaseEnv" in user and "_expected_answer" in user and "<tool_call>" in user
        assert "Do NOT write step()" in user
    elif mode == "puzzle":
        assert "\\boxed{" in user and "single-answer" in user
    else:
        assert "multi-step game" in user and "one per line" in user


def test_prompt_hash_is_stable_and_sensitive():
    a = build_prompt("puzzle", "optimization", DOC)
    assert prompt_hash(a) == prompt_hash(build_prompt("puzzle", "optimization", DOC))
    assert len(prompt_hash(a)) == 16
    assert prompt_hash(a) != prompt_hash(build_prompt("game", "optimization", DOC))
    assert prompt_hash(a) != prompt_hash(build_prompt("puzzle", "optimization", Document("x", "other")))
    with pytest.raises(ValueError):
        build_prompt("essay", "optimization", DOC)


def test_abbreviate_shortens_and_stays_python():
    src = seed_records()[0].source
    short = abbreviate(src, max_statements=2)
    assert len(short) < len(src) and "..." in short and '"""' not in short
    ast.parse(short)
    assert abbreviate("def (:", max_lines=1) == "def (:"


def test_repair_messages_show_the_verdict():
    conv = build_prompt("puzzle", "optimization", DOC)
    out = repair_messages(conv, "answer text", "garbage", "garbage wins: probe 'zero'")
    assert out[:2] == conv and out[2] == {"role": "assistant", "content": "answer text"}
    assert "garbage" in out[3]["content"] and "probe 'zero'" in out[3]["content"]
    assert "```python" in repair_messages(conv, "x", "extract", "")[3]["content"]


def test_strip_answer_removes_answer_bearing_sentences():
    kept, removed = strip_answer("Add the crates. The total is 417 kg. Look at solution() for more.", ["417"])
    assert kept == "Add the crates."
    assert len(removed) == 2


def test_with_hint_injects_a_method():
    src = with_hint(VALID_ENV, "Don't forget the rot.")
    ns: dict = {}
    exec(compile(src, "x", "exec"), ns)  # trusted test source
    env = ns["OrchardTallyEnv"]()
    assert env.hint() == "Don't forget the rot."
    assert src.startswith(VALID_ENV.rstrip("\n"))


def test_resolve_hint_program_model_and_leaky():
    prog = with_hint(VALID_ENV, "Subtract each rotten share first.")
    res = resolve_hint(prog, backend=None)
    assert res.origin == "program" and res.text == "Subtract each rotten share first." and res.source == prog
    backend = ScriptedBackend(["unused"], hint_text="Go crate by crate. The total is 999999.")
    res = resolve_hint(VALID_ENV, backend=backend)
    assert res.origin == "model" and res.text == "Go crate by crate. The total is 999999."
    assert "def hint(self)" in res.source
    # a hint() that returns the answer is replaced by the model's, answer sentences stripped
    leaky = VALID_ENV + "\n    def hint(self):\n        return f'It is {self._total}.'\n"
    backend = ScriptedBackend(["unused"], hint_text="Go crate by crate. Use self._total.")
    res = resolve_hint(leaky, backend=backend)
    assert res.origin == "model" and res.text == "Go crate by crate." and "reveals the answer" in res.note
    assert resolve_hint(VALID_ENV, backend=None).origin == "none"
