"""One reasoning-gym entry as a single-answer environment program (DESIGN.md section 3).

This file is an environment program as well as a module: the reasoning-gym suite passes
its source as ``PlayTask.source`` (with ``kwargs`` ``task`` and ``config``), so entries are
played by the same agent loop as registry environments. It is shipped with spade-envs and
imports reasoning-gym, so the suite runs it in-process (``trust_remote_code`` is the
suite's own decision about its own file, never taken from data).

``reset(seed)`` shows entry ``seed`` of the task's dataset in SPADE's prompt; ``step``
reads the answer (last ``<answer>``, else last ``\\boxed{}``), scores it with
reasoning-gym's ``score_answer`` and ends the episode: reward 1.0 for a win, else the
score (partial credit never counts as a win); ``info`` carries ``score`` and ``answer``.
``solution()`` is the entry's gold answer in ``<answer>`` tags (``replay:reference``).
"""

METADATA = {
    "name": "reasoning-gym entry",
    "skill": "reasoning",
    "description": "One question of a reasoning-gym dataset, answered once and scored by reasoning-gym's score_answer.",
    "tags": ["single-answer", "reasoning-gym", "external"],
}


class ReasoningGymEntryEnv:
    """A reasoning-gym question; one answer ends the episode."""

    def __init__(self, task="basic_arithmetic", config=None, max_turns=2, **kwargs):
        self.task = str(task)
        self.config = dict(config or {})
        self.max_turns = max_turns
        self._item = None
        self.score = None
        self.answer = None

    def _tasks(self):
        from spade_envs.evals import reasoning_gym_tasks

        return reasoning_gym_tasks

    def reset(self, seed=None):
        rg = self._tasks()
        self._item = rg.entry(self.task, self.config, int(seed or 0))
        self.score, self.answer = None, None
        return rg.question_text(self._item), {}

    def step(self, action):
        rg = self._tasks()
        self.answer = rg.extract_answer(action)
        self.score = rg.score(self.task, self.config, self._item, self.answer)
        reward = 1.0 if rg.is_win(self.score) else float(self.score)
        return "The episode is over.", reward, True, False, {"score": self.score, "answer": self.answer}

    def solution(self):
        return "<answer>" + self._tasks().reference_answer(self.task, self._item) + "</answer>"
