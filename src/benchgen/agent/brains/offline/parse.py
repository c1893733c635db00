"""Reading a plain-English request for the offline planner: which kind of request it is and the
words that name its things."""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

from benchgen.agent.brains.offline.answer_words import read_answer_edit, read_answer_question
from benchgen.agent.brains.offline.elsewhere_words import place_of
from benchgen.agent.brains.offline.forms import Form, read_form, read_questions_header
from benchgen.agent.brains.offline.naming import any_id, words
from benchgen.agent.brains.offline.never_words import never_action
from benchgen.agent.brains.offline.questions import Draft, read_draft
from benchgen.agent.brains.offline.talk_words import early_talk, late_talk
from benchgen.agent.brains.offline.training_words import training_kind
from benchgen.agent.brains.offline.typos import corrected
from benchgen.agent.messages import is_continue
from benchgen.core.permissions import Action

_POLITE = re.compile(
    r"^(?:(?:please|pls|ok(?:ay)?|so|now|hey|hi|hello|and|then|also|just|go ahead and|can you"
    r"|could you|would you|will you|i want to|i'd like to|i would like to|let's|lets|let us"
    r"|i want you to|help me|can i|may i|could i|i need to|i'd like you to|kindly"
    # A change of mind before the request: "actually, run …", "no, run …" ("no" alone cancels).
    r"|actually|instead|wait|alright|all right|great|cool|perfect|no(?=\s*,))\b[\s,!.]*)+",
    re.I,
)
# The card's own word "decline" among them: typed, it declines as the button does.
_CANCEL = re.compile(
    r"^(?:cancel|stop|never\s?mind|forget it|no|nope|nothing|declined?|reject|don'?t)[.!]*$",
    re.I,
)
# The labels of the planner's own choice buttons, read before anything else (a title may hold
# any word, "delete" included).
_LABEL = re.compile(r"^(?P<verb>Run|Publish|Show)\s+(?P<rest>.*\((?:bm|mdl)_[A-Za-z0-9_]+\))$")
# A training choice button names its model or dataset by id, with options after it.
_TRAIN_LABEL = re.compile(r"^Train\s+.*\((?:mdl|ds)_[A-Za-z0-9_]+\)")
_CREATE = re.compile(
    r"^(?:create|make|new|build|write|set up|start|add|generate|draft|prepare)\b.*"
    r"\b(?:benchmarks?|quiz\w*|tests?|question sets?|exams?)\b",
    re.I,
)
_RUN = re.compile(
    r"^(?:run|evaluate|eval|test|try|score|benchmark|launch|start)\b\s*(?P<rest>.*)$", re.I
)
_PUBLISH = re.compile(
    r"^(?:publish)\b\s*(?P<rest>.*)$|^make\s+(?P<made>.+?)\s+public\b"
    r"|^share\s+(?P<shared>.+?)\s+with\s+(?:everyone|everybody|the public|all|the world)\b",
    re.I,
)
_STATUS = re.compile(
    r"\b(?:is|are|has|have|did)\s+(?:it|they|the run|my run|my last run|that|this)\b.*"
    r"\b(?:done|finish|finished|complete|completed|ready|over|running|started)\b"
    r"|\b(?:done|finished)\s+yet\b|\bstatus\b|\bhow did\b"
    r"|\bhow(?:'s| is| was| are)\b.*\b(?:runs?|it)\b"
    r"|\bprogress\b|\bhow far\b|\b(?:last|latest|recent|newest)\s+run\b|\brun_\w+",
    re.I,
)
_RESULTS = re.compile(
    r"\b(?:results?|wrong|mistakes?|per[\s-]question|right or wrong|missed|got right)\b"
    r"|\b(?:its|model's|model|run's)\s+answers\b|\banswers\b.*\b(?:run|it)\b",
    re.I,
)
_LIST = re.compile(
    r"\b(?:list|show|what|which|see|view|display|get|give|all|my)\b.*"
    r"\b(?P<what>benchmarks|models|runs)\b|^(?P<bare>benchmarks|models|runs)[.?!]*$",
    re.I,
)
# "list my benchmarks and models", "benchmarks, runs & models": every list named, in order.
_LISTS = re.compile(
    r"\b(?:benchmarks|models|runs)(?:(?:\s*,\s*(?:and\s+)?|\s+and\s+|\s*&\s*|\s+plus\s+)"
    r"(?:(?:my|the|all|your)\s+)*(?:benchmarks|models|runs)\b)+",
    re.I,
)
_SHOW = re.compile(
    r"^(?:show|open|view|display|see|describe|look at|tell me about|details of|details for"
    r"|what's in|what is in"
    r"|what are the questions (?:of|in)|questions (?:of|in))\b\s*(?P<rest>.*)$",
    re.I,
)
_HOW_MANY = re.compile(
    r"^how\s+many\s+questions\s+(?:does|do|are\s+in|are\s+there\s+in|in|has)\s+(?P<rest>.+?)"
    r"(?:\s+(?:have|has|hold|contain))?[\s?.!]*$",
    re.I,
)
# Reading one (putting a run on it or taking one off is A13, read before this).
_LEADERBOARD = re.compile(r"\bleader[\s-]?boards?\b|\bstandings\b|\brankings?\b", re.I)
# A name in quotes, or a title the user can see, is a name: its words are never read as the
# request's ("show Leaderboard Basics" is no leaderboard request). An apostrophe inside a word
# ("Ana's") opens no quote.
_QUOTED = re.compile(r"\"[^\"]*\"|“[^”]*”|«[^»]*»|‘[^’]*’|(?<!\w)'[^']*'(?!\w)")
_NAMED = " «» "
_ENDS = " .!?,;:\"'“”‘’«»"
# The words a request about runs is made of: any other word may be a title's ("is Status Quo
# done?"), read once the titles are known.
_RUN_TALK = frozenset(
    (
        *("is", "are", "has", "have", "did", "do", "does", "was", "were", "it", "they", "them"),
        *("run", "runs", "last", "latest", "recent", "newest", "that", "this", "yet", "still"),
        *("done", "finish", "finished", "complete", "completed", "ready", "over", "running"),
        *("started", "status", "how", "s", "go", "going", "went", "progress", "far", "along"),
        *("results", "result", "wrong", "mistakes", "per", "question", "questions", "right"),
        *("or", "missed", "got", "answers", "what", "whats", "hows", "show", "see", "get", "give"),
        *("check", "training", "job", "jobs", "i", "in", "on", "with", "now", "all", "any"),
        *("already", "tell", "about", "well", "badly", "score", "scores", "accuracy"),
    )
)
_MINE = re.compile(r"\b(?:my|mine|i own|i made|i created|own|i have|do i have)\b", re.I)


