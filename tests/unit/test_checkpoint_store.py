"""The checkpoint store's own rules: settings boundaries, size limits, retention and its sweep,
the delta chain across a restart and a torn last line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic import ValidationError

from lsp_agent.checkpoints.chain import Chain
from lsp_agent.checkpoints.rewind import RewindRefused, rewind
from lsp_agent.checkpoints.workspace import WorkspaceCheckpoints
from lsp_agent.core.checkpoint_port import StepRef
from lsp_agent.core.write_detect import snapshot
from lsp_agent.settings.config import Checkpoints, load_settings


@pytest.mark.parametrize("field,low,high", [("per_session", 1, 100_000), ("total", 1, 1_000_000),
                                            ("file_bytes", 0, 1 << 32), ("checkpoint_bytes", 0, 1 << 40),
                                            ("total_bytes", 0, 1 << 44)])
def test_settings_boundaries(field: str, low: int, high: int) -> None:
    assert getattr(Checkpoints(**{field: low}), field) == low
    assert getattr(Checkpoints(**{field: high}), field) == high
    for bad in (low - 1, high + 1):
        with pytest.raises(ValidationError):
            Checkpoints(**{field: bad})


def test_an_untrusted_workspace_cannot_turn_checkpoints_off(tmp_path: Path) -> None:
    (tmp_path / ".lsp-agent").mkdir()
    (tmp_path / ".lsp-agent" / "config.toml").write_text("[checkpoints]\nenabled = false\nper_session = 1\n")
    settings = load_settings(tmp_path)
    assert settings.checkpoints.enabled and settings.checkpoints.per_session == Checkpoints().per_session


def workspace(tmp_path: Path, **limits: int) -> tuple[Path, WorkspaceCheckpoints]:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("a0\n")
    settings = Checkpoints(**limits)
    return root, WorkspaceCheckpoints(root, tmp_path / "state", lambda: settings)


async def step(ws: WorkspaceCheckpoints, root: Path, message: str, name: str, text: str) -> None:
    ref = StepRef("s", message, int(message[1:]), "run_command")
    await ws.before(ref, None, snapshot(root))
    (root / name).write_text(text)
    await ws.after(ref, None, snapshot(root))


async def test_files_past_the_size_limits_are_listed_not_copied(tmp_path: Path) -> None:
    root, ws = workspace(tmp_path, file_bytes=100, checkpoint_bytes=50)
    (root / "big.bin").write_bytes(b"x" * 101)
    (root / "b.txt").write_text("y" * 90)
    await step(ws, root, "m1", "big.bin", "small now\n")
    kinds = {p: e[0] for p, e in ws.records()[0].changes.items()}
    assert kinds["big.bin"] == "big"
    assert sorted(kinds.values()).count("big") == 2  # b.txt (90 bytes) went past the 50-byte budget
    outcome = await rewind(ws, "s", "ckpt-1", [], dry_run=False, confirm=False)
    assert "big.bin" in outcome.plan.unrestorable and (root / "big.bin").read_text() == "small now\n"


async def test_retention_folds_old_checkpoints_and_sweeps_their_content(tmp_path: Path) -> None:
    root, ws = workspace(tmp_path, per_session=4, total=1000)
    messages = [f"m{n}" for n in range(1, 13)]
    for n, message in enumerate(messages):
        await step(ws, root, message, "a.txt", f"a{n + 1}\n" * 1000)
    assert len(ws.records("s")) <= 4 + 4 // 10 + 1
    with pytest.raises(RewindRefused) as refused:
        await rewind(ws, "s", "m2", messages, dry_run=False, confirm=False)
    assert refused.value.kind == "folded"
    # a kept checkpoint still replays to its exact tree
    await rewind(ws, "s", "m12", messages, dry_run=False, confirm=False)
    assert (root / "a.txt").read_text() == "a11\n" * 1000
    stored = [p for p in (ws.base / "objects").rglob("*") if p.is_file()]
    assert len(stored) <= 7  # the folded versions' content is gone


async def test_past_the_byte_cap_the_oldest_checkpoints_are_folded_and_their_content_swept(tmp_path: Path) -> None:
    cap = 6_000
    root, ws = workspace(tmp_path, total_bytes=cap)
    messages = [f"m{n}" for n in range(1, 13)]
    versions = [os.urandom(1_000) for _ in messages]  # incompressible: ~1 KB stored each
    for message, data in zip(messages, versions, strict=True):
        ref = StepRef("s", message, int(message[1:]), "run_command")
        await ws.before(ref, None, snapshot(root))
        (root / "a.bin").write_bytes(data)
        await ws.after(ref, None, snapshot(root))
    assert ws.blobs.size() <= cap
    with pytest.raises(RewindRefused) as refused:
        await rewind(ws, "s", "m2", messages, dry_run=False, confirm=False)
    assert refused.value.kind == "folded"
    for digest in ws.chain.digests():  # every content a kept checkpoint names is still there
        ws.blobs.get(digest)
    await rewind(ws, "s", "m12", messages, dry_run=False, confirm=False)  # the newest still replays exactly
    assert (root / "a.bin").read_bytes() == versions[-2]


async def test_the_chain_survives_a_restart_and_a_torn_last_line(tmp_path: Path) -> None:
    root, ws = workspace(tmp_path)
    await step(ws, root, "m1", "a.txt", "a1\n")
    await step(ws, root, "m2", "a.txt", "a2\n")
    with open(ws.chain.path, "a") as chain:
        chain.write('{"seq": 99, "sess')  # a crash in the middle of an append
    reopened = WorkspaceCheckpoints(root, ws.base, ws.settings)
    assert [r.id for r in reopened.records()] == [r.id for r in ws.records()]
    await rewind(reopened, "s", "m2", ["m1", "m2"], dry_run=False, confirm=False)
    assert (root / "a.txt").read_text() == "a1\n"
    assert len(Chain(ws.chain.path).records) == len(reopened.records())


async def test_only_changed_files_are_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, ws = workspace(tmp_path)
    for n in range(50):
        (root / f"f{n}.txt").write_text(str(n))
    await step(ws, root, "m1", "a.txt", "a1\n")  # the baseline reads everything, once
    read: list[str] = []
    real = os.lstat

    def counting(path: object, *args: object, **kwargs: object) -> os.stat_result:
        read.append(str(path))
        return real(path, *args, **kwargs)  # type: ignore[arg-type]
    monkeypatch.setattr("lsp_agent.checkpoints.capture.os.lstat", counting)
    await step(ws, root, "m2", "f7.txt", "changed")
    assert [Path(p).name for p in read] == ["f7.txt"]


async def test_an_unknown_message_or_checkpoint_is_a_classified_refusal(tmp_path: Path) -> None:
    root, ws = workspace(tmp_path)
    await step(ws, root, "m1", "a.txt", "a1\n")
    for target in ("m9", "ckpt-77"):
        with pytest.raises(RewindRefused) as refused:
            await rewind(ws, "s", target, ["m1"], dry_run=True, confirm=False)
        assert refused.value.kind == "unknown_target"


async def test_the_store_of_workspace_copies_is_readable_by_the_user_alone(tmp_path: Path) -> None:
    """It holds a copy of every file, a repository's `.env` among them: whatever the umask, and even
    when an older store was made open, no other user can read into it."""
    old = os.umask(0o022)
    try:
        (tmp_path / "state").mkdir(mode=0o755)  # left open by an older version
        root, ws = workspace(tmp_path)
        (root / ".env").write_text("API_KEY=canary\n")
        os.chmod(root / ".env", 0o600)
        await step(ws, root, "m1", "b.txt", "b\n")
    finally:
        os.umask(old)
    assert (tmp_path / "state" / "objects").is_dir()
    assert os.stat(tmp_path / "state").st_mode & 0o777 == 0o700
