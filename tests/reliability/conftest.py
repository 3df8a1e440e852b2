import pytest

from tests.reliability.faults import FAULT_TIMEOUT, TOO_LONG_LIMIT


@pytest.fixture
def fast_faults(settings):
    """Short model timeouts, no client retries, a small reply limit: every fault shows at once."""
    settings.CHATCORE_LLM_TIMEOUT_SECONDS = FAULT_TIMEOUT
    settings.CHATCORE_LLM_MAX_RETRIES = 0
    settings.CHATCORE_MAX_MESSAGE_CHARS = TOO_LONG_LIMIT
