"""The eval manifest: the operator's trusted description of one paired experiment.

Strict on purpose: a typo in a field name or a wrong type must fail loudly
before any attempt runs, naming the field, because a silently ignored field
would make two arms look different (or the same) for the wrong reason.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.alias_generators import to_camel

from lsp_agent.eval.effects import DEFAULT_PRIMARY, EFFECT_NAMES
from lsp_agent.settings.config import MAX_SEED, Experimental

MAX_MANIFEST_BYTES = 8 * 1024 * 1024
MAX_FILE_BYTES = 64 * 1024
MAX_TASK_BYTES = 1024 * 1024
MAX_PROMPT_CHARS = 16_000
MIN_TIMEOUT_MS, MAX_TIMEOUT_MS = 100, 600_000
MAX_REPETITIONS = 50
MAX_TASKS = 100
MAX_FILES = 100

_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
_TASK_ID = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$"
_MODEL = re.compile(r"^[^/\s]+/\S+$")
#: Dotted setting names; a part may hold hyphens because provider sections are named like `openai-compatible`.
_CONFIG_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z_][A-Za-z0-9_-]*)*$")
#: Settings the arm's own fields decide; an override through `config` would hide the difference.
_RESERVED_KEYS = {"model": "the manifest's `model`", "toolProfile": "the arm's `toolProfile`",
                  "tool_profile": "the arm's `toolProfile`", "experimental": "the arm's `features`",
                  "sampling": "the arm's `temperature`, `seed` and `maxOutputTokens`"}

Scalar = bool | int | float | str
#: A setting's value: a scalar, or a list of scalars or of tables (e.g. editorQueries.languageServers)
ConfigValue = Scalar | list[Any]


def _config_value_ok(value: Any, depth: int = 0) -> bool:
    """A scalar (finite), or a list of values or tables of values, nested a few levels at most."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, bool | int | str):
        return True
    if depth >= 3:
        return False
    if isinstance(value, list):
        return all(_config_value_ok(item, depth + 1) for item in value)
    if isinstance(value, dict) and depth > 0:  # a table inside a list (a top-level one is flattened)
        return all(isinstance(k, str) and _config_value_ok(v, depth + 1) for k, v in value.items())
    return False


