"""Language servers the harness itself starts (headless: no editor), and the reading of LSP answers
that both editor-query adapters share (the editor's, in server/, and the harness's own, here)."""
