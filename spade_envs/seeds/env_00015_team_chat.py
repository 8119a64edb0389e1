"""Team messaging: find the most active poster of a channel, thank them, report their employee number."""

import json
import random

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


class TeamChatEnv(ToolUseBaseEnv):
    """The answer is the employee number of the channel's top poster; a thank-you DM must be sent."""

    def __init__(self, max_turns=16, **kwargs):
        super().__init__(max_turns=max_turns, **kwargs)

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.turn_count = 0
        self._call_history = []
        handles = rng.sample(HANDLES, 7)
        channels = rng.sample(CHANNELS, 4)
        users = {h: {"name": h.capitalize() + " " + rng.choice("BCDFGHKLMNPRSTVW") + ".",
                     "employee_no": rng.randint(10000, 99999), "timezone": rng.choice(["UTC", "CET", "EST", "JST"])}
                 for h in handles}
        target_channel = channels[0]
        history = {}
        for ch in channels:
            while True:
                counts = [rng.randint(1, 7) for _ in handles]
                top = max(counts)
                if counts.count(top) == 1 and top >= 3 and sum(counts) > 2 * PAGE:
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
        return obs, {}

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
