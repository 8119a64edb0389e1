"""Helpdesk triage: route a product's open high-priority tickets to its on-call agent, report the impact."""

import json
import random
from spade_answers import loose_answer

METADATA = {
    "name": "Helpdesk Triage",
    "skill": "tool use",
    "domain": "ticketing",
    "description": "Search paginated tickets, find the on-call agent, assign the matching tickets and sum the users they affect.",
    "tags": ["tool-use", "ticketing", "helpdesk", "multi-turn", "state-changing", "pagination"],
}

PRODUCTS = ["billing", "mobile-app", "checkout", "search", "reports", "sso"]
AGENTS = ["ana", "ben", "cleo", "dmitri", "esra", "farid", "gwen", "hiro", "ivy", "jakob", "kofi", "lena"]
SUBJECTS = ["Page does not load", "Wrong total shown", "Login loop", "Export times out", "Crash on start",
            "Missing invoice", "Slow response", "Button does nothing", "Error 500", "Data out of date"]
PRIORITIES = ["low", "normal", "high", "urgent"]
PAGE = 5
TICKET = {"type": "string", "pattern": "^TCK-[0-9]{4}$"}

PARAMETERS = {'type': 'object',
 'properties': {'difficulty': {'type': 'integer',
                               'minimum': 0,
                               'maximum': 4,
                               'default': 3,
                               'description': '0: six tickets, one under the policy with few users, the tool '
                                              'calls already made, the upshot stated: report its users (loose answer format); '
                                              '1: ten tickets, one or two under the policy; 2: twenty '
                                              'tickets; 3: thirty-four tickets over pages, at least three '
                                              'under the policy (the original); 4: eighty tickets, at least '
                                              'six under the policy'},
                'num_tickets': {'type': ['integer', 'null'],
                                'minimum': 6,
                                'maximum': 80,
                                'default': None,
                                'description': 'tickets in the queue; null: set by difficulty'},
                'max_turns': {'type': 'integer',
                              'minimum': 2,
                              'maximum': 100,
                              'default': 40,
                              'description': "agent steps allowed (never fewer than the reference solution's "
                                             'steps plus one)'},
                'loose_answer': {'type': ['boolean', 'null'],
                                 'default': None,
                                 'description': 'also accept the last number of a reply without \\\\boxed{} '
                                                '(null: only at difficulty 0)'}}}

#: difficulty -> (tickets, tickets under the policy (at least; the warm-ups: at most), users per ticket)
LEVELS = {0: (6, 1, (2, 60)), 1: (10, 2, (1, 400)), 2: (20, 2, (1, 400)), 3: (34, 3, (1, 400)), 4: (80, 6, (1, 400))}


