"""Set the release version everywhere it is written down, in one step:

    python scripts/bump_version.py 0.2.0

- lsp_agent/_version.py: the one source of the Python package's version (pyproject.toml reads it;
  `--version`, the server's `initialize` and the ACP agent info import it);
- vscode-client/package.json and package-lock.json: the extension's version, which the server and
  the extension compare at `initialize`, so a release moves both or the editor warns of a mismatch;
- lsp_agent/server/initialize_result.json: the `initialize` answer server/boot.py sends before the
  server is imported (a unit test rebuilds it with pygls and compares);
- editors/nvim/lua/lsp_agent/version.lua (when the plugin has it): the server version the Neovim
  plugin was written for, which `:checkhealth lsp_agent` compares;
- the wheel's file name where the install instructions spell it out (INSTALL_DOCS).

Each file is edited in place, keeping its formatting. tests/unit/test_version.py fails while any of
them disagrees.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
#: MAJOR.MINOR.PATCH: the one shape both PEP 440 and the VS Code marketplace read the same way (a
#: PEP 440 pre-release such as 1.0rc1 is no semver, and the marketplace takes no pre-release tag)
VERSION = re.compile(r"^\d+\.\d+\.\d+$")
#: the documents whose install instructions name the wheel (not every doc: a measurement's record
#: names the version it measured and must keep it)
INSTALL_DOCS = ("README.md", "docs/install.md", "docs/troubleshooting.md")
#: the wheel's file name as the install instructions write it
WHEEL_NAME = re.compile(r"lsp_agent-\d+\.\d+\.\d+-py3-none-any\.whl")


def _replace_once(path: Path, pattern: str, replacement: str) -> None:
    text = path.read_text(encoding="utf-8")
    new, count = re.subn(pattern, replacement, text, count=1, flags=re.MULTILINE)
    if count != 1:
        raise SystemExit(f"{path.relative_to(REPO)}: the version line was not found (pattern {pattern!r})")
    path.write_text(new, encoding="utf-8")


def bump(version: str) -> list[Path]:
    python = REPO / "lsp_agent" / "_version.py"
    _replace_once(python, r'^__version__ = "[^"]*"$', f'__version__ = "{version}"')
    package = REPO / "vscode-client" / "package.json"
    # the first "version" key at two spaces of indent is the package's own (engines and
    # dependencies are nested deeper)
    _replace_once(package, r'^  "version": "[^"]*",$', f'  "version": "{version}",')
    lock = REPO / "vscode-client" / "package-lock.json"
    data = json.loads(lock.read_text(encoding="utf-8"))
    data["version"] = version
    data["packages"][""]["version"] = version
    lock.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    answer = REPO / "lsp_agent" / "server" / "initialize_result.json"
    result = json.loads(answer.read_text(encoding="utf-8"))
    result["serverInfo"]["version"] = version
    answer.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    written = [python, package, lock, answer]
    nvim = REPO / "editors" / "nvim" / "lua" / "lsp_agent" / "version.lua"
    if nvim.exists():
        _replace_once(nvim, r'^return "[^"]*"$', f'return "{version}"')
        written.append(nvim)
    for doc in (REPO / rel for rel in INSTALL_DOCS):
        text = doc.read_text(encoding="utf-8")
        new = WHEEL_NAME.sub(f"lsp_agent-{version}-py3-none-any.whl", text)
        if new != text:
            doc.write_text(new, encoding="utf-8")
            written.append(doc)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="set the release version in every file that states it")
    parser.add_argument("version", help="MAJOR.MINOR.PATCH")
    args = parser.parse_args(argv)
    if not VERSION.match(args.version):
        print(f"bump_version: {args.version!r} is not MAJOR.MINOR.PATCH", file=sys.stderr)
        return 2
    for path in bump(args.version):
        print(f"wrote {path.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
