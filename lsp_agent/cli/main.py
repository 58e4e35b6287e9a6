"""Command line: `serve`, `run`, `demo`, `schema`, `eval`, `skill`, `session`, `acp`, `trust`. Logs go to stderr only.

Start-up matters (`lsp-agent --help` answers in tens of milliseconds, `serve` answers
`initialize` soon after it starts): this module imports only argparse and sys at the top. Each
command imports what it uses when it runs, and only the chosen command's arguments are built
(the others are listed by name and help), so --help never imports pydantic, asyncio or the core.
"""

from __future__ import annotations

import argparse
import sys

TYPE_CHECKING = False  # not `from typing import TYPE_CHECKING`: typing alone costs --help milliseconds
if TYPE_CHECKING:
    from typing import Any

    from lsp_agent.cli.sinks import JsonLinesSink, TranscriptSink
    from lsp_agent.settings.config import Settings

EXIT_OK, EXIT_STOPPED, EXIT_USAGE = 0, 1, 2
#: `run --require-verified`: the run ended, but not with a check that observed the result
EXIT_NOT_VERIFIED = 3
#: `--session` names a session another live lsp-agent process is running (retry when it is done)
EXIT_SESSION_BUSY = 4
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")

#: every command with its one-line help, in the order --help lists them
COMMANDS = {
    "run": "run one task headless in a workspace",
    "serve": "run the language server (stdio; --tcp for debugging)",
    "schema": "print the JSON Schema of the custom LSP methods and notifications",
    "demo": "the smallest real task on the scripted model (no network, no key)",
    "eval": "paired harness experiments: run a cohort, compare two arms",
    "skill": "skill candidates from verified work: propose, validate, promote, retire",
    "session": "stored sessions: show, list, checkpoints, rewind, fork",
    "acp": "run as an Agent Client Protocol agent on stdio (Zed, CodeCompanion, agent-shell)",
    "trust": "show, grant or revoke trust in a workspace's own .lsp-agent/config.toml",
}


class UsageError(Exception):
    pass


class _Help(argparse.HelpFormatter):
    """argparse's formatter with the terminal width found without `shutil`: importing shutil
    (zlib, bz2, lzma) was a sixth of --help's time above the interpreter's."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=_columns() - 2)


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose formatter is `_Help` unless told otherwise (subcommands too)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Help)
        super().__init__(*args, **kwargs)


def _columns() -> int:
    """`shutil.get_terminal_size().columns`: $COLUMNS, else the terminal's, else 80."""
    import os  # already imported by the interpreter's start-up: free

    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class _Version(argparse.Action):
    """--version: the constant in lsp_agent/_version.py, imported only when asked. Not the installed
    package's metadata: importlib.metadata alone cost as much as all of --help."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        from lsp_agent._version import __version__

        print(f"lsp-agent {__version__}")
        parser.exit()


def _log_level(text: str) -> str:
    level = text.upper()
    if level not in LOG_LEVELS:
        raise argparse.ArgumentTypeError(f"unknown log level {text!r}: use one of {', '.join(LOG_LEVELS)}")
    return level


def _chosen(argv: list[str]) -> str | None:
    """The command named in `argv` (skipping the top-level options), if any."""
    rest = iter(argv)
    for arg in rest:
        if arg == "--log-level":
            next(rest, None)
        elif not arg.startswith("-"):
            return arg if arg in COMMANDS else None
    return None


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser, with the arguments of `command` only (None: every command by name, for --help)."""
    parser = _Parser(prog="lsp-agent", description="A coding-agent harness served as a language server.")
    parser.add_argument("--version", action=_Version)
    parser.add_argument("--log-level", default="WARNING", type=_log_level, metavar="LEVEL",
                        help=f"stderr log level: {', '.join(LOG_LEVELS)} (default: WARNING)")
    sub = parser.add_subparsers(dest="command", required=True)
    builders = {"run": _run_parser, "serve": _serve_parser, "schema": _schema_parser, "demo": _demo_parser,
                "eval": _eval_parser, "skill": _skill_parser, "session": _session_parser,
                "acp": _acp_parser, "trust": _trust_parser}
    for name, help_text in COMMANDS.items():
        if name == command:
            builders[name](sub)
        else:
            _listed(sub, name, help_text)
    return parser


