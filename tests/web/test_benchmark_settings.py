"""A benchmark's settings pages: general, access, phases and tasks, AI judge, email."""

from __future__ import annotations

import re
from urllib.parse import quote, unquote

from bs4 import BeautifulSoup
from fastapi.testclient import TestClient
from httpx import Response

from benchgen.app import create_app
from benchgen.core.context import Context, Principal
from benchgen.db.tables import User
from benchgen.services.benchmarks import lifecycle, members
from tests.support import OPERATOR, QA
from tests.web.benchmark_site import HOSTILE, Site, assert_escaped, site

__all__ = ["site"]  # the module-scoped fixture, shared by the tests below

SETTINGS = ("/settings", "/settings/access", "/settings/phases", "/settings/judge")
EMAIL = "/participants/email"


def _fresh(site: Site, title: str) -> str:
    """A private qa benchmark of Ana's for a test that changes it."""
    return site.world.benchmark(site.ana_id, {**QA, "title": title})


def test_every_settings_page_renders_for_the_owner(site: Site) -> None:
    for bm in (site.hostile, site.hostile_qa, site.scored):
        for tail in (*SETTINGS, EMAIL):
            response = site.ana.get(f"/benchmarks/{bm}{tail}")
            assert response.status_code == 200, (bm, tail, response.text[:300])
            assert_escaped(response.text)
    soup = site.ana.page(f"/benchmarks/{site.hostile}/settings/access")
    current = [a.get_text() for a in soup.select("ul.tabs a[aria-current=page]")]
    assert current == ["Settings", "Access"]


def test_a_collaborator_sees_why_the_owners_pages_are_closed(site: Site) -> None:
    assert site.bob.get(f"/benchmarks/{site.hostile}/settings").status_code == 200
    for tail in (*SETTINGS[1:], EMAIL):
        response = site.bob.get(f"/benchmarks/{site.hostile}{tail}")
        assert response.status_code == 403, tail
        assert "Not allowed: only the owner can" in response.text
        assert "your role here is collaborator" in response.text
    owner_only = site.bob.page(f"/benchmarks/{site.hostile}/settings")
    assert owner_only.find("form", attrs={"data-confirm-text": True}) is None
    # Only the tabs a collaborator may open are offered; the owner sees them all.
    tabs = [a.get_text() for a in owner_only.select('nav[aria-label="Settings"] a')]
    assert tabs == ["General", "Scoring"]
    owner = site.ana.page(f"/benchmarks/{site.hostile}/settings")
    assert len(owner.select('nav[aria-label="Settings"] a')) == 6


def test_title_and_description_change_and_are_checked(site: Site) -> None:
    bm = _fresh(site, "Before")
    saved = site.ana.post(f"/benchmarks/{bm}/settings", {"title": "After", "description": HOSTILE})
    assert saved.status_code == 303
    assert_escaped(site.ana.get(f"/benchmarks/{bm}").text)
    blank = site.ana.post(f"/benchmarks/{bm}/settings", {"title": " ", "description": "kept"})
    assert blank.status_code == 422
    soup = BeautifulSoup(blank.text, "html.parser")
    assert soup.find("p", id="title-error") is not None
    assert soup.find("textarea", id="description").get_text() == "kept"  # type: ignore[union-attr]


def test_publish_unpublish_and_the_run_quota(site: Site) -> None:
    bm = _fresh(site, "Visible")
    assert site.ana.post(f"/benchmarks/{bm}/settings/publish").status_code == 303
    assert "Published: everyone" in site.ana.page(f"/benchmarks/{bm}/settings").get_text()
    assert site.ana.post(f"/benchmarks/{bm}/settings/unpublish").status_code == 303
    assert (
        site.ana.post(f"/benchmarks/{bm}/settings/quota", {"runs_per_day": "7"}).status_code == 303
    )
    page = site.ana.page(f"/benchmarks/{bm}/settings")
    assert page.find("input", id="runs_per_day")["value"] == "7"  # type: ignore[index]
    wrong = site.ana.post(f"/benchmarks/{bm}/settings/quota", {"runs_per_day": "0"})
    assert wrong.status_code == 422 and "from 1 to 1000" in wrong.text


def test_deleting_needs_the_typed_title(site: Site) -> None:
    bm = _fresh(site, "Doomed")
    page = site.ana.page(f"/benchmarks/{bm}/settings")
    assert page.find("form", attrs={"data-confirm-text": "Doomed"}) is not None
    wrong = site.ana.post(f"/benchmarks/{bm}/settings/delete", {"confirm": "doomed"})
    assert wrong.status_code == 422 and "type the benchmark" in wrong.text
    site.ana.page(f"/benchmarks/{bm}")  # still there
    done = site.ana.post(f"/benchmarks/{bm}/settings/delete", {"confirm": "Doomed"})
    assert done.status_code == 303 and done.headers["location"] == "/benchmarks"
    assert site.ana.get(f"/benchmarks/{bm}").status_code == 404
    collaborator = site.bob.post(
        f"/benchmarks/{site.hostile}/settings/delete", {"confirm": "anything"}
    )
    assert collaborator.status_code == 403


