"""Message text to safe HTML for the pages.

markdown-it parses with raw HTML switched off (typed tags come out as text)
and refuses javascript:/vbscript:/data: links; nh3 then keeps only a fixed
set of tags, attributes and URL schemes, so that even a parser bug cannot
put script into a page. Images are dropped: a model-written image URL would
be fetched by the browser and could carry conversation text away. Code blocks keep their language class for styling.
"""

import nh3
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

_parser = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable(
    ["table", "strikethrough"]
)

_TAGS = {
    "p",
    "br",
    "hr",
    "strong",
    "em",
    "del",
    "s",
    "code",
    "pre",
    "blockquote",
    "ul",
    "ol",
    "li",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "a",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
}
_ATTRIBUTES = {
    "a": {"href", "title"},
    "ol": {"start"},
    "th": {"style"},
    "td": {"style"},
}


def _language_class(tag: str, attribute: str, value: str) -> str | None:
    if tag == "code" and attribute == "class":
        kept = [c for c in value.split() if c.startswith("language-") and c[9:].replace("-", "").isalnum()]
        return " ".join(kept) or None
    return value


def render_markdown(text: str) -> SafeString:
    html = _parser.render(text or "")
    clean = nh3.clean(
        html,
        tags=_TAGS,
        attributes={**_ATTRIBUTES, "code": {"class"}},
        attribute_filter=_language_class,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
        filter_style_properties={"text-align"},
        strip_comments=True,
    )
    return mark_safe(clean)  # noqa: S308 - sanitised just above
