"""SPADE-format sample programs for pool benchmarks and tests.

Three programs written the way SPADE's designer writes them (a ``*Env`` class with
``reset``/``step``, ``\\boxed{}`` answers or a ``ToolUseBaseEnv`` subclass, ``solution()``),
each rendered from a ``variant`` number that changes its constants and names, so that
every rendering is a distinct source (no cache of a first import can hold it) while
staying the same program structurally (renderings of one template are near-duplicates
of each other, renderings of different templates are not):

- ``tally``: one-answer arithmetic checked with ``math_verify`` (SPADE's habit);
- ``beacons``: a multi-step game, the solution one action per line;
- ``shelves``: a tool-use task (``ToolUseBaseEnv`` without importing it, ``<answer>``).

:func:`sample_program` returns one; :func:`pool_file_text` the text of a saved game file
(SPADE's docstring line first), :func:`pool_file_name` its name
(``game_<rollout:05d>_<index:03d>_<skill slug>.py``).
"""

from __future__ import annotations

#: SPADE's save_game_file header: every saved game file opens with this line
SPADE_HEADER = '"""SPADE self-play generated game"""\n\n'

TEMPLATES = ("tally", "beacons", "shelves")
SKILLS = {"tally": "Mathematical_Reasoning", "beacons": "Spatial_Reasoning", "shelves": "API_Orchestration"}

_TALLY = '''import random
import re
from typing import Tuple
from math_verify import parse, verify


class OrchardTally{v}Env:
    def __init__(self, max_turns=6, **kwargs):
        self.max_turns = max_turns
        self.turn_count = 0
        self._answer = None
        self._task = ""

    def reset(self, seed=None) -> Tuple[str, dict]:
        rng = random.Random(seed)
        self.turn_count = 0
        rows = rng.randint(3, 9)
        per_row = rng.randint(4, 12) + {v} % 5
        spoiled = rng.randint(1, rows)
        self._answer = str(rows * per_row - spoiled * {k})
        self._task = (f"An orchard has {{rows}} rows of {{per_row}} trees. {{spoiled}} rows lost {k} trees each. "
                      "How many trees remain?")
        return (f"{{self._task}} Answer with \\\\boxed{{{{number}}}}.", {{}})

    def solution(self):
        return self._answer

    def step(self, action: str) -> Tuple[str, float, bool, bool, dict]:
        self.turn_count += 1
        match = re.search(r"\\\\boxed\\{{([^}}]*)\\}}", action)
        if match:
            guess = match.group(1).strip()
            if guess == self._answer or verify(parse(guess), parse(self._answer)):
                return ("Correct, the orchard is counted.", 1.0, True, False, {{}})
        done = self.turn_count >= self.max_turns
        return ("Not right. " + self._task, 0.0, False, done, {{}})

    def close(self):
        pass
'''

_BEACONS = '''import random
import re


class BeaconChain{v}Env:
    """Light the beacons of a ridge in the order the signal travels."""

    def __init__(self, max_turns=12, **kwargs):
        self.max_turns = max_turns
        self.order = []
        self.lit = []
        self.turn_count = 0

    def reset(self, seed=None):
        rng = random.Random(seed)
        names = ["Amon", "Eilen", "Nardol", "Erelas", "Min", "Calen", "Halifirien", "Dol{v}"]
        self.order = rng.sample(names, {n})
        self.lit = []
        self.turn_count = 0
        clues = "; ".join(f"{{a}} signals {{b}}" for a, b in zip(self.order, self.order[1:]))
        shuffled = sorted(self.order)
        return (f"Beacons: {{', '.join(shuffled)}}. Signals: {{clues}}. "
                "Light them one per turn with \\\\boxed{{light NAME}}, the first one first.", {{}})

    def solution(self):
        return "\\n".join(f"light {{name}}" for name in self.order)

    def step(self, action):
        self.turn_count += 1
        m = re.search(r"\\\\boxed\\{{\\s*light\\s+([A-Za-z0-9]+)\\s*\\}}", action)
        if not m:
            return ("Use \\\\boxed{{light NAME}}.", 0.0, False, self.turn_count >= self.max_turns, {{}})
        want = self.order[len(self.lit)]
        if m.group(1) != want:
            return (f"{{m.group(1)}} stays dark: it is not next.", 0.0, True, False, {{}})
        self.lit.append(want)
        if len(self.lit) == len(self.order):
            return ("The whole chain is burning!", 1.0, True, False, {{}})
        return (f"{{want}} is lit ({{len(self.lit)}}/{{len(self.order)}}).", 0.0, False,
                self.turn_count >= self.max_turns, {{}})
'''

