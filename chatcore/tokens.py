"""Token counting.

The tokenizer is OpenAI's o200k_base, from the `bpe-openai` package, whose
tables ship inside the wheel: nothing is downloaded at run time. If it cannot
be loaded, `estimate_tokens` stands in: one token per four bytes of UTF-8,
which tracks BPE tokenizers on English prose within about ten per cent and
errs high on other scripts (a safe direction for budgets).
"""

import functools
import logging
from collections.abc import Callable

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


@functools.cache
def _counter() -> Callable[[str], int] | None:
    """The tokenizer core's own count of a text's tokens, or None where the package has none.

    `encode_ordinary` builds the list of token ids (twice: the core's, then a copy) only for the caller
    to measure it; the core's `count` walks the same merges and returns the length, for about two
    thirds of the cost. It is not part of the package's documented interface, hence the lookup here
    with `encode_ordinary` as the fallback (tests/chatcore/test_tokens.py checks the two agree).
    """
    count = getattr(getattr(_encoding(), "_backend", None), "count", None)
    return count if callable(count) else None


def _count_piece(encoding, text: str) -> int:
    """The tokens of a text of at most PIECE_CHARS characters."""
    counter = _counter()
    if counter is not None:
        try:
            return counter(text)
        except UnicodeEncodeError:  # lone surrogates: `encode_ordinary` replaces them before it encodes
            pass
    return len(encoding.encode_ordinary(text))


def count_tokens(text: str) -> int:
    if not text:
        return 0
    encoding = _encoding()
    if encoding is None:
        return estimate_tokens(text)
    if len(text) <= PIECE_CHARS:
        return _count_piece(encoding, text)
    return sum(_count_piece(encoding, piece) for piece in _pieces(text))


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
