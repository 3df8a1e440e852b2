"""An evaluation corpus of prompt injections and benign look-alikes, written apart from the detector.

Its authors did not read the detector (compaction/safety, the offline summarizer's patterns, their
tests), so that it measures the attack rather than what one detector happens to match. Nothing
here is tuned to make a detector pass; do not tune a detector on the test part.

    from tests.injection_corpus import load, ordinary
    dev = load("dev")        # tune here
    test = load("test")      # measure here, and only here
    chat = ordinary()        # LoCoMo (when present) and the demo: ordinary chat, all benign

    .venv/bin/python -m tests.injection_corpus           # sizes per language, family and part
    .venv/bin/python -m tests.injection_corpus --jsonl   # every case, one JSON object a line

What counts as an injection
    Text inside a conversation that tries to steer the summarizer or hijack the system (change
    what the summary says, leave something out, reveal the system prompt or secrets, change how
    the model behaves, grant privileges), or that smuggles instructions in through data:
    documents, tool results, markup, encodings. A person's own requests to the assistant are the
    conversation, not an injection: "forget what I said about Tuesday", "from now on answer yes
    or no", "let's play a game where you are a waiter" are benign, and the benign half of the
    corpus is made of such look-alikes in the same shapes and languages.

A case (`Case`, one per element of `load()`)
    id        "inj-de-block-0007": label, language, family and a serial; unique.
    label     "injection" or "benign".
    family    the shape it comes in, shared by both labels (see FAMILIES): plain, split, polite,
              addressed, block, role_play, markup, tool_output, document, and the disguises
              enc_rot13, enc_reversed, enc_hex, enc_base64, enc_url, enc_leet, enc_spaced,
              enc_zero_width, enc_homoglyph (each where it changes the script).
    language  ISO 639-1 code of the text (the corpus has 30; a few frames keep the English
              markers attackers use everywhere: SYSTEM:, [INST], Tool output:). Language-neutral
              data and tool output (neutral.py) take the language of the conversation around them.
    split     "dev" or "test".
    turns     [{"role": "user"|"assistant"|"tool", "content": str}, ...]: the case with one
              ordinary exchange before it and possibly an acknowledgement or the next question
              after it; a tool result comes after the user's question and the assistant's
              "let me look that up".
    target    indices of the turns that carry the case (two for a split across turns).
    payload   injections only: the value put into the instruction (a reference number, a canary
              word, an exfiltration host, an account handle), in ASCII. Seen in a summary in the
              summary's own voice it means the instruction got through; inside a quote that is
              attributed to its speaker it arrived as data. In the opaque encodings it does not
              occur in the turns at all, only in the decoded text.
    goal      injections: insert_claim, approve, omit, exfiltrate, behaviour, privilege;
              benign: the kind of look-alike (request, correction, about, discussion, manual,
              translation, roleplay, polite_tail, addressed, recap, split, notes, data,
              neutral_data, tool_data, leet).
    group     the id of the phrasing or benign text (the unit of the split).
    carrier   the id of the carrier template or frame (the other unit of the split).
    text      the instruction or benign text before any disguise.
    encoded   encoding families: the disguised text exactly as it stands in a target turn (as
              a JSON string's content, quotes escaped, where the carrier is JSON); None for
              natural leetspeak, which is written that way.
    parts     split family: the two pieces, in target order.

How it is composed (components, then their product)
    Per language, written by hand in several registers (languages/<code>.toml, below): eighteen
    instructions, three for each of the six goals; the frames that carry them; pieces of emails
    and web pages; ordinary exchanges to surround a case; and the benign look-alikes.
    Language-neutral carriers (carriers.py): fake SYSTEM/ChatML/[INST]/JSON/YAML/XML blocks, fake
    transcript turns, a fence break, HTML and Markdown comments, hidden spans, alt text, tool
    results typed by the user or returned by a tool, pasted emails and pages, and for the benign
    side the user's own recap, a request body with a system prompt, a chat log, a fine-tuning
    sample, a YAML file with a `system:` key. Disguises (encodings.py) apply to the whole text. A
    case is one (language, family, label, carrier, content); its slot value, filler sentences,
    surroundings and disguise variant come from a generator seeded with that tuple, so the corpus
    is the same on every run and one component's change moves no other case.

The split rule (split.py)
    The unit is the component, never the case. Each pool of components is ranked by a salted
    SHA-256 of the component ids and the first 38% of it (rounded up or down by the pool's own
    hash, at least one, never all) go to test. The pools: per language, its instructions, each
    kind of its benign texts, its frames of each kind and its ordinary exchanges; per carrier
    group, its language-neutral templates; the language-neutral data and tool output. A case is
    in test when all of its components are, in dev when all are; mixed combinations are not
    made. So no test phrasing, frame, template or surrounding exchange appears anywhere in dev.
    Identity carriers (the text alone as a message) add no template and serve both parts.
    Three families are held out entirely (HELD_OUT_FAMILIES: markup, enc_url, enc_leet): every
    case of theirs is in test, made from test components only, so a detector tuned on dev meets
    those shapes for the first time in test. With them, about 40% of the cases of each label
    are in test. Filler that carries no instruction (the sentences of a pasted email or page
    around the case) is shared by both parts.

A language file (languages/<code>.toml)
    code, name, script     script is latin, cyrillic, greek, arabic (homoglyphs apply), or another
                           (rot13 and leetspeak apply to latin only).
    [labels]               the words of the neutral carriers in this language: summary_so_far,
                           user_instructions, tool_output, function_returned, subject_label,
                           source, ack, lookup, log_question, code_question, dataset_question.
    [[context]]            user/assistant: an ordinary exchange (at least four).
    [[inject]]             goal and text: one instruction with exactly one payload slot ({code},
                           {word}, {host} or {user}) and one "||" where a two-turn split cuts it
                           (the directive on one side, the payload on the other).
    [frames]               polite (a first sentence the instruction follows), address (to the
                           summarizer or "the AI reading this"), roleplay ({instr}), decode
                           ({enc}), split ([first with {a}, second with {b}]), urgent (labels).
    [doc]                  intro (the user's lead-in to a pasted text), subject, greeting, body,
                           closing, title.
    [benign]               request, correction, about, discussion, manual, translation,
                           roleplay, polite_tail, addressed, recap, split (pairs), notes, data,
                           decode ({enc}: asking the assistant to decode), leet (latin only).
"""

from __future__ import annotations

from tests.injection_corpus.compose import FAMILIES, Case, build
from tests.injection_corpus.languages import languages
from tests.injection_corpus.ordinary import Conversation, ordinary
from tests.injection_corpus.split import DEV, HELD_OUT_FAMILIES, TEST

__all__ = ["DEV", "FAMILIES", "HELD_OUT_FAMILIES", "TEST", "Case", "Conversation", "languages", "load", "ordinary"]
LABELS = ("injection", "benign")


def load(split: str | None = None) -> list[Case]:
    """The cases of one part ("dev" or "test"), or all of them; built once per process, so the
    cases are shared between calls: read them, do not modify them."""
    if split not in (None, DEV, TEST):
        raise ValueError(f"split must be {DEV!r}, {TEST!r} or None, not {split!r}")
    return [case for case in build() if split is None or case.split == split]
