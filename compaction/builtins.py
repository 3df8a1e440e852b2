"""The profiles that ship with the product, in one place.

The data migration creates them from here, and the admin's "reset" action
puts a built-in back to the text below, so what ships and what "reset"
restores are always the same. Structured is the global default.
"""

_COMMON_RULES = (
    "Write for whoever picks the conversation up next, a person or a model, who has not read it. "
    "Be faithful: state only what the conversation supports, and say so when something was left "
    "uncertain. Keep exact names, numbers, versions, dates, file paths, commands, URLs and error "
    "messages exactly as written. Attribute claims and requests to the side that made them "
    "(the user or the assistant). Do not add greetings, commentary about the task, or advice of your own."
)

_REQUEST_HEAD = (
    "You are writing the summary of the earlier part of a conversation between a user and {persona}. "
    "The summary will replace those messages in the assistant's context, so anything left out is "
    "gone for the assistant.\n\n"
    "{previous_summary}\n\n"
    "{focus}\n\n"
)

BUILTIN_PROFILES: list[dict] = [
    {
        "slug": "structured",
        "name": "Structured",
        "symbol": "🗂️",
        "description": "Sectioned hand-over note: goal, state, decisions, attempts, dead ends, open questions, "
        "references. The default.",
        "system_prompt": (
            "You condense long working conversations into a hand-over note that lets the work continue "
            "without the original messages. " + _COMMON_RULES
        ),
        "instructions": _REQUEST_HEAD
        + (
            "Write the summary in Markdown with exactly these headings, in this order. Under each, use short "
            'bullet points; write "- none" when a section has nothing.\n\n'
            "## Goal\nWhat the user is trying to achieve, and any constraints they set.\n\n"
            "## Current state\nWhere things stand at the end of the transcript: what works, what is in "
            "progress, what the assistant was about to do.\n\n"
            "## Key decisions\nChoices that were settled, each with its reason.\n\n"
            "## Tried and outcome\nApproaches, commands or experiments that were attempted, and what "
            "happened each time.\n\n"
            "## Rejected and why\nOptions that were considered and dropped, with the reason, so nobody "
            "proposes them again.\n\n"
            "## Open questions\nWhat is still undecided or unknown, and who owes the answer.\n\n"
            "## Files and references\nFile paths, identifiers, URLs, versions and error messages that the "
            "work depends on.\n\n"
            "{transcript}"
        ),
        "keep_recent": 6,
        "max_summary_tokens": 1_500,
        "temperature": 0.2,
        "keep_instructions_verbatim": True,
        "protect_first_n": 0,
        "is_default": True,
    },
    {
        "slug": "brief",
        "name": "Brief",
        "symbol": "✂️",
        "description": "A short paragraph or a few bullets: the gist and where things stand.",
        "system_prompt": (
            "You write very short summaries of conversations: the smallest text that still lets the "
            "conversation go on sensibly. " + _COMMON_RULES
        ),
        "instructions": _REQUEST_HEAD
        + (
            "Write at most about 150 words: what the conversation is about, what was settled, and where it "
            "stands now. Prefer a few bullet points over prose when that is shorter.\n\n"
            "{transcript}"
        ),
        "keep_recent": 4,
        "max_summary_tokens": 400,
        "temperature": 0.2,
        "keep_instructions_verbatim": False,
        "protect_first_n": 0,
        "is_default": False,
    },
    {
        "slug": "detailed",
        "name": "Detailed",
        "symbol": "📚",
        "description": "A thorough account in order of events, for long technical or research threads.",
        "system_prompt": (
            "You write thorough, chronological accounts of long conversations, losing as little as "
            "possible while still removing repetition and small talk. " + _COMMON_RULES
        ),
        "instructions": _REQUEST_HEAD
        + (
            "Write a detailed account in Markdown. Follow the order in which things happened, grouping "
            "related turns under short headings of your own. For each stretch, give what was asked, what "
            "the assistant answered or did (including tools it used and what they returned), and what came "
            "of it. Keep code identifiers, figures and quoted errors verbatim. End with a short "
            '"Where it stands" paragraph.\n\n'
            "{transcript}"
        ),
        "keep_recent": 6,
        "max_summary_tokens": 3_000,
        "temperature": 0.2,
        "keep_instructions_verbatim": True,
        "protect_first_n": 0,
        "is_default": False,
    },
    {
        "slug": "actionable",
        "name": "Actionable",
        "symbol": "✅",
        "description": "What to do next: tasks, owners, blockers and the decisions they rest on.",
        "system_prompt": (
            "You turn conversations into an action list that someone could start working from "
            "immediately. " + _COMMON_RULES
        ),
        "instructions": _REQUEST_HEAD
        + (
            "Write in Markdown with these headings:\n\n"
            "## Done\nWhat has been completed, one bullet each.\n\n"
            "## Next steps\nA numbered list of concrete tasks in the order they should happen; name who "
            "does each (the user or the assistant) when the conversation says so.\n\n"
            "## Blockers and risks\nWhat stands in the way, and what is known about it.\n\n"
            "## Decisions to respect\nThe settled choices the next steps depend on.\n\n"
            "{transcript}"
        ),
        "keep_recent": 6,
        "max_summary_tokens": 1_000,
        "temperature": 0.2,
        "keep_instructions_verbatim": False,
        "protect_first_n": 0,
        "is_default": False,
    },
]

BUILTIN_BY_SLUG: dict[str, dict] = {item["slug"]: item for item in BUILTIN_PROFILES}

# The fields "reset" puts back; scope (persona) and the default flag stay as the staff set them.
# A profile's options for the summary, beside its prompts.
OPTION_FIELDS = ["keep_recent", "max_summary_tokens", "temperature", "keep_instructions_verbatim", "protect_first_n"]
SHIPPED_FIELDS = ["name", "symbol", "description", "system_prompt", "instructions", *OPTION_FIELDS]
