"""SPARE self-play generated game: a tool schema with property-level "required": true."""

import random
from typing import Tuple
# Do NOT import ToolUseBaseEnv -- it is pre-loaded in the namespace


class CityClimateEnv(ToolUseBaseEnv):
    def reset(self, seed=None) -> Tuple[str, dict]:
        rng = random.Random(seed)
        self.turn_count = 0
        self._call_history = []
        cities = rng.sample(["Lyon", "Porto", "Bergen", "Gdansk", "Turin", "Ghent"], 3)
        self._state = {"temps": {c: rng.randint(-20, 35) for c in cities}}
        self._city = cities[0]
        self._tools = {
            "weather": {
                "description": "Today's temperature of a city, in Celsius",
                "parameters": {"type": "object",
                               "properties": {"city": {"type": "string", "required": True},
                                              "unit": {"type": "string", "required": False}}},
            },
        }
        self._expected_answer = str(self._state["temps"][self._city] * 9 // 5 + 32)
        return (f"TASK: What is today's temperature in {self._city} in Fahrenheit (rounded down)? "
                "Look it up, then answer with <answer>N</answer>.", {})

    def tool_weather(self, city="", unit="C") -> str:
        if city not in self._state["temps"]:
            return f"Error: unknown city {city}"
        return f"{city}: {self._state['temps'][city]} C"

    def solution(self) -> str:
        return f'<tool_call>{{"name": "weather", "arguments": {{"city": "{self._city}"}}}}</tool_call>\n' \
               f"<answer>{self._expected_answer}</answer>"
