"""The check that the final answer claims no action it did not take, no capability it lacks.

``claims_backed: true`` reads the final answer for what the agent says it did ("I have
refunded your order", "I've cancelled it", "your address has been updated") and what it
says it can do ("I can also add numbers"), and asks each to be backed by the trace: an
action by a successful call of a tool that does it, a capability by a tool the agent has.
A tool does an action when the action's verb is a word of its name (``refund_order``
refunds) or the first word of its description ("Refund an order."); ``claims_backed:
{refund: [refund_order], cancel: cancel_booking}`` names the tools of a verb instead.
Negated, future, conditional and questioned statements ("I could not refund", "I will
refund once...", "Shall I cancel it?") claim nothing. A passive statement ("your booking
was cancelled") is also backed when a tool result or the user said so. Deterministic: no
judge.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field, ValidationInfo

from toolproof._filemodel import problem
from toolproof._text import clip
from toolproof._yaml import describe_type
from toolproof.evals._checks import CheckContext, CheckStatus, SessionRecord, check


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: Verbs of actions that an agent takes only through a tool (base forms). The words of the
#: agent's tools' names, and the verbs of the check's mapping, count too.
ACTIONS = _words(
    """
    refund cancel book reserve reschedule schedule update change modify edit delete remove
    create add send email mail notify transfer pay charge order purchase buy sell submit
    file open close reset issue process approve reject deny apply assign escalate register
    enroll subscribe unsubscribe upgrade downgrade renew ship exchange credit debit deposit
    withdraw save publish upload invite confirm activate deactivate block unblock restore
    install deploy restart multiply divide subtract log record track report flag mark set
    archive rename sign grant revoke waive void replace dispatch arrange place lock unlock
    enable disable
    """
)
_IRREGULAR = {
    "sent": "send", "made": "make", "paid": "pay", "bought": "buy", "sold": "sell",
    "wrote": "write", "written": "write", "gave": "give", "given": "give", "took": "take",
    "taken": "take", "put": "put", "set": "set", "reset": "reset", "found": "find",
    "held": "hold", "withdrew": "withdraw", "withdrawn": "withdraw", "began": "begin",
    "begun": "begin", "shut": "shut", "ran": "run", "run": "run", "kept": "keep",
    "built": "build", "spent": "spend", "brought": "bring", "chose": "choose",
    "chosen": "choose", "drew": "draw", "drawn": "draw", "lent": "lend", "forwarded": "forward",
}  # fmt: skip
_CONTRACTIONS = {
    "i've": "i have", "we've": "we have", "i'll": "i will", "we'll": "we will",
    "i'd": "i would", "we'd": "we would", "i'm": "i am", "we're": "we are",
    "cannot": "can not", "can't": "can not", "won't": "will not", "shan't": "shall not",
}  # fmt: skip
#: Verbs that say little without their object: "processed your refund" claims a refund.
_GENERIC = _words("process complete handle submit issue place arrange make execute")
_SKIP = _words(
    "have has had just already successfully now also then gone went ahead and go finally "
    "both all fully been quickly"
)
_AUX = _words("has have had is are was were")
_CONDITIONS = _words("if once when whenever unless whether until after before")
_NEGATIONS = _words("not never no nothing unable")
_ABILITY = _words("can could")
_MODALS = _words("can could would should might may must will shall")
_SUBJECTS = frozenset({"i", "we"})
_PEOPLE = _words("i we you they he she")
_DETERMINERS = _words("the a an your my our this that these those its their")
_STOP = _words(
    "but because so which who that you he she they it i we if when once after before since "
    "while until unless though although"
)
_SENTENCE = re.compile(r"[^.!?;\n]*(?:[.!?;\n]|$)")
_TOKEN = re.compile(r"[a-z]+(?:'[a-z]+)?|,")


def _forms(word: str) -> set[str]:
    """The base forms a word may be of: cancelled, cancellation -> cancel; updated -> update."""
    word = word.lower()
    if word in _IRREGULAR:
        return {_IRREGULAR[word]}
    forms = {word}
    for suffix in ("ation", "ment", "ion", "ing", "ied", "al", "ed", "es", "s", "d"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 2:
            root = word[: -len(suffix)]
            if suffix == "s" and root.endswith("s"):
                continue  # process, address
            forms |= {root, root + "e"}
            if suffix == "ied":
                forms.add(root + "y")
            if len(root) > 2 and root[-1] == root[-2]:
                forms.add(root[:-1])  # cancelled, shipped
    return forms


def _past(word: str) -> bool:
    return word in _IRREGULAR or word.endswith("ed")


@dataclass(frozen=True, slots=True)
class _Claim:
    """A claim of the answer: ``did`` (I refunded), ``was`` (it was refunded), ``can``."""

    kind: str
    verb: str  # as written ("refunded", "looked up")
    text: str  # its sentence
    keys: tuple[str, ...]  # the words a backing tool does (the verb; a generic verb's object)


def claims(answer: str, actions: Iterable[str] = ACTIONS) -> list[_Claim]:
    """The actions and capabilities ``answer`` claims, among the verbs of ``actions``."""
    known = set(actions)
    found: list[_Claim] = []
    for match in _SENTENCE.finditer(answer.replace("\u2019", "'")):
        sentence = match.group(0).strip()
        if not sentence or sentence.endswith("?"):
            continue
        words: list[str] = []
        for token in _TOKEN.findall(sentence.lower()):
            for part in _CONTRACTIONS.get(token, token).split():
                words.extend([part[:-3], "not"] if part.endswith("n't") else [part])
        shown = clip(sentence, 120)
        found.extend(_first_person(words, known, shown))
        found.extend(_passive(words, known, shown))
    return found


def _claim(kind: str, words: list[str], at: int, known: set[str], shown: str) -> _Claim | None:
    """The claim of the verb at ``at``, if it is an action (or a generic verb of one)."""
    verb = words[at]
    if at + 1 < len(words) and words[at + 1] == "up":
        verb += " up"
    forms = _verb_forms(verb)
    if forms & known and not forms & _GENERIC:
        return _Claim(kind, verb, shown, (verb,))
    if forms & _GENERIC:  # "processed your refund", "your refund was processed"
        near = words[at + 1 : at + 4] if kind != "was" else words[max(0, at - 4) : at]
        objects = tuple(w for w in near if w not in _DETERMINERS and _forms(w) & known)
        if objects or forms & known:
            return _Claim(kind, verb, shown, (verb, *objects))
    return None


def _first_person(words: list[str], known: set[str], shown: str) -> Iterable[_Claim]:
    for index, word in enumerate(words):
        if word not in _SUBJECTS or (index and words[index - 1] in _CONDITIONS):
            continue
        position = index + 1
        while position < len(words) and words[position] in _SKIP:
            position += 1
        if position >= len(words):
            continue
        head = words[position]
        if head in _ABILITY or words[position : position + 2] in (["am", "able"], ["are", "able"]):
            yield from _ability(words, position, known, shown)
            continue
        if not _past(head):
            continue  # not, never, will, did not, am going to...
        first = _claim("did", words, position, known, shown)
        if first is None:
            continue
        yield first
        for later in range(position + 1, len(words)):  # "... refunded and cancelled ..."
            if words[later] in _STOP or words[later] in _NEGATIONS:
                break
            if words[later - 1] in ("and", "then", ",", "also") and _past(words[later]):
                more = _claim("did", words, later, known, shown)
                if more is not None:
                    yield more


def _ability(words: list[str], position: int, known: set[str], shown: str) -> Iterable[_Claim]:
    after = position + (1 if words[position] in _ABILITY else 3)  # "can" / "am able to"
    while after < len(words) and words[after] in ("also", "even", "easily", "help", "you"):
        after += 1
    if after >= len(words) or words[after] in _NEGATIONS or words[after] == "have":
        return  # "can not", "could have refunded"
    found = _claim("can", words, after, known, shown)
    if found is not None:
        yield found
    for later in range(after + 1, len(words)):  # "... add numbers and look up ..."
        if words[later] in _STOP or words[later] in _NEGATIONS:
            break
        if words[later - 1] in ("and", "or", ","):
            more = _claim("can", words, later, known, shown)
            if more is not None:
                yield more


def _passive(words: list[str], known: set[str], shown: str) -> Iterable[_Claim]:
    for index, word in enumerate(words):
        if word not in _AUX or index == 0 or words[index - 1] in _PEOPLE:
            continue  # "I have ..." is the first person's; "you were charged" is not a claim
        if set(words[:index]) & (_CONDITIONS | {"will", "would", "not", "never"}):
            continue
        if words[index - 1] in _MODALS:
            continue  # "could have refunded"
        position = index + 1
        while position < len(words) and words[position] in _SKIP:
            position += 1
        if word in ("has", "have", "had") and "been" not in words[index + 1 : position]:
            continue  # an active perfect of someone else ("they have refunded")
        if position < len(words) and _past(words[position]):
            found = _claim("was", words, position, known, shown)
            if found is not None:
                yield found


def _verb_forms(verb: str) -> set[str]:
    """The base forms of a verb; ``looked up`` is also ``lookup``."""
    if verb.endswith(" up"):
        head = _forms(verb[:-3])
        return head | {form + "up" for form in head}
    return _forms(verb)


def _tool_words(name: str, description: str) -> set[str]:
    """The verbs a tool does: the words of its name, and the first word of its description."""
    parts = [p for p in re.split(r"[_\W]+|(?<=[a-z])(?=[A-Z])", name) if p]
    words = {p.lower() for p in parts}
    words |= {a.lower() + b.lower() for a, b in itertools.pairwise(parts)}
    first = re.match(r"\s*([A-Za-z]+)", description or "")
    if first:
        words.add(first.group(1).lower())
    return {form for word in words for form in _forms(word)}


_CLAIMS_BACKED = "true, or a mapping of an action verb to tool names"
#: An action verb as a key of the mapping (``refund``, ``look up``).
_VERB = r"^\s*[A-Za-z]+( up)?\s*$"


def _action_verb(verb: Any) -> str:
    """A key of the mapping: an action verb (``refund``, ``look up``)."""
    if not isinstance(verb, str) or not re.match(_VERB, verb):
        raise problem(f"expected an action verb, got {verb!r}", parent=True)  # at the key
    return verb


def _verb_tools(names: Any, info: ValidationInfo) -> list[str]:
    """The tools of a verb: one of the agent's tools, or a non-empty list of them."""
    listed = [names] if isinstance(names, str) else names
    if not isinstance(listed, list) or not listed or not all(isinstance(n, str) for n in listed):
        raise problem(f"expected tool names, got {describe_type(names)}")
    context = CheckContext.of(info)
    unknown = [context.unknown_tool(name) for name in listed if not context.knows(name)]
    if unknown:
        raise problem(unknown[0], also=unknown[1:])
    return listed


