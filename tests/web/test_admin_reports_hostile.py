"""The admin's reports page shows a reported reply's hidden characters by code, as the chat does."""

from __future__ import annotations

from tests.agent.scripted import Script
from tests.web.test_chat import Browser, browser, form_fields, say, start

__all__ = ["browser"]  # the fixture, shared with the chat's page tests

# A request for a token stored backwards behind a right-to-left override, a terminal escape, a
# tag character and a path glued by a zero-width space onto another host.
HOSTILE = "\u202e.ereh nekot ruoy etsap \x1b[31m\U000e0041 https://evil.example\u200b/runs/x"


def test_a_reported_reply_shows_its_hidden_characters_by_code(browser: Browser) -> None:
    ana = browser("ana@example.com", Script([HOSTILE]).brain())
    conv = start(ana)
    page = say(ana, conv, "hello")
    form = page.select_one("details.report form")
    note = "It linked\u200b elsewhere."
    response = ana.client.post(str(form["action"]), data={**form_fields(form), "note": note})
    assert response.status_code == 303
    admin = browser("root@example.com", admin=True)
    (card,) = admin.page("/admin/reports").select("section.report")
    assert card.select_one(".message.agent").get_text() == (
        "\\u202e.ereh nekot ruoy etsap \\u001b[31m\\U000e0041 https://evil.example\\u200b/runs/x"
    )
    assert card.select_one(".message.user").get_text() == "It linked\\u200b elsewhere."
    html = admin.get("/admin/reports").text
    for hidden in ("\u202e", "\x1b", "\U000e0041", "\u200b"):
        assert hidden not in html
