"""POST /v1/chat/completions with the official `openai` client against uvicorn and the loopback model."""

import gc

import openai
import pytest

from chatcore.models import AuditEntry, Channel, Cursor, Message, UsageEntry
from compaction.gateway import services as gateway_services
from devtools.loopback_llm import Reply
from tests.chatcore.factories import ChannelFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)

MODEL = "loopback-chat"


def path_of(channel: Channel) -> list[tuple[str, str]]:
    leaf = Cursor.objects.get(channel=channel, user=channel.owner).leaf
    path = []
    while leaf is not None:
        path.append((leaf.role, leaf.content))
        leaf = leaf.parent
    return path[::-1]


def test_a_first_call_starts_a_channel_and_stores_the_history_and_the_reply(
    openai_client, chat_model, llm_server, user
):
    llm_server.script(Reply(content="Paris.", prompt_tokens=31, completion_tokens=2))
    raw = openai_client.chat.completions.with_raw_response.create(
        model=MODEL,
        messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Capital of France?"}],
    )
    completion = raw.parse()

    channel = Channel.objects.get()
    assert completion.choices[0].message.content == "Paris."
    assert completion.choices[0].finish_reason == "stop"
    assert completion.object == "chat.completion" and completion.model == MODEL
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens, completion.usage.total_tokens) == (
        31,
        2,
        33,
    )
    assert raw.headers["X-Channel-Id"] == str(channel.pk)
    assert int(raw.headers["X-Context-Tokens"]) > 0 and "X-Compaction-Summary-Id" not in raw.headers
    assert (channel.owner, channel.title, channel.model) == (user, "Capital of France?", chat_model)
    assert path_of(channel) == [("system", "Be brief."), ("user", "Capital of France?"), ("assistant", "Paris.")]
    assert llm_server.requests[0]["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Capital of France?"},
    ]
    assert llm_server.requests[0]["model"] == MODEL
    usage = UsageEntry.objects.get()
    assert (usage.user, usage.channel, usage.trigger, usage.input_tokens, usage.success) == (
        user,
        channel,
        "gateway",
        31,
        True,
    )
    assert AuditEntry.objects.filter(action="channel.create", resource=f"channel:{channel.pk}").exists()


def _request_error(message: str, param: str, code: str) -> dict:
    """The body of an OpenAI-style invalid_request_error, as the gateway answers one."""
    return {"message": message, "type": "invalid_request_error", "param": param, "code": code}


def _converse(openai_client, *turns: str) -> list[dict]:
    """A client that resends the whole history each turn, as OpenAI clients do; returns the last history sent."""
    history = [{"role": "user", "content": turns[0]}]
    for text in turns[1:]:
        reply = openai_client.chat.completions.create(model=MODEL, messages=history)
        history += [
            {"role": "assistant", "content": reply.choices[0].message.content},
            {"role": "user", "content": text},
        ]
    openai_client.chat.completions.create(model=MODEL, messages=history)
    return history


def test_a_resent_history_appends_only_the_new_turn(openai_client, chat_model, echo_llm):
    history = _converse(openai_client, "One", "Two", "Three")

    channel = Channel.objects.get()
    assert Message.objects.filter(channel=channel).count() == 6
    assert [content for _, content in path_of(channel)] == [
        "One",
        "Noted: One",
        "Two",
        "Noted: Two",
        "Three",
        "Noted: Three",
    ]
    assert [m["content"] for m in echo_llm.requests[-1]["messages"]] == [m["content"] for m in history]


def test_an_edited_earlier_turn_becomes_a_sibling_branch(openai_client, chat_model, echo_llm, user):
    history = _converse(openai_client, "Plan a trip", "To Rome", "In May")
    edited = history[:2] + [{"role": "user", "content": "To Lisbon"}]

    openai_client.chat.completions.create(model=MODEL, messages=edited)

    channel = Channel.objects.get()
    first_answer = Message.objects.get(channel=channel, content="Noted: Plan a trip")
    assert sorted(Message.objects.filter(parent=first_answer).values_list("content", flat=True)) == [
        "To Lisbon",
        "To Rome",
    ]
    assert [c for _, c in path_of(channel)] == ["Plan a trip", "Noted: Plan a trip", "To Lisbon", "Noted: To Lisbon"]
    assert Message.objects.filter(channel=channel).count() == 8
    assert AuditEntry.objects.filter(action="gateway.branch", actor=user).count() == 1
    assert [m["content"] for m in echo_llm.requests[-1]["messages"]] == [m["content"] for m in edited]


