"""Skill evidence from headless runs, using only what the CLI prints (CI has no editor): every event's
`messageID` is the message that stores its part, `run_finish` carries a pasteable citation, and
`skill candidate propose|validate --from-session` pick the evidence themselves."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.unit.test_skills_kit import project

PY = sys.executable
CHECK = [PY, "-c", "import calc; assert calc.add(2, 3) == 5"]
CONFIG = f'[[tools.verify]]\nkind = "test"\nparser = "generic"\nargv = {json.dumps(CHECK)}\n'
SKILL = ".lsp-agent/skills/calc-tests/SKILL.md"
FIELDS = ["--description", "Run the calc tests", "--applicability", "When calc.py changes.",
          "--procedure", "1. Edit calc.py.\n2. Run verify_project."]


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PY, "-m", "lsp_agent", *map(str, args)], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ))


def workspace(tmp_path: Path) -> Path:
    # The verify command is part of the committed project, so the tree stays clean.
    return project(tmp_path / "ws", {".lsp-agent/config.toml": CONFIG})


def run_json(root: Path, scripts: Path, name: str, replies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A real `lsp-agent run --json` on the scripted model; its events. Scripts live outside the tree."""
    script = scripts / f"{name}.json"
    script.write_text(json.dumps({"label": name, "replies": replies}), encoding="utf-8")
    proc = cli("run", "verify the project", "--workspace", root, "--model", "scripted/t", "--script", script, "--json")
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


VERIFY_RUN = [{"text": "checking", "tool_calls": [{"name": "verify_project", "arguments": {}}]},
              {"reasoning": "it passed", "text": "done"}]


def verify_run(root: Path, scripts: Path, name: str) -> list[dict[str, Any]]:
    return run_json(root, scripts, name, VERIFY_RUN)


