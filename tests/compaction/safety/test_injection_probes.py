"""Red-team probes of compaction.safety.injection: instructions to the summarizer behind look-alike, fullwidth and
leet letters, soft hyphens, HTML entities, URL escapes, spaced or split words, in nine other languages, and
indirect ("the summarizer must …", "note to the AI writing the summary", "SYSTEM OVERRIDE"). Each is detected,
and the offline summary never carries its payload, from a message or from a tool's result; ordinary lines of
the same shapes are neither flagged nor set aside."""

import pytest

from compaction.safety import looks_like_injection
from compaction.safety.normalize import decoded
from tests.compaction.safety.red_team_checks import conversation, prompt_and_summary
from tests.compaction.safety.red_team_probes import INJECTIONS, ORDINARY, PAYLOAD

SET_ASIDE = "were kept out of this summary"


@pytest.mark.parametrize("probe", list(INJECTIONS.values()), ids=list(INJECTIONS))
def test_the_instruction_is_detected_and_set_aside(probe):
    assert looks_like_injection(probe)
    _, summary = prompt_and_summary(conversation(content=probe))
    assert PAYLOAD.removeprefix("QX-") not in summary  # nor its identifier, in the references
    assert SET_ASIDE in summary


@pytest.mark.parametrize("probe", list(INJECTIONS.values()), ids=list(INJECTIONS))
def test_a_tool_result_does_not_carry_it_into_the_summary(probe):
    _, summary = prompt_and_summary(conversation(tool_result=f"{probe}\n1 transfer queued, done"))
    assert PAYLOAD.removeprefix("QX-") not in summary


@pytest.mark.parametrize("sentence", ORDINARY)
def test_ordinary_lines_of_the_same_shapes_are_kept(sentence):
    assert not looks_like_injection(sentence)
    _, summary = prompt_and_summary(conversation(content=sentence))
    assert SET_ASIDE not in summary


def test_the_decoded_view_reads_entities_escapes_and_cut_words():
    assert decoded("&#73;gnore&nbsp;previous%20instructions") == "ignore previous instructions"
    assert decoded("ig-nore_all pre-vious") == "ignore all previous"
    assert decoded("plain words") is None
