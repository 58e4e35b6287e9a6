"""The wire schema shared by every front end: method names, params/results, error codes.

Imports no LSP library; the server converts these models at its boundary.
"""
