"""The tests' local Hub server: the packaged one (``python -m spade_envs.registry.hub_testserver``)."""

import pytest

from spade_envs.registry.hub_testserver import HubServer, Repo, git_blob_sha1  # noqa: F401


@pytest.fixture
def hub(monkeypatch):
    """A local Hub server for one test: ``HF_ENDPOINT`` points at it, Xet off, a test token."""
    with HubServer() as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        monkeypatch.setenv("HF_TOKEN", "hf_test")
        yield server
