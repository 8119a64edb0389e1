"""Code extraction from a designer model's answer (designer/extract.py)."""

from __future__ import annotations

from spade_envs.designer.extract import extract_code, fenced_blocks

ENV = "class FooEnv:\n    def reset(self, seed=None):\n        return 'x', {}\n"


def test_python_fence_is_taken():
    assert extract_code(f"Sure!\n```python\n{ENV}```\nEnjoy.") == ENV


def test_largest_block_with_an_env_class_wins_over_larger_helper_block():
    helper = "def helper():\n" + "    x = 1\n" * 30
    big_env = ENV + "    def step(self, action):\n        return 'y', 0.0, False, False, {}\n"
    answer = f"```python\n{ENV}```\ntext\n```python\n{helper}```\n```py\n{big_env}```"
    assert extract_code(answer) == big_env


def test_without_env_class_the_largest_block_is_returned():
    answer = "```python\nx = 1\n```\n```\ndef f():\n    return 2\n```"
    assert extract_code(answer) == "def f():\n    return 2\n"


def test_other_languages_are_ignored():
    assert extract_code("```json\n{\"a\": 1}\n```") is None
    assert fenced_blocks("```bash\nls\n```\n```python\nx = 1\n```") == ["x = 1\n"]


def test_unterminated_fence_runs_to_the_end():
    assert extract_code(f"```python\n{ENV}    def step(self") == ENV + "    def step(self\n"


def test_raw_code_with_leading_prose():
    answer = "Here is my environment:\nimport random\n\n" + ENV
    assert extract_code(answer) == "import random\n\n" + ENV


def test_nothing_gives_none():
    for answer in (None, "", "   ", "I cannot write that.", "1 2 3 4", "the best env is FooEnv, trust me"):
        assert extract_code(answer) is None


def test_tilde_fences_and_indented_fences():
    assert extract_code(f"~~~python\n{ENV}~~~") == ENV
    assert extract_code(f"  ```python\n{ENV}  ```") == ENV


def test_closing_fence_glued_to_the_last_line():
    assert extract_code("```python\n" + ENV.rstrip("\n") + "```\nbye") == ENV