def _listed(sub: Any, name: str, help_text: str) -> None:
    """A command --help lists and the parser accepts as a choice, without building its parser
    (seven parsers were a tenth of --help's time). `main` only parses argv whose command is
    either this chosen one or none."""
    sub.choices[name] = None
    sub._choices_actions.append(argparse._SubParsersAction._ChoicesPseudoAction(name, (), help_text))


def _run_parser(sub: Any) -> None:
    from pathlib import Path

    run = sub.add_parser("run", help=COMMANDS["run"])
    run.add_argument("prompt", help="the task")
    run.add_argument("--workspace", type=Path, default=Path.cwd(), help="workspace root (default: cwd)")
    run.add_argument("--model", help="provider/model, e.g. ollama/qwen2.5-coder or openai/gpt-4.1 (a bare "
                     "known name such as gpt-4o picks its usual provider; see docs/configuration.md)")
    run.add_argument("--base-url", help="base URL of an OpenAI-compatible server (no config file needed)")
    run.add_argument("--wire", choices=["chat", "responses"], help="wire protocol for --base-url")
    run.add_argument("--max-steps", type=int, help="step budget (default 40)")
    run.add_argument("--script", type=Path, help="reply script for the scripted provider (JSON)")
    run.add_argument("--session", help=f"continue this session ID (exit {EXIT_SESSION_BUSY} when another live "
                                       "lsp-agent process is running it)")
    run.add_argument("--wait-for-session", type=float, default=0, metavar="SECONDS",
                     help="when another lsp-agent process is running the --session, wait up to this long for it "
                          f"to finish before giving up (exit {EXIT_SESSION_BUSY}); default: do not wait")
    run.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                     help="override a setting, e.g. experimental.tail_reminders=true (repeatable)")
    run.add_argument("--json", action="store_true", help="one JSON event per line on stdout")
    run.add_argument("--require-verified", action="store_true",
                     help=f"exit {EXIT_NOT_VERIFIED} unless the run ends verified (a check observed the result), "
                          "for CI")
    run.add_argument("--sandbox", choices=["read-only", "workspace-write", "danger-full-access"],
                     help="OS sandbox of the commands run for the model (default: workspace-write); "
                          "read-only also makes the edit tools refuse")
    run.add_argument("--approval", choices=["untrusted", "on-request", "on-failure", "never"],
                     help="when to ask before a call (default: on-request); asked on the terminal, "
                          "denied when stdin is not one")


def _serve_parser(sub: Any) -> None:
    serve = sub.add_parser("serve", help=COMMANDS["serve"])
    serve.add_argument("--stdio", action="store_true", help="talk LSP over stdin/stdout (the default)")
    serve.add_argument("--tcp", metavar="HOST:PORT", help="listen on a TCP port instead of stdio")
    serve.add_argument("--max-message-bytes", type=int, default=None, metavar="N",
                       help="refuse a frame that declares a longer body (default 64 MiB)")
    serve.add_argument("--stall-timeout", type=float, default=None, metavar="SECONDS",
                       help="drop a frame whose next byte takes longer than this (default 10)")


def _schema_parser(sub: Any) -> None:
    schema = sub.add_parser("schema", help=COMMANDS["schema"])
    schema.add_argument("--markdown", action="store_true", help="print docs/protocol.md (generated) instead")


def _demo_parser(sub: Any) -> None:
    demo = sub.add_parser("demo", help=COMMANDS["demo"])
    demo.add_argument("--scenario", choices=["ok", "wrong-write", "budget"], default="ok",
                      help="ok: the fix passes its checks (final / verified); wrong-write: a wrong edit the checks "
                           "catch (final / failed); budget: the step budget runs out (step_limit / not_run) "
                           "(default: ok)")
    demo.add_argument("--json", action="store_true", help="one JSON event per line on stdout")
    demo.add_argument("--keep", action="store_true", help="keep the temp workspace")


