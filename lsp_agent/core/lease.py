"""One writer per session: a lease in the store names the process that writes a session now.

Several processes may open one workspace (two editor windows on a folder, the CLI beside a server).
Each may read any session, but only the lease holder writes one — its prompt, steps, notes, and the
repair of calls a dead process left unanswered. Without that, a second process that merely loaded a
session while the first ran a tool answered the live call as "interrupted" (two results for one
call), and a second run interleaved its messages with the first's.

The lease is taken when a generation begins and released when it ends (a process that idles on a
session does not keep it), and taken for a moment when a session is loaded, to repair it. A holder
is live while its identity says so (core/process_identity.py: same host, boot and pid namespace —
exact, at once); a holder this process cannot look at (another host or pid namespace) is live while
its heartbeat is younger than `limits.session_lease_s`, renewed every third of that. A dead holder's
lease is taken over, and the taker then repairs the session.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from lsp_agent.core.errors import AgentError, AgentErrorKind, Holder
from lsp_agent.core.process_identity import Verdict, describe, process_owner, verdict
from lsp_agent.core.storage import LeaseStore, SessionLease, StoreUnavailable

__all__ = ["LEASE_S", "SessionLeases", "holder_text", "session_busy"]

log = logging.getLogger(__name__)

#: The default of `limits.session_lease_s`.
LEASE_S = 30.0


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def holder_text(lease: SessionLease, lease_s: float = LEASE_S) -> str:
    """Who holds a session, in words: "another lsp-agent process (pid N on host H)"."""
    pid, host = describe(lease.owner)
    who = f"pid {pid}" if pid is not None else "an unidentified process"
    where = f" on host {host}" if host else ""
    text = f"another lsp-agent process ({who}{where})"
    # Another namespace's pid 1 is not this one: say why it still counts (a restarted container's
    # predecessor holds the session until its heartbeat has been silent for the lease).
    if verdict(lease.owner) is Verdict.UNKNOWN:
        text += (f"; it runs where this process cannot look (another host or pid namespace), so the session "
                 f"is free once its heartbeat has stopped for {lease_s:g} s")
    return text


def session_busy(session_id: str, lease: SessionLease, lease_s: float = LEASE_S) -> AgentError:
    pid, host = describe(lease.owner)
    return AgentError(AgentErrorKind.SESSION_BUSY,
                      f"session {session_id} is being written by {holder_text(lease, lease_s)}; it can be read "
                      "here, but a run must wait until that process finishes with it (or use another session)",
                      Holder(pid, host))


class SessionLeases:
    """The lease rules over a store: take, keep, release, and whether an owner is still there."""

    def __init__(self, store: LeaseStore, lease_s: Callable[[], float] = lambda: LEASE_S) -> None:
        self.store = store
        #: `limits.session_lease_s`, asked each time (the settings may change while a server runs)
        self.lease_s = lease_s

    def _expiry_ms(self) -> int:
        return int(self.lease_s() * 1000)

    def live(self, lease: SessionLease, now: int | None = None) -> bool:
        """Whether the lease's holder is still there. One that cannot be looked at is, until the time its
        last heartbeat named: the holder's own setting, which a process reading other settings (a CLI
        `--config`) could not guess."""
        found = verdict(lease.owner)
        if found is not Verdict.UNKNOWN:
            return found is Verdict.ALIVE
        return (now if now is not None else now_ms()) < lease.expires_at

    def owner_alive(self, owner: str | None) -> bool:
        """Whether the process that wrote `owner` (a steered row, a pending correction) still runs. One
        this process cannot look at counts as alive while it holds a live lease: it wrote the row while
        its generation ran, and a generation holds its session's lease until it ends."""
        found = verdict(owner)
        if found is not Verdict.UNKNOWN:
            return found is Verdict.ALIVE
        now = now_ms()
        return any(lease.owner == owner and self.live(lease, now) for lease in self.store.leases())

    def lapses_in(self, owner: str | None) -> float | None:
        """Seconds until the leases of an owner this process cannot look at lapse (None: it holds none
        that run): when to ask again about the rows it left."""
        if verdict(owner) is not Verdict.UNKNOWN:
            return None
        now = now_ms()
        left = [lease.expires_at - now for lease in self.store.leases()
                if lease.owner == owner and self.live(lease, now)]
        return max(left) / 1000 if left else None

    def held_elsewhere(self) -> dict[str, Holder]:
        """Session → the process, for each session a live process other than this one holds."""
        now, me = now_ms(), process_owner()
        return {lease.session_id: Holder(*describe(lease.owner)) for lease in self.store.leases()
                if lease.owner != me and self.live(lease, now)}

    # --- taking and giving back -----------------------------------------------------------------

    def try_take(self, session_id: str) -> tuple[bool, SessionLease | None]:
        """(taken, the lease found): taken is False only when another live process holds it."""
        now = now_ms()
        return self.store.acquire_lease(session_id, process_owner(), now, now + self._expiry_ms(), self.live)

    def take(self, session_id: str) -> bool:
        """Take the lease or refuse with `session_busy` naming the holder. True when this call took it
        (release it when done), False when this process held it already."""
        taken, found = self.try_take(session_id)
        if not taken:
            assert found is not None
            raise session_busy(session_id, found, self.lease_s())
        mine = found is not None and found.owner == process_owner()
        if found is not None and not mine:
            pid, host = describe(found.owner)
            log.warning("session %s: took over the lease of pid %s on %s (gone, or its heartbeat lapsed)",
                        session_id, pid, host or "an unknown host")
        return not mine

    @contextmanager
    def held_briefly(self, session_id: str) -> Iterator[bool]:
        """Hold the lease for a short write if no other live process does (yields False, and holds
        nothing, when one does); given back afterwards unless this process held it before."""
        taken, found = self.try_take(session_id)
        try:
            yield taken
        finally:
            if taken and (found is None or found.owner != process_owner()):
                self.release(session_id)

    def release(self, session_id: str) -> None:
        self.store.release_lease(session_id, process_owner())

    async def keep(self, session_id: str, lost: Callable[[], None]) -> None:
        """The heartbeat, until cancelled. When the lease was taken over meanwhile (this process stalled
        longer than the lease where its identity cannot be checked) `lost` is called once."""
        while True:
            await asyncio.sleep(max(self.lease_s() / 3, 0.1))
            try:
                now = now_ms()
                held = self.store.renew_lease(session_id, process_owner(), now, now + self._expiry_ms())
            except StoreUnavailable as exc:  # full, locked: the run reports it; the next beat tries again
                log.warning("session %s: could not renew the lease: %s", session_id, exc.message)
                continue
            if not held:
                log.warning("session %s: the lease was taken over by another process; stopping this run",
                            session_id)
                lost()
                return
