"""The model catalogue (`protocols.member.catalogue`) and what an agent's requests take from it
(`teammate.api.model_settings`): windows, ``max_tokens``, thinking and effort, betas, the
compaction threshold, the variables that change them, and typos of ``--model``."""

from __future__ import annotations

from pathlib import Path

import pytest

from protocols.member.catalogue import (
    EFFORT_BETA,
    ONE_M_BETA,
    THINKING_BETA,
    model_name_problem,
    resolve,
)
from teammate.api.model_settings import ModelSettings, SettingsValueError
from teammate.config.settings import SettingsError, load_settings
from teammate.options import UsageError, parse


@pytest.mark.parametrize(
    ("name", "model_id", "window"),
    [
        ("sonnet", "claude-sonnet-5-5", 1_000_000),
        ("opus", "claude-opus-5-5", 1_000_000),
        ("haiku", "claude-haiku-5-5", 1_000_000),
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5-20250929", 200_000),
        ("claude-sonnet-4-5[1m]", "claude-sonnet-4-5", 1_000_000),
        (
            "us.anthropic.claude-opus-4-5-20251101-v1:0",
            "us.anthropic.claude-opus-4-5-20251101-v1:0",
            200_000,
        ),
        ("claude-opus-4-1[1m]", "claude-opus-4-1", 1_000_000),
        ("a-vendors-model", "a-vendors-model", 200_000),  # unknown: conservative limits
    ],
)
def test_names_resolve_to_an_id_a_window_and_betas(name: str, model_id: str, window: int) -> None:
    found = resolve(name, {})
    assert found.id == model_id and found.window == window
    assert (ONE_M_BETA in found.betas) == name.endswith("[1m]")


def test_an_alias_follows_its_environment_variable() -> None:
    assert resolve("opus", {"ANTHROPIC_DEFAULT_OPUS_MODEL": "claude-opus-4-8"}).window == 1_000_000
    assert resolve("sonnet", {"ANTHROPIC_DEFAULT_SONNET_MODEL": "claude-sonnet-4-5"}).id == (
        "claude-sonnet-4-5"
    )


def test_todays_models_think_adaptively_at_their_default_effort() -> None:
    sonnet = ModelSettings.of("sonnet", environ={})
    assert sonnet.max_tokens == 128_000 and sonnet.thinking == {"type": "adaptive"}
    assert sonnet.effort == "medium" and set(sonnet.betas) == {THINKING_BETA, EFFORT_BETA}
    assert ModelSettings.of("sonnet", "high", {}).effort == "high"
    # a level the model does not take is the nearest below; a budget is a level
    assert ModelSettings.of("claude-sonnet-4-6", "xhigh", {}).effort == "high"
    assert ModelSettings.of("sonnet", 30_000, {}).effort == "xhigh"
    assert ModelSettings.of("sonnet", environ={"CLAUDE_CODE_EFFORT_LEVEL": "low"}).effort == "low"


def test_older_models_think_with_a_budget_only_when_asked() -> None:
    plain = ModelSettings.of("claude-sonnet-4-5", environ={})
    assert plain.thinking is None and plain.betas == () and plain.max_tokens == 32_000
    asked = ModelSettings.of("claude-sonnet-4-5", "high", {})
    assert asked.thinking == {"type": "enabled", "budget_tokens": 24_000}
    assert asked.max_tokens == 40_000 and asked.betas == (THINKING_BETA,)


def test_the_compaction_threshold_keeps_room_for_the_answer_and_the_summary() -> None:
    assert ModelSettings.of("sonnet", environ={}).threshold == 967_000  # as Claude Code
    assert ModelSettings.of("claude-sonnet-4-5", environ={}).threshold == 167_000
    small = ModelSettings.of("sonnet", environ={"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "40k"})
    assert small.window == 40_000 and small.threshold == 28_000
    pct = {"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "200000", "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "50"}
    assert ModelSettings.of("sonnet", environ=pct).threshold == 90_000
    # the window is never made larger than the model's, and the answer fits what is left
    assert ModelSettings.of("claude-sonnet-4-5", window=500_000, environ={}).window == 200_000
    assert small.room(30_000) == 40_000 - 30_000 - 600 - 256


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("CLAUDE_CODE_AUTO_COMPACT_WINDOW", "tiny"),
        ("CLAUDE_CODE_AUTO_COMPACT_WINDOW", "500"),
        ("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE", "150"),
        ("CLAUDE_CODE_MAX_OUTPUT_TOKENS", "-3"),
        ("CLAUDE_CODE_EFFORT_LEVEL", "extreme"),
    ],
)
def test_a_bad_variable_is_an_error_naming_it(variable: str, value: str) -> None:
    with pytest.raises(SettingsValueError, match=variable):
        ModelSettings.of("sonnet", environ={variable: value})


def test_a_bad_window_in_a_settings_file_names_the_file_and_key(tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    good.write_text('{"autoCompactWindow": "150k"}')
    assert load_settings(good).auto_compact_window == 150_000
    bad = tmp_path / "settings.json"
    bad.write_text('{"autoCompactWindow": 12}')
    with pytest.raises(SettingsError, match=f"{bad}: autoCompactWindow"):
        load_settings(bad)


@pytest.mark.parametrize(
    ("typo", "meant"), [("shel", "shell"), ("sonet", "sonnet"), ("opsu", "opus"), ("Haiku", None)]
)
def test_a_misspelt_model_gets_a_did_you_mean(typo: str, meant: str | None) -> None:
    problem = model_name_problem(typo)
    if meant is None:
        assert problem is None  # an alias in another case is still the alias
        return
    assert problem is not None and f"did you mean {meant}" in problem
    argv = ["--agent-id", "a@t", "--agent-name", "a", "--team-name", "t", "--model", typo]
    with pytest.raises(UsageError, match=f"did you mean {meant}"):
        parse(argv)


@pytest.mark.parametrize("name", ["claude-sonnet-9-9", "gpt-4o", "my.local/model", "sonnet[1m]"])
def test_anything_that_looks_like_a_model_id_is_taken_as_given(name: str) -> None:
    assert model_name_problem(name) is None
