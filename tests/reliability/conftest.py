import pytest

from chatcore import conf
from tests.reliability.faults import FAULT_TIMEOUT, TOO_LONG_LIMIT


@pytest.fixture
def fast_faults(settings, monkeypatch):
    """Short model timeouts, no client retries, a small reply limit: every fault shows at once."""
    settings.LLM_TIMEOUT_SECONDS = FAULT_TIMEOUT
    settings.LLM_MAX_RETRIES = 0
    monkeypatch.setattr(conf, "MAX_MESSAGE_CHARS", TOO_LONG_LIMIT)
