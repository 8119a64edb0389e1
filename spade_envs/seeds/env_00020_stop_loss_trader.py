"""Brokerage: apply a stop-loss rule to a portfolio, reinvest the cash, report what is left."""

import json
import random
from spade_answers import loose_answer

#: a loose answer's shape: an amount, cents allowed
AMOUNT = r"-?\d+(?:\.\d+)?"

METADATA = {
    "name": "Stop-Loss Trader",
    "skill": "tool use",
    "domain": "stock trading",
    "description": "Read a portfolio and live quotes, sell positions past a stop-loss, buy as many shares of a target as the cash allows, report the remaining cash.",
    "tags": ["tool-use", "trading", "finance", "multi-turn", "state-changing"],
}

SYMBOLS = ["ACME", "BOLT", "CRUX", "DYNA", "ELMO", "FIZZ", "GRIT", "HALO", "IONX", "JADE", "KILN", "LUMA",
           "MOXY", "NOVA", "ORBT", "PIXL"]


def _usd(cents):
    return f"{cents // 100}.{cents % 100:02d}"

PARAMETERS = {'type': 'object',
 'properties': {'difficulty': {'type': 'integer',
                               'minimum': 0,
                               'maximum': 4,
                               'default': 3,
                               'description': '0: two positions (both past the stop), no commission, the '
                                              'lookups and the orders already made, the upshot stated: read the shares bought '
                                              '(loose answer format); 1: two positions; '
                                              '2: four positions; 3: six positions with a commission (the '
                                              'original); 4: ten positions'},
                'loose_answer': {'type': ['boolean', 'null'],
                                 'default': None,
                                 'description': 'also accept the last number of a reply without <answer> '
                                                '(null: only at difficulty 0)'},
                'num_positions': {'type': ['integer', 'null'],
                                  'minimum': 2,
                                  'maximum': 10,
                                  'default': None,
                                  'description': 'positions held; null: set by difficulty'},
                'max_turns': {'type': 'integer',
                              'minimum': 2,
                              'maximum': 100,
                              'default': 24,
                              'description': "agent steps allowed (never fewer than the reference solution's "
                                             'steps plus one)'}}}

#: difficulty -> positions held
LEVELS = {0: 2, 1: 2, 2: 4, 3: 6, 4: 10}


