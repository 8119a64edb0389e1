"""Warehouse operations: transfer just enough stock so one site can ship an order."""

import json
import random
from spade_answers import loose_answer

METADATA = {
    "name": "Warehouse Restock",
    "skill": "tool use",
    "domain": "inventory",
    "description": "Read an order and stock levels across warehouses, transfer exactly the shortfall to the shipping site, report the units moved.",
    "tags": ["tool-use", "inventory", "warehouse", "multi-turn", "state-changing"],
}

SITES = ["BER", "LYS", "OSL", "MAD", "GDN", "BRQ", "TLL", "RIX"]
PRODUCTS = ["hex bolt M8", "steel hinge", "cable tie 30cm", "LED strip 5m", "drill bit 6mm", "wall plug",
            "pipe clamp", "wood screw 4x40", "duct tape", "washer M10", "spring latch", "glue cartridge"]

PARAMETERS = {'type': 'object',
 'properties': {'difficulty': {'type': 'integer',
                               'minimum': 0,
                               'maximum': 4,
                               'default': 3,
                               'description': '0: two warehouses, a one-line order short of stock, the tool '
                                              'calls already made, the upshot stated: the units moved (loose answer format); 1: '
                                              'three warehouses, two lines, one short; 2: three warehouses, '
                                              'three lines, one or two short; 3: four warehouses, four '
                                              'lines, two or three short (the original); 4: six warehouses, '
                                              'eight lines, five to seven short'},
                'num_lines': {'type': ['integer', 'null'],
                              'minimum': 1,
                              'maximum': 8,
                              'default': None,
                              'description': 'order lines (each may need a transfer); null: set by '
                                             'difficulty'},
                'max_turns': {'type': 'integer',
                              'minimum': 2,
                              'maximum': 100,
                              'default': 16,
                              'description': "agent steps allowed (never fewer than the reference solution's "
                                             'steps plus one)'},
                'loose_answer': {'type': ['boolean', 'null'],
                                 'default': None,
                                 'description': 'also accept the last number of a reply without \\\\boxed{} '
                                                '(null: only at difficulty 0)'}}}

#: difficulty -> (warehouses, products, order lines, short lines, quantities ordered)
LEVELS = {
    0: (2, 1, 1, (1, 1), (8, 40)),
    1: (3, 3, 2, (1, 1), (20, 150)),
    2: (3, 5, 3, (1, 2), (20, 150)),
    3: (4, 7, 4, (2, 3), (20, 150)),
    4: (6, 10, 8, (5, 7), (20, 150)),
}