def test_the_same_opening_in_a_new_conversation_continues_the_newest_match(openai_client, chat_model, echo_llm):
    openai_client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Hello"}])
    openai_client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Something else"}])
    openai_client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Hello"}])

    hello = Message.objects.get(content="Hello")
    assert Channel.objects.count() == 2
    assert list(Message.objects.filter(parent=hello).values_list("content", flat=True)) == ["Noted: Hello"] * 2


def test_a_pinned_channel_takes_the_history_as_a_new_branch(openai_client, chat_model, echo_llm, user):
    channel = ChannelFactory(owner=user, title="Mine")
    Message.objects.all().delete()
    raw = openai_client.chat.completions.with_raw_response.create(
        model=MODEL, messages=[{"role": "user", "content": "Hello"}], extra_headers={"X-Channel-Id": str(channel.pk)}
    )
    assert raw.headers["X-Channel-Id"] == str(channel.pk)
    openai_client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Hello"}], metadata={"channel_id": str(channel.pk)}
    )
    assert Channel.objects.count() == 1
    assert list(Message.objects.filter(channel=channel).values_list("role", "content")) == [
        ("user", "Hello"),
        ("assistant", "Noted: Hello"),
        ("assistant", "Noted: Hello"),
    ]


def test_someone_else_s_channel_is_not_found(openai_client, chat_model, echo_llm):
    theirs = ChannelFactory(owner=UserFactory())
    with pytest.raises(openai.NotFoundError) as caught:
        openai_client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "Hi"}], extra_headers={"X-Channel-Id": str(theirs.pk)}
        )
    assert caught.value.status_code == 404
    assert caught.value.body == _request_error(f"No channel {theirs.pk} of yours.", "channel_id", "channel_not_found")
    assert not Message.objects.exists()


def test_another_user_never_continues_my_conversation(asgi_server, openai_client, chat_model, echo_llm):
    from chatcore.api_tokens import api_token_create

    openai_client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Hello"}])
    stranger = openai.OpenAI(
        base_url=f"{asgi_server.url}/v1",
        api_key=api_token_create(user=UserFactory(), name="stranger")[1],
        max_retries=0,
    )
    stranger.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Hello"}])
    assert Channel.objects.count() == 2
    assert {c.owner_id for c in Channel.objects.all()} == {m.channel.owner_id for m in Message.objects.all()}


@pytest.mark.parametrize(
    "api_key, status",
    [("wrong-key", "Incorrect API key provided."), ("", "You didn't provide an API key.")],
)
def test_a_missing_or_wrong_token_is_401(asgi_server, chat_model, api_key, status):
    client = openai.OpenAI(base_url=f"{asgi_server.url}/v1", api_key="x", max_retries=0)
    headers = {"Authorization": f"Bearer {api_key}" if api_key else ""}
    with pytest.raises(openai.AuthenticationError) as caught:
        client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Hi"}], extra_headers=headers)
    assert caught.value.status_code == 401
    assert caught.value.body["code"] == "invalid_api_key"
    assert caught.value.body["message"].startswith(status)
    assert caught.value.body["type"] == "invalid_request_error"
    assert not Message.objects.exists()


def test_an_unknown_or_inactive_model_is_404_and_writes_nothing(openai_client, chat_model):
    chat_model.is_active = False
    chat_model.save(update_fields=["is_active"])
    with pytest.raises(openai.NotFoundError) as caught:
        openai_client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Hi"}])
    message = f"The model `{MODEL}` does not exist or is not active: GET /v1/models lists the models you can use."
    assert caught.value.body == _request_error(message, "model", "model_not_found")
    assert not Channel.objects.exists()


