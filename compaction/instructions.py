"""Finding the user's instructions and constraints in a conversation, to keep them word for word.

"Don't do X" paraphrased becomes X six turns later. A profile can ask that
what the user told the assistant to do, or never to do, stays verbatim in
the summary: the offline summarizer quotes those sentences in a section of
their own, and a model is handed them as a "keep verbatim" block. They are
found offline, by form: constraint words (must, never, always, don't, only,
make sure, please …), a sentence that opens with a verb in the imperative
("Patch it.", "Keep the answer short."), "let's …", and requests ("can you
…?"). Well-wishes that happen to be imperatives ("don't give up!", "have
fun") are not instructions.

Only the user's own messages are read, so a pasted document or a tool's
output cannot plant an instruction, and text that addresses the summarizer
itself is never kept (it is an injection attempt, not an instruction).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable

from compaction import lexicon
from compaction.pieces import pieces_of
from compaction.safety.first_pass import AsciiTwin, found, loosened
from compaction.safety.injection import pattern_flags

# Constraint wording that binds whatever the sentence's form: "make sure", "please", "you must", "never …".
_CONSTRAINT_RE = re.compile(
    r"\b(?:(?<!I'll )(?<!I will )(?<!I try to )(?<!they )(?<!he )(?<!she )(?<!we )make sure|be sure to|"
    r"remember to|ensure that|please|(?:you|we) (?:must(?! have\b| be\b| feel\b|'ve\b)|mustn't|must not|"
    r"need to|have to|should(?:n't| not)? ever|should always|should never)|must not|mustn't|must never|"
    r"must always|I (?:want|need|'d like|would like) you to|from now on|going forward|under no circumstances|"
    r"without fail|no more than \d|at (?:most|least) \d|no later than|stick to|only ever)\b",
    re.IGNORECASE,
)
# What an imperative sentence may open with: a verb in the imperative, or "always", "never", "don't", "only".
_IMPERATIVE_VERBS = frozenset(
    """add answer apply avoid bump call change check clean commit compare continue create delete deploy describe
do document drop explain fix focus follow forget give go include keep limit list look make mention merge move note patch
prefer push put read record remember remind remove rename reply report respond restart revert rewrite run send show
skip start stick stop summarize summarize switch tag tell test translate try update upgrade use verify walk
write""".split()
)
_NEGATIVE_LEADS = frozenset("always never don't dont only".split())
# How the answers should be: length, form, language, pace ("Short answers.", "One item at a time.").
_STYLE_RE = re.compile(
    r"\b(?:(?:short|brief|concise|detailed|plain|simple|shorter|longer) (?:answers?|replies|responses|version|"
    r"summary|explanations?)|one (?:item|thing|step|question|file|change) at a time|step by step|word for word|"
    r"in (?:english|french|german|spanish|italian|portuguese|bullet points|a table|markdown|plain text)|"
    r"no (?:emojis?|jargon|code blocks?|tables)|without (?:emojis?|jargon|code))\b",
    re.IGNORECASE,
)
_LEAD_RE = re.compile(
    r"^(?:(?:ok(?:ay)?|so|now|then|and|also|next|first|finally|yes|no|right|fine|good|alright|great|perfect|"
    r"sure|makes sense|agreed|thanks)\b[,.:!]?\s+)*",
    re.I,
)
# "I'll make sure …", "they make sure …": a promise or a description, not an instruction.
_SELF_BOUND_RE = re.compile(
    r"\b(?:I|I'll|I'd|I'm|I've|they|he|she|we'll)\b[^.,;!?]{0,30}\b(?:make sure|ensure)\b", re.I
)
_LETS_RE = re.compile(r"^let'?s\b|^let us\b", re.IGNORECASE)
_REQUEST_RE = re.compile(
    r"^(?:can|could|would|will) you (?:please )?(?!believe|imagine|guess|tell (?:me )?(?:more|about))[a-z]+",
    re.IGNORECASE,
)
# Imperatives that are not instructions: well-wishes, and pointing at something shared.
_NOT_INSTRUCTIONS_RE = re.compile(
    r"\b(?:give up|keep it up|keep going|keep (?:up )?the (?:good|great|awesome) work|take care|have (?:fun|a (?:good|"
    r"great|nice|blast))|enjoy|good luck|stay (?:safe|strong|positive)|hang in there|don't worry|do not worry|"
    r"go for it|you got this|keep me posted|let me know|don't hesitate|keep (?:on )?(?:rocking|shining|smiling|"
    r"dancing|it real)|check (?:this|it|that|these) out|check out|look at (?:this|that|these|it)|take a look|"
    r"believe in yourself|be proud|keep you posted|keep in touch|keep (?:on |at it|pushing|being|up|it up|going|"
    r"trying|believing|working|that \w+ going|growing|shining)|don'?t (?:ever )?(?:quit|stop (?:believing|"
    r"dreaming|trying))|let'?s (?:keep|work|support|make|stay|continue|do) (?:\w+ ){0,4}?(?:each other|"
    r"together|difference|world|going|growing|helping|spreading|pushing|supporting|motivated|positive|vibes|"
    r"memories|progress|awesome|unforgettable|magic|happen|proud|better))\b",
    re.IGNORECASE,
)
_NOT_INSTRUCTIONS = AsciiTwin(_NOT_INSTRUCTIONS_RE)  # a long alternation: one RE2 scan on ASCII text


# Markup or a demand about the reply's form "now": the shape of a prompt injection, never kept as an instruction.
MIN_INSTRUCTION_CHARS = 6  # "Go on.": anything shorter is an acknowledgement, not an instruction
_INJECTION_SHAPE_RE = re.compile(r"[{}<>]|\bnow (?:respond|reply|answer|output|say|print|write)\b", re.IGNORECASE)
# Its two halves, asked apart: a search for one of four marks, and the demand asked only of a text holding "now" in
# some case (ignoring case, n, o and w match no other character), since tried at every character of every sentence
# an expression opening with a word boundary costs more than the rest of the check.
_MARKUP_RE = re.compile(r"[{}<>]")
_NOW_RE = re.compile(r"\bnow (?:respond|reply|answer|output|say|print|write)\b", re.IGNORECASE)


def _injection_shape(text: str) -> bool:
    """Whether `_INJECTION_SHAPE_RE` finds something in `text`."""
    return _MARKUP_RE.search(text) is not None or ("now" in text.lower() and _NOW_RE.search(text) is not None)


_HINTS = (
    _IMPERATIVE_VERBS
    | _NEGATIVE_LEADS
    | frozenset(
        "do let let's lets can could would will please make sure remember ensure must need have should want".split()
    )
    | frozenset(
        "like now going stick only most least later short brief concise detailed plain simple one step word".split()
    )
    | frozenset("english french german spanish italian portuguese bullet table markdown emoji emojis jargon".split())
    | frozenset("without under ever".split())
)


# Every word without which none of the forms above can match: the hints and the few words that only
# constraint and style wording need ("no more than 3", "shorter answers", "no code blocks", "mustn't").
_NEEDED = _HINTS | frozenset("more shorter longer code tables mustn mustn't".split())


def sentence_words(sentence: str) -> frozenset[str]:
    """The lower-cased words of `sentence` as `is_instruction` may be given them: runs of letters and digits
    (`lexicon.TOKEN_RE`), a word with an apostrophe kept whole and read in its parts too ("don't", "don", "t"), as
    the offline summarizer splits them."""
    lower = sentence.lower().replace("’", "'")
    listed = lexicon.tokens_of(lower)
    if "'" not in lower:
        return frozenset(listed)
    return frozenset(listed).union(part for token in listed if "'" in token for part in token.split("'"))


def could_be_instruction(words: frozenset[str]) -> bool:
    """A cheap first look at a sentence's lower-cased words: without any of these, it is no instruction."""
    return not _HINTS.isdisjoint(words)


