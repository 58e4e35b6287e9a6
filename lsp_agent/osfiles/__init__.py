"""Opening files the workspace controls without trusting what kind of file they are."""
