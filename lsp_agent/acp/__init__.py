"""The Agent Client Protocol front end (`lsp-agent acp`): the same core as the language server and the
CLI, driven over ACP's JSON-RPC on stdio. The core knows nothing of it; only this package imports `acp`."""
