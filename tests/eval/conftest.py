"""Eval tests start real processes (the fake agent, the oracle, the real CLI); keep them quick."""

from __future__ import annotations
