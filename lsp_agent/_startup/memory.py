"""Giving freed memory back to the OS after a generation ends or a session is dropped.

CPython frees objects at once, but glibc's malloc keeps the freed heap pages of a large history (and
of the multi-megabyte request bodies of a long session) mapped, so a long-lived server's RSS would
stay at its peak. `malloc_trim(0)` returns the free pages; it is glibc's own call for this. Elsewhere
(musl, macOS, Windows) there is no such call and `release_soon` does nothing.

The trim walks the heap (milliseconds on a large one), so it runs in a worker thread (ctypes drops the
GIL for the call), at most one at a time; requests that arrive meanwhile are folded into one more run.
ctypes is loaded at the first release, not at import: a headless run never releases, and ctypes with
what it pulls in is ≈ 0.4 MB of a process whose peak is budgeted at 50 MB.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import logging
import sys
import traceback
from collections.abc import Callable

__all__ = ["available", "drop_frames", "release_now", "release_soon", "released"]

log = logging.getLogger(__name__)


@functools.cache
def _trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        # the symbols the interpreter already links (dlopen(NULL)): libc's, without the
        # `ldconfig -p` subprocess `ctypes.util.find_library` would run to name the library
        trim = ctypes.CDLL(None).malloc_trim  # glibc only: musl has no malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


_pending: asyncio.Future[None] | None = None
_again = False


def available() -> bool:
    """The platform's allocator can give free pages back (glibc)."""
    return _trim() is not None


def release_now() -> None:
    """Return the allocator's free pages to the OS now (blocking; a no-op without glibc)."""
    trim = _trim()
    if trim is not None:
        trim(0)


def settle_startup() -> None:
    """What start-up made (modules, classes, schemas, settings) lives as long as the process: move it
    out of the cyclic collector's reach, so a full collection walks only what the work since made.
    In the language server a full collection in the middle of a streaming run walked every
    pygls/lsprotocol object: an 87 ms pause (bench/lsp_latency.py: none with the freeze).
    Once per process: a later call (another ACP workspace) would also freeze the sessions alive then,
    and cyclic garbage among frozen objects is never collected."""
    if gc.get_freeze_count() == 0:
        gc.freeze()


def release_soon() -> None:
    """`release_now` in a worker thread, off the event loop; coalesced while one runs."""
    global _pending, _again
    if not sys.platform.startswith("linux"):
        return  # (on Linux the worker finds out whether libc has the call: loading ctypes stays off the loop)
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        release_now()
        return
    if _pending is not None and not _pending.done() and _pending.get_loop() is loop:
        _again = True
        return
    # (a future of an earlier event loop may never complete: that loop may be closed)
    _again = False
    _pending = loop.run_in_executor(None, release_now)
    _pending.add_done_callback(_finished)


def _finished(done: asyncio.Future[None]) -> None:
    if not done.cancelled() and done.exception() is not None:
        log.warning("malloc_trim failed: %s", done.exception())
    if _again:
        release_soon()


async def released() -> None:
    """Wait until no release is pending (tests measure RSS after it)."""
    loop = asyncio.get_running_loop()
    while _pending is not None and not _pending.done() and _pending.get_loop() is loop:
        await asyncio.shield(_pending)


def drop_frames(exc: BaseException) -> None:
    """Clear the locals of the finished frames in `exc`'s traceback, its causes and its sub-errors.

    A caught exception often sits in a reference cycle (a frame that collected errors into a list,
    as cattrs does; a future whose `result()` re-raised it), so the frames' locals — the request that
    failed, possibly tens of megabytes — would live until a GC pass. Call it once the error's text is
    taken; frames still running are left alone."""
    seen: set[int] = set()
    pending: list[BaseException] = [exc]
    while pending:
        error = pending.pop()
        if id(error) in seen:
            continue
        seen.add(id(error))
        traceback.clear_frames(error.__traceback__)
        pending.extend(e for e in (error.__cause__, error.__context__) if e is not None)
        nested = getattr(error, "exceptions", None)  # ExceptionGroup, cattrs' ClassValidationError
        if isinstance(nested, list | tuple):
            pending.extend(e for e in nested if isinstance(e, BaseException))
