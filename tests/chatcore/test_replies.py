"""Replies: the user's turn, the context sent, the stored answer, the signal."""

import pytest
from django.core.exceptions import ValidationError

from chatcore import replies, selectors, services
from chatcore.context import SUMMARY_FRAME
from chatcore.errors import ModelCallFailed
from chatcore.llm import OFFLINE_REPLY
from chatcore.models import Cursor, LLMModel, Message, UsageEntry
from devtools.loopback_llm import Reply
from tests.chatcore.factories import ChannelFactory, LLMModelFactory, PersonaFactory, build_path


@pytest.fixture(autouse=True)
def _no_retries(settings):
    settings.CHATCORE_LLM_MAX_RETRIES = 0


@pytest.fixture
def channel(chat_model, user):
    return ChannelFactory(owner=user, persona=PersonaFactory(system_prompt="You help with deployments."))


def test_reply_appends_the_turn_and_stores_the_answer(
    channel, llm_server, stored_replies, django_capture_on_commit_callbacks
):
    first, second = build_path(channel, 2)
    llm_server.script(Reply(content="Use a rolling restart.", prompt_tokens=321, completion_tokens=7))
    with django_capture_on_commit_callbacks(execute=True):
        reply = replies.reply_generate(channel=channel, user=channel.owner, content="How do I deploy?")
    question = reply.parent
    assert (question.role, question.content, question.parent_id) == ("user", "How do I deploy?", second.pk)
    assert (reply.role, reply.content, reply.author) == ("assistant", "Use a rolling restart.", None)
    assert reply.metadata == {
        "model": "loopback-chat",
        "used_fallback": False,
        "usage": {"input_tokens": 321, "output_tokens": 7},
    }
    assert llm_server.requests[0]["messages"] == [
        {"role": "system", "content": "You help with deployments."},
        {"role": "user", "content": first.content},
        {"role": "assistant", "content": second.content},
        {"role": "user", "content": "How do I deploy?"},
    ]
    assert Cursor.objects.get(channel=channel).leaf == reply
    channel.refresh_from_db()
    assert channel.context_tokens == reply.path_tokens and channel.context_messages == 4
    assert len(stored_replies) == 1
    assert stored_replies[0]["message"] == reply and stored_replies[0]["input_tokens"] == 321
    assert stored_replies[0]["reported"] is True and stored_replies[0]["channel"].pk == channel.pk


def test_failed_model_keeps_the_users_message_and_stores_no_answer(
    channel, llm_server, stored_replies, django_capture_on_commit_callbacks
):
    llm_server.script(Reply(status=500))
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(ModelCallFailed) as error:
        replies.reply_generate(channel=channel, user=channel.owner, content="Still there?")
    assert error.value.message == "The model call failed: loopback-chat: HTTP 500: Error code: 500 - injected error 500"
    (only,) = Message.objects.filter(channel=channel)
    assert (only.role, only.content) == ("user", "Still there?")
    assert Cursor.objects.get(channel=channel).leaf == only
    assert stored_replies == []
    assert UsageEntry.objects.get().success is False


def test_regeneration_is_a_sibling_reply(channel, llm_server):
    llm_server.script(Reply(content="First answer."), Reply(content="Second answer."))
    first = replies.reply_generate(channel=channel, user=channel.owner, content="Question?")
    second = replies.reply_generate(channel=channel, user=channel.owner, parent_id=first.parent_id)
    assert second.parent_id == first.parent_id and second.content == "Second answer."
    # The regeneration saw the question, not the earlier answer.
    assert llm_server.requests[1]["messages"][-1] == {"role": "user", "content": "Question?"}
    path = selectors.message_path(leaf_id=Cursor.objects.get(channel=channel).leaf_id, with_siblings=True)
    assert [(m.pk, m.sibling_index, m.sibling_count) for m in path] == [(first.parent_id, 1, 1), (second.pk, 2, 2)]


def test_edit_and_reply(channel, llm_server):
    llm_server.script(Reply(content="A."), Reply(content="B."), Reply(content="B2."))
    first = replies.reply_generate(channel=channel, user=channel.owner, content="Original?")
    second = replies.reply_generate(channel=channel, user=channel.owner, content="Follow-up?")
    assert second.parent.parent_id == first.pk  # no parent given: under the active leaf
    edited = replies.reply_generate(
        channel=channel, user=channel.owner, content="Better follow-up?", parent_id=first.pk
    )
    assert edited.parent.parent_id == first.pk and edited.parent_id != second.parent_id
    assert llm_server.requests[-1]["messages"][-2:] == [
        {"role": "assistant", "content": "A."},
        {"role": "user", "content": "Better follow-up?"},
    ]
    root_edit = services.message_append(
        channel=channel, user=channel.owner, role="user", content="New start", root=True
    )
    llm_server.script(Reply(content="C."))
    reply = replies.reply_generate(channel=channel, user=channel.owner)
    assert reply.parent_id == root_edit.pk
    assert llm_server.requests[-1]["messages"][1:] == [{"role": "user", "content": "New start"}]


def test_regenerating_a_message_of_another_channel_is_refused(channel):
    (foreign,) = build_path(ChannelFactory(), 1)
    with pytest.raises(ValidationError) as error:
        replies.reply_generate(channel=channel, user=channel.owner, parent_id=foreign.pk)
    assert error.value.message_dict == {"parent_id": ["No such message in this channel."]}


def test_empty_channel_without_content_is_refused(channel, llm_server):
    with pytest.raises(ValidationError) as error:
        replies.reply_generate(channel=channel, user=channel.owner)
    assert error.value.message_dict == {"content": ["The channel is empty: send a message first."]}
    assert llm_server.requests == [] and not UsageEntry.objects.exists()


def test_summary_is_sent_as_reference_background(channel, llm_server):
    messages = build_path(channel, 6)
    summary = services.summary_write(
        channel=channel, through_message=messages[3], content="They chose Postgres.", created_by=None
    )
    replies.reply_generate(channel=channel, user=channel.owner, content="Next?")
    sent = llm_server.requests[0]["messages"]
    assert sent[1] == {"role": "user", "content": SUMMARY_FRAME.format(content=summary.content)}
    assert [m["content"] for m in sent[2:]] == [messages[4].content, messages[5].content, "Next?"]


def test_offline_model_replies_plainly(db, user, stored_replies, django_capture_on_commit_callbacks):
    offline = LLMModelFactory(name="offline", provider=LLMModel.Provider.OFFLINE, api_key_env="")
    channel = ChannelFactory(owner=user, model=offline)
    with django_capture_on_commit_callbacks(execute=True):
        reply = replies.reply_generate(channel=channel, user=user, content="Anyone home?")
    assert reply.content == OFFLINE_REPLY
    assert reply.metadata == {
        "model": "offline",
        "used_fallback": False,
        "offline": True,
        "usage": {"input_tokens": 0, "output_tokens": 0},
    }
    (received,) = stored_replies
    assert received["reported"] is False
    assert received["input_tokens"] == reply.parent.tokens  # estimated from the context: no persona, one message
