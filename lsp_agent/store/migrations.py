"""Schema versions. Each migration runs once, in order, inside a transaction."""

from __future__ import annotations

import sqlite3

MIGRATIONS: list[str] = [
    # 1: sessions, messages, parts, replay events
    """
    CREATE TABLE sessions (
        id TEXT PRIMARY KEY, workspace TEXT NOT NULL, model TEXT NOT NULL, title TEXT NOT NULL,
        parent_id TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
    CREATE TABLE messages (
        id TEXT PRIMARY KEY, session_id TEXT NOT NULL REFERENCES sessions(id), seq INTEGER NOT NULL,
        role TEXT NOT NULL, generation TEXT, step INTEGER, created_at INTEGER NOT NULL,
        UNIQUE(session_id, seq));
    CREATE TABLE parts (
        id TEXT PRIMARY KEY, message_id TEXT NOT NULL REFERENCES messages(id),
        session_id TEXT NOT NULL, seq INTEGER NOT NULL, type TEXT NOT NULL, data TEXT NOT NULL,
        created_at INTEGER NOT NULL, UNIQUE(message_id, seq));
    CREATE INDEX parts_session ON parts(session_id);
    CREATE TABLE events (
        id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, kind TEXT NOT NULL,
        data TEXT NOT NULL, created_at INTEGER NOT NULL);
    CREATE INDEX events_session ON events(session_id, kind);
    """,
    # 2: the follow-up queue; the generation a session is running (re-checked when steering writes)
    """
    ALTER TABLE sessions ADD COLUMN active_generation TEXT;
    CREATE TABLE queue (
        id TEXT PRIMARY KEY, session_id TEXT NOT NULL, kind TEXT NOT NULL, text TEXT NOT NULL,
        attachments TEXT NOT NULL DEFAULT '[]', status TEXT NOT NULL, position INTEGER NOT NULL,
        created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, sent_at INTEGER, message_id TEXT,
        steered_into TEXT, steered_at INTEGER, steered_applied_at INTEGER, steer_owner TEXT,
        cancelled_at INTEGER, error TEXT);
    CREATE INDEX queue_session ON queue(session_id, status, position);
    """,
    # 3: skill candidates (the record is JSON; `state` is a column for guarded writes) and the
    # per-name lock rows that keep two processes off one candidate
    """
    CREATE TABLE skill_candidates (
        workspace TEXT NOT NULL, name TEXT NOT NULL, state TEXT NOT NULL, record TEXT NOT NULL,
        created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, PRIMARY KEY (workspace, name));
    CREATE TABLE skill_locks (
        workspace TEXT NOT NULL, name TEXT NOT NULL, owner TEXT NOT NULL, acquired_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL, PRIMARY KEY (workspace, name));
    """,
    # 4: accepted steering corrections not yet applied (write-ahead: on disk before the receipt says
    # accepted; on restart each is applied or surfaced as a queue row, never twice)
    """
    CREATE TABLE corrections (
        session_id TEXT NOT NULL, client_id TEXT NOT NULL, generation TEXT NOT NULL, text TEXT NOT NULL,
        queue_item TEXT, owner TEXT NOT NULL, created_at INTEGER NOT NULL, PRIMARY KEY (session_id, client_id));
    """,
    # 5: which process writes a session now (its identity and heartbeat); another process reads the
    # session but neither repairs nor writes it while the holder lives
    """
    CREATE TABLE session_leases (
        session_id TEXT PRIMARY KEY, owner TEXT NOT NULL, acquired_at INTEGER NOT NULL,
        heartbeat_at INTEGER NOT NULL, expires_at INTEGER NOT NULL);
    """,
]

SCHEMA_VERSION = len(MIGRATIONS)


def migrate(db: sqlite3.Connection) -> int:
    """Bring the database to SCHEMA_VERSION; returns the version found before."""
    found = int(db.execute("PRAGMA user_version").fetchone()[0])
    if found > SCHEMA_VERSION:
        raise RuntimeError(f"store schema {found} is newer than this lsp-agent ({SCHEMA_VERSION}); upgrade it")
    for version in range(found, SCHEMA_VERSION):
        db.execute("BEGIN IMMEDIATE")
        try:
            for statement in MIGRATIONS[version].split(";"):
                if statement.strip():
                    db.execute(statement)
            db.execute(f"PRAGMA user_version={version + 1}")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
    return found
