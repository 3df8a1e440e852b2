"""The docs' generated parts (devtools/docs/): the configuration tables and the REST API reference."""

from pathlib import Path

from chatcore import conf as chatcore_conf
from compaction import conf as compaction_conf
from devtools.docs import openapi, reference, samples

ROOT = Path(__file__).resolve().parents[2]
CONFIGURATION_PAGE = (ROOT / "docs" / "configuration.md").read_text()


def test_every_app_setting_is_listed_with_its_description():
    text, problems = reference.app_settings_markdown()

    assert problems == []
    for knobs in (*reference._app_settings(chatcore_conf), *reference._app_settings(compaction_conf)):
        for name in (*knobs.defaults, *knobs.derived):
            entry = text.split(f"#### `{knobs.prefix}{name}`\n", 1)[1].split("####", 1)[0]
            default, description = entry.strip().split("\n\n")[:2]
            assert default.startswith("Default: `") and description.strip(), f"{knobs.prefix}{name}: {entry!r}"


def test_an_app_setting_without_a_docstring_entry_is_a_problem():
    assert reference._docstring_entry("LEASE_SECONDS (X_LEASE_SECONDS, default 1): how long.\n", "X_", "LEASE_SECONDS")
    assert reference._docstring_entry("LEASE_SECONDS: how long.\n", "X_", "OTHER") == ""


def test_every_variable_the_settings_read_is_described_on_the_page():
    text, problems = reference.environment_markdown(CONFIGURATION_PAGE)

    assert problems == []
    assert "| `DATABASE_URL` |" in text and "| `KEEP_ALIVE_SECONDS` | `75` |" in text


def test_a_variable_the_page_leaves_out_is_a_problem():
    page = CONFIGURATION_PAGE.replace("| `LOG_LEVEL` |", "| LOG_LEVEL |")

    _, problems = reference.environment_markdown(page)

    assert problems == ["configuration.md: the environment variable LOG_LEVEL is read but not described"]


def test_the_api_reference_has_every_operation_of_the_schema():
    document = openapi.schema_document()
    text = openapi.api_markdown()

    for path, item in document["paths"].items():
        for method in openapi.METHODS:
            if method in item:
                assert f"`{method.upper()} {path}`" in text
    for name in document["components"]["schemas"]:
        assert f"### {name}\n" in text


def test_the_offline_samples_are_the_summarizer_s_hand_overs_of_the_demo():
    text = samples.offline_samples_markdown()

    assert text.count("<details><summary>") == len(samples.SLUGS)
    for slug in samples.SLUGS:
        profile = samples.builtin_profile(slug)
        assert f"<summary>{profile.name} ({profile.max_summary_tokens:,} tokens)</summary>" in text
    assert text.count("# Hand-over: ") == len(samples.SLUGS)