def is_instruction(sentence: str, *, screened: bool = False, words: frozenset[str] | None = None) -> bool:
    """Whether a sentence of the user's tells the assistant what to do or not to do.

    An imperative opening ("Patch it.", "Never push to main.", "Don't mention prices.") or constraint wording
    anywhere ("please", "make sure", "you must"); "let's …" and "can you …?" as requests. A plain exclamation
    ("Let's celebrate!", "Check this pic!") is chat rather than an instruction unless it says please, must,
    never or always. `screened` says the caller found `sentence` free of injection already (not asked again);
    `words`, its lower-cased words when already split, let an ASCII sentence without any needed word be passed
    over at once (a non-ASCII one may hold a letter that the patterns, ignoring case, read as an ASCII one).
    """
    if words is not None and _NEEDED.isdisjoint(words) and sentence.isascii():
        return False
    text = sentence.strip()
    # The form first: most sentences have none of the forms, and the refusals below (a well-wish, the shape or
    # wording of an injection) cost more to ask. Both must hold, so the order changes no answer.
    if len(text) < MIN_INSTRUCTION_CHARS or not _has_form(text):
        return False
    if _NOT_INSTRUCTIONS.search(text) or _injection_shape(text):
        return False
    return (screened and text == sentence) or not lexicon.looks_like_injection(text)


# The patterns _has_form and _verb_like match at the lead, compiled once (not looked up in re's cache per sentence).
_FIRST_WORD_RE = re.compile(r"[A-Za-z']+")
_DO_NOT_RE = re.compile(r"do not\b", re.IGNORECASE)
_NEGATIVE_VERB_RE = re.compile(r"(?:always|never|don'?t|do not|only)\s+(?:ever\s+)?([a-z]+)", re.IGNORECASE)
_NOT_VERB_RE = re.compile(r"[A-Za-z]+(?:-|'s\b|\s+(?:is|was|are|were|has|had)\b)")


