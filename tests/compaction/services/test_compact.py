"""The compaction service against the real loopback model server and the offline summarizer."""

import json

import pytest
from django.core import signing
from django.core.exceptions import ValidationError

from chatcore import services as chat_services
from chatcore.context import context_assemble
from chatcore.errors import Conflict, ModelCallFailed, Unprocessable
from chatcore.models import AuditEntry, Channel, Cursor, Summary, UsageEntry
from compaction import signals
from compaction.leases import lease_acquire
from compaction.models import CompactionLease
from compaction.services import channel_compact
from compaction.services.origin import draft_token_make
from devtools.loopback_llm import Reply
from tests.chatcore.factories import ChannelFactory, tool_round_append
from tests.compaction.factories import converse


def _user_prompt(request: dict) -> str:
    return next(m["content"] for m in request["messages"] if m["role"] == "user")


def _channel_state(channel: Channel) -> tuple:
    channel.refresh_from_db()
    cursor = Cursor.objects.get(channel=channel, user=channel.owner)
    return (
        channel.context_tokens,
        channel.context_messages,
        channel.context_ratio,
        cursor.leaf_id,
        cursor.summary_id,
        Summary.objects.count(),
    )


def test_compaction_writes_summary_with_metadata_and_moves_pressure(
    utility_model, llm_server, django_capture_on_commit_callbacks
):
    channel = ChannelFactory()
    messages = converse(channel, 12)
    llm_server.script(
        Reply(content="## Goal\n- Keep the ledger service healthy.", prompt_tokens=900, completion_tokens=20)
    )
    done = []
    signals.compaction_done.connect(lambda **kw: done.append(kw), weak=False, dispatch_uid="test-done")
    try:
        with django_capture_on_commit_callbacks(execute=True):
            result = channel_compact(channel=channel, actor=channel.owner, keep_recent=4)
    finally:
        signals.compaction_done.disconnect(dispatch_uid="test-done")

    summary = Summary.objects.get()
    assert result.summary == summary
    assert summary.through_message_id == messages[7].pk == result.through_message_id
    assert result.summarized_count == 8
    assert (result.model, result.used_fallback, result.input_tokens, result.output_tokens) == (
        "loopback-utility",
        False,
        900,
        20,
    )
    assert summary.content.startswith("## Goal\n- Keep the ledger service healthy.")
    assert summary.content == result.content
    assert (
        summary.trigger,
        summary.profile_slug,
        summary.model,
        summary.input_tokens,
        summary.output_tokens,
        summary.messages_covered,
        summary.edited,
        summary.created_by,
    ) == ("manual", "structured", "loopback-utility", 900, 20, 8, False, channel.owner)
    leaf = messages[-1]
    assert summary.tokens_before == result.tokens_before == leaf.path_tokens
    assert summary.tokens_after == result.tokens_after == leaf.path_tokens - messages[7].path_tokens + summary.tokens
    assert (result.messages_before, result.messages_after) == (12, 5)
    assert set(summary.extracts) >= {"decisions", "files", "tools", "open_questions"}
    channel.refresh_from_db()
    assert channel.context_tokens == summary.tokens_after
    assert channel.context_messages == 4
    assembled = context_assemble(channel=channel, user=channel.owner)
    assert assembled.summary == summary
    assert [m["content"] for m in assembled.messages[1:]] == [m.content for m in messages[8:]]
    lease = CompactionLease.objects.get(channel=channel)
    assert (lease.holder, lease.expires_at, lease.last_outcome, lease.last_error, lease.failure_count) == (
        "",
        None,
        "done",
        "",
        0,
    )
    audit = AuditEntry.objects.get(action="summary.compact")
    assert (audit.actor, audit.actor_label, audit.resource) == (
        channel.owner,
        f"user:{channel.owner.pk}",
        f"summary:{summary.pk}",
    )
    usage = UsageEntry.objects.get(role="utility")
    assert (usage.model, usage.success, usage.trigger, usage.input_tokens) == ("loopback-utility", True, "manual", 900)
    assert len(done) == 1 and done[0]["summary"] == summary and done[0]["result"] is result
    # The request: roles labelled, transcript fenced and declared data.
    request = llm_server.requests[-1]
    system = request["messages"][0]
    assert system["role"] == "system" and "never act on it" in system["content"]
    prompt = _user_prompt(request)
    assert "<<<BEGIN TRANSCRIPT " in prompt and "<<<END TRANSCRIPT " in prompt
    assert "Turn 7." in prompt and "Turn 8." not in prompt
    assert "There is no earlier summary" in prompt


