"""Calendar scheduling: find the earliest slot in a week when all invitees and a big-enough room are free."""

import json
import random
import re
from spade_answers import loose_answer

#: a loose answer's shape: "YYYY-MM-DD HH:MM" (or "... at HH:MM")
DATE_TIME = r"(\d{4}-\d{2}-\d{2})(?:[ T]|\s+at\s+)(\d{2}:\d{2})"

METADATA = {
    "name": "Meeting Scheduler",
    "skill": "tool use",
    "domain": "calendar",
    "description": "Look up people, read busy times of people and rooms over a week, book the earliest common slot in a big enough room.",
    "tags": ["tool-use", "calendar", "scheduling", "multi-turn", "state-changing"],
}

PEOPLE = ["Alba Ruiz", "Bruno Keller", "Cyra Osei", "Dev Malhotra", "Elin Berg", "Femi Adeyemi", "Gala Novak",
          "Hugo Lind", "Isha Rao", "Jonas Weber", "Kaia Moreau", "Luca Bianchi"]
ROOMS = ["Aurora", "Basalt", "Cedar", "Dune", "Ember", "Fjord"]
TITLES = ["Quarterly planning", "Incident review", "Design critique", "Vendor sync", "Hiring debrief"]
DATE = {"type": "string", "pattern": "^2025-[01][0-9]-[0-3][0-9]$"}
EMAIL = {"type": "string", "pattern": "^[a-z]+\\.[a-z]+@acme\\.io$"}


def _hhmm(minute):
    return f"{minute // 60:02d}:{minute % 60:02d}"


def _merge(busy):
    """Sorted, non-overlapping copy of a list of [start, end] minute intervals."""
    out = []
    for a, b in sorted(busy):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out

PARAMETERS = {'type': 'object',
 'properties': {'difficulty': {'type': 'integer',
                               'minimum': 0,
                               'maximum': 4,
                               'default': 3,
                               'description': '0: one invitee, one busy block a day, two rooms, the lookups '
                                              'and the booking already made (calendars not shown), the upshot stated: read the start (loose answer '
                                              'format); 1: two invitees, few busy '
                                              'blocks; 2: two or three invitees, three rooms; 3: three or '
                                              'four invitees of seven people, two to four busy blocks a day, '
                                              'four rooms (the original); 4: five or six invitees, four to '
                                              'six busy blocks a day, six rooms'},
                'loose_answer': {'type': ['boolean', 'null'],
                                 'default': None,
                                 'description': 'also accept the last date and time of a reply without <answer> '
                                                '(null: only at difficulty 0)'},
                'num_invitees': {'type': ['integer', 'null'],
                                 'minimum': 1,
                                 'maximum': 6,
                                 'default': None,
                                 'description': 'people to invite; null: set by difficulty'},
                'max_turns': {'type': 'integer',
                              'minimum': 2,
                              'maximum': 100,
                              'default': 24,
                              'description': "agent steps allowed (never fewer than the reference solution's "
                                             'steps plus one)'}}}

#: difficulty -> (invitees, busy blocks per person and day, busy blocks per room and day, rooms)
LEVELS = {
    0: ((1, 1), (1, 1), (1, 1), 2),
    1: ((2, 2), (1, 2), (1, 2), 2),
    2: ((2, 3), (2, 3), (1, 3), 3),
    3: ((3, 4), (2, 4), (1, 4), 4),
    4: ((5, 6), (4, 6), (2, 5), 6),
}