def _sent(response: Response, email: str) -> tuple[int, str, str]:
    """What an invitation's answer says, with the address it names taken out."""
    flash = unquote(response.cookies.get("bg_flash", ""))
    return response.status_code, response.headers["location"], flash.replace(email, "ADDRESS")


def test_collaborators_whitelist_and_participants(site: Site) -> None:
    bm = _fresh(site, "Team")
    path = f"/benchmarks/{bm}/settings/access"
    # An address without an account gets the very answer an account's address gets.
    mailed = set(site.world.invitations("bob@example.com"))
    unknown = site.ana.post(f"{path}/invitations", {"email": "nobody@example.com"})
    known = site.ana.post(f"{path}/invitations", {"email": "bob@example.com"})
    assert _sent(unknown, "nobody@example.com") == _sent(known, "bob@example.com")
    assert _sent(known, "bob@example.com") == (303, path, "Invitation sent to ADDRESS.")
    bad = site.ana.post(f"{path}/invitations", {"email": "not an email"})
    assert bad.status_code == 422 and "email:" in bad.text
    again = site.ana.post(f"{path}/invitations", {"email": "bob@example.com"})
    assert again.status_code == 409 and "invited already" in again.text
    field = BeautifulSoup(again.text, "html.parser").find("input", id="email")
    assert field is not None and field["value"] == "bob@example.com"
    listed = site.ana.page(path)
    revoke = {
        str(form.find("input", attrs={"name": "invitation_id"})["value"]): form.get_text()
        for form in listed.find_all("form", action=f"{path}/invitations/revoke")
    }
    assert sorted(" ".join(text.split()) for text in revoke.values()) == [
        "Revoke the invitation to bob@example.com",
        "Revoke the invitation to nobody@example.com",
    ]
    assert "No collaborators." in listed.get_text()
    (secret,) = set(site.world.invitations("bob@example.com")) - mailed
    accepted = site.bob.post(f"/invitations/{secret}")
    assert (accepted.status_code, accepted.headers["location"]) == (303, f"/benchmarks/{bm}")
    after = site.ana.page(path)
    assert after.find("form", action=f"{path}/collaborators/remove") is not None
    assert "Revoke the invitation to bob@example.com" not in after.get_text()
    nobody = next(key for key, text in revoke.items() if "nobody@" in text)
    revoked = site.ana.post(f"{path}/invitations/revoke", {"invitation_id": nobody})
    assert revoked.status_code == 303
    assert "No invitations are pending." in site.ana.page(path).get_text()
    removed = site.ana.post(f"{path}/collaborators/remove", {"user_id": site.bob_id})
    assert removed.status_code == 303
    assert "No collaborators." in site.ana.page(path).get_text()
    bad = site.ana.post(f"{path}/whitelist", {"entries": "@partner.org, not-an-entry"})
    assert bad.status_code == 422 and "not-an-entry" in bad.text
    assert site.ana.post(f"{path}/whitelist", {"entries": "cy@example.com"}).status_code == 303
    site.world.do(Principal.web(site.cy_id), members.join_benchmark, bm, True)
    listed = site.ana.page(path)
    assert "cy@example.com" in listed.get_text()
    status = site.ana.post(f"{path}/participants", {"user_id": site.cy_id, "status": "removed"})
    assert status.status_code == 303
    assert site.cy.get(f"/benchmarks/{bm}").status_code == 404


def test_email_participants_with_a_preview_then_the_record(site: Site) -> None:
    bm = _fresh(site, "Mailing")
    site.world.do(Principal.web(site.ana_id), lifecycle.publish_benchmark, bm)
    site.world.do(Principal.web(site.cy_id), members.join_benchmark, bm, True)
    path = f"/benchmarks/{bm}/participants/email"
    message = {"subject": f"News {HOSTILE}", "body": f"Hello {HOSTILE}", "statuses": "active"}
    preview = site.ana.post(path, {**message, "step": "preview"})
    assert preview.status_code == 200
    assert_escaped(preview.text)
    assert "cy@example.com" in preview.text and "Check before sending" in preview.text
    assert "Nothing sent yet." in preview.text
    shown = BeautifulSoup(preview.text, "html.parser").select('input[name="recipients"]')
    assert [field["value"] for field in shown] == ["cy@example.com"]
    # Someone joins after the preview: Send shows the new list to check, and sends nothing.
    site.world.do(Principal.web(site.bob_id), members.join_benchmark, bm, True)
    stale = site.ana.post(path, {**message, "step": "send", "recipients": "cy@example.com"})
    assert stale.status_code == 409 and "changed since the preview" in stale.text
    assert "bob@example.com" in stale.text and "Nothing sent yet." in stale.text
    both = ["bob@example.com", "cy@example.com"]
    sent = site.ana.post(path, {**message, "step": "send", "recipients": both})
    assert sent.status_code == 303
    record = site.ana.get(path)
    assert_escaped(record.text)
    assert "cy@example.com" in record.text and "queued" in record.text
    empty = site.ana.post(path, {"subject": "", "body": "x", "statuses": "active"})
    assert empty.status_code == 422


