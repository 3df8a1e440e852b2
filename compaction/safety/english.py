"""Phrasings in English of text that addresses a summarizer or a model instead of the other person.

Matched against the folded text (`normalize.fold`: lower case, no accents,
no hidden characters). The families, each a shape rather than a sentence:
overriding what the model was told ("ignore the previous instructions"),
giving it a new role or rules ("you are now …", "new instructions"),
dictating the summary ("the summary must say …", "the final summary is
required to list …"), addressing it while it reads ("note to the AI
summarizing this", "when you summarize, state that …"), asking it to reveal
what it holds, and markup that opens a turn or a system message (chat
template tokens, a line shaped like the transcript's own turn labels).
"""

from __future__ import annotations

import re

_SUMMARY_NOUN = (
    r"(?:summary|summaries|summariser|summarizer|recap|hand-?over|tl;?dr|write-?up|digest|synopsis|compaction)"
)
_STATE_VERB = (
    r"(?:say|state|list|include|contain|mention|read|report|claim|note|show|record|confirm|indicate|declare|"
    r"assert|name|describe|present|highlight|emphasi[sz]e|begin|start|end|open|close)"
)
_MODEL = r"(?:ai|a\.i\.|bot|model|llm|assistant|summari[sz]er|language model|chatbot|agent|gpt|chatgpt|claude)"

INJECTION_RE = re.compile(
    # "ignore my previous message" corrects oneself; it is not an injection
    r"(?:ignore|disregard|forget|override|bypass|skip)\b(?!\s+(?:my|our)\b)[^.\n]{0,40}\b(?:previous|prior|above|"
    r"earlier|all|any|"
    r"your|the|these|those)\b[^.\n]{0,30}\b(?:instructions?|prompts?|rules?|directions?|guidelines?|guidance|"
    r"directives?|orders|commands|programming|context|messages?|system|task|role)"
    r"|\b(?:ignore|disregard|forget)\s+(?:everything|all|anything)\s+(?:above|before|previous|prior|earlier|"
    r"you were told)\b"
    r"|\[\s*(?:system|admin|developer|operator)\b[^\]\n]{0,30}\]"
    r"|\b(?:ai|bot|model|assistant|summari[sz]er)\s*,\s*(?:translate|rewrite|write|say|output|print|reply|respond|"
    r"summari[sz]e|ignore|forget|include|append|begin|start|replace)\b"
    r"|\b(?:translate|rewrite|replace|begin|start|end|prefix)\b[^.\n]{0,15}\b(?:the|this|your) (?:summary|recap|"
    r"output|response|answer)\b"
    r"|\b(?:the|this|your) (?:summary|summariser|summarizer|recap|tl;?dr|compaction|output|response|answer)\b"
    r"[^.\n]{0,40}\b(?:must|should|shall|has to|needs to|will) (?:say|state|include|contain|read|begin|start|"
    r"end|report|claim|mention|only|be (?:only|just|exactly|replaced|written as|titled|empty))"
    r"|\b(?:summari[sz]er|summari[sz]ing model|language model|ai model|assistant|llm|chatbot|gpt|claude|model)\b"
    r"[^.\n]{0,20}[,:]?\s*(?:you must|you should|you will|please|now|must|should|ignore|do not|don't|never|always)\b"
    r"|\b(?:new|updated|real|actual|hidden|secret|system)\s+(?:instructions?|prompt|directive|orders?|role|"
    r"persona|task)\b"
    r"|\byou are no longer\b|\byou are now (?:in |an? |the )?(?:unrestricted|developer|admin|jailbroken|dan|free|"
    r"different|new|uncensored|evil|root)\b"
    r"|\b(?:act|behave|respond) as (?:an? |the )?(?:ai|assistant|model|summari[sz]er|system|unrestricted|dan|"
    r"jailbroken|different|developer|admin)\b|\bpretend (?:to be|you are) (?:an? |the )?(?:ai|assistant|model|"
    r"summari[sz]er|system|unrestricted|dan)\b|\bfrom now on,? you (?:must|will|should|are)\b"
    r"|\b(?:system|developer)\s*(?:prompt|message|override|note)?\s*:"
    r"|<\/?\s*(?:system|instructions?|im_start|im_end|conversation_summary|transcript)\b|\[/?INST\]"
    r"|\b(?:when|if) (?:you )?(?:summari[sz]e|summari[sz]ing|compact|compacting|writing the summary)\b"
    r"|\b(?:in|into|for) (?:the|your) (?:summary|recap)\b[^.\n]{0,40}\b(?:write|say|put|state|include|add|claim)"
    rf"|\b(?:write|say|state|put|add|claim|report|output|print|respond|reply)\b[^.\n]{{0,40}}\b(?:in|into|to) "
    rf"(?:the|your|its|their|any) {_SUMMARY_NOUN}\b"
    # "include … in the summary" is also an ordinary request for a summary the user wants written; only "this"
    # or "your" summary is the one being made of the conversation.
    r"|\b(?:reveal|include|insert|append|mention|leak|show)\b[^.\n]{0,40}\b(?:in|into|to) (?:this|your) "
    r"(?:summary|recap|output)\b"
    # The model addressed while it reads: "note to the AI summarizing this", "you, the model reading this".
    r"|\b(?:ai|bot|model|assistant|llm|summari[sz]er)\s+(?:that is |who is |which is |that's |who's )?"
    r"(?:summari[sz]ing|reading|processing|compacting)\s+(?:this|these|the (?:conversation|chat|transcript|"
    r"messages?))\b"
    r"|\bI (?:hereby )?(?:authori[sz]e|command|instruct|order|permit) you\b[^.\n]{0,60}\b(?:summary|recap|"
    r"summari[sz]e|output|system prompt|instructions|reveal|print|ignore|override)\b"
    r"|\bdo not (?:summari[sz]e|mention|include|record)\b|\bdon't (?:summari[sz]e|mention|include|record)\b"
    r"|\b(?:reveal|print|output|show|repeat)\b[^.\n]{0,30}\b(?:system prompt|instructions|api key|password)",
    re.IGNORECASE,
)