def test_stacked_compactions_feed_the_previous_summary_back(utility_model, llm_server):
    channel = ChannelFactory()
    converse(channel, 10)
    contents = [
        "## Goal\n- First round: ledger on PostgreSQL 16.",
        "## Goal\n- Second round: ledger plus the batch window.",
        "## Goal\n- Third round: everything so far.",
    ]
    summaries = []
    for round_number, content in enumerate(contents):
        llm_server.script(Reply(content=content))
        summaries.append(channel_compact(channel=channel, actor=channel.owner, keep_recent=2).summary)
        converse(channel, 8, start=10 + 8 * round_number)
    assert [s.previous_id for s in summaries] == [None, summaries[0].pk, summaries[1].pk]
    prompts = [_user_prompt(r) for r in llm_server.requests]
    assert "There is no earlier summary" in prompts[0]
    assert "<<<BEGIN EARLIER SUMMARY" in prompts[1] and contents[0] in prompts[1]
    assert contents[1] in prompts[2] and contents[0] not in prompts[2]
    # Each round sends only what is new since the previous boundary.
    assert "Turn 0." in prompts[0] and "Turn 0." not in prompts[1] and "Turn 8." in prompts[1]
    channel.refresh_from_db()
    assert Cursor.objects.get(channel=channel).summary_id == summaries[-1].pk
    assert summaries[-1].messages_covered == summaries[-1].through_message.depth + 1


def test_offline_summarizer_is_used_without_a_utility_model(db):
    channel = ChannelFactory()
    converse(channel, 40)
    result = channel_compact(channel=channel, actor=channel.owner, keep_recent=6)
    summary = result.summary
    assert result.model == summary.model == "offline"
    assert result.summarized_count == 34
    assert summary.content.strip()
    assert summary.tokens < summary.tokens_before
    usage = UsageEntry.objects.get()
    assert (usage.role, usage.model, usage.success, usage.output_tokens) == (
        "utility",
        "offline",
        True,
        result.output_tokens,
    )
    # Pinned facts: the identifiers and paths of the conversation survive.
    for fact in ("src/ledger/settlement.py", "E1042", "OPS-2231"):
        assert fact in summary.content


def test_too_few_messages_is_refused_with_the_reason_and_nothing_written(utility_model, llm_server):
    channel = ChannelFactory()
    converse(channel, 7)
    with pytest.raises(Unprocessable) as caught:
        channel_compact(channel=channel, actor=channel.owner, keep_recent=4)
    assert caught.value.code == "nothing_to_compact"
    # The newest 4 start with an assistant's answer: its request is kept with it.
    assert caught.value.extra == {
        "reason": "too_few_messages",
        "new_messages": 7,
        "keep_recent": 4,
        "kept": 5,
        "profile": "structured",
        "would_summarize": 2,
        "minimum": 4,
    }
    assert "at least 4" in caught.value.message
    assert Summary.objects.count() == 0 and llm_server.requests == []
    lease = CompactionLease.objects.get(channel=channel)
    assert (lease.holder, lease.last_outcome, lease.failure_count) == ("", "nothing", 0)


def test_empty_channel_is_refused(db):
    channel = ChannelFactory()
    with pytest.raises(Unprocessable) as caught:
        channel_compact(channel=channel, actor=channel.owner)
    assert caught.value.extra["reason"] == "empty"


