"""Travel desk: book the cheapest nonstop flight and the cheapest good-enough hotel, report the total."""

import json
import random
from spade_answers import loose_answer

METADATA = {
    "name": "Trip Booking",
    "skill": "tool use",
    "domain": "bookings",
    "description": "Search flights and hotels under constraints, book the cheapest qualifying ones and report the trip cost.",
    "tags": ["tool-use", "bookings", "travel", "multi-turn", "state-changing"],
}

CITIES = {"LIS": "Lisbon", "OSL": "Oslo", "ATH": "Athens", "DUB": "Dublin", "VIE": "Vienna",
          "PRG": "Prague", "MAD": "Madrid", "HEL": "Helsinki", "ZRH": "Zurich", "WAW": "Warsaw"}
HOTEL_WORDS = ["Harbor", "Grand", "Old Town", "Central", "Garden", "Riverside", "Station", "Plaza", "Park"]
DATE = {"type": "string", "pattern": "^2025-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$"}

PARAMETERS = {'type': 'object',
 'properties': {'difficulty': {'type': 'integer',
                               'minimum': 0,
                               'maximum': 4,
                               'default': 3,
                               'description': '0: one flight a day, two hotels, one night, small prices, the '
                                              'tool calls already made, the upshot stated: add flight and night (loose answer '
                                              'format); 1: two flights a day, three hotels, one or two '
                                              'nights; 2: two or three flights, four hotels; 3: three to '
                                              'five flights a day, six hotels, two to six nights (the '
                                              'original); 4: eight to ten flights a day, twelve hotels per '
                                              'city, up to fourteen nights'},
                'flights_per_day': {'type': ['integer', 'null'],
                                    'minimum': 1,
                                    'maximum': 10,
                                    'default': None,
                                    'description': 'flights per route and day; null: set by difficulty'},
                'hotels_per_city': {'type': ['integer', 'null'],
                                    'minimum': 1,
                                    'maximum': 9,
                                    'default': None,
                                    'description': 'hotels per city; null: set by difficulty'},
                'max_turns': {'type': 'integer',
                              'minimum': 2,
                              'maximum': 100,
                              'default': 12,
                              'description': "agent steps allowed (never fewer than the reference solution's "
                                             'steps plus one)'},
                'loose_answer': {'type': ['boolean', 'null'],
                                 'default': None,
                                 'description': 'also accept the last number of a reply without \\\\boxed{} '
                                                '(null: only at difficulty 0)'}}}

#: difficulty -> (flights per route and day, hotels per city, nights, flight prices, nightly prices)
LEVELS = {
    0: ((1, 1), 2, (1, 1), (10, 40), (5, 40)),
    1: ((2, 2), 3, (1, 2), (60, 600), (55, 420)),
    2: ((2, 3), 4, (2, 4), (60, 600), (55, 420)),
    3: ((3, 5), 6, (2, 6), (60, 600), (55, 420)),
    4: ((8, 10), 9, (5, 14), (60, 600), (55, 420)),
}