def test_phases_and_tasks(site: Site) -> None:
    bm = _fresh(site, "Phased")
    path = f"/benchmarks/{bm}/settings/phases"
    bad = site.ana.post(f"{path}/add", {"phase_name": "Final", "starts_at": "soon"})
    assert bad.status_code == 422
    for field, moment in (
        ("starts_at", "0001-01-01T00:00+01:00"),
        ("ends_at", "9999-12-31T23:59-01:00"),
    ):
        past_the_calendar = site.ana.post(f"{path}/add", {"phase_name": "Final", field: moment})
        assert past_the_calendar.status_code == 422, past_the_calendar.text[:300]
        assert "not a date and time" in past_the_calendar.text
    soup = BeautifulSoup(bad.text, "html.parser")
    assert soup.find("input", id="phase_name")["value"] == "Final"  # type: ignore[index]
    added = site.ana.post(
        f"{path}/add",
        {"phase_name": "Final", "starts_at": "2030-01-01T10:00", "ends_at": "2030-02-01T10:00"},
    )
    assert added.status_code == 303
    tab = site.ana.page(f"/benchmarks/{bm}/phases").get_text()
    assert "Final" in tab and "2030-01-01 10:00 UTC" in tab
    phase = site.ana.page(path).find("input", attrs={"name": "phase_id"})
    assert phase is not None
    tasks = f"/benchmarks/{bm}/settings/tasks/add"
    unnamed = site.ana.post(tasks, {"task_name": " ", "phase_ids": phase["value"]})
    assert unnamed.status_code == 422
    assert BeautifulSoup(unnamed.text, "html.parser").find("p", id="task_name-error")
    task = site.ana.post(tasks, {"task_name": "Extra", "phase_ids": phase["value"]})
    assert task.status_code == 303
    assert "Extra" in site.ana.page(path).get_text()
    removed = site.ana.post(f"{path}/remove", {"phase_id": phase["value"]})
    assert removed.status_code == 303


def test_the_judge_key_is_written_once_and_never_shown(site: Site) -> None:
    bm = _fresh(site, "Judged")
    path = f"/benchmarks/{bm}/settings/judge"
    form = {"kind": "anthropic", "model": "claude-judge", "base_url": "", "api_key": "sk-secret-1"}
    assert site.ana.post(path, form).status_code == 303
    page = site.ana.get(path)
    assert "sk-secret-1" not in page.text and "an API key is saved" in page.text
    again = site.ana.post(path, {**form, "api_key": "", "keep_key": "yes", "model": "claude-2"})
    assert again.status_code == 303
    assert "an API key is saved" in site.ana.get(path).text
    bad = site.ana.post(path, {**form, "kind": "openai_compat", "api_key": "sk-secret-2"})
    assert bad.status_code == 422 and "sk-secret-2" not in bad.text
    assert BeautifulSoup(bad.text, "html.parser").find("p", id="base_url-error") is not None
    mcq = site.ana.page(f"/benchmarks/{site.hostile}/settings/judge").get_text()
    assert "only question-and-answer benchmarks" in mcq


def test_participants_without_a_verified_address_are_named_as_not_mailed(site: Site) -> None:
    bm = _fresh(site, "Unverified")
    site.world.do(Principal.web(site.ana_id), lifecycle.publish_benchmark, bm)
    for who in (site.cy_id, site.bob_id):
        site.world.do(Principal.web(who), members.join_benchmark, bm, True)

    def unverify(ctx: Context) -> None:
        ctx.session.get(User, site.bob_id).email_verified_at = None  # type: ignore[union-attr]

    site.world.ctx_call(OPERATOR, unverify)
    message = {"subject": "News", "body": "Hello", "statuses": "active", "step": "preview"}
    preview = site.ana.post(f"/benchmarks/{bm}/participants/email", message)
    shown = BeautifulSoup(preview.text, "html.parser").select('input[name="recipients"]')
    assert [field["value"] for field in shown] == ["cy@example.com"]
    hint = " ".join(preview.text.split())
    assert "Not mailed: 1 participant(s) who have not verified" in hint
    assert "(bob@example.com)" in hint


