"""Banking support desk: reconcile a customer's balance from accounts and transactions."""

import json
import random
from spade_answers import loose_answer

METADATA = {
    "name": "Bank Ledger",
    "skill": "tool use",
    "domain": "banking",
    "description": "Use banking tools to find a customer's accounts and compute the net balance after pending transfers.",
    "tags": ["tool-use", "banking", "multi-turn"],
}

FIRST = ["Ada", "Bo", "Chen", "Dara", "Emil", "Fatima", "Goran", "Hana", "Ivo", "Jun", "Kemal", "Lea"]
LAST = ["Ng", "Okafor", "Petrov", "Quist", "Rossi", "Sato", "Tamm", "Ueda", "Vargas", "Weiss"]


PARAMETERS = {'type': 'object',
 'properties': {'difficulty': {'type': 'integer',
                               'minimum': 0,
                               'maximum': 4,
                               'default': 3,
                               'description': '0: one customer with one account and no pending amounts, the '
                                              'lookups already made, the upshot stated: read the balance (loose answer format); '
                                              '1: two customers, one account each (three lookups); 2: four '
                                              'customers, up to two accounts and one pending amount each; 3: '
                                              'six customers, the target owns two to four accounts (the '
                                              'original); 4: ten customers, the target owns four to seven '
                                              'accounts with up to five pending amounts each'},
                'num_customers': {'type': ['integer', 'null'],
                                  'minimum': 1,
                                  'maximum': 10,
                                  'default': None,
                                  'description': 'customers in the bank; null: set by difficulty'},
                'max_accounts': {'type': ['integer', 'null'],
                                 'minimum': 1,
                                 'maximum': 8,
                                 'default': None,
                                 'description': 'most accounts the asking customer owns; null: set by '
                                                'difficulty'},
                'loose_answer': {'type': ['boolean', 'null'],
                                 'default': None,
                                 'description': 'also accept the last number of a reply without \\\\boxed{} '
                                                '(null: only at difficulty 0)'},
                'max_turns': {'type': 'integer', 'minimum': 2, 'maximum': 100, 'default': 16,
                      'description': "agent steps allowed (never fewer than the reference solution's steps plus one)"}}}

#: difficulty -> (customers, the asker's accounts, others' accounts, pending amounts per account, balances)
LEVELS = {
    0: (1, (1, 1), (1, 1), (0, 0), (2, 99)),
    1: (2, (1, 1), (1, 1), (0, 0), (50, 5000)),
    2: (4, (1, 2), (1, 2), (0, 1), (50, 5000)),
    3: (6, (2, 4), (1, 3), (0, 3), (50, 5000)),
    4: (10, (4, 7), (1, 3), (0, 5), (50, 5000)),
}


