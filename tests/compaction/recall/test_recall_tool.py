"""recall_history: offered only with a summary in force, run server-side in the reply loop, bounded, in usage."""

import pytest

from chatcore import services
from chatcore.models import Message, UsageEntry
from compaction.models import CompactionSettings
from devtools.loopback_llm import Reply
from tests.chatcore.factories import ChannelFactory
from tests.compaction.recall_calls import recall_call, summarized_channel


@pytest.fixture
def channel(user, chat_model, settings):
    settings.CHATCORE_LLM_MAX_RETRIES = 0
    return summarized_channel(user=user, model=chat_model)


def test_the_model_calls_recall_and_answers_from_the_originals(api, channel, llm_server):
    llm_server.script(Reply(content="", tool_calls=[recall_call("kiwi port")]), Reply(content="Port 8443."))
    response = api.post(f"/api/channels/{channel.pk}/reply/", {"content": "Which port for kiwi?"}, format="json")
    assert response.status_code == 201
    first, second = llm_server.requests
    assert [t["function"]["name"] for t in first["tools"]] == ["recall_history"]
    assert "recall_history tool is offered" in first["messages"][0]["content"]
    tool_result = second["messages"][-1]
    assert tool_result["role"] == "tool" and tool_result["tool_call_id"] == "c1"
    assert "kiwi deployment uses port 8443" in tool_result["content"]
    # stored like any tool call: the call, its result, then the answer, each under the previous one
    path = list(Message.objects.filter(channel=channel).order_by("depth"))[-4:]
    assert [(m.role, m.content[:10]) for m in path] == [
        ("user", "Which port"),
        ("assistant", ""),
        ("tool", tool_result["content"][:10]),
        ("assistant", "Port 8443."),
    ]
    assert path[1].metadata["tool_calls"] == [recall_call("kiwi port")]
    assert path[2].metadata == {"tool_call_id": "c1", "name": "recall_history"}
    usage = UsageEntry.objects.filter(channel=channel).order_by("id")
    assert [(u.role, u.model, u.success) for u in usage] == [
        ("chat", "loopback-chat", True),
        ("tool", "recall_history", True),
        ("chat", "loopback-chat", True),
    ]


def test_rounds_are_bounded_and_the_last_request_offers_no_tools(api, channel, llm_server):
    llm_server.script(
        *[Reply(content="", tool_calls=[recall_call("rotation", call_id=f"c{i}")]) for i in range(3)],
        Reply(content="The 3rd."),
    )
    response = api.post(f"/api/channels/{channel.pk}/reply/", {"content": "When is rotation?"}, format="json")
    assert response.status_code == 201
    assert ["tools" in r for r in llm_server.requests] == [True, True, True, False]
    assert UsageEntry.objects.filter(role="tool").count() == 3


def test_not_offered_without_a_summary_or_when_turned_off(api, user, channel, llm_server):
    plain = ChannelFactory(owner=user, model=channel.model)
    api.post(f"/api/channels/{plain.pk}/reply/", {"content": "Hi"}, format="json")
    assert "tools" not in llm_server.requests[-1]
    CompactionSettings.objects.update_or_create(pk=1, defaults={"recall_tool": False})
    api.post(f"/api/channels/{channel.pk}/reply/", {"content": "Hi"}, format="json")
    assert "tools" not in llm_server.requests[-1]
    CompactionSettings.objects.filter(pk=1).update(recall_tool=True)
    services.channel_update(channel=channel, actor=user, settings={"recall_tool": False})
    api.post(f"/api/channels/{channel.pk}/reply/", {"content": "Hi"}, format="json")
    assert "tools" not in llm_server.requests[-1]
    services.channel_update(channel=channel, actor=user, settings={"recall_tool": None})
    api.post(f"/api/channels/{channel.pk}/reply/", {"content": "Hi"}, format="json")
    assert "tools" in llm_server.requests[-1]


def test_a_long_result_is_cut_to_the_token_limit():
    from chatcore.tools import tool_result_cut

    text = "\n".join(f"line {i} " + "word " * 50 for i in range(200))
    cut = tool_result_cut(text, limit=300)
    assert cut.endswith("more line(s) left out: the tool's output limit]")
    assert len(cut) < len(text) / 10
