"""Reading a plain-English request for the offline planner: which kind of request it is, the
names it mentions, and whether it asks for something the agent may never do (A13)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from benchgen.agent.brains.offline.answer_words import read_answer_edit, read_answer_question
from benchgen.agent.brains.offline.elsewhere_words import place_of
from benchgen.agent.brains.offline.forms import Form, read_form, read_part, read_questions_header
from benchgen.agent.brains.offline.questions import Draft, read_draft
from benchgen.agent.brains.offline.run_words import read_run_words
from benchgen.agent.brains.offline.talk_words import early_talk, late_talk
from benchgen.agent.brains.offline.training_words import training_kind
from benchgen.agent.brains.offline.typos import corrected
from benchgen.agent.messages import is_continue
from benchgen.core.permissions import Action

_POLITE = re.compile(
    r"^(?:(?:please|pls|ok(?:ay)?|so|now|hey|hi|hello|and|then|also|just|go ahead and|can you"
    r"|could you|would you|will you|i want to|i'd like to|i would like to|let's|lets|let us"
    r"|i want you to|help me|can i|may i|could i|i need to|i'd like you to|kindly)\b[\s,]*)+",
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
_DELETE = r"\b(?:delete|remove|erase|destroy|drop|trash|wipe|discard|get rid of|purge)\b"
# Order matters: the more specific requests are tried first ("remove a phase" is not a delete).
_NEVER: list[tuple[Action, re.Pattern[str]]] = [
    (
        Action.TOKENS_MANAGE,
        re.compile(
            r"\b(?:api|access|personal|benchgen)[\s-]+(?:tokens?|keys?)\b"
            r"|\b(?:create|new|make|mint|revoke|rotate|generate|delete|read|list|show|see)\s+"
            r"(?:(?:me|my|an?|the|all|new|some)\s+)*tokens?\b(?!\s+(?:used|usage|count|spent))"
            # "what's my token?": the user's own token, not a run's token count.
            r"|\b(?:my|your)\s+tokens?\b(?!\s+(?:used|usage|count|spent|limit))"
        ),
    ),
    (
        Action.NOTIFICATIONS_MANAGE,
        re.compile(
            r"\bweb-?hooks?\b|\bnotification\s+settings?\b"
            r"|\b(?:notify|e-?mail|mail|ping|alert)\s+me\b.*\b(?:when|once|after)\b"
        ),
    ),
    (
        Action.PARTICIPANTS_EMAIL,
        re.compile(
            r"\b(?:e-?mail|mail|notify|message|contact|write to)\b.*\b(?:participants?|entrants"
            r"|competitors|contestants|everyone who)\b|\bsend\b.*\be-?mails?\b"
        ),
    ),
    (
        Action.ACCESS_MANAGE,
        re.compile(
            r"\b(?:collaborators?|co-?owners?|whitelist\w*|white-list\w*|allow-?list\w*)\b"
            r"|\b(?:invite|kick|ban)\b|\b(?:add|remove|approve|reject|accept)\b.*\bparticipants?\b"
            r"|\bshare\b.*\bwith\s+(?!everyone|everybody|the public|all\b|the world)\S+"
            r"|\b(?:give|grant|revoke)\b.*\baccess\b"
        ),
    ),
    (
        Action.JUDGE_CONFIGURE,
        re.compile(
            r"\b(?:ai|llm|model)[\s-]+(?:as[\s-]+an?[\s-]+)?judge\b|\bjudge\s+model\b"
            r"|\b(?:set\s*up|setup|configure|enable|disable|turn on|turn off|use|add|change|switch)"
            r"\b.*\bjudge\b"
        ),
    ),
    (
        Action.LEADERBOARD_MANAGE,
        re.compile(
            r"\b(?:add|put|post|submit|remove|pin|feature|promote|place|send|hide"
            r"|take\s+\S+(?:\s+\S+)?\s+off)\b.*\bleaderboards?\b"
        ),
    ),
    (
        Action.PHASES_MANAGE,
        re.compile(
            r"\b(?:add|remove|delete|create|drop|insert|rename|new)\b\s+"
            r"(?:(?!benchmark)[\w-]+\s+){0,3}(?:phases?|tasks?)\b"
        ),
    ),
    (
        Action.BILLING_MANAGE,
        re.compile(
            r"\b(?:billing|invoices?|payments?|pay for|subscription|credit card|refund)\b"
            r"|\b(?:buy|purchase|add|top\s*up|recharge|refill|more|get)\s+(?:[\w-]+\s+){0,3}"
            r"credits?\b"
            r"|\b(?:give|grant|send|transfer|gift|award)\s+(?:me|us|\w+@\S+)\s+(?:[\w-]+\s+){0,3}"
            r"credits?\b|\bfree\s+credits?\b"
        ),
    ),
    (
        Action.RUN_EDIT_SCORE,
        re.compile(
            r"\b(?:edit|change|set|fix|correct|adjust|override|overwrite|bump|raise|increase|lower"
            r"|decrease|update|alter|modify|manually|hand-?edit)\s+"
            r"(?:(?!benchmark)[\w'-]+\s+){0,4}(?:scores?|accuracy)\b"
            # "why was question 5 marked as wrong?" asks for an explanation, not a change.
            r"|^(?!.*\bwhy\b).*\bmark\b.*\bas\s+(?:correct|right|wrong)\b"
        ),
    ),
    (
        Action.BENCHMARK_UNPUBLISH,
        re.compile(
            r"\bun-?publish\w*|\bmake\b.*\b(?:private|not public|unlisted)\s*(?:again)?[.!?]*$"
            r"|\btake\b.*\b(?:down|offline|off the public)\b|\bhide\b.*\b(?:from|public)\b"
        ),
    ),
    (
        Action.TRAINING_DELETE,
        re.compile(
            _DELETE
            + r".*\b(?:training(?:\s+(?:jobs?|runs?))?|fine-?tun\w*\s+jobs?|train_\w+|tr_\w+)"
        ),
    ),
    (Action.DATASET_DELETE, re.compile(_DELETE + r".*\b(?:datasets?|ds_\w+)")),
    (
        Action.BENCHMARK_DELETE,
        re.compile(
            _DELETE + r"\s+(?!(?:\w+\s+){0,2}questions?\b)(?:.*\b(?:benchmarks?|quiz\w*|bm_\w+)\b)"
        ),
    ),
    (Action.MODEL_DELETE, re.compile(_DELETE + r".*\b(?:models?|mdl_\w+)\b")),
    # "delete Capitals": a bare name after a delete verb is most likely a benchmark; questions
    # (an edit) and runs (not in A13) are left to the other readings.
    (
        Action.BENCHMARK_DELETE,
        re.compile(
            "^"
            + _DELETE
            + r"\s+(?!(?:\w+\s+){0,2}questions?\b)"
            # Accounts and limits are an administrator's (see `elsewhere_words`).
            + r"(?!.*\b(?:runs?|run_\w+|accounts?|users?|limits?|admin\w*)\b)"
        ),
    ),
]
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
        action: for `never`, the A13 action asked for.
        draft: for `create`, `add_questions` and `replace_questions`, the questions written.
        form: for the forms of `forms.Form`, what was read.
    """

    kind: str
    text: str
    phrase: str = ""
    mine: bool = False
    action: Action | None = None
    draft: Draft | None = None
    form: Form | None = None


