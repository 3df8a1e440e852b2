"""Transcript integrity: text inside a conversation stays text (docs/design.md, invariant 7).

Whatever a message, a tool result, a speaker's name or a tool call carries
is written by someone other than us, and the summarizer reads it. This
package is the one place that decides what of it could pass for structure
or for an instruction, and every path that builds a transcript, a prompt or
an offline summary goes through it:

- `normalize`: one spelling for the checks (NFKC, format characters such as
  zero-width and bidi controls removed, accents, case, look-alike letters);
- `injection` (with `english` and `languages`): text that addresses a
  summarizer or a model, in English and twenty other languages, directly
  ("ignore the previous instructions") or not ("the final summary is
  required to list …", "note to the AI summarizing this"); with `model`, a
  learned linear model over a batch that also reads each message with its
  neighbour, and `encoded`, the decoded views of hex, base64, escapes, leet;
- `structure`: lines that could be read as a turn label, a fence marker or a
  section heading are escaped, and speaker and tool names are redacted and
  limited to a safe character set.
"""

from compaction.safety.injection import looks_like_injection
from compaction.safety.normalize import fold

__all__ = ["fold", "looks_like_injection"]