@dataclass(frozen=True)
class Intent:
    """What a request asks for.

    Attributes:
        kind: create, ask_questions, continue, cancel, never, elsewhere, train, training_status,
            list_datasets, list_training_jobs, list_training_bases, run, publish, status,
            results, list_benchmarks, list_models, list_runs, show, leaderboard, help, thanks,
            assent,
            how_to (`phrase`: the words of the help entries meant), price, unknown, or one of
            the forms of `forms.Form` (compare, explain, rename, describe, add_questions,
            replace_questions, remove_questions, set_answer, answer_of).
        text: the request as written.
        phrase: the part that names things ("first-choice on Capitals"); for `elsewhere`, the
            key of its `elsewhere_words.PLACES` entry.
        mine: the request is about the user's own things only.
        also: for a list, the other lists asked for with it ("benchmarks and models").
        action: for `never`, the A13 action asked for.
        draft: for `create`, `add_questions` and `replace_questions`, the questions written.
        form: for the forms of `forms.Form`, what was read.
    """

    kind: str
    text: str
    phrase: str = ""
    mine: bool = False
    also: tuple[str, ...] = ()
    action: Action | None = None
    draft: Draft | None = None
    form: Form | None = None


def read_intent(text: str, titles: Collection[str] = ()) -> Intent:
    """The request's kind and names, trying the most specific readings first: questions written
    in the message are a create request even when a question mentions a forbidden word. The
    request words are looked for outside quotes and outside the known `titles`; a message that
    is only a known title asks to see it."""
    draft = read_draft(text)
    if draft is not None:
        edit = read_questions_header(_POLITE.sub("", draft.header).strip())
        if edit is not None:
            return Intent(edit.kind, text, phrase=edit.phrase, draft=draft, form=edit)
        return Intent("create", text, draft=draft)
    plain = corrected(_POLITE.sub("", " ".join(text.split())).strip())
    lowered = plain.casefold()
    if is_continue(lowered):
        return Intent("continue", text)
    if _CANCEL.match(lowered):
        return Intent("cancel", text)
    label = _LABEL.match(plain)
    if label:
        return Intent(label.group("verb").casefold(), text, phrase=label.group("rest"))
    if _TRAIN_LABEL.match(plain):
        return Intent("train", text, phrase=plain)
    if _is_title(plain, titles):
        return Intent("show", text, phrase=plain)
    keyed = shielded(lowered, titles)
    action = never_action(keyed)
    if action is not None:
        return Intent("never", text, action=action)
    place = place_of(keyed)
    if place is not None:
        return Intent("elsewhere", text, phrase=place)
    talk = early_talk(lowered, text)
    if talk is not None:
        return Intent(talk[0], text, phrase=talk[1])
    return _first_reading(text, plain, keyed, titles)


