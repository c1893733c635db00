"""Turning the web app's own page paths inside plain text (agent replies) into links."""

from __future__ import annotations

import re

from markupsafe import Markup, escape

# Only paths of this site's own pages become links (never another host, never a scheme the
# text chose): an agent's refusal names the page where a person does the thing.
_AREAS = "benchmarks|runs|models|datasets|training|settings|admin|chat"
_PATH = rf"/(?:{_AREAS})(?:/[A-Za-z0-9_\-]+)*"


def link_paths(text: str, public_url: str | None = None) -> Markup:
    """`text` escaped, with each of our page paths (bare, or under `public_url`) as a link."""
    prefix = re.escape(public_url.rstrip("/")) if public_url else ""
    pattern = re.compile(rf"(?<![\w/.:]){prefix}({_PATH})" if prefix else rf"(?<![\w/.:])({_PATH})")
    pieces: list[str] = []
    last = 0
    for found in pattern.finditer(text):
        pieces.append(escape(text[last : found.start()]))
        target = escape(found.group(1))
        pieces.append(Markup('<a href="{}">{}</a>').format(target, found.group(0)))
        last = found.end()
    pieces.append(escape(text[last:]))
    return Markup("").join(pieces)