class BankLedgerEnv(ToolUseBaseEnv):
    def __init__(self, max_turns=16, difficulty=3, num_customers=None, max_accounts=None, loose_answer=None, **kwargs):
        self.difficulty = difficulty
        customers, target, other, pending, balance = LEVELS[difficulty]
        self._n_customers = customers if num_customers is None else num_customers
        self._target_accounts = target if max_accounts is None else (min(target[0], max_accounts), max_accounts)
        self._other_accounts, self._pending_range, self._balance_range = other, pending, balance
        self._loose = difficulty == 0 if loose_answer is None else loose_answer
        self._turns_asked = max_turns
        super().__init__(max_turns=max_turns, **kwargs)

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.turn_count = 0
        self._call_history = []
        names = rng.sample([f"{f} {l}" for f in FIRST for l in LAST], self._n_customers)
        target_index = rng.randrange(len(names))
        customers = {}
        accounts = {}
        for i, name in enumerate(names):
            cid = f"C{rng.randint(100, 999)}{i}"
            customers[cid] = name
            # the target owns several accounts, so no single tool result is the answer
            for j in range(rng.randint(*self._target_accounts) if i == target_index else rng.randint(*self._other_accounts)):
                acc = f"AC-{rng.randint(10000, 99999)}"
                while acc in accounts:
                    acc = f"AC-{rng.randint(10000, 99999)}"
                accounts[acc] = {"owner": cid, "balance": rng.randint(*self._balance_range)}
        pending = []
        for acc in accounts:
            for _ in range(rng.randint(*self._pending_range)):
                amt = rng.randint(5, 400)
                pending.append({"account": acc, "amount": amt if rng.random() < 0.4 else -amt})
        target_cid = list(customers)[target_index]
        self._state = {"customers": customers, "accounts": accounts, "pending": pending}
        self._target = customers[target_cid]
        total = 0
        for acc, info in accounts.items():
            if info["owner"] == target_cid:
                total += info["balance"] + sum(p["amount"] for p in pending if p["account"] == acc)
        self._expected_answer = str(total)
        self._tools = {
            "find_customer": {
                "description": "Look up a customer id by full name.",
                "parameters": {
                    "type": "object",
                    "properties": {"name": {"type": "string", "minLength": 3, "description": "Full name, e.g. 'Ada Ng'"}},
                    "required": ["name"],
                },
            },
            "list_accounts": {
                "description": "List the account numbers owned by a customer id.",
                "parameters": {
                    "type": "object",
                    "properties": {"customer_id": {"type": "string", "pattern": "^C[0-9]{4}$"}},
                    "required": ["customer_id"],
                },
            },
            "get_balance": {
                "description": "Posted balance of one account, in whole dollars.",
                "parameters": {
                    "type": "object",
                    "properties": {"account": {"type": "string", "pattern": "^AC-[0-9]{5}$"}},
                    "required": ["account"],
                },
            },
            "pending_transactions": {
                "description": "Pending (not yet posted) signed amounts of one account.",
                "parameters": {
                    "type": "object",
                    "properties": {"account": {"type": "string", "pattern": "^AC-[0-9]{5}$"}},
                    "required": ["account"],
                },
            },
        }
        obs = (
            f"Customer {self._target} asks: what will my total balance across all my accounts be "
            "once every pending transaction posts? Use the tools, then reply with "
            "<answer>amount in dollars</answer>."
        )
        if self.difficulty == 0:  # a read-off: every call made, its upshot stated, no tool left to call
            obs += self.prefetched_calls() + f"\nAll done: the answer is {self._expected_answer}."
            self._tools = {}
        self.fit_turns_to_solution(self._turns_asked)
        return obs, {}

    def read_loose_answer(self, text):
        """Difficulty 0 also takes a plain final answer."""
        return loose_answer(text) if self._loose else None

    def tool_find_customer(self, name):
        for cid, n in self._state["customers"].items():
            if n.lower() == name.strip().lower():
                return cid
        return "No customer with that name."

    def tool_list_accounts(self, customer_id):
        accs = [a for a, i in self._state["accounts"].items() if i["owner"] == customer_id]
        return ", ".join(sorted(accs)) if accs else "No accounts for that customer id."

    def tool_get_balance(self, account):
        info = self._state["accounts"].get(account)
        return f"{info['balance']}" if info else "Unknown account."

    def tool_pending_transactions(self, account):
        if account not in self._state["accounts"]:
            return "Unknown account."
        amounts = [p["amount"] for p in self._state["pending"] if p["account"] == account]
        return ", ".join(f"{a:+d}" for a in amounts) if amounts else "none"

    def solution(self):
        if self.difficulty == 0 and not self._tools:  # the calls were made in reset(): only the answer is left
            return f"<answer>{self._expected_answer}</answer>"
        cid = [c for c, n in self._state["customers"].items() if n == self._target][0]
        calls = [{"name": "find_customer", "arguments": {"name": self._target}},
                 {"name": "list_accounts", "arguments": {"customer_id": cid}}]
        for acc in sorted(a for a, i in self._state["accounts"].items() if i["owner"] == cid):
            calls.append({"name": "get_balance", "arguments": {"account": acc}})
            calls.append({"name": "pending_transactions", "arguments": {"account": acc}})
        text = "\n".join(f"<tool_call>{json.dumps(c)}</tool_call>" for c in calls)
        return text + f"\n<answer>{self._expected_answer}</answer>"

    def hint(self):
        return ("A customer may own several accounts: find the id by name, list every account, and for "
                "each add the posted balance and all of its pending amounts (they are signed).")
