"""Token counting on texts beyond what the tokenizer accepts in one call."""

from chatcore import tokens
from chatcore.tokens import count_tokens


def test_long_text_is_counted_in_pieces_that_sum_to_the_whole():
    sentence = "Melanie painted a sunrise at the lake on 8 May 2023, and Caroline loved it.\n"
    text = sentence * 2_000  # about 150,000 characters: several pieces
    encoding = tokens._encoding()

    assert len(text) > 3 * tokens.PIECE_CHARS
    assert count_tokens(text) == len(encoding.encode_ordinary(text))


def test_texts_the_tokenizer_refuses_in_one_call_are_still_counted():
    # 1.2 million characters and 400,000 tokens: either is refused in one call.
    assert count_tokens(" ab" * 400_000) == 400_000
    # Few characters, many tokens: the pieces stay under the token limit too.
    assert count_tokens("🙂" * 300_000) == 300 * count_tokens("🙂" * 1_000)


def test_a_text_sent_again_is_counted_once_and_as_count_tokens_counts_it(monkeypatch):
    """The summary in force goes with every call of a conversation: its count is remembered, the same count."""
    summary = "The team chose the venue and a backup date; the budget waits for the supplier. " * 40
    long = "word " * (tokens.REMEMBERED_MAX_CHARS // 5 + 1)
    counted: list[str] = []
    real = tokens.count_tokens
    monkeypatch.setattr(tokens, "count_tokens", lambda text: counted.append(text) or real(text))
    tokens._remembered.cache_clear()

    assert [tokens.count_tokens_remembered(summary) for _ in range(3)] == [real(summary)] * 3
    assert [tokens.count_tokens_remembered(long) for _ in range(2)] == [real(long)] * 2
    assert counted == [summary, long, long]  # a text too long to keep is counted each time


def test_the_cores_count_is_the_length_of_the_encoding_whatever_the_text():
    """count_tokens asks the tokenizer's core for a count: the same number `encode_ordinary` gives by its ids."""
    encoding = tokens._encoding()
    texts = [
        "Plain English prose, with punctuation; and numbers like 3.14159 and 2023-05-08.",
        "héllo wörld 日本語のテキスト 🚀🚀 emoji and\u00a0non-breaking  spaces\n\n\ttabs",
        "<|endoftext|> is counted as ordinary text",
        "  leading and trailing whitespace  ",
        "lone \ud800 surrogate",
        "Ünïcödé " * 300,
    ]

    assert tokens._counter() is not None
    assert [count_tokens(text) for text in texts] == [len(encoding.encode_ordinary(text)) for text in texts]
