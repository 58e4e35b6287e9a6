"""Which configuration keys the harness's git overrides: every key that names a program, by class
(section or last component), in any scope and subsection; data keys are left alone."""

from __future__ import annotations

import pytest

from lsp_agent.sandbox.git import ConfigEntry, GitConfigRefused, _parse_listing, overrides_for


def _entry(key: str, value: str = "x", scope: str = "local") -> ConfigEntry:
    return ConfigEntry(scope, "file:.git/config", key, value)


NEUTRALISED = [
    ("core.fsmonitor", "false"), ("core.hookspath", "/dev/null"), ("core.pager", "cat"),
    ("core.editor", "false"), ("core.sshcommand", "false"), ("core.askpass", ""), ("core.gitproxy", ""),
    ("core.alternaterefscommand", ""), ("diff.external", ""), ("diff.Evil.textconv", ""),
    ("diff.Evil.command", ""), ("filter.Evil.clean", ""), ("filter.Evil.smudge", ""),
    ("filter.Evil.process", ""), ("filter.Evil.required", "false"), ("merge.Evil.driver", ""),
    ("credential.helper", ""), ("credential.https://example.com.helper", ""), ("gpg.program", "false"),
    ("gpg.ssh.program", ""), ("gpg.ssh.defaultkeycommand", ""), ("sequence.editor", "false"),
    ("alias.st", ""), ("pager.status", "false"), ("hook.pre-commit.command", ""),
    ("remote.origin.uploadpack", ""), ("remote.origin.receivepack", ""), ("remote.origin.vcs", ""),
    ("protocol.ext.allow", "never"), ("submodule.lib.update", "none"), ("difftool.x.cmd", ""),
    ("mergetool.x.cmd", ""), ("browser.x.cmd", ""), ("browser.x.path", ""), ("man.x.path", ""),
    ("sendemail.tocmd", ""), ("sendemail.sendmailcmd", ""), ("uploadpack.packobjectshook", ""),
    ("interactive.difffilter", ""), ("web.browser", ""), ("instaweb.httpd", ""),
]


@pytest.mark.parametrize(("key", "value"), NEUTRALISED)
@pytest.mark.parametrize("scope", ["local", "worktree", "global", "system"])
def test_every_program_key_is_neutralised_in_every_scope(key: str, value: str, scope: str) -> None:
    assert (key, value) in overrides_for([_entry(key, scope=scope)])


def test_a_driver_named_anywhere_loses_all_its_program_keys() -> None:
    pairs = dict(overrides_for([_entry("filter.Evil.required", "true"), _entry("diff.Tc.xfuncname", "^x")]))
    assert {k: pairs[k] for k in ("filter.Evil.clean", "filter.Evil.smudge", "filter.Evil.process",
                                  "diff.Tc.textconv", "diff.Tc.command")} == dict.fromkeys(
        ("filter.Evil.clean", "filter.Evil.smudge", "filter.Evil.process", "diff.Tc.textconv", "diff.Tc.command"), "")


@pytest.mark.parametrize("key", ["user.name", "include.path", "includeif.gitdir:/x/.path", "core.excludesfile",
                                 "core.attributesfile", "core.bare", "extensions.worktreeconfig", "diff.Tc.xfuncname",
                                 "remote.origin.url", "blame.ignorerevsfile"])
def test_data_keys_are_left_alone(key: str) -> None:
    assert all(k != key for k, _ in overrides_for([_entry(key)]))


def test_core_worktree_in_any_scope_refuses() -> None:
    for scope in ("local", "worktree", "global"):
        with pytest.raises(GitConfigRefused, match=r"core\.worktree"):
            overrides_for([_entry("core.worktree", "/elsewhere", scope)])


def test_our_own_command_scope_entries_are_not_listed_again() -> None:
    assert overrides_for([_entry("core.fsmonitor", "false", "command")]) == []


def test_only_the_users_safe_directory_is_carried() -> None:
    pairs = overrides_for([_entry("safe.directory", "/a", "global"), _entry("safe.directory", "/b", "system"),
                           _entry("safe.directory", "*", "local")])
    assert [p for p in pairs if p[0] == "safe.directory"] == [("safe.directory", "/a"), ("safe.directory", "/b")]


def test_the_listing_format() -> None:
    raw = b"local\0file:.git/config\0core.bare\nfalse\0worktree\0file:.git/config.worktree\0filter.x.clean\ntouch y\0"
    assert _parse_listing(raw) == [ConfigEntry("local", "file:.git/config", "core.bare", "false"),
                                   ConfigEntry("worktree", "file:.git/config.worktree", "filter.x.clean", "touch y")]