def _eval_parser(sub: Any) -> None:
    from lsp_agent.eval.cli import add_eval_parser

    add_eval_parser(sub)


def _skill_parser(sub: Any) -> None:
    from lsp_agent.cli.skill import add_skill_parser

    add_skill_parser(sub)


def _session_parser(sub: Any) -> None:
    from lsp_agent.cli.session import add_session_parser

    add_session_parser(sub)


def _trust_parser(sub: Any) -> None:
    from lsp_agent.cli.trust import add_trust_parser

    add_trust_parser(sub, COMMANDS["trust"])


def _acp_parser(sub: Any) -> None:
    acp = sub.add_parser("acp", help=COMMANDS["acp"])
    acp.add_argument("--model", help="provider/model for every session (default: the settings files)")
    acp.add_argument("--script", help="reply script for the scripted provider (JSON)")
    acp.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                     help="override a setting, e.g. approvalPolicy=untrusted (repeatable)")


def _override(pairs: list[str]) -> dict[str, Any]:
    import tomllib

    layer: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--config takes KEY=VALUE, got {pair!r}")
        try:
            value = tomllib.loads(f"v = {raw}")["v"]
        except tomllib.TOMLDecodeError:
            value = raw
        node = layer
        *parents, leaf = key.split(".")
        if not all(parents) or not leaf:
            raise UsageError(f"--config {pair!r}: the key has an empty part")
        for name in parents:
            child = node.setdefault(name, {})
            if not isinstance(child, dict):
                raise UsageError(f"--config {pair!r}: {name} was given a value, it cannot also have keys")
            node = child
        node[leaf] = value
    return layer


def _base_urls(flag: str | None) -> dict[str, str]:
    """Base URLs for provider sections that lack one: --base-url for any, else the built-ins'."""
    from lsp_agent.providers.registry import BUILTIN_PROVIDERS

    urls = {name: entry.base_url for name, entry in BUILTIN_PROVIDERS.items() if entry.base_url}
    if flag:
        urls["*"] = flag
    return urls


def _sink(as_json: bool) -> JsonLinesSink | TranscriptSink:
    from lsp_agent.cli.sinks import JsonLinesSink, TranscriptSink

    return JsonLinesSink() if as_json else TranscriptSink()