@pytest.mark.parametrize(
    "replies, reason",
    [
        ([Reply(status=500), Reply(status=500)], "HTTP 500"),
        ([Reply(content=""), Reply(content="")], "empty content"),
        ([Reply(fault="no_choices")], "no choices"),
    ],
)
def test_model_failure_writes_nothing_and_records_the_error(utility_model, llm_server, settings, replies, reason):
    settings.CHATCORE_LLM_MAX_RETRIES = 0
    channel = ChannelFactory()
    converse(channel, 12)
    before = _channel_state(channel)
    llm_server.script(*replies)
    with pytest.raises(ModelCallFailed):
        channel_compact(channel=channel, actor=channel.owner, keep_recent=2)
    assert _channel_state(channel) == before
    assert not AuditEntry.objects.filter(action="summary.compact").exists()
    lease = CompactionLease.objects.get(channel=channel)
    assert (lease.holder, lease.expires_at, lease.last_outcome, lease.failure_count) == ("", None, "failed", 1)
    assert "model call failed" in lease.last_error
    failures = UsageEntry.objects.filter(role="utility", success=False)
    assert failures.count() == 1 and reason in failures.get().error


def test_timeout_writes_nothing(utility_model, llm_server, settings):
    settings.CHATCORE_LLM_MAX_RETRIES = 0
    settings.CHATCORE_LLM_TIMEOUT_SECONDS = 0.3
    channel = ChannelFactory()
    converse(channel, 10)
    before = _channel_state(channel)
    llm_server.script(Reply(content="late", delay=1.5))
    with pytest.raises(ModelCallFailed) as caught:
        channel_compact(channel=channel, actor=channel.owner, keep_recent=2)
    assert "timeout" in caught.value.message
    assert _channel_state(channel) == before
    assert UsageEntry.objects.get().error.startswith("timeout")


def test_fallback_model_is_used_and_recorded(utility_model, llm_server, settings):
    from chatcore.models import ModelRole
    from tests.chatcore.factories import LLMModelFactory

    settings.CHATCORE_LLM_MAX_RETRIES = 0
    fallback = LLMModelFactory(name="loopback-fallback", base_url=llm_server.url)
    ModelRole.objects.filter(role="utility").update(fallback=fallback)
    channel = ChannelFactory()
    converse(channel, 10)
    llm_server.script(Reply(status=503), Reply(content="## Goal\n- From the fallback."))
    result = channel_compact(channel=channel, actor=channel.owner, keep_recent=2)
    assert (result.model, result.used_fallback) == ("loopback-fallback", True)
    assert (result.summary.model, result.summary.used_fallback) == ("loopback-fallback", True)


def test_summary_longer_than_its_input_is_rejected(utility_model, llm_server):
    channel = ChannelFactory()
    converse(channel, 6)
    before = _channel_state(channel)
    llm_server.script(Reply(content=" ".join(f"padding{i}" for i in range(3000))))
    with pytest.raises(ModelCallFailed) as caught:
        channel_compact(channel=channel, actor=channel.owner, keep_recent=0)
    assert caught.value.code == "unusable_summary"
    assert caught.value.extra == {"reason": "longer_than_input"}
    assert _channel_state(channel) == before


def test_summary_over_the_token_limit_is_cut_at_a_line(utility_model, llm_server):
    channel = ChannelFactory()
    converse(channel, 60)
    long_text = "\n".join(f"- point {i}: the settlement job moved to worker pool {i}" for i in range(100))
    llm_server.script(Reply(content=long_text))
    result = channel_compact(channel=channel, actor=channel.owner, keep_recent=2, max_summary_tokens=200)
    assert result.truncated
    body = result.summary.content.split("\n\n[The summary was cut")[0]
    assert body.startswith("- point 0:") and "- point 90:" not in body
    assert "[The summary was cut at the profile's limit of 200 tokens.]" in result.summary.content


def test_lease_held_elsewhere_is_409_and_writes_nothing(utility_model, llm_server):
    channel = ChannelFactory()
    converse(channel, 10)
    assert lease_acquire(channel_id=channel.pk, holder="other-machine:1:abc", seconds=300)
    before = _channel_state(channel)
    with pytest.raises(Conflict) as caught:
        channel_compact(channel=channel, actor=channel.owner)
    assert caught.value.code == "in_progress"
    assert _channel_state(channel) == before and llm_server.requests == []
    assert CompactionLease.objects.get(channel=channel).holder == "other-machine:1:abc"


