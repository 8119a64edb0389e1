"""SPADE self-play generated game"""

import enum
import os.path
import random
import re
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Protocol, Tuple, TypedDict

sys.setrecursionlimit(5000)


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"
    BLUE = "blue"


class CrateRow(TypedDict):
    path: str
    color: str


class Scorer(Protocol):
    def score(self, row: CrateRow) -> int: ...


@dataclass
class Depot:
    rows: List[CrateRow] = field(default_factory=list)

    def by_ext(self) -> Dict[str, int]:
        out: Dict[str, int] = {}
        for row in self.rows:
            ext = os.path.splitext(os.path.basename(row["path"]))[1]
            out[ext] = out.get(ext, 0) + 1
        return out


def depth(n: int) -> int:
    return 0 if n == 0 else 1 + depth(n - 1)


class DepotLedgerEnv:
    """Count the crates of one colour whose label ends in a given extension."""

    def __init__(self, max_turns=3, **kwargs):
        self.max_turns = max_turns
        self.turn_count = 0
        self._answer = 0

    def reset(self, seed=None) -> Tuple[str, dict]:
        rng = random.Random(seed)
        self.turn_count = 0
        depot = Depot()
        for i in range(rng.randint(6, 10)):
            path = os.path.join("bay", f"crate{i}" + rng.choice([".tea", ".ink", ".oil"]))
            depot.rows.append(CrateRow(path=path, color=rng.choice(list(Color)).value))
        ext = rng.choice(sorted(depot.by_ext()))
        color = rng.choice(list(Color))
        self._answer = sum(1 for r in depot.rows if r["path"].endswith(ext) and r["color"] == color.value)
        self._answer += depth(1200) - 1200  # deep but bounded recursion (setrecursionlimit above)
        listing = "; ".join(f"{r['path']} ({r['color']})" for r in depot.rows)
        return (f"Crates: {listing}. How many {color.value} crates end in {ext}? Answer with \\boxed{{n}}.", {})

    def solution(self) -> str:
        return str(self._answer)

    def step(self, action: str) -> Tuple[str, float, bool, bool, dict]:
        self.turn_count += 1
        m = re.search(r"\\boxed\{(\d+)\}", action)
        if m and int(m.group(1)) == self._answer:
            return "Ledger balanced.", 1.0, True, False, {}
        return "Recount.", 0.0, False, self.turn_count >= self.max_turns, {}
