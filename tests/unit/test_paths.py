"""resolve_in_root's common case skips re-resolving the root and walks only the given components
(it runs for every path a tool touches); it must resolve exactly as a full `Path.resolve()` does, links and all."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pytest

from lsp_agent.core import paths
from lsp_agent.core.paths import PathDenied, real_root, resolve_in_root

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the lstat walk is the POSIX path")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A workspace with links inside it, out of it, dangling and looping, and a file used as a dir."""
    ws = tmp_path / "ws"
    (ws / "src" / "deep").mkdir(parents=True)
    (ws / "src" / "deep" / "a.py").write_text("a")
    (ws / "file.txt").write_text("f")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("s")
    (ws / "in_link").symlink_to(ws / "src")
    (ws / "src" / "out_link").symlink_to(outside)
    (ws / "dangling").symlink_to(ws / "nowhere")
    (ws / "loop").symlink_to(ws / "loop")
    return ws


def test_the_walk_resolves_as_path_resolve_does(tree: Path) -> None:
    names = ["src", "deep", "a.py", "in_link", "out_link", "secret", "dangling", "loop", "file.txt", "missing"]
    real = real_root(tree)
    for depth in (1, 2, 3):
        for parts in itertools.product(names, repeat=depth):
            rel = "/".join(parts)
            try:
                expected: Path | str = (real / rel).resolve()
            except (OSError, RuntimeError) as exc:
                expected = type(exc).__name__
            try:
                got: Path | str = paths._resolve_below(real, rel)
            except (OSError, RuntimeError) as exc:
                got = type(exc).__name__
            assert got == expected, rel


def test_links_out_of_the_workspace_are_refused_at_any_depth(tree: Path) -> None:
    for rel in ("src/out_link", "src/out_link/secret", "in_link/out_link/secret"):
        with pytest.raises(PathDenied, match="outside the workspace"):
            resolve_in_root(tree, rel)
    assert resolve_in_root(tree, "in_link/deep/a.py") == real_root(tree) / "src" / "deep" / "a.py"


def test_a_root_swapped_for_a_link_later_does_not_move_the_boundary(tmp_path: Path) -> None:
    ws, elsewhere = tmp_path / "ws", tmp_path / "elsewhere"
    ws.mkdir()
    elsewhere.mkdir()
    (elsewhere / "x.txt").write_text("x")
    assert resolve_in_root(ws, "x.txt") == ws.resolve() / "x.txt"
    ws.rmdir()
    ws.symlink_to(elsewhere)
    with pytest.raises(PathDenied, match="outside the workspace"):
        resolve_in_root(ws, "x.txt")