# Indirect phrasings and markup, beyond the direct commands above.
INDIRECT_RE = re.compile(
    # "the final summary is required to list …", "any write-up is expected to state …"
    rf"\b(?:the|this|your|any|every|each)\s+(?:[\w-]+\s+){{0,2}}{_SUMMARY_NOUN}\b[^.\n]{{0,40}}\b(?:is|are)\s+"
    rf"(?:required|supposed|expected|obliged|obligated|meant|instructed|mandated|asked|told)\s+to\s+(?:\w+\s+)?"
    rf"{_STATE_VERB}\b"
    rf"|\b(?:(?:the|this|your|any|every|each|all)\s+(?:[\w-]+\s+){{0,2}}{_SUMMARY_NOUN}"
    rf"|summar(?:y|ies) of (?:this|the) (?:conversation|chat|thread|transcript|discussion|log))"
    rf"\b[^.\n]{{0,30}}\b(?:must|should|shall|has to|have to|"
    rf"needs? to|ought to)\s+(?:\w+\s+)?{_STATE_VERB}\b"
    rf"|\b(?:the|this|your|any) (?:final|resulting|generated|condensed|compacted|finished) (?:summary|recap|output)\b"
    rf"[^.\n]{{0,40}}\b(?:must|should|shall|has to|needs to|will|ought to) (?:\w+ )?{_STATE_VERB}\b"
    r"|\b(?:required|mandatory|essential|imperative|obligatory|vital) that (?:the|this|your|any) (?:\w+ )?"
    r"(?:summary|recap|output)\b"
    r"|\b(?:make sure|ensure|be sure|see to it) (?:that )?(?:this|your|the final|the resulting) (?:summary|recap)\b"
    # the model addressed: "note to the AI", "message for any model", "dear AI", "if you are an LLM"
    rf"|\b(?:note|message|memo|instructions?|reminder|attention|notice|hint|p\.?s\.?|heads[- ]up)\s*(?:to|for)\s+"
    rf"(?:the |any |an? |whatever |whichever |every )?(?:(?:summari[sz]ing|reading|processing|compacting|ai|"
    rf"language|future|next) )?{_MODEL}s?\b"
    rf"|\b(?:attention|dear|hey|hello)\s*,?\s+{_MODEL}\b"
    r"|\bto (?:whoever|whatever|the (?:one|system|ai|model|tool)) (?:is |that is |who is )?(?:summari[sz]ing|"
    r"reading|processing|compacting|condensing)\b"
    rf"|\bif you are (?:an? |the )?{_MODEL}\b"
    rf"|\bif (?:an?|the|any) {_MODEL} (?:is )?(?:reading|summari[sz]ing|processing|compacting)\b"
    # the summarizer named: "AI summarizer —", "summarizer note", "for the summarizing model", "whoever condenses
    # this", "the assistant that will summarize this"
    r"|\b(?:ai|llm|model|automatic|automated) summari[sz]er\b|\bsummari[sz]er(?:'s)? (?:note|notice|instructions?|"
    r"directive|memo)\b|\b(?:for|to) the summari[sz]ing (?:model|ai|assistant|llm|tool)\b"
    r"|^\W*summari[sz]er\s*[—–:,-]"
    r"|\bwho(?:ever)? (?:condenses|summari[sz]es|compacts|recaps|reads|processes) (?:this|these)\b"
    rf"|\b{_MODEL} (?:that|which|who) (?:will |is going to |is about to |is )?(?:summari[sz]e|condense|compact|"
    r"recap|process|read)s? (?:this|these|the (?:conversation|chat|transcript|thread|log))\b"
    r"|\b(?:when|while|as|once|before|whenever) (?:you(?:'re| are)? |u )?(?:summari[sz](?:e|ing)|recap(?:ping)?|"
    r"condens(?:e|ing)|compress(?:ing)?|compact(?:ing)?|writ(?:e|ing) (?:up |out )?(?:the |this |your )?"
    r"(?:summary|recap|hand-?over))\b"
    r"|\b(?:stop following|do not follow|don't follow|no longer follow|pay no attention to|set aside|throw out|"
    r"discard|abandon)\b[^.\n]{0,40}\b(?:previous|prior|above|earlier|preceding|original|initial|system|your)\b"
    r"[^.\n]{0,30}\b(?:instructions?|prompts?|directives?|guidelines)\b"
    # "Summarizer: state that …", "you must now respond …", a heading that announces instructions
    rf"|\b{_MODEL}\s*:\s*(?:please )?(?:state|say|write|include|output|print|add|list|mention|record|claim|begin|"
    r"start|respond|reply|answer)\b"
    r"|\byou (?:must|will|shall|should) now (?:respond|reply|answer|output|write|say|print|state|include)\b"
    # A heading that announces new rules or speaks as the system; a bare "### Instruction:" also heads the examples
    # of a training set people discuss, so it is left to what follows it.
    r"|^\s*#{1,6}\s*(?:(?:new|system|updated)\s+(?:instructions?|directives?)|system prompt|system|developer|admin)"
    r"\s*:?\s*$"
    # a line shaped like the transcript's turn labels, chat-template tokens
    r"|^\s*\[\s*(?:user|assistant|system|developer|tool(?: result| call)?|human|operator)\b[^\]\n]{0,80}\]\s*:"
    r"|<\|\s*(?:im_start|im_end|system|user|assistant|endoftext|eot_id|start_header_id|end_header_id)\s*\|>"
    r"|<<\s*/?\s*sys\s*>>",
    re.IGNORECASE | re.MULTILINE,
)