@pytest.mark.parametrize(
    "messages, param",
    [
        ([], "messages"),
        ([{"role": "wizard", "content": "Hi"}], "messages[0].role"),
        ([{"role": "user", "content": 5}], "messages[0].content"),
        ([{"role": "user", "content": "  "}], "messages[0].content"),
        ([{"role": "tool", "content": "42"}], "messages[0].tool_call_id"),
        ([{"role": "user", "content": [{"type": "text"}]}], "messages[0].content[0]"),
    ],
)
def test_a_malformed_request_is_400_naming_the_field(openai_client, chat_model, messages, param):
    with pytest.raises(openai.BadRequestError) as caught:
        openai_client.chat.completions.create(model=MODEL, messages=messages)
    assert caught.value.status_code == 400
    assert caught.value.body["param"] == param
    assert caught.value.body["type"] == "invalid_request_error"
    assert not Message.objects.exists()


def test_a_failing_model_is_502_with_the_user_turn_kept(openai_client, chat_model, llm_server, settings):
    settings.CHATCORE_LLM_MAX_RETRIES = 0
    llm_server.script(Reply(status=500))
    with pytest.raises(openai.InternalServerError) as caught:
        openai_client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Hi"}])
    assert caught.value.status_code == 502
    assert caught.value.body["code"] == "upstream_error"
    assert list(Message.objects.values_list("role", flat=True)) == ["user"]
    llm_server.script(Reply(content="Back."))
    reply = openai_client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Hi"}])
    assert reply.choices[0].message.content == "Back."
    assert list(Message.objects.order_by("id").values_list("role", flat=True)) == ["user", "assistant"]


def test_models_are_listed_and_retrieved(openai_client, chat_model, utility_model):
    assert [m.id for m in openai_client.models.list()] == ["loopback-chat", "loopback-utility"]
    assert openai_client.models.retrieve("loopback-chat").id == "loopback-chat"
    with pytest.raises(openai.NotFoundError):
        openai_client.models.retrieve("nope")


def test_message_names_are_stored_and_forwarded_in_the_form_providers_accept(openai_client, chat_model, echo_llm):
    openai_client.chat.completions.create(
        model=MODEL,
        messages=[
            {"role": "developer", "content": "Two people write here.", "name": "setup"},
            {"role": "user", "content": "Hi, I am Ann.", "name": "ann_1"},
            {"role": "user", "content": "And I am Bo.", "name": "Bo Lee"},
        ],
    )
    sent = echo_llm.requests[-1]["messages"]
    assert sent == [
        {"role": "system", "content": "Two people write here.", "name": "setup"},
        {"role": "user", "content": "Hi, I am Ann.", "name": "ann_1"},
        {"role": "user", "content": "And I am Bo."},  # a name with a space: kept, not sent (OpenAI refuses it)
    ]
    assert Message.objects.get(content="And I am Bo.").metadata["name"] == "Bo Lee"


def test_the_collector_rests_while_a_history_is_read_and_placed_and_never_around_the_model_call(
    openai_client, chat_model, llm_server, monkeypatch
):
    """A resent history is tens of thousands of objects that hold no cycle: reading and placing it with the
    collector on made it walk them all on long histories (compaction_bench --scenario gateway)."""
    seen: dict[str, bool] = {}
    place = gateway_services._place

    def placing(**kwargs):
        seen.setdefault("placing", gc.isenabled())
        return place(**kwargs)

    def respond(request: dict) -> Reply:
        seen.setdefault("model call", gc.isenabled())
        return Reply(content="Noted.")

    monkeypatch.setattr(gateway_services, "_place", placing)
    llm_server.responder = respond
    openai_client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Plan the week."}])
    with pytest.raises(openai.BadRequestError):  # refused while it is read: the collector is back on all the same
        openai_client.chat.completions.create(model=MODEL, messages=[{"role": "wizard", "content": "Plan it."}])

    assert seen == {"placing": False, "model call": True}
    assert gc.isenabled()