def test_the_invitation_link_asks_for_the_invited_account_and_works_once(site: Site) -> None:
    bm = site.world.benchmark(site.ana_id, {**QA, "title": f"Shared {HOSTILE}"})
    mailed = set(site.world.invitations("cy@example.com"))
    site.ana.post(f"/benchmarks/{bm}/settings/access/invitations", {"email": "cy@example.com"})
    (secret,) = set(site.world.invitations("cy@example.com")) - mailed
    link = f"/invitations/{secret}"
    browser = TestClient(create_app(site.runtime.settings, site.runtime))
    signed_out = browser.get(link, follow_redirects=False)
    assert signed_out.status_code == 200 and HOSTILE not in signed_out.text
    signin = BeautifulSoup(signed_out.text, "html.parser").find("a", string=re.compile("Sign in"))
    assert signin is not None and signin["href"] == f"/signin?next={quote(link, safe='')}"
    # Another account holding the link sees whom it is for, and nothing of the benchmark.
    wrong = site.bob.get(link)
    assert wrong.status_code == 403 and "Shared" not in wrong.text
    assert "This invitation is for cy@example.com" in wrong.text
    assert site.bob.post(link).status_code == 403
    assert site.bob.get(f"/benchmarks/{bm}").status_code == 404
    shown = site.cy.get(link)
    assert shown.status_code == 200 and "Shared" in shown.text
    assert_escaped(shown.text)
    form = BeautifulSoup(shown.text, "html.parser").find("form", action=link)
    assert form is not None and form.find("input", attrs={"name": "csrf_token"}) is not None
    accepted = site.cy.post(link)
    assert (accepted.status_code, accepted.headers["location"]) == (303, f"/benchmarks/{bm}")
    assert site.cy.get(f"/benchmarks/{bm}/questions").status_code == 200
    used = site.cy.get(link)
    assert used.status_code == 409 and "accepted already" in used.text
    site.world.do(Principal.web(site.ana_id), members.remove_collaborator, bm, site.cy_id)


def test_the_invitation_page_names_its_address_to_no_other(site: Site) -> None:
    bm = site.world.benchmark(site.ana_id, QA)
    mailed = set(site.world.invitations("cy@example.com"))
    site.ana.post(f"/benchmarks/{bm}/settings/access/invitations", {"email": "cy@example.com"})
    (secret,) = set(site.world.invitations("cy@example.com")) - mailed
    link = f"/invitations/{secret}"
    browser = TestClient(create_app(site.runtime.settings, site.runtime))
    # Signed out, for someone else, unknown, shown, accepted (the redirect too), used up.
    answers = [
        browser.get(link, follow_redirects=False),
        site.bob.get(link),
        site.bob.post(link),
        site.cy.get("/invitations/not-a-real-token"),
        site.cy.get(link),
        site.cy.post(link),
        site.cy.get(link),
    ]
    assert [answer.status_code for answer in answers] == [200, 403, 403, 404, 200, 303, 409]
    assert {answer.headers["referrer-policy"] for answer in answers} == {"no-referrer"}
    assert site.cy.get(f"/benchmarks/{bm}").headers["referrer-policy"] == "same-origin"


def test_a_save_from_a_page_opened_before_another_save_keeps_both(site: Site) -> None:
    """The form sent no state: of two editors who opened the page, the second to save
    replaced the first's title without a word to either."""
    bm = _fresh(site, "Opened twice")
    first = site.ana.page(f"/benchmarks/{bm}/settings")
    tag = first.find("input", attrs={"name": "etag"})["value"]  # type: ignore[index]
    site.world.do(Principal.web(site.ana_id), lifecycle.edit_benchmark, bm, {"title": "Theirs"})
    form = {"title": "Mine", "description": "typed", "etag": str(tag)}
    late = site.ana.post(f"/benchmarks/{bm}/settings", form)
    assert late.status_code == 409
    soup = BeautifulSoup(late.text, "html.parser")
    alert = soup.find(attrs={"role": "alert"})
    assert alert is not None and "Someone changed the title" in alert.get_text()
    assert soup.find("input", id="title")["value"] == "Mine"  # type: ignore[index]
    assert soup.find("textarea", id="description").get_text() == "typed"  # type: ignore[union-attr]
    assert site.world.do(Principal.web(site.ana_id), lifecycle.get_benchmark, bm).title == "Theirs"
    # Saving again from the page as shown now replaces theirs, knowingly.
    fresh = soup.find("input", attrs={"name": "etag"})["value"]  # type: ignore[index]
    again = site.ana.post(f"/benchmarks/{bm}/settings", {**form, "etag": str(fresh)})
    assert again.status_code == 303
    assert site.world.do(Principal.web(site.ana_id), lifecycle.get_benchmark, bm).title == "Mine"
