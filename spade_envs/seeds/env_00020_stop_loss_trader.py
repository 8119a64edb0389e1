"""Brokerage: apply a stop-loss rule to a portfolio, reinvest the cash, report what is left."""

import json
import random

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


class StopLossTraderEnv(ToolUseBaseEnv):
    """Money is kept in integer cents; every order pays a flat commission."""

    def __init__(self, max_turns=24, **kwargs):
        super().__init__(max_turns=max_turns, **kwargs)

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.turn_count = 0
        self._call_history = []
        symbols = rng.sample(SYMBOLS, 7)
        threshold = rng.choice([8, 10, 12, 15])
        self._commission = rng.choice([0, 199, 495, 999])
        holdings, quotes = {}, {}
        losers = 0
        for i, sym in enumerate(symbols[:6]):
            cost = rng.randint(1500, 40000)
            # a clear loser, a clear keeper, never a borderline case
            lose = i < 2 or (i > 2 and rng.random() < 0.4)
            pct = rng.randint(threshold + 3, 60) if lose else rng.randint(-40, threshold - 3)
            losers += lose
            holdings[sym] = {"shares": rng.randint(3, 120), "avg_cost": cost}
            quotes[sym] = max(100, cost * (100 - pct) // 100)
        target = symbols[6]
        quotes[target] = rng.randint(2000, 60000)
        self._target, self._threshold = target, threshold
        self._state = {"cash": rng.randint(0, 500000), "holdings": holdings, "quotes": quotes}
        self._sell = sorted(s for s, h in holdings.items() if quotes[s] * 100 < h["avg_cost"] * (100 - threshold))
        cash = self._state["cash"]
        for s in self._sell:
            cash += holdings[s]["shares"] * quotes[s] - self._commission
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
        return obs, {}

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
        kept = len(st["holdings"]) == 6 - len(self._sell) + (self._buy > 0)
        bought = self._buy == 0 or st["holdings"].get(self._target, {}).get("shares") == self._buy
        return sold and kept and bought and st["cash"] == self._final_cash and super()._check_answer(answer)

    def _incorrect_answer_feedback(self):
        return "Not accepted: the trades or the remaining cash do not match the instruction."

    def solution(self):
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
