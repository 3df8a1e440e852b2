"""Next actions with owners and deadlines (Actionable), and the references section.

An action is a sentence of the newer part of the conversation that says
what comes next ("I will add a signal handler", "Remaining before
production: … a sign-off from the accounting team") or an instruction of the
user's still ahead of the conversation's end. Its owner is read from the
sentence: someone named ("from the accounting team"), the speaker ("I
will"), both ("we need to"), or the one addressed ("can you", "please" —
for the user's instructions, the assistant). Its deadline is the time
expression that bounds it ("before production", "by Friday"), with the
calendar date when it is relative. Owners and deadlines are the
summarizer's reading and stand outside the quotation marks.
"""

from __future__ import annotations

from collections import Counter

from compaction import references as reference_rules
from compaction.dates import date_anchors
from compaction.summarizers.offline import patterns
from compaction.summarizers.offline.entries import Entry, code
from compaction.summarizers.offline.sections import Analysis, _entry, _ranked
from compaction.summarizers.offline.select import PER_TOKEN_PAD, within
from compaction.summarizers.offline.units import Unit
from compaction.transcript import addresses_model

REFERENCE_MESSAGES = 400
# Actions come from the newest quarter of the messages (at least 12, at most 400; see Analysis.recent_from); an
# instruction of the user's counts as pending only from its newest tenth (at least 6, at most 80); at most
# ACTION_LINES.
ACTIONS_RECENT = (0.25, 12, 400)
PENDING_INSTRUCTIONS_RECENT = (0.1, 6, 80)
ACTION_LINES = 8


def _other_party(analysis: Analysis, unit: Unit) -> str:
    for candidate in analysis.units[::-1]:
        if candidate.speaker != unit.speaker and candidate.role in ("user", "assistant"):
            return candidate.speaker
    return "the other side"


def owner(analysis: Analysis, unit: Unit) -> str:
    named = patterns.NAMED_OWNER_RE.search(unit.text)
    if named:
        return f"the {named.group(1)}" if named.group(1).islower() else named.group(1)
    if patterns.OWNER_SELF_RE.search(unit.text):
        return unit.speaker
    if patterns.FORMS["owner_team"].search(unit.text):
        return "both"
    if patterns.FORMS["owner_other"].search(unit.text) or (unit.role == "user" and "instruction" in unit.flags):
        return _other_party(analysis, unit)
    return unit.speaker


def deadline(unit: Unit) -> str:
    match = patterns.FORMS["deadline"].search(unit.text)
    if not match:
        return ""
    said = match.group(0)
    anchors = date_anchors(said, said_on=unit.said_on) if unit.said_on else []
    return said + "".join(f" [{anchor}]" for _, anchor in anchors)


def actions(analysis: Analysis, budget: float, used: set[int]) -> list[Entry]:
    """A checklist of what comes next, newest exchanges first, each with its owner and deadline."""
    start = analysis.recent_from(*ACTIONS_RECENT)
    entries = []
    for unit in analysis.units:
        if unit.item < start or id(unit) in used or unit.role not in ("user", "assistant"):
            continue
        pending = "next" in unit.flags or (
            "instruction" in unit.flags and unit.item >= analysis.recent_from(*PENDING_INSTRUCTIONS_RECENT)
        )
        if not pending or ("question" in unit.flags and "open" not in unit.flags):
            continue
        due = deadline(unit)
        tail = f"— owner: {owner(analysis, unit)}" + (f"; due: {due}" if due else "")
        entry = _entry([unit], analysis, tail=tail)
        entry.checkbox = True
        entry.value *= 1.0 + (unit.item - start) / max(1, len(analysis.items) - start)
        entries.append(entry)
    return within(_ranked(entries), budget)[:ACTION_LINES]


CODE_CHARS_PER_TOKEN = 3  # a references line (paths, identifiers) tokenizes denser than prose


def references(analysis: Analysis, budget: float, used: set[int]) -> list[Entry]:
    """Files, URLs, commands and identifiers that are what they say, the most mentioned first."""
    kinds: dict[str, Counter] = {"Files": Counter(), "URLs": Counter(), "Commands": Counter(), "Identifiers": Counter()}
    # Mentions are counted in the newest REFERENCE_MESSAGES messages (what the work stands on now), so that a
    # long history does not make this section cost more than the rest of the summary.
    for item in analysis.items[-REFERENCE_MESSAGES:]:
        if addresses_model(item):
            continue  # set aside: what it names is the payload of an injection, not a reference
        texts = [call.get("arguments", "") for call in item.tool_calls]
        if item.role in ("user", "assistant"):
            texts.append(item.content)
        for text in texts:
            _count(kinds, text)
    for attempt in analysis.attempts:
        if reference_rules.is_command(attempt.arguments):
            kinds["Commands"][attempt.arguments] += 1
    entries = []
    for label, counter in kinds.items():
        values = _varied(sorted(counter.items(), key=lambda pair: (-pair[1], pair[0])))
        if values:
            text = f"{label}: " + ", ".join(code(value) for value in values)
            entries.append(
                Entry(carried=text, value=float(len(values)), tokens=len(text) // CODE_CHARS_PER_TOKEN + PER_TOKEN_PAD)
            )
    return within([(e.value, e.tokens, e) for e in entries], budget)


REFERENCES_PER_KIND = 6  # the most mentioned files, URLs, commands or identifiers: this many of each kind
REFERENCES_PER_PLACE = 2  # of them, at most this many from one directory or site, so one folder cannot fill it


def _varied(ranked: list[tuple[str, int]]) -> list[str]:
    """The most mentioned values, a few from any one directory or site."""
    chosen: list[str] = []
    places: Counter = Counter()
    for value, _ in ranked:
        place = value.split("://")[-1].split("/")[0] if "/" in value else ""
        if place and places[place] >= REFERENCES_PER_PLACE:
            continue
        places[place] += 1
        chosen.append(value)
        if len(chosen) == REFERENCES_PER_KIND:
            break
    return chosen


def _count(kinds: dict[str, Counter], text: str) -> None:
    from compaction import lexicon

    if not text:
        return
    urls = lexicon.URL_RE.findall(text) if "://" in text else []
    kinds["URLs"].update(urls)
    without_urls = lexicon.URL_RE.sub(" ", text) if urls else text
    files = reference_rules.find_files(without_urls)
    kinds["Files"].update(files)
    kinds["Commands"].update(reference_rules.find_commands(text))
    bare = without_urls
    for path in files:
        bare = bare.replace(path, " ")
    kinds["Identifiers"].update(reference_rules.find_identifiers(bare))
