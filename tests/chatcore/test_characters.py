"""The one check of text that enters: NUL and lone surrogates found, with the field that holds them."""

import json

import pytest
from django.http import QueryDict
from django.test import Client, RequestFactory, override_settings

from chatcore.characters import (
    NUL_MESSAGE,
    SURROGATE_MESSAGE,
    has_lone_surrogate,
    json_lone_surrogate,
    may_hold_unstorable,
    shown,
    text_problem,
    unstorable_field,
    unstorable_in_json,
)
from chatcore.middleware import unstorable_refusal


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("plain text, an emoji 🚀 (a pair in UTF-16) and é", None),
        ("a\x00b", NUL_MESSAGE),
        ("a\ud800b", SURROGATE_MESSAGE),
        ("a\udfffb", SURROGATE_MESSAGE),
        ("\ufffd replacement character", None),
    ],
)
def test_text_problem(text, problem):
    assert text_problem(text) == problem


def test_the_field_is_named_in_order_keys_included():
    value = {"a": "fine", "b": [{"c": "fine"}, {"d": "x\x00"}], "e": "\ud800"}
    assert unstorable_field(value) == ("b[1].d", NUL_MESSAGE)
    assert unstorable_field({"ok": 1, "k\ud800": "fine"}) == ("k\\ud800", SURROGATE_MESSAGE)
    assert unstorable_field(["fine", ["x\udc00"]]) == ("[1][0]", SURROGATE_MESSAGE)
    assert unstorable_field("\x00") == ("", NUL_MESSAGE)
    assert unstorable_field({"n": 1, "f": 1.5, "b": True, "none": None}) is None


def test_every_value_of_a_query_dict_is_read():
    assert unstorable_field(QueryDict("q=fine&q=b%00d")) == ("q", NUL_MESSAGE)


def test_a_deep_value_is_walked_without_recursion():
    deep: object = "x\x00"
    for _ in range(50_000):
        deep = [deep]
    found = unstorable_field(deep)
    assert found is not None and found[0].endswith("[0][0]") and found[1] == NUL_MESSAGE


def test_json_text_is_walked_only_when_it_could_hold_one():
    assert not may_hold_unstorable('{"a": "\\u00e9 caf\\u00e9"}')
    assert may_hold_unstorable(b'{"a": "\\u0000"}') and may_hold_unstorable('{"a": "\\uDC00"}')
    assert unstorable_in_json('{"a": "fine"}', {"a": "\x00"}) is None  # the text says none can be there
    assert unstorable_in_json('{"a": "\\u0000"}', {"a": "\x00"}) == ("a", NUL_MESSAGE)
    assert unstorable_in_json('{"a": "\\ud83d\\ude80"}', {"a": "🚀"}) is None  # an escaped pair is the character


def test_shown_writes_the_characters_as_escapes():
    assert shown("key\x00 \ud800") == "key\\u0000 \\ud800"


def test_the_middleware_answers_a_browser_with_a_page_and_a_client_with_json():
    factory = RequestFactory()
    page = unstorable_refusal(factory.post("/x/", {"title": "a\x00b"}, HTTP_ACCEPT="text/html"))
    assert page is not None and page.status_code == 400
    assert "title: Text may not contain NUL characters" in page.content.decode()
    api = unstorable_refusal(factory.get("/x/?q=a%00b"))
    assert api is not None and api.status_code == 400
    assert json.loads(api.content) == {"detail": f"q: {NUL_MESSAGE}", "code": "invalid", "errors": {"q": [NUL_MESSAGE]}}
    assert unstorable_refusal(factory.post("/x/", {"title": "fine"})) is None
    assert unstorable_refusal(factory.post("/x/", '{"a": "\\u0000"}', content_type="application/json")) is None


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=100)
def test_a_form_django_cannot_read_is_answered_as_the_api_answers_it(db):
    response = Client().post("/api/channels/", {"title": "x" * 200})
    assert response.status_code == 413 and response.json()["code"] == "too_large"


@pytest.mark.parametrize(
    "raw, path",
    [
        (b'{"messages": [{"content": "a"}, {"content": ["x", "\\ud800"]}]}', "messages[1].content[1]"),
        ('{"\\uDFFF": 1}', "\udfff"),
        ('"\\ud800"', ""),
        ('{"text": "\\ud83d\\ude80 launched"}', None),  # a whole pair is the character it encodes
        ('{"text": "\\\\ud800 as written"}', None),  # an escaped backslash, then letters
        ('{"text": "plain"}', None),
    ],
)
def test_a_lone_surrogate_is_found_where_json_escaped_it(raw, path):
    assert json_lone_surrogate(raw, json.loads(raw)) == path


@pytest.mark.parametrize(
    ("text", "lone"),
    [
        ("half \ud800", True),
        ("\udfff", True),
        ("\ud83d\ude80 launched", True),  # a pair's halves as two code points: still not text
        ("🚀 launched", False),
        ("", False),
    ],
)
def test_text_holding_half_a_pair_is_told_apart(text, lone):
    assert has_lone_surrogate(text) is lone
