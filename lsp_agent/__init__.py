"""lsp-agent: a coding-agent harness served as a language server (see docs/architecture.md)."""

# `lsp_agent.__version__`, the usual place to look; the constant itself lives in _version.py, which
# pyproject.toml reads without importing this package
from lsp_agent._version import __version__

__all__ = ["__version__"]
