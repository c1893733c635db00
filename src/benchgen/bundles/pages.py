"""Bundle pages and terms as safe HTML: Markdown rendered, then every page sanitised."""

from __future__ import annotations

import re
from html import escape

import nh3
from markdown_it import MarkdownIt

# An explicit allow-list: organisers' pages are shown on our origin, so anything able to run
# script or restyle the site (script, style, iframe, object, form, svg, on* attributes, class,
# style attributes) is dropped, whatever the page's source format.
_TAGS = {
    *(f"h{level}" for level in range(1, 7)),
    *("p", "br", "hr", "blockquote", "pre", "code", "em", "strong", "b", "i", "del", "sub"),
    *("sup", "ul", "ol", "li", "dl", "dt", "dd", "a", "img"),
    *("table", "caption", "thead", "tbody", "tfoot", "tr", "th", "td"),
}
_ATTRIBUTES = {
    "a": {"href", "title"},
    "img": {"src", "alt", "title", "width", "height"},
    "ol": {"start"},
    "th": {"colspan", "rowspan", "align"},
    "td": {"colspan", "rowspan", "align"},
}
# javascript:, data: and every other scheme are removed by nh3; mailto only makes sense on links.
_URL_SCHEMES = {"http", "https", "mailto"}
_MARKDOWN_SUFFIXES = (".md", ".markdown")
_HEADING = re.compile(r"<(/?)h([1-6])(?=[\s>])")
_HTML_SUFFIXES = (".html", ".htm")


def render_page(name: str, raw: bytes) -> str:
    """Sanitised HTML for a page file: `.md` rendered as Markdown, `.html`/`.htm` taken as is."""
    # Bundles come from many editors; a stray Latin-1 byte should not reject the whole bundle.
    text = raw.decode("utf-8-sig", errors="replace")
    lowered = name.lower()
    if lowered.endswith(_HTML_SUFFIXES):
        html = text
    elif lowered.endswith(_MARKDOWN_SUFFIXES):
        html = MarkdownIt("commonmark").enable("table").render(text)
    else:
        # Any other file is shown as the text it is, never interpreted.
        html = f"<pre>{escape(text)}</pre>"
    return _demote_headings(sanitize_html(html))


def _demote_headings(html: str) -> str:
    # A page is shown under the benchmark's own title (h1) and the page's title (h2): its
    # headings start at h3, so the document outline stays the site's. nh3's output has
    # lower-case tag names, so matching the tags themselves is exact.
    return _HEADING.sub(lambda m: f"<{m[1]}h{min(int(m[2]) + 2, 6)}", html)


def sanitize_html(html: str) -> str:
    """`html` reduced to the allow-list above; links get rel="noopener noreferrer"."""
    return nh3.clean(
        html,
        tags=_TAGS,
        clean_content_tags={"script", "style"},
        attributes=_ATTRIBUTES,
        attribute_filter=_filter_attribute,
        url_schemes=_URL_SCHEMES,
        link_rel="noopener noreferrer",
        strip_comments=True,
    )


def _filter_attribute(tag: str, attribute: str, value: str) -> str | None:
    # Images load without a click, so only absolute http(s) sources: no data:, no relative paths
    # into our own site (which could fire authenticated GETs), no mailto.
    if tag == "img" and attribute == "src":
        return value if value.strip().lower().startswith(("http://", "https://")) else None
    return value
