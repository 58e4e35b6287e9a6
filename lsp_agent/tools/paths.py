"""Moved to `lsp_agent.core.paths` (confinement is the controller's rule); kept so branches in flight still import."""

from lsp_agent.core.paths import PathDenied, normalize, relative, resolve_in_root

__all__ = ["PathDenied", "normalize", "relative", "resolve_in_root"]
