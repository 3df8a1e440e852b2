"""Reading a search box's text: words, "quoted phrases" and the dates it names.

Natural questions are welcome ("When did Caroline go to the support group in
May 2023?"): common English words are dropped (they would match everything),
what is left is matched as *any* of the words and ranked by how many and
how rare (chatcore.search.ranking). A month with a year or a day, or a year
alone, becomes a period that ranks messages of that time higher.
"""

from __future__ import annotations

import calendar
import dataclasses
import datetime as dt
import re

MAX_TERMS = 12
MAX_QUERY_CHARS = 500

# Common English words (the usual short list of text retrieval, plus question words).
STOP_WORDS = frozenset(
    """
i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers herself
it its itself they them their theirs themselves what which who whom whose this that these those am is are was were
be been being have has had having do does did doing a an the and but if or because as until while of at by for
with about against between into through during before after above below to from up down in out on off over under
again further then once here there when where why how all any both each few more most other some such no nor not
only own same so than too very s t can will just don should now d ll m o re ve y ain aren couldn didn doesn hadn
hasn haven isn ma mightn mustn needn shan shouldn wasn weren won wouldn would could might shall may also get got
""".split()
)

_WORD_RE = re.compile(r"[^\W_]+")
_PHRASE_RE = re.compile(r'"([^"]*)"')
_MONTHS = {name.lower(): number for number, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.lower(): number for number, name in enumerate(calendar.month_abbr) if name})
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DATE_RES = (
    # 8 May 2023, 8 May, 2023
    (re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTH})\.?,?\s+(\d{{4}})\b", re.I), ("day", "month", "year")),
    # May 8, 2023
    (re.compile(rf"\b({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I), ("month", "day", "year")),
    # May 2023
    (re.compile(rf"\b({_MONTH})\.?,?\s+(\d{{4}})\b", re.I), ("month", "year")),
    # 2023-05-08
    (re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b"), ("year", "month", "day")),
    # 2023
    (re.compile(r"\b(19\d\d|20\d\d)\b"), ("year",)),
)


@dataclasses.dataclass(frozen=True)
class Period:
    start: dt.date
    end: dt.date  # inclusive

    def holds(self, day: dt.date) -> bool:
        return self.start <= day <= self.end


@dataclasses.dataclass(frozen=True)
class ParsedQuery:
    text: str
    terms: tuple[str, ...]  # single words, lower-cased, stop words out, as typed (the engine stems)
    phrases: tuple[str, ...]  # quoted phrases, each matched as a whole
    periods: tuple[Period, ...]

    @property
    def units(self) -> tuple[str, ...]:
        """What is matched and weighed one by one: the words, then the phrases."""
        return self.terms + self.phrases

    @property
    def empty(self) -> bool:
        return not self.terms and not self.phrases


def _period(parts: dict[str, int]) -> Period | None:
    year = parts["year"]
    try:
        if "day" in parts:
            day = dt.date(year, parts["month"], parts["day"])
            return Period(day, day)
        if "month" in parts:
            last = calendar.monthrange(year, parts["month"])[1]
            return Period(dt.date(year, parts["month"], 1), dt.date(year, parts["month"], last))
        return Period(dt.date(year, 1, 1), dt.date(year, 12, 31))
    except ValueError:
        return None


def _periods(text: str) -> tuple[tuple[Period, ...], str]:
    """The periods named in `text`, and the text with the month names of those dates removed."""
    periods: list[Period] = []
    for pattern, names in _DATE_RES:

        def take(match: re.Match, names=names) -> str:
            parts = {}
            for name, value in zip(names, match.groups(), strict=True):
                parts[name] = _MONTHS[value.lower().rstrip(".")] if name == "month" else int(value)
            period = _period(parts)
            if period is not None and period not in periods:
                periods.append(period)
            return " " + str(parts["year"]) + " "

        text = pattern.sub(take, text) if names != ("year",) else text
        if names == ("year",) and not periods:
            for match in pattern.finditer(text):
                period = _period({"year": int(match.group(1))})
                if period is not None and period not in periods:
                    periods.append(period)
    return tuple(periods), text


def parse_query(text: str, *, stop_words: frozenset[str] = STOP_WORDS) -> ParsedQuery:
    text = (text or "")[:MAX_QUERY_CHARS]
    phrases: list[str] = []
    for match in _PHRASE_RE.finditer(text):
        words = _WORD_RE.findall(match.group(1).lower())
        if len(words) > 1 and " ".join(words) not in phrases:
            phrases.append(" ".join(words))
        elif len(words) == 1:
            text += f" {words[0]}"
    rest = _PHRASE_RE.sub(" ", text)
    periods, rest = _periods(rest)
    terms: list[str] = []
    for word in _WORD_RE.findall(rest.lower()):
        if word in stop_words or word in terms or (len(word) == 1 and not word.isdigit()):
            continue
        terms.append(word)
    budget = MAX_TERMS - len(phrases[:MAX_TERMS])
    return ParsedQuery(
        text=text.strip(), terms=tuple(terms[: max(budget, 0)]), phrases=tuple(phrases[:MAX_TERMS]), periods=periods
    )
