"""Where a catalogue model may send which key variable (chatcore.endpoints): the rule itself,
`LLMModel.clean`, and the gateway's check before any request, for rows that never went through
`clean` (written before the rule, or straight through the ORM)."""

import re
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync
from django.core.exceptions import ValidationError

from chatcore import conf
from chatcore.endpoints import base_url_problem, endpoint_problems, host_address, key_variable_problem
from chatcore.errors import ModelCallFailed
from chatcore.llm import llm_complete
from chatcore.llm_chat import allm_chat
from chatcore.llm_stream import ChatStream
from chatcore.models import LLMModel, ModelRole, UsageEntry
from devtools.loopback_llm import LoopbackLLM, Reply
from tests.chatcore.factories import LLMModelFactory, ModelRoleFactory
from tests.chatcore.test_llm import chat_call_error

MESSAGES = [{"role": "user", "content": "Hello?"}]
SETTINGS_FILE = Path(__file__).resolve().parents[2] / "project" / "settings.py"

# 169.254.169.254 (every big cloud's metadata service) as the resolver also reads it.
METADATA_SPELLINGS = [
    "http://169.254.169.254/latest/meta-data/",
    "https://169.254.169.254/v1",
    "https://2852039166/v1",  # one decimal number
    "https://0xa9fea9fe/v1",  # one hex number
    "https://0xa9.0xfe.0xa9.0xfe/v1",
    "https://0251.0376.0251.0376/v1",  # octal parts
    "https://169.254.43518/v1",  # the last two parts as one
    "https://[::ffff:169.254.169.254]/v1",  # IPv4-mapped IPv6
    "https://[::ffff:a9fe:a9fe]/v1",
    "https://[::169.254.169.254]/v1",  # IPv4-compatible IPv6
    "https://[64:ff9b::a9fe:a9fe]/v1",  # NAT64
    "https://169.254.169.254./v1",
    "https://metadata.google.internal/computeMetadata/v1/",
    "https://METADATA.google.internal./v1",
    "https://[fd00:ec2::254]/v1",  # AWS over IPv6
    "https://100.100.100.200/v1",  # Alibaba Cloud
    "https://169.254.10.10/v1",  # any link-local address
    "https://[fe80::1]/v1",
    "https://[fe80::1%25eth0]/v1",
]


@pytest.fixture
def debug_on(settings):
    settings.DEBUG = True
    return settings


@pytest.mark.parametrize("url", METADATA_SPELLINGS)
def test_link_local_and_metadata_addresses_are_refused_in_any_spelling_even_when_listed(debug_on, url):
    debug_on.CHATCORE_LLM_HTTP_HOSTS = ["169.254.169.254", "metadata.google.internal", "fe80::1", "100.100.100.200"]
    assert "link-local or cloud metadata address" in (base_url_problem(url) or "")


def test_numeric_spellings_are_read_as_the_resolver_reads_them():
    assert [str(host_address(host)) for host in ("2852039166", "0xa9fea9fe", "0251.0376.0251.0376", "127.1")] == [
        "169.254.169.254",
        "169.254.169.254",
        "169.254.169.254",
        "127.0.0.1",
    ]
    assert host_address("models.example.com") is None
    assert host_address("1e100.net") is None


def test_https_is_required_unless_the_host_is_listed(settings):
    settings.CHATCORE_LLM_HTTP_HOSTS = ["vllm.internal", "10.0.0.7"]
    assert base_url_problem("https://api.openai.com/v1") is None
    assert base_url_problem("https://10.1.2.3:8443/v1") is None  # a private network over https
    assert base_url_problem("http://vllm.internal:8000/v1") is None
    assert base_url_problem("http://VLLM.internal./v1") is None
    assert base_url_problem("http://10.0.0.7/v1") is None
    assert base_url_problem("http://api.openai.com/v1") == (
        "Use https:// (plain http only to hosts listed in CHATCORE_LLM_HTTP_HOSTS; api.openai.com is not)."
    )
    assert base_url_problem("http://10.0.0.8/v1").startswith("Use https://")
    assert base_url_problem("ftp://models.example.com/") == "Give an https:// URL."
    assert base_url_problem("https://api.openai.com@attacker.example/v1").startswith("Leave user names")
    assert base_url_problem("https://１２７.0.0.1/v1").startswith("Give a host name")  # fullwidth digits
    assert base_url_problem("https://host:99999/v1") == "This is not a valid URL."
    assert base_url_problem("") is None  # the operator's OPENAI_BASE_URL, or OpenAI's own


