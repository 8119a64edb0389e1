"""The seed suite (generation 0): every shipped environment meets the acceptance contract.

Each check runs on every file in ``spade_envs/seeds/`` (found through
``seed_records()``), so environments added later are covered automatically.
"""

from __future__ import annotations

import random
import re

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import spade_envs  # noqa: F401  (registers spade/ ids)
from spade_envs.actions import extract_answer, extract_boxed
from spade_envs.gym_env import SpadeEnv
from spade_envs.program import inspect_program
from spade_envs.games import is_multiplayer
from spade_envs.registry.catalog import seed_records

SKILLS = (
    "mathematical reasoning",
    "logical deduction",
    "spatial reasoning",
    "pattern recognition",
    "optimization",
    "causal inference",
)
#: ids 00001-00012: two single-answer environments per SPADE skill, in this order
REASONING_SKILL_BY_SEQ = {2 * i + k + 1: skill for i, skill in enumerate(SKILLS) for k in (0, 1)}

RECORDS = [r for r in seed_records() if not is_multiplayer(r)]  # games: tests/test_games_*.py
IDS = [r.metadata["file"] for r in RECORDS]
N_SEEDS = 20


def _rng_text(rng: random.Random) -> str:
    alphabet = "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789{}<>\\/,.;:!?\"'"
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 80)))


def garbage_actions() -> list[str]:
    """20 actions that must never win: random text, empty or wrong answers, malformed calls."""
    rng = random.Random(1234)
    fixed = [
        "\\boxed{0}",
        "\\boxed{}",
        "<answer>x</answer>",
        "<answer></answer>",
        "\\boxed{-1}",
        "\\boxed{KKKKKKK}",
        "\\boxed{\\boxed{1}}",
        "\\boxed{",
        "",
        "I don't know, sorry.",
        "<tool_call>{not json}</tool_call>",
        '<tool_call>{"name": "no_such_tool", "arguments": {}}</tool_call>',
        '<tool_call>{"arguments": {"x": 1}}</tool_call>',
        "<tool_call>[1, 2, 3]</tool_call>",
        '<tool_call>{"name": "x", "arguments": "not an object"}</tool_call>',
        "日本語のテキスト ✓ \U0001f600",
    ]
    return fixed + [_rng_text(rng) for _ in range(N_SEEDS - len(fixed))]


GARBAGE = garbage_actions()


def reference_answer(actions: list[str]) -> str | None:
    """The secret answer of a replayable solution: the last ``<answer>`` block, or the
    content of a single ``\\boxed{}`` action; None for multi-step games (their moves are
    no secret)."""
    if actions and actions[-1].startswith("<answer>"):
        return extract_answer(actions[-1])
    if len(actions) == 1:
        return extract_boxed(actions[0])
    return None


def leaks(answer: str | None, text: str) -> bool:
    """True when ``answer`` (3+ characters) occurs in ``text`` as a whole token."""
    if not answer or len(answer) < 3:
        return False
    pattern = r"(?<![0-9A-Za-z])" + re.escape(answer) + r"(?![0-9A-Za-z])"
    return re.search(pattern, text) is not None


def make(rec, **kwargs) -> gym.Env:
    return gym.make(str(rec.env_id), disable_env_checker=True, **kwargs)


def is_tool_use(rec) -> bool:
    tags = rec.metadata.get("tags") or []
    return rec.metadata.get("skill") == "tool use" or "tool-use" in tags


def is_game(rec) -> bool:
    tags = [str(t) for t in rec.metadata.get("tags") or []]
    return "game" in str(rec.metadata.get("skill", "")) or any("game" in t for t in tags)


# -- static checks ---------------------------------------------------------------------
@pytest.mark.parametrize("rec", RECORDS, ids=IDS)
def test_program_format_and_metadata(rec):
    info = inspect_program(rec.source, rec.metadata["file"])
    assert info.class_name == rec.class_name and info.class_name.endswith("Env")
    meta = info.metadata
    for key in ("name", "skill", "description", "tags"):
        assert key in meta, f"METADATA lacks {key!r}"
    assert isinstance(meta["skill"], str) and meta["skill"].strip()
    assert isinstance(meta["description"], str) and len(meta["description"]) > 20
    assert isinstance(meta["tags"], list) and meta["tags"]
    assert re.fullmatch(r"env_\d{5}_[a-z0-9_]+\.py", rec.metadata["file"])
    assert len(rec.source.splitlines()) < 400
    assert not re.search(r"\bnumpy\b|\bnp\.", rec.source), "seeds use the standard library only"


def test_reasoning_seeds_cover_each_skill_twice():
    by_seq = {r.env_id.seq: r for r in RECORDS}
    for seq, skill in REASONING_SKILL_BY_SEQ.items():
        assert seq in by_seq, f"seed env {seq:05d} is missing"
        assert by_seq[seq].skill == skill, f"env {seq:05d}: skill {by_seq[seq].skill!r}, want {skill!r}"