class ManifestError(Exception):
    """The manifest cannot be used; `problems` name each offending field."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = problems
        super().__init__(f"{source}: invalid manifest:\n" + "\n".join(f"  - {p}" for p in problems))


class _Strict(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, validate_by_alias=True, validate_by_name=False,
                              serialize_by_alias=True, extra="forbid", strict=True, frozen=True)


def _path_problem(path: str) -> str | None:
    if not path:
        return "is empty"
    if "\x00" in path:
        return "contains NUL"
    if "\\" in path:
        return "contains a backslash (use '/')"
    if ":" in path:
        return "contains a colon"
    if path.startswith("/"):
        return "is absolute (paths are relative to the fixture root)"
    parts = path.split("/")
    if any(p == "" for p in parts):
        return "has an empty component ('//' or a trailing '/')"
    if any(p == "." for p in parts):
        return "has a '.' component"
    if any(p == ".." for p in parts):
        return "has a '..' component"
    if any(p.lower() == ".git" for p in parts):
        return "is inside '.git' (the runner owns the fixture's Git directory)"
    return None


class TaskFile(_Strict):
    path: str = Field(description="Relative path inside the fixture ('/' separated).")
    content: str = Field(description="UTF-8 text, at most 64 KiB encoded.")

    @field_validator("path")
    @classmethod
    def _path_rules(cls, value: str) -> str:
        problem = _path_problem(value)
        if problem:
            raise ValueError(f"path {value!r} {problem}")
        return value

    @field_validator("content")
    @classmethod
    def _content_size(cls, value: str) -> str:
        size = len(value.encode("utf-8", errors="surrogatepass"))
        if size > MAX_FILE_BYTES:
            raise ValueError(f"content is {size} bytes; at most {MAX_FILE_BYTES} (64 KiB) per file")
        return value


class Task(_Strict):
    id: Annotated[str, Field(pattern=_TASK_ID, description="Unique task name: letters, digits, '_', '.', '-'.")]
    prompt: str = Field(min_length=1, max_length=MAX_PROMPT_CHARS, description="The task as the agent sees it.")
    files: list[TaskFile] = Field(min_length=1, max_length=MAX_FILES, description="The fixture's files.")
    oracle: list[Annotated[str, Field(min_length=1)]] = Field(
        min_length=1, description="Trusted check argv; the fixture path is appended. Exit 0 pass, 1 fail.")

    @field_validator("prompt")
    @classmethod
    def _prompt_text(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("prompt is blank")
        if "\x00" in value:
            raise ValueError("prompt contains NUL (it is passed as a command-line argument)")
        return value

    @field_validator("oracle")
    @classmethod
    def _oracle_argv(cls, value: list[str]) -> list[str]:
        if any("\x00" in arg for arg in value):
            raise ValueError("oracle argument contains NUL")
        return value

    @model_validator(mode="after")
    def _files_consistent(self) -> Task:
        seen: set[str] = set()
        total = 0
        for f in self.files:
            if f.path in seen:
                raise ValueError(f"files: duplicate path {f.path!r}")
            seen.add(f.path)
            total += len(f.content.encode("utf-8", errors="surrogatepass"))
        for path in seen:
            parts = path.split("/")
            for i in range(1, len(parts)):
                if "/".join(parts[:i]) in seen:
                    raise ValueError(f"files: {path!r} lies under {'/'.join(parts[:i])!r}, which is a file")
        if total > MAX_TASK_BYTES:
            raise ValueError(f"files: {total} bytes in all; at most {MAX_TASK_BYTES} (1 MiB) per task")
        return self


def _flatten(prefix: str, value: Any, out: dict[str, ConfigValue]) -> None:
    if isinstance(value, dict):
        for key, inner in value.items():
            _flatten(f"{prefix}.{key}" if prefix else str(key), inner, out)
        return
    out[prefix] = value


class Arm(_Strict):
    name: Annotated[str, Field(pattern=_NAME, description="Unique arm name used by `eval compare`.")]
    features: dict[str, bool] = Field(default_factory=dict, description="Experimental flags, e.g. tail_reminders.")
    tool_profile: Literal["default", "minimal"] = Field("default", description="Which tool set the model gets.")
    config: dict[str, Any] = Field(
        default_factory=dict,
        description="Extra setting overrides passed as `--config key=value` (nested tables are flattened).")
    temperature: float | None = Field(None, ge=0, le=2, allow_inf_nan=False,
                                      description="Sampling temperature sent to the provider (0 to 2).")
    seed: int | None = Field(None, ge=0, le=MAX_SEED, description="Sampling seed sent to the provider.")
    max_output_tokens: int | None = Field(None, ge=1, le=1_000_000,
                                          description="Output-token limit of every request of the arm.")

    def sampling(self) -> dict[str, float | int]:
        """The arm's sampling settings that are set, by their setting names (as recorded)."""
        values = {"temperature": self.temperature, "seed": self.seed, "maxOutputTokens": self.max_output_tokens}
        return {key: value for key, value in values.items() if value is not None}

    @field_validator("features")
    @classmethod
    def _known_flags(cls, value: dict[str, bool]) -> dict[str, bool]:
        known = set(Experimental.model_fields)
        unknown = sorted(set(value) - known)
        if unknown:
            raise ValueError(f"unknown experimental flag(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        return value

    @field_validator("config")
    @classmethod
    def _config_pairs(cls, value: dict[str, Any]) -> dict[str, Any]:
        for key, item in flatten_config(value).items():
            if not _CONFIG_KEY.match(key):
                raise ValueError(f"config key {key!r} is not a dotted setting name")
            head = key.split(".", 1)[0]
            if head in _RESERVED_KEYS:
                raise ValueError(f"config key {key!r} is set by {_RESERVED_KEYS[head]}, not by `config`")
            if isinstance(item, float) and not math.isfinite(item):
                raise ValueError(f"config {key!r}: value must be finite")
            if not _config_value_ok(item):
                raise ValueError(f"config {key!r}: value must be a string, number or boolean, or a list of those "
                                 "or of tables of those")
        return value


def flatten_config(config: dict[str, Any]) -> dict[str, ConfigValue]:
    out: dict[str, ConfigValue] = {}
    _flatten("", config, out)
    return out


class Manifest(_Strict):
    model: str = Field(description="provider/model, e.g. openai/gpt-4.1.")
    runtime_revision: str = Field(min_length=1, max_length=200,
                                  description="Which build of the harness ran (e.g. a commit); part of the cohort.")
    command: list[Annotated[str, Field(min_length=1)]] | None = Field(
        None, min_length=1, description="Agent argv prefix; default: this package's `run` subcommand.")
    repetitions: int = Field(3, ge=1, le=MAX_REPETITIONS, description="Attempts per task and arm.")
    timeout_ms: int = Field(120_000, ge=MIN_TIMEOUT_MS, le=MAX_TIMEOUT_MS,
                            description="Budget of one agent run, and separately of one oracle run.")
    arms: list[Arm] = Field(min_length=2, max_length=2, description="Exactly two arms with different names.")
    tasks: list[Task] = Field(min_length=1, max_length=MAX_TASKS)
    primary_metric: str = Field(DEFAULT_PRIMARY, description=(
        "The metric whose verdict `eval compare` treats as confirmatory; the others are judged only if it "
        f"shows a difference. One of: {', '.join(EFFECT_NAMES)}."))

    @field_validator("primary_metric")
    @classmethod
    def _known_metric(cls, value: str) -> str:
        if value not in EFFECT_NAMES:
            raise ValueError(f"{value!r} is not a metric compare judges (one of {', '.join(EFFECT_NAMES)})")
        return value

    @field_validator("model")
    @classmethod
    def _provider_slash_model(cls, value: str) -> str:
        if not _MODEL.match(value):
            raise ValueError(f"{value!r} is not provider/model (e.g. openai/gpt-4.1 or scripted/eval)")
        return value

    @field_validator("arms")
    @classmethod
    def _distinct_arms(cls, value: list[Arm]) -> list[Arm]:
        if len(value) == 2 and value[0].name == value[1].name:
            raise ValueError(f"the two arms share the name {value[0].name!r}; names must differ")
        return value

    @field_validator("tasks")
    @classmethod
    def _unique_tasks(cls, value: list[Task]) -> list[Task]:
        seen: set[str] = set()
        for task in value:
            if task.id in seen:
                raise ValueError(f"duplicate task id {task.id!r}")
            seen.add(task.id)
        return value

    def canonical_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    def cohort(self) -> str:
        """sha256 of the canonical manifest: defaults spelled out, key order and whitespace irrelevant."""
        return hashlib.sha256(self.canonical_json().encode("utf-8", errors="surrogatepass")).hexdigest()


def _location(loc: tuple[int | str, ...]) -> str:
    out = ""
    for item in loc:
        if isinstance(item, int):
            out += f"[{item}]"
        else:
            out += f".{item}" if out else str(item)
    return out or "(manifest)"


def describe(exc: ValidationError) -> list[str]:
    problems = []
    for err in exc.errors():
        message = str(err["msg"]).removeprefix("Value error, ")
        problems.append(f"{_location(tuple(err['loc']))}: {message}")
    return problems


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _read_tree(root: Path, label: str) -> list[dict[str, str]]:
    """The files under root as `files` entries (sorted; limits are checked by validation)."""
    if not root.is_dir():
        raise ValueError(f"{label}: {root} is not a directory")
    files: list[dict[str, str]] = []
    total = 0
    for path in sorted(root.rglob("*")):
        if path.is_symlink() or not path.is_file():
            if path.is_symlink():
                raise ValueError(f"{label}: {path.relative_to(root).as_posix()} is a symlink; only regular files")
            continue
        size = path.stat().st_size
        total += size
        if len(files) >= MAX_FILES or total > MAX_TASK_BYTES:
            raise ValueError(f"{label}: more than {MAX_FILES} files or {MAX_TASK_BYTES} bytes")
        try:
            content = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"{label}: cannot read {path.relative_to(root).as_posix()} as UTF-8 text: {exc}") from exc
        files.append({"path": path.relative_to(root).as_posix(), "content": content})
    return files