def read_intent(text: str) -> Intent:
    """The request's kind and names, trying the most specific readings first: questions written
    in the message are a create request even when a question mentions a forbidden word."""
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
    action = never_action(lowered)
    if action is not None:
        return Intent("never", text, action=action)
    place = place_of(lowered)
    if place is not None:
        return Intent("elsewhere", text, phrase=place)
    talk = early_talk(lowered, text)
    if talk is not None:
        return Intent(talk[0], text, phrase=talk[1])
    return _first_reading(text, plain, lowered)


def never_action(lowered: str) -> Action | None:
    """The A13 action a (lower-cased) request asks for, if any."""
    for action, pattern in _NEVER:
        if pattern.search(lowered):
            return action
    return None


def _first_reading(text: str, plain: str, lowered: str) -> Intent:
    form = read_form(plain) or read_answer_edit(plain) or read_answer_question(plain)
    if form is not None:
        return Intent(form.kind, text, phrase=form.phrase, form=form)
    training = training_kind(plain)
    if training is not None:
        return Intent(training, text, phrase=plain)
    run = _RUN.match(plain)
    if run and not _STATUS.search(run.group("rest")):
        return Intent("run", text, phrase=run.group("rest"))
    published = _PUBLISH.match(plain)
    if published:
        named = published.group("rest") or published.group("made") or published.group("shared")
        return Intent("publish", text, phrase=named or "", mine=True)
    if _CREATE.search(plain) and not _LIST.search(lowered):
        return Intent("ask_questions", text)
    return _reading_about(text, plain, lowered)


def _reading_about(text: str, plain: str, lowered: str) -> Intent:
    if _LEADERBOARD.search(lowered):
        return Intent("leaderboard", text, phrase=plain)
    about_benchmark = re.search(r"\b(?:benchmark|bm_\w+)", lowered)
    if _RESULTS.search(lowered) and not about_benchmark:
        return Intent("results", text, mine=True)
    if _STATUS.search(lowered):
        return Intent("status", text, mine=True)
    listed = _LIST.search(lowered)
    if listed:
        what = listed.group("what") or listed.group("bare")
        return Intent(f"list_{what}", text, mine=bool(_MINE.search(lowered)))
    talk = late_talk(lowered)
    if talk is not None:
        return Intent(talk[0], text)
    shown = _SHOW.match(plain) or _HOW_MANY.match(plain)
    if shown or re.search(r"\bbm_\w+", plain):
        return Intent("show", text, phrase=shown.group("rest") if shown else plain)
    return Intent("unknown", text)