class TripBookingEnv(ToolUseBaseEnv):
    """Bookings are state: the answer only counts when exactly the right flight and hotel are booked."""

    def __init__(self, max_turns=12, difficulty=3, flights_per_day=None, hotels_per_city=None, loose_answer=None,
                 **kwargs):
        self.difficulty = difficulty
        flights, hotels, self._nights_range, self._flight_prices, self._hotel_prices = LEVELS[difficulty]
        self._flights_per = flights if flights_per_day is None else (flights_per_day, flights_per_day)
        self._hotels_per = hotels if hotels_per_city is None else hotels_per_city
        self._loose = difficulty == 0 if loose_answer is None else loose_answer
        self._turns_asked = max_turns
        super().__init__(max_turns=max_turns, **kwargs)

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.turn_count = 0
        self._call_history = []
        origin, dest = rng.sample(sorted(CITIES), 2)
        month, day = rng.randint(3, 10), rng.randint(2, 27)
        date = f"2025-{month:02d}-{day:02d}"
        nights = rng.randint(*self._nights_range)
        min_rating = rng.choice([3.5, 4.0, 4.5])
        flights = {}
        used = set()
        for d in (day - 1, day, day + 1):
            for route in ((origin, dest), (dest, origin)):
                for _ in range(rng.randint(*self._flights_per)):
                    fid = f"FL{rng.randint(100, 9999)}"
                    while fid in flights:
                        fid = f"FL{rng.randint(100, 9999)}"
                    price = rng.randint(*self._flight_prices)
                    while price in used:
                        price += 1
                    used.add(price)
                    flights[fid] = {"from": route[0], "to": route[1], "date": f"2025-{month:02d}-{d:02d}",
                                    "depart": f"{rng.randint(6, 21):02d}:{rng.choice(['00', '15', '30', '45'])}",
                                    "stops": rng.choice([0, 0, 1, 1, 2]), "price": price}
        hotels = {}
        for city in (origin, dest):
            for word in rng.sample(HOTEL_WORDS, self._hotels_per):
                hid = f"H-{rng.randint(1000, 9999)}"
                price = rng.randint(*self._hotel_prices)
                while price in used:
                    price += 1
                used.add(price)
                hotels[hid] = {"city": city, "name": f"{word} {CITIES[city]}", "rating": rng.choice([3.0, 3.5, 4.0, 4.5, 5.0]),
                               "nightly": price}
        # make sure each constraint has at least one match and actually bites
        good = [f for f, v in flights.items() if (v["from"], v["to"], v["date"], v["stops"]) == (origin, dest, date, 0)]
        if not good:
            fid = min((f for f, v in flights.items() if (v["from"], v["to"], v["date"]) == (origin, dest, date)),
                      key=lambda f: -flights[f]["price"])
            flights[fid]["stops"] = 0
            good = [fid]
        ok = [h for h, v in hotels.items() if v["city"] == dest and v["rating"] >= min_rating]
        if not ok:
            hid = max((h for h, v in hotels.items() if v["city"] == dest), key=lambda h: hotels[h]["nightly"])
            hotels[hid]["rating"] = 5.0
            ok = [hid]
        self._flight = min(good, key=lambda f: flights[f]["price"])
        self._hotel = min(ok, key=lambda h: hotels[h]["nightly"])
        self._date, self._nights, self._dest = date, nights, dest
        self._state = {"flights": flights, "hotels": hotels, "bookings": {}}
        if flights[self._flight]["price"] + nights * hotels[self._hotel]["nightly"] == 2025:  # never the year
            for h in hotels.values():
                h["nightly"] += 1
        self._expected_answer = str(flights[self._flight]["price"] + nights * hotels[self._hotel]["nightly"])
        code = {"type": "string", "enum": sorted(CITIES)}
        self._tools = {
            "search_flights": {
                "description": "Flights on one route and date: id, departure time, number of stops, price in EUR.",
                "parameters": {"type": "object", "properties": {"origin": code, "destination": code, "date": DATE},
                               "required": ["origin", "destination", "date"], "additionalProperties": False},
            },
            "search_hotels": {
                "description": "Hotels in a city: id, name, guest rating (1-5) and price per night in EUR.",
                "parameters": {"type": "object",
                               "properties": {"city": code, "min_rating": {"type": "number", "minimum": 1, "maximum": 5}},
                               "required": ["city"], "additionalProperties": False},
            },
            "book_flight": {
                "description": "Book one seat on a flight; returns a booking reference.",
                "parameters": {"type": "object", "properties": {"flight_id": {"type": "string", "pattern": "^FL[0-9]{3,4}$"}},
                               "required": ["flight_id"], "additionalProperties": False},
            },
            "book_hotel": {
                "description": "Book a hotel room from a check-in date for a number of nights.",
                "parameters": {"type": "object",
                               "properties": {"hotel_id": {"type": "string", "pattern": "^H-[0-9]{4}$"},
                                              "checkin": DATE, "nights": {"type": "integer", "minimum": 1, "maximum": 14}},
                               "required": ["hotel_id", "checkin", "nights"], "additionalProperties": False},
            },
            "cancel_booking": {
                "description": "Cancel a booking by its reference.",
                "parameters": {"type": "object", "properties": {"reference": {"type": "string", "pattern": "^BK[FH][0-9]{3,4}$"}},
                               "required": ["reference"], "additionalProperties": False},
            },
            "get_itinerary": {
                "description": "List the current bookings (references and items, without prices).",
                "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
            },
        }
        obs = (
            f"A client flies from {CITIES[origin]} ({origin}) to {CITIES[dest]} ({dest}) on {date} and stays "
            f"{nights} nights. Book the cheapest NONSTOP flight that day and the cheapest hotel in {CITIES[dest]} "
            f"rated at least {min_rating}, checking in on {date}. Book nothing else. Then reply with "
            "<answer>total trip cost in EUR</answer> (flight plus every night)."
        )
        if self.difficulty == 0:  # a read-off: every call made, its upshot stated, no tool left to call
            obs += self.prefetched_calls() + f"\nAll done: the answer is {self._expected_answer}."
            self._tools = {}
        self.fit_turns_to_solution(self._turns_asked)
        return obs, {}

    def read_loose_answer(self, text):
        """Difficulty 0 also takes a plain final answer."""
        return loose_answer(text) if self._loose else None

    def tool_search_flights(self, origin, destination, date):
        rows = sorted((v["depart"], f, v) for f, v in self._state["flights"].items()
                      if (v["from"], v["to"], v["date"]) == (origin, destination, date))
        if not rows:
            return "No flights found."
        return "\n".join(f"{f} dep {d} stops={v['stops']} price={v['price']}" for d, f, v in rows)

    def tool_search_hotels(self, city, min_rating=1):
        rows = [(h, v) for h, v in sorted(self._state["hotels"].items()) if v["city"] == city and v["rating"] >= min_rating]
        if not rows:
            return "No hotels match."
        return "\n".join(f"{h} {v['name']} rating={v['rating']} nightly={v['nightly']}" for h, v in rows)

    def _book(self, ref, item):
        # references derive from the item, so equal bookings give equal states however they were reached
        if ref in self._state["bookings"]:
            return f"Already booked under reference {ref}; cancel it first to change it."
        self._state["bookings"][ref] = item
        return f"Booked: reference {ref}"

    def tool_book_flight(self, flight_id):
        if flight_id not in self._state["flights"]:
            return f"Unknown flight {flight_id}."
        return self._book("BKF" + flight_id[2:], {"flight": flight_id})

    def tool_book_hotel(self, hotel_id, checkin, nights):
        if hotel_id not in self._state["hotels"]:
            return f"Unknown hotel {hotel_id}."
        return self._book("BKH" + hotel_id[2:], {"hotel": hotel_id, "checkin": checkin, "nights": nights})

    def tool_cancel_booking(self, reference):
        if self._state["bookings"].pop(reference, None) is None:
            return f"No booking {reference}."
        return f"Cancelled {reference}."

    def tool_get_itinerary(self):
        items = self._state["bookings"]
        return "\n".join(f"{r}: {json.dumps(v, sort_keys=True)}" for r, v in items.items()) or "No bookings."

    def _check_answer(self, answer):
        want = sorted([json.dumps({"flight": self._flight}),
                       json.dumps({"hotel": self._hotel, "checkin": self._date, "nights": self._nights})])
        have = sorted(json.dumps(v) for v in self._state["bookings"].values())
        return have == want and super()._check_answer(answer)

    def _incorrect_answer_feedback(self):
        return "Not accepted: check the bookings and the total."

    def solution(self):
        if self.difficulty == 0 and not self._tools:  # the calls were made in reset(): only the answer is left
            return f"<answer>{self._expected_answer}</answer>"
        f = self._state["flights"][self._flight]
        calls = [
            {"name": "search_flights", "arguments": {"origin": f["from"], "destination": f["to"], "date": self._date}},
            {"name": "search_hotels", "arguments": {"city": self._dest}},
            {"name": "book_flight", "arguments": {"flight_id": self._flight}},
            {"name": "book_hotel", "arguments": {"hotel_id": self._hotel, "checkin": self._date, "nights": self._nights}},
        ]
        text = "\n".join(f"<tool_call>{json.dumps(c)}</tool_call>" for c in calls)
        return text + f"\n<answer>{self._expected_answer}</answer>"

    def hint(self):
        return ("Filter flights to stops=0 before comparing prices, and hotels to the rating threshold "
                "(min_rating does that for you). Book with the exact check-in date and nights; the total is the "
                "flight price plus nights times the nightly rate.")
