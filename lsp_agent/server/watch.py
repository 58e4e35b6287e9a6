"""Watching the workspace with watchfiles: changes made outside the agent make earlier reads
stale and a standing check no longer evidence: a check vouches only for the sources it saw (see
"The verification status is derived from the record, and every write counts" in docs/decisions.md).

Telling the agent's own writes from outside writes: every write the server causes (its disk
writes, and the editor saving a buffer the agent edited) is announced here with the digest the
file will have. A change whose digest is announced is the agent's own; anything else is
external. An announcement stays until the file is seen with other content (so a slow save is
still recognised), and is replaced by the next write of the same file.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from watchfiles import Change, DefaultFilter, watch

from lsp_agent.core.write_detect import not_ignored
from lsp_agent.osfiles.regular import NotRegularFile, read_regular_bytes
from lsp_agent.tools.list_dir import git_ignored_paths

log = logging.getLogger(__name__)

IGNORED_DIRS = (*DefaultFilter.ignore_dirs, "venv", ".ruff_cache", ".nox", ".eggs", ".cache", ".lsp-agent")
IGNORED_NAMES = (
    *DefaultFilter.ignore_entity_patterns,
    r"^\..+\.[0-9a-f]{8}\.tmp$",  # the disk applier's atomic-write temp files
    r"^4913$",  # Vim/Neovim probe file written before a save
    r"^\.coverage(\..*)?$",
)
#: Files larger than this are not hashed; a change to one always counts as external.
MAX_HASH_BYTES = 20_000_000
DEBOUNCE_MS = 400
STEP_MS = 50


def file_digest(path: Path) -> str | None:
    """sha256 of the file's bytes (equals core.edits.digest of its UTF-8 text); None if absent."""
    try:
        if path.stat().st_size > MAX_HASH_BYTES:
            return "large"
        return hashlib.sha256(read_regular_bytes(path)).hexdigest()
    except NotRegularFile as exc:
        # never opened: a FIFO would block the watcher; a directory has no digest
        return None if exc.kind == "a directory" else "special"
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    except OSError:
        return "unreadable"


def _inspect(path: Path) -> tuple[bool, str | None]:
    return path.is_dir(), file_digest(path)


class OwnWrites:
    """Digests the agent's writes will leave on disk, per workspace-relative path (None = absent)."""

    def __init__(self) -> None:
        self._expected: dict[str, set[str | None]] = {}

    def expect(self, rel: str, digest: str | None, *, also: bool = False) -> None:
        """`also`: one more acceptable content (e.g. a buffer the editor formats on save)."""
        if also:
            self._expected.setdefault(rel, set()).add(digest)
        else:
            self._expected[rel] = {digest}

    def is_own(self, rel: str, digest: str | None) -> bool:
        expected = self._expected.get(rel)
        if expected is not None and digest in expected:
            return True
        self._expected.pop(rel, None)
        return False


class Watcher:
    def __init__(self, root: Path, own: OwnWrites, on_external: Callable[[list[str]], None],
                 ignore_paths: Iterable[Path] = ()) -> None:
        self.root = root.resolve()
        self.own = own
        self.on_external = on_external
        self.filter = DefaultFilter(ignore_dirs=IGNORED_DIRS, ignore_entity_patterns=IGNORED_NAMES,
                                    ignore_paths=[str(p) for p in ignore_paths])
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            # A daemon thread, not the default executor: a client that vanishes without `shutdown`
            # must not leave asyncio.run() waiting for this thread at exit.
            self._thread = threading.Thread(target=self._watch, args=(asyncio.get_running_loop(),), daemon=True,
                                            name="lsp-agent-watch")
            self._thread.start()

    async def stop(self) -> None:
        self._stop.set()
        for _ in range(100):
            if self._thread is None or not self._thread.is_alive():
                break
            await asyncio.sleep(0.05)
        self._thread = None

    def _watch(self, loop: asyncio.AbstractEventLoop) -> None:
        """In a thread of its own: setting up the recursive watch and waiting for changes never
        holds the event loop (the setup alone takes tens of milliseconds on a large tree)."""
        try:
            for changes in watch(self.root, watch_filter=self.filter, debounce=DEBOUNCE_MS, step=STEP_MS,
                                 stop_event=self._stop, ignore_permission_denied=True, raise_interrupt=False):
                asyncio.run_coroutine_threadsafe(self._handle_safely(changes), loop)
        except RuntimeError:
            pass  # the loop closed: the server is gone
        except Exception:
            log.exception("the workspace watcher stopped")

    async def _handle_safely(self, changes: set[tuple[Change, str]]) -> None:
        try:
            await self.handle(changes)
        except Exception:  # one bad batch must not end the watching
            log.exception("handling file changes failed")

    async def handle(self, changes: set[tuple[Change, str]]) -> None:
        kinds: dict[str, set[Change]] = {}
        for change, raw in changes:
            kinds.setdefault(raw, set()).add(change)
        external: list[str] = []
        for raw, seen in sorted(kinds.items()):
            try:
                rel = Path(raw).relative_to(self.root).as_posix()
            except ValueError:
                continue
            is_dir, digest = await asyncio.to_thread(_inspect, Path(raw))
            if is_dir or (digest is None and (Change.added in seen or Change.deleted not in seen)):
                # A directory; a file created and gone again within the batch; or never a file here:
                # the writes to a file that has no name yet (O_TMPFILE, the disk applier's temp file)
                # are reported under the kernel's placeholder name "#<inode>", which no one can open.
                continue
            if self.own.is_own(rel, digest):
                continue
            external.append(rel)
        external = await not_ignored(self.root, external, git_ignored_paths)  # build output, caches: not sources
        if external:
            log.info("changed outside the agent: %s", ", ".join(external))
            self.on_external(external)