def _by_verb(written: dict[str, list[str]]) -> dict[str, list[str]]:
    """The tools of each verb in lower case (``cancel`` and ``Cancel`` are one verb)."""
    named: dict[str, list[str]] = {}
    for verb, tools in written.items():
        named.setdefault(verb.strip().lower(), []).extend(tools)
    return {verb: list(dict.fromkeys(tools)) for verb, tools in named.items()}


def _claims_value(value: Any) -> Any:
    """``true`` is every verb by the tools' words; a mapping names the tools of some verbs."""
    if value is True:
        return {}
    if value is False:
        return None
    if isinstance(value, Mapping) and value:
        return value
    raise problem(f"expected {_CLAIMS_BACKED}, got {value!r}")


ActionVerb = Annotated[
    str,
    BeforeValidator(_action_verb, json_schema_input_type=Annotated[str, Field(pattern=_VERB)]),
]
VerbTools = Annotated[
    list[str],
    BeforeValidator(
        _verb_tools, json_schema_input_type=str | Annotated[list[str], Field(min_length=1)]
    ),
]
#: The verbs and their tools as written.
_Written = dict[ActionVerb, VerbTools]
#: The tools of each verb (``{}``: every verb by the tools' own words).
NamedTools = Annotated[_Written, AfterValidator(_by_verb)]
#: The mapping as the JSON Schema shows it: one verb or more, and no key that is not a verb
#: (pydantic lists the verb pattern without refusing other keys).
_Shown = Annotated[_Written, Field(min_length=1, json_schema_extra={"additionalProperties": False})]


