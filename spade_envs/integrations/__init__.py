"""Integrations with agent frameworks: TRL's ``environment_factory``
(:mod:`.trl_adapter`) and OpenEnv's HTTP/WebSocket protocol (:mod:`.openenv_server`).

Nothing heavy is imported here; each module imports its framework lazily or on use.
"""
