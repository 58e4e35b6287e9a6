"""The extension's version at initialize: taken out of the settings layer, compared, said with the fix."""

from __future__ import annotations

from lsp_agent.server.client_version import mismatch_message, split_client_version


def test_the_key_leaves_the_settings_layer_and_only_a_short_string_counts() -> None:
    assert split_client_version({"clientVersion": "0.2.0", "model": "x/y"}) == ("0.2.0", {"model": "x/y"})
    assert split_client_version({"model": "x/y"}) == (None, {"model": "x/y"})
    assert split_client_version(None) == (None, None)
    for bad in (2, "", "  ", "9" * 65, None):
        assert split_client_version({"clientVersion": bad}) == (None, {})


def test_the_message_names_both_versions_the_interpreter_and_the_fix() -> None:
    assert mismatch_message("0.2.0", "0.2.0") is None
    assert mismatch_message("v0.2.0", "0.2.0") is None
    assert mismatch_message(None, "0.2.0") is None  # an editor that does not say
    assert mismatch_message("0.2.0", None) is None  # a checkout that is not installed
    assert mismatch_message("0.2.0", "0.1.0", "/venv/bin/python") == (
        "lsp-agent: the extension is 0.2.0, the server at /venv/bin/python is 0.1.0: update it "
        "(/venv/bin/python -m pip install --upgrade ./lsp_agent-0.2.0-py3-none-any.whl, the release's wheel) or let the extension manage its environment")
    assert "\n" not in (mismatch_message("1\n2", "0.1.0") or "")
