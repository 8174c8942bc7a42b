"""Model ids beyond the bundled ones: which names precedents knows, and Hugging Face.

Two messages used to mislead (issue #21): a typo in config.toml's ``model``
said to install torch, and ``setup --model no-such/model`` said to check the
network. Here a name is judged before anything is suggested: a known name, a
folder, or a model already in the Hugging Face cache is loadable; anything
else is unknown, said with the closest known name and the list. A download
that fails says why: no such repository, a gated one, an id that cannot be
one, or no network (the one case where the network is to blame).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from precedents.errors import ModelError, ModelNotAvailable
from precedents.profiles.registry import closest, listing, unknown_model_text
from precedents.profiles.registry import in_hub_cache as in_hub_cache


def unknown_model(model: str, known: Mapping[str, Sequence[str]]) -> ModelNotAvailable:
    """The one-line error for a model id that names nothing precedents can load (the
    text `load_settings` gives the same name: precedents.profiles.registry)."""
    return ModelNotAvailable(unknown_model_text(model, known))


def download(model: str, known: Mapping[str, Sequence[str]], torch_extra: str) -> str:
    """Fetch ``model`` from Hugging Face into its cache; returns the snapshot folder.

    Raises :class:`ModelNotAvailable` (the user's to fix: no such model, a
    gated one, or no hub client installed) or :class:`ModelError` (the network)."""
    names = [n for model_id, aliases in known.items() for n in (model_id, *aliases)]
    guess = closest(model, names)
    if guess and "/" not in model:  # a bare name close to a known one: a typo, not a hub id
        raise unknown_model(model, known)
    hint = f"; did you mean {guess!r}?" if guess else ""
    os.environ["HF_HUB_OFFLINE"] = "0"
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise ModelNotAvailable(
            f"model {model!r} is not one precedents ships{hint}; a Hugging Face model runs on "
            f"sentence-transformers and torch, which are not installed: {torch_extra}"
        ) from None
    try:
        path: Any = snapshot_download(repo_id=model)
    except Exception as exc:  # the hub's errors, HTTP and OS errors: many classes
        raise _download_error(model, exc, hint, known) from None
    return str(path)


def _download_error(
    model: str, exc: Exception, hint: str, known: Mapping[str, Sequence[str]]
) -> ModelError:
    # By class name: huggingface_hub moved these classes between releases.
    kinds = {cls.__name__ for cls in type(exc).__mro__}
    if "GatedRepoError" in kinds:
        return ModelNotAvailable(
            f"model {model!r} is gated on Hugging Face: accept its terms on huggingface.co, "
            "log in (`hf auth login`), then run this again"
        )
    if "HFValidationError" in kinds:
        return ModelNotAvailable(
            f"model {model!r} cannot be a Hugging Face model id (ORG/NAME, of letters, "
            f"digits, '-', '_' and '.'){hint}"
        )
    if "RepositoryNotFoundError" in kinds:
        return ModelNotAvailable(
            f"model {model!r} does not exist on Hugging Face (or is private){hint}. "
            f"Known: {listing(known)}"
        )
    if "LocalEntryNotFoundError" in kinds:  # the hub could not be reached, nothing cached
        return ModelError(
            f"could not download {model!r}: Hugging Face cannot be reached "
            f"({_first_line(exc)}); check the network and run this again{hint}"
        )
    return ModelError(f"could not download {model!r} ({_first_line(exc)}){hint}")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    if not text:
        return type(exc).__name__
    first = text.splitlines()[0]
    # huggingface_hub puts the cause first: "Got: ConnectError: [Errno -2] ..."
    return first.removeprefix("Got: ")[:200]
