"""Refusals the core reports to any front end, with an HTTP-like status (400, 404, 409)."""

from __future__ import annotations


class AgentError(Exception):
    def __init__(self, kind: str, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.status = status


def invalid(message: str, kind: str = "invalid_params") -> AgentError:
    return AgentError(kind, message, 400)


def conflict(message: str, kind: str = "conflict") -> AgentError:
    return AgentError(kind, message, 409)


def not_found(message: str, kind: str = "not_found") -> AgentError:
    return AgentError(kind, message, 404)