def _has_form(text: str) -> bool:
    """Whether `text` (stripped) has one of the forms of an instruction (see `is_instruction`), its refusals aside."""
    # _LEAD_RE opens with ^ (no MULTILINE): its one match is at the start, so this is its substitution by "".
    lead = text[_LEAD_RE.match(text).end() :]  # type: ignore[union-attr]  # a pattern of a repetition always matches
    if text.endswith("?"):
        return bool(_REQUEST_RE.match(lead)) and not text.count("!")
    # The first word is read for a statement only: a question's answer does not depend on it.
    first = _FIRST_WORD_RE.match(lead)
    word = first.group(0).lower() if first else ""
    if text.endswith("!") and word not in ("always", "never", "don't", "dont") and not _constraint(text):
        return False
    if _LETS_RE.match(lead):
        return True
    if (word == "do" and _DO_NOT_RE.match(lead)) or word in _NEGATIVE_LEADS:
        verb = _NEGATIVE_VERB_RE.match(lead)
        return verb is not None and verb.group(1).lower() in _IMPERATIVE_VERBS
    if word in _IMPERATIVE_VERBS:
        return _verb_like(lead)
    return _constraint(text) or _STYLE.search(text)


def _constraint(text: str) -> bool:
    """Constraint wording that is not the speaker's own promise; asked only where the answer depends on it."""
    if text.isascii() and not found(_CONSTRAINT_FIRST, text):
        return False
    return bool(_CONSTRAINT_RE.search(text)) and not _SELF_BOUND_RE.search(text)


# The two searches anywhere in a sentence, tried at each of its characters by Python's engine, cost more than the
# rest of the forms together: RE2 reads an ASCII sentence in one linear scan first. `_STYLE_RE` has no lookaround,
# so its twin answers alone there; `_CONSTRAINT_RE`'s first pass, without its lookarounds and word boundaries,
# matches wherever it does (on ASCII text \d and case read alike in both engines), and Python's decides the rest.
_STYLE = AsciiTwin(_STYLE_RE)
_CONSTRAINT_FIRST = loosened(_CONSTRAINT_RE)


def _verb_like(lead: str) -> bool:
    """An imperative opening, not a noun or a past participle used as a subject ("Check-in was slow")."""
    return not _NOT_VERB_RE.match(lead)


@dataclasses.dataclass(frozen=True)
class Instruction:
    """One instruction: its text as written, where it is (message index, span) and who gave it."""

    item: int
    start: int
    end: int
    text: str


def instructions_in(contents: Iterable[tuple[int, str]]) -> list[Instruction]:
    """The instructions in the given (index, text) user messages, in order, each said once (the first time)."""
    candidates = []
    for index, content in contents:
        # In ASCII text where no apostrophe joins a word's tail, a piece's words are the split of its span of the
        # message's runs (`lexicon.runs_exact`): one translation of the message instead of a split of each piece.
        runs = lexicon.runs_text(content) if lexicon.runs_exact(content) else None
        for piece in pieces_of(index, content):
            if piece.kind != "sentence" or piece.cut:
                continue
            # The words as a list first: most pieces hold none that is needed, and are passed over without a set.
            listed = sentence_words(piece.text) if runs is None else runs[piece.start : piece.end].split()
            if _NEEDED.isdisjoint(listed) and piece.text.isascii():
                continue
            text = piece.text.strip()
            # Without one of the forms it is no instruction whatever the checks below say: not asked of them.
            if len(text) >= MIN_INSTRUCTION_CHARS and _has_form(text):
                candidates.append((piece, frozenset(listed)))
    # is_instruction's injection check, for every candidate at once (a piece is trimmed: checked as it stands).
    injected = pattern_flags([piece.text for piece, _ in candidates])
    found: list[Instruction] = []
    seen: set[str] = set()
    for (piece, words), flag in zip(candidates, injected, strict=True):
        screened = piece.text == piece.text.strip()
        if (screened and flag) or not is_instruction(piece.text, screened=screened, words=words):
            continue
        key = " ".join(piece.text.lower().split())
        if key in seen:
            continue
        seen.add(key)
        found.append(Instruction(piece.item, piece.start, piece.end, piece.text))
    return found


def newest_that_fit(instructions: list, budget: int, cost) -> list:
    """As many of `instructions` (in the order given) as `budget` allows, newest first when they do not all
    fit; returned in their order."""
    chosen, spent = [], 0
    for instruction in reversed(instructions):
        price = cost(instruction)
        if spent + price > budget:
            continue
        chosen.append(instruction)
        spent += price
    return chosen[::-1]


VERBATIM_LINE_TOKENS = 3  # an instruction's line in the keep-verbatim block: its quotation marks and line break


def verbatim_instructions(items: Iterable, *, budget: int) -> list[str]:
    """The user's instructions in `items` (transcript items) that fit `budget` tokens, newest first when they do
    not all fit, in the order they were given: the "keep verbatim" block handed to a summarizing model."""
    from chatcore.tokens import estimate_tokens

    found = instructions_in((index, item.content) for index, item in enumerate(items) if item.role == "user")
    chosen = newest_that_fit(
        found, budget, lambda instruction: estimate_tokens(instruction.text) + VERBATIM_LINE_TOKENS
    )
    return [instruction.text for instruction in chosen]