def test_suite_composition():
    """Issue 2: >= 24 seeds, >= 2 per skill, >= 8 tool-use environments, >= 4 games."""
    assert len(RECORDS) >= 24, f"only {len(RECORDS)} seed environments"
    for skill in SKILLS:
        assert sum(r.skill == skill for r in RECORDS) >= 2, skill
    assert sum(is_tool_use(r) for r in RECORDS) >= 8
    assert sum(is_game(r) for r in RECORDS) >= 4


@pytest.mark.parametrize("rec", [r for r in RECORDS if is_tool_use(r)], ids=lambda r: r.metadata["file"])
def test_tool_use_seeds_declare_three_to_eight_tools(rec):
    env = make(rec)
    _, info = env.reset(seed=0)
    env.close()
    names = [t["function"]["name"] for t in info["tools"]]
    assert 3 <= len(names) <= 8 and len(set(names)) == len(names), names


# -- Gymnasium surface -----------------------------------------------------------------
@pytest.mark.parametrize("rec", RECORDS, ids=IDS)
def test_check_env(rec):
    env = make(rec)
    try:
        check_env(env.unwrapped, skip_render_check=True)
    finally:
        env.close()


@pytest.mark.parametrize("rec", RECORDS, ids=IDS)
def test_fresh_instance_is_playable_without_reset(rec):
    """The seeds call ``reset()`` from ``__init__`` (as SPADE's programs do; the contract
    allows it, DESIGN.md section 3), so a first step without a reset is the program's own
    answer to a wrong action, not the error path's ``("Environment error ...", -1.0, True)``."""
    env = SpadeEnv(env_id=rec.env_id.base)
    obs, reward, terminated, truncated, info = env.step("hello")
    assert "error" not in info and "verdict" not in info and not obs.startswith("Environment error"), obs[:200]
    assert isinstance(obs, str) and -1.0 <= reward < 1.0 and isinstance(info, dict)
    env.close()


# -- behavioural checks: each returns a list of problems (empty = fine), so the same code
# -- is run on the seeds and on broken control programs (proving the checks can fail)
def replay_problems(env: SpadeEnv, seeds=range(N_SEEDS)) -> list[str]:
    problems = []
    for seed in seeds:
        env.reset(seed=seed)
        actions = env.solution_actions()
        obs, reward, terminated = "", 0.0, False
        for i, action in enumerate(actions):
            obs, reward, terminated, truncated, _ = env.step(action)
            if (terminated or truncated) and i < len(actions) - 1:
                problems.append(f"seed {seed}: episode ended at action {i}: {obs[:200]}")
                break
        if not (reward == 1.0 and terminated):
            problems.append(f"seed {seed}: replaying the solution did not win: {obs[:200]}")
    return problems


def garbage_problems(env: SpadeEnv) -> list[str]:
    problems = []
    for i, action in enumerate(GARBAGE):  # each probe from a fresh episode
        env.reset(seed=i)
        answer = reference_answer(env.solution_actions())
        obs, reward, *_ = env.step(action)
        if reward >= 1.0:
            problems.append(f"garbage {action!r} won (seed {i})")
        if leaks(answer, obs):
            problems.append(f"the observation after {action!r} reveals the answer {answer!r}")
    env.reset(seed=99)  # and all of them in one episode
    for action in GARBAGE:
        obs, reward, terminated, truncated, _ = env.step(action)
        if reward >= 1.0:
            problems.append(f"garbage {action!r} won within one episode")
        if terminated or truncated:
            break
    return problems


def determinism_problems(env_a: SpadeEnv, env_b: SpadeEnv) -> list[str]:
    problems = []
    for seed in (0, 7, 12345):
        obs_a, _ = env_a.reset(seed=seed)
        sol_a = env_a.solution()
        env_a.step("\\boxed{0}")
        if env_a.reset(seed=seed)[0] != obs_a or env_a.solution() != sol_a:
            problems.append(f"seed {seed}: resetting the same instance gives another episode")
        obs_b, _ = env_b.reset(seed=seed)
        if obs_b != obs_a or env_b.solution() != sol_a:
            problems.append(f"seed {seed}: another instance gives another episode")
    return problems


def variety_problems(env: SpadeEnv) -> list[str]:
    solutions = set()
    for seed in range(N_SEEDS):
        env.reset(seed=seed)
        solutions.add(env.solution())
    if len(solutions) < 15:
        return [f"only {len(solutions)} distinct solutions over {N_SEEDS} seeds"]
    return []


def leak_problems(env: SpadeEnv) -> list[str]:
    problems = []
    for seed in range(N_SEEDS):
        obs, _ = env.reset(seed=seed)
        answer = reference_answer(env.solution_actions())
        if leaks(answer, obs):
            problems.append(f"seed {seed}: the first observation contains the answer {answer!r}")
        hint = env.hint()
        if not isinstance(hint, str) or not hint.strip():
            problems.append(f"seed {seed}: empty hint")
        elif leaks(answer, hint):
            problems.append(f"seed {seed}: the hint contains the answer {answer!r}")
    return problems


