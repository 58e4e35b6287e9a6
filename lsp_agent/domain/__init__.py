"""The leaf vocabulary: history, events, IDs, edits, verification, wire forms and the ports on them."""
