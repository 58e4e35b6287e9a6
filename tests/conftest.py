"""Shared test setup: every test gets its own state and config directories, and a category marker.

Markers (registered in pyproject.toml, which runs pytest with --strict-markers) are given here by
where a test lives, so a new test file is categorised without anyone remembering to:

- unit: in-process only (an in-process loopback server at most); `pytest -m unit` is the quick loop.
- e2e: real processes: the server over stdio or TCP, the CLI, editors, the sandbox running a command.
- realhost: a real host tool beyond Python (code-server and chromium).
- real_model: a real llama-server.
- reliability, security: those directories.
- slow: takes more than a few seconds.

A test under tests/unit that starts a process (the CLI, `python -c`, bwrap running a command) is e2e,
not unit. Short `git` and `rg` calls a tool makes in passing do not count, nor the read-only bwrap
they run in: they take milliseconds and leave the test in-process in every other way.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

TESTS = Path(__file__).parent

#: directory under tests/ -> markers every test in it gets. "unit" turns into "e2e" for the tests
#: listed below that start processes.
BY_DIRECTORY: dict[str, tuple[str, ...]] = {
    "unit": ("unit",),
    "providers": ("unit",),  # the HTTP servers they talk to are in-process loopback servers
    "mcptools": ("unit",),
    "eval": ("unit",),
    "bench": ("unit",),
    "e2e": ("e2e",),
    "acp": ("e2e",),  # the agent over stdio
    "e2e_vscode": ("e2e", "realhost", "slow"),
    "real_model": ("e2e", "real_model", "slow"),
    "reliability": ("reliability", "e2e"),
    "security": ("security", "e2e"),
    "packaging": ("e2e", "slow"),  # builds the wheel and installs it into a fresh venv
}

#: Files of an otherwise in-process directory whose tests start processes: the whole file is e2e.
SPAWNING_FILES = frozenset({
    "unit/test_announce.py",
    "unit/test_cli.py",
    "unit/test_cli_approval.py",
    "unit/test_cli_messages.py",
    "unit/test_cli_startup.py",
    "unit/test_context_compaction.py",
    "unit/test_context_handoff.py",
    "unit/test_context_long.py",
    "unit/test_headless_run.py",
    "unit/test_no_pydantic_plugins.py",
    "unit/test_process_start_cancel.py",
    "unit/test_run_command.py",
    "unit/test_skills_cli.py",
    "unit/test_skills_evidence.py",
    "unit/test_skills_flow.py",
    "unit/test_skills_from_cli_runs.py",
    "unit/test_verify_project.py",
    "unit/test_write_detect.py",
    "providers/test_capability_limits.py",
    "providers/test_capability_loop.py",
    "providers/test_prefix_stability.py",
    "providers/test_replay_records.py",
    "providers/test_project_instructions.py",
    "providers/test_run_cli.py",
    "mcptools/test_mcp_approval.py",
    "mcptools/test_mcp_cli.py",
    "mcptools/test_mcp_loop.py",
    "eval/test_eval_cli.py",
    "eval/test_eval_limits.py",
    "eval/test_eval_preflight_offline.py",
    "eval/test_eval_provenance.py",
    "eval/test_inspect_export.py",
    "eval/test_inspect_task.py",
    "eval/test_ray_executor.py",
    "eval/test_runner.py",
    "eval/test_worker_cancel.py",
    "bench/test_bench_smoke.py",
})

#: Single tests that start processes in a file that otherwise stays in-process.
SPAWNING_TESTS: dict[str, frozenset[str]] = {
    "unit/test_approval.py": frozenset({
        "test_allow_session_grants_exactly_the_command_shown_and_survives_resume",
        "test_on_failure_offers_an_unsandboxed_rerun",
        "test_on_request_asks_nothing_for_sandboxed_commands_and_file_tools",
        "test_without_a_sandbox_allow_runs_it_unsandboxed_and_deny_refuses"}),
    "unit/test_boot.py": frozenset({"test_boot_imports_no_server"}),
    "unit/test_context_stale.py": frozenset({"test_tail_reminders_go_last_in_the_request_and_nothing_stored_changes"}),
    "unit/test_controller.py": frozenset({"test_shell_metacharacters_are_literal_arguments"}),
    "unit/test_disk_applier.py": frozenset({"test_a_process_killed_while_writing_leaves_the_file_as_it_was"}),
    "unit/test_loop.py": frozenset({
        "test_cancel_mid_tool_kills_the_process_group_and_keeps_partial_output",
        "test_final_claim_of_success_does_not_change_a_failed_check",
        "test_step_limit_can_still_be_verified",
        "test_write_after_passing_verify_makes_status_not_run"}),
    "unit/test_protocol_docs.py": frozenset({"test_schema_markdown_command_prints_the_document"}),
    "unit/test_protocol_schema.py": frozenset({"test_schema_command_lists_every_method_notification_and_command",
                                               "test_the_protocol_loads_no_part_of_the_agent"}),
    "unit/test_sandbox_plan.py": frozenset({"test_a_toolchain_under_tmp_stays_visible_inside_the_private_tmp"}),
    "unit/test_skills_files.py": frozenset({
        "test_a_file_where_a_folder_belongs_is_refused",
        "test_a_symlinked_folder_on_the_way_is_refused_even_when_git_hides_it"}),
    "unit/test_steering.py": frozenset({"test_cancel_rejects_every_pending_correction"}),
    "providers/test_discovery.py": frozenset({
        "test_a_declared_window_beats_the_servers",
        "test_base_url_and_config_provider_fields_merge",
        "test_the_run_header_shows_the_servers_window_and_the_budget_uses_it"}),
    "mcptools/test_tool_search.py": frozenset({
        "test_mcp_tool_is_reachable_only_after_tool_search_found_it",
        "test_selection_holds_for_later_generations_of_the_session",
        # (skipped where the npm server is not installed; CI installs it)
        "test_everything_server_from_npm_is_found_by_words_not_by_substring"}),
    # (skipped without tsc outside CI; CI has it)
    "eval/test_starter_suite.py": frozenset({
        "test_every_oracle_fails_fresh_passes_the_reference_fix_and_fails_untouched"}),
    "eval/test_compare_verdicts.py": frozenset({
        "test_null_experiment_says_no_difference_shown_with_intervals",
        "test_simulate_null_through_the_cli_in_text_and_json"}),
    "eval/test_harness_claims.py": frozenset({"test_the_runner_records_the_claim_from_run_finish",
                                              "test_the_real_agent_claim_is_measured_against_the_oracle"}),
    "eval/test_arm_sampling.py": frozenset({"test_each_arm_sends_its_sampling_to_the_server_and_records_it"}),
    "eval/test_shipping_and_resume.py": frozenset({
        "test_manifest_dir_placeholder_names_shipped_scripts",
        "test_resume_refuses_another_cohort_or_a_missing_file",
        "test_resume_reruns_only_missing_and_cancelled_attempts_into_the_same_file"}),
}

#: Tests outside the slow directories that take more than about 2.5 s each on a busy 2-core machine
#: (pytest --durations); None: the whole file.
SLOW_TESTS: dict[str, frozenset[str] | None] = {
    "eval/test_ray_executor.py": None,
    "eval/test_eval_preflight_offline.py": frozenset({
        "test_the_offline_example_runs_without_a_key_and_compare_reports_it"}),
    "eval/test_inspect_export.py": None,  # each export process imports Inspect AI (seconds)
    "eval/test_inspect_task.py": None,
    "bench/test_bench_smoke.py": None,
    "eval/test_eval_cli.py": frozenset({"test_real_cli_two_arm_cohort_comes_out_exactly_as_constructed"}),
    "eval/test_compare_verdicts.py": frozenset({
        "test_fresh_null_cohorts_claim_a_difference_at_most_5_percent_of_the_time"}),
    "eval/test_harness_claims.py": frozenset({"test_the_real_agent_claim_is_measured_against_the_oracle"}),
    "eval/test_metrics.py": frozenset({"test_more_than_100000_part_ids_damages_the_stream"}),
    "eval/test_runner.py": frozenset({"test_timeout_kills_the_whole_process_tree"}),
    "eval/test_shipping_and_resume.py": frozenset({
        "test_resume_reruns_only_missing_and_cancelled_attempts_into_the_same_file"}),
    "mcptools/test_mcp_cli.py": frozenset({
        "test_an_eval_arm_with_the_flags_on_really_exposes_tool_search_and_read_recipe"}),
    "mcptools/test_mcp_loop.py": frozenset({
        "test_fault_server_results_errors_limits_and_a_crash_mid_call",
        "test_two_untrusted_mcp_calls_in_one_step_run_one_after_the_other"}),
    "acp/test_acp.py": frozenset({
        "test_full_run_edits_through_fs_streams_updates_and_ends_verified_like_the_cli_and_lsp"}),
    "unit/test_cli_messages.py": frozenset({"test_require_verified_exits_3_unless_a_check_observed_the_result"}),
    "unit/test_loop.py": frozenset({"test_cancel_mid_tool_kills_the_process_group_and_keeps_partial_output"}),
    "unit/test_queue_invariant.py": frozenset({"runTest"}),
    "unit/test_skills_from_cli_runs.py": frozenset({
        "test_the_documented_cli_flow_turns_two_headless_sessions_into_a_skill",
        "test_propose_from_a_session_with_fields_as_flags",
        "test_from_session_picks_the_latest_passing_result_and_keeps_every_rule"}),
    "unit/test_verify_project.py": frozenset({"test_timeout_is_an_error_and_kills_the_process_group"}),
    "e2e/test_headless_language_server.py": frozenset({"test_the_navigation_eval_example_runs_both_arms_offline"}),
    "e2e/test_lsp_autosave.py": frozenset({
        "test_a_correct_run_ends_verified_whatever_the_auto_save_mode",
        "test_the_users_own_typing_saved_by_auto_save_still_counts_as_outside"}),
    "e2e/test_lsp_crash.py": frozenset({
        "test_kill_9_mid_generation_loses_and_duplicates_nothing_and_leaves_no_row_stuck"}),
    "e2e/test_lsp_edits.py": frozenset({"test_open_and_closed_files_in_one_patch_go_to_editor_and_disk"}),
    "e2e/test_lsp_errors.py": frozenset({"test_wrong_types_and_unknown_fields_are_invalid_params_naming_the_field"}),
    "e2e/test_lsp_lifecycle.py": frozenset({
        "test_a_runtime_that_cannot_be_built_after_the_early_answer_is_reported",
        "test_initialize_is_answered_early_with_what_pygls_answers_and_early_requests_wait",
        "test_tcp_mode_serves_the_same_protocol"}),
    "e2e/test_lsp_mcp.py": frozenset({
        "test_agent_mcp_list_start_and_strict_params",
        "test_mcp_tool_called_through_the_loop_over_lsp_and_listed"}),
    "e2e/test_lsp_queue.py": frozenset({
        "test_add_list_edit_cancel_with_queue_changed_notifications",
        "test_queue_steer_admits_a_row_once_and_rejects_what_cannot_be_steered",
        "test_send_now_moves_a_row_ahead_but_waits_for_the_running_generation",
        "test_steer_prefix_steers_in_order_and_stops_at_the_first_barrier"}),
    "e2e/test_lsp_run.py": frozenset({"test_status_sessions_and_paged_session_after_a_run"}),
    "e2e/test_lsp_skills.py": frozenset({
        "test_promote_action_is_offered_only_when_valid_and_running_it_promotes",
        "test_skill_methods_answer_rules_as_results_and_bad_params_as_errors"}),
    "e2e/test_lsp_steering.py": frozenset({
        "test_a_correction_is_accepted_then_applied_after_the_steps_tool_results",
        "test_a_correction_sent_as_the_final_reply_arrives_buys_one_more_step",
        "test_stale_idle_and_oversized_corrections_are_rejected_receipts_not_errors"}),
    "e2e/test_lsp_watch.py": frozenset({
        "test_outside_write_after_an_idle_verified_run_turns_it_not_run_but_ignored_files_do_not",
        "test_verifying_again_after_the_external_write_is_verified"}),
    "e2e/test_lsp_wire_bounds.py": frozenset({"test_a_second_initialize_is_refused_and_changes_nothing"}),
    "e2e/test_neovim.py": frozenset({"test_neovim_runs_a_task_on_an_open_buffer_and_saves_it"}),
    "e2e/test_nvim_mcp.py": frozenset({"test_agent_mcp_shows_servers_and_tools"}),
    "e2e/test_nvim_rough_edges.py": frozenset({
        "test_a_correction_accepted_by_a_run_that_then_fails_is_shown_not_lost"}),
    "reliability/test_kill9.py": frozenset({
        "test_kill_9_at_a_random_point_loses_nothing_accepted_and_the_session_goes_on"}),
    "reliability/test_same_pid_restart.py": None,
    "reliability/test_session_owner.py": None,
    "reliability/test_memory.py": frozenset({
        "test_large_rejected_messages_are_freed_at_once",
        "test_rss_is_flat_over_a_long_session"}),
    "security/test_commands.py": frozenset({"test_pytest_conftest_through_verify_project_is_contained"}),
}


def _categories(rel: str, name: str) -> tuple[str, ...]:
    markers = BY_DIRECTORY.get(rel.split("/", 1)[0], ())
    if "unit" in markers and (rel in SPAWNING_FILES or name in SPAWNING_TESTS.get(rel, ())):
        markers = tuple("e2e" if m == "unit" else m for m in markers)
    if rel in SLOW_TESTS and (SLOW_TESTS[rel] is None or name in (SLOW_TESTS[rel] or ())):
        markers = (*markers, "slow")
    return markers


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        try:
            rel = item.path.relative_to(TESTS).as_posix()
        except ValueError:
            continue  # a test from outside tests/ (a path given on the command line)
        name = getattr(item, "originalname", None) or item.name.split("[")[0]
        own = {m.name for m in item.iter_markers()}
        for marker in _categories(rel, name):
            if marker not in own and not (marker == "unit" and "e2e" in own):  # an explicit e2e wins
                item.add_marker(marker)


@pytest.fixture(autouse=True)
def isolated_state(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    state = tmp_path_factory.mktemp("state")
    monkeypatch.setenv("LSP_AGENT_STATE_DIR", str(state))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config")))
    yield state


#: What a unit test may start: the short git and rg calls tools make in passing.
UNIT_MAY_START = frozenset({"git", "rg"})


@pytest.fixture(autouse=True)
def unit_tests_start_no_process(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keeps the `unit` marker true: a unit test that starts another program fails and says where
    to mark it. Every way the project starts a process (subprocess, asyncio's subprocesses) goes
    through `subprocess.Popen`, so that is where it is caught."""
    if request.node.get_closest_marker("unit") is None:
        return
    start = subprocess.Popen._execute_child  # type: ignore[attr-defined]

    def guarded(self: subprocess.Popen[Any], args: Any, *rest: Any, **options: Any) -> Any:
        argv = [args] if isinstance(args, str | bytes | os.PathLike) else list(args)
        program = os.path.basename(os.fsdecode(argv[0])) if argv else ""
        if program == "bwrap" and "--" in argv:
            # The harness's own git and rg run in a read-only sandbox (tools/internal.py); the
            # sandbox's one-time probe runs `true`. Anything else bwrap starts is a command: e2e.
            wrapped = os.path.basename(os.fsdecode(argv[argv.index("--") + 1]))
            if wrapped in UNIT_MAY_START or wrapped == "true":
                return start(self, args, *rest, **options)
        if program not in UNIT_MAY_START:
            raise AssertionError(f"a test marked unit started {program!r}; list it in tests/conftest.py as one "
                                 "that starts processes (it becomes e2e)")
        return start(self, args, *rest, **options)

    monkeypatch.setattr(subprocess.Popen, "_execute_child", guarded)
