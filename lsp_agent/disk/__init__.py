"""The workspace on disk: the atomic edit applier and the document source of headless runs."""