@pytest.mark.parametrize("url", ["http://127.0.0.1:8000/v1", "https://localhost/v1", "http://[::1]/v1", "http://0/"])
def test_loopback_needs_debug_or_the_allow_list(settings, url):
    settings.DEBUG = False
    settings.CHATCORE_LLM_HTTP_HOSTS = []
    assert "is this machine" in (base_url_problem(url) or "")
    settings.DEBUG = True
    assert base_url_problem(url) is None
    settings.DEBUG = False
    settings.CHATCORE_LLM_HTTP_HOSTS = ["127.0.0.1", "localhost", "::1", "0.0.0.0"]
    assert base_url_problem(url) is None


def test_the_allow_list_matches_an_address_however_it_is_spelled(settings):
    settings.DEBUG = False
    settings.CHATCORE_LLM_HTTP_HOSTS = ["127.0.0.1"]
    assert base_url_problem("http://127.1:9/v1") is None
    assert base_url_problem("http://2130706433:9/v1") is None
    assert base_url_problem("http://127.0.0.2:9/v1") is not None


@pytest.mark.parametrize("name", ["SECRET_KEY", "DATABASE_URL", "REDIS_URL", "secret_key"])
def test_the_servers_own_settings_are_never_a_key_even_with_a_wide_allow_list(settings, name):
    assert "the server's own settings" in (key_variable_problem(name) or "")
    settings.CHATCORE_LLM_KEY_VARIABLES = ["*"]
    assert "the server's own settings" in (key_variable_problem(name) or "")


def test_key_variables_must_match_the_allow_list(settings):
    assert [key_variable_problem(name) for name in ("OPENAI_API_KEY", "MISTRAL_API_KEY", "")] == [None, None, None]
    assert key_variable_problem("HOME") == (
        "HOME is not a variable models may use (allowed: OPENAI_API_KEY, AZURE_OPENAI_API_KEY, OPENROUTER_API_KEY, "
        "GROQ_API_KEY, MISTRAL_API_KEY, DEEPSEEK_API_KEY, TOGETHER_API_KEY, FIREWORKS_API_KEY, LOOPBACK_TEST_API_KEY; "
        "setting CHATCORE_LLM_KEY_VARIABLES)."
    )
    assert key_variable_problem("AWS_SECRET_ACCESS_KEY") is not None
    assert key_variable_problem("sk-proj-abc123") == "This looks like a key; give the variable's name instead."
    assert key_variable_problem("MY API KEY") == "Give the name of an environment variable, such as OPENAI_API_KEY."
    settings.CHATCORE_LLM_KEY_VARIABLES = ["OPENAI_API_KEY", "AZURE_*"]
    assert key_variable_problem("AZURE_OPENAI_TOKEN") is None
    assert key_variable_problem("MISTRAL_API_KEY") is not None


def test_every_variable_the_settings_read_is_denied():
    """A variable added to project/settings.py must join conf.SERVER_VARIABLES (OPENAI_API_KEY,
    the model key the settings offer, aside)."""
    source = SETTINGS_FILE.read_text()
    read = set(
        re.findall(r"""(?:environ(?:\.get)?[\[(]|env_(?:bool|int|float)\()\s*["']([A-Za-z_][A-Za-z0-9_]*)""", source)
    )
    assert {"SECRET_KEY", "DATABASE_URL", "REDIS_URL"} <= read
    assert sorted(read - set(conf.SERVER_VARIABLES) - {"OPENAI_API_KEY"}) == []
    assert endpoint_problems(base_url="", api_key_env="OPENAI_API_KEY") == {}


def test_model_clean_refuses_the_secret_key_and_a_metadata_endpoint(db):
    model = LLMModel(name="exfil", base_url="https://attacker.example/v1", api_key_env="SECRET_KEY")
    with pytest.raises(ValidationError) as error:
        model.full_clean()
    assert error.value.message_dict == {
        "api_key_env": ["SECRET_KEY holds one of the server's own settings; a model may not send it anywhere."]
    }
    model.api_key_env, model.base_url = "OPENAI_API_KEY", "http://169.254.169.254/latest/"
    with pytest.raises(ValidationError) as error:
        model.clean()
    assert list(error.value.message_dict) == ["base_url"]
    model.base_url = "https://attacker.example/v1"
    model.full_clean()  # an https endpoint with a model key variable is fine (who may set it: the permission)
    assert not LLMModel.objects.filter(name="exfil").exists()


