"""The project's instruction files are read from an untrusted repository.

AGENTS.md and `.lsp-agent/instructions.md` reach the model as text, so a repository must not use
them to make the harness hang (a FIFO under the name: opening it for reading blocks until a writer
comes) or to send the model a file from outside it (a symbolic link to a secret, a planted AGENTS.md
in a folder above the repository). Each attack here plants a canary secret and checks, with the real
CLI and a loopback model server recording every request, that the secret never left and the run
went on to its normal end with the user told what was skipped.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.providers.loopback import LoopbackServer, Reply, message_list, run_agent, turn, write_workspace

SECRET = "CANARY-SECRET-9b3e-never-sent"
OWN = "OWN-MARKER-51c0: keep the changelog"
TIMEOUT_S = 120.0


def _sent(server: LoopbackServer) -> str:
    return "\n".join(json.dumps(message_list("chat", r.json()), ensure_ascii=False) for r in server.requests)


def _notices(run_events: list[dict[str, object]]) -> list[str]:
    return [str(e["message"]) for e in run_events if e.get("type") == "notice" and e.get("kind") == "instructions"]


async def _run_once(server: LoopbackServer, root: Path) -> tuple[str, list[str]]:
    server.queue(Reply(chunks=[turn("chat", text="done")]))
    run = await run_agent("Hi.", root, server.url, "chat", timeout_s=TIMEOUT_S)
    assert run.finish["stopReason"] == "final", run.stderr
    return _sent(server), _notices(run.events)


async def test_a_fifo_agents_md_is_skipped_and_the_run_goes_on(server: LoopbackServer, tmp_path: Path,
                                                               isolated_state: Path) -> None:
    root = write_workspace(tmp_path / "ws", {".lsp-agent/instructions.md": f"{OWN}\n"})
    os.mkfifo(root / "AGENTS.md")  # no writer ever comes: a blocking open would hang the run
    sent, notices = await _run_once(server, root)
    assert OWN in sent  # the other file still reached the model
    assert any("AGENTS.md is a FIFO" in n for n in notices), notices


async def test_a_link_to_a_secret_outside_is_never_sent(server: LoopbackServer, tmp_path: Path,
                                                        isolated_state: Path) -> None:
    secret = tmp_path / "home" / ".ssh" / "id_canary"
    secret.parent.mkdir(parents=True)
    secret.write_text(f"{SECRET}\n")
    (tmp_path / "home" / "instructions.md").write_text(f"{SECRET} (a folder link)\n")
    root = write_workspace(tmp_path / "ws", {})
    (root / "AGENTS.md").symlink_to(secret)
    (root / ".lsp-agent").symlink_to(tmp_path / "home")  # a folder link: .lsp-agent/instructions.md is outside
    sent, notices = await _run_once(server, root)
    assert SECRET not in sent
    assert any("AGENTS.md" in n and "outside" in n for n in notices), notices
    assert any(".lsp-agent/instructions.md" in n and "outside" in n for n in notices), notices


async def test_a_link_inside_the_workspace_is_followed(server: LoopbackServer, tmp_path: Path,
                                                       isolated_state: Path) -> None:
    root = write_workspace(tmp_path / "ws", {"CLAUDE.md": f"{OWN}\n"})
    (root / "AGENTS.md").symlink_to("CLAUDE.md")
    sent, _ = await _run_once(server, root)
    assert OWN in sent


async def test_agents_md_above_the_repository_is_never_read(server: LoopbackServer, tmp_path: Path,
                                                            isolated_state: Path) -> None:
    """A workspace folder inside a Git repository gets the repository's AGENTS.md (the nearest one
    above it); one planted above the repository (a shared /tmp) is never read."""
    (tmp_path / "AGENTS.md").write_text(f"- {SECRET}\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "AGENTS.md").write_text(f"- {OWN}\n")
    root = write_workspace(repo / "pkg", {"AGENTS.md": "- the package's own rule\n"})
    sent, notices = await _run_once(server, root)
    assert SECRET not in sent
    assert OWN in sent and "## ../AGENTS.md" in sent
    assert sent.index("## ../AGENTS.md") < sent.index("## AGENTS.md")  # the nearer file comes later: it wins
    assert any("../AGENTS.md" in n for n in notices), notices


async def test_outside_any_repository_no_folder_above_is_read(server: LoopbackServer, tmp_path: Path,
                                                              isolated_state: Path) -> None:
    (tmp_path / "AGENTS.md").write_text(f"- {SECRET}\n")
    root = write_workspace(tmp_path / "ws", {"AGENTS.md": f"- {OWN}\n"})
    sent, _ = await _run_once(server, root)
    assert SECRET not in sent and OWN in sent
