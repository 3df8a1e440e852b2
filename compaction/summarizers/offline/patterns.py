"""The forms of speech each hand-over section looks for.

Plain regular expressions over single sentences, read before any selection:
what someone asked for (the goal), what was settled and by whom, what comes
next and who does it, what is still open, and what stands in the way.
"""

from __future__ import annotations

import re

from compaction.safety.first_pass import AsciiTwin

# The forms of speech, by name; every one read ignoring case.
_SOURCES = {
    # What the user wants to achieve: a wish, a need, a target or a request for the work, not small talk.
    "goal": (
        r"\b(?:I (?:want|need|would like|'d like|am trying|'m trying|hope|plan|intend|mean) to|we (?:need|want|have|"
        r"are trying|'re trying|must|plan|intend) to|(?:my|our) (?:goal|aim|plan|target|dream|mission) is|the (?:goal|"
        r"aim|target|plan|point|idea) is|goal:|target:|objective:|help me|so that|in order to|(?:still )?needs? for|"
        r"trying to (?:get|make|build|finish|ship|reach)|aiming (?:for|to)|working towards?)\b"
    ),
    "decision": (
        r"(?:\bdecision:|\b(?:decided|decide to|we(?:'ll| will) (?:go with|use|keep|stay|switch|drop)|let's go with|"
        r"going with|agreed|we agree|settled on|chose|chosen|choose to|opted|approved|(?:we|I|they) rejected|"
        r"ruled out|stick with|recorded in|(?:the )?plan is|we will not|we won't|stay on)\b)(?![^.?!]*\?)"
    ),
    "explicit_decision": (
        r"^(?:decision|decided|resolution|verdict)\b|\b(?:we|I) (?:decided|agreed|chose|settled on)\b|"
        r"\blet's go with\b|\bdecision (?:recorded|made|taken)\b|\b(?:accepted|approved)\b"
    ),
    "agreement": (
        r"^(?:agreed|yes|yep|ok(?:ay)?|sounds good|makes sense|fair|good|great|perfect|do it|go ahead|approved|"
        r"fine|let's do (?:it|that))\b"
    ),
    "proposal": (
        r"\b(?:propos(?:e|ed|al)|plan|suggest|recommend|I would|I'd|we could|we should|should we|the fix is|"
        r"here is|option)\b"
    ),
    "rejected": (
        r"\b(?:rejected|ruled out|dropped|instead of|not worth|decided against|won't|will not|would not|unlikely|"
        r"forget it|no longer|stay on|rather than)\b"
    ),
    "next": (
        r"\b(?:next steps?|remaining|still (?:need|needs|to do|open|missing)|to do|todo|left to|"
        r"I(?:'ll| will| am going to|'m going to)|we(?:'ll| will| need to| have to| must)|you (?:need|have) to|"
        r"needs? to|going to|plan to|before (?:production|release|launch|the)|waiting (?:for|on)|blocked|pending|"
        r"follow[- ]up|tomorrow|next week|by (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|the end|eod|"
        r"tonight)|deadline|due)\b"
    ),
    "state": (
        r"\b(?:now|currently|is (?:at|on|in|green|red|done|ready|live|up|down)|are (?:green|red|done|ready)|reports?|"
        r"passes|passed|pass|fails?|failed|works|working|done|complete(?:d)?|finished|deployed|released|merged|"
        r"pushed|green|red|status|stands|so far|at the moment|as of)\b"
    ),
    "open": (
        r"\b(?:open questions?|unresolved|undecided|not (?:yet )?(?:decided|known)|(?:is|are|remains?|still) "
        r"(?:unknown|unclear|open|undecided)|tbd|to be decided|we don't know yet|no answer yet|questions? for later|"
        r"needs? an answer|the answer to|sign-off|sign off)\b"
    ),
    "blocker": (
        r"\b(?:blocked|blocker|blocking|waiting (?:for|on)|risk|risky|can't|cannot|unable|fails?|failed|failing|"
        r"error|broken|regression|outage|depends on)\b"
    ),
    "deadline": (
        r"\b(?:by|before|until|no later than|due|deadline:?)\s+(?:the\s+)?(?:end of \w+|\w+day|tomorrow|tonight|"
        r"next \w+|\d{1,2}(?:st|nd|rd|th)?(?: \w+)?|[A-Z][a-z]+ \d{1,2}|production|release|launch|the release|"
        r"the launch|eod|eow)"
        r"|\b(?:tomorrow|tonight|next week|this week|this weekend|next month)\b"
    ),
    "owner_team": r"\bwe(?:'ll| will| need to| have to| must| should)\b",
    "owner_other": r"\b(?:you(?:'ll| will| need to| have to| should| must)|can you|could you|please)\b",
}
FORMS = {name: re.compile(source, re.IGNORECASE) for name, source in _SOURCES.items()}
# The forms every unit is flagged with (units._flags), in the order they are looked for.
FLAGS = ("goal", "decision", "rejected", "next", "state", "open", "blocker")
# Each flag's RE2 twin, read on ASCII text (every pattern but the decision's, which has a lookahead).
FLAG_TWINS = {flag: AsciiTwin(FORMS[flag]) for flag in FLAGS if flag != "decision"}
# Each flag's search (in RE2 on ASCII text where the pattern has no lookaround): every unit asks each one.
FLAG_SEARCHES = {flag: FLAG_TWINS[flag].search if flag in FLAG_TWINS else FORMS[flag].search for flag in FLAGS}
# Read with case: the speaker's own "I", and a named owner's capitals.
OWNER_SELF_RE = re.compile(r"\bI(?:'ll| will| am going to|'m going to| can| shall)\b")
NAMED_OWNER_RE = re.compile(
    r"\b(?:from|by|owner:?|assigned to|owes?|ask) (?:the )?([A-Z][\w-]+(?: [A-Z][\w-]+)?|[a-z]+ team)\b"
)


def _hints(words: str) -> frozenset[str]:
    return frozenset(words.split())


# Every match of a pattern contains one of its hint words: a sentence without any is not searched at all.
HINTS = {
    "goal": _hints(
        "want need needs like i'd we're i'm trying hope plan intend mean goal aim target dream mission point idea "
        "objective help so order aiming working must have"
    ),
    "decision": _hints(
        "decision decided decide go use keep stay switch drop going agreed agree settled chose chosen choose opted "
        "approved rejected ruled stick recorded plan not won't"
    ),
    "rejected": _hints(
        "rejected ruled dropped instead worth against won't will would unlikely forget longer stay rather"
    ),
    "next": _hints(
        "next remaining still do todo left i'll will going we'll need have must needs plan before waiting blocked "
        "pending follow tomorrow week monday tuesday wednesday thursday friday saturday sunday end eod tonight "
        "deadline due"
    ),
    "state": _hints(
        "now currently is are reports report passes passed pass fails fail failed works working done complete "
        "completed finished deployed released merged pushed green red status stands so at as"
    ),
    "open": _hints(
        "open questions question unresolved undecided decided known unknown unclear tbd know answer later sign"
    ),
    "blocker": _hints(
        "blocked blocker blocking waiting risk risky can't cannot unable fail fails failed failing error broken "
        "regression outage depends"
    ),
}