async def _run(args: argparse.Namespace) -> int:
    import asyncio
    from pathlib import Path

    from lsp_agent.app.runtime import (
        HeadlessRun,
        UnknownSession,
        cancel_on_signals,
        discover_server,
        make_provider,
        open_environment,
        run_header,
        store_unavailable_finish,
    )
    from lsp_agent.cli.sinks import JsonLinesSink
    from lsp_agent.core.storage import StoreUnavailable
    from lsp_agent.domain.events import StopReason, VerificationStatus
    from lsp_agent.domain.ports import ProviderError
    from lsp_agent.settings.config import ConfigError, inspect_workspace, load_settings
    from lsp_agent.settings.workspace_trust import HOW_TO_TRUST, ignored_line

    root: Path = args.workspace
    if not args.prompt.strip():
        raise UsageError("the prompt is empty: say what the agent should do, e.g. lsp-agent run \"fix the failing "
                         "test\"")
    if not await asyncio.to_thread(root.is_dir):
        raise UsageError(f"--workspace {root} is not a directory")
    layer: dict[str, Any] = _override(args.config)
    if args.model:
        layer["model"] = args.model
    if args.script:
        layer["script"] = str(args.script)
    if args.wait_for_session < 0:
        raise UsageError("--wait-for-session must be 0 or more seconds")
    if args.max_steps is not None:
        if args.max_steps < 1:
            raise UsageError("--max-steps must be at least 1")
        layer["maxSteps"] = args.max_steps
    if args.sandbox:
        layer["sandboxMode"] = args.sandbox
    if args.approval:
        layer["approvalPolicy"] = args.approval
    view = await asyncio.to_thread(inspect_workspace, root)
    ignored = ignored_line(view, HOW_TO_TRUST["cli"])
    if ignored:  # before anything else can fail: the user learns why their settings seem missing
        print(ignored, file=sys.stderr, flush=True)
    try:
        settings = load_settings(root, layer, base_urls=_base_urls(args.base_url), view=view)
        provider = make_provider(settings, args.base_url, args.wire)
    except (ConfigError, ProviderError) as exc:
        raise UsageError(str(exc)) from exc
    from lsp_agent.sandbox import startup_notice

    notice = await asyncio.to_thread(startup_notice, settings.sandbox_mode)
    if notice:
        print(notice, file=sys.stderr, flush=True)
    server = await discover_server(provider, settings)
    sink = _sink(args.json)
    try:
        env = open_environment(root, settings, provider, sink, wire=args.wire, server=server)
    except StoreUnavailable as exc:
        store_unavailable_finish(sink, exc, settings.model, provider.scripted, args.session or "")
        return EXIT_STOPPED
    for notice in getattr(env.store, "notices", []):  # a damaged store moved aside: where it went
        print(notice, file=sys.stderr, flush=True)
    if args.json and not provider.scripted:  # the human transcript prints its own header (_header)
        print(run_header(env, server), file=sys.stderr, flush=True)
    from lsp_agent.cli.approve import TerminalApprover

    env.approver = TerminalApprover()
    header = None if isinstance(sink, JsonLinesSink) else (lambda session_id: sink.note(_header(env, server,
                                                                                            session_id)))
    try:
        run = HeadlessRun(env, args.prompt, args.max_steps, args.session, on_session=header,
                          wait_s=args.wait_for_session, on_wait=lambda text: print(f"lsp-agent: {text}",
                                                                                  file=sys.stderr, flush=True))
    except UnknownSession as exc:
        env.store.close()
        raise UsageError(str(exc)) from None
    except StoreUnavailable as exc:
        env.store.close()
        store_unavailable_finish(sink, exc, settings.model, provider.scripted, args.session or "")
        return EXIT_STOPPED
    sink.on_closed = run.cancel  # a closed stdout (`| head -1`) ends the run, recorded as cancelled
    from lsp_agent.app.language_servers import attach_language_servers

    # Started before the first request: the tools they offer are part of it (and they index meanwhile).
    editor = await attach_language_servers(env)
    for problem in editor.problems() if editor is not None else []:
        print(f"lsp-agent: {problem}", file=sys.stderr, flush=True)
    try:
        with cancel_on_signals(run) as received:
            result = await run.run()
    finally:
        if editor is not None:
            await editor.aclose()
    if env.checkpoints is not None:  # a baseline still being taken for a run that wrote nothing stops here
        await env.checkpoints.close()
    env.store.close()
    if run.refusal is not None:  # the error and run_finish lines said it too; one plain line for the terminal
        print(f"lsp-agent: {run.refusal.message}", file=sys.stderr, flush=True)
        return EXIT_SESSION_BUSY
    if received:
        return 128 + received[0]  # the shell's convention for "ended by this signal" (130 for Ctrl-C)
    if args.require_verified and result.verification is not VerificationStatus.VERIFIED:
        print(f"lsp-agent: --require-verified: the run ended {result.stop_reason.value} with verification "
              f"{result.verification.value}, not verified", file=sys.stderr, flush=True)
        return EXIT_NOT_VERIFIED
    return EXIT_OK if result.stop_reason is StopReason.FINAL else EXIT_STOPPED


def _header(env: Any, server: Any, session_id: str) -> str:
    """The human transcript's first lines: model and endpoint, workspace, session."""
    from lsp_agent.app.runtime import run_header

    return f"{run_header(env, server)}\nworkspace: {env.root}\nsession: {session_id}"


def _serve(args: argparse.Namespace) -> int:
    # server/boot.py answers `initialize` while the server itself is still being imported
    from lsp_agent.server.boot import serve
    from lsp_agent.server.framing import TransportLimits

    if args.tcp is not None and ":" not in args.tcp:
        raise UsageError(f"--tcp takes HOST:PORT, got {args.tcp!r}")
    defaults = TransportLimits()
    max_body = defaults.max_body if args.max_message_bytes is None else args.max_message_bytes
    stall = defaults.stall_timeout if args.stall_timeout is None else args.stall_timeout
    if max_body < 1 or stall <= 0:
        raise UsageError("--max-message-bytes and --stall-timeout must be positive")
    return serve(tcp=args.tcp, limits=TransportLimits(max_body=max_body, stall_timeout=stall))


