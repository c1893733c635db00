"""The web chat: my conversations only, turns through the runner, proposal cards, choices,
reports, slow turns polled with htmx, escaping, and CSRF on every form."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack

import pytest
from bs4 import BeautifulSoup, Tag
from fastapi.testclient import TestClient
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo

from benchgen.agent.brains import Brain
from benchgen.agent.turn import RECORDER
from benchgen.app import create_app
from benchgen.core.context import Principal
from benchgen.core.errors import Unauthenticated
from benchgen.services.accounts import tokens, users
from benchgen.services.benchmarks import lifecycle
from benchgen.services.chat import conversations
from benchgen.services.chat._proposal_kinds import KINDS
from benchgen.services.runs import launch
from benchgen.services.runtime import Runtime
from benchgen.web.pages import chat as chat_page
from benchgen.web.pages.chat import PROPOSAL_TITLES
from tests.agent.scripted import Script, think_with
from tests.support import OPERATOR, QA, World
from tests.web.support import WebUser

HOSTILE = ["<script>alert(1)</script>", '"><img src=x onerror=alert(1)>']
SUMS = 'Create a benchmark called "Sums":\nQ: 2+2?\nA: 4\nQ: 3+3?\nA: 6'
HTMX = {"HX-Request": "true"}
SUMS_ARGS = {"title": "Sums", "format": "qa", "questions": [{"prompt": "2+2?", "answer": "4"}]}
Browser = Callable[..., WebUser]


@pytest.fixture
def browser(runtime: Runtime, world: World) -> Iterator[Browser]:
    """Sign a person in on an app of their own (with the given brain, or the default one);
    each app is closed at the end, waiting for its turns."""
    with ExitStack() as stack:

        def _open(email: str, brain: Brain | None = None, admin: bool = False) -> WebUser:
            world.user(email, admin=admin, credits_=1000)
            app = create_app(runtime.settings, runtime, brain=brain)
            client = stack.enter_context(TestClient(app, follow_redirects=False))
            return WebUser.sign_in(client, email)

        yield _open


def start(person: WebUser, title: str = "") -> str:
    """A new conversation through the form; its id."""
    response = person.post("/chat", {"title": title})
    assert response.status_code == 303, response.text
    return response.headers["location"].rsplit("/", 1)[1]


def settled(person: WebUser, conv: str) -> BeautifulSoup:
    """The conversation page once no turn is running (polling the fragment as the page does)."""
    deadline = time.monotonic() + 30
    page = person.page(f"/chat/{conv}")
    while (poll := page.find(attrs={"hx-trigger": "every 1s"})) is not None:
        assert time.monotonic() < deadline, "the turn did not finish"
        time.sleep(0.05)
        fragment = person.get(str(poll["hx-get"]), headers=HTMX)
        assert fragment.status_code == 200
        page = BeautifulSoup(fragment.text, "html.parser")
    return person.page(f"/chat/{conv}")


def say(person: WebUser, conv: str, text: str) -> BeautifulSoup:
    response = person.post(f"/chat/{conv}/messages", {"text": text})
    assert response.status_code == 303, response.text
    assert response.headers["location"] == f"/chat/{conv}"
    return settled(person, conv)


def replies(page: BeautifulSoup) -> list[str]:
    return [div.get_text() for div in page.select(".message.agent")]


def form_fields(form: Tag) -> dict[str, str]:
    return {str(i["name"]): str(i.get("value", "")) for i in form.find_all("input")}


def press(person: WebUser, conv: str, page: BeautifulSoup, label: str) -> BeautifulSoup:
    """Submit the form whose button reads `label`, as the browser would."""
    button = page.find("button", string=label)
    assert button is not None, f"no {label!r} button"
    form = button.find_parent("form")
    response = person.client.post(str(form["action"]), data=form_fields(form))
    assert response.status_code == 303, response.text
    return settled(person, conv)


def titles(world: World, user_id: str) -> list[str]:
    listed = world.do(Principal.web(user_id), lifecycle.list_benchmarks)
    return [item.title for item in listed]


def user_id(world: World, email: str) -> str:
    return world.do(OPERATOR, users.get_user_by_email, email).id


def test_chat_lists_only_my_conversations(browser: Browser) -> None:
    ana, bob = browser("ana@example.com"), browser("bob@example.com")
    mine = start(ana, "Ana's plans")
    theirs = start(bob, "Bob's plans")
    listed = ana.page("/chat")
    links = [a.get_text() for a in listed.select("table a")]
    assert links == ["Ana's plans"]
    assert listed.find("a", href=f"/chat/{mine}") is not None
    assert ana.get(f"/chat/{theirs}").status_code == 404
    assert ana.post(f"/chat/{theirs}/messages", {"text": "hi"}).status_code == 404
    said = say(bob, theirs, "list my benchmarks")
    turn_id = str(said.select_one("article.turn")["id"]).removeprefix("turn-")
    assert ana.get(f"/chat/{theirs}/turns/{turn_id}", headers=HTMX).status_code == 404
    report = ana.post(f"/chat/{theirs}/turns/{turn_id}/report", {"note": "x"})
    assert report.status_code == 404


def test_send_a_message_and_read_the_reply(browser: Browser) -> None:
    ana = browser("ana@example.com")
    conv = start(ana)
    page = say(ana, conv, "list my benchmarks")
    assert [p.get_text() for p in page.select(".message.user")] == ["list my benchmarks"]
    (reply,) = replies(page)
    assert "You have no benchmarks yet" in reply
    assert "\n" in reply  # newlines kept as they were stored (shown with pre-wrap)
    assert ana.page("/chat").select("table td")[1].get_text() == "1"


def test_approve_creates_the_benchmark_shown(browser: Browser, world: World) -> None:
    ana = browser("ana@example.com")
    conv = start(ana)
    page = say(ana, conv, SUMS)
    card = page.select_one("section.proposal")
    assert card is not None
    preview = card.select_one("pre").get_text()
    assert preview.startswith('Create a private qa benchmark "Sums" with 2 questions.')
    assert 'Answer: "4"' in preview
    approve = form_fields(card.find("button", string="Approve").find_parent("form"))
    assert set(approve) == {"csrf_token", "proposal_id", "preview_hash"}
    assert len(approve["preview_hash"]) == 64
    assert titles(world, user_id(world, "ana@example.com")) == []
    done = press(ana, conv, page, "Approve")
    assert "Created benchmark bm_" in replies(done)[-1]
    assert done.select("section.proposal") == []
    # The proposing turn shows what became of its proposal, not "awaiting approval" beside it.
    badges = [badge.get_text() for badge in done.select("span.status")]
    assert badges == ["executed"]
    assert titles(world, user_id(world, "ana@example.com")) == ["Sums"]
    replayed = ana.post(f"/chat/{conv}/approve", approve)
    assert replayed.status_code == 409 and "already carried out" in replayed.text
    assert titles(world, user_id(world, "ana@example.com")) == ["Sums"]


def test_refused_titles_and_messages_keep_the_typing_and_name_the_field(
    browser: Browser,
) -> None:
    ana = browser("ana@example.com")
    for title, said in (
        ("a\x00b", "Title: must not contain the NUL character"),
        ("Hi \u202e there", "Title: must not contain"),
        ("T" * 1500, "Title: must be at most 200 characters"),
    ):
        refused = ana.post("/chat", {"title": title})
        assert refused.status_code == 422, title[:20]
        soup = BeautifulSoup(refused.text, "html.parser")
        assert said in soup.select_one("#title-error").get_text()  # type: ignore[union-attr]
        assert soup.find("input", id="title")["value"] == title  # type: ignore[index]
    conv = start(ana)
    sent = ana.post(f"/chat/{conv}/messages", {"text": "pasted a\x00b"})
    assert sent.status_code == 422
    soup = BeautifulSoup(sent.text, "html.parser")
    assert "Message: must not contain the NUL character" in soup.get_text()
    assert "pasted a" in soup.find("textarea", attrs={"name": "text"}).get_text()  # type: ignore[union-attr]


def test_decline_creates_nothing(browser: Browser, world: World) -> None:
    ana = browser("ana@example.com")
    conv = start(ana)
    done = press(ana, conv, say(ana, conv, SUMS), "Decline")
    assert replies(done)[-1].startswith("Declined. Nothing was done")
    assert "[You pressed Decline]" in done.select(".message.user")[-1].get_text()
    assert titles(world, user_id(world, "ana@example.com")) == []


def test_a_wrong_hash_or_someone_elses_proposal_approves_nothing(
    browser: Browser, world: World
) -> None:
    ana, bob = browser("ana@example.com"), browser("bob@example.com")
    conv = start(ana)
    card = say(ana, conv, SUMS).select_one("section.proposal")
    approve = form_fields(card.find("button", string="Approve").find_parent("form"))
    altered = ana.post(f"/chat/{conv}/approve", {**approve, "preview_hash": "0" * 64})
    assert altered.status_code == 409
    assert "the preview hash does not match" in altered.text
    assert ana.post(f"/chat/{conv}/approve", {**approve, "preview_hash": "0"}).status_code == 422
    own = start(bob)
    stolen = bob.post(f"/chat/{own}/approve", {**approve, "csrf_token": bob.csrf})
    assert stolen.status_code == 409 and "no such proposal in this conversation" in stolen.text
    assert bob.post(f"/chat/{conv}/approve", approve | {"csrf_token": bob.csrf}).status_code == 404
    assert titles(world, user_id(world, "ana@example.com")) == []
    assert titles(world, user_id(world, "bob@example.com")) == []


def test_choice_buttons_answer_and_never_approve(browser: Browser, world: World) -> None:
    ana = browser("ana@example.com")
    benchmark = world.benchmark(user_id(world, "ana@example.com"), QA)
    conv = start(ana)
    asked = say(ana, conv, "run Capitals")
    choices = asked.select("div.choices form")
    labels = [form.button.get_text() for form in choices]
    assert any("seeded random" in label for label in labels), labels
    assert {form_fields(form)["option"] for form in choices} == {str(i) for i in range(len(labels))}
    label = next(label for label in labels if "seeded random" in label)
    chosen = press(ana, conv, asked, label)
    assert f"[You chose] {label}" in chosen.select(".message.user")[-1].get_text()
    card = chosen.select_one("section.proposal")
    assert card is not None and "Run model" in card.get_text()
    mine = world.do(Principal.web(user_id(world, "ana@example.com")), launch.list_runs)
    assert [run for run in mine if run.benchmark_id == benchmark] == []


def test_a_reported_reply_reaches_the_admins(browser: Browser, world: World) -> None:
    ana = browser("ana@example.com")
    conv = start(ana)
    page = say(ana, conv, "list my benchmarks")
    form = page.select_one("details.report form")
    assert form.find("label").get_text().startswith("What is wrong with this reply?")
    note = "It forgot my benchmarks. " + HOSTILE[0]
    response = ana.client.post(str(form["action"]), data={**form_fields(form), "note": note})
    assert response.status_code == 303
    assert "sent to the operators" in ana.get(f"/chat/{conv}").text
    again = ana.client.post(str(form["action"]), data={**form_fields(form), "note": "x"})
    assert again.status_code == 409 and "already reported" in again.text
    admin = browser("root@example.com", admin=True)
    listed = admin.page("/admin/reports")
    (card,) = listed.select("section.report")
    assert "ana@example.com" in card.get_text()
    assert card.select_one(".message.user").get_text() == note
    assert "You have no benchmarks yet" in card.select_one(".message.agent").get_text()
    assert "<script>" not in admin.get("/admin/reports").text


def test_a_token_in_a_refused_reports_note_is_revoked_and_not_shown_back(
    browser: Browser, world: World
) -> None:
    """The refusal rolled back the revocation, and showed the note, token and all, again."""
    ana = browser("ana@example.com")
    conv = start(ana)
    page = say(ana, conv, "list my benchmarks")
    form = page.select_one("details.report form")
    sent = ana.client.post(str(form["action"]), data={**form_fields(form), "note": "x"})
    assert sent.status_code == 303
    ana_id = user_id(world, "ana@example.com")
    secret = world.do(Principal.web(ana_id), tokens.create_token, "laptop", ["read"]).secret
    again = {**form_fields(form), "note": f"also this: {secret}"}
    refused = ana.client.post(str(form["action"]), data=again)
    assert refused.status_code == 409 and "already reported" in refused.text
    assert secret not in refused.text
    with pytest.raises(Unauthenticated):
        world.do(Principal.cli(), tokens.authenticate_token, secret)


def test_a_long_conversation_shows_its_latest_turns_and_older_ones_on_request(
    browser: Browser, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page showed every turn of the conversation, however many."""
    monkeypatch.setattr(chat_page, "TURNS_PAGE", 2)
    steps = ["one", "two", [("propose_create_benchmark", SUMS_ARGS)], "three"]
    ana = browser("ana@example.com", Script(steps).brain())
    conv = start(ana)
    for text in ("a", "b", "c"):
        page = say(ana, conv, text)
    assert replies(page)[0] == "two" and len(replies(page)) == 2
    # The card waits on the latest page only, wherever a page past the end asks to begin.
    assert page.select("section.proposal") != []
    past_the_end = ana.page(f"/chat/{conv}?before=99")
    assert past_the_end.select("section.proposal") != []
    assert past_the_end.find("a", string="Back to the latest") is None
    earlier = page.find("a", string="Show earlier messages")
    older = ana.page(str(earlier["href"]))
    assert replies(older) == ["one"] and older.find("a", string="Show earlier messages") is None
    assert older.find("a", string="Back to the latest") is not None
    form = older.select_one("details.report form")
    assert ana.client.post(str(form["action"]), data=form_fields(form)).status_code == 303
    # Refused next to the older turn's own form, not on the latest page that lacks it.
    again = ana.client.post(str(form["action"]), data=form_fields(form))
    assert again.status_code == 409
    shown = BeautifulSoup(again.text, "html.parser")
    assert (
        replies(shown) == ["one"] and "already reported" in shown.select_one("details[open]").text
    )
    for before in (0, 2**63):
        assert ana.get(f"/chat/{conv}?before={before}").status_code == 422


