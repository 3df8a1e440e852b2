"""JSON text is read with a bound on its nesting, measured without recursion (chatcore.bounded_json)."""

import pytest

from chatcore.bounded_json import JSONTooDeep, json_depth_exceeds, json_loads_bounded


@pytest.mark.parametrize(
    ("text", "limit", "deeper"),
    [
        ("[" * 5_000 + "]" * 5_000, 64, True),
        ('{"a": [[{"b": 1}]]}', 4, False),
        ('{"a": [[{"b": 1}]]}', 3, True),
        ('{"text": "[[[[[[[[[[ \\" {{{{{{{{{{"}', 2, False),  # brackets inside strings, an escaped quote
        ('[{"a": "]"}, [[]], {"b": {"c": {}}}]', 4, False),
        ('[{"a": "]"}, [[]], {"b": {"c": {}}}]', 3, True),
        ("[[}}", 5, False),  # not JSON: left to the parser to say so
        ('["\\\\", [[[]]]]', 3, True),  # an escaped backslash does not escape the quote after it
        ('["\\\\", [[[]]]]', 4, False),
        ('[{"a": ""}, "", {"b": "{"}]', 1, True),
        ("", 1, False),
    ],
)
def test_depth_of_json_text_is_read_without_parsing(text, limit, deeper):
    assert json_depth_exceeds(text, limit) is deeper


def test_bounded_loading_refuses_deep_text_and_reads_the_rest():
    with pytest.raises(JSONTooDeep, match="nested more than 64 levels deep"):
        json_loads_bounded("[" * 100_000 + "]" * 100_000)
    assert json_loads_bounded(b'{"a": [1, "[["]}') == {"a": [1, "[["]}
    assert json_loads_bounded("[[[]]]", max_depth=3) == [[[]]]
