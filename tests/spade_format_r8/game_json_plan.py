"""SPARE self-play generated game: a warehouse lookup whose solution() is a JSON tool plan."""

import json
import random
from typing import Tuple
# Do NOT import ToolUseBaseEnv -- it is pre-loaded in the namespace


class ShelfAuditEnv(ToolUseBaseEnv):
    def reset(self, seed=None) -> Tuple[str, dict]:
        rng = random.Random(seed)
        self.turn_count = 0
        self._call_history = []
        items = rng.sample(["bolts", "gears", "pulleys", "springs", "valves", "rivets"], 4)
        shelves = rng.sample(["A1", "B2", "C3", "D4", "E5", "F6"], 4)
        self._target = items[0]
        self._state = {
            "where": dict(zip(items, shelves)),
            "counts": {s: rng.randint(101, 999) for s in shelves},
        }
        self._tools = {
            "find_shelf": {"description": "Which shelf holds an item",
                           "parameters": {"type": "object", "properties": {"item": {"type": "string"}},
                                          "required": ["item"]}},
            "count": {"description": "How many units a shelf holds",
                      "parameters": {"type": "object", "properties": {"shelf": {"type": "string"}},
                                     "required": ["shelf"]}},
        }
        self._expected_answer = str(self._state["counts"][self._state["where"][self._target]])
        return (f"TASK: How many units of {self._target} are in stock? Use the tools, then "
                "submit the number with <answer>N</answer>.", {})

    def tool_find_shelf(self, item="") -> str:
        shelf = self._state["where"].get(item)
        return f"{item} are on shelf {shelf}" if shelf else f"Error: no item {item}"

    def tool_count(self, shelf="") -> str:
        if shelf not in self._state["counts"]:
            return f"Error: no shelf {shelf}"
        return f"Shelf {shelf} holds {self._state['counts'][shelf]} units"

    def solution(self) -> str:
        shelf = self._state["where"][self._target]
        return json.dumps([
            {"tool": "find_shelf", "args": {"item": self._target}},
            {"tool": "count", "arguments": {"shelf": shelf}},
            {"answer": self._expected_answer},
        ])