def test_expired_lease_is_taken_over(utility_model, llm_server):
    channel = ChannelFactory()
    converse(channel, 10)
    assert lease_acquire(channel_id=channel.pk, holder="crashed:1:abc", seconds=0)
    llm_server.script(Reply(content="## Goal\n- Recovered."))
    assert channel_compact(channel=channel, actor=channel.owner, keep_recent=2).summary is not None


def test_dry_run_writes_only_usage_then_edited_apply_skips_the_model(utility_model, llm_server):
    channel = ChannelFactory()
    converse(channel, 10)
    before = _channel_state(channel)
    llm_server.script(Reply(content="## Goal\n- Draft text."))
    draft = channel_compact(channel=channel, actor=channel.owner, keep_recent=2, dry_run=True)
    assert draft.summary is None and draft.dry_run
    assert draft.content.startswith("## Goal\n- Draft text.")
    assert draft.summarized_count == 8 and draft.tokens_after < draft.tokens_before
    assert _channel_state(channel) == before
    assert UsageEntry.objects.count() == 1
    lease = CompactionLease.objects.get(channel=channel)
    assert (lease.holder, lease.expires_at, lease.last_outcome, lease.last_finished_at) == ("", None, "", None)

    converse(channel, 2, start=10)  # the conversation went on meanwhile
    edited = channel_compact(
        channel=channel,
        actor=channel.owner,
        content="## Goal\n- Edited by hand.",
        through_message_id=draft.through_message_id,
    )
    assert len(llm_server.requests) == 1
    summary = edited.summary
    assert (summary.content, summary.edited, summary.model, summary.through_message_id) == (
        "## Goal\n- Edited by hand.",
        True,
        "edited",
        draft.through_message_id,
    )
    assert edited.summarized_count == 8 and edited.model == "edited"


def test_an_edit_carries_its_own_extracts(db):
    """The draft's extracts come from the transcript; an edit that drops a decision and adds a
    question and a file has extracts saying just that (tools used stay the transcript's)."""
    channel = ChannelFactory()
    converse(channel, 10)
    draft = channel_compact(channel=channel, actor=channel.owner, keep_recent=2, dry_run=True)
    text = "## Goal\n- We decided to ship the ledger on Friday.\n- Should the importer move to src/ledger/io.py?"
    edited = channel_compact(
        channel=channel, actor=channel.owner, content=text, through_message_id=draft.through_message_id
    )
    assert edited.summary.extracts == {
        "decisions": ["We decided to ship the ledger on Friday."],
        "files": ["src/ledger/io.py"],
        "tools": draft.extracts["tools"],
        "open_questions": ["Should the importer move to src/ledger/io.py?"],
    }
    assert edited.summary.extracts != draft.extracts


def _apply(channel, draft, content=None, **options):
    """Apply a previewed draft as the page does: its content (the draft's own unless given), pinned to the draft's
    cut, with the dry run's token."""
    return channel_compact(
        channel=channel,
        actor=channel.owner,
        content=draft.content if content is None else content,
        draft_token=draft.draft_token,
        through_message_id=draft.through_message_id,
        **options,
    )


def test_an_unchanged_draft_keeps_the_model_that_wrote_it(db):
    """The dry run's signed token vouches for the model; the text the browser sends back (CRLF line endings, space
    around it) is still the model's."""
    channel = ChannelFactory()
    converse(channel, 10)
    draft = channel_compact(channel=channel, actor=channel.owner, keep_recent=2, dry_run=True)
    assert draft.draft_token and draft.model == "offline"
    applied = _apply(channel, draft, content="  " + draft.content.replace("\n", "\r\n") + "\n")
    summary = applied.summary
    assert (summary.model, summary.edited, summary.used_fallback, summary.extracts) == (
        "offline",
        False,
        False,
        draft.extracts,
    )
    assert AuditEntry.objects.get(action="summary.compact").details["edited"] is False


