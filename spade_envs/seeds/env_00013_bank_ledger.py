"""Banking support desk: reconcile a customer's balance from accounts and transactions."""

import json
import random

METADATA = {
    "name": "Bank Ledger",
    "skill": "tool use",
    "domain": "banking",
    "description": "Use banking tools to find a customer's accounts and compute the net balance after pending transfers.",
    "tags": ["tool-use", "banking", "multi-turn"],
}

FIRST = ["Ada", "Bo", "Chen", "Dara", "Emil", "Fatima", "Goran", "Hana", "Ivo", "Jun", "Kemal", "Lea"]
LAST = ["Ng", "Okafor", "Petrov", "Quist", "Rossi", "Sato", "Tamm", "Ueda", "Vargas", "Weiss"]


class BankLedgerEnv(ToolUseBaseEnv):
    def __init__(self, max_turns=16, **kwargs):
        super().__init__(max_turns=max_turns, **kwargs)

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.turn_count = 0
        self._call_history = []
        names = rng.sample([f"{f} {l}" for f in FIRST for l in LAST], 6)
        target_index = rng.randrange(len(names))
        customers = {}
        accounts = {}
        for i, name in enumerate(names):
            cid = f"C{rng.randint(100, 999)}{i}"
            customers[cid] = name
            # the target owns several accounts, so no single tool result is the answer
            for j in range(rng.randint(2, 4) if i == target_index else rng.randint(1, 3)):
                acc = f"AC-{rng.randint(10000, 99999)}"
                while acc in accounts:
                    acc = f"AC-{rng.randint(10000, 99999)}"
                accounts[acc] = {"owner": cid, "balance": rng.randint(50, 5000)}
        pending = []
        for acc in accounts:
            for _ in range(rng.randint(0, 3)):
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
        return obs, {}

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
