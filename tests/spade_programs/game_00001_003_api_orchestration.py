"""SPARE self-play generated game"""

import random
import json
from typing import Tuple
# Do NOT import ToolUseBaseEnv -- it is pre-loaded in the namespace


class ReportShelverEnv(ToolUseBaseEnv):
    def reset(self, seed=None) -> Tuple[str, dict]:
        self.turn_count = 0
        self._call_history = []
        if seed is not None:
            random.seed(seed)
        folder = random.choice(["docs", "papers", "notes", "drafts"])
        target = random.choice(["report", "summary", "memo", "brief"]) + f"_{random.randint(100, 999)}.txt"
        archive = random.choice(["archive", "vault", "old", "stash"])
        others = [f"file_{random.randint(10, 99)}.txt" for _ in range(4)]
        self._state = {
            'cwd': '/home',
            'tree': {'/home': [folder, 'temp.txt'], f'/home/{folder}': [target] + others},
        }
        self._folder, self._target, self._archive = folder, target, archive
        self._tools = {
            'pwd': {'description': 'Get current directory', 'parameters': {'type': 'object', 'properties': {}}},
            'ls': {'description': 'List current directory', 'parameters': {'type': 'object', 'properties': {}}},
            'cd': {'description': 'Change directory', 'parameters': {'type': 'object', 'properties': {'path': {'type': 'string'}}, 'required': ['path']}},
            'mkdir': {'description': 'Create directory in current location', 'parameters': {'type': 'object', 'properties': {'name': {'type': 'string'}}, 'required': ['name']}},
            'mv': {'description': 'Move file from current dir to subdir', 'parameters': {'type': 'object', 'properties': {'src': {'type': 'string'}, 'dst': {'type': 'string'}}, 'required': ['src', 'dst']}},
        }
        self._expected_answer = f'{archive}/{target}'
        return (f'TASK: Move {target} from /home/{folder} into a new subdirectory of that folder '
                f'called "{archive}". Submit the final path relative to /home/{folder} with <answer>PATH</answer>.', {})

    def tool_pwd(self) -> str:
        return self._state['cwd']

    def tool_ls(self) -> str:
        return json.dumps(self._state['tree'].get(self._state['cwd'], []))

    def tool_cd(self, path='') -> str:
        target = path if path.startswith('/') else f"{self._state['cwd']}/{path}"
        if target not in self._state['tree']:
            return f'Error: directory {target} not found'
        self._state['cwd'] = target
        return f'Changed to {target}'

    def tool_mkdir(self, name='') -> str:
        new_path = f"{self._state['cwd']}/{name}"
        if new_path in self._state['tree']:
            return f'Error: {new_path} already exists'
        self._state['tree'][new_path] = []
        self._state['tree'][self._state['cwd']].append(name)
        return f'Created {new_path}'

    def tool_mv(self, src='', dst='') -> str:
        cwd_files = self._state['tree'].get(self._state['cwd'], [])
        if src not in cwd_files:
            return f'Error: {src} not in current dir'
        dst_path = f"{self._state['cwd']}/{dst}"
        if dst_path not in self._state['tree']:
            return f'Error: destination {dst_path} not found'
        cwd_files.remove(src)
        self._state['tree'][dst_path].append(src)
        return f'Moved {src} to {dst}'

    def _check_answer(self, answer):
        moved = self._target in self._state['tree'].get(f"/home/{self._folder}/{self._archive}", [])
        return moved and str(answer).strip() == self._expected_answer

    def solution(self) -> str:
        return (f'1. cd(path="{self._folder}") -> Changed to /home/{self._folder} '
                f'2. mkdir(name="{self._archive}") -> Created /home/{self._folder}/{self._archive} '
                f'3. mv(src="{self._target}", dst="{self._archive}") -> Moved '
                f'ANSWER: {self._archive}/{self._target}')
