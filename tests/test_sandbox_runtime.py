"""The sandbox runs ordinary SPADE-style code unchanged, and the seed suite with
episodes identical to the in-process runtime."""

from __future__ import annotations

import pytest

from spade_envs.solutions import solution_to_actions
from spade_envs.errors import EnvExecutionError, SpadeError
from spade_envs.games import is_multiplayer
from spade_envs.registry.catalog import seed_records
from spade_envs.runtime import InProcessRuntime
from spade_envs.sandbox import SandboxRuntime

SPADE_STYLE = r'''
from typing import List, Dict, Optional
from collections import defaultdict
from dataclasses import dataclass, field
from enum import Enum
from math_verify import parse, verify

METADATA = {"name": "Style", "skill": "testing"}


class Color(Enum):
    RED = 1
    BLUE = 2


@dataclass
class Item:
    name: str
    weight: int = 0
    tags: list = field(default_factory=list)


class _Helper:
    SCALE = 3

    def __init__(self, base):
        self._base = base
        self.__secret = base * 2

    def __repr__(self):
        return f"_Helper({self._base!r})"

    def __eq__(self, other):
        return isinstance(other, _Helper) and self._base == other._base

    def __hash__(self):
        return hash(self._base)

    def __lt__(self, other):
        return self._base < other._base

    def __len__(self):
        return self._base

    def __iter__(self):
        return iter(range(self._base))

    def __contains__(self, x):
        return 0 <= x < self._base

    def __getitem__(self, i):
        return i * self.SCALE

    def secret(self):
        return self.__secret

    @property
    def doubled(self):
        return self._base * 2

    @staticmethod
    def twice(x):
        return 2 * x

    @classmethod
    def make(cls, b):
        return cls(b)


class StyleEnv:
    MAX = 5

    def __init__(self, max_turns: int = 4, **kwargs):
        self.max_turns = max_turns
        self._counts: Dict[str, int] = defaultdict(int)
        self.reset()

    def reset(self, seed: Optional[int] = None):
        rng = random.Random(seed)
        self._target = rng.randint(1, 20)
        self.turn = 0
        self._log: List[str] = []
        grid: list[list[int]] = [[0] * 3 for _ in range(3)]
        grid[1][1] += 4
        self._grid = grid
        total = 0

        def bump(k):
            nonlocal total
            total += k
            return total

        bump(2)
        bump(3)
        self._total = total
        return f"Guess a number in [1, 20] (total={self._total}).", {}

    def step(self, action: str):
        self.turn += 1
        self._counts["steps"] += 1
        h = _Helper.make(3)
        checks = [
            len(h) == 3, 2 in h, h[2] == 6, list(h) == [0, 1, 2], h.doubled == 6, _Helper.twice(4) == 8,
            h == _Helper(3), sorted([_Helper(2), h])[0]._base == 2, h.secret() == 6, repr(h) == "_Helper(3)",
            Color.RED.value == 1, Item("a", 2).weight == 2, Item("b").tags == [],
            "{} {}".format(1, "a") == "1 a", "{n}".format_map({"n": 7}) == "7", self._grid[1][1] == 4,
            max(self._counts.values()) >= 1, deque([1, 2]).popleft() == 1, Counter("aab")["a"] == 2,
            verify(parse("$\\frac{1}{2}$"), parse("$0.5$")), json.loads(json.dumps({"a": [1]})) == {"a": [1]},
            math.gcd(12, 18) == 6, re.findall(r"\d", "a1b2") == ["1", "2"], type(self).__name__ == "StyleEnv",
            [x * x for x in range(4) if x % 2] == [1, 9], {k: v for k, v in zip("ab", (1, 2))}["b"] == 2,
            sum(x for x in range(5)) == 10, (lambda a, *r, **k: a + len(r) + len(k))(1, 2, z=3) == 3,
            isinstance(h, _Helper), getattr(self, "_target") == self._target, hasattr(self, "_log"),
        ]
        try:
            1 / 0
        except ZeroDivisionError as exc:
            msg = str(exc)
        finally:
            self._log.append(action)
        if not all(checks):
            return f"broken: {[i for i, c in enumerate(checks) if not c]}", 0.0, True, False, {}
        m = re.search(r"\\boxed\{(\d+)\}", action)
        if m and int(m.group(1)) == self._target:
            return "Correct!", 1.0, True, False, {"turn": self.turn}
        return f"No ({msg}).", 0.0, False, self.turn >= self.max_turns, {}

    def solution(self):
        return str(self._target)

    def hint(self):
        return "It is below 21."
'''