@pytest.fixture
def no_retries(settings):
    settings.CHATCORE_LLM_MAX_RETRIES = 0
    settings.CHATCORE_LLM_TIMEOUT_SECONDS = 5


def _bypassing_clean(url: str, **fields) -> LLMModel:
    """A row as one written before the rule, or through the ORM: never cleaned."""
    return LLMModel.objects.create(name=fields.pop("name", "exfil"), base_url=url, **fields)


def test_the_gateway_refuses_a_row_that_bypassed_clean_before_any_request(no_retries, llm_server, user, monkeypatch):
    monkeypatch.setenv("SECRET_KEY", "the-servers-secret")
    model = _bypassing_clean(llm_server.url, api_key_env="SECRET_KEY")
    error = chat_call_error(user, model, MESSAGES)
    cause = (
        "endpoint refused (api_key_env: SECRET_KEY holds one of the server's own settings; "
        "a model may not send it anywhere.)"
    )
    assert error.message == f"The model call failed: exfil: {cause}"
    assert llm_server.requests == []
    assert list(UsageEntry.objects.values_list("model", "success", "error")) == [("exfil", False, cause)]


def test_a_refused_primary_falls_back_to_an_allowed_model(no_retries, llm_server, user):
    primary = _bypassing_clean("http://169.254.169.254/v1", name="metadata", api_key_env="OPENAI_API_KEY")
    fallback = LLMModelFactory(name="loopback-fallback", base_url=llm_server.url)
    ModelRoleFactory(role=ModelRole.Role.CHAT, primary=primary, fallback=fallback)
    llm_server.script(Reply(content="From the fallback."))
    result = llm_complete(role="chat", messages=MESSAGES, user=user, channel=None)
    assert (result.content, result.model, result.used_fallback) == ("From the fallback.", "loopback-fallback", True)
    assert len(llm_server.requests) == 1
    rows = list(UsageEntry.objects.order_by("id").values_list("model", "success"))
    assert rows == [("metadata", False), ("loopback-fallback", True)]
    assert "link-local or cloud metadata address" in UsageEntry.objects.get(model="metadata").error


def test_the_async_and_streamed_gateway_refuse_too(no_retries, user, settings):
    with LoopbackLLM() as server:
        settings.DEBUG = False
        settings.CHATCORE_LLM_HTTP_HOSTS = []  # the loopback server is this machine: refused without the list
        model = _bypassing_clean(server.url, api_key_env="OPENAI_API_KEY")
        ModelRoleFactory(role=ModelRole.Role.CHAT, primary=model)
        with pytest.raises(ModelCallFailed) as awaited:
            async_to_sync(allm_chat)(messages=MESSAGES, user=user, channel=None)
        stream = ChatStream(messages=MESSAGES, user=user, channel=None)
        with pytest.raises(ModelCallFailed) as streamed:
            async_to_sync(stream.start)()
        assert server.requests == []
    for error in (awaited, streamed):
        assert "endpoint refused (base_url: 127.0.0.1 is this machine" in error.value.message
    assert list(UsageEntry.objects.values_list("success", flat=True)) == [False, False]


def test_the_judged_endpoint_follows_a_changed_setting_and_row(settings):
    """The judgment is kept per row and settings: a setting or row that changes is judged afresh, at once."""
    settings.CHATCORE_LLM_HTTP_HOSTS = ["vllm.internal"]
    assert endpoint_problems(base_url="http://vllm.internal/v1", api_key_env="") == {}
    settings.CHATCORE_LLM_HTTP_HOSTS = []
    assert endpoint_problems(base_url="http://vllm.internal/v1", api_key_env="")["base_url"].startswith("Use https://")
    settings.CHATCORE_LLM_HTTP_HOSTS = "vllm.internal"
    assert endpoint_problems(base_url="http://vllm.internal/v1", api_key_env="") == {}
    refused = endpoint_problems(base_url="http://elsewhere/v1", api_key_env="SECRET_KEY")
    assert set(refused) == {"base_url", "api_key_env"}
    problems = endpoint_problems(base_url="http://elsewhere/v1", api_key_env="")
    problems.clear()  # a caller's copy: the next judgment is whole
    assert "base_url" in endpoint_problems(base_url="http://elsewhere/v1", api_key_env="")
