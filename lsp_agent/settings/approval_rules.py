"""The user's standing approvals: `[approvals] allow = ["python3 -m pytest *"]` in the user config.

The grammar is argv-wise and deliberately poor, so a rule grants what it reads as and nothing near it:

- A rule is split into words like a shell line (`shlex.split`: quotes group, no expansion).
- Every word but a lone final `*` must equal the command's word at the same place, exactly: no
  globbing inside a word, no prefix match, no case folding. `python3 -m pytest` matches that argv
  and nothing longer or shorter.
- A lone `*` as the LAST word matches any number of further words, none included.
  So `python3 -m pytest *` allows `python3 -m pytest -q tests/x.py` but never `python3 -c ...`:
  the words before the `*` must all be there first. `python3 *` is a rule for every python3 run,
  `-c` included: it says exactly that, and the user who writes it means it.
- A `*` anywhere else (a lone `*` not at the end, or a `*` inside a word such as `tests/*.py`) makes
  the rule invalid and the settings fail to load with a message: a glob the user believes in but
  the matcher ignores would be a silent surprise in either direction.
- The first word may not be `*` (a rule for every program is `approvalPolicy`'s business).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Final

ANY_REST: Final = "*"


@dataclass(frozen=True)
class AllowRule:
    pattern: str
    #: the exact leading words
    words: tuple[str, ...]
    #: a final `*`: any further words are allowed
    open_end: bool

    def matches(self, argv: tuple[str, ...] | list[str]) -> bool:
        fixed = len(self.words)
        if len(argv) < fixed or (not self.open_end and len(argv) != fixed):
            return False
        return all(given == wanted for given, wanted in zip(argv, self.words, strict=False))


def parse_rule(pattern: str) -> AllowRule:
    """The rule a pattern reads as; ValueError says what is wrong with it."""
    try:
        words = shlex.split(pattern)
    except ValueError as exc:
        raise ValueError(f"approvals.allow {pattern!r} does not split into words: {exc}") from exc
    open_end = bool(words) and words[-1] == ANY_REST
    fixed = words[:-1] if open_end else words
    if not fixed:
        raise ValueError(f"approvals.allow {pattern!r} names no program: a rule starts with the program's name")
    for word in fixed:
        if ANY_REST in word:
            raise ValueError(f"approvals.allow {pattern!r}: `*` is allowed only as the whole last word (any further "
                             f"words); {word!r} would be matched literally, which is never what it looks like")
        if not word or any(ord(c) < 32 or ord(c) == 127 for c in word):
            raise ValueError(f"approvals.allow {pattern!r}: an empty word or a control character")
    return AllowRule(pattern, tuple(fixed), open_end)


def first_match(rules: tuple[AllowRule, ...], argv: tuple[str, ...]) -> AllowRule | None:
    return next((rule for rule in rules if rule.matches(argv)), None)