TOOL_STYLE = r'''
class CounterToolEnv(ToolUseBaseEnv):
    def __init__(self, max_turns=5, **kwargs):
        super().__init__(max_turns=max_turns, **kwargs)

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.turn_count = 0
        self._state = {"n": rng.randint(1, 9)}
        self._expected_answer = str(self._state["n"] * 3)
        self._tools = {"triple": {"description": "Triple the hidden number.",
                                  "parameters": {"type": "object", "properties": {}}}}
        return "What is the hidden number times three?", {}

    def tool_triple(self):
        return str(self._state["n"] * 3)

    def solution(self):
        return '<tool_call>{"name": "triple", "arguments": {}}</tool_call>\n<answer>' + self._expected_answer + "</answer>"
'''


@pytest.fixture(scope="module")
def runtime():
    rt = SandboxRuntime(max_workers=2, step_timeout_s=10.0)
    yield rt
    rt.close()


def _play(session, seed):
    trace = [session.reset(seed)[0]]
    sol = session.solution()
    trace.append(sol)
    for action in solution_to_actions(sol):
        trace.append(session.step(action)[:4])
    for garbage in ("", "\\boxed{-1}", '<tool_call>{"name": "nope", "arguments": {}}</tool_call>'):
        session.reset(seed)
        trace.append(session.step(garbage)[:4])
    return trace


@pytest.mark.parametrize("source", [SPADE_STYLE, TOOL_STYLE], ids=["game", "tool_use"])
def test_spade_style_code_runs_unchanged(runtime, source):
    sandboxed = runtime.open(source)
    trusted = InProcessRuntime().open(source)
    for seed in (0, 1, 2):
        got = _play(sandboxed, seed)
        assert got == _play(trusted, seed)
        assert got[2][1] == 1.0 and got[2][2] is True or any(t[1] == 1.0 for t in got[2:-3])
    assert sandboxed.tools == trusted.tools
    assert sandboxed.hint() == trusted.hint()
    assert sandboxed.snapshot() == trusted.snapshot()
    sandboxed.close()


def test_seed_suite_identical_episodes(runtime):
    records = [r for r in seed_records() if not is_multiplayer(r)]  # games: test_games_*
    assert records
    trusted_rt = InProcessRuntime()
    for rec in records:
        sandboxed = runtime.open(rec.source, filename=rec.metadata["file"])
        trusted = trusted_rt.open(rec.source)
        for seed in (0, 1, 2):
            assert _play(sandboxed, seed) == _play(trusted, seed), rec.class_name
            assert sandboxed.tools == trusted.tools, rec.class_name
            assert sandboxed.snapshot() == trusted.snapshot(), rec.class_name
        sandboxed.close()


def test_batched_calls_match_single_calls(runtime):
    source = seed_records()[0].source
    sessions = [runtime.open(source) for _ in range(6)]
    resets = runtime.reset_batch([(s, i) for i, s in enumerate(sessions)])
    assert all(isinstance(r, tuple) for r in resets)
    steps = runtime.step_batch([(s, "\\boxed{1}") for s in sessions] + [(sessions[0], "\\boxed{2}")])
    assert len(steps) == 7 and all(isinstance(r, tuple) for r in steps)
    trusted = InProcessRuntime().open(source)
    for i, s in enumerate(sessions):
        trusted.reset(i)
        assert steps[i] == trusted.step("\\boxed{1}")
    for s in sessions:
        s.close()
    with pytest.raises(SpadeError):
        sessions[0].step("x")


def test_batch_timeout_hits_only_the_culprit_slot():
    rt = SandboxRuntime(max_workers=1, step_timeout_s=0.5)
    try:
        src = (
            "class HangEnv:\n"
            "    def __init__(self, **kw):\n        self.reset()\n"
            "    def reset(self, seed=None):\n        return 'r', {}\n"
            "    def step(self, action):\n"
            "        while action == 'hang':\n            pass\n"
            "        return action, 0.0, False, False, {}\n"
            "    def solution(self):\n        return 'x'\n"
        )
        a, b = rt.open(src), rt.open(src)
        assert a.worker is not b.worker and a.worker.pid != b.worker.pid  # one program per process
        out = rt.step_batch([(a, "ok1"), (b, "hang"), (a, "ok2")])
        assert isinstance(out[1], EnvExecutionError) and out[1].kind == "timeout"
        assert out[0][0] == "ok1" and out[2][0] == "ok2"  # the other session is untouched
        assert a.step("still")[0] == "still"
        with pytest.raises(EnvExecutionError):
            b.step("again")  # that episode is over
        assert b.reset(0) == ("r", {})
        assert b.step("fine")[0] == "fine"
    finally:
        rt.close()


def test_forked_caller_gets_its_own_pool(runtime):
    import os

    source = seed_records()[0].source
    parent_session = runtime.open(source)
    pid = os.fork()
    if pid == 0:  # child: the parent's session is refused, a new one works
        code = 1
        try:
            try:
                parent_session.step("x")
            except EnvExecutionError as exc:
                if exc.kind == "crash":
                    child = runtime.open(source)
                    child.reset(0)
                    code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert parent_session.reset(0)[0]  # the parent's workers are untouched