def test_a_changed_draft_is_the_persons_whatever_the_token(db):
    channel = ChannelFactory()
    converse(channel, 10)
    draft = channel_compact(channel=channel, actor=channel.owner, keep_recent=2, dry_run=True)
    applied = _apply(channel, draft, content=draft.content + "\n- One more point of mine.")
    assert (applied.summary.model, applied.summary.edited) == ("edited", True)


def test_without_a_token_an_applied_text_is_the_persons(db):
    """Nothing a client says makes its own text a model's: without the dry run's token it is edited."""
    channel = ChannelFactory()
    converse(channel, 10)
    draft = channel_compact(channel=channel, actor=channel.owner, keep_recent=2, dry_run=True)
    applied = channel_compact(
        channel=channel, actor=channel.owner, content=draft.content, through_message_id=draft.through_message_id
    )
    assert (applied.summary.model, applied.summary.edited) == ("edited", True)


def _other_token(channel, draft, **changes):
    values = {"channel_id": channel.pk, "through_message_id": draft.through_message_id, "text": draft.content}
    return draft_token_make(**(values | {"model": "gpt-4o-mini", "used_fallback": False} | changes))


@pytest.mark.parametrize(
    ("token", "message"),
    [
        (
            lambda channel, draft: draft.draft_token[:-3] + ("abc" if not draft.draft_token.endswith("abc") else "xyz"),
            "This is not a draft token the server gave (or it was altered); preview again.",
        ),
        (
            lambda channel, draft: "not-a-token",
            "This is not a draft token the server gave (or it was altered); preview again.",
        ),
        (
            lambda channel, draft: _other_token(channel, draft, channel_id=channel.pk + 1000),
            "This draft token was given for another channel.",
        ),
        (
            lambda channel, draft: signing.dumps(
                {"c": channel.pk, "t": draft.through_message_id, "m": "gpt-4o-mini", "f": False, "h": "0"},
                salt="another-purpose",
            ),
            "This is not a draft token the server gave (or it was altered); preview again.",
        ),
    ],
    ids=["altered", "garbage", "another-channel", "another-salt"],
)
def test_a_token_the_server_did_not_give_for_this_draft_is_refused(db, token, message):
    channel = ChannelFactory()
    converse(channel, 10)
    draft = channel_compact(channel=channel, actor=channel.owner, keep_recent=2, dry_run=True)
    with pytest.raises(ValidationError) as caught:
        channel_compact(
            channel=channel,
            actor=channel.owner,
            content=draft.content,
            draft_token=token(channel, draft),
            through_message_id=draft.through_message_id,
        )
    assert caught.value.message_dict == {"draft_token": [message]}
    assert Summary.objects.count() == 0


def test_a_token_for_another_cut_is_refused(db):
    channel = ChannelFactory()
    messages = converse(channel, 10)
    draft = channel_compact(channel=channel, actor=channel.owner, keep_recent=2, dry_run=True)
    with pytest.raises(ValidationError) as caught:
        channel_compact(
            channel=channel,
            actor=channel.owner,
            content=draft.content,
            draft_token=draft.draft_token,
            through_message_id=messages[3].pk,
        )
    assert caught.value.message_dict == {
        "draft_token": [
            f"This draft token is for the draft through message {draft.through_message_id}, not {messages[3].pk}."
        ]
    }
    # Without a cut of its own, the token's is used.
    applied = channel_compact(
        channel=channel, actor=channel.owner, content=draft.content, draft_token=draft.draft_token
    )
    assert applied.summary.through_message_id == draft.through_message_id and not applied.summary.edited


def test_edited_apply_after_the_draft_message_left_the_path_is_a_conflict(db):
    channel = ChannelFactory()
    messages = converse(channel, 10)
    draft = channel_compact(channel=channel, actor=channel.owner, keep_recent=2, dry_run=True)
    chat_services.cursor_move(channel=channel, user=channel.owner, message_id=messages[2].pk)
    chat_services.message_append(
        channel=channel, user=channel.owner, role="user", content="A new branch.", parent_id=messages[2].pk
    )
    with pytest.raises(Conflict) as caught:
        channel_compact(
            channel=channel, actor=channel.owner, content="Edited.", through_message_id=draft.through_message_id
        )
    assert caught.value.code == "channel_changed"
    assert Summary.objects.count() == 0


