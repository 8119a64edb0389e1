"""The tests' local Hub server: the packaged one (``python -m spade_envs.registry.hub_testserver``)."""

from spade_envs.registry.hub_testserver import HubServer, Repo, git_blob_sha1  # noqa: F401
