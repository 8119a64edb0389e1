"""Team messaging: find the most active poster of a channel, thank them, report their employee number."""

import json
import random
from spade_answers import loose_answer

METADATA = {
    "name": "Team Chat",
    "skill": "tool use",
    "domain": "messaging",
    "description": "Page through a chat channel, count messages per author, direct-message the top poster and look up their profile.",
    "tags": ["tool-use", "messaging", "multi-turn", "state-changing", "pagination"],
}

HANDLES = ["amara", "bjorn", "chidi", "dalia", "eitan", "freya", "goro", "hedda", "ines", "jomo",
           "kira", "lars", "mei", "nils", "odile", "pavel", "quinn", "rhea", "sven", "tariq"]
CHANNELS = ["general", "incidents", "release", "design", "random", "oncall", "frontend", "data"]
SNIPPETS = ["pushed a fix for the flaky test", "can someone review my PR?", "deploy is green",
            "rolling back, latency spiked", "lunch at noon?", "updated the runbook", "the dashboard is slow again",
            "closing the ticket", "new build is on staging", "who owns the cron job?", "retro notes are up",
            "bumping the dependency", "metrics look normal", "pairing on the parser after standup"]
PAGE = 6

PARAMETERS = {'type': 'object',
 'properties': {'difficulty': {'type': 'integer',
                               'minimum': 0,
                               'maximum': 4,
                               'default': 3,
                               'description': '0: two people, one short channel, the tool calls (thanks '
                                              'included) already made, the upshot stated: read the employee number (loose '
                                              'answer format); 1: three people, one channel of one page; 2: '
                                              'five people, two channels; 3: seven people, four channels of '
                                              'several pages (the original); 4: twelve people, eight '
                                              'channels, up to twelve messages each'},
                'num_people': {'type': ['integer', 'null'],
                               'minimum': 2,
                               'maximum': 12,
                               'default': None,
                               'description': 'people posting; null: set by difficulty'},
                'num_channels': {'type': ['integer', 'null'],
                                 'minimum': 1,
                                 'maximum': 8,
                                 'default': None,
                                 'description': 'channels; null: set by difficulty'},
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

#: difficulty -> (people, channels, most posts per person, least posts of the top poster, more than this many
#: full pages per channel, employee numbers)
LEVELS = {
    0: (2, 1, 3, 2, 0, (2, 99)),
    1: (3, 1, 3, 2, 0, (10000, 99999)),
    2: (5, 2, 5, 3, 1, (10000, 99999)),
    3: (7, 4, 7, 3, 2, (10000, 99999)),
    4: (12, 8, 12, 4, 4, (10000, 99999)),
}


class TeamChatEnv(ToolUseBaseEnv):
    """The answer is the employee number of the channel's top poster; a thank-you DM must be sent."""

    def __init__(self, max_turns=16, difficulty=3, num_people=None, num_channels=None, loose_answer=None, **kwargs):
        self.difficulty = difficulty
        people, channels, self._most_posts, self._least_top, self._pages, self._numbers = LEVELS[difficulty]
        self._n_people = people if num_people is None else num_people
        self._n_channels = channels if num_channels is None else num_channels
        self._loose = difficulty == 0 if loose_answer is None else loose_answer
        self._turns_asked = max_turns
        super().__init__(max_turns=max_turns, **kwargs)

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.turn_count = 0
        self._call_history = []
        handles = rng.sample(HANDLES, self._n_people)
        channels = rng.sample(CHANNELS, self._n_channels)
        users = {h: {"name": h.capitalize() + " " + rng.choice("BCDFGHKLMNPRSTVW") + ".",
                     "employee_no": rng.randint(*self._numbers), "timezone": rng.choice(["UTC", "CET", "EST", "JST"])}
                 for h in handles}
        target_channel = channels[0]
        history = {}
        for ch in channels:
            while True:
                counts = [rng.randint(1, self._most_posts) for _ in handles]
                top = max(counts)
                if counts.count(top) == 1 and top >= self._least_top and sum(counts) > self._pages * PAGE:
                    break
            authors = [h for h, c in zip(handles, counts) for _ in range(c)]
            rng.shuffle(authors)
            minute = rng.randint(0, 120)
            msgs = []
            for a in authors:
                minute += rng.randint(1, 17)
                msgs.append({"time": f"{8 + minute // 60:02d}:{minute % 60:02d}", "author": a,
                             "text": rng.choice(SNIPPETS)})
            history[ch] = msgs
        counts = {}
        for m in history[target_channel]:
            counts[m["author"]] = counts.get(m["author"], 0) + 1
        self._top = max(counts, key=lambda h: counts[h])
        self._channel = target_channel
        self._state = {"users": users, "channels": history, "sent": []}
        self._expected_answer = str(users[self._top]["employee_no"])
        handle = {"type": "string", "pattern": "^@[a-z]{2,12}$", "description": "A user handle such as '@mei'."}
        self._tools = {
            "list_channels": {
                "description": "List the channels with their number of messages.",
                "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
            },
            "read_channel": {
                "description": f"Read one page ({PAGE} messages, oldest first) of a channel.",
                "parameters": {
                    "type": "object",
                    "properties": {"channel": {"type": "string", "enum": ["#" + c for c in channels]},
                                   "page": {"type": "integer", "minimum": 1, "maximum": 50}},
                    "required": ["channel", "page"],
                    "additionalProperties": False,
                },
            },
            "get_user": {
                "description": "Profile of a user: display name, employee number, time zone.",
                "parameters": {"type": "object", "properties": {"handle": handle}, "required": ["handle"],
                               "additionalProperties": False},
            },
            "send_message": {
                "description": "Send a direct message to a user handle or a post to a '#channel'.",
                "parameters": {
                    "type": "object",
                    "properties": {"to": {"type": "string", "pattern": "^(@[a-z]{2,12}|#[a-z]{2,12})$"},
                                   "text": {"type": "string", "minLength": 1, "maxLength": 500}},
                    "required": ["to", "text"],
                    "additionalProperties": False,
                },
            },
        }
        obs = (
            f"Your lead writes: 'Whoever posted the most messages in #{target_channel} kept the team going "
            "this week. Send them a direct message that says thanks, and tell me their employee number so "
            "HR can send a voucher.' Reply with <answer>employee number</answer> after the message is sent."
        )
        if self.difficulty == 0:  # a read-off: every call made, its upshot stated, no tool left to call
            obs += self.prefetched_calls() + f"\nAll done: the answer is {self._expected_answer}."
            self._tools = {}
        self.fit_turns_to_solution(self._turns_asked)
        return obs, {}

    def read_loose_answer(self, text):
        """Difficulty 0 also takes a plain final answer."""
        return loose_answer(text) if self._loose else None

    def tool_list_channels(self):
        return "\n".join(f"#{c} ({len(m)} messages)" for c, m in self._state["channels"].items())

    def tool_read_channel(self, channel, page):
        msgs = self._state["channels"].get(channel.lstrip("#"))
        if msgs is None:
            return f"No channel {channel}."
        pages = (len(msgs) + PAGE - 1) // PAGE
        if page > pages:
            return f"{channel} has only {pages} page(s)."
        chunk = msgs[(page - 1) * PAGE: page * PAGE]
        lines = [f"[{m['time']}] @{m['author']}: {m['text']}" for m in chunk]
        return f"{channel} page {page}/{pages}\n" + "\n".join(lines)

    def tool_get_user(self, handle):
        user = self._state["users"].get(handle[1:])
        if user is None:
            return f"No user {handle}."
        return f"{handle}: {user['name']}, employee_no={user['employee_no']}, timezone={user['timezone']}"

    def tool_send_message(self, to, text):
        if to.startswith("@") and to[1:] not in self._state["users"]:
            return f"No user {to}."
        if to.startswith("#") and to[1:] not in self._state["channels"]:
            return f"No channel {to}."
        # the delivery log keeps what evaluation needs (who, and whether it thanks them), not free text
        self._state["sent"].append({"to": to, "says_thanks": "thank" in text.lower()})
        return f"Message delivered to {to}."

    def _check_answer(self, answer):
        thanked = any(m["to"] == "@" + self._top and m["says_thanks"] for m in self._state["sent"])
        return thanked and super()._check_answer(answer)

    def _incorrect_answer_feedback(self):
        return "Not accepted: the number is wrong or the right person has not been thanked yet."

    def solution(self):
        if self.difficulty == 0 and not self._tools:  # the calls were made in reset(): only the answer is left
            return f"<answer>{self._expected_answer}</answer>"
        n = len(self._state["channels"][self._channel])
        calls = [{"name": "read_channel", "arguments": {"channel": "#" + self._channel, "page": p}}
                 for p in range(1, (n + PAGE - 1) // PAGE + 1)]
        calls.append({"name": "send_message", "arguments": {"to": "@" + self._top, "text": "Thanks for all your help this week!"}})
        calls.append({"name": "get_user", "arguments": {"handle": "@" + self._top}})
        text = "\n".join(f"<tool_call>{json.dumps(c)}</tool_call>" for c in calls)
        return text + f"\n<answer>{self._expected_answer}</answer>"

    def hint(self):
        return ("The channel spans several pages: read them all and tally messages per handle before deciding. "
                "The thank-you must be a direct message to the handle (not a channel post), and the "
                "employee number is only in the user's profile.")