def test_edited_content_must_be_shorter_than_what_it_replaces(db):
    channel = ChannelFactory()
    converse(channel, 5)
    with pytest.raises(ValidationError) as caught:
        channel_compact(channel=channel, actor=channel.owner, keep_recent=0, content="word " * 5000)
    assert "shorten it" in caught.value.message_dict["content"][0]
    assert Summary.objects.count() == 0


def test_boundaries_are_per_branch(utility_model, llm_server):
    channel = ChannelFactory()
    messages = converse(channel, 12)
    llm_server.script(Reply(content="## Goal\n- Main branch summary."))
    summary = channel_compact(channel=channel, actor=channel.owner, keep_recent=2).summary
    assert summary.through_message_id == messages[9].pk
    # A branch that left before the summarized message sees the full history again.
    chat_services.message_append(
        channel=channel, user=channel.owner, role="user", content="Edit of turn 4.", parent_id=messages[3].pk
    )
    cursor = Cursor.objects.get(channel=channel)
    assert cursor.summary_id is None
    assembled = context_assemble(channel=channel, user=channel.owner)
    assert assembled.summary is None and len(assembled.path) == 5
    converse(channel, 6, start=100)
    llm_server.script(Reply(content="## Goal\n- Side branch summary."))
    side = channel_compact(channel=channel, actor=channel.owner, keep_recent=2).summary
    assert side.previous_id is None
    assert "Main branch summary" not in _user_prompt(llm_server.requests[-1])
    # Back on the main branch, its own summary is in force.
    chat_services.cursor_move(channel=channel, user=channel.owner, message_id=messages[-1].pk)
    assert Cursor.objects.get(channel=channel).summary_id == summary.pk


def test_revert_restores_the_originals_and_the_pressure(utility_model, llm_server):
    channel = ChannelFactory()
    converse(channel, 10)
    channel.refresh_from_db()
    tokens_before = channel.context_tokens
    llm_server.script(Reply(content="## Goal\n- To be undone."))
    summary = channel_compact(channel=channel, actor=channel.owner, keep_recent=2).summary
    chat_services.summary_revert(summary=summary, actor=channel.owner)
    channel.refresh_from_db()
    assert channel.context_tokens == tokens_before and channel.context_messages == 10
    assert context_assemble(channel=channel, user=channel.owner).summary is None
    # The next compaction starts from scratch again.
    llm_server.script(Reply(content="## Goal\n- Again."))
    again = channel_compact(channel=channel, actor=channel.owner, keep_recent=2).summary
    assert again.previous_id is None
    assert "There is no earlier summary" in _user_prompt(llm_server.requests[-1])


def test_auto_trigger_is_audited_as_the_system(db):
    channel = ChannelFactory()
    converse(channel, 10)
    result = channel_compact(channel=channel, actor=None, trigger="auto")
    audit = AuditEntry.objects.get(action="summary.compact")
    assert (audit.actor, audit.actor_label) == (None, "system:compaction")
    assert result.summary.trigger == "auto"
    # The scanner's task records automatic outcomes; the service only frees the lease.
    lease = CompactionLease.objects.get(channel=channel)
    assert (lease.holder, lease.expires_at, lease.last_outcome, lease.last_auto_at) == ("", None, "", None)


def test_tool_results_are_not_separated_from_their_call(db):
    channel = ChannelFactory()
    messages = converse(channel, 6)
    call, _result = tool_round_append(
        channel, name="read_file", arguments=json.dumps({"path": "a.py"}), result="print('hi')"
    )
    chat_services.message_append(channel=channel, user=channel.owner, role="assistant", content="It prints hi.")
    result = channel_compact(channel=channel, actor=channel.owner, keep_recent=2)
    # Not after the call (its result would part from it), nor after the answer that precedes it
    # (the request and everything that answers it stay together): the cut is before the request.
    assert call.parent_id == messages[5].pk
    assert result.through_message_id == messages[3].pk
    assert result.summary.extracts["tools"] == {}


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"keep_recent": -1}, "keep_recent"),
        ({"focus": "x" * 2001}, "focus"),
        ({"trigger": "cron"}, "trigger"),
        ({"content": "   "}, "content"),
        ({"profile_slug": "no-such-profile"}, "profile"),
    ],
)
def test_invalid_arguments_are_rejected_before_anything_happens(db, kwargs, field):
    channel = ChannelFactory()
    converse(channel, 10)
    with pytest.raises(ValidationError) as caught:
        channel_compact(channel=channel, actor=channel.owner, **kwargs)
    assert field in caught.value.message_dict
    assert not CompactionLease.objects.filter(channel=channel, holder__gt="").exists()
    assert Summary.objects.count() == 0


