"""The project's fixed verification commands, detected from its files, and their short labels.

Used when the configuration names no `[[tools.verify]]` commands. Detection only reads files and
asks which tools are installed; it never runs anything.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import tomllib
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from lsp_agent.domain import bounded_json
from lsp_agent.osfiles.regular import read_regular_bytes
from lsp_agent.settings.config import VerifyCommand

if TYPE_CHECKING:
    import configparser

_SKIP_DIRS = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".mypy_cache",
                        ".ruff_cache", ".pytest_cache", ".tox", ".nox", "build", "dist", "site-packages"})
_SCAN_DEPTH = 6
_SCAN_DIRS = 5000
# npm writes this placeholder into every new package.json; it is not a test suite.
_NPM_PLACEHOLDER = "no test specified"


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(read_regular_bytes(path).decode("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}


def _ini_sections(path: Path) -> configparser.ConfigParser | None:
    import configparser  # only when a project has an .ini/.cfg to read: ≈ 170 KB a run need not hold

    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(read_regular_bytes(path).decode("utf-8"))
    except (OSError, UnicodeDecodeError, configparser.Error):
        return None
    return parser


def _has_test_files(root: Path) -> bool:
    for visited, (current, dirs, files) in enumerate(os.walk(root), start=1):
        depth = len(Path(current).relative_to(root).parts)
        if any(f.endswith(".py") and (f.startswith("test_") or f.endswith("_test.py")) for f in files):
            return True
        if depth == 1 and Path(current).name == "tests" and any(f.endswith(".py") for f in files):
            return True
        if depth >= _SCAN_DEPTH or visited >= _SCAN_DIRS:
            dirs[:] = []
        else:
            dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
    return False


def _uses_pytest(root: Path, pyproject: dict[str, Any]) -> bool:
    if (root / "pytest.ini").is_file() or (root / "conftest.py").is_file():
        return True
    if "pytest" in pyproject.get("tool", {}):
        return True
    for name, section in (("setup.cfg", "tool:pytest"), ("tox.ini", "pytest")):
        ini = _ini_sections(root / name) if (root / name).is_file() else None
        if ini is not None and ini.has_section(section):
            return True
    return _has_test_files(root)


def _mypy_config(root: Path, pyproject: dict[str, Any]) -> dict[str, Any] | None:
    """mypy's settings when the project configures it (its keys decide whether we pass targets)."""
    if "mypy" in pyproject.get("tool", {}):
        section = pyproject["tool"]["mypy"]
        return section if isinstance(section, dict) else {}
    for name, section_name in (("mypy.ini", "mypy"), (".mypy.ini", "mypy"), ("setup.cfg", "mypy")):
        ini = _ini_sections(root / name) if (root / name).is_file() else None
        if ini is not None and ini.has_section(section_name):
            return dict(ini.items(section_name))
    return None


def _module_available(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


def _python_tool(module: str) -> list[str] | None:
    if _module_available(module):
        return [sys.executable, "-m", module]
    found = shutil.which(module)
    return [found] if found else None


def _npm_test_script(root: Path) -> bool:
    try:
        data = bounded_json.loads(read_regular_bytes(root / "package.json"))  # the repository's file
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    scripts = data.get("scripts") if isinstance(data, dict) else None
    test = scripts.get("test") if isinstance(scripts, dict) else None
    return isinstance(test, str) and bool(test.strip()) and _NPM_PLACEHOLDER not in test


def detect_commands(root: Path) -> list[VerifyCommand]:
    """The project's own checks, found from its files; blocking (call it in a thread)."""
    pyproject = _read_toml(root / "pyproject.toml") if (root / "pyproject.toml").is_file() else {}
    commands: list[VerifyCommand] = []
    if _uses_pytest(root, pyproject):
        # --verbosity=-1 pins the level even when the project's addopts already has -q (at -qq
        # pytest drops the closing "N passed" line); no cache provider, so no .pytest_cache appears.
        commands.append(VerifyCommand(kind="test", parser="pytest", argv=[
            sys.executable, "-m", "pytest", "-q", "--verbosity=-1", "-rfE", "--tb=short", "--no-header",
            "-p", "no:cacheprovider"]))
    if _npm_test_script(root):
        commands.append(VerifyCommand(kind="test", parser="generic", argv=["npm", "test"]))
    mypy_settings = _mypy_config(root, pyproject)
    if mypy_settings is not None and _module_available("mypy"):
        targets = [] if any(k in mypy_settings for k in ("files", "packages", "modules")) else ["."]
        commands.append(VerifyCommand(kind="typecheck", parser="mypy", argv=[
            sys.executable, "-m", "mypy", "--no-pretty", "--error-summary", *targets]))
    if (root / "pyrightconfig.json").is_file() or "pyright" in pyproject.get("tool", {}):
        local = root / "node_modules" / ".bin" / "pyright"
        program = "node_modules/.bin/pyright" if local.is_file() else shutil.which("pyright")
        if program:
            commands.append(VerifyCommand(kind="typecheck", parser="pyright", argv=[program]))
    if (root / "tsconfig.json").is_file() and (root / "node_modules" / ".bin" / "tsc").is_file():
        # A relative program path is resolved against the working directory (the root).
        commands.append(VerifyCommand(kind="typecheck", parser="tsc", argv=[
            "node_modules/.bin/tsc", "--noEmit", "--pretty", "false", "-p", "."]))
    has_ruff_config = any((root / n).is_file() for n in ("ruff.toml", ".ruff.toml"))
    if has_ruff_config or "ruff" in pyproject.get("tool", {}):
        ruff = _python_tool("ruff")
        if ruff:
            # --no-fix: verification must never change the sources it is judging.
            commands.append(VerifyCommand(kind="lint", parser="ruff", argv=[
                *ruff, "check", "--output-format", "concise", "--no-fix", "--no-cache"]))
    return commands


def command_label(command: VerifyCommand) -> str:
    """A short, stable name for a command in result text (never an absolute path)."""
    if command.parser != "generic":
        return command.parser
    argv = command.argv
    program = PurePosixPath(argv[0].replace("\\", "/")).name
    if program.startswith("python") and len(argv) > 2 and argv[1] == "-m":
        return argv[2]
    if program.startswith("python") and len(argv) > 1 and argv[1] == "-c":
        return "python -c"  # the program text itself is too long to name a check
    if program in ("npm", "yarn", "pnpm") and len(argv) > 1:
        return f"{program} {argv[1]}"
    if program.startswith("python") and len(argv) > 1 and not argv[1].startswith("-"):
        return f"python {PurePosixPath(argv[1].replace(chr(92), '/')).name}"
    return program