class StopLossTraderEnv(ToolUseBaseEnv):
    """Money is kept in integer cents; every order pays a flat commission."""

    def __init__(self, max_turns=24, difficulty=3, num_positions=None, loose_answer=None, **kwargs):
        self.difficulty = difficulty
        self._n_positions = LEVELS[difficulty] if num_positions is None else num_positions
        self._loose = difficulty == 0 if loose_answer is None else loose_answer
        self._turns_asked = max_turns
        super().__init__(max_turns=max_turns, **kwargs)

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.turn_count = 0
        self._call_history = []
        symbols = rng.sample(SYMBOLS, self._n_positions + 1)
        threshold = rng.choice([8, 10, 12, 15])
        self._commission = rng.choice([0, 199, 495, 999]) if self.difficulty else 0
        holdings, quotes = {}, {}
        losers = 0
        for i, sym in enumerate(symbols[:-1]):
            cost = rng.randint(1500, 40000)
            # a clear loser, a clear keeper, never a borderline case
            lose = i < 2 or (i > 2 and rng.random() < 0.4)
            pct = rng.randint(threshold + 3, 60) if lose else rng.randint(-40, threshold - 3)
            losers += lose
            holdings[sym] = {"shares": rng.randint(3, 120), "avg_cost": cost}
            quotes[sym] = max(100, cost * (100 - pct) // 100)
        target = symbols[-1]
        quotes[target] = rng.randint(2000, 60000)
        self._target, self._threshold = target, threshold
        self._state = {"cash": rng.randint(0, 500000), "holdings": holdings, "quotes": quotes}
        self._sell = sorted(s for s, h in holdings.items() if quotes[s] * 100 < h["avg_cost"] * (100 - threshold))
        cash = self._state["cash"]
        for s in self._sell:
            cash += holdings[s]["shares"] * quotes[s] - self._commission
        if self.difficulty == 0:  # a short read-off answer: fewer than 100 shares bought
            quotes[target] = max(quotes[target], cash // 99 + 1)
        self._buy = max(0, (cash - self._commission) // quotes[target])
        self._final_cash = cash - self._buy * quotes[target] - (self._commission if self._buy else 0)
        self._expected_answer = _usd(self._final_cash)
        symbol = {"type": "string", "pattern": "^[A-Z]{3,5}$"}
        self._tools = {
            "get_account": {
                "description": "Cash balance (USD) and the commission charged per order.",
                "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
            },
            "get_portfolio": {
                "description": "Positions: symbol, shares, average cost per share (USD).",
                "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
            },
            "get_quote": {
                "description": "Current price per share (USD) of one symbol.",
                "parameters": {"type": "object", "properties": {"symbol": symbol}, "required": ["symbol"],
                               "additionalProperties": False},
            },
            "place_order": {
                "description": "Market order for whole shares; fills at the quoted price, commission is paid from cash.",
                "parameters": {"type": "object",
                               "properties": {"symbol": symbol, "side": {"type": "string", "enum": ["buy", "sell"]},
                                              "quantity": {"type": "integer", "minimum": 1, "maximum": 100000}},
                               "required": ["symbol", "side", "quantity"], "additionalProperties": False},
            },
        }
        obs = (
            f"Client instruction: 'Apply my {threshold}% stop-loss: sell the ENTIRE position in every stock whose "
            f"current price is more than {threshold}% below my average cost. Then use all available cash to buy "
            f"as many whole shares of {target} as possible in a single order.' Execute it and reply with "
            "<answer>cash left in USD, dollars and cents</answer>."
        )
        if self.difficulty == 0:  # a read-off: every call made, its upshot stated, no tool left to call
            # the question becomes the shares bought (an amount with cents would be a 3+ digit leak)
            self._expected_answer = str(self._buy)
            obs = obs.replace("<answer>cash left in USD, dollars and cents</answer>",
                              f"<answer>number of {target} shares bought</answer>")
            obs += self.prefetched_calls() + f"\nAll done: the answer is {self._expected_answer}."
            self._tools = {}
        self.fit_turns_to_solution(self._turns_asked)
        return obs, {}

    def read_loose_answer(self, text):
        """Difficulty 0 also takes a plain final answer."""
        return loose_answer(text, AMOUNT) if self._loose else None

    def tool_get_account(self):
        return f"cash={_usd(self._state['cash'])} USD, commission per order={_usd(self._commission)} USD"

    def tool_get_portfolio(self):
        rows = [f"{s}: {h['shares']} shares, avg_cost={_usd(h['avg_cost'])}" for s, h in sorted(self._state["holdings"].items())]
        return "\n".join(rows) or "No positions."

    def tool_get_quote(self, symbol):
        price = self._state["quotes"].get(symbol)
        return f"{symbol} {_usd(price)}" if price is not None else f"Unknown symbol {symbol}."

    def tool_place_order(self, symbol, side, quantity):
        st = self._state
        price = st["quotes"].get(symbol)
        if price is None:
            return f"Unknown symbol {symbol}."
        if side == "sell":
            held = st["holdings"].get(symbol, {}).get("shares", 0)
            if quantity > held:
                return f"Rejected: you hold {held} shares of {symbol}."
            if st["cash"] + quantity * price < self._commission:
                return "Rejected: not enough cash for the commission."
            st["holdings"][symbol]["shares"] -= quantity
            if st["holdings"][symbol]["shares"] == 0:
                del st["holdings"][symbol]
            st["cash"] += quantity * price - self._commission
        else:
            cost = quantity * price + self._commission
            if cost > st["cash"]:
                return f"Rejected: the order costs {_usd(cost)} but cash is {_usd(st['cash'])}."
            pos = st["holdings"].setdefault(symbol, {"shares": 0, "avg_cost": price})
            pos["avg_cost"] = (pos["avg_cost"] * pos["shares"] + price * quantity) // (pos["shares"] + quantity)
            pos["shares"] += quantity
            st["cash"] -= cost
        return f"Filled: {side} {quantity} {symbol} @ {_usd(price)}."

    def _check_answer(self, answer):
        st = self._state
        sold = all(s not in st["holdings"] for s in self._sell)
        kept = len(st["holdings"]) == self._n_positions - len(self._sell) + (self._buy > 0)
        bought = self._buy == 0 or st["holdings"].get(self._target, {}).get("shares") == self._buy
        return sold and kept and bought and st["cash"] == self._final_cash and super()._check_answer(answer)

    def _incorrect_answer_feedback(self):
        return "Not accepted: the trades or the remaining cash do not match the instruction."

    def solution(self):
        if self.difficulty == 0 and not self._tools:  # the calls were made in reset(): only the answer is left
            return f"<answer>{self._expected_answer}</answer>"
        held = self._state["holdings"]
        calls = [{"name": "get_account", "arguments": {}}, {"name": "get_portfolio", "arguments": {}}]
        calls += [{"name": "get_quote", "arguments": {"symbol": s}} for s in sorted(held)]
        calls += [{"name": "place_order", "arguments": {"symbol": s, "side": "sell", "quantity": held[s]["shares"]}}
                  for s in self._sell]
        calls.append({"name": "get_quote", "arguments": {"symbol": self._target}})
        if self._buy > 0:
            calls.append({"name": "place_order", "arguments": {"symbol": self._target, "side": "buy", "quantity": self._buy}})
        text = "\n".join(f"<tool_call>{json.dumps(c)}</tool_call>" for c in calls)
        return text + f"\n<answer>{self._expected_answer}</answer>"

    def hint(self):
        return ("Compare each quote with its average cost: sell when price < avg_cost x (1 - threshold). "
                "Every order, sell or buy, pays the commission. For the buy, shares = floor((cash - commission) "
                "/ price); the cash left is what remains after that order.")
