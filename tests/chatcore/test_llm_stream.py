"""The streamed body read without the SDK's per-event objects (chatcore.llm_stream): events split as the
SDK's decoder splits them, batches by reads of the network, the SDK's errors; and the pieces that arrived
together written at once (chatcore.streaming.written_together)."""

import itertools
import json
from collections.abc import AsyncIterator

import httpx2
import openai
import pytest
from asgiref.sync import async_to_sync
from openai._streaming import SSEDecoder

from chatcore.llm_stream import _Body, _EventReader, _json_value
from chatcore.streaming import ReplyDelta, ReplyTools, written_together

BODIES = [
    b'data: {"a": 1}\n\ndata: {"b": 2}\n\ndata: [DONE]\n\n',
    b'data: {"a": 1}\r\n\r\ndata: {"b": "x\\u00e9"}\r\n\r\n',
    b'data: {"a": 1}\r\rdata:{"b": 2}\r\r',
    b': a comment\n\nevent: message\ndata: {"a":\ndata: 1}\n\nretry: 5\n\n',
    b'id: 7\ndata: {"a": 1}\n\n\n',
    'data: {"text": "caf\u00e9 \u2603"}\n\nunknown: field\n\n'.encode(),
    # Whole one-line events beside those that are not (a multi-line data pending, no space, empty data).
    b'data: {"a": 1}\n\ndata:{"b": 2}\n\ndata:\n\ndata: x\ndata: {"c": 3}\n\ndata: {"d": 4}\r\n\r\n',
]


def _sdk_events(pieces: list[bytes]) -> list[str]:
    return [event.data for event in SSEDecoder().iter_bytes(iter(pieces))]


def _events(pieces: list[bytes]) -> list[str]:
    reader = _EventReader()
    return [data.decode() for piece in pieces for data in reader.feed(piece)]


@pytest.mark.parametrize("body", BODIES)
def test_events_are_split_as_the_sdk_splits_them_wherever_the_reads_cut(body):
    for first, second in itertools.combinations(range(len(body) + 1), 2):
        pieces = [body[:first], body[first:second], body[second:]]
        assert _events(pieces) == _sdk_events(pieces), pieces


@pytest.mark.parametrize(
    "text", ['{"a": [1, "x"]}', ' {"a": 1}', '{"a": 1} ', '{"a": 1}x', '{"a": 1}{}', "", "[1]", "nul", '"s"', "{"]
)
def test_a_chunk_is_decoded_as_json_loads_decodes_it(text):
    try:
        expected: object = json.loads(text)
    except json.JSONDecodeError as error:
        with pytest.raises(json.JSONDecodeError) as raised:
            _json_value(text)
        assert (raised.value.msg, raised.value.pos) == (error.msg, error.pos)
    else:
        assert _json_value(text) == expected


class _Reads(httpx2.AsyncByteStream):
    """A response body that arrives in the given reads (an exception: the read fails with it)."""

    def __init__(self, reads: list[bytes | Exception]):
        self.reads = reads

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for read in self.reads:
            if isinstance(read, Exception):
                raise read
            yield read

    async def aclose(self) -> None:
        pass


def _batches(reads: list[bytes | Exception]) -> list[list]:
    request = httpx2.Request("POST", "http://127.0.0.1/v1/chat/completions")
    response = httpx2.Response(
        200, headers={"Content-Type": "text/event-stream"}, stream=_Reads(reads), request=request
    )

    async def run() -> list[list]:
        body, batches = _Body(response), []
        while True:
            try:
                batches.append(await body.batch())
            except StopAsyncIteration:
                return batches

    return async_to_sync(run)()


def test_what_one_read_brings_is_one_batch():
    reads: list[bytes | Exception] = [
        b'data: {"n": 1}\n\ndata: {"n": 2}\n\ndata: {"n"',
        b": 3}\n\n",
        b": keep-alive\n\n",
        b'data: {"n": 4}\n\ndata: [DONE]\n\ndata: {"n": 5}\n\n',
        b'data: {"n": 6}\n\n',
    ]
    assert _batches(reads) == [[{"n": 1}, {"n": 2}], [{"n": 3}], [{"n": 4}]]


def test_an_error_inside_the_stream_and_a_timeout_are_the_sdks_errors():
    with pytest.raises(openai.APIError, match="overloaded"):
        _batches([b'data: {"n": 1}\n\n', b'data: {"error": {"message": "overloaded"}}\n\n'])
    with pytest.raises(openai.APIError, match="An error occurred during streaming"):
        _batches([b'data: {"error": "no"}\n\n'])
    with pytest.raises(openai.APITimeoutError):
        _batches([b'data: {"n": 1}\n\n', httpx2.ReadTimeout("slow")])
    with pytest.raises(openai.APIConnectionError):
        _batches([httpx2.RemoteProtocolError("peer closed connection")])


def test_chunks_before_a_failure_in_the_same_read_are_handed_over_first():
    request = httpx2.Request("POST", "http://127.0.0.1/v1/chat/completions")
    reads = [b'data: {"n": 1}\n\ndata: {"n": 2}\n\ndata: {"error": {"message": "overloaded"}}\n\n']
    response = httpx2.Response(200, stream=_Reads(reads), request=request)

    async def run() -> list:
        body = _Body(response)
        first = await body.batch()
        with pytest.raises(openai.APIError, match="overloaded"):
            await body.batch()
        return first

    assert async_to_sync(run)() == [{"n": 1}, {"n": 2}]
    with pytest.raises(json.JSONDecodeError):
        _batches([b"data: {not json\n\n"])


def test_a_body_that_ends_without_done_ends_the_stream():
    assert _batches([b'data: {"n": 1}\n\n', b'data: {"n": 2}']) == [[{"n": 1}]]


async def _events_of(events: list) -> AsyncIterator:
    for event in events:
        yield event


def test_pieces_that_arrived_together_are_written_at_once():
    events = [
        ReplyDelta("a", more=True),
        ReplyDelta("b", more=True),
        ReplyDelta("c"),
        ReplyDelta("d"),
        ReplyTools(calls=[], round=1),
        ReplyDelta("e"),
    ]

    def encode(event) -> bytes | None:
        return event.content.encode() if isinstance(event, ReplyDelta) else None

    async def run() -> list[bytes]:
        return [data async for data in written_together(_events_of(events), encode)]

    assert async_to_sync(run)() == [b"abc", b"d", b"e"]
