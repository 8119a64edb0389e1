"""SPADE self-play generated game"""

import json
import random
from typing import Tuple


class ParcelDepotEnv(ToolUseBaseEnv):
    """Find a parcel's shelf; solution() is an indented JSON plan followed by 'Final answer:'."""

    def reset(self, seed=None) -> Tuple[str, dict]:
        rng = random.Random(seed)
        self.turn_count = 0
        shelves = {f"S{i}": rng.sample(["lamp", "kettle", "drum", "globe", "vase", "clock"], 2) for i in range(1, 4)}
        self._state = {"shelves": shelves}
        item = rng.choice([x for items in shelves.values() for x in items])
        self._item = item
        self._expected_answer = next(s for s, items in shelves.items() if item in items)
        self._tools = {
            "shelf_contents": {"description": "Items on a shelf.",
                               "parameters": {"type": "object", "properties": {"shelf": {"type": "string"}},
                                              "required": ["shelf"]}},
        }
        return f"Which shelf (S1-S3) holds the {item}? Use tools, then <answer>shelf</answer>.", {}

    def tool_shelf_contents(self, shelf: str) -> str:
        return ", ".join(self._state["shelves"].get(shelf, [])) or "empty"

    def solution(self) -> str:
        plan = [{"name": "shelf_contents", "arguments": {"shelf": s}} for s in sorted(self._state["shelves"])]
        return json.dumps(plan, indent=2) + f"\nFinal answer: {self._expected_answer}"

    def _check_answer(self, answer: str) -> bool:
        looked = any(call["name"] == "shelf_contents" for call in self._call_history)
        return looked and answer.strip().upper() == self._expected_answer
