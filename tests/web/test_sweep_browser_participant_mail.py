"""Mailing participants: the preview's Send, sent again (Back, then Send), mails no one twice."""

from __future__ import annotations

from bs4 import BeautifulSoup

from benchgen.core.context import Principal
from benchgen.services.benchmarks import lifecycle, members, outbox
from tests.support import QA
from tests.web.benchmark_site import Site, site

__all__ = ["site"]  # the module-scoped fixture, shared by the tests below


def _send_form(html: str) -> dict[str, list[str]]:
    """The fields the preview's Send button sends, as the browser would."""
    button = BeautifulSoup(html, "html.parser").find("button", attrs={"value": "send"})
    assert button is not None, "no Send button on the page"
    fields: dict[str, list[str]] = {"step": ["send"]}
    for field in button.find_parent("form").find_all("input"):
        fields.setdefault(str(field["name"]), []).append(str(field["value"]))
    return fields


def test_sending_again_from_an_old_preview_asks_before_mailing_everyone_twice(
    site: Site,
) -> None:
    bm = site.world.benchmark(site.ana_id, {**QA, "title": "Mailed once"})
    site.world.do(Principal.web(site.ana_id), lifecycle.publish_benchmark, bm)
    site.world.do(Principal.web(site.cy_id), members.join_benchmark, bm, True)
    path = f"/benchmarks/{bm}/participants/email"
    message = {"subject": "News", "body": "Hello", "statuses": "active", "step": "preview"}
    send = _send_form(site.ana.post(path, message).text)
    assert site.ana.client.post(path, data=send).status_code == 303
    again = site.ana.client.post(path, data=send)  # Back to the preview, Send once more
    assert again.status_code == 409, again.text[:300]
    assert "went to the participants after this preview" in again.text
    sent = site.world.do(Principal.web(site.ana_id), outbox.list_sent, bm)
    assert [message.to_email for message in sent] == ["cy@example.com"]
    meant = site.ana.client.post(path, data=_send_form(again.text))  # sent knowingly
    assert meant.status_code == 303
    sent = site.world.do(Principal.web(site.ana_id), outbox.list_sent, bm)
    assert len(sent) == 2
