"""SPARE self-play generated game"""

import random
import json
from typing import Tuple


class DeskWorkflowMTEnv(ToolUseBaseEnv):
    def reset(self, seed=None) -> Tuple[str, dict]:
        self.turn_count = 0
        self._call_history = []
        if seed is not None:
            random.seed(seed)
        sub = random.choice(["temp", "hold", "queue", "inbox"])
        doc = random.choice(["report", "ledger", "plan"]) + f"_{random.randint(10, 99)}.txt"
        self._sub, self._doc = sub, doc
        self._state = {
            'cwd': '/home',
            'tree': {'/home': ['document', 'temp.txt'], '/home/document': [doc, 'notes.txt', 'log.txt']},
            'last_ls_path': None,
        }
        self._tools = {
            'pwd': {'description': 'Show current dir', 'parameters': {'type': 'object', 'properties': {}}},
            'ls': {'description': 'List a directory', 'parameters': {'type': 'object', 'properties': {'path': {'type': 'str'}}, 'required': ['path']}},
            'cd': {'description': 'Change dir', 'parameters': {'type': 'object', 'properties': {'path': {'type': 'str'}}, 'required': ['path']}},
            'mkdir': {'description': 'Create a subdirectory in current dir', 'parameters': {'type': 'object', 'properties': {'name': {'type': 'str'}}, 'required': ['name']}},
            'mv': {'description': 'Move file from current dir to a destination dir', 'parameters': {'type': 'object', 'properties': {'src': {'type': 'str'}, 'dst': {'type': 'str'}}, 'required': ['src', 'dst']}},
        }
        self._user_messages = [
            "Navigate to the document folder.",
            f"Create a '{sub}' subdirectory and move {doc} into it.",
            f"Now list what's in the {sub} folder.",
        ]
        self._message_criteria = [
            lambda s: s['cwd'] == '/home/document',
            lambda s: doc in s['tree'].get(f'/home/document/{sub}', []),
            lambda s: s['last_ls_path'] == f'/home/document/{sub}',
        ]
        self._current_msg = 0
        self._expected_answer = "done"
        return (self._user_messages[0], {})

    def _advance_if_done(self) -> str:
        if self._current_msg >= len(self._user_messages):
            return ""
        if self._message_criteria[self._current_msg](self._state):
            self._current_msg += 1
            if self._current_msg >= len(self._user_messages):
                return "\n\n[ALL STEPS COMPLETE] Submit <answer>done</answer>."
            return f"\n\n[STEP {self._current_msg} COMPLETE - NEW INSTRUCTION] {self._user_messages[self._current_msg]}"
        return ""

    def _check_answer(self, answer: str) -> bool:
        return answer.strip().lower() == 'done' and self._current_msg >= len(self._user_messages)

    def tool_pwd(self) -> str:
        return self._state['cwd'] + self._advance_if_done()

    def tool_ls(self, path='') -> str:
        if path not in self._state['tree']:
            return f"Error: {path} not found" + self._advance_if_done()
        self._state['last_ls_path'] = path
        return json.dumps(self._state['tree'][path]) + self._advance_if_done()

    def tool_cd(self, path='') -> str:
        if path not in self._state['tree']:
            return f"Error: {path} not found" + self._advance_if_done()
        self._state['cwd'] = path
        return f"Changed to {path}" + self._advance_if_done()

    def tool_mkdir(self, name='') -> str:
        new_path = f"{self._state['cwd']}/{name}"
        if new_path in self._state['tree']:
            return f"Error: {new_path} exists" + self._advance_if_done()
        self._state['tree'][new_path] = []
        self._state['tree'][self._state['cwd']].append(name)
        return f"Created {new_path}" + self._advance_if_done()

    def tool_mv(self, src='', dst='') -> str:
        cwd_files = self._state['tree'].get(self._state['cwd'], [])
        if src not in cwd_files:
            return f"Error: {src} not in current dir" + self._advance_if_done()
        dst_path = f"{self._state['cwd']}/{dst}"
        if dst_path not in self._state['tree']:
            return f"Error: target {dst} not found" + self._advance_if_done()
        cwd_files.remove(src)
        self._state['tree'][dst_path].append(src)
        return f"Moved {src} to {dst}" + self._advance_if_done()

    def solution(self) -> str:
        return (f"1. cd(path='/home/document') 2. mkdir(name='{self._sub}') "
                f"3. mv(src='{self._doc}', dst='{self._sub}') 4. ls(path='/home/document/{self._sub}') "
                "5. <answer>done</answer>")
