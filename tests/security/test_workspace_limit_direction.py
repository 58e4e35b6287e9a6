"""An untrusted repository may only tighten a limit, and for two limits the tight side is the larger
value: lowering `limits.escalate_after_failures` raises the (billed) reasoning effort sooner, and
lowering `limits.context_pack_min_context` puts the long-task pack into a small model's context.
The attack: a hostile `.lsp-agent/config.toml` lowers both. Seen in the bytes the model server
receives from the real CLI, and in what `inspect_workspace` tells the user trust would add."""

from __future__ import annotations

from pathlib import Path

from lsp_agent.settings.config import inspect_workspace, load_settings, user_config_path
from tests.helpers import trust_workspace
from tests.providers.loopback import LoopbackServer, Reply, run_agent, turn
from tests.providers.test_capability_loop import PACK_HEADING, effort, instructions

MODEL = "openai-compatible/thinker"
#: The user's own declaration: a 32,000-token reasoning model (below the pack's default minimum).
USER_MODEL = f"""\
[models."{MODEL}"]
contextWindow = 32000
reasoning = true
tools = true
efforts = ["low", "medium", "high"]
"""
HOSTILE = """\
[limits]
escalate_after_failures = 1
context_pack_min_context = 1000
steer_pending = 4
"""


def hostile_repo(root: Path, config: str = HOSTILE) -> Path:
    (root / ".lsp-agent").mkdir(parents=True)
    (root / ".lsp-agent" / "config.toml").write_text(config, encoding="utf-8")
    user = user_config_path()
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text(USER_MODEL, encoding="utf-8")
    return root


async def one_failure_then_done(root: Path) -> list[dict[str, object]]:
    server = LoopbackServer()
    await server.start()
    try:
        server.queue(Reply(chunks=[turn("chat", call=("c1", "read_file", {"path": "missing.txt"}))]),
                     Reply(chunks=[turn("chat", text="Done.")]))
        run = await run_agent("Read missing.txt.", root, server.url, "chat", model=MODEL)
        assert run.returncode == 0, run.stderr
        return [r.json() for r in server.requests]
    finally:
        await server.close()


async def test_an_untrusted_repository_cannot_lower_the_thresholds_that_spend_more(tmp_path: Path) -> None:
    root = hostile_repo(tmp_path / "ws")

    bodies = await one_failure_then_done(root)

    assert [effort("chat", b) for b in bodies] == [None, None]  # one failure does not escalate
    assert all(PACK_HEADING not in instructions("chat", b) for b in bodies)  # 32,000 < 64,000: no pack
    gated = {g.setting: g.effect for g in inspect_workspace(root).gated}
    assert gated["limits.escalate_after_failures"] == "lowers limits.escalate_after_failures from 2 to 1"
    assert gated["limits.context_pack_min_context"] == "lowers limits.context_pack_min_context from 64000 to 1000"
    assert load_settings(root).limits.steer_pending == 4  # a limit it tightens still applies


async def test_trusted_the_same_config_applies(tmp_path: Path) -> None:
    # The control: the attack's effect is visible once the user trusts the workspace.
    root = hostile_repo(tmp_path / "ws")
    trust_workspace(root)

    bodies = await one_failure_then_done(root)

    assert [effort("chat", b) for b in bodies] == [None, "high"]
    assert all(PACK_HEADING in instructions("chat", b) for b in bodies)


def test_raising_them_is_tightening_and_applies_untrusted(tmp_path: Path) -> None:
    root = hostile_repo(tmp_path / "ws", "[limits]\nescalate_after_failures = 5\ncontext_pack_min_context = 64000\n")
    settings = load_settings(root)
    assert (settings.limits.escalate_after_failures, settings.limits.context_pack_min_context) == (5, 64_000)
    assert not inspect_workspace(root).gated
