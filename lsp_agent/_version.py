"""The version of lsp-agent, in one place.

pyproject.toml reads it (setuptools parses this assignment without importing the package), and
`lsp-agent --version`, the server's `initialize` answer and the ACP agent info import it: a
constant costs nothing, where asking the installed package's metadata imported
importlib.metadata (email, zipfile, csv, ...) and doubled the time of `--version`.
scripts/bump_version.py changes it together with the VS Code extension's version.
"""

__version__ = "0.1.0"