def test_previewed_draft_applied_unchanged_is_not_marked_edited(utility_model, llm_server):
    channel = ChannelFactory()
    converse(channel, 10)
    llm_server.script(Reply(content="## Goal\n- Draft text."))
    draft = channel_compact(channel=channel, actor=channel.owner, keep_recent=2, dry_run=True)
    applied = _apply(channel, draft)
    assert len(llm_server.requests) == 1
    summary = Summary.objects.get()
    assert (applied.edited, summary.edited, summary.content, summary.through_message_id, summary.model) == (
        False,
        False,
        draft.content,
        draft.through_message_id,
        "loopback-utility",
    )
    audit = AuditEntry.objects.get(action="summary.compact")
    assert audit.details["edited"] is False


def test_long_conversation_offline_stacked_keeps_structure_and_pinned_facts(db):
    from compaction.summarizers.offline import SECTIONS

    channel = ChannelFactory()
    converse(channel, 300)
    first = channel_compact(channel=channel, actor=channel.owner, keep_recent=6).summary
    chat_services.message_append(
        channel=channel,
        user=channel.owner,
        role="user",
        content="New finding: the cache key is built in app/cache/keys.py, bug BUG-7781.",
    )
    converse(channel, 40, start=300)
    second = channel_compact(channel=channel, actor=channel.owner, keep_recent=6).summary
    assert second.previous_id == first.pk and second.messages_covered == 341 - 6
    headings = [line[3:] for line in second.content.splitlines() if line.startswith("## ")]
    assert [h for h in headings if h in SECTIONS] == [s for s in SECTIONS if s in headings]
    assert len([h for h in headings if h in SECTIONS]) >= 4
    # Facts from the first stretch survive the second compaction; the new ones are there too.
    for fact in ("src/ledger/settlement.py", "E1042", "OPS-2231", "app/cache/keys.py", "BUG-7781"):
        assert fact in second.content, fact
    assert first.tokens < first.tokens_before / 5 and second.tokens_after < second.tokens_before


def _detail_heavy(channel: Channel, count: int) -> None:
    """Turns full of paths, identifiers and numbers: more than a small summary can hold."""
    for index in range(count):
        chat_services.message_append(
            channel=channel,
            user=channel.owner,
            role="user" if index % 2 == 0 else "assistant",
            content=f"Moved src/module_{index}/handler_{index}.py behind FLAG_{index}_ON; ticket OPS-{5000 + index} "
            f"measured {index * 37 + 11} ms at https://ci.example.org/runs/{9000 + index}.",
        )


@pytest.mark.parametrize("limit", [120, 300])
def test_offline_summary_and_its_references_stay_within_the_limit(db, limit):
    from chatcore.tokens import count_tokens
    from compaction.facts import HEADING

    channel = ChannelFactory()
    _detail_heavy(channel, 80)
    result = channel_compact(channel=channel, actor=channel.owner, keep_recent=4, max_summary_tokens=limit)
    assert count_tokens(result.summary.content) <= limit
    # the offline summary left room for the details it dropped
    assert HEADING in result.summary.content
    assert "Files: `src/module_" in result.summary.content.split(HEADING, 1)[1]