_ID = re.compile(r"\b(?P<kind>bm|mdl|run|ds|tr|train)_[A-Za-z0-9_]+")
_STOP = frozenset(
    (
        *("the", "a", "an", "my", "our", "your", "me", "this", "that", "it", "its", "one"),
        *("model", "models", "benchmark", "benchmarks", "please", "called", "named", "titled"),
        *("of", "for", "to", "and"),
    )
)


def find_id(text: str, kind: str) -> str | None:
    """The first id of `kind` (bm, mdl, run…) written in `text`: ids in the request win."""
    for found in _ID.finditer(text):
        if found.group("kind") == kind:
            return found.group(0)
    return None


def words(text: str) -> frozenset[str]:
    """The words of a name that matter for matching it."""
    return frozenset(w for w in re.findall(r"[a-z0-9]+", text.casefold()) if w not in _STOP)


def find(phrase: str, entries: list[dict[str, Any]], keys: tuple[str, ...]) -> list[dict[str, Any]]:
    """Entries the phrase names, best first in kind: a name typed exactly wins; else the
    entries whose whole name the phrase holds or whose name holds every word of the phrase,
    those accounting for most of its words winning ("world capitals" names "World Capitals and
    Geography", not "Capitals"). Several when it is unclear, so the caller asks; empty when the
    phrase names nothing."""
    wanted = words(phrase)
    if not wanted:
        return []
    scored = [(_match(wanted, entry, keys), entry) for entry in entries]
    exact = [entry for (covered, kind), entry in scored if kind == "exact"]
    if exact:
        return exact
    best = max((covered for (covered, kind), _ in scored if kind == "whole"), default=0)
    # A name that only shares some of the words is never proposed alone; but when it explains
    # more of them than the best whole match, the user is asked between them.
    return [
        entry
        for (covered, kind), entry in scored
        if (covered == best > 0 and kind == "whole") or (covered > best > 0 and kind == "some")
    ]


def _match(wanted: frozenset[str], entry: dict[str, Any], keys: tuple[str, ...]) -> tuple[int, str]:
    """How many of the wanted words the entry's best name accounts for, and how: its name is
    them exactly, is among them or holds them all ("whole"), or shares some ("some")."""
    best = (0, "none")
    for key in keys:
        name = words(str(entry.get(key) or ""))
        covered = len(name & wanted)
        if not name or not covered:
            continue
        kind = (
            "exact" if name == wanted else "whole" if name <= wanted or wanted <= name else "some"
        )
        rank = ("none", "some", "whole", "exact").index
        best = max(best, (covered, kind), key=lambda m: (rank(m[1]), m[0]))
    return best


MAX_NAMING_WORDS = 100
MAX_NAME_WORDS = 6


def names(text: str, entry_id: str, entries: list[dict[str, Any]], keys: tuple[str, ...]) -> bool:
    """Whether `text` names the entry as `find` reads a name: some run of its whole words (a
    run's settings and subset cut out, so "first 5 questions" names no "first choice") that
    only this entry's name holds. "random" names "Baseline: seeded random" when no other model
    is random; "gpt-4o-mini" names neither "GPT-4" nor "mini". One rule for the planner's pick
    and the preview's "the agent picked this model"."""
    rest = read_part(read_run_words(text).rest).phrase
    said = rest.split()[:MAX_NAMING_WORDS]
    names_of = [
        (entry.get("id"), [words(str(entry.get(k) or "")) for k in keys]) for entry in entries
    ]
    for size in range(1, MAX_NAME_WORDS + 1):
        for start in range(len(said) - size + 1):
            wanted = words(" ".join(said[start : start + size]))
            holders = {id_ for id_, held in names_of if wanted and any(wanted <= n for n in held)}
            if holders == {entry_id}:
                return True
    return False


def mentioned(
    text: str, entries: list[dict[str, Any]], keys: tuple[str, ...]
) -> list[dict[str, Any]]:
    """Entries whose whole name appears in `text`; the longest names win."""
    wanted = words(text)
    scored = []
    for entry in entries:
        names = [words(str(entry.get(key) or "")) for key in keys]
        sizes = [len(name) for name in names if name and name <= wanted]
        if sizes:
            scored.append((max(sizes), entry))
    best = max((size for size, _ in scored), default=0)
    return [entry for size, entry in scored if size == best]
