"""Token counting.

The tokenizer is OpenAI's o200k_base, from the `bpe-openai` package, whose
tables ship inside the wheel: nothing is downloaded at run time. If it cannot
be loaded, `estimate_tokens` stands in: one token per four bytes of UTF-8,
which tracks BPE tokenizers on English prose within about ten per cent and
errs high on other scripts (a safe direction for budgets).
"""

import functools
import logging

logger = logging.getLogger(__name__)

ENCODING_NAME = "o200k_base"


BYTES_PER_TOKEN = 4  # the estimate's rate: close to BPE tokenizers on English prose, high on other scripts


def estimate_tokens(text: str) -> int:
    if not text:
        return 0
    return (len(text.encode("utf-8", "surrogatepass")) + BYTES_PER_TOKEN - 1) // BYTES_PER_TOKEN


@functools.cache
def _encoding():
    try:
        import bpe_openai

        return bpe_openai.get_encoding(ENCODING_NAME)
    except Exception:  # the estimate is a documented stand-in
        logger.warning("tokenizer %s unavailable; using the 4-bytes-per-token estimate", ENCODING_NAME)
        return None


def tokenizer_name() -> str:
    return ENCODING_NAME if _encoding() is not None else "estimate"


# The tokenizer refuses one input of a million characters or of more than
# 200,000 tokens; a character is at most four tokens, so pieces of this many
# characters are always accepted.
PIECE_CHARS = 40_000


def _pieces(text: str):
    """Cut before a whitespace character where possible: the tokenizer splits
    there anyway, so the sum of the pieces' counts matches the whole's."""
    start = 0
    while len(text) - start > PIECE_CHARS:
        end = start + PIECE_CHARS
        cut = max(text.rfind(" ", start + PIECE_CHARS // 2, end), text.rfind("\n", start + PIECE_CHARS // 2, end))
        if cut > start:
            end = cut
        yield text[start:end]
        start = end
    yield text[start:]


def count_tokens(text: str) -> int:
    if not text:
        return 0
    encoding = _encoding()
    if encoding is None:
        return estimate_tokens(text)
    if len(text) <= PIECE_CHARS:
        return len(encoding.encode_ordinary(text))
    return sum(len(encoding.encode_ordinary(piece)) for piece in _pieces(text))


# Texts that come back call after call (the summary in force framed as context, a persona's prompt): their
# counts kept per process, at most this many texts of at most this many characters (a longer one is counted
# each time it comes).
REMEMBERED_TEXTS = 128
REMEMBERED_MAX_CHARS = 65_536


def count_tokens_remembered(text: str) -> int:
    """`count_tokens` of a text that every call of a conversation sends again: counted once per process while
    it is among the recent ones. A memo of a pure function of the text: it gives what `count_tokens` gives."""
    return _remembered(text) if len(text) <= REMEMBERED_MAX_CHARS else count_tokens(text)


@functools.lru_cache(maxsize=REMEMBERED_TEXTS)
def _remembered(text: str) -> int:
    return count_tokens(text)