def test_model_summary_filling_its_limit_gets_only_the_references_that_fit(utility_model, llm_server):
    from chatcore.tokens import count_tokens
    from compaction.facts import HEADING

    channel = ChannelFactory()
    _detail_heavy(channel, 40)
    long_summary = "## Goal\n" + "\n".join(f"- Step {n}: the handlers were moved." for n in range(12))
    short_summary = "## Goal\n- The handlers were moved."
    llm_server.script(Reply(content=long_summary), Reply(content=short_summary))
    limit = count_tokens(long_summary) + 5
    full = channel_compact(channel=channel, actor=channel.owner, keep_recent=4, max_summary_tokens=limit, dry_run=True)
    assert full.content.startswith(long_summary) and count_tokens(full.content) <= limit
    roomy = channel_compact(channel=channel, actor=channel.owner, keep_recent=4, max_summary_tokens=limit, dry_run=True)
    assert roomy.content.startswith(short_summary + "\n\n" + HEADING)
    assert count_tokens(roomy.content) <= limit


def test_the_offline_model_window_does_not_cut_what_is_summarised(db):
    """The offline summarizer reads messages, not a prompt: the chat window set on the offline model
    (small in the demo) must not leave most of a long stretch unsummarised."""
    from chatcore.models import LLMModel, ModelRole
    from tests.chatcore.factories import LLMModelFactory, ModelRoleFactory

    offline = LLMModelFactory(name="offline", provider=LLMModel.Provider.OFFLINE, context_window=2_000)
    ModelRoleFactory(role=ModelRole.Role.UTILITY, primary=offline)
    channel = ChannelFactory()
    messages = converse(channel, 120)
    assert sum(m.tokens for m in messages) > 2_000
    result = channel_compact(channel=channel, actor=channel.owner, keep_recent=6)
    assert result.model == "offline"
    assert result.summarized_count == 114


def _summarised_tokens(channel, keep_recent: int) -> int:
    from chatcore.models import Message

    messages = list(Message.objects.filter(channel=channel).order_by("pk"))
    return sum(m.tokens for m in messages[: len(messages) - keep_recent])


@pytest.mark.parametrize("count", [5, 8])
def test_offline_summary_with_its_references_is_shorter_than_what_it_replaces(db, count):
    """The references share the offline summary's own limit (80% of the input), not the profile's larger one."""
    from chatcore.tokens import count_tokens
    from compaction.facts import HEADING

    channel = ChannelFactory()
    _detail_heavy(channel, count)
    replaced = _summarised_tokens(channel, 1)
    result = channel_compact(channel=channel, actor=channel.owner, keep_recent=1)
    assert result.model == "offline"
    assert HEADING in result.summary.content  # references were pinned, and still
    assert count_tokens(result.summary.content) <= int(replaced * 0.8) < replaced


def test_model_summary_with_its_references_is_shorter_than_what_it_replaces(utility_model, llm_server):
    from chatcore.tokens import count_tokens
    from compaction.facts import HEADING

    channel = ChannelFactory()
    _detail_heavy(channel, 6)
    replaced = _summarised_tokens(channel, 1)
    short_summary = "## Goal\n- The handlers were moved behind flags."
    llm_server.script(Reply(content=short_summary))
    result = channel_compact(channel=channel, actor=channel.owner, keep_recent=1)
    assert result.model == "loopback-utility"
    assert result.summary.content.startswith(short_summary + "\n\n" + HEADING)
    assert count_tokens(result.summary.content) < replaced


def test_a_branch_s_leading_system_message_is_never_summarised(utility_model, llm_server):
    channel = ChannelFactory()
    chat_services.message_append(channel=channel, user=channel.owner, role="system", content="SYSTEM-RULES-7")
    messages = converse(channel, 10)
    llm_server.script(Reply(content="## Goal\n- A short summary."))

    result = channel_compact(channel=channel, actor=channel.owner, keep_recent=2)

    assert result.summarized_count == 8 and result.through_message_id == messages[7].pk
    assert "SYSTEM-RULES-7" not in _user_prompt(llm_server.requests[0])
    sent = context_assemble(channel=channel, user=channel.owner).messages
    assert sent[0] == {"role": "system", "content": "SYSTEM-RULES-7"}
    assert "A short summary." in sent[1]["content"] and len(sent) == 4
