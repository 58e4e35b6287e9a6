"""API keys the editor handed over, per provider, in this process's memory only.

An editor keeps the key in its own secret store and sends it at start; the server never writes it
anywhere (no file, no settings, no log line, no event) and forgets it when the process ends. Keys are
not put into the environment: the commands the agent runs inherit the environment, and must not see
them. A key given here wins over the provider's environment variable.
"""

from __future__ import annotations

import os

__all__ = ["MAX_KEY_CHARS", "api_key", "forget", "has_key", "key_problem", "remember"]

MAX_KEY_CHARS = 4096

_keys: dict[str, str] = {}


def key_problem(key: str) -> str | None:
    """Why `key` cannot be an HTTP bearer token; never quotes the key (the message reaches the log)."""
    if not key:
        return "the key is empty"
    if len(key) > MAX_KEY_CHARS:
        return f"the key is longer than {MAX_KEY_CHARS} characters"
    if any(not (0x21 <= ord(c) <= 0x7E) for c in key):
        return "the key has a space, a control or a non-ASCII character: paste only the key"
    return None


def remember(provider: str, key: str) -> None:
    problem = key_problem(key)
    if problem is not None:
        raise ValueError(problem)
    _keys[provider] = key


def forget(provider: str) -> None:
    _keys.pop(provider, None)


def has_key(provider: str) -> bool:
    return provider in _keys


def api_key(provider: str | None, env_name: str) -> str | None:
    """The key to send: the one the editor gave for `provider`, else the environment variable's."""
    if provider is not None and provider in _keys:
        return _keys[provider]
    return os.environ.get(env_name) or None
