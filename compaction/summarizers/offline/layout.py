"""How a profile shapes the offline summary: which sections, in which order, with what share of the budget.

Each built-in profile has its own rendering: Structured (the hand-over
sections), Brief (the few lines that matter), Detailed (a day-by-day account
with more coverage), Actionable (a checklist of next actions with owners
and deadlines, open questions, blockers, the decisions to respect). A
custom profile's section headings, as written in its template, become the
offline sections, each filled by the selector its words name ("Risks" →
blockers, "Next steps" → next actions, "Background" → key facts); a heading
that names nothing known gets the facts that mention its words. What the
extractive method cannot do — prose instructions such as a word limit, a
tone or a language — is said plainly by `offline_notes`, which the
summarize panel and the admin show.
"""

from __future__ import annotations

import dataclasses
import re

from compaction import lexicon

# Selector kinds (what fills a section).
INSTRUCTIONS = "instructions"
GOAL = "goal"
DECISIONS = "decisions"
REJECTED = "rejected"
DONE = "done"
FACTS = "facts"
STATE_NEXT = "state_next"
STATE = "state"
ACTIONS = "actions"
QUESTIONS = "questions"
BLOCKERS = "blockers"
REFERENCES = "references"
ACCOUNT = "account"  # Detailed: facts and tool outcomes together, day by day
KINDS = (
    INSTRUCTIONS,
    GOAL,
    DECISIONS,
    REJECTED,
    DONE,
    FACTS,
    STATE_NEXT,
    STATE,
    ACTIONS,
    QUESTIONS,
    BLOCKERS,
    REFERENCES,
    ACCOUNT,
)
ELASTIC = (FACTS, ACCOUNT)  # take what the other sections leave
DEFAULT_SHARE = 0.15  # the most of the budget a section may take when nothing says otherwise
# The share of each kind of section in a layout drawn from a custom template's headings (and the verbatim
# instructions' share wherever the profile's option adds them).
_SHARES = {
    INSTRUCTIONS: 0.25,
    GOAL: 0.1,
    DECISIONS: 0.15,
    REJECTED: 0.1,
    DONE: 0.2,
    STATE: 0.15,
    STATE_NEXT: 0.15,
    ACTIONS: 0.3,
    QUESTIONS: 0.1,
    BLOCKERS: 0.12,
    REFERENCES: 0.1,
}
DAY_LINE_LIMIT = 400  # a day of key facts is one line (its date beside each of them) up to this long


@dataclasses.dataclass(frozen=True)
class Section:
    title: str
    kind: str
    share: float = DEFAULT_SHARE  # the most of the budget it may take (elastic sections take the rest)
    words: frozenset[str] = frozenset()  # a custom heading's own words, for a facts section


@dataclasses.dataclass(frozen=True)
class Layout:
    name: str
    sections: tuple[Section, ...]
    line_tokens: int = DAY_LINE_LIMIT
    notes: tuple[str, ...] = ()

    def with_instructions(self, keep: bool) -> Layout:
        """The layout with (or without) the verbatim user-instructions section, which the profile option sets."""
        has = any(section.kind == INSTRUCTIONS for section in self.sections)
        if keep == has:
            return self
        if not keep:
            return dataclasses.replace(self, sections=tuple(s for s in self.sections if s.kind != INSTRUCTIONS))
        position = 1 if self.sections and self.sections[0].kind == GOAL else 0
        sections = list(self.sections)
        sections.insert(position, Section("User instructions (verbatim)", INSTRUCTIONS, _SHARES[INSTRUCTIONS]))
        return dataclasses.replace(self, sections=tuple(sections))


def _builtin(name: str, table: str, line_tokens: int = DAY_LINE_LIMIT) -> Layout:
    """A built-in layout from its table: a section a line, `title | kind | share of the budget` (an elastic
    section has no share: it takes what the others leave)."""
    sections = []
    for line in table.strip().splitlines():
        title, kind, *share = (cell.strip() for cell in line.split("|"))
        if kind not in KINDS:
            raise ValueError(f"The {name} layout names an unknown kind of section: {kind!r}")
        sections.append(Section(title, kind, float(share[0])) if share else Section(title, kind))
    return Layout(name, tuple(sections), line_tokens=line_tokens)


