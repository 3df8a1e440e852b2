"""A resent history read from what the process read of an earlier body (compaction/gateway/resent.py): the
same request, errors and chain hashes as reading the body whole, with only the new messages parsed and hashed."""

import json

import pytest

from chatcore.chain import chain_hashes
from compaction.gateway import protocol, resent
from compaction.gateway.errors import ProtocolError
from compaction.gateway.resent import memo_clear, request_read

OWNER = 7


@pytest.fixture(autouse=True)
def empty_memo():
    memo_clear()
    yield
    memo_clear()


@pytest.fixture
def whole_reads(monkeypatch):
    """How many bodies were read whole."""
    reads = []
    read = protocol.body_read

    def counted(body, **kwargs):
        reads.append(body)
        return read(body, **kwargs)

    monkeypatch.setattr(resent, "body_read", counted)
    return reads


def history(turns: int, *, text: str = "Turn {}: the plan covers budgets and the venue") -> list[dict]:
    messages = [{"role": "system", "content": "Be brief."}]
    for turn in range(turns):
        messages += [{"role": "user", "content": text.format(turn)}, {"role": "assistant", "content": f"Noted {turn}"}]
    return messages


def openai_body(messages: list, **fields) -> bytes:
    """As the `openai` client sends it: the messages first, compact separators."""
    return json.dumps({"messages": messages, "model": "m", **fields}, separators=(",", ":")).encode()


def whole(body: bytes, owner_id: int = OWNER) -> tuple:
    """What reading `body` whole gives: the request's fields and the chain hashes."""
    request = protocol.body_read(body)
    hashes = chain_hashes(owner_id=owner_id, messages=[(m.role, m.content, m.metadata) for m in request.messages])
    return request.messages, request.params, request.model, request.stream, request.channel_id, hashes


def read(body: bytes, owner_id: int = OWNER) -> tuple:
    request = request_read(body, owner_id=owner_id)
    assert request.hashed_for == owner_id
    return request.messages, request.params, request.model, request.stream, request.channel_id, request.hashes


SPELLINGS = {
    "openai": lambda messages: openai_body(messages, temperature=0.5),
    "spaced": lambda messages: json.dumps({"model": "m", "messages": messages, "stream": False}).encode(),
    "indented": lambda messages: json.dumps({"messages": messages, "model": "m"}, indent=2).encode(),
    "unicode": lambda messages: json.dumps({"messages": messages, "model": "m"}, ensure_ascii=False).encode(),
    "escaped": lambda messages: json.dumps({"messages": messages, "model": "m"}).encode(),
}


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_each_call_reads_only_what_it_adds_and_gets_what_a_whole_read_gets(spelling, whole_reads):
    spell = SPELLINGS[spelling]
    text = "Turn {}: São Paulo, 東京 and 🙂 on the plan" if spelling in ("unicode", "escaped") else "Turn {}: plan"
    conversation = history(6, text=text)
    bodies = [spell(conversation[: 2 * turn]) for turn in range(1, 4)] + [spell(conversation)]

    results = [read(body) for body in bodies]

    assert results == [whole(body) for body in bodies]
    # The escaped spelling's emoji is a surrogate pair in JSON: such bodies are checked whole, as text that might
    # hold half a pair.
    assert len(whole_reads) == (len(bodies) if spelling == "escaped" else 1)


def test_a_body_that_resends_no_new_message_reads_the_remembered_one(whole_reads):
    body = openai_body(history(3))

    assert read(body) == read(body) == whole(body)
    assert len(whole_reads) == 1


def test_fields_around_the_messages_are_read_each_time(whole_reads):
    messages = history(3)
    first = openai_body(messages[:3], temperature=0.1)
    later = openai_body(messages, temperature=0.9, stream=True, metadata={"channel_id": "12"})
    read(first)

    request = request_read(later, owner_id=OWNER)

    assert (request.params["temperature"], request.stream, request.channel_id) == (0.9, True, 12)
    assert len(whole_reads) == 1


def test_an_edited_turn_or_another_user_reads_the_body_whole(whole_reads):
    messages = history(4)
    read(openai_body(messages[:5]))
    edited = messages[:3] + [{"role": "user", "content": "Edited"}]

    assert read(openai_body(edited)) == whole(openai_body(edited))
    assert read(openai_body(messages), owner_id=OWNER + 1) == whole(openai_body(messages), owner_id=OWNER + 1)
    assert len(whole_reads) == 3


@pytest.mark.parametrize(
    "added",
    [
        ',{"role":"user","content":""}],"model":"m"}',  # an empty message
        ',{"role":"user","content":"a\\u0000b"}],"model":"m"}',  # a NUL
        ',{"role":"user","content":"open"],"model":"m"}',  # not JSON
        ',{"role":"user","content":"fine"}],"model":"m"} x',  # extra data
        ',{"role":"user","content":"fine"}],"model":"m","messages":[]}',  # a second messages field
        ',{"role":"user","content":"fine"}],"model":"m","temperature":9}',  # an option out of range
        ',{"role":"user","content":' + "[" * 80 + "]" * 80 + "}]," + '"model":"m"}',  # too deep
    ],
)
def test_a_refusal_in_what_was_added_is_the_whole_read_s(added):
    messages = history(2)
    first = openai_body(messages)
    read(first)
    body = first[: first.rindex(b"}]")] + b"}" + added.encode()

    with pytest.raises(ProtocolError) as expected:
        protocol.body_read(body)
    with pytest.raises(ProtocolError) as refused:
        request_read(body, owner_id=OWNER)

    assert refused.value.body() == expected.value.body()
    assert refused.value.status == expected.value.status


def test_a_number_that_continues_where_a_remembered_body_ended_is_not_a_new_element():
    read(b'{"messages":[{"role":"user","content":"hi"}],"model":"m"}')

    # The same bytes up to the end of the first message, then no separator: not JSON.
    with pytest.raises(ProtocolError) as refused:
        request_read(b'{"messages":[{"role":"user","content":"hi"}1],"model":"m"}', owner_id=OWNER)

    assert refused.value.body()["error"]["code"] == "invalid_json"


def test_the_memo_keeps_within_its_bound_and_can_be_turned_off(settings, whole_reads):
    bodies = [openai_body(history(40, text=f"Conversation {n}, turn {{}}")) for n in range(3)]
    settings.COMPACTION_GATEWAY_READ_MEMO_BYTES = 2 * resent._Known(bodies[0], 0, (), ()).cost + 40_000
    for owner_id, body in enumerate(bodies):
        read(body, owner_id=owner_id)
    read(bodies[2], owner_id=2)
    read(bodies[1], owner_id=1)
    assert len(whole_reads) == 3
    read(bodies[0], owner_id=0)  # the least recently used went to make room for the third
    assert len(whole_reads) == 4

    settings.COMPACTION_GATEWAY_READ_MEMO_BYTES = 0
    memo_clear()
    read(bodies[0])
    read(bodies[0])
    assert len(whole_reads) == 6