def show(root: Path, session_id: str) -> dict[str, Any]:
    proc = cli("session", "show", session_id, "--workspace", root, "--json")
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def test_every_event_cites_the_message_that_stores_its_part(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    events = verify_run(root, tmp_path, "a")
    session_id = events[-1]["sessionID"]
    stored = {m["id"]: {p["id"] for p in m["parts"]} for m in show(root, session_id)["messages"]}
    with_parts = [e for e in events if isinstance(e.get("part"), dict) and "messageID" in e["part"]]
    assert sorted({e["type"] for e in with_parts}) == ["reasoning", "text", "tool_use"]
    for event in with_parts:  # one rule: the part is stored in the message the event names
        assert event["part"]["id"] in stored[event["part"]["messageID"]], event
    use = next(e for e in events if e["type"] == "tool_use")
    finish = events[-1]
    assert finish["type"] == "run_finish" and finish["verification"] == "verified"
    assert finish["verificationCitation"] == {"sessionID": session_id, "messageID": use["part"]["messageID"],
                                              "partID": use["part"]["id"]}
    assert finish["verificationPartID"] == use["part"]["id"]


def test_the_ids_a_tool_use_event_prints_are_accepted_as_evidence(tmp_path: Path) -> None:
    """The reported flow: sessionID, part.id and part.messageID copied from the tool_use event."""
    root = workspace(tmp_path)
    events = verify_run(root, tmp_path, "a")
    use = next(e for e in events if e["type"] == "tool_use")
    evidence = {"sessionID": use["sessionID"], "messageID": use["part"]["messageID"], "partID": use["part"]["id"]}
    file = tmp_path / "proposal.json"
    file.write_text(json.dumps({"name": "calc-tests", "description": "Run the calc tests",
                                "applicability": "When calc.py changes.", "procedure": "Run verify_project.",
                                "evidence": evidence}), encoding="utf-8")
    proc = cli("skill", "candidate", "propose", "--proposal", file, "--workspace", root)
    assert proc.returncode == 0, proc.stderr


def test_the_documented_cli_flow_turns_two_headless_sessions_into_a_skill(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    first = verify_run(root, tmp_path, "a")[-1]
    # Session A's run_finish citation, pasted verbatim as the proposal's evidence.
    file = tmp_path / "proposal.json"
    file.write_text(json.dumps({"name": "calc-tests", "description": "Run the calc tests",
                                "applicability": "When calc.py changes.",
                                "procedure": "1. Edit calc.py.\n2. Run verify_project.",
                                "evidence": first["verificationCitation"]}), encoding="utf-8")
    proposed = cli("skill", "candidate", "propose", "--proposal", file, "--workspace", root, "--json")
    assert proposed.returncode == 0, proposed.stdout + proposed.stderr
    assert json.loads(proposed.stdout)["candidate"]["state"] == "pending"

    second = verify_run(root, tmp_path, "b")[-1]
    assert second["sessionID"] != first["sessionID"]
    validated = cli("skill", "candidate", "validate", "calc-tests", "--from-session", second["sessionID"],
                    "--workspace", root)
    assert validated.returncode == 0 and "validated" in validated.stdout, validated.stderr
    assert second["verificationCitation"]["partID"] in validated.stdout

    promoted = cli("skill", "candidate", "promote", "calc-tests", "--workspace", root)
    assert promoted.returncode == 0, promoted.stderr
    text = (root / SKILL).read_text(encoding="utf-8")
    assert text.startswith("---\nname: calc-tests\n")
    assert first["verificationCitation"]["partID"] in text and second["verificationCitation"]["partID"] in text


def test_propose_from_a_session_with_fields_as_flags(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    first = verify_run(root, tmp_path, "a")[-1]
    proposed = cli("skill", "candidate", "propose", "calc-tests", "--from-session", first["sessionID"], *FIELDS,
                   "--workspace", root, "--json")
    assert proposed.returncode == 0, proposed.stdout + proposed.stderr
    source = json.loads(proposed.stdout)["candidate"]["source"]
    assert {k: source[k] for k in ("sessionID", "messageID", "partID")} == first["verificationCitation"]
    second = verify_run(root, tmp_path, "b")[-1]
    assert cli("skill", "candidate", "validate", "calc-tests", "--from-session", second["sessionID"],
               "--workspace", root).returncode == 0
    assert cli("skill", "candidate", "promote", "calc-tests", "--workspace", root).returncode == 0
    assert "1. Edit calc.py.\n2. Run verify_project.\n" in (root / SKILL).read_text(encoding="utf-8")


def test_from_session_picks_the_latest_passing_result_and_keeps_every_rule(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    verify_twice = [{"tool_calls": [{"name": "verify_project", "arguments": {}}]},
                    {"tool_calls": [{"name": "verify_project", "arguments": {}}]}, {"text": "done"}]
    events = run_json(root, tmp_path, "twice", verify_twice)
    uses = [e for e in events if e["type"] == "tool_use"]
    proposed = cli("skill", "candidate", "propose", "calc-tests", "--from-session", events[-1]["sessionID"],
                   *FIELDS, "--workspace", root, "--json")
    assert proposed.returncode == 0, proposed.stdout
    assert json.loads(proposed.stdout)["candidate"]["source"]["partID"] == uses[-1]["part"]["id"]

    # A session without a verification, an unknown one, and a moved revision: refused by rule.
    chat = run_json(root, tmp_path, "chat", [{"text": "hello"}])[-1]["sessionID"]
    for session, rule in ((chat, "no_verification"), ("ses_nope", "unknown_session")):
        refused = cli("skill", "candidate", "propose", "other", "--from-session", session, *FIELDS,
                      "--workspace", root, "--json")
        assert refused.returncode == 1 and json.loads(refused.stdout)["rule"] == rule
    (root / "calc.py").write_text("def add(a, b):\n    return b + a\n", encoding="utf-8")
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@localhost", "commit", "-qam", "move"],
                   cwd=root, check=True)
    moved = cli("skill", "candidate", "validate", "calc-tests", "--from-session", events[-1]["sessionID"],
                "--workspace", root, "--json")
    assert moved.returncode == 1 and json.loads(moved.stdout)["rule"] in ("same_session", "revision_moved")


def test_from_session_usage_and_conflicts(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    neither = cli("skill", "candidate", "propose", "calc-tests", *FIELDS, "--workspace", root)
    assert neither.returncode == 2 and "--proposal FILE or --from-session SES" in neither.stderr
    both = cli("skill", "candidate", "validate", "calc-tests", "--proposal", tmp_path / "x.json",
               "--from-session", "ses_x", "--workspace", root)
    assert both.returncode == 2 and "not allowed with" in both.stderr
    file = tmp_path / "p.json"
    file.write_text(json.dumps({"evidence": {"sessionID": "s", "messageID": "m", "partID": "p"}}), encoding="utf-8")
    twice = cli("skill", "candidate", "propose", "calc-tests", "--proposal", file, "--from-session", "ses_x",
                *FIELDS, "--workspace", root, "--json")
    assert twice.returncode == 1 and json.loads(twice.stdout)["rule"] == "proposal_invalid"


def test_session_show_lists_parts_with_a_pasteable_citation(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    finish = verify_run(root, tmp_path, "a")[-1]
    proc = cli("session", "show", finish["sessionID"], "--workspace", root)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"session {finish['sessionID']} · verify the project · 4 messages\n")
    assert f"evidence: {json.dumps(finish['verificationCitation'])}" in proc.stdout
    missing = cli("session", "show", "ses_nope", "--workspace", root)
    assert missing.returncode == 2 and "no session 'ses_nope'" in missing.stderr and "Traceback" not in missing.stderr
