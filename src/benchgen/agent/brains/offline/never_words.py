"""The wordings of the requests the agent may never act on (A13), read before any other
reading so that no wording of one reaches a tool."""

from __future__ import annotations

import re

from benchgen.core.permissions import Action

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
        Action.RUN_QUOTA_MANAGE,
        re.compile(
            r"\bquotas?\b"
            # A run's credit limit ("a run limit of 50 credits") is a run setting, not a quota.
            r"|^(?!.*\bcredits?\b).*\b(?:change|set|raise|increase|lower|decrease|reduce|lift"
            r"|remove|bump|adjust|update|double|halve|reset|edit|modify|allow|let|limit|cap)\b.*"
            r"(?:\bruns?\s+(?:per|a|each|every)\s+day\b|\btimes\s+(?:per|a|each|every)\s+day\b"
            r"|\bdaily\s+(?:run\s+)?(?:limit|cap)s?\b|\brun\s+(?:limit|cap)s?\b)"
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
        Action.BENCHMARK_JOIN,
        re.compile(
            # The user's own wish: "a quiz on how to join tables" or "how many participate in
            # Sums?" asks for something else.
            r"(?:^|\b(?:i\s+(?:want|would\s+like|wish|need)\s+to|i'?d\s+like\s+to|let\s+me"
            r"|can\s+i|could\s+i|may\s+i|how\s+(?:do|can)\s+i)\s+)"
            r"(?:(?:re-?)?join|participate\s+in|take\s+part\s+in|compete\s+in)\b"
            r"|\bjoin\s+(?:the\s+|this\s+|that\s+)?(?:benchmark|competition|challenge)\b"
            r"|\bsign\s+(?:me|us)\s+up\b"
            r"|\b(?:enrol|enroll|register)\s+(?:me|us|myself)\s+(?:in|for|to|on)\b"
            r"|\b(?:become|make\s+me|be)\s+an?\s+participant\b"
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
            r"\bun-?publish\w*|\bstop\s+publishing\b"
            r"|\bmake\b.*\b(?:private|not public|unlisted)\s*(?:again)?[.!?]*$"
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
    # "publish Capitals and then delete it": a later clause deletes the benchmark named before
    # it; missed, the publish was proposed and the delete passed over without a word.
    (
        Action.BENCHMARK_DELETE,
        re.compile(
            r"^(?!.*\b(?:questions?|runs?|run_\w+|models?|mdl_\w+|datasets?|ds_\w+|train\w*"
            r"|accounts?|users?|limits?|admin\w*)\b)"
            r".*(?:\b(?:and|then|also)|[,;])\s+"
            + _DELETE
            + r"\s+(?:it|this|that|them|everything)\b"
        ),
    ),
]


def never_action(lowered: str) -> Action | None:
    """The A13 action a (lower-cased) request asks for, if any."""
    for action, pattern in _NEVER:
        if pattern.search(lowered):
            return action
    return None
