"""The package as a user installs it: `.ci/build_dist.sh` builds the sdist, then the wheel from the
sdist, and `twine check --strict` passes both; the wheel holds every file of the package the
checkout tracks (modules and the data read at run time) and nothing else; installed into a fresh
venv with nothing but its dependencies, it runs `--version`, the demo and an LSP `initialize`
from a directory outside the checkout (tests/packaging/wheel_check.py, also .ci/wheel_check.sh)."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from lsp_agent._version import __version__
from tests.packaging import wheel_check

REPO = Path(__file__).resolve().parents[2]


def this_python_first() -> dict[str, str]:
    """build_dist.sh runs `python -m build`: the interpreter running the tests (it has the dev extra)."""
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(["bash", str(REPO / ".ci" / "build_dist.sh"), str(out)], cwd=REPO, capture_output=True,
                          text=True, timeout=600, env=this_python_first())
    assert done.returncode == 0, done.stderr[-4000:]
    path = Path(done.stdout.strip())
    assert path.parent == out and path.is_file(), done.stdout
    assert "PASSED" in done.stderr and "FAILED" not in done.stderr  # twine check --strict, both files
    # the wheel comes out of the sdist, so a file the sdist leaves out is missing from the wheel too
    assert "* Building wheel from sdist" in done.stderr
    return path


def _tracked_package_files() -> set[str]:
    listed = subprocess.run(["git", "ls-files", "lsp_agent"], cwd=REPO, capture_output=True, text=True, check=True)
    return set(listed.stdout.split())


def test_the_wheel_holds_every_tracked_file_of_the_package_and_nothing_else(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = archive.read(f"lsp_agent-{__version__}.dist-info/METADATA").decode()
    ours = {n for n in names if not n.startswith(f"lsp_agent-{__version__}.dist-info/")}
    # the run-time data beside the modules: the early `initialize` answer, and the typing marker
    assert {"lsp_agent/server/initialize_result.json", "lsp_agent/py.typed"} <= ours
    assert ours == _tracked_package_files()
    assert f"lsp_agent-{__version__}.dist-info/licenses/LICENSE" in names
    assert wheel.name == f"lsp_agent-{__version__}-py3-none-any.whl"
    assert f"\nVersion: {__version__}\n" in metadata and "\nLicense-Expression: MIT\n" in metadata
    # the README is the long description: what the tool does and how to install it come first
    assert "Description-Content-Type: text/markdown" in metadata and "\n## Install\n" in metadata


def test_the_sdist_sits_beside_the_wheel_with_the_license_and_readme(wheel: Path) -> None:
    import tarfile

    with tarfile.open(wheel.parent / f"lsp_agent-{__version__}.tar.gz") as archive:
        names = set(archive.getnames())
    root = f"lsp_agent-{__version__}"
    assert {f"{root}/LICENSE", f"{root}/README.md", f"{root}/pyproject.toml",
            f"{root}/lsp_agent/_version.py", f"{root}/lsp_agent/server/initialize_result.json"} <= names


def test_the_installed_wheel_runs_version_demo_and_initialize_outside_the_checkout(
        wheel: Path, tmp_path: Path) -> None:
    said = wheel_check.check(wheel, tmp_path / "venv", tmp_path)
    assert said[1] == f"lsp-agent {__version__}"
    assert said[2] == "demo: final / verified"
    assert said[3].startswith(f"initialize over stdio: serverInfo lsp-agent {__version__}")
