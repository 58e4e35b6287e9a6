"""Paired harness experiments: `lsp-agent eval run` and `lsp-agent eval compare` (see docs/eval.md).

manifest    the strict manifest and the cohort hash
fixture     a fresh Git fixture per attempt
proctree    run a process in its own session; kill its whole tree
metrics     totals from the agent's --json events, withheld when the stream is damaged
records     the NDJSON lines
runner      attempts and the cohort (alternating arm order, incomplete marker, lost attempts)
progress    a live bar on a terminal, plain lines otherwise
resume      what an earlier run of the cohort already holds (`eval run --resume`)
bundle      the manifest's directory, packed to travel to cluster workers
executor    local (default) or Ray (optional extra), which ships the bundle
compare     pairing checks and statistics; report_text / report_html render them
cli         argparse wiring for `eval run` and `eval compare`
"""
