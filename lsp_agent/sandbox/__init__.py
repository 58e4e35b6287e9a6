"""OS sandbox (bubblewrap) for every process started for the model; see docs/security.md."""

from lsp_agent.sandbox.policy import Prepared, Sandbox, SandboxRefused, startup_notice, unavailable_notice
from lsp_agent.sandbox.probe import Probe, probe

__all__ = ["Prepared", "Probe", "Sandbox", "SandboxRefused", "probe", "startup_notice", "unavailable_notice"]
