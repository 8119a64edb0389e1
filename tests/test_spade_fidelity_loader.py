"""Drift check: spade-envs loads and refuses the same programs as SPADE's loader rules
(reimplemented in tests/spade_loader_rules.py), and accepts the good SPADE-format ones."""

from __future__ import annotations

from pathlib import Path

import pytest
from spade_loader_rules import SpadeLoadError, spade_load

from spade_envs.designer.acceptance import AcceptancePipeline
from spade_envs.runtime import InProcessRuntime

PROGRAMS = Path(__file__).parent / "spade_programs"

BASE = '''
class TinyEnv:
    def __init__(self, max_turns=10, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self._n = random.Random(seed).randint(100, 999)
        RESET

    def step(self, action):
        ok = re.search(r"\\\\boxed\\{(\\d+)\\}", action)
        if ok and int(ok.group(1)) == self._n * 2:
            return "yes", 1.0, True, False, {}
        return "no", 0.0, False, False, {}

    def solution(self):
        return str(self._n * 2)
'''


def variant(reset: str = 'return f"Double {self._n}. Use \\\\boxed{{}}.", {}', extra: str = "", drop: str = "") -> str:
    src = BASE.replace("RESET", reset) + extra
    return src.replace(drop, "") if drop else src


#: name -> source; SPADE's loader decides whether it should load
CASES = {
    "plain": variant(),
    "bare_string_reset": variant(reset='return f"Double {self._n}. Use \\\\boxed{{}}."'),
    "no_solution": variant(drop="    def solution(self):\n        return str(self._n * 2)\n"),
    "injected_names": variant(extra="\n\ndef _helper():\n    return deque([Counter('ab'), defaultdict(int), combinations([1, 2], 2)])\n"),
    "numpy_and_datetime": variant(reset=('import datetime\n        arr = np.array([self._n, 2, 3])\n'
                                         '        day = datetime.date(2024, 1, 1 + self._n % 28).strftime("%Y-%m-%d")\n'
                                         '        return f"Double {int(arr.max())} ({arr.sum()} {arr.mean():.1f} {day}). Use \\\\boxed{{}}.", {}')),
    "main_block": variant(extra='\n\nif __name__ == "__main__":\n    print(TinyEnv().reset())\n'),
    "big_reward_range": variant().replace('"yes", 1.0,', '"yes", 5.0,'),
    "missing_step": variant().replace("def step(self, action):", "def act(self, action):"),
    "reset_returns_int": variant(reset="return 7"),
    "empty_observation": variant(reset='return "", {}'),
    "step_four_tuple": variant().replace('return "no", 0.0, False, False, {}', 'return "no", 0.0, False, {}'),
    "info_is_str": variant(reset='return "Double it", "info"'),
    "module_raises": variant(extra="\n\nraise RuntimeError('bad module')\n"),
}
CASES.update({p.stem: p.read_text() for p in sorted(PROGRAMS.glob("game_*.py"))})
#: SPADE aliases its base-class module, so designers may import it
CASES["imports_tool_use_base_env"] = "from tool_use_base_env import ToolUseBaseEnv\n" + \
    (PROGRAMS / "game_00001_003_api_orchestration.py").read_text()


def ours_load(code: str) -> str | None:
    """spade-envs' loading verdict: None when the program loads and honours the interface
    (acceptance's size_syntax, compile and interface stages pass), else the reason."""
    report = AcceptancePipeline(runtime=InProcessRuntime()).run(code, "case.py")
    bad = next((s for s in report.stages if not s.ok and s.name in ("size_syntax", "compile", "interface")), None)
    return None if bad is None else f"{bad.name}: {bad.detail}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_loads_exactly_when_spade_loads(name):
    code = CASES[name]
    try:
        spade_load(code)
        spade_ok, why = True, ""
    except SpadeLoadError as exc:
        spade_ok, why = False, str(exc)
    ours_why = ours_load(code)
    ours_ok = ours_why is None
    assert ours_ok == spade_ok, f"{name}: SPADE {'loads' if spade_ok else 'refuses: ' + why}, spade-envs " \
                                f"{'loads' if ours_ok else 'refuses: ' + ours_why}"


def test_the_expected_cases_load_in_spade():
    loads = set()
    for name, code in CASES.items():
        try:
            spade_load(code)
            loads.add(name)
        except SpadeLoadError:
            pass
    refused = {"missing_step", "reset_returns_int", "empty_observation", "step_four_tuple", "info_is_str", "module_raises"}
    assert loads == set(CASES) - refused


@pytest.mark.parametrize("name", ["plain", "bare_string_reset", "no_solution", "injected_names",
                                  "numpy_and_datetime", "main_block", "big_reward_range"])
def test_what_spade_loads_is_accepted(name):
    report = AcceptancePipeline(runtime=InProcessRuntime()).run(CASES[name], f"{name}.py")
    assert report.accepted, report.summary()
    assert report.verified is (name != "no_solution")


@pytest.mark.parametrize("path", sorted(PROGRAMS.glob("game_*.py")), ids=lambda p: p.stem)
def test_spade_format_programs_are_accepted_sandboxed(path):
    pytest.importorskip("spade_envs.sandbox")
    report = AcceptancePipeline().run(path.read_text(), path.name)
    assert report.accepted, report.summary()
    assert report.verified is ("logical_deduction" not in path.name)


@pytest.mark.parametrize("name", ["bare_string_reset", "no_solution", "injected_names", "big_reward_range",
                                  "numpy_and_datetime", "main_block", "imports_tool_use_base_env"])
def test_spade_tolerances_hold_sandboxed(name):
    pytest.importorskip("spade_envs.sandbox")
    report = AcceptancePipeline().run(CASES[name], f"{name}.py")
    assert report.accepted, report.summary()
