"""Context-growth benchmark: request bytes and cache-prefix reuse over a long session, with and
without context management (folding past 70 %, checked compaction past 95 %).

A scripted model drives the real loop in-process for N steps (default 200): mostly read_file
calls of ~80-line windows of 20 source-like files (about 5 KB of output each), a failing
verify_project every 25 steps and a failed edit every 40. Its compaction summary is scripted
too. Every request the loop hands to the provider is captured and encoded exactly as the
OpenAI Chat Completions wire would send it; measured per configuration:

- total request bytes, and the largest request (bytes and estimated tokens);
- cache-prefix share: of all request bytes, the share that repeats the previous request's
  bytes from the start (what a provider's prefix cache can serve), and the mean per request;
- prefix breaks: requests whose message list is not an extension of the previous one (a fold
  batch, a compaction, its summary request), and the mean prefix share of those requests;
- folds and compactions, and whether every request stayed within the token budget.

"no management" is the same session with a context window so large that nothing folds: the
requests a harness without context management would send (it would overflow a real window).

    python bench/context_growth.py                     # 200 steps; 32k and 128k windows vs none
    python bench/context_growth.py --steps 100 --window 65536
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from lsp_agent.app.runtime import open_environment  # noqa: E402
from lsp_agent.context.budget import Budget  # noqa: E402
from lsp_agent.core.loop import Generation  # noqa: E402
from lsp_agent.core.prefix import common_prefix_len  # noqa: E402
from lsp_agent.core.session import AgentSession  # noqa: E402
from lsp_agent.domain.ports import ModelRequest  # noqa: E402
from lsp_agent.providers.chat_completions import ChatCompletionsProvider  # noqa: E402
from lsp_agent.providers.scripted import Script, ScriptedCall, ScriptedProvider, ScriptedReply  # noqa: E402
from lsp_agent.settings.config import ProviderConfig, load_settings  # noqa: E402

UNMANAGED = 100_000_000
FILES = 20
LINES = 200
CHAT = ChatCompletionsProvider(ProviderConfig.model_validate({"base_url": "http://127.0.0.1:9/v1"}), model="bench")


def workspace(root: Path) -> None:
    for i in range(FILES):
        path = root / "src" / f"module_{i:02d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"def function_{i}_{j}(value: int) -> int:  # line {j} of module {i}\n"
                                if j % 4 == 0 else f"    return value * {j} + {i}  # arithmetic, step {j}\n"
                                for j in range(LINES)), encoding="utf-8")
    (root / "check.py").write_text(
        "import sys\nprint('src/module_03.py:12: error: Incompatible return value type  [return-value]')\n"
        "print('Found 1 error in 1 file (checked 20 source files)')\nsys.exit(1)\n", encoding="utf-8")
    config = root / ".lsp-agent" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'[[tools.verify]]\nkind = "typecheck"\nargv = ["{sys.executable}", "check.py"]\n'
                      'parser = "mypy"\n', encoding="utf-8")
    git = ["git", "-c", "user.name=b", "-c", "user.email=b@localhost", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "bench"], cwd=root, check=True)


def script(steps: int) -> list[ScriptedReply]:
    replies = []
    for step in range(steps):
        if step % 25 == 24:
            calls = [ScriptedCall(name="verify_project", arguments={})]
        elif step % 40 == 39:
            calls = [ScriptedCall(name="apply_patch", arguments={
                "path": "src/module_03.py", "old_text": f"no such line {step}", "new_text": "x"})]
        else:
            start = 1 + (step * 37) % (LINES - 80)
            calls = [ScriptedCall(name="read_file", arguments={
                "path": f"src/module_{step % FILES:02d}.py", "start_line": start, "end_line": start + 79})]
        replies.append(ScriptedReply(text=f"Looking at the next part (step {step + 1}).", tool_calls=calls))
    replies.append(ScriptedReply(text="Done reading."))
    replies.append(ScriptedReply(when="[lsp-agent compaction", text=(
        "1. Task: find why the type check fails. 2. Constraints: none beyond the task. 3. Tried: reading the "
        "modules; an edit of src/module_03.py failed (no match). 4. Unresolved: src/module_03.py:12 "
        "return-value. 5. Files: read only. 6. Next: read module_03 around line 12 and fix the return type.")))
    return replies


@dataclass
class Row:
    label: str
    window: int
    requests: int
    total_bytes: int
    max_bytes: int
    max_tokens: int
    budget: int
    uncached_bytes: int
    cached_share: float
    mean_share: float
    breaks: int
    #: mean prefix share of the requests that broke the extension (how much cache a batch keeps)
    break_share: float
    folds: int
    compactions: int
    stop: str
    seconds: float


def _extends(previous: ModelRequest, current: ModelRequest) -> bool:
    n = len(previous.messages)
    return len(current.messages) >= n and all(a is b or a == b for a, b in zip(previous.messages,
                                                                               current.messages[:n], strict=True))


async def measure(label: str, window: int, steps: int, tuning: dict[str, object] | None = None) -> Row:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        root.mkdir()
        workspace(root)
        # The same verify failure recurs on purpose; an automatic handoff would end the session early.
        settings = load_settings(root, {"maxSteps": steps + 5, "compaction": {
            "context_window": window, "handoff_after_same_failures": 0, **(tuning or {})}})
        provider = ScriptedProvider(Script(label="bench", replies=script(steps)), record_requests=True)

        class Quiet:
            def emit(self, event: object) -> None:
                pass

        env = open_environment(root, settings, provider, Quiet(), state=Path(tmp) / "state")
        session = AgentSession(env)
        started = time.perf_counter()
        result = await Generation(session).run("Find out why the type check fails and fix it.")
        seconds = time.perf_counter() - started
        bodies = [CHAT.encode_request(r) for r in provider.requests]
        reused = [0] + [common_prefix_len(a, b) for a, b in itertools.pairwise(bodies)]
        records = env.store.events(session.id, "llm.request")
        compactions = [e for e in env.store.events(session.id, "context.compaction") if e.get("applied")]
        broken = [i + 1 for i, (a, b) in enumerate(itertools.pairwise(provider.requests)) if not _extends(a, b)]
        break_share = sum(reused[i] / len(bodies[i]) for i in broken) / len(broken) if broken else 1.0
        return Row(label, window, len(bodies), sum(map(len, bodies)), max(map(len, bodies)),
                   max(r["tokens"] for r in records), Budget.of(settings, window).tokens,
                   sum(map(len, bodies)) - sum(reused), sum(reused) / sum(map(len, bodies)),
                   sum(r / len(b) for r, b in zip(reused[1:], bodies[1:], strict=True)) / max(1, len(bodies) - 1),
                   len(broken), break_share, len(env.store.events(session.id, "context.fold")), len(compactions),
                   result.stop_reason.value, seconds)


def table(rows: list[Row]) -> str:
    smallest = min((r.budget for r in rows if r.window < UNMANAGED), default=0)
    out = ["| configuration | window | requests | total request bytes | largest request | largest tokens "
           "| in budget | uncached bytes | cache-prefix share (bytes) | mean prefix share | prefix breaks "
           "| share at a break | folds | compactions | stop | seconds |",
           "|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---:|"]
    for r in rows:
        window = "unbounded" if r.window >= UNMANAGED else f"{r.window:,}"
        budget = r.budget if r.window < UNMANAGED else smallest
        fits = "yes" if r.max_tokens <= budget else f"no (> {budget:,})"
        out.append(f"| {r.label} | {window} | {r.requests} | {r.total_bytes:,} | {r.max_bytes:,} | "
                   f"{r.max_tokens:,} | {fits} | {r.uncached_bytes:,} | {r.cached_share:.3f} | {r.mean_share:.3f} | "
                   f"{r.breaks} | {r.break_share:.3f} | {r.folds} | {r.compactions} | {r.stop} | {r.seconds:.1f} |")
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--window", type=int, action="append",
                        help="context window(s) to manage within (default: 32768 and 131072)")
    parser.add_argument("--compaction", action="append", default=[], metavar="KEY=VALUE",
                        help="override a [compaction] setting for the managed runs, e.g. fold_min_freed=0.3")
    args = parser.parse_args()
    windows = args.window or [32_768, 131_072]
    tuning: dict[str, object] = {}
    for item in args.compaction:
        key, _, value = item.partition("=")
        tuning[key] = json.loads(value)
    rows = [asyncio.run(measure(f"managed ({w // 1024}k)", w, args.steps, tuning)) for w in windows]
    rows.append(asyncio.run(measure("no management", UNMANAGED, args.steps)))
    print(f"{args.steps} steps; Python {platform.python_version()} on {platform.machine()}; chat-wire bytes\n")
    print(table(rows))
    baseline = rows[-1].total_bytes
    for row in rows[:-1]:
        print(f"\n{row.label}: {row.total_bytes / baseline:.1%} of the unmanaged request bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