class HelpdeskTriageEnv(ToolUseBaseEnv):
    """Win: every open high/urgent ticket of the product is assigned to its on-call agent, nothing else
    changed, and the answer is the total number of affected users of those tickets."""

    def __init__(self, max_turns=40, difficulty=3, num_tickets=None, loose_answer=None, **kwargs):
        self.difficulty = difficulty
        tickets, self._least_targets, self._users = LEVELS[difficulty]
        self._n_tickets = tickets if num_tickets is None else num_tickets
        self._loose = difficulty == 0 if loose_answer is None else loose_answer
        self._turns_asked = max_turns
        super().__init__(max_turns=max_turns, **kwargs)

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.turn_count = 0
        self._call_history = []
        products = rng.sample(PRODUCTS, 4)
        product = products[0]
        agents = {}
        pool = rng.sample(AGENTS, 8)
        for i, p in enumerate(products):
            team = pool[2 * i: 2 * i + 2]
            oncall = rng.choice(team)
            for a in team:
                agents[a] = {"team": p, "on_call": a == oncall}
        tickets = {}
        numbers = rng.sample(range(1000, 10000), self._n_tickets)
        for n in numbers:
            p = product if rng.random() < 0.45 else rng.choice(products[1:])
            tickets[f"TCK-{n}"] = {
                "product": p, "priority": rng.choice(PRIORITIES), "status": rng.choice(["open", "open", "pending", "closed"]),
                "subject": rng.choice(SUBJECTS), "users_affected": rng.randint(*self._users),
                "assignee": rng.choice([None, None] + [a for a, v in agents.items() if v["team"] == p]),
            }
        if not any(v["product"] == product for v in tickets.values()):  # small queues: one ticket at least
            tickets[min(tickets)]["product"] = product
        targets = sorted(t for t, v in tickets.items() if v["product"] == product and v["status"] == "open"
                         and v["priority"] in ("high", "urgent"))
        extra = [t for t, v in tickets.items() if v["product"] == product and t not in targets]
        while len(targets) > self._least_targets and self.difficulty < 2:  # the warm-ups: few policy tickets
            tickets[targets.pop()]["status"] = "closed"
        while len(targets) < self._least_targets and extra:  # make sure the task has substance
            t = extra.pop()
            tickets[t].update(status="open", priority=rng.choice(["high", "urgent"]))
            targets = sorted(targets + [t])
        self._product = product
        self._oncall = [a for a, v in agents.items() if v["team"] == product and v["on_call"]][0]
        self._targets = targets
        self._original = json.dumps(tickets, sort_keys=True)
        self._state = {"agents": agents, "tickets": tickets}
        self._expected_answer = str(sum(tickets[t]["users_affected"] for t in targets))
        self._tools = {
            "search_tickets": {
                "description": f"Ticket ids with status and priority for a product, {PAGE} per page, newest id first.",
                "parameters": {"type": "object",
                               "properties": {"product": {"type": "string", "enum": sorted(products)},
                                              "status": {"type": "string", "enum": ["open", "pending", "closed", "any"]},
                                              "page": {"type": "integer", "minimum": 1}},
                               "required": ["product", "page"], "additionalProperties": False},
            },
            "get_ticket": {
                "description": "Full ticket: subject, product, priority, status, users affected, assignee.",
                "parameters": {"type": "object", "properties": {"ticket_id": TICKET}, "required": ["ticket_id"],
                               "additionalProperties": False},
            },
            "list_agents": {
                "description": "Support agents of a product team and who is on call this week.",
                "parameters": {"type": "object", "properties": {"team": {"type": "string", "enum": sorted(products)}},
                               "required": ["team"], "additionalProperties": False},
            },
            "assign_ticket": {
                "description": "Assign a ticket to an agent (replaces the current assignee).",
                "parameters": {"type": "object",
                               "properties": {"ticket_id": TICKET, "agent": {"type": "string", "pattern": "^[a-z]{2,10}$"}},
                               "required": ["ticket_id", "agent"], "additionalProperties": False},
            },
            "close_ticket": {
                "description": "Close a ticket with a resolution.",
                "parameters": {"type": "object",
                               "properties": {"ticket_id": TICKET,
                                              "resolution": {"type": "string", "enum": ["fixed", "duplicate", "wont_fix"]}},
                               "required": ["ticket_id", "resolution"], "additionalProperties": False},
            },
        }
        obs = (
            f"Escalation policy for '{product}': every OPEN ticket of priority high or urgent must be assigned "
            "to the team's on-call agent (leave all other tickets untouched). Do it, then reply with "
            "<answer>total number of affected users across the tickets that fall under the policy</answer>."
        )
        if self.difficulty == 0:  # a read-off: every call made, its upshot stated, no tool left to call
            obs += self.prefetched_calls() + f"\nAll done: the answer is {self._expected_answer}."
            self._tools = {}
        self.fit_turns_to_solution(self._turns_asked)
        return obs, {}

    def read_loose_answer(self, text):
        """Difficulty 0 also takes a plain final answer."""
        return loose_answer(text) if self._loose else None

    def tool_search_tickets(self, product, page, status="any"):
        rows = sorted((t for t, v in self._state["tickets"].items()
                       if v["product"] == product and status in ("any", v["status"])), reverse=True)
        pages = max(1, (len(rows) + PAGE - 1) // PAGE)
        if page > pages:
            return f"Only {pages} page(s)."
        chunk = rows[(page - 1) * PAGE: page * PAGE]
        lines = [f"{t} [{self._state['tickets'][t]['status']}, {self._state['tickets'][t]['priority']}]" for t in chunk]
        return f"page {page}/{pages}\n" + ("\n".join(lines) or "no tickets")

    def tool_get_ticket(self, ticket_id):
        v = self._state["tickets"].get(ticket_id)
        if v is None:
            return f"No ticket {ticket_id}."
        return (f"{ticket_id}: '{v['subject']}' product={v['product']} priority={v['priority']} status={v['status']} "
                f"users_affected={v['users_affected']} assignee={v['assignee'] or 'unassigned'}")

    def tool_list_agents(self, team):
        rows = [f"{a}{' (on call)' if v['on_call'] else ''}" for a, v in sorted(self._state["agents"].items()) if v["team"] == team]
        return ", ".join(rows)

    def tool_assign_ticket(self, ticket_id, agent):
        v = self._state["tickets"].get(ticket_id)
        if v is None:
            return f"No ticket {ticket_id}."
        if agent not in self._state["agents"]:
            return f"No agent {agent}."
        v["assignee"] = agent
        return f"{ticket_id} assigned to {agent}."

    def tool_close_ticket(self, ticket_id, resolution):
        v = self._state["tickets"].get(ticket_id)
        if v is None:
            return f"No ticket {ticket_id}."
        v["status"] = "closed"
        return f"{ticket_id} closed ({resolution})."

    def _check_answer(self, answer):
        want = json.loads(self._original)
        for t in self._targets:
            want[t]["assignee"] = self._oncall
        return self._state["tickets"] == want and super()._check_answer(answer)

    def _incorrect_answer_feedback(self):
        return "Not accepted: the assignments or the total are not right."

    def solution(self):
        if self.difficulty == 0 and not self._tools:  # the calls were made in reset(): only the answer is left
            return f"<answer>{self._expected_answer}</answer>"
        n = len([t for t, v in self._state["tickets"].items() if v["product"] == self._product and v["status"] == "open"])
        calls = [{"name": "list_agents", "arguments": {"team": self._product}}]
        calls += [{"name": "search_tickets", "arguments": {"product": self._product, "status": "open", "page": p}}
                  for p in range(1, max(1, (n + PAGE - 1) // PAGE) + 1)]
        for t in self._targets:
            calls.append({"name": "get_ticket", "arguments": {"ticket_id": t}})
            calls.append({"name": "assign_ticket", "arguments": {"ticket_id": t, "agent": self._oncall}})
        text = "\n".join(f"<tool_call>{json.dumps(c)}</tool_call>" for c in calls)
        return text + f"\n<answer>{self._expected_answer}</answer>"

    def hint(self):
        return ("Filter the search by status 'open' and read every page; 'pending' is not open. The on-call "
                "agent is marked in list_agents for the product's team. users_affected is only on the ticket "
                "itself, so open each matching ticket before adding them up.")