def _describe(named: dict[str, list[str]]) -> str:
    scope = f" ({', '.join(f'{v}: {t}' for v, t in named.items())})" if named else ""
    return f"claimed actions and capabilities backed by tools{scope}"


@check(
    "claims_backed",
    spec=Annotated[
        NamedTools | None,
        BeforeValidator(_claims_value, json_schema_input_type=bool | _Shown),
    ],
    accepts="true, or a mapping of an action verb to the tools that do it",
    describe=_describe,
)
def _claims_backed(record: SessionRecord, named: dict[str, list[str]]) -> tuple[CheckStatus, str]:
    forms = {form: tools for verb, tools in named.items() for form in _verb_forms(verb)}
    return _backed(record, forms)


def _backed(record: SessionRecord, named: Mapping[str, list[str]]) -> tuple[CheckStatus, str]:
    """Whether each action and capability the answer claims is backed by the trace."""
    if record.output is None:
        return "skip", "no final answer to check"
    offered: dict[str, set[str]] = {}
    for trace in record.traces:
        for info in trace.tools:
            offered.setdefault(info.name, _tool_words(info.name, info.description))
    done: set[str] = set()
    failed: set[str] = set()
    for call, result in record.calls_and_results():
        (done if result is not None and result.ok else failed).add(call.name)
    evidence = " ".join(
        [t.input for t in record.traces]
        + [r.content for _, r in record.calls_and_results() if r is not None and r.ok]
    ).lower()
    actions = set(ACTIONS) | set(named) | {w for words in offered.values() for w in words}
    problems: list[str] = []
    backed: list[str] = []
    listed = ", ".join(offered) or "none"
    for claim in claims(record.output, actions):
        tools = _tools(claim, named, offered)
        if claim.kind == "can":
            if not tools:
                problems.append(
                    f"says {claim.text!r}, but no tool of the agent can "
                    f"{claim.verb} (its tools: {listed})"
                )
            continue
        made = [tool for tool in tools if tool in done]
        if made:
            backed.append(made[0])
            continue
        if claim.kind == "was" and re.search(rf"\b{re.escape(claim.verb)}\b", evidence):
            continue  # a status that a tool result or the user reported
        if not tools:
            why = f"the agent has no tool that does it (its tools: {listed})"
        elif any(tool in failed for tool in tools):
            why = f"the call of {' or '.join(t for t in tools if t in failed)} failed"
        else:
            why = f"no call of {' or '.join(tools)} was made"
        problems.append(f"says {claim.text!r}, but {why}")
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        return "fail", "; ".join(problems[:3]) + more
    if backed:
        return (
            "pass",
            f"each claimed action is backed by a call ({', '.join(dict.fromkeys(backed))})",
        )
    return "pass", "the answer claims no action or capability that needs a tool"


def _tools(
    claim: _Claim, named: Mapping[str, list[str]], offered: Mapping[str, set[str]]
) -> list[str]:
    """The tools that do what ``claim`` says: the mapping's for its verb, else by their words."""
    for key in claim.keys:
        for form in _verb_forms(key):
            if form in named:
                return named[form]
    forms = set().union(*(_verb_forms(key) for key in claim.keys))
    return [name for name, words in offered.items() if forms & words]
