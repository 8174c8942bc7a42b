"""One worker thread that embeds and ranks queued questions as one batch, and the
torch threads that worker gets (:func:`daemon_threads`)."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future

from precedents.models.embedding import Embedder
from precedents.store.rows import DocumentHit

# (prompt, project keys, paths of documents it must not rank)
Work = tuple[str, tuple[str, ...], frozenset[str]]
# (hits, relevance of the top-ranked records or None, embed ms, search ms)
Ranked = tuple[list[DocumentHit], float | None, float, float]


def daemon_threads(embedder: Embedder, threads: int = 1) -> None:
    """``threads`` torch threads for CPU queries in the daemon: one, unless
    ``PRECEDENTS_TORCH_THREADS`` says otherwise (``ModelSpec.torch_threads``).

    Measured on the 2-core dev box with other work running (docs/daemon.md):
    one query encoded in 21/27 ms (p50/max) on one thread; on two, 15 ms p50
    but with spikes to 250-800 ms, because spinning OpenMP workers fight
    whatever else uses the CPU (the agent's own builds, ten hook processes
    starting at once). A burst of nine took 100-120 ms on one thread and
    75-400 ms on two. A hook's p95 matters more than its p50.
    """
    if (
        getattr(embedder, "device", "cpu") != "cpu"
        or getattr(embedder, "runtime", "") == "onnxruntime"
    ):
        return  # a GPU, or ONNX Runtime (sets its own threads; must not import torch)
    try:
        import torch
    except ImportError:
        return
    torch.set_num_threads(threads)


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
