"""Versioned schema of the registry store (SQLite).

The schema version lives in ``PRAGMA user_version``; ``PRAGMA application_id`` holds
:data:`APPLICATION_ID` so that a foreign SQLite file is recognised and refused.
``MIGRATIONS[i]`` upgrades a store from version ``i`` to ``i + 1``; they run inside one
``BEGIN IMMEDIATE`` transaction, so a store is either fully migrated or untouched.
Never edit a published migration: append a new one and bump nothing else.
An entry is an SQL script (statements separated by ``;``) or a callable taking the
connection, for steps SQL alone cannot say robustly (rebuilding a table whatever columns
earlier migrations added to it).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable

#: "SPDE" as a big-endian 32-bit integer.
APPLICATION_ID = 0x53504445

#: Store sequence numbers start here; 1..FIRST_STORE_SEQ-1 is reserved for the seed
#: suite shipped in the package (generation 0), so a package upgrade that adds seeds can
#: never collide with ids already allocated in somebody's store.
FIRST_STORE_SEQ = 1000

_V1 = f"""
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO meta (key, value) VALUES ('first_store_seq', '{FIRST_STORE_SEQ}');

-- one row per distinct source text (content-addressed)
CREATE TABLE sources (
    sha256 TEXT PRIMARY KEY,
    source TEXT NOT NULL
) WITHOUT ROWID;

-- one row per (environment, version)
CREATE TABLE envs (
    seq INTEGER NOT NULL,
    version INTEGER NOT NULL,
    sha256 TEXT NOT NULL UNIQUE REFERENCES sources(sha256),
    class_name TEXT NOT NULL,
    generation INTEGER NOT NULL,
    status TEXT NOT NULL DEFAULT 'active'
        CHECK (status IN ('active', 'deprecated', 'quarantined')),
    status_reason TEXT,
    skill TEXT,
    description TEXT,
    designer_model TEXT,
    grounding_ref TEXT,
    parent_ids TEXT NOT NULL DEFAULT '[]',
    tool_specs TEXT NOT NULL DEFAULT '[]',
    metadata TEXT NOT NULL DEFAULT '{{}}',
    acceptance TEXT NOT NULL DEFAULT '[]',
    regret REAL,
    win_rate_hint REAL,
    win_rate_plain REAL,
    max_episode_steps INTEGER,
    origin TEXT NOT NULL DEFAULT 'local',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (seq, version)
);
-- covering index for Gymnasium registration at import time (no source pages read)
CREATE INDEX envs_registration ON envs (status, seq, version, max_episode_steps);
CREATE INDEX envs_generation ON envs (generation);
CREATE INDEX envs_skill ON envs (skill);
"""

#: Sharing (DESIGN.md section 7): which entries are published (pushed to or pulled from a
#: Hub repo: ``REPO@COMMIT``; NULL = local, never published, free to renumber on pull),
#: the PARAMETERS JSON Schema read statically from the source, the last synced commit of
#: every remote (a push refuses a remote that moved since), and aliases: the old ids of
#: local entries that a pull renumbered.
_V_SHARING = """
ALTER TABLE envs ADD COLUMN published TEXT;
ALTER TABLE envs ADD COLUMN parameters TEXT;
UPDATE envs SET published = origin WHERE origin LIKE 'hub:%';
CREATE TABLE remotes (
    repo TEXT PRIMARY KEY,
    commit_sha TEXT NOT NULL,
    updated_at TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE aliases (
    old_seq INTEGER NOT NULL,
    old_version INTEGER NOT NULL,
    new_seq INTEGER NOT NULL,
    new_version INTEGER NOT NULL,
    reason TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (old_seq, old_version)
) WITHOUT ROWID;
CREATE INDEX aliases_target ON aliases (new_seq, new_version);
"""


def _variants(conn: sqlite3.Connection) -> None:
    """Registry variants (issue 16): a variant is a parent program (``parent``: the full
    id ``spade/Env-NNNNN-vK``) plus fixed constructor kwargs (``params``: canonical JSON
    object), sharing the parent's source. ``envs.sha256`` can therefore no longer be
    UNIQUE: the table is rebuilt without that constraint (SQLite cannot drop one in
    place), keeping every column and index it has; ordinary entries stay unique by
    source, variants by (parent, params)."""
    table_sql = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'envs'").fetchone()[0]
    new_sql, n = re.subn(r"\bsha256\s+TEXT\s+NOT\s+NULL\s+UNIQUE\b", "sha256 TEXT NOT NULL", table_sql, count=1)
    if n != 1:
        raise sqlite3.DatabaseError("registry migration 'variants': envs.sha256 is not declared as expected")
    new_sql, n = re.subn(r"^\s*CREATE\s+TABLE\s+\"?envs\"?", "CREATE TABLE envs_variants_rebuild", new_sql, count=1)
    if n != 1:
        raise sqlite3.DatabaseError("registry migration 'variants': unexpected envs table definition")
    indexes = [r[0] for r in conn.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'envs' AND sql IS NOT NULL")]
    cols = ", ".join(f'"{r[1]}"' for r in conn.execute("PRAGMA table_info(envs)"))
    conn.execute(new_sql)
    conn.execute(f"INSERT INTO envs_variants_rebuild ({cols}) SELECT {cols} FROM envs")
    conn.execute("DROP TABLE envs")
    conn.execute("ALTER TABLE envs_variants_rebuild RENAME TO envs")
    for sql in indexes:
        conn.execute(sql)
    conn.execute("ALTER TABLE envs ADD COLUMN parent TEXT")
    conn.execute("ALTER TABLE envs ADD COLUMN params TEXT")
    conn.execute("CREATE UNIQUE INDEX envs_source_unique ON envs (sha256) WHERE parent IS NULL")
    conn.execute("CREATE UNIQUE INDEX envs_variant_unique ON envs (parent, params) WHERE parent IS NOT NULL")
    # Gymnasium registration reads the variants' kwargs from this covering index alone
    conn.execute("CREATE INDEX envs_variant_rows ON envs (status, seq, version, params) WHERE parent IS NOT NULL")


MIGRATIONS: list[str | Callable[[sqlite3.Connection], None]] = [_V1, _V_SHARING, _variants]

#: The schema version this code writes.
SCHEMA_VERSION = len(MIGRATIONS)
