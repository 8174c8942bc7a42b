"""One worker thread that embeds and ranks queued questions as one batch."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future

from precedents.store.rows import DocumentHit

# (prompt, project keys, paths of documents it must not rank)
Work = tuple[str, tuple[str, ...], frozenset[str]]
# (hits, relevance of the top-ranked records or None, embed ms, search ms)
Ranked = tuple[list[DocumentHit], float | None, float, float]


class Batcher:
    """One worker thread that embeds and ranks whatever questions queued up, as one batch.

    The model is not safe to call from many threads at once, and on a small
    CPU one batch of ten short texts costs far less than ten calls in a row.
    Ranking runs in the same thread, one matrix product per batch: ten
    client threads searching at once fought over the GIL and BLAS threads for
    up to 100 ms each (measured), against ~2 ms for one search alone.
    """

    def __init__(self, work: Callable[[list[Work]], list[Ranked]]) -> None:
        self._work = work
        self._queue: queue.Queue[tuple[Work, Future[Ranked]] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="embed", daemon=True)
        self._thread.start()

    def submit(self, item: Work) -> Ranked:
        """Rank one question (blocks until its batch is done)."""
        fut: Future[Ranked] = Future()
        self._queue.put((item, fut))
        return fut.result()

    def close(self) -> None:
        """Stop the worker thread."""
        self._queue.put(None)

    def _run(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            while True:
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    self._queue.put(None)
                    break
                batch.append(nxt)
            try:
                results = self._work([item for item, _ in batch])
            except Exception as exc:  # handed to every waiting caller
                for _, fut in batch:
                    fut.set_exception(exc)
                continue
            for (_, fut), result in zip(batch, results, strict=True):
                fut.set_result(result)