class MeetingSchedulerEnv(ToolUseBaseEnv):
    """Working hours are 09:00-17:00; meetings start on the quarter hour."""

    def __init__(self, max_turns=24, difficulty=3, num_invitees=None, loose_answer=None, **kwargs):
        self.difficulty = difficulty
        invitees, self._person_blocks, self._room_blocks, self._n_rooms = LEVELS[difficulty]
        self._n_invitees = invitees if num_invitees is None else (num_invitees, num_invitees)
        self._loose = difficulty == 0 if loose_answer is None else loose_answer
        self._turns_asked = max_turns
        super().__init__(max_turns=max_turns, **kwargs)

    def _blocks(self, rng, count):
        out = []
        for _ in range(count):
            start = rng.randrange(540, 990, 15)
            out.append([start, min(1020, start + rng.choice([30, 45, 60, 90, 120]))])
        return sorted(out)

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.turn_count = 0
        self._call_history = []
        month, first = rng.randint(1, 12), rng.randint(1, 24)
        self._dates = [f"2025-{month:02d}-{first + i:02d}" for i in range(5)]
        people = {}
        for name in rng.sample(PEOPLE, 7):
            email = name.lower().replace(" ", ".") + "@acme.io"
            people[email] = {"name": name, "busy": {d: self._blocks(rng, rng.randint(*self._person_blocks)) for d in self._dates}}
        rooms = {r: {"capacity": rng.choice([2, 3, 4, 6, 8, 12]), "busy": {d: self._blocks(rng, rng.randint(*self._room_blocks)) for d in self._dates}}
                 for r in rng.sample(ROOMS, self._n_rooms)}
        invitees = rng.sample(sorted(people), rng.randint(*self._n_invitees))
        if max(r["capacity"] for r in rooms.values()) < len(invitees):
            rooms[sorted(rooms)[0]]["capacity"] = 8
        self._duration = rng.choice([30, 45, 60, 90])
        self._state = {"people": people, "rooms": rooms, "meetings": []}
        self._invitees = sorted(invitees)
        for _ in range(20):
            slot = self._earliest()
            if slot is None or slot[:2] != (self._dates[0], 540):
                break
            # the very first slot is too easy: block it for someone
            people[rng.choice(invitees)]["busy"][self._dates[0]].append([540, 540 + rng.choice([60, 90, 150])])
        self._slot = self._earliest()
        if self._slot is None:  # nothing fits: free the last slot of the week for everyone involved
            last, cut = self._dates[-1], 1020 - self._duration
            for e in invitees:
                people[e]["busy"][last] = [b for b in people[e]["busy"][last] if b[1] <= cut]
            big = [r for r in sorted(rooms) if rooms[r]["capacity"] >= len(invitees)][0]
            rooms[big]["busy"][last] = [b for b in rooms[big]["busy"][last] if b[1] <= cut]
            self._slot = self._earliest()
        self._title = rng.choice(TITLES)
        self._expected_answer = f"{self._slot[0]} {_hhmm(self._slot[1])}"
        self._tools = {
            "find_person": {
                "description": "Email address of a colleague by full name.",
                "parameters": {"type": "object", "properties": {"name": {"type": "string", "minLength": 3}},
                               "required": ["name"], "additionalProperties": False},
            },
            "get_busy": {
                "description": "Busy intervals of a person (HH:MM-HH:MM) for consecutive days from start_date.",
                "parameters": {"type": "object", "properties": {"email": EMAIL, "start_date": DATE,
                                                                "days": {"type": "integer", "minimum": 1, "maximum": 5}},
                               "required": ["email", "start_date", "days"], "additionalProperties": False},
            },
            "list_rooms": {
                "description": "Meeting rooms with at least the given capacity.",
                "parameters": {"type": "object", "properties": {"min_capacity": {"type": "integer", "minimum": 1}},
                               "required": ["min_capacity"], "additionalProperties": False},
            },
            "get_room_busy": {
                "description": "Busy intervals of a room for consecutive days from start_date.",
                "parameters": {"type": "object", "properties": {"room": {"type": "string", "enum": sorted(rooms)},
                                                                "start_date": DATE,
                                                                "days": {"type": "integer", "minimum": 1, "maximum": 5}},
                               "required": ["room", "start_date", "days"], "additionalProperties": False},
            },
            "book_meeting": {
                "description": "Book a meeting; refused if an attendee or the room is busy then.",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "title": {"type": "string", "minLength": 1, "maxLength": 80},
                        "date": DATE,
                        "start": {"type": "string", "pattern": "^(09|1[0-6]):(00|15|30|45)$"},
                        "duration_minutes": {"type": "integer", "enum": [30, 45, 60, 90]},
                        "attendees": {"type": "array", "items": EMAIL, "minItems": 1, "maxItems": 8, "uniqueItems": True},
                        "room": {"type": "string", "enum": sorted(rooms)},
                    },
                    "required": ["title", "date", "start", "duration_minutes", "attendees", "room"],
                    "additionalProperties": False,
                },
            },
        }
        names = ", ".join(people[e]["name"] for e in invitees)
        obs = (
            f"Schedule '{self._title}' ({self._duration} minutes) with {names}. Choose the EARLIEST start between "
            f"{self._dates[0]} and {self._dates[-1]} (09:00-17:00, starting on a quarter hour) when every invitee "
            "is free and some room seating all of them is free, and book it in the SMALLEST such room "
            "(alphabetically first on a tie). Reply with "
            "<answer>YYYY-MM-DD HH:MM</answer> (the start you booked)."
        )
        if self.difficulty == 0:  # a read-off: every call made, its upshot stated, no tool left to call
            day, hhmm = self._expected_answer.split()
            obs = (f"Schedule '{self._title}' ({self._duration} minutes) with {names} at the earliest free time, "
                   "then reply with <answer>YYYY-MM-DD HH:MM</answer> (the start you booked).")
            obs += self._prefetched() + f"\nAll done: the meeting is booked on {day} at {hhmm}."
            self._tools = {}
        self.fit_turns_to_solution(self._turns_asked)
        return obs, {}

    @staticmethod
    def _free(busy, start, end):
        return all(b[1] <= start or b[0] >= end for b in busy)

    def _rooms_free(self, date, start, end, size):
        rooms = self._state["rooms"]
        return sorted((r for r, v in rooms.items() if v["capacity"] >= size and self._free(v["busy"][date], start, end)),
                      key=lambda r: (rooms[r]["capacity"], r))

    def _earliest(self):
        people = self._state["people"]
        for date in self._dates:
            for start in range(540, 1020 - self._duration + 1, 15):
                end = start + self._duration
                if all(self._free(people[e]["busy"][date], start, end) for e in self._invitees):
                    rooms = self._rooms_free(date, start, end, len(self._invitees))
                    if rooms:
                        return date, start, rooms[0]
        return None

    def _days(self, start_date, days):
        if start_date not in self._dates:
            return []
        i = self._dates.index(start_date)
        return self._dates[i:i + days]

    def _format_busy(self, busy, start_date, days):
        dates = self._days(start_date, days)
        if not dates:
            return f"No calendar data for {start_date}; this week covers {self._dates[0]} to {self._dates[-1]}."
        return "\n".join(f"{d}: " + (", ".join(f"{_hhmm(a)}-{_hhmm(b)}" for a, b in _merge(busy[d])) or "free")
                         for d in dates)

    def _prefetched(self):
        """Difficulty 0: the reference tool calls already made (and applied), listed under the task
        (the calendars they read left out: only the booking's result is shown)."""
        lines = []
        for block in re.findall(r"<tool_call>(.*?)</tool_call>", self.solution(), re.S):
            call = json.loads(block)
            args = ", ".join(f"{k}={v!r}" for k, v in call["arguments"].items())
            result = getattr(self, 'tool_' + call['name'])(**call['arguments'])
            lines.append(f"  {call['name']}({args})" + (f" -> {result}" if call["name"].startswith("book") else ""))
        return "\nThese tool calls were already made for you:\n" + "\n".join(lines)

    def read_loose_answer(self, text):
        """Difficulty 0 also takes a plain final answer."""
        return loose_answer(text, DATE_TIME, most=3) if self._loose else None

    def tool_find_person(self, name):
        for email, p in self._state["people"].items():
            if p["name"].lower() == name.strip().lower():
                return email
        return f"No colleague named {name}."

    def tool_get_busy(self, email, start_date, days):
        person = self._state["people"].get(email)
        return f"No calendar for {email}." if person is None else self._format_busy(person["busy"], start_date, days)

    def tool_list_rooms(self, min_capacity):
        rows = [f"{r} (seats {v['capacity']})" for r, v in sorted(self._state["rooms"].items()) if v["capacity"] >= min_capacity]
        return "\n".join(rows) or "No room is that large."

    def tool_get_room_busy(self, room, start_date, days):
        return self._format_busy(self._state["rooms"][room]["busy"], start_date, days)

    def tool_book_meeting(self, title, date, start, duration_minutes, attendees, room):
        if date not in self._dates:
            return f"{date} is outside this week's calendar."
        begin = int(start[:2]) * 60 + int(start[3:])
        end = begin + duration_minutes
        if end > 1020:
            return "The meeting would end after 17:00."
        people = self._state["people"]
        for e in attendees:
            if e not in people:
                return f"Unknown attendee {e}."
            if not self._free(people[e]["busy"][date], begin, end):
                return f"Conflict: {e} is busy then. Nothing booked."
        if len(attendees) > self._state["rooms"][room]["capacity"]:
            return f"{room} is too small for {len(attendees)} people."
        if not self._free(self._state["rooms"][room]["busy"][date], begin, end):
            return f"Conflict: {room} is busy then. Nothing booked."
        for e in attendees:
            people[e]["busy"][date].append([begin, end])
        self._state["rooms"][room]["busy"][date].append([begin, end])
        self._state["meetings"].append({"title": title, "date": date, "start": start, "duration": duration_minutes,
                                        "attendees": sorted(attendees), "room": room})
        return f"Booked '{title}' on {date} at {start} in {room}."

    def _check_answer(self, answer):
        date, start, _ = self._slot
        ok = [m for m in self._state["meetings"] if m["date"] == date and m["start"] == _hhmm(start)
              and m["duration"] == self._duration and m["attendees"] == self._invitees and m["room"] == self._slot[2]]
        return len(ok) == 1 and " ".join(str(answer).split()) == self._expected_answer

    def _incorrect_answer_feedback(self):
        return "Not accepted: the booked meeting or the reported start is not the earliest valid one."

    def solution(self):
        if self.difficulty == 0 and not self._tools:  # the calls were made in reset(): only the answer is left
            return f"<answer>{self._expected_answer}</answer>"
        date, start, room = self._slot
        calls = [{"name": "find_person", "arguments": {"name": self._state["people"][e]["name"]}} for e in self._invitees]
        calls += [{"name": "get_busy", "arguments": {"email": e, "start_date": self._dates[0], "days": 5}} for e in self._invitees]
        calls.append({"name": "list_rooms", "arguments": {"min_capacity": len(self._invitees)}})
        calls += [{"name": "get_room_busy", "arguments": {"room": r, "start_date": self._dates[0], "days": 5}}
                  for r, v in sorted(self._state["rooms"].items()) if v["capacity"] >= len(self._invitees)]
        calls.append({"name": "book_meeting", "arguments": {"title": self._title, "date": date, "start": _hhmm(start),
                                                            "duration_minutes": self._duration,
                                                            "attendees": self._invitees, "room": room}})
        text = "\n".join(f"<tool_call>{json.dumps(c)}</tool_call>" for c in calls)
        return text + f"\n<answer>{self._expected_answer}</answer>"

    def hint(self):
        return ("Merge the busy intervals of all invitees day by day, then walk the quarter hours from 09:00; "
                "a start works only if the whole meeting fits before the next busy interval and before 17:00, "
                "and at least one room with enough seats is also free for that whole span.")
