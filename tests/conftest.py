"""Test-session set-up shared by every test module.

The registry store lives in a fresh temporary ``SPADE_HOME`` per test session, so tests
never see (or write to) a developer's own registry. Converted model weights are costly to
rebuild, so they are cached outside it, in ``SPADE_MODELS`` (default
``~/.cache/spade/models``).
"""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("SPADE_MODELS", os.path.join(os.path.expanduser("~"), ".cache", "spade", "models"))
os.environ["SPADE_HOME"] = tempfile.mkdtemp(prefix="spade-test-home-")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: long-running test (still part of the default run unless deselected)")