@pytest.mark.parametrize("rec", RECORDS, ids=IDS)
def test_replaying_solution_wins(rec):
    env = make(rec).unwrapped
    assert replay_problems(env) == []
    env.close()


@pytest.mark.parametrize("rec", RECORDS, ids=IDS)
def test_garbage_never_wins_nor_reveals(rec):
    env = make(rec).unwrapped
    assert garbage_problems(env) == []
    env.close()


@pytest.mark.parametrize("rec", RECORDS, ids=IDS)
def test_same_seed_same_episode(rec):
    env_a, env_b = make(rec).unwrapped, make(rec).unwrapped
    assert determinism_problems(env_a, env_b) == []
    env_a.close()
    env_b.close()


@pytest.mark.parametrize("rec", RECORDS, ids=IDS)
def test_different_seeds_different_tasks(rec):
    env = make(rec).unwrapped
    assert variety_problems(env) == []
    env.close()


@pytest.mark.parametrize("rec", RECORDS, ids=IDS)
def test_answer_not_in_first_observation_nor_hint(rec):
    env = make(rec).unwrapped
    assert leak_problems(env) == []
    env.close()


@pytest.mark.parametrize("rec", RECORDS, ids=IDS)
def test_hint_mode_puts_hint_in_first_observation(rec):
    env = make(rec, hint=True)
    obs, info = env.reset(seed=3)
    hint = env.unwrapped.hint()
    assert hint and hint in obs and info.get("hint") == hint
    env.close()
    plain = make(rec)
    obs, info = plain.reset(seed=3)
    assert "hint" not in info and hint not in obs
    plain.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("rec", RECORDS, ids=IDS)
def test_make_vec(rec, mode):
    envs = gym.make_vec(str(rec.env_id), num_envs=2, vectorization_mode=mode)
    try:
        obs, info = envs.reset(seed=[5, 6])
        assert len(obs) == 2 and all(isinstance(o, str) and o for o in obs)
        assert obs[0] != obs[1] or rec.env_id.seq > 12  # single-answer seeds differ per seed
        obs, rewards, terminated, truncated, _ = envs.step(np.array(["\\boxed{0}", "nothing"], dtype=object))
        assert len(obs) == 2 and np.all(rewards < 1.0)
    finally:
        envs.close()


# -- the checks above can fail: broken control programs --------------------------------
CONTROL = '''
import random
import re


class ControlEnv:
    def __init__(self, max_turns=3, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        rng = random.Random(None if "{flaw}" == "nondeterministic" else seed)
        self._answer = 777 if "{flaw}" == "constant" else rng.randint(1000, 9999)
        shown = f" (it is {{self._answer}})" if "{flaw}" == "leak" else ""
        return f"Guess the number{{shown}}.", {{}}

    def step(self, action):
        m = re.search(r"\\\\boxed\\{{(\\d+)\\}}", action)
        won = "{flaw}" == "gullible" or bool(m and int(m.group(1)) == self._answer)
        return ("yes" if won else "no"), float(won), won, False, {{}}

    def solution(self):
        return str(self._answer + 1 if "{flaw}" == "wrong_solution" else self._answer)

    def hint(self):
        return f"It is {{self._answer}}." if "{flaw}" == "hint_leak" else "It has four digits."
'''


def control(flaw: str) -> SpadeEnv:
    return SpadeEnv(source=CONTROL.format(flaw=flaw), trust_remote_code=True)


def test_controls_sound_program_passes_every_check():
    env = control("none")
    assert replay_problems(env, range(5)) == []
    assert garbage_problems(env) == []
    assert determinism_problems(env, control("none")) == []
    assert variety_problems(env) == []
    assert leak_problems(env) == []


@pytest.mark.parametrize(
    "flaw, check",
    [
        ("wrong_solution", lambda env: replay_problems(env, range(3))),
        ("gullible", garbage_problems),
        ("nondeterministic", lambda env: determinism_problems(env, control("nondeterministic"))),
        ("constant", variety_problems),
        ("leak", leak_problems),
        ("hint_leak", leak_problems),
    ],
)
def test_controls_each_flaw_is_caught(flaw, check):
    assert check(control(flaw)), f"the check missed a program with flaw {flaw!r}"


def test_leak_detection_is_token_based():
    assert leaks("1234", "the code is 1234.")
    assert not leaks("1234", "the code is 12345")  # a longer number is not the answer
    assert not leaks("12", "12 is short: answers under 3 characters are not checked")
    assert leaks("NKNK", "letters NKNK here")
    assert reference_answer(["\\boxed{42}"]) == "42"
    assert reference_answer(['<tool_call>{"name": "a"}</tool_call>', "<answer>x1</answer>"]) == "x1"
    assert reference_answer(["\\boxed{up}", "\\boxed{left}"]) is None