# Framing that claims rank or speaks to the step that writes the summary: an override claimed by rank ("ADMIN
# OVERRIDE —"), rules announced for the summary ("Summary requirement:"), a note to the step that makes it
# ("Reminder for the compaction step:"), a sentence headed "For the summary:". Tried only when one of
# FRAMING_HINTS is in the text.
FRAMING_RE = re.compile(
    r"\b(?:system|admin(?:istrator)?|developer|operator|root|security|priority)\s+overrides?\s*[:—–!\]-]"
    rf"|\b{_SUMMARY_NOUN}\s+(?:requirements?|instructions?|directives?|rules?|mandate|policy|override)\s*[:—–-]"
    rf"|\b(?:note|message|memo|reminder|notice|hint|p\.?s\.?)\s*(?:to|for)\s+(?:the |this |any |whatever )?"
    rf"(?:{_SUMMARY_NOUN}|summari[sz]ation)(?:\s+(?:step|process|pass|stage|job|tool|writer|run))?\s*[:—–-]"
    rf"|(?:^|[.!?;]\s)\W*(?:for|in|into|to) (?:the|this|your|any) {_SUMMARY_NOUN}\s*[:—–]",
    re.IGNORECASE | re.MULTILINE,
)
FRAMING_HINTS = frozenset(
    "override overrides summary summaries summariser summarizer summarization summarisation recap hand handover "
    "tl tldr write digest synopsis compaction".split()
)

# Every phrasing above contains one of these words or marks; text without any is let through without running
# the (slow) full expressions.
HINTS = frozenset(
    """ignore disregard forget override bypass skip summary summaries summarizer summariser
summarize summarise summarizing summarising summarized summarised recap tl tldr compaction compact compacting output
response answer instructions instruction prompt prompts directive directives orders order rules guidelines act behave
respond pretend now longer system developer reveal print show repeat model assistant llm chatbot gpt claude ai
inst say state include write put add claim report reply authorise authorize authorises authorizes order command
instruct permit hereby handover hand writing write up digest synopsis required mandatory essential imperative
obligatory vital sure ensure note message memo reminder attention notice hint ps heads dear hey hello whoever
whatever bot agent chatgpt condense condensing compress compressing recapping stop follow discard abandon aside
throw user tool human operator sys im_start im_end endoftext eot_id""".split()
)
HINT_WORD_RE = re.compile(r"[a-z_]+")

# Letters only (`normalize.compact`): the core commands spelled with spaces, digits or hidden characters.
COMPACT_RE = re.compile(
    r"(?:ignore|disregard|forget|override|bypass|overlook)[a-z]{0,24}(?:previous|prior|above|earlier|preceding|"
    r"a[li][li]|any|your)[a-z]{0,20}(?:instruction|prompt|ru[li]e|direction|guide[li]ine|directive|command|context)"
    r"|(?:summary|recap)[a-z]{0,30}(?:must|shou[li]d|sha[li][li]|hasto|needsto|required|supposed|expected)(?:to)?"
    r"(?:say|state|inc[li]ude|contain|[li]ist|mention|c[li]aim|report|begin|start)"
    r"|youarenow|fromnowonyou|newinstruction|systemprompt|deve[li]opermode|jai[li]break"
    r"|(?:noteto|messageto|attention)(?:the|any)?(?:ai|mode[li]|[li][li]m|summari[sz]er|assistant|bot)"
    r"|(?:when|whi[li]e|if)you(?:are)?(?:summari[sz]|writethesummary|writingthesummary|compact|recap)"
    r"|(?:revea[li]|print|output|[li]eak)[a-z]{0,20}(?:systemprompt|instructions|apikey|password)"
)