def _expand_files_from(raw: dict[str, Any], base_dir: Path | None, source: str) -> None:
    """`tasks[].filesFrom: DIR` (relative to the manifest) becomes that directory's `files`.

    Done before validation, so the cohort hashes the files' contents, not the directory's name.
    """
    tasks = raw.get("tasks")
    if not isinstance(tasks, list):
        return
    problems = []
    for index, task in enumerate(tasks):
        if not isinstance(task, dict) or "filesFrom" not in task:
            continue
        label = f"tasks[{index}].filesFrom"
        where = task.pop("filesFrom")
        if "files" in task:
            problems.append(f"{label}: give `files` or `filesFrom`, not both")
        elif not isinstance(where, str) or not where or base_dir is None:
            problems.append(f"{label}: must be a directory path relative to the manifest file")
        else:
            try:
                task["files"] = _read_tree(base_dir / where, label)
            except (OSError, ValueError) as exc:
                problems.append(str(exc))
    if problems:
        raise ManifestError(source, problems)


def parse_manifest(data: bytes, source: str, fmt: Literal["json", "toml"], base_dir: Path | None = None,
                   model: str | None = None) -> Manifest:
    if len(data) > MAX_MANIFEST_BYTES:
        raise ManifestError(source, [f"(file): {len(data)} bytes; a manifest is at most {MAX_MANIFEST_BYTES} (8 MiB)"])
    try:
        text = data.decode("utf-8")
        raw = (json.loads(text, object_pairs_hook=_no_duplicate_keys) if fmt == "json" else tomllib.loads(text))
    except (UnicodeDecodeError, ValueError) as exc:  # JSONDecodeError and TOMLDecodeError are ValueErrors
        raise ManifestError(source, [f"(file): not valid {fmt.upper()}: {exc}"]) from exc
    if not isinstance(raw, dict):
        raise ManifestError(source, ["(manifest): the top level must be an object"])
    _expand_files_from(raw, base_dir, source)
    if model is not None:
        raw["model"] = model  # `eval run --model`: a different model is a different cohort
    try:
        return Manifest.model_validate(raw)
    except ValidationError as exc:
        raise ManifestError(source, describe(exc)) from exc


def load_manifest(path: Path, model: str | None = None) -> Manifest:
    """Read and validate a .json or .toml manifest of at most 8 MiB (`model` replaces its model)."""
    suffix = path.suffix.lower()
    if suffix not in (".json", ".toml"):
        raise ManifestError(str(path), ["(file): the manifest must be a .json or .toml file"])
    try:
        size = path.stat().st_size
        if size > MAX_MANIFEST_BYTES:
            raise ManifestError(str(path), [f"(file): {size} bytes; a manifest is at most "
                                            f"{MAX_MANIFEST_BYTES} (8 MiB)"])
        with path.open("rb") as handle:
            data = handle.read(MAX_MANIFEST_BYTES + 1)  # the file may grow between stat and read
    except OSError as exc:
        raise ManifestError(str(path), [f"(file): cannot read: {exc.strerror or exc}"]) from exc
    return parse_manifest(data, str(path), "json" if suffix == ".json" else "toml", base_dir=path.resolve().parent,
                          model=model)