_SHELVES = '''import random
import json
from typing import Tuple
# Do NOT import ToolUseBaseEnv -- it is pre-loaded in the namespace


class ShelfAudit{v}Env(ToolUseBaseEnv):
    def reset(self, seed=None) -> Tuple[str, dict]:
        self.turn_count = 0
        self._call_history = []
        rng = random.Random(seed)
        shelves = {{f"S{{i}}": {{"bolts": rng.randint(1, 40), "nuts": rng.randint(1, 40) + {v} % 7}} for i in range({n})}}
        self._item = rng.choice(["bolts", "nuts"])
        self._state = {{"shelves": shelves}}
        self._tools = {{
            "list_shelves": {{"description": "List the shelf names",
                              "parameters": {{"type": "object", "properties": {{}}}}}},
            "count": {{"description": "Count one item on one shelf",
                       "parameters": {{"type": "object", "properties": {{"shelf": {{"type": "string"}},
                                                                         "item": {{"type": "string"}}}},
                                      "required": ["shelf", "item"]}}}},
        }}
        self._expected_answer = str(sum(s[self._item] for s in shelves.values()))
        return (f"TASK: How many {{self._item}} are on all shelves together? Use the tools, then reply "
                "<answer>N</answer>.", {{}})

    def tool_list_shelves(self) -> str:
        return json.dumps(sorted(self._state["shelves"]))

    def tool_count(self, shelf="", item="") -> str:
        if shelf not in self._state["shelves"]:
            return f"Error: no shelf {{shelf}}"
        return str(self._state["shelves"][shelf].get(item, 0))

    def solution(self) -> str:
        calls = " ".join(f'{{i + 2}}. count(shelf="{{name}}", item="{{self._item}}") -> ...'
                         for i, name in enumerate(sorted(self._state["shelves"])))
        return f"1. list_shelves() -> ... {{calls}} ANSWER: {{self._expected_answer}}"
'''


def sample_program(template: str, variant: int = 0) -> str:
    """The source of ``template`` (one of :data:`TEMPLATES`) rendered for ``variant``."""
    v = int(variant)
    if template == "tally":
        return _TALLY.format(v=v, k=2 + v % 3)
    if template == "beacons":
        return _BEACONS.format(v=v, n=4 + v % 3)
    if template == "shelves":
        return _SHELVES.format(v=v, n=3 + v % 3)
    raise ValueError(f"unknown template {template!r}; choose one of {', '.join(TEMPLATES)}")


def pool_file_name(rollout: int, index: int, skill: str) -> str:
    """SPADE's saved game file name for a skill (``Spatial_Reasoning`` -> ``spatial_reasoning``)."""
    return f"game_{rollout:05d}_{index:03d}_{skill.lower().replace(' ', '_')}.py"


def pool_file_text(source: str) -> str:
    """A saved game file's text: SPADE's docstring line, a blank line, the program."""
    return SPADE_HEADER + source


def sample_pool(n: int, start: int = 0) -> list[tuple[str, str]]:
    """``n`` distinct ``(file name, file text)`` pairs cycling through the templates."""
    out = []
    for i in range(start, start + n):
        template = TEMPLATES[i % len(TEMPLATES)]
        out.append((pool_file_name(1 + i // 100, i % 100, SKILLS[template]), pool_file_text(sample_program(template, i))))
    return out