def test_hostile_text_is_escaped(browser: Browser) -> None:
    reply = "\n".join(HOSTILE)
    ana = browser("ana@example.com", Script([reply, reply]).brain())
    conv = start(ana, HOSTILE[1])
    say(ana, conv, HOSTILE[0])
    page = say(ana, conv, HOSTILE[1])
    assert [p.get_text() for p in page.select(".message.user")] == HOSTILE
    assert replies(page) == [reply, reply]
    assert page.h1.get_text() == HOSTILE[1]
    for path in ("/chat", f"/chat/{conv}"):
        html = ana.get(path).text
        assert "<script>alert" not in html and "<img src=x" not in html
        assert "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;" in html


def test_a_pasted_token_is_revoked_and_the_page_says_so(browser: Browser, world: World) -> None:
    ana = browser("ana@example.com")
    secret = world.token(user_id(world, "ana@example.com"), ["read"])
    conv = start(ana)
    page = say(ana, conv, f"here is my token {secret}")
    assert secret not in str(page)
    notices = [p.get_text() for p in page.select("p.notice")]
    assert notices and "revoked" in " ".join(notices)
    with pytest.raises(Unauthenticated):
        world.do(OPERATOR, tokens.authenticate_token, secret)


def test_forms_need_the_csrf_token(browser: Browser) -> None:
    ana = browser("ana@example.com")
    conv = start(ana)
    page = say(ana, conv, SUMS)
    approve = form_fields(page.select_one("section.proposal form"))
    turn = str(page.select_one("article.turn")["id"]).removeprefix("turn-")
    refused = {
        "/chat": {"title": "x"},
        f"/chat/{conv}/messages": {"text": "hello"},
        f"/chat/{conv}/approve": {k: v for k, v in approve.items() if k != "csrf_token"},
        f"/chat/{conv}/decline": {"proposal_id": approve["proposal_id"]},
        f"/chat/{conv}/turns/{turn}/report": {"note": "bad"},
    }
    for path, data in refused.items():
        response = ana.client.post(path, data=data)
        assert response.status_code == 403, path
        assert "This form has expired" in response.text
    assert len(ana.page(f"/chat/{conv}").select("article.turn")) == 1
    assert ana.page(f"/chat/{conv}").select_one("section.proposal") is not None


