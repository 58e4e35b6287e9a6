"""Fixtures of the ACP tests: the LSP editor of tests/e2e, for the three-front-end comparison."""

from tests.e2e.conftest import start_editor  # noqa: F401
