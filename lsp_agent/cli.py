"""Command line: `serve`, `run`, `demo`, `schema`. Logs go to stderr only."""

from __future__ import annotations

import argparse
import asyncio
import logging
import shutil
import sys
from pathlib import Path
from typing import Any

from lsp_agent.config import ConfigError, Settings, load_settings
from lsp_agent.core.events import RunFinish, StopReason
from lsp_agent.core.ports import EventSink, Provider, ProviderError
from lsp_agent.eval.cli import add_eval_parser, handle_eval
from lsp_agent.sinks import JsonLinesSink, TranscriptSink
from lsp_agent.skills.cli import add_skill_parser, handle_skill

EXIT_OK, EXIT_STOPPED, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    pass


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lsp-agent",
                                     description="A coding-agent harness served as a language server.")
    parser.add_argument("--log-level", default="WARNING", help="stderr log level (default: WARNING)")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run one task headless in a workspace")
    run.add_argument("prompt", help="the task")
    run.add_argument("--workspace", type=Path, default=Path.cwd(), help="workspace root (default: cwd)")
    run.add_argument("--model", help="provider/model, e.g. ollama/qwen2.5-coder or scripted/demo")
    run.add_argument("--base-url", help="base URL of an OpenAI-compatible server (no config file needed)")
    run.add_argument("--wire", choices=["chat", "responses"], help="wire protocol for --base-url")
    run.add_argument("--max-steps", type=int, help="step budget (default 40)")
    run.add_argument("--script", type=Path, help="reply script for the scripted provider (JSON)")
    run.add_argument("--session", help="continue this session ID")
    run.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                     help="override a setting, e.g. experimental.tail_reminders=true (repeatable)")
    run.add_argument("--json", action="store_true", help="one JSON event per line on stdout")

    serve = sub.add_parser("serve", help="run the language server (stdio; --tcp for debugging)")
    serve.add_argument("--stdio", action="store_true", help="talk LSP over stdin/stdout (the default)")
    serve.add_argument("--tcp", metavar="HOST:PORT", help="listen on a TCP port instead of stdio")

    schema = sub.add_parser("schema", help="print the JSON Schema of the custom LSP methods and notifications")
    schema.add_argument("--markdown", action="store_true", help="print docs/protocol.md (generated) instead")

    demo = sub.add_parser("demo", help="the smallest real task on the scripted model (no network, no key)")
    demo.add_argument("--scenario", choices=["ok", "wrong-write", "budget"], default="ok")
    demo.add_argument("--json", action="store_true", help="one JSON event per line on stdout")
    demo.add_argument("--keep", action="store_true", help="keep the temp workspace")
    add_eval_parser(sub)
    add_skill_parser(sub)
    return parser


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
        for name in parents:
            node = node.setdefault(name, {})
        node[leaf] = value
    return layer


def _base_urls(flag: str | None) -> dict[str, str]:
    """Base URLs for provider sections that lack one: --base-url for any, else the built-ins'."""
    from lsp_agent.providers.registry import BUILTIN_PROVIDERS

    urls = {name: entry.base_url for name, entry in BUILTIN_PROVIDERS.items() if entry.base_url}
    if flag:
        urls["*"] = flag
    return urls


def _sink(as_json: bool) -> EventSink:
    return JsonLinesSink() if as_json else TranscriptSink()


async def _run(args: argparse.Namespace) -> int:
    from lsp_agent.headless import discover_server, make_provider, open_environment, run_header, run_once

    root: Path = args.workspace
    if not await asyncio.to_thread(root.is_dir):
        raise UsageError(f"--workspace {root} is not a directory")
    layer: dict[str, Any] = _override(args.config)
    if args.model:
        layer["model"] = args.model
    if args.script:
        layer["script"] = str(args.script)
    if args.max_steps is not None:
        if args.max_steps < 1:
            raise UsageError("--max-steps must be at least 1")
        layer["maxSteps"] = args.max_steps
    try:
        settings = load_settings(root, layer, base_urls=_base_urls(args.base_url))
        provider = make_provider(settings, args.base_url, args.wire)
    except (ConfigError, ProviderError) as exc:
        raise UsageError(str(exc)) from exc
    server = await discover_server(provider, settings)
    env = open_environment(root, settings, provider, _sink(args.json), wire=args.wire, server=server)
    if not provider.scripted:
        print(run_header(env, server), file=sys.stderr, flush=True)
    result = await run_once(env, args.prompt, args.max_steps, args.session)
    return EXIT_OK if result.stop_reason is StopReason.FINAL else EXIT_STOPPED


def _serve(args: argparse.Namespace) -> int:
    from lsp_agent.server.app import serve

    if args.tcp is not None and ":" not in args.tcp:
        raise UsageError(f"--tcp takes HOST:PORT, got {args.tcp!r}")
    return serve(tcp=args.tcp)


def _schema(args: argparse.Namespace) -> int:
    from lsp_agent.protocol.schema import render_markdown, schema_json

    sys.stdout.write(render_markdown() if args.markdown else schema_json())
    return EXIT_OK


async def _demo(args: argparse.Namespace) -> int:
    from lsp_agent.demo import PROMPT, SCENARIOS, make_workspace
    from lsp_agent.headless import open_environment, run_once
    from lsp_agent.providers.scripted import ScriptedProvider

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
    parser = _parser()
    args = parser.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=args.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        if args.command == "run":
            return asyncio.run(_run(args))
        if args.command == "demo":
            return asyncio.run(_demo(args))
        if args.command == "serve":
            return _serve(args)
        if args.command == "schema":
            return _schema(args)
        if args.command == "eval":
            return handle_eval(args)
        if args.command == "skill":
            return handle_skill(args)
    except UsageError as exc:
        print(f"lsp-agent: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    parser.error(f"unknown command {args.command}")
    return EXIT_USAGE


__all__ = ["Settings", "main"]