def shielded(lowered: str, titles: Collection[str] = ()) -> str:
    """`lowered` with what is quoted and the known `titles` in it (longest first) put out of
    reach of the request words."""
    keyed = _QUOTED.sub(_NAMED, lowered)
    for title in sorted({" ".join(t.casefold().split()) for t in titles}, key=len, reverse=True):
        if re.search(r"\w", title):
            keyed = re.sub(rf"(?<!\w){re.escape(title)}(?!\w)", _NAMED, keyed)
    return keyed


def rests_on_words(text: str, intent: Intent) -> bool:
    """Whether the reading rests on request words a title may hold: a leaderboard request, or
    one about runs with other words than its own ("is Status Quo done?")."""
    if any_id(text):
        return False
    if intent.kind in ("status", "results"):
        return bool(words(text) - _RUN_TALK)
    return intent.kind == "leaderboard" or intent.action is Action.LEADERBOARD_MANAGE


def _is_title(plain: str, titles: Collection[str]) -> bool:
    bare = plain.strip(_ENDS).casefold()
    return bool(bare) and any(bare == " ".join(t.casefold().split()) for t in titles)


def _first_reading(text: str, plain: str, keyed: str, titles: Collection[str]) -> Intent:
    form = read_form(plain) or read_answer_edit(plain) or read_answer_question(plain)
    if form is not None:
        return Intent(form.kind, text, phrase=form.phrase, form=form)
    training = training_kind(plain)
    if training is not None:
        return Intent(training, text, phrase=plain)
    run = _RUN.match(plain)
    if run and not _STATUS.search(shielded(run.group("rest").casefold(), titles)):
        return Intent("run", text, phrase=run.group("rest"))
    published = _PUBLISH.match(plain)
    if published:
        named = published.group("rest") or published.group("made") or published.group("shared")
        return Intent("publish", text, phrase=named or "", mine=True)
    if _CREATE.search(plain) and not _LIST.search(keyed):
        return Intent("ask_questions", text)
    return _reading_about(text, plain, keyed)


def _reading_about(text: str, plain: str, keyed: str) -> Intent:
    if _LEADERBOARD.search(keyed):
        return Intent("leaderboard", text, phrase=plain)
    about_benchmark = re.search(r"\b(?:benchmark|bm_\w+)", keyed)
    if _RESULTS.search(keyed) and not about_benchmark:
        return Intent("results", text, mine=True)
    if _STATUS.search(keyed):
        return Intent("status", text, mine=True)
    listed = _LIST.search(keyed)
    if listed:
        what = listed.group("what") or listed.group("bare")
        named = _LISTS.search(keyed)
        kinds = re.findall(r"benchmarks|models|runs", named.group(0)) if named else [what]
        # In the order named, once each ("models and my models" lists them once).
        first, *also = [f"list_{kind}" for kind in dict.fromkeys(kinds)]
        return Intent(first, text, mine=bool(_MINE.search(keyed)), also=tuple(also))
    talk = late_talk(keyed)
    if talk is not None:
        return Intent(talk[0], text)
    shown = _SHOW.match(plain) or _HOW_MANY.match(plain)
    if shown or re.search(r"\bbm_\w+", plain):
        return Intent("show", text, phrase=shown.group("rest") if shown else plain)
    return Intent("unknown", text)
