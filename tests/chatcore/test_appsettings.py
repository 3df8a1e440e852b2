"""App knobs are read when used and follow changes of Django settings."""

import pytest
from django.test import override_settings

from chatcore import conf
from chatcore.appsettings import AppSettings
from compaction import conf as compaction_conf


def test_a_knob_has_its_documented_default_until_a_setting_overrides_it(settings):
    assert conf.MAX_MESSAGE_CHARS == 1_000_000
    settings.CHATCORE_MAX_MESSAGE_CHARS = 10
    assert conf.MAX_MESSAGE_CHARS == 10


def test_override_settings_reaches_the_compaction_knobs_and_is_undone_after():
    assert (compaction_conf.LEASE_SECONDS, compaction_conf.timeouts()["lease"]) == (420, 420.0)
    with override_settings(COMPACTION_LEASE_SECONDS=60):
        assert (compaction_conf.LEASE_SECONDS, compaction_conf.timeouts()["lease"]) == (60, 60.0)
    assert compaction_conf.LEASE_SECONDS == 420


def test_a_derived_knob_follows_the_settings_it_is_derived_from(settings):
    assert compaction_conf.DRAIN_SECONDS == 30
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "timeout": 310}
    assert compaction_conf.DRAIN_SECONDS == 40


def test_an_unknown_knob_is_an_attribute_error():
    with pytest.raises(AttributeError):
        conf.NOT_A_KNOB  # noqa: B018
    with pytest.raises(AttributeError):
        AppSettings("X_", {"A": 1}).B  # noqa: B018


def test_values_are_cached_between_changes(settings):
    knobs = AppSettings("HEALTH_TEST_", {"LIMIT": 1})
    assert knobs.LIMIT == 1
    settings.HEALTH_TEST_LIMIT = 2
    assert knobs.LIMIT == 2
    knobs._cache["LIMIT"] = 3  # a stale value stays until a setting changes...
    assert knobs.LIMIT == 3
    settings.SOMETHING_ELSE = True  # ...and any change empties the cache
    assert knobs.LIMIT == 2
