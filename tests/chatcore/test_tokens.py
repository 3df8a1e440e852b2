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