STRUCTURED = _builtin(
    "structured",
    """
    Goal | goal | 0.08
    User instructions (verbatim) | instructions | 0.2
    Decisions | decisions | 0.12
    Done and tried | done | 0.2
    Key facts by day | facts
    Current state and next steps | state_next | 0.15
    Open questions | questions | 0.08
    Files, commands and identifiers | references | 0.12
    """,
)
BRIEF = _builtin(
    "brief",
    """
    Goal | goal | 0.15
    Settled | decisions | 0.15
    Key points | facts
    Where it stands | state_next | 0.3
    """,
    line_tokens=90,
)
DETAILED = _builtin(
    "detailed",
    """
    Goal | goal | 0.06
    User instructions (verbatim) | instructions | 0.2
    Account by day | account
    Decisions | decisions | 0.12
    Rejected and why | rejected | 0.06
    Open questions | questions | 0.08
    Where it stands | state_next | 0.12
    Files, commands and identifiers | references | 0.1
    """,
    line_tokens=220,
)
ACTIONABLE = _builtin(
    "actionable",
    """
    Next actions | actions | 0.35
    Open questions | questions | 0.15
    Blockers and risks | blockers | 0.15
    Decisions to respect | decisions | 0.15
    Done | done | 0.2
    Background | facts
    """,
    line_tokens=90,
)
BUILTIN_LAYOUTS = {layout.name: layout for layout in (STRUCTURED, BRIEF, DETAILED, ACTIONABLE)}

# A heading's words → the selector that fills it; the first rule that matches wins.
_HEADING_RULES: tuple[tuple[str, str], ...] = (
    (r"instruction|constraint|rule|requirement|preference|verbatim", INSTRUCTIONS),
    (r"goal|objective|aim|purpose|mission|intent|trying to|what .* wants?", GOAL),
    (r"reject|dropped|dead end|ruled out|not to do|discarded|abandoned", REJECTED),
    (r"decision|decided|agreed|settled|choice|respect", DECISIONS),
    (r"next|action|to ?do|task|plan|follow", ACTIONS),
    (r"blocker|risk|issue|problem|concern|obstacle|danger", BLOCKERS),
    (r"question|open|unresolved|unknown|uncertain|unclear|undecided", QUESTIONS),
    (r"state|status|where|stands|current|progress|now", STATE),
    (r"tried|done|attempt|experiment|complete|outcome|result|log|what happened|work", DONE),
    (r"file|reference|link|url|path|command|identifier|resource|artifact|source|code", REFERENCES),
    (r"timeline|history|chronolog|fact|event|point|summary|note|detail|background|context|account|highlight", FACTS),
)
_HEADING_LINE_RE = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$|^\s{0,3}\*\*([^*\n]{2,80})\*\*:?\s*$", re.MULTILINE)


def template_headings(template: str) -> list[str]:
    """The section headings a template asks for, in order (Markdown headings or bold lines)."""
    headings = []
    for match in _HEADING_LINE_RE.finditer(template or ""):
        title = (match.group(1) or match.group(2) or "").strip().rstrip(":")
        if title and "{" not in title and title not in headings:
            headings.append(title)
    return headings


def heading_kind(title: str) -> str | None:
    lowered = title.lower()
    for pattern, kind in _HEADING_RULES:
        if re.search(pattern, lowered):
            return kind
    return None


MAX_CUSTOM_SECTIONS = 12  # a template's first headings become sections; more would leave each too little room


def custom_layout(template: str) -> Layout | None:
    """The layout a custom template's headings ask for; None when it has no headings."""
    headings = template_headings(template)
    if not headings:
        return None
    sections = []
    for title in headings[:MAX_CUSTOM_SECTIONS]:
        kind = heading_kind(title) or FACTS
        words = frozenset(lexicon.content_words(title)) if kind == FACTS else frozenset()
        sections.append(Section(title, kind, _SHARES.get(kind, DEFAULT_SHARE), words))
    if not any(section.kind in ELASTIC for section in sections):
        # Something has to take what the selectors leave: the last section's own selector cannot grow, so
        # the facts join the section that reads most like them, else the end.
        sections.append(Section("Key facts", FACTS))
    return Layout("custom", tuple(sections))
