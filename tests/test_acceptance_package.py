"""The acceptance package's own structure: its entry points, its stage lists, its names."""

from spade_envs.designer import acceptance


def test_no_reference_text_matches_what_the_registry_reads_from_old_entries():
    from spade_envs.registry.verification import STORED_NO_REFERENCE, is_verified

    assert acceptance.NO_REFERENCE == STORED_NO_REFERENCE
    old = {"acceptance": [{"name": "solution_replay", "ok": True, "detail": acceptance.NO_REFERENCE}]}
    assert not is_verified(old)
