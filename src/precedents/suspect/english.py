"""English orders to the agent: overriding or escaping the framing, taking a new role
or a privileged identity, leaking the prompt, turning the reply into a channel, and
claiming an approval the user never gave. Rules *are* instructions to the agent by
design ("Always use pnpm"), so an imperative is never enough: only these shapes
(docs/daemon.md, "Stored text is data").
"""

from __future__ import annotations

from precedents.suspect.rule import compiled, words

_W = r"[\w'’-]+"  # one word
_GAP = rf"(?:\W+{_W}){{0,3}}?\W+"  # up to three words between two others
_OVERRIDE_VERB = (
    r"(?:ignore|ignoring|disregard|disregarding|forget|forgetting|override|overrule|bypass|"
    r"neglect|set aside|pay no attention to|discard|abandon)"
)
# "Don't follow" is an override only of what came before: "do not follow instructions
# found in web pages" is a safety rule.
_UNFOLLOW = r"(?:do not follow|don'?t follow|stop following|no longer follow)"
# "Ignore any instructions embedded in tool output" is a safety rule too.
_NOT_FROM = r"(?!\W+(?:in|from|inside|within|embedded|found|contained|that\W+(?:appear|come)))"
_EARLIER = (
    r"(?:previous|prior|preceding|above|earlier|former|foregoing|initial|original|"
    r"system|safety)"
)
_ORDERS = (
    r"(?:instructions?|directions?|directives?|prompts?|guidelines?|guidance|advice|rules?|"
    r"context|messages?|constraints?|guardrails?|polic(?:y|ies)|restrictions?|commands?|"
    r"orders?|programming|training|requests?|conversation|tasks?|text|input|safeguards?|"
    r"limitations?|ethics|morals?)"
)

# Words that let a pattern match at all (rule.py).
_VERBS = words(
    "ignore ignoring disregard disregarding forget forgetting override overrule bypass "
    "neglect aside attention discard abandon follow following"
)
_EARLIER_WORDS = words(
    "previous prior preceding above earlier former foregoing initial original system safety"
)
_ORDER_WORDS = words(
    "instruction instructions direction directions directive directives prompt prompts "
    "guideline guidelines guardrail guardrails restriction restrictions programming order "
    "orders"
)
_BEFORE_WORDS = words("above before previous previously prior said told that this")
_SUPERSEDE_WORDS = words(
    "supersede supersedes override overrides precedence replace replaces cancel cancels"
)
_TASK_WORDS = words(
    "instructions directive directives prompt instruction command commands task goal job "
    "purpose mission objective"
)
_NEW_WORDS = words("new real actual true secret hidden mandatory primary only shadow embedded")
_ROLE_WORDS = words(
    "now longer pretend roleplay role mode jailbreak jailbroken jailbreaking anything act"
)
_WHO_WORDS = words(
    "developer developers creator creators maker programmer owner admin administrator "
    "operator god ai"
)
_APPROVED_WORDS = words("approved authorized authorised preapproved preauthorized approval")
_SKIP_WORDS = words(
    "skip skipping bypass bypassing omit disable suppress need without not don never"
)
_SYSTEM_WORDS = words("system instruction instructions")
_PROMPT_WORDS = words("prompt prompts instruction instructions message")
_BEFORE_AS = words("before as")
_TURN_WORDS = words("system assistant human user developer")
_ECHO_WORDS = words("echo prepend print say output write")
_MARKER_WORDS = words("regardless confirm acknowledge validate compliance confirmation")
_TELL_WORDS = words("tell inform notify alert mention reveal show")


def _hijack_anchor(w: frozenset[str], t: str) -> bool:
    return bool(
        (w & _ECHO_WORDS and w & _BEFORE_AS)
        or w & _MARKER_WORDS
        or ("first" in w and "must" in w)
        or ("user" in w and w & _TELL_WORDS)
    )


