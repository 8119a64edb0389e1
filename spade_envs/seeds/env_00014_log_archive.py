"""File-system clean-up: find stale log files in a project tree, archive them, report bytes."""

import json
import random
from spade_answers import loose_answer

METADATA = {
    "name": "Log Archive",
    "skill": "tool use",
    "domain": "file system",
    "description": "Walk a virtual file tree, stat log files, move the stale ones to an archive folder and report the bytes moved.",
    "tags": ["tool-use", "file-system", "multi-turn", "state-changing"],
}

PROJECTS = ["atlas", "beacon", "cobalt", "delta", "ember", "falcon", "garnet", "harbor"]
SERVICES = ["api", "worker", "cron", "db", "web", "auth", "search", "mail"]
EXTS = [".txt", ".json", ".gz", ".csv"]
PATH = {"type": "string", "pattern": "^/[A-Za-z0-9_./-]*$", "maxLength": 200}

PARAMETERS = {'type': 'object',
 'properties': {'difficulty': {'type': 'integer',
                               'minimum': 0,
                               'maximum': 4,
                               'default': 3,
                               'description': '0: one folder, one stale log, the tool calls already made, the upshot stated: '
                                              'report its size (loose answer format); 1: one service folder, '
                                              'one stale log; 2: two services, no nested folders; 3: two or '
                                              'three services with nested folders (the original); 4: five or '
                                              'six services, nested folders, three to four files each'},
                'num_services': {'type': ['integer', 'null'],
                                 'minimum': 1,
                                 'maximum': 6,
                                 'default': None,
                                 'description': 'service folders under the project; null: set by difficulty'},
                'max_turns': {'type': 'integer',
                              'minimum': 2,
                              'maximum': 100,
                              'default': 45,
                              'description': "agent steps allowed (never fewer than the reference solution's "
                                             'steps plus one)'},
                'loose_answer': {'type': ['boolean', 'null'],
                                 'default': None,
                                 'description': 'also accept the last number of a reply without \\\\boxed{} '
                                                '(null: only at difficulty 0)'}}}

#: difficulty -> (services, chance of a nested folder, files per folder, file sizes, fewest logs, fewest stale logs)
LEVELS = {
    0: ((1, 1), 0.0, (2, 2), (2, 99), 2, 1),
    1: ((1, 1), 0.0, (2, 3), (2_100, 900_000), 2, 1),
    2: ((2, 2), 0.0, (2, 3), (2_100, 900_000), 3, 2),
    3: ((2, 3), 0.6, (2, 3), (2_100, 900_000), 3, 2),
    4: ((5, 6), 0.9, (3, 4), (2_100, 900_000), 3, 2),
}


