"""SPADE self-play generated game"""

import random
from typing import Any, Dict, Tuple


class MuseumRoomsEnv(ToolUseBaseEnv):
    """Find the room holding a painting; tools dispatched by its own execute_tool()."""

    def reset(self, seed=None) -> Tuple[str, dict]:
        rng = random.Random(seed)
        self.turn_count = 0
        rooms = rng.sample(["Atrium", "Gallery", "Vault", "Loggia", "Rotunda"], 4)
        paintings = rng.sample(["Harbour at Dusk", "The Orchard", "Blue Mill", "Night Ferry"], 4)
        self._state = {"rooms": dict(zip(rooms, paintings))}
        self._target = rng.choice(paintings)
        self._expected_answer = next(r for r, p in self._state["rooms"].items() if p == self._target)
        self._tools = {
            "list_rooms": {"description": "List the rooms.", "parameters": {"type": "object", "properties": {}}},
            "look": {"description": "What hangs in a room.",
                     "parameters": {"type": "object", "properties": {"room": {"type": "string"}}, "required": ["room"]}},
        }
        return f"Which room holds '{self._target}'? Use the tools, then <answer>room</answer>.", {}

    def execute_tool(self, name: str, arguments: Dict[str, Any]) -> Dict[str, Any]:
        if name == "list_rooms":
            return {"output": ", ".join(sorted(self._state["rooms"])), "returncode": 0}
        if name == "look":
            room = arguments.get("room", "")
            return {"output": self._state["rooms"].get(room, "no such room"), "returncode": 0}
        return {"output": f"Unknown tool '{name}'", "returncode": 1}

    def solution(self) -> str:
        return ('<tool_call>{"name": "list_rooms", "arguments": {}}</tool_call>\n'
                f"<answer>{self._expected_answer}</answer>")

    def _check_answer(self, answer: str) -> bool:
        return answer.strip().lower() == self._expected_answer.lower()
