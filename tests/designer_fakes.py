"""Shared fakes of the designer tests (tests/test_designer_*.py): a valid, original
environment source, broken ones, a scripted backend and a scripted agent."""

from __future__ import annotations

from spade_envs.agents import Agent, Backend, Episode, Generation, PlayTask

VALID_ENV = '''\
"""Orchard tally: weigh fruit crates and report the total."""

import random
import re

METADATA = {"name": "Orchard Tally", "skill": "mathematical reasoning",
            "description": "Add up crate weights after removing the rotten share of each crate.",
            "tags": ["puzzle"]}


class OrchardTallyEnv:
    def __init__(self, max_turns=3, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        rng = random.Random(seed)
        self._crates = [(rng.randint(40, 90), rng.choice([0, 5, 10, 20])) for _ in range(rng.randint(4, 6))]
        self._total = sum(w - w * p // 100 for w, p in self._crates)
        self._turn = 0
        lines = [f"crate {i + 1}: {w} kg, {p}% rotten" for i, (w, p) in enumerate(self._crates)]
        return ("Sum the sound fruit (rotten share rounded down) over all crates:\\n" + "\\n".join(lines)
                + "\\nAnswer with \\\\boxed{kg}."), {}

    def step(self, action):
        self._turn += 1
        m = re.search(r"\\\\boxed\\{\\s*(-?\\d+)\\s*\\}", str(action))
        if m and int(m.group(1)) == self._total:
            return "Correct.", 1.0, True, False, {}
        done = self._turn >= self.max_turns
        return "Not right.", 0.0, False, done, {}

    def solution(self):
        return str(self._total)
'''

#: syntax error
BROKEN_ENV = VALID_ENV.replace("def step(self, action):", "def step(self, action)")


def fenced(code: str, prose: str = "Here is the environment.") -> str:
    return f"{prose}\n\n```python\n{code.rstrip()}\n```\n"


class ScriptedBackend(Backend):
    """Answers each chat call from ``script`` (one list entry per call, the same text for
    every conversation of that call, or a callable ``(conversation) -> text``); records
    every conversation it saw."""

    name = "scripted"

    def __init__(self, script, hint_text: str = "Work through the crates one at a time."):
        self.script = list(script)
        self.calls: list[list[list[dict]]] = []
        self.hint_text = hint_text

    def chat(self, conversations, *, tools=None, max_new_tokens=256, temperature=0.6, seed=None):
        self.calls.append(conversations)
        out = []
        for conv in conversations:
            if "hints for puzzle environments" in conv[0]["content"]:
                text = self.hint_text
            else:
                step = self.script.pop(0) if len(self.script) > 1 else self.script[0]
                text = step(conv) if callable(step) else step
            out.append(Generation(text=text, token_ids=[], logprobs=[], prompt_token_ids=[]))
        return out


class ScriptedAgent(Agent):
    """Returns scripted episode returns: hinted plays take ``hint_returns`` in turn,
    plain plays ``plain_returns`` (each list cycled); records every task."""

    name = "scripted-agent"

    def __init__(self, hint_returns=(1.0,), plain_returns=(0.0,)):
        self.hint_returns, self.plain_returns = list(hint_returns), list(plain_returns)
        self.tasks: list[PlayTask] = []

    def play(self, tasks, *, progress=False):
        out = []
        hi = pl = 0
        for t in tasks:
            self.tasks.append(t)
            if t.hint:
                r = self.hint_returns[hi % len(self.hint_returns)]
                hi += 1
            else:
                r = self.plain_returns[pl % len(self.plain_returns)]
                pl += 1
            out.append(Episode(task=t, messages=[], actions=["x"], rewards=[r], episode_return=r, won=r >= 1.0,
                               turns=1, terminated=True, truncated=False, token_ids=[], logprobs=[], mask=[]))
        return out
