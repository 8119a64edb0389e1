"""Ordinary LLM-written code keeps working under the static layer, identically.

Each program below runs sandboxed (full static layer, worker process) and in-process
(real interpreter); the episodes must be identical. They use what failed before the
allow-list rewrite because numpy's and datetime's lazy internal imports went through the
sandbox's ``__import__`` (``arr.sum()``, ``str(arr)``, ``strftime``, ``strptime``), the
SPADE loader tolerances (``from tool_use_base_env import ToolUseBaseEnv``, ``__name__``
and demo blocks, ``from __future__ import annotations``, ``match``, ``calendar``,
``hashlib``) and every pre-injected name of DESIGN.md section 3.
"""

from __future__ import annotations

import pytest

from spade_envs.errors import EnvProgramError
from spade_envs.program import PRELUDE_MODULES, PRELUDE_NAMES
from spade_envs.runtime import InProcessRuntime
from spade_envs.sandbox import SandboxRuntime

NUMPY_DATETIME = '''
import datetime
import numpy as np


class LedgerEnv:
    def __init__(self, max_turns=5, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        rng = np.random.default_rng(seed)
        self._arr = rng.integers(0, 100, size=(3, 4))
        self._day = datetime.date(2024, 1, 1) + datetime.timedelta(days=int(self._arr[0, 0]))
        self._turn = 0
        return f"grid {self._arr.shape} starting {self._day:%Y-%m-%d}", {}

    def step(self, action):
        self._turn += 1
        a = self._arr
        parsed = datetime.datetime.strptime("2024-03-05 10:30", "%Y-%m-%d %H:%M")
        obs = "|".join([
            str(a.sum()), str(a.mean()), str(a.max()), str(a.min()), str(a.std().round(3)),
            str(a), f"{a}", repr(a.T), f"{a.mean(axis=0)}", str(np.argmax(a)), str(a.tolist()),
            str(np.sort(a, axis=None)[:3]), str(np.linalg.norm(a.astype(float)).round(4)),
            self._day.strftime("%A %d %B %Y"), f"{self._day:%Y-%m-%d}", parsed.isoformat(),
            str(parsed - datetime.datetime(2024, 1, 1)), datetime.date.fromisoformat("2024-02-29").strftime("%j"),
        ])
        done = self._turn >= self.max_turns
        return obs, float(action == str(a.sum())), action == str(a.sum()), done, {"turn": self._turn}

    def solution(self):
        return str(self._arr.sum())
'''

TOLERANCES = '''"""SPADE-style program: future import, alias import, match, calendar, hashlib, demo block."""
from __future__ import annotations

import calendar
import hashlib
from dataclasses import dataclass, field
from enum import Enum
from typing import NamedTuple

from tool_use_base_env import ToolUseBaseEnv


class Move(Enum):
    NORTH = "north"
    SOUTH = "south"


class Point(NamedTuple):
    x: int
    y: int


@dataclass
class Board:
    pos: Point
    trail: list[str] = field(default_factory=list)


class WalkEnv:
    def __init__(self, max_turns: int = 6, **kwargs) -> None:
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed: int | None = None) -> tuple[str, dict]:
        self._rng = random.Random(seed)
        self._board = Board(Point(0, 0))
        self._goal = self._rng.randint(1, 3)
        digest = hashlib.sha256(str(self._goal).encode()).hexdigest()[:8]
        return f"walk north {self._goal} times; {calendar.month_name[self._goal]} {digest} {__name__ != '__main__'}", {}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict]:
        match action.strip().split():
            case ["move", direction] if direction in {m.value for m in Move}:
                dy = 1 if Move(direction) is Move.NORTH else -1
                p = self._board.pos
                self._board.pos = p._replace(y=p.y + dy)
                self._board.trail.append(direction)
                msg = f"at {self._board.pos}"
            case ["look"]:
                msg = f"trail {self._board.trail} {calendar.isleap(2024)} {calendar.monthrange(2024, 2)}"
            case Point(x=0):
                msg = "unreachable"
            case _:
                msg = "unknown command"
        won = self._board.pos.y == self._goal
        done = len(self._board.trail) >= self.max_turns
        return msg + f" base={ToolUseBaseEnv.__name__}", float(won), won, done and not won, {}

    def solution(self) -> str:
        return "\\n".join(["move north"] * self._goal)


if __name__ == "__main__":
    env = WalkEnv()
    print(env.reset())
    raise SystemExit("the demo block must not run")
'''


