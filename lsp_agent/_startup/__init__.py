"""Start-up and memory tricks of the lsp-agent process, each justified by a benchmark."""
