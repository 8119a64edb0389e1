"""SPARE self-play generated game: a JSON plan object {"plan": [...], "final_answer": ...}."""

import json
import random
from typing import Tuple
# Do NOT import ToolUseBaseEnv -- it is pre-loaded in the namespace


class LibraryDueEnv(ToolUseBaseEnv):
    def reset(self, seed=None) -> Tuple[str, dict]:
        rng = random.Random(seed)
        self.turn_count = 0
        self._call_history = []
        titles = rng.sample(["Dune", "Emma", "Ulysses", "Beloved", "Walden", "Hamlet"], 3)
        self._state = {"loans": {t: rng.randint(101, 365) for t in titles}}
        self._title = titles[0]
        self._tools = {
            "days_due": {"description": "Days until a book is due",
                         "parameters": {"type": "object", "properties": {"title": {"type": "string"}},
                                        "required": ["title"]}},
        }
        self._expected_answer = str(self._state["loans"][self._title] * 2)
        return (f"TASK: The fine for {self._title} is 2 coins per day until it is due. Look up the days "
                "and give the total with <answer>N</answer>.", {})

    def tool_days_due(self, title="") -> str:
        days = self._state["loans"].get(title)
        return f"{title} is due in {days} days" if days else f"Error: {title} is not on loan"

    def solution(self) -> str:
        return json.dumps({"plan": [{"name": "days_due", "arguments": {"title": self._title}}],
                           "final_answer": self._expected_answer})
