"""SPARE self-play generated game: tools read in reset(); __init__ does not reset; the solution is a walkthrough then a boxed answer."""

import random, re
class LookupEnv:
    def __init__(self, max_turns=10, **kwargs):
        self.max_turns = max_turns
    def reset(self, seed=None):
        rng = random.Random(seed)
        self._key = rng.choice(["alpha", "beta", "gamma", "delta"])
        self._val = rng.randint(100, 999)
        self._tools = [{"type": "function", "function": {"name": "peek", "description": "read the value",
                        "parameters": {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}}}]
        return f"Find the value stored under {self._key} with the peek tool, then answer \\boxed{{value}}.", {}
    def get_tools(self):
        return self._tools
    def tool_peek(self, key=""):
        return str(self._val + 1) if key == self._key else "nothing"
    def step(self, action):
        m = re.search(r"\\boxed\{(\d+)\}", action)
        if m and int(m.group(1)) == self._val + 1:
            return "Correct!", 1.0, True, False, {}
        if "<tool_call>" in action:
            return "peeked", 0.0, False, False, {}
        return "Wrong.", 0.0, False, False, {}
    def solution(self):
        return f"peek(key=\"{self._key}\") then \\boxed{{{self._val + 1}}}"
