"""Opening the store for a model: rebuild on a model change or damage, load the model lazily.

The store never imports the model: callers hand in the model (anything with
``model_id`` and ``dimension``) or a function that loads it, so that opening
a store whose model is recorded costs no model load at all.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from precedents.errors import ModelMismatch, StoreError
from precedents.store.collection import Store

log = logging.getLogger("precedents.store")


class VectorModel(Protocol):
    """What the store needs to know of a model: the id and dimension of its vectors."""

    @property
    def model_id(self) -> str: ...

    @property
    def dimension(self) -> int: ...


M = TypeVar("M", bound=VectorModel)


def open_store(
    index_dir: Path, model: VectorModel, *, reader: bool = False, rebuild: bool = False
) -> Store:
    """Open the store at ``index_dir`` for ``model``'s vectors; ``rebuild`` drops it first.

    A store built with another model is rebuilt from scratch (never mixed).
    """
    if rebuild:
        Store.drop(index_dir)
    try:
        return Store(index_dir, model.model_id, model.dimension, reader=reader)
    except ModelMismatch as exc:
        log.warning("%s: rebuilding", exc)
        Store.drop(index_dir)
        return Store(index_dir, model.model_id, model.dimension, reader=reader)


def beside(index_dir: Path, role: str) -> Path:
    """A sibling folder of the index: ``index.rebuild`` (a full rebuild), ``index.old``."""
    return index_dir.with_name(f"{index_dir.name}.{role}")


def switch_in(index_dir: Path, built: Path) -> None:
    """Put a completely built store in place of ``index_dir`` (SPEC §5: beside, then switch).

    Two renames: a reader that looks between them finds no index for an
    instant and retries; a crash between them is undone by :func:`recover`.
    """
    old = beside(index_dir, "old")
    Store.drop(old)
    if index_dir.exists():
        os.replace(index_dir, old)
    os.replace(built, index_dir)
    Store.drop(old)


def recover(index_dir: Path) -> None:
    """Undo what an interrupted switch or rebuild left: restore the old index, drop a
    half-built one. Called by writers only, under the writer lock."""
    old = beside(index_dir, "old")
    if not index_dir.exists() and old.exists():
        log.warning("an interrupted index switch left %s: restoring it", old)
        os.replace(old, index_dir)
    Store.drop(old)
    Store.drop(beside(index_dir, "rebuild"))


class LazyStore(Generic[M]):
    """Open the store without loading the model when its model and dimension are recorded."""

    def __init__(self, index_dir: Path, model_id: str, load: Callable[[], M]) -> None:
        """``model_id`` is the canonical id the store must hold; ``load`` loads the model."""
        self.index_dir = index_dir
        self.model_id = model_id
        self._load = load
        self._model: M | None = None
        self.rebuilt = ""

    @property
    def loaded(self) -> M | None:
        """The model if it was needed (and so loaded), else None."""
        return self._model

    def model(self) -> M:
        """The model, loaded once."""
        if self._model is None:
            self._model = self._load()
        return self._model

    def open(self, rebuild: bool = False) -> Store:
        """The store, opened with the recorded dimension when the model matches.

        A damaged store is dropped and rebuilt (it is derived data); ``rebuilt``
        then says why.
        """
        self.rebuilt = ""
        if not self.index_dir.name.endswith(".rebuild"):
            recover(self.index_dir)
        try:
            stored = None if rebuild else Store.stored_model(self.index_dir)
        except StoreError as exc:
            self.rebuilt, stored, rebuild = str(exc), None, True
        if stored and stored[0] == self.model_id and stored[1] > 0:
            try:
                store = Store(self.index_dir, stored[0], stored[1])
                store.check()
                return store
            except StoreError as exc:
                self.rebuilt = str(exc)
                rebuild = True
        try:
            store = open_store(self.index_dir, self.model(), rebuild=rebuild)
            store.check()
            return store
        except StoreError as exc:
            self.rebuilt = str(exc)
            return open_store(self.index_dir, self.model(), rebuild=True)