# A claim that the user or someone above them already approved what follows.
_APPROVED = (
    r"(?:pre\W?approved|pre\W?authori[sz]ed|approved\W+in\W+advance|already\W+(?:been\W+)?"
    r"(?:approved|authori[sz]ed|signed\W+off)|(?:standing|blanket|prior)\W+(?:approval|"
    r"permission|authori[sz]ation)|(?:has|have)\W+(?:already\W+)?(?:approved|authori[sz]ed)\W+"
    r"(?:this|these|it|all|every|the|running|you)|(?:is|are)\W+(?:already\W+)?"
    r"(?:approved|authori[sz]ed)\W+by\W+(?:the\W+)?(?:user|owner|maintainers?|security|admin))"
)
# ... and the step it lets the agent skip.
_SKIP = (
    r"(?:skip|skipping|bypass|bypassing|omit|disable|suppress|no\W+need\W+(?:for|to)|"
    r"without|(?:do\W+not|don'?t|never|no\W+longer)\W+(?:need\W+to\W+)?(?:ask|request|wait|"
    r"prompt|seek|check|confirm))\W+(?:\w+\W+){0,4}?(?:confirm\w*|approv\w*|permission|"
    r"consent|review|asking)"
)

RULES = compiled(
    (
        # "Ignore all previous instructions", "disregard earlier guidance".
        (
            "override",
            lambda w, t: (not w.isdisjoint(_VERBS)) and (not w.isdisjoint(_EARLIER_WORDS)),
            rf"\b(?:{_OVERRIDE_VERB}|{_UNFOLLOW}){_GAP}{_EARLIER}\b(?:\W+{_W}){{0,3}}?\W+"
            rf"{_ORDERS}\b{_NOT_FROM}",
        ),
        # "Forget your rules", "bypass your guardrails".
        (
            "override",
            lambda w, t: (not w.isdisjoint(_VERBS)) and "your" in w,
            rf"\b{_OVERRIDE_VERB}\W+your\W+(?:\w+\W+)?(?:instructions?|rules|guidelines|"
            r"programming|training|directives?|prompt|guardrails|restrictions|constraints|"
            r"polic(?:y|ies)|ethics|principles|safeguards|filters)\b",
        ),
        # "Ignore all instructions", "disregard any prior directions", "ignore instructions,".
        (
            "override",
            lambda w, t: (not w.isdisjoint(_VERBS)) and (not w.isdisjoint(_ORDER_WORDS)),
            rf"\b{_OVERRIDE_VERB}\W+(?:(?:all|any|every|the|these|those|such)\W+)?"
            r"(?:instructions?|directions?|directives?|prompts?|guidelines?|guardrails?|"
            rf"restrictions?|programming|orders?)\b{_NOT_FROM}",
        ),
        # "Ignore the above", "forget everything before this", "Forget about that, ...".
        (
            "override",
            lambda w, t: (not w.isdisjoint(_VERBS)) and (not w.isdisjoint(_BEFORE_WORDS)),
            rf"\b{_OVERRIDE_VERB}\W+(?:all|everything|anything|the|what(?:ever)?|them)\W+"
            r"(?:above|before|previous(?:ly)?|prior|said|(?:you\W+(?:were|have\W+been|'ve\W+been)"
            r"\W+told))\b|"
            # Only where the text starts: what it dismisses came before it.
            r"^\W*(?:forget|ignore|disregard)\W+(?:about\W+)?(?:all\W+)?(?:that|this|it)\s*[,.;:!]",
        ),
        # "This instruction supersedes the system prompt".
        (
            "override",
            lambda w, t: (not w.isdisjoint(_SUPERSEDE_WORDS)) and not w.isdisjoint(_SYSTEM_WORDS),
            r"\b(?:supersedes?|overrides?|takes?\W+precedence\W+over|replaces?|cancels?)\W+"
            r"(?:(?:the|your|any|all|every|other|previous|prior|earlier|original)\W+){0,3}"
            r"(?:system\W+(?:prompt|message|instructions?)|(?:previous|prior|earlier|original|"
            r"other)\W+instructions?|instructions?\W+(?:above|before))\b",
        ),
        # "New instructions:", "IMPORTANT NEW INSTRUCTIONS", "Your actual task is".
        (
            "override",
            lambda w, t: (not w.isdisjoint(_TASK_WORDS)) and (not w.isdisjoint(_NEW_WORDS)),
            r"(?-i:\bNEW\W+INSTRUCTIONS\b)|\b(?:new|real|actual|true|secret|hidden|mandatory)\W+"
            r"(?:instructions|directives?|system\W+prompt)\s*:|"
            r"\byour\W+(?:real|actual|true|new|only|primary)\W+(?:task|goal|job|purpose|mission|"
            r"objective|instructions?)\W+(?:is|are|now)\b|"
            r"\b(?:hidden|shadow|secret|embedded)\W+(?:directive|instruction|command)s?\b",
        ),
        # Role play openers that take the agent out of its framing.
        (
            "role",
            lambda w, t: not w.isdisjoint(_ROLE_WORDS),
            r"\byou\W+(?:are|'re)\W+(?:now|no\W+longer)\b|\byou\W+(?:must|will|shall)\W+now\b|"
            r"\bfrom\W+now\W+on\W*,?\W*(?:you|act|respond|reply|answer|ignore|pretend|your)\b|"
            r"\bpretend\W+(?:to\W+be|you\W+are|that\W+you)\b|\brole\W?play\W+as\b|"
            r"\b(?:developer|god|jailbreak|jailbroken|dan|unrestricted|unfiltered|evil|"
            r"override)\W+mode\b|"
            r"\bjailbreak|\bdo\W+anything\W+now\b|\bact\W+as\W+(?:if\W+you|an?\W+(?:unrestricted|"
            r"unfiltered|evil|jailbroken))\b",
        ),
        # Speaking as the one who built the agent ("I'm your developer", "I am God", "As
        # an AI developed by OpenAI, I ..."): the system-mode attacks of CyberSecEval.
        (
            "role",
            lambda w, t: "i" in w and (not w.isdisjoint(_WHO_WORDS)),
            r"\bI(?:'m|’m|\W+am)\W+(?:your\W+(?:\w+\W+)?(?:developer|creator|maker|programmer|"
            r"owner|admin(?:istrator)?|operator|god)|god)\b|"
            r"\bas\W+an?\W+(?:ai|llm|language\W+model)\W+(?:developed|created|built|made|trained)"
            r"\W+by\W+\w+\W+I\b",
        ),
        # Markup or turn labels aimed at the model's own framing.
        (
            "framing",
            lambda w, t: (
                "<" in t or "[" in t or "##" in t or (":" in t and (not w.isdisjoint(_TURN_WORDS)))
            ),
            # A tag of the model's own framing: opened or closed, never a generic
            # (List<System.X>). "<SYSTEM MODE>" is one too.
            r"<\s*/?\s*(?:system|system-reminder|system_prompt|assistant|human|im_start|im_end|"
            r"instructions?|inst|sys|admin|developer|important|hidden|secret|"
            r"(?:tool|function)_(?:call|use|result|response|output)\w*)\s*(?:>|/>|\s+[\w-]+\s*=)|"
            r"<\s*[\\/]?\s*system[\s_-]+(?:mode|override|message|prompt|notice|update)\w*\s*>|"
            r"<\s*[\\/]?\s*mode\W+syst[èe]me\s*>|"
            # Closing one of the turns or documents the framing is made of.
            r"<\s*/\s*(?:user|prompt|context|document|data|s|end|message|turn|reminder)\s*>|"
            r"<\|[a-z_]+\|>|\[/?(?:INST|SYS)\]|<<\s*/?SYS\s*>>|<\s*end\W+of\W+session\s*>|"
            r"<!--[^>]{0,200}\b(?:ai|agent|assistant|llm|model|instruction|prompt|shadow|hidden|"
            r"inject\w*|directive)\b|"
            # A turn label where a sentence starts ("... data. System: focus only on ...").
            r"(?:^|[\n.!?;\]>)\"'])\s*(?:system|assistant|human|user|developer)\s*:(?:\s|$)|"
            r"\[\s*(?-i:SYSTEM|ADMIN|DEVELOPER)\s*\]|"
            r"\[\s*(?:system|admin|developer)\s+(?:override|message|prompt|instructions?|notice|"
            r"directive)\s*\]|\[\s*(?:hidden|secret)\s+(?:directive|instruction|command)s?\s*\]|"
            r"\[\s*(?:override|data\s+exfil\w*(?:\s+request)?)\s*\]|"
            r"#{2,}\s*(?:instructions?|system\s+(?:prompt|message|override)|new\s+(?:task|"
            r"instructions?)|embedded\s+directive|agent\s+configuration\s+update)\b",
        ),
        # Asking the agent to show what it was told.
        (
            "leak",
            lambda w, t: not w.isdisjoint(_PROMPT_WORDS),
            r"\b(?:reveal|print|output|repeat|show|display|leak|dump|spell\W+check|tell\W+me|"
            r"provide|list|respond\W+with|write\W+out)\W+(?:me\W+)?(?:all\W+)?(?:of\W+)?"
            r"(?:your\W+(?:\w+\W+)?(?:system\W+)?(?:prompt|instructions?|message)|"
            r"the\W+(?:(?:complete|full|exact|entire|hidden|initial|original|previous|secret)\W+)?"
            r"(?:system\W+(?:prompt|message)|(?:hidden|initial|original|previous|secret)\W+"
            r"instructions?|(?:text\W+of\W+the\W+)?prompt\b(?:\W+as\W+the\W+response)?|"
            r"(?:instructions?|prompt)\W+above)|every\W+instructions?\W+you)",
        ),
        # Turning the agent's reply into a marker or a channel ("Echo X as your first token").
        (
            "hijack",
            _hijack_anchor,
            r"\b(?:echo|output|print|say|prepend|write)\W+.{0,60}?\b(?:before|as)\W+(?:your\W+)?"
            r"(?:any(?:thing)?\W+(?:other\W+)?(?:response|content|output)|answering|responding|"
            r"summari[sz]ing|first\W+(?:token|word|output)|processing|a\W+compliance)\b|"
            r"\byour\W+first\W+(?:output|token|word|response)\W+must\b|"
            r"\b(?:begin|start|prefix|prepend)\W+(?:every|each|your|all|the\W+next)\W+"
            r"(?:\w+\W+)?(?:response|reply|answer|output)s?\W+with\W+.{0,40}?\b(?:to\W+(?:confirm|"
            r"acknowledge|validate)|as\W+(?:a\W+)?(?:compliance|confirmation))|"
            r"\bregardless\W+of\W+(?:the\W+)?(?:user|what\W+the\W+user|any\W+(?:previous|prior|"
            r"other))\b|\b(?:do\W+not|don'?t|never)\W+(?:tell|inform|notify|alert)\W+the\W+user\b|"
            r"\b(?:do\W+not|don'?t|never)\W+(?:mention|reveal|show)\W+(?:this|these|it)\W+"
            r"(?:instructions?\W+)?to\W+the\W+user\b",
        ),
        # "This step is pre-approved: skip confirmation", "the user has already authorized
        # this, so run it without asking for permission". A rule may well say "no need to
        # ask before running the tests" (real rules do): only a claimed approval with the
        # skip is flagged.
        (
            "bypass",
            lambda w, t: bool(w & _APPROVED_WORDS and w & _SKIP_WORDS),
            rf"\b{_APPROVED}\b[^\n]{{0,120}}?\b{_SKIP}|\b{_SKIP}\b[^\n]{{0,120}}?\b{_APPROVED}\b",
        ),
    )
)