def _schema(args: argparse.Namespace) -> int:
    from lsp_agent.protocol.schema import render_markdown, schema_json

    sys.stdout.write(render_markdown() if args.markdown else schema_json())
    return EXIT_OK


async def _demo(args: argparse.Namespace) -> int:
    import shutil

    from lsp_agent.app.runtime import open_environment, run_once
    from lsp_agent.cli.demo import PROMPT, SCENARIOS, make_workspace
    from lsp_agent.domain.events import RunFinish
    from lsp_agent.domain.ports import Provider
    from lsp_agent.providers.scripted import ScriptedProvider
    from lsp_agent.settings.config import load_settings

    script, max_steps = SCENARIOS[args.scenario]
    root = make_workspace()
    try:
        settings = load_settings(root, {"model": "scripted/demo"})
        provider: Provider = ScriptedProvider(script)
        out = sys.stderr if args.json else sys.stdout
        out.write(f"lsp-agent demo · scenario {args.scenario} · model: {provider.label} — a SCRIPTED test double, "
                  "not a real model (no network, no key)\n"
                  f"workspace: {root}\ntask: {PROMPT}\n")
        out.flush()
        env = open_environment(root, settings, provider, _sink(args.json), state=root.parent / (root.name + "-state"))
        result: RunFinish = await run_once(env, PROMPT, max_steps)
        env.store.close()
        expected = {"ok": ("final", "verified"), "wrong-write": ("final", "failed"),
                    "budget": ("step_limit", "not_run")}[args.scenario]
        observed = (result.stop_reason.value, result.verification.value)
        out.write(f"demo outcome: {observed[0]} / {observed[1]} (designed: {expected[0]} / {expected[1]})\n")
        return EXIT_OK if observed == expected else EXIT_STOPPED
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
            shutil.rmtree(root.parent / (root.name + "-state"), ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = _parser(_chosen(argv))
    args = parser.parse_args(argv)
    from lsp_agent._startup import pydantic_plugins as no_pydantic_plugins

    no_pydantic_plugins.install()  # before anything imports pydantic
    import logging

    logging.basicConfig(stream=sys.stderr, level=args.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        if args.command == "run":
            import asyncio

            return asyncio.run(_run(args))
        if args.command == "demo":
            import asyncio

            return asyncio.run(_demo(args))
        if args.command == "serve":
            return _serve(args)
        if args.command == "schema":
            return _schema(args)
        if args.command == "eval":
            from lsp_agent.eval.cli import handle_eval

            return handle_eval(args)
        if args.command == "skill":
            from lsp_agent.cli.skill import handle_skill

            return handle_skill(args)
        if args.command == "acp":
            from lsp_agent.acp.server import serve as serve_acp

            layer = _override(args.config)
            layer.update({k: v for k, v in (("model", args.model), ("script", args.script)) if v})
            return serve_acp(layer)
        if args.command == "session":
            from lsp_agent.cli.session import handle_session

            return handle_session(args)
        if args.command == "trust":
            from lsp_agent.cli.trust import handle_trust

            return handle_trust(args)
    except UsageError as exc:
        print(f"lsp-agent: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        from lsp_agent.core.errors import AgentError

        if not isinstance(exc, AgentError):
            raise
        # a classified refusal (the store unavailable, …): said as such, never as a traceback
        print(f"lsp-agent: {exc.kind.value}: {exc.message}", file=sys.stderr)
        return EXIT_STOPPED
    parser.error(f"unknown command {args.command}")
    return EXIT_USAGE


def __getattr__(name: str) -> Any:
    # `Settings` was re-exported from here; kept, imported only when asked for.
    if name == "Settings":
        from lsp_agent.settings.config import Settings

        return Settings
    raise AttributeError(name)


__all__ = ["Settings", "main"]