def test_a_slow_turn_is_polled_with_htmx_until_done(browser: Browser, runtime: Runtime) -> None:
    runtime.settings = runtime.settings.model_copy(update={"agent_wait_s": 0.05})
    release = threading.Event()

    def slow(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        release.wait(30)
        return ModelResponse(parts=[TextPart("finally done")])

    ana = browser("ana@example.com", think_with(slow))
    conv = start(ana)
    sent = ana.post(f"/chat/{conv}/messages", {"text": "take your time"}, headers=HTMX)
    assert sent.status_code == 200
    fragment = BeautifulSoup(sent.text, "html.parser")
    transcript = fragment.select_one("#transcript")
    assert transcript["hx-trigger"] == "every 1s" and transcript["hx-swap"] == "outerHTML"
    assert "working" in transcript.get_text()
    fresh = fragment.select_one("form#send-form")
    assert fresh["hx-swap-oob"] == "true" and fresh.textarea.get_text() == ""
    busy = ana.post(f"/chat/{conv}/messages", {"text": "and another thing"})
    assert busy.status_code == 409
    kept = BeautifulSoup(busy.text, "html.parser")
    assert kept.select_one("#message-text").get_text() == "and another thing"
    assert "still answering" in kept.select_one("#message-error").get_text()
    busy_htmx = ana.post(f"/chat/{conv}/messages", {"text": "more"}, headers=HTMX)
    assert busy_htmx.status_code == 200 and "still answering" in busy_htmx.text
    assert "working" in ana.page("/chat").get_text()
    poll = str(transcript["hx-get"])
    assert ana.get(poll).status_code == 303  # outside htmx, the fragment is the whole page
    release.set()
    done = settled(ana, conv)
    assert replies(done) == ["finally done"]
    final = BeautifulSoup(ana.get(poll, headers=HTMX).text, "html.parser")
    assert final.select_one("#transcript").get("hx-trigger") is None


def test_an_empty_message_or_a_bad_title_is_refused_in_place(browser: Browser) -> None:
    ana = browser("ana@example.com")
    conv = start(ana)
    empty = ana.post(f"/chat/{conv}/messages", {"text": "   "})
    assert empty.status_code == 422 and "Type a message first." in empty.text
    long_title = ana.post("/chat", {"title": "t" * 201})
    assert long_title.status_code == 422
    form = BeautifulSoup(long_title.text, "html.parser")
    assert form.select_one("#title")["value"] == "t" * 201
    assert re.search(r"at most 200 characters", form.select_one("#title-error").get_text())


def test_signing_out_ends_the_turn_it_started(browser: Browser, runtime: Runtime) -> None:
    runtime.settings = runtime.settings.model_copy(update={"agent_wait_s": 0.05})
    release = threading.Event()
    steps: list[str] = []

    def late_tool_call(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        steps.append("thought")
        if len(steps) == 1:
            release.wait(30)  # meanwhile the person signs out
            return ModelResponse(parts=[ToolCallPart("list_benchmarks", {})])
        return ModelResponse(parts=[TextPart("listed them")])

    ana = browser("ana@example.com", think_with(late_tool_call))
    conv = start(ana)
    assert ana.post(f"/chat/{conv}/messages", {"text": "list them"}).status_code == 303
    assert ana.post("/signout").status_code == 303
    release.set()
    again = WebUser.sign_in(ana.client, "ana@example.com")
    (reply,) = replies(settled(again, conv))
    assert reply.startswith("I had to stop: your access ended during this turn")


def test_every_kind_of_proposal_has_a_card_heading() -> None:
    assert set(PROPOSAL_TITLES) == set(KINDS)


def test_a_running_turn_shows_what_it_says_it_is_doing(browser: Browser, world: World) -> None:
    """A turn waiting for a free agent thread said so in its reply, but the page showed only
    "The agent is working…", as if the agent were thinking."""
    ana = browser("ana@example.com")
    conv = start(ana)
    user_id = world.do(OPERATOR, users.get_user_by_email, "ana@example.com").id

    turn = world.do(Principal.web(user_id), conversations.begin_turn, conv, "hello", None)
    note = "Waiting <b>for</b> a free agent thread."
    world.do(RECORDER, conversations.note_running, turn.id, note)
    status = ana.page(f"/chat/{conv}").find(attrs={"role": "status"})
    assert status is not None
    assert "Waiting <b>for</b> a free agent thread." in status.get_text()
    assert "The agent is working" not in status.get_text()
