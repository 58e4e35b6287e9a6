"""The command line: `lsp-agent` and its subcommands, and the sinks that print a run."""