class WarehouseRestockEnv(ToolUseBaseEnv):
    """Win: the shipping site holds every order line, and the answer is the (minimal) units transferred."""

    def __init__(self, max_turns=16, difficulty=3, num_lines=None, loose_answer=None, **kwargs):
        self.difficulty = difficulty
        self._n_sites, self._n_products, lines, short, self._qty = LEVELS[difficulty]
        self._n_lines = lines if num_lines is None else num_lines
        self._n_products = max(self._n_products, self._n_lines)
        self._short = short if num_lines is None else (1, max(1, num_lines - 1))
        self._loose = difficulty == 0 if loose_answer is None else loose_answer
        self._turns_asked = max_turns
        super().__init__(max_turns=max_turns, **kwargs)

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.turn_count = 0
        self._call_history = []
        sites = rng.sample(SITES, self._n_sites)
        ship = sites[0]
        skus = {}
        for name in rng.sample(PRODUCTS, self._n_products):
            sku = f"SKU-{rng.randint(10000, 99999)}"
            while sku in skus:
                sku = f"SKU-{rng.randint(10000, 99999)}"
            skus[sku] = name
        order_skus = rng.sample(sorted(skus), self._n_lines)
        lines = {}
        stock = {}
        short_lines = rng.sample(order_skus, min(self._n_lines, rng.randint(*self._short)))
        for sku in skus:
            stock[sku] = {s: rng.randint(0, 120) for s in sites}
        for sku in order_skus:
            qty = rng.randint(*self._qty)
            lines[sku] = qty
            if sku in short_lines:
                stock[sku][ship] = rng.randint(0, qty - 5)
                others = [s for s in sites if s != ship]
                while sum(stock[sku][s] for s in others) < qty - stock[sku][ship]:
                    stock[sku][rng.choice(others)] += rng.randint(10, 60)
            else:
                stock[sku][ship] = qty + rng.randint(0, 40)
        order_id = f"ORD-{rng.randint(100000, 999999)}"
        self._ship, self._order, self._lines = ship, order_id, lines
        self._state = {"skus": skus, "stock": stock, "orders": {order_id: lines}, "transferred": 0}
        self._expected_answer = str(sum(max(0, q - stock[s][ship]) for s, q in lines.items()))
        self._final_stock = json.loads(json.dumps(stock))
        for m in self._plan():
            self._final_stock[m["sku"]][m["from_warehouse"]] -= m["quantity"]
            self._final_stock[m["sku"]][m["to_warehouse"]] += m["quantity"]
        site = {"type": "string", "enum": sites}
        sku_schema = {"type": "string", "pattern": "^SKU-[0-9]{5}$"}
        self._tools = {
            "list_warehouses": {
                "description": "The warehouse codes of the network.",
                "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
            },
            "get_order": {
                "description": "Order lines: SKU and quantity to ship.",
                "parameters": {"type": "object", "properties": {"order_id": {"type": "string", "pattern": "^ORD-[0-9]{6}$"}},
                               "required": ["order_id"], "additionalProperties": False},
            },
            "get_stock": {
                "description": "Units of one SKU on hand in every warehouse.",
                "parameters": {"type": "object", "properties": {"sku": sku_schema}, "required": ["sku"],
                               "additionalProperties": False},
            },
            "transfer_stock": {
                "description": "Move units of one SKU from one warehouse to another.",
                "parameters": {
                    "type": "object",
                    "properties": {"sku": sku_schema, "from_warehouse": site, "to_warehouse": site,
                                   "quantity": {"type": "integer", "minimum": 1, "maximum": 500}},
                    "required": ["sku", "from_warehouse", "to_warehouse", "quantity"],
                    "additionalProperties": False,
                },
            },
        }
        obs = (
            f"Order {order_id} must ship tomorrow from warehouse {ship}. Transfer stock from the other "
            f"warehouses so that {ship} holds at least the ordered quantity of every line, moving no more "
            "units than necessary. For each item, draw first from the warehouse that holds the most of it "
            "(alphabetically first on a tie), then from the next. Then reply with "
            "<answer>total units transferred</answer>."
        )
        if self.difficulty == 0:  # a read-off: every call made, its upshot stated, no tool left to call
            obs += self.prefetched_calls() + f"\nAll done: the answer is {self._expected_answer}."
            self._tools = {}
        self.fit_turns_to_solution(self._turns_asked)
        return obs, {}

    def read_loose_answer(self, text):
        """Difficulty 0 also takes a plain final answer."""
        return loose_answer(text) if self._loose else None

    def tool_list_warehouses(self):
        return ", ".join(sorted(next(iter(self._state["stock"].values()))))

    def tool_get_order(self, order_id):
        lines = self._state["orders"].get(order_id)
        if lines is None:
            return f"No order {order_id}."
        return "\n".join(f"{sku} ({self._state['skus'][sku]}): {q} units" for sku, q in lines.items())

    def tool_get_stock(self, sku):
        levels = self._state["stock"].get(sku)
        if levels is None:
            return f"Unknown SKU {sku}."
        return ", ".join(f"{s}={n}" for s, n in sorted(levels.items()))

    def tool_transfer_stock(self, sku, from_warehouse, to_warehouse, quantity):
        levels = self._state["stock"].get(sku)
        if levels is None:
            return f"Unknown SKU {sku}."
        if from_warehouse == to_warehouse:
            return "Source and destination are the same warehouse."
        if levels[from_warehouse] < quantity:
            return f"Only {levels[from_warehouse]} units of {sku} at {from_warehouse}; nothing moved."
        levels[from_warehouse] -= quantity
        levels[to_warehouse] += quantity
        self._state["transferred"] += quantity
        return f"Moved {quantity} x {sku} {from_warehouse} -> {to_warehouse}."

    def _check_answer(self, answer):
        as_planned = self._state["stock"] == self._final_stock
        minimal = str(self._state["transferred"]) == self._expected_answer
        return as_planned and minimal and super()._check_answer(answer)

    def _incorrect_answer_feedback(self):
        return "Not accepted: the order is not covered as instructed, too many units moved, or the total is wrong."

    def _plan(self):
        moves = []
        for sku, qty in self._lines.items():
            levels = dict(self._state["stock"][sku])
            need = qty - levels[self._ship]
            for site in sorted((s for s in levels if s != self._ship), key=lambda s: (-levels[s], s)):
                if need <= 0:
                    break
                take = min(need, levels[site])
                if take > 0:
                    moves.append({"sku": sku, "from_warehouse": site, "to_warehouse": self._ship, "quantity": take})
                    need -= take
        return moves

    def solution(self):
        if self.difficulty == 0 and not self._tools:  # the calls were made in reset(): only the answer is left
            return f"<answer>{self._expected_answer}</answer>"
        calls = [{"name": "get_order", "arguments": {"order_id": self._order}}]
        calls += [{"name": "get_stock", "arguments": {"sku": sku}} for sku in self._lines]
        calls += [{"name": "transfer_stock", "arguments": m} for m in self._plan()]
        text = "\n".join(f"<tool_call>{json.dumps(c)}</tool_call>" for c in calls)
        return text + f"\n<answer>{self._expected_answer}</answer>"

    def hint(self):
        return ("For each order line the shortfall is ordered quantity minus what the shipping site holds "
                "(zero if it already has enough). Pull exactly the shortfall, splitting it across warehouses "
                "if one cannot cover it, and add the shortfalls up.")
