"""How much of a conversation a context still supports: the LoCoMo fidelity metric.

LoCoMo (Maharana et al., "Evaluating Very Long-Term Conversational Memory of
LLM Agents", ACL 2024) pairs very long two-person conversations with
question–answer annotations. The metric here needs no model to grade: a
question is *supported* by a context when one line of it contains every
content word of the answer and at least one content word of the question.
Content words are the lower-cased runs of letters and digits, minus common
English stop words and the two speakers' names (which occur everywhere and
would make any line look relevant). Only categories 1–4 count (multi-hop,
temporal, open-domain, single-hop); category 5 is adversarial, its answers
are absent from the conversation by design.

A line that holds every needed word also holds them in each of its
sentences' union, so checking lines is the same as checking "a line or a
sentence". A question whose answer has no content word left ("No", "Yes"
spelled as a stop word) cannot be judged this way; it is counted apart as
unmeasurable and left out of the rate, for every context alike.

The annotations are read here and only here: the summarizer never sees them.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable

CATEGORIES = (1, 2, 3, 4)

# Common English stop words (the usual short list used in text retrieval).
STOP_WORDS = frozenset(
    """
i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers herself
it its itself they them their theirs themselves what which who whom this that these those am is are was were be
been being have has had having do does did doing a an the and but if or because as until while of at by for with
about against between into through during before after above below to from up down in out on off over under
again further then once here there when where why how all any both each few more most other some such no nor not
only own same so than too very s t can will just don should now d ll m o re ve y ain aren couldn didn doesn hadn
hasn haven isn ma mightn mustn needn shan shouldn wasn weren won wouldn
""".split()
)

_WORD_RE = re.compile(r"[^\W_]+")


def metric_words(text: object, excluded: frozenset[str] = frozenset()) -> frozenset[str]:
    return frozenset(w for w in _WORD_RE.findall(str(text).lower()) if w not in STOP_WORDS and w not in excluded)


def speaker_words(*names: str) -> frozenset[str]:
    return frozenset(w for name in names for w in _WORD_RE.findall(name.lower()))


@dataclasses.dataclass(frozen=True)
class Question:
    question: str
    answer: str
    category: int
    question_words: frozenset[str]
    answer_words: frozenset[str]

    @property
    def measurable(self) -> bool:
        return bool(self.answer_words) and bool(self.question_words)


@dataclasses.dataclass(frozen=True)
class Rate:
    supported: int
    measured: int

    @property
    def rate(self) -> float:
        return self.supported / self.measured if self.measured else 0.0


def locomo_questions(data: dict) -> list[Question]:
    """The measurable-or-not questions of categories 1–4 of one LoCoMo conversation."""
    names = speaker_words(data.get("speaker_a", ""), data.get("speaker_b", ""))
    questions = []
    for entry in data.get("qa", []):
        category = entry.get("category")
        if category not in CATEGORIES or "answer" not in entry:
            continue
        answer = str(entry["answer"])
        questions.append(
            Question(
                entry["question"], answer, category, metric_words(entry["question"], names), metric_words(answer, names)
            )
        )
    return questions


def is_supported(question: Question, lines: Iterable[frozenset[str]]) -> bool:
    if not question.measurable:
        return False
    return any(question.answer_words <= words and not question.question_words.isdisjoint(words) for words in lines)


def supported_rate(questions: list[Question], lines: list[str], names: frozenset[str] = frozenset()) -> Rate:
    """Supported questions among the measurable ones, for a context given as its lines."""
    line_words = [metric_words(line, names) for line in lines if line.strip()]
    measured = [q for q in questions if q.measurable]
    return Rate(sum(1 for q in measured if is_supported(q, line_words)), len(measured))


def context_lines(messages: list[dict]) -> list[str]:
    """A model's context as plain lines: a message is one line, a summary one line per line of it."""
    lines = []
    for message in messages:
        content = message.get("content") or ""
        if message.get("summary"):
            lines.extend(line for line in content.splitlines() if line.strip())
        else:
            flat = " ".join(content.split())
            if flat:
                lines.append(flat)
    return lines