class LogArchiveEnv(ToolUseBaseEnv):
    """The agent must move every ``.log`` file older than a cutoff into ``/archive/<project>``."""

    def __init__(self, max_turns=45, difficulty=3, num_services=None, loose_answer=None, **kwargs):
        self.difficulty = difficulty
        services, self._nested, self._per_folder, self._sizes, self._min_logs, self._min_stale = LEVELS[difficulty]
        self._services_range = services if num_services is None else (num_services, num_services)
        self._loose = difficulty == 0 if loose_answer is None else loose_answer
        self._turns_asked = max_turns
        super().__init__(max_turns=max_turns, **kwargs)

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.turn_count = 0
        self._call_history = []
        project = rng.choice(PROJECTS)
        root = f"/srv/{project}"
        dirs = ["/", "/srv", root, "/archive", "/tmp"]
        files = {}
        services = rng.sample(SERVICES, rng.randint(*self._services_range))
        for svc in services:
            folders = [f"{root}/{svc}"]
            if rng.random() < self._nested:
                folders.append(f"{root}/{svc}/{rng.choice(['old', 'rotated', 'run'])}")
            dirs.extend(folders)
            for folder in folders:
                for k in range(rng.randint(*self._per_folder)):
                    ext = ".log" if rng.random() < 0.65 else rng.choice(EXTS)
                    name = f"{svc}-{folder.count('/')}{k}{rng.randint(10, 99)}{ext}"
                    files[f"{folder}/{name}"] = {
                        "size": rng.randint(*self._sizes),
                        "modified": f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
                    }
        while sum(p.endswith(".log") for p in files) < self._min_logs:  # at least two stale logs and one fresh one
            svc = services[0]
            files[f"{root}/{svc}/{svc}-extra{len(files)}.log"] = {
                "size": rng.randint(*self._sizes), "modified": f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"}
        files["/tmp/scratch.log"] = {"size": rng.randint(1_000, 90_000), "modified": "2024-01-02"}
        logs = sorted(p for p in files if p.endswith(".log") and p.startswith(root + "/"))
        cutoff = "2024-07-01"
        for _ in range(50):
            cutoff = f"2024-{rng.randint(3, 11):02d}-{rng.randint(1, 28):02d}"
            stale = [p for p in logs if files[p]["modified"] < cutoff]
            if self._min_stale <= len(stale) < len(logs) and (self.difficulty > 1 or len(stale) == 1):
                break
        else:  # force a mix of stale and fresh logs
            for i, p in enumerate(logs):
                files[p]["modified"] = "2024-01-15" if (i % 2 == 0 if self.difficulty > 1 else i == 0) else "2024-12-15"
            cutoff = "2024-07-01"
        self._project, self._cutoff = project, cutoff
        self._targets = [p for p in logs if files[p]["modified"] < cutoff]
        self._original = {p: dict(v) for p, v in files.items()}
        self._state = {"dirs": sorted(set(dirs)), "files": files}
        self._expected_answer = str(sum(files[p]["size"] for p in self._targets))
        self._tools = {
            "list_dir": {
                "description": "List a directory: sub-directories end with '/', files are plain names.",
                "parameters": {"type": "object", "properties": {"path": PATH}, "required": ["path"],
                               "additionalProperties": False},
            },
            "stat": {
                "description": "Size in bytes and last-modified date (YYYY-MM-DD) of a file.",
                "parameters": {"type": "object", "properties": {"path": PATH}, "required": ["path"],
                               "additionalProperties": False},
            },
            "make_dir": {
                "description": "Create a directory; its parent must exist.",
                "parameters": {"type": "object", "properties": {"path": PATH}, "required": ["path"],
                               "additionalProperties": False},
            },
            "move": {
                "description": "Move a file into an existing directory, keeping its name.",
                "parameters": {
                    "type": "object",
                    "properties": {"source": PATH, "destination_dir": PATH},
                    "required": ["source", "destination_dir"],
                    "additionalProperties": False,
                },
            },
            "delete": {
                "description": "Delete a file permanently (cannot be undone).",
                "parameters": {"type": "object", "properties": {"path": PATH}, "required": ["path"],
                               "additionalProperties": False},
            },
        }
        obs = (
            f"Disk is filling up on the {project} server. Archive every '.log' file anywhere under "
            f"{root} whose last-modified date is before {cutoff}: move each into /archive/{project}/ "
            "(keep the names; leave every other file where it is). Then reply with "
            "<answer>total size in bytes of the files you archived</answer>."
        )
        if self.difficulty == 0:  # a read-off: every call made, its upshot stated, no tool left to call
            obs += self.prefetched_calls() + f"\nAll done: the answer is {self._expected_answer}."
            self._tools = {}
        self.fit_turns_to_solution(self._turns_asked)
        return obs, {}

    def read_loose_answer(self, text):
        """Difficulty 0 also takes a plain final answer."""
        return loose_answer(text) if self._loose else None

    @staticmethod
    def _norm(path):
        return "/" + "/".join(part for part in path.split("/") if part and part != ".")

    def tool_list_dir(self, path):
        path = self._norm(path)
        if path not in self._state["dirs"]:
            return f"No such directory: {path}"
        prefix = "" if path == "/" else path
        subdirs = [d[len(prefix) + 1:] + "/" for d in self._state["dirs"]
                   if d != path and d.rsplit("/", 1)[0] == prefix and d != "/"]
        names = [f[len(prefix) + 1:] for f in self._state["files"] if f.rsplit("/", 1)[0] == prefix]
        entries = sorted(subdirs) + sorted(names)
        return "\n".join(entries) if entries else "(empty)"

    def tool_stat(self, path):
        path = self._norm(path)
        info = self._state["files"].get(path)
        if info is None:
            return f"{path} is a directory." if path in self._state["dirs"] else f"No such file: {path}"
        return f"{path}: size={info['size']} bytes, modified={info['modified']}"

    def tool_make_dir(self, path):
        path = self._norm(path)
        if path in self._state["dirs"] or path in self._state["files"]:
            return f"{path} already exists."
        parent = path.rsplit("/", 1)[0] or "/"
        if parent not in self._state["dirs"]:
            return f"Parent directory {parent} does not exist."
        self._state["dirs"] = sorted(self._state["dirs"] + [path])
        return f"Created {path}"

    def tool_move(self, source, destination_dir):
        source, dest = self._norm(source), self._norm(destination_dir)
        if source not in self._state["files"]:
            return f"No such file: {source}"
        if dest not in self._state["dirs"]:
            return f"No such directory: {dest}"
        target = ("" if dest == "/" else dest) + "/" + source.rsplit("/", 1)[1]
        if target in self._state["files"]:
            return f"{target} already exists."
        self._state["files"][target] = self._state["files"].pop(source)
        return f"Moved {source} -> {target}"

    def tool_delete(self, path):
        path = self._norm(path)
        if self._state["files"].pop(path, None) is None:
            return f"No such file: {path}"
        return f"Deleted {path}"

    def _done(self):
        want = {}
        for p, info in self._original.items():
            want[f"/archive/{self._project}/" + p.rsplit("/", 1)[1] if p in self._targets else p] = info
        return self._state["files"] == want

    def _check_answer(self, answer):
        return self._done() and super()._check_answer(answer)

    def _incorrect_answer_feedback(self):
        return "Not accepted: either the total is wrong or the files are not where they should be."

    def solution(self):
        if self.difficulty == 0 and not self._tools:  # the calls were made in reset(): only the answer is left
            return f"<answer>{self._expected_answer}</answer>"
        root = f"/srv/{self._project}"
        calls = [("list_dir", {"path": d}) for d in self._state["dirs"] if d.startswith(root)]
        calls += [("stat", {"path": p}) for p in sorted(self._original)
                  if p.startswith(root + "/") and p.endswith(".log")]
        calls.append(("make_dir", {"path": f"/archive/{self._project}"}))
        calls += [("move", {"source": p, "destination_dir": f"/archive/{self._project}"}) for p in self._targets]
        text = "\n".join(f"<tool_call>{json.dumps({'name': n, 'arguments': a})}</tool_call>" for n, a in calls)
        return text + f"\n<answer>{self._expected_answer}</answer>"

    def hint(self):
        return ("Log files hide in nested folders (e.g. rotated/ or old/), so list every directory under the "
                "project. Only stat shows dates; compare them as YYYY-MM-DD text. Create the archive folder "
                "before moving, and add up the sizes of exactly the files you moved.")
