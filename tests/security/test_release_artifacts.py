"""What ships to users is what git tracks: a file in the checkout that nobody added (a scratch
module, a `server/*.json` holding a key — both match the package's patterns) is in neither the
sdist nor the wheel `.ci/build_dist.sh` makes, and a file git ignores neither."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def this_python_first() -> dict[str, str]:
    """build_dist.sh runs `python -m build`: the interpreter running the tests (it has the dev extra)."""
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
CANARY = "CANARY-7f3a-release-secret"


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, timeout=120)


def _copy_of_the_checkout(into: Path) -> Path:
    """The tracked files as they are now (this test sees uncommitted work too), as a fresh repository."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, check=True, capture_output=True, timeout=120)
    packed = subprocess.run(["tar", "--null", "--ignore-failed-read", "-T", "-", "-cf", "-"], cwd=REPO,
                            input=listed.stdout, check=True, capture_output=True, timeout=300)
    into.mkdir()
    subprocess.run(["tar", "-xf", "-"], cwd=into, input=packed.stdout, check=True, timeout=300)
    _git(into, "init", "-q")
    _git(into, "add", "-A")
    _git(into, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "copy")
    return into


def test_files_git_does_not_track_never_ship(tmp_path: Path) -> None:
    repo = _copy_of_the_checkout(tmp_path / "repo")
    strays = {
        "lsp_agent/server/local_keys.json": f'{{"apiKey": "{CANARY}"}}\n',  # untracked, matches server/*.json
        "lsp_agent/scratch_canary.py": f'KEY = "{CANARY}"\n',  # untracked module
        "lsp_agent/server/__pycache__/cached.json": f'"{CANARY}"\n',  # ignored (.gitignore)
    }
    for rel, text in strays.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text, encoding="utf-8")

    done = subprocess.run(["bash", str(repo / ".ci" / "build_dist.sh"), str(tmp_path / "dist")], cwd=repo,
                          capture_output=True, text=True, timeout=600, env=this_python_first())
    assert done.returncode == 0, done.stderr[-4000:]
    wheel = Path(done.stdout.strip())
    (sdist,) = (tmp_path / "dist").glob("lsp_agent-*.tar.gz")

    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        assert "lsp_agent/server/initialize_result.json" in names  # the real package data did ship
        leaked = [n for n in names if CANARY.encode() in archive.read(n)]
    with tarfile.open(sdist) as archive:
        members = [m for m in archive.getmembers() if m.isfile()]
        leaked += [m.name for m in members if CANARY.encode() in (archive.extractfile(m) or b"").read()]
    assert leaked == []
    assert not any(rel.rsplit("/", 1)[1] in " ".join(names) for rel in strays)
