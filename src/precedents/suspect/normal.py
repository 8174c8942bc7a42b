"""What the suspect patterns read: a record's text with its disguises undone.

An attacker hides orders from a pattern, not from the model: the model reads through
an invisible character, a Cyrillic ``о`` in ``ignоre``, ``1gn0r3`` or a base64 blob it
is asked to decode. So the patterns read every *variant* of a text that undoes one
disguise (:func:`variants`), and only for matching: what is shown is never rewritten
here (precedents.inert renders it).
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata

from precedents.suspect.confusables import CONFUSABLES

# Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt, Unicode 15.1):
# characters no renderer shows. Hardcoded from that file; a reader's font draws nothing
# for them, so ``Ig\u034fnore`` reads ``Ignore``. Format characters (Cf) and the like are
# dropped too (precedents.inert drops them from what is shown).
_IGNORABLE_RANGES = (
    (0x00AD, 0x00AD),  # SOFT HYPHEN
    (0x034F, 0x034F),  # COMBINING GRAPHEME JOINER
    (0x061C, 0x061C),  # ARABIC LETTER MARK
    (0x115F, 0x1160),  # HANGUL CHOSEONG / JUNGSEONG FILLER
    (0x17B4, 0x17B5),  # KHMER VOWEL INHERENT AQ, AA
    (0x180B, 0x180F),  # MONGOLIAN FREE VARIATION SELECTORS, VOWEL SEPARATOR
    (0x200B, 0x200F),  # ZERO WIDTH SPACE .. RIGHT-TO-LEFT MARK
    (0x202A, 0x202E),  # bidi embeddings and overrides
    (0x2060, 0x206F),  # WORD JOINER .. NOMINAL DIGIT SHAPES (isolates included)
    (0x3164, 0x3164),  # HANGUL FILLER
    (0xFE00, 0xFE0F),  # VARIATION SELECTOR-1..16
    (0xFEFF, 0xFEFF),  # ZERO WIDTH NO-BREAK SPACE
    (0xFFA0, 0xFFA0),  # HALFWIDTH HANGUL FILLER
    (0xFFF0, 0xFFF8),  # unassigned specials
    (0x1BCA0, 0x1BCA3),  # SHORTHAND FORMAT controls
    (0x1D173, 0x1D17A),  # MUSICAL SYMBOL BEGIN BEAM .. END PHRASE
    (0xE0000, 0xE0FFF),  # tags, VARIATION SELECTOR-17..256, reserved
)
# Other characters a reader never sees: the remaining format characters (Arabic number
# signs, interlinear annotation, Egyptian hieroglyph controls) and private use.
_OTHER_BMP = "\u0600-\u0605\u06dd\u070f\u0890\u0891\u08e2\ufff9-\ufffb\ue000-\uf8ff"
_OTHER_ASTRAL = "\U000110bd\U000110cd\U00013430-\U0001343f\U000f0000-\U0010ffff"
_UNSEEN = re.compile(
    "["
    + "".join(f"{chr(a)}-{chr(b)}" for a, b in _IGNORABLE_RANGES)
    + _OTHER_BMP
    + _OTHER_ASTRAL
    + "]"
)
# The same, first looked for in the Basic Multilingual Plane only (a class the regex
# engine tests as a bitmap: 4x faster) and beyond it only in text that has such a
# character at all (emoji do).
_UNSEEN_BMP = re.compile(
    "["
    + "".join(f"{chr(a)}-{chr(b)}" for a, b in _IGNORABLE_RANGES if b < 0x10000)
    + _OTHER_BMP
    + "]"
)
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
# The fillers are drawn as blanks: one between two words reads as a space.
_BLANKS = re.compile("[\u115f\u1160\u3164\uffa0\u180e]")

_WORD = re.compile(r"[^\W_]+")
_LOOKALIKES = frozenset(CONFUSABLES)
_LOOKALIKE_BMP = re.compile("[" + "".join(sorted(c for c in CONFUSABLES if c < "\U00010000")) + "]")
_FOLD = str.maketrans(CONFUSABLES)

# Leetspeak, read only as letters: ``1gn0r3 4ll pr3v10us`` → ``ignore all previous``.
# ``1`` is ``i`` or ``l``: both readings are tried.
_LEET_I = str.maketrans("013457@$", "oieastas")
_LEET_L = str.maketrans("013457@$", "oleastas")
# Where a leet word may be: leet digits before a letter (found fast: the pattern opens
# with a character set). :func:`_leet_words` keeps those inside a word.
_LEETISH = re.compile(r"(?<![013457@$])[013457@$]++[a-z]")  # from a run's start: linear

# A run of base64 (standard or URL-safe) long enough to hold a sentence.
_BASE64 = re.compile(r"[A-Za-z0-9+/_-]{16,}={0,2}")
_MAX_DECODED = 8


def _hidden(nfkc: str) -> bool:
    """Whether ``nfkc`` holds a character no reader sees."""
    if _UNSEEN_BMP.search(nfkc):
        return True
    return _ASTRAL.search(nfkc) is not None and _UNSEEN.search(nfkc) is not None


def _lookalike(text: str) -> bool:
    if _LOOKALIKE_BMP.search(text):
        return True
    return _ASTRAL.search(text) is not None and not _LOOKALIKES.isdisjoint(text)


def plain(text: str) -> str:
    """``text`` in NFKC with hidden characters dropped and whitespace collapsed."""
    if text.isascii():
        return " ".join(text.split())
    nfkc = unicodedata.normalize("NFKC", text)
    return " ".join((_UNSEEN.sub("", nfkc) if _hidden(nfkc) else nfkc).split())


def _fold_word(match: re.Match[str]) -> str:
    word = match.group(0)
    # A word of another script is left alone (Russian has its own patterns); a word
    # that mixes in Latin letters, or is made of look-alikes only, is folded.
    if word.isascii() or not (_LOOKALIKES & set(word)):
        return word
    if any("a" <= ch.lower() <= "z" for ch in word) or all(ch in _LOOKALIKES for ch in word):
        return word.translate(_FOLD)
    return word


def variants(text: str) -> list[str]:
    """The readings of ``text`` the patterns look at, the plain one first: with
    invisible characters dropped and (when some are there) read as spaces, look-alike
    letters folded to Latin, leetspeak read as letters. Each is distinct."""
    out = [plain(text)]
    if not text.isascii():
        nfkc = unicodedata.normalize("NFKC", text)
        if _hidden(nfkc):
            out.append(plain(_BLANKS.sub(" ", nfkc)))  # the fillers as spaces
            out.append(" ".join(_UNSEEN.sub(" ", nfkc).split()))  # all of them
        for reading in list(out):
            if _lookalike(reading):
                out.append(_WORD.sub(_fold_word, reading))
    for reading in list(out):
        if _leet_words(reading.lower()) >= 2:
            out += [reading.translate(_LEET_I), reading.translate(_LEET_L)]
    return list(dict.fromkeys(out))


def _leet_words(lower: str) -> int:
    """How many words of ``lower`` look like leetspeak: a leet digit between letters
    (``pr3v10us``), or a word opened by one and two letters (``4ll``), the latter only
    counted beside one of the former: ``5th``, ``3rd``, ``2xx`` are no leetspeak, nor
    are ``sha256``, ``utf8``, ``python3``, ``k8s``, ``e2e``."""
    inside = opening = 0
    for match in _LEETISH.finditer(lower):
        at = match.start()
        before = lower[at - 1] if at else " "
        if before.isalpha():
            inside += 1
        elif not before.isalnum() and lower[match.end() : match.end() + 1].isalpha():
            opening += 1
    return inside + opening if inside else 0


def decoded(text: str) -> list[str]:
    """The base64 runs of ``text`` that decode to text (a sentence, a command), decoded."""
    out: list[str] = []
    for match in _BASE64.finditer(text):
        run = match.group(0)
        if run.isalpha() and (run.islower() or run.isupper()):
            continue  # one word of one case: a name, not an encoding
        blob = run.rstrip("=")
        blob += "=" * (-len(blob) % 4)
        try:
            raw = base64.b64decode(blob.replace("-", "+").replace("_", "/"), validate=True)
            words = raw.decode("utf-8")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            continue
        printable = sum(ch.isprintable() or ch in "\n\t" for ch in words)
        if " " in words and printable >= 0.95 * len(words):
            out.append(words)
            if len(out) >= _MAX_DECODED:
                break
    return out
