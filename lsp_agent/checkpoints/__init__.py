"""Checkpoints and rewind: the workspace recorded before every step that may write, restored on request.

A content-addressed store of the project's own (zlib, sha256) under the state directory, with an
append-only chain of deltas per workspace; see docs/architecture.md, "Checkpoints and rewind".
"""