def _prelude_program() -> str:
    """A program that uses every pre-injected name without importing anything."""
    uses = [f"str({m}.__name__)" for m in PRELUDE_MODULES] + [f"str({n}.__name__)" for n in ("np", "numpy")]
    uses += [f"repr({n})" if mod == "typing" else f"str(callable({n}))" for n, (mod, _) in PRELUDE_NAMES.items()]
    uses += ["repr(Optional[Dict[str, List[int]]])", "repr(Tuple[int, ...])", "repr(Callable[[int], Any])"]
    body = " + '|' + ".join(uses)
    return (
        "class PreludeEnv:\n"
        "    def __init__(self):\n        self.reset()\n"
        "    def reset(self, seed=None):\n        return 'start', {}\n"
        "    def step(self, action):\n"
        "        d = deque([1]); dd = defaultdict(int); c = Counter('aab'); od = OrderedDict(a=1)\n"
        "        P = namedtuple('P', 'a b'); q = [3, 1]; heappush(q, 0); low = heappop(q)\n"
        "        combo = list(combinations([1, 2, 3], 2)) + list(permutations([1, 2])) + list(product([0], [1]))\n"
        "        chained = list(chain([1], [2])) + list(accumulate([1, 2, 3]))\n"
        "        f = lru_cache(maxsize=None)(lambda n: n * 2)\n"
        "        extra = [reduce(lambda a, b: a + b, [1, 2, 3]), deepcopy({'a': [1]}), P(1, 2), low, f(4),\n"
        "                 statistics.mean([1, 2, 3]), operator.add(1, 2), string.digits, json.dumps({'k': 1}),\n"
        "                 re.sub('a', 'b', 'aa'), math.gcd(4, 6), itertools.count, functools.partial, copy.copy([1]),\n"
        "                 heapq.nlargest(1, [1, 2]), random.Random(1).random(), collections.Counter('x'),\n"
        "                 ToolUseBaseEnv.__name__, np.arange(3).sum()]\n"
        f"        return {body} + str(extra) + str([d, dd, c, od, combo, chained]), 0.0, True, False, {{}}\n"
        "    def solution(self):\n        return 'x'\n"
    )


PROGRAMS = {"numpy_datetime": NUMPY_DATETIME, "spade_tolerances": TOLERANCES, "prelude_names": _prelude_program()}
ACTIONS = {
    "numpy_datetime": ["1", "2", "3"],
    "spade_tolerances": ["look", "move north", "move south", "fly", "move north", "look", "move north"],
    "prelude_names": ["go"],
}


@pytest.fixture(scope="module")
def sandbox():
    rt = SandboxRuntime(max_workers=2, step_timeout_s=10.0, open_timeout_s=20.0)
    yield rt
    rt.close()


def _episode(runtime, name: str, seed: int) -> list:
    session = runtime.open(PROGRAMS[name], filename=f"{name}.py")
    out: list = [session.reset(seed=seed)]
    for action in ACTIONS[name]:
        out.append(session.step(action))
        if out[-1][2] or out[-1][3]:  # the episode ended (a step would raise EpisodeOverError): play on anew
            session.reset(seed=seed)
    out.append(session.solution())
    session.close()
    return out


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_sandboxed_episode_equals_in_process(sandbox, name):
    inproc = InProcessRuntime()
    for seed in (0, 1, 7):
        sandboxed = _episode(sandbox, name, seed)
        plain = _episode(inproc, name, seed)
        assert sandboxed == plain, name


def test_tolerance_program_behaves_like_spade(sandbox):
    episode = _episode(sandbox, "spade_tolerances", 3)
    obs0 = episode[0][0]
    assert obs0.endswith(" True")  # __name__ is a module name, not "__main__"; the demo did not run
    assert "base=ToolUseBaseEnv" in episode[1][0]
    assert "unknown command" in episode[4][0]
    # replaying the solution wins
    session = sandbox.open(TOLERANCES)
    session.reset(seed=3)
    result = None
    for line in session.solution().splitlines():
        result = session.step(line)
    assert result[1] == 1.0 and result[2] is True


def test_numpy_and_datetime_ordinary_use(sandbox):
    obs = _episode(sandbox, "numpy_datetime", 0)[1][0]
    fields = obs.split("|")
    assert fields[0].isdigit() and "[[" in fields[5] and "2024-03-05T10:30:00" in obs


def test_eval_and_exec_stay_refused(sandbox):
    for call in ("eval('1')", "exec('x = 1')"):
        src = NUMPY_DATETIME.replace("self._turn += 1", f"self._turn += 1\n        {call}")
        with pytest.raises(EnvProgramError) as info:
            sandbox.open(src)
        assert info.value.stage == "sandbox_compile"


def test_match_pattern_cannot_read_private_or_dunder_attributes(sandbox):
    for pattern in ("object(__class__=c)", "str(_x=1)", "math._private"):
        src = TOLERANCES.replace('case ["look"]:', f"case {pattern}:\n                msg = 'x'\n            case [\"look\"]:")
        with pytest.raises(EnvProgramError) as info:
            sandbox.open(src)
        assert info.value.stage == "sandbox_compile", pattern
