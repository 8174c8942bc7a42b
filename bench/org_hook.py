"""The prompt hook with 30,000 org records loaded (issue #30): beside a stub, and without them.

The org index: ``--repos`` repositories x ``--per-repo`` records (default 500 x 60
= 30,000), each record one chunk. Their texts are the real ADR and rule fixtures
(tests/fixtures/adr-wild, tests/fixtures/rules-wild), ``--real`` of them embedded
with the bundled model (real vectors); every repository takes its records from
those, each vector with a little noise and normalised again (a repository's ADR
is not a copy of another's; embedding 30,000 texts would take this 2-core VM
most of an hour and measure the embedder, not recall). Kinds as an organisation
has them: ADRs (a fifth superseded, marked, its successor named), rules (a third
``scope: org``, a third with globs), team notes that name a path. It is written
as the real org table (Lance, :func:`precedents.org.table.org_schema`) and exported
with :func:`precedents.org.snapshot.export_org` into the state's org folder.

With ``--real-length`` each record is its fixture text whole, cut as the indexer
cuts a document (``chunk_document``, ~4.7 chunks), every chunk embedded: 30,000
documents are then ~142,000 rows (issue #30's "30,000 documents of real length").

The project: the dev notes plus filler up to ``--chunks`` (bench/hook.py's index).
Measured, in one run: the stub hook (``python -I -S -c pass``, the floor any hook
pays) alternated with the prompt hook, first with the daemon serving no org
records, then a daemon serving the 30,000 (a fresh daemon each: the figures are of
a daemon that loaded them at start); the daemon's VmRSS after the hooks; the
snapshot file's size, and what the word index would have added to it. The daemon's
memory is VmRSS, RssAnon and RssFile (a mapped file's pages count in VmRSS), after the
hooks and again after ``--varied`` more prompts of varied questions. Then, in this
process, ``Recall.context`` with and without the org records, alternating (the cost a
question pays, without the noise of process start-ups); the two-stage org ranking
against the whole chunk matrix on the varied questions, at 128 to 1,024 candidates
(the top 10's agreement, score differences, time); and in a fresh child what loading
the snapshot adds to a process's memory and how long it takes (``OrgRecords.refresh``).

    .venv/bin/python bench/org_hook.py [--repos 500] [--per-repo 60] [--runs 60]
                                       [--real-length] [--varied 300]
                                       [--chunks 10000] [--json out.json]
                                       [--home DIR]   (a previous run's state: no build)
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# As the daemon runs (query_daemon/__main__.py): one BLAS thread, set before numpy
# loads, so the in-process figures are the daemon's.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "tests" / "fixtures"


def _bench(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"bench_{name}", HERE / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hook = _bench("hook")


def fixture_texts(limit: int, whole: bool = False) -> list[tuple[str, str, str]]:
    """(kind, title, text) of the real ADR and rule fixtures, ADRs and rules alternating
    (their first 2,000 characters; with ``whole``, all of it)."""
    adrs = sorted((FIXTURES / "adr-wild").rglob("*.md"))
    rules = sorted(p for p in (FIXTURES / "rules-wild").rglob("*") if p.is_file())
    out: list[tuple[str, str, str]] = []
    for adr, rule in zip(adrs, rules, strict=False):
        for kind, path in (("adr", adr), ("rule", rule)):
            text = path.read_text(encoding="utf-8", errors="replace")
            text = text if whole else text[:2000]
            title = next((ln.strip("# ").strip() for ln in text.splitlines() if ln.strip()), "")
            out.append((kind, title[:120] or path.stem, text))
            if len(out) >= limit:
                return out
    return out


def chunk_vectors(
    texts: list[tuple[str, str, str]], embedder: Any, whole: bool
) -> list[np.ndarray]:
    """Each text's chunk vectors: with ``whole``, its chunks as the indexer cuts a
    document (``chunk_document``: ~4.7 a fixture ADR or rule), else one."""
    from precedents.ingest.chunking import chunk_document

    if not whole:
        one = np.asarray(embedder.encode_passages([t for _, _, t in texts]), dtype=np.float32)
        return [one[k : k + 1] for k in range(len(texts))]
    pieces = [chunk_document(title, "", text) or [title] for _, title, text in texts]
    flat = [c for chunks in pieces for c in chunks]
    vectors = np.asarray(embedder.encode_passages(flat), dtype=np.float32)
    ends = np.cumsum([len(c) for c in pieces])
    return [vectors[e - len(c) : e] for c, e in zip(pieces, ends, strict=True)]


def org_rows(
    repos: int, per_repo: int, real: int, embedder: Any, whole: bool = False
) -> list[dict[str, Any]]:
    """The org table's rows: see the module docstring (``vector``: a float32 array)."""
    texts = fixture_texts(real, whole)
    base = chunk_vectors(texts, embedder, whole)
    rng = np.random.default_rng(30)
    rows: list[dict[str, Any]] = []
    for r in range(repos):
        repo = f"service-{r:03d}"
        for i in range(per_repo):
            k = (r * 7 + i) % len(texts)
            kind, title, text = texts[k]
            if i % 10 == 9:
                kind = "note"
            vecs = base[k] + rng.standard_normal(base[k].shape).astype(np.float32) * 0.02
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            scope, mark, later, adr_id = "", "", "[]", ""
            rel = f"docs/adr/{i:04d}-{k}.md"
            if kind == "adr":
                adr_id = f"{i:04d}"
                if i % 5 == 0 and i + 1 < per_repo:
                    mark = f"⚠️superseded → ADR-{i + 1:04d}"
                    later = json.dumps([f"docs/adr/{i + 1:04d}-{(r * 7 + i + 1) % len(texts)}.md"])
                scope = json.dumps({"mentions": [f"src/{repo}/handler.py"], "component": repo})
            elif kind == "rule":
                rel = f".cursor/rules/rule-{i:04d}.mdc"
                third = i % 3
                scope = json.dumps(
                    {
                        "format": "cursor",
                        "mode": "requested",
                        **({"org": True} if third == 0 else {}),
                    }
                    if third != 2
                    else {"format": "cursor", "mode": "files", "globs": [f"src/{repo}/**/*.py"]}
                )
            else:
                rel = f".precedents/notes/note-{i:04d}.md"
                scope = json.dumps({"mentions": [f"src/{repo}/config.py"]})
            rows.extend(
                {
                    "chunk_id": f"{repo}/{rel}#{c}",
                    "doc_id": rel,
                    "kind": kind,
                    "project": repo,
                    "path": rel,
                    "name": title,
                    "description": text[:300],
                    "date": "2024-01-01",
                    "adr_id": adr_id,
                    "chunk_index": c,
                    "text": text[c * 600 : c * 600 + 700] if whole else text,
                    "vector": vec,
                    "scope": scope,
                    "source_hash": f"{r:04d}{i:04d}{k:056d}",
                    "origin": "org",
                    "author": "",
                    "decided": "",
                    "mark": mark,
                    "successors": later,
                    "url": f"https://git.example.com/acme/{repo}.git",
                }
                for c, vec in enumerate(vecs)
            )
    return rows


def write_org_table(rows: list[dict[str, Any]], uri: Path, dimension: int) -> int:
    """``rows`` as the org table (a Lance dataset of :func:`org_schema`), vectors from one
    float32 array (140,000 rows as Python lists would be 1.3 GB here); its version."""
    import lance
    import pyarrow as pa

    from precedents.org.table import org_schema

    schema = org_schema(dimension)
    columns: dict[str, Any] = {}
    for f in schema:
        if f.name == "vector":
            flat = pa.array(np.stack([r["vector"] for r in rows]).reshape(-1), pa.float32())
            columns[f.name] = pa.FixedSizeListArray.from_arrays(flat, dimension)
        else:
            columns[f.name] = pa.array([r.get(f.name) for r in rows], f.type)
    data = pa.Table.from_pydict(columns, schema=schema)
    return int(lance.write_dataset(data, str(uri), schema=schema, mode="create").version)


def word_index_bytes(rows: list[dict[str, Any]]) -> int:
    """What the word index of ``rows`` takes in a snapshot file (export_org leaves it out)."""
    from precedents.store.lexical import Postings, document_texts

    paths = [f"{r['project']}/{r['path']}" for r in rows]
    _, documents = document_texts(paths, [r["text"] for r in rows])
    buf = io.BytesIO()
    np.savez(buf, **dict(Postings.build(documents).to_arrays()))
    return len(buf.getvalue())


def build_org(home: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Write the org table and its snapshot into ``home``'s org folder; what it took."""
    from precedents.config import load_settings
    from precedents.models.embedding import load_embedder
    from precedents.org.snapshot import ORG_SNAPSHOT, export_org

    os.environ["PRECEDENTS_HOME"] = str(home)
    settings = load_settings(discover_claude=False)
    embedder = load_embedder(settings.model_spec())
    started = time.perf_counter()
    rows = org_rows(args.repos, args.per_repo, args.real, embedder, args.real_length)
    made = time.perf_counter() - started
    table = home / "org-table" / "chunks.lance"
    version = write_org_table(rows, table, embedder.dimension)
    out = settings.org_dir / ORG_SNAPSHOT
    started = time.perf_counter()
    export_org(table, version, out, model=embedder.model_id, dimension=embedder.dimension)
    return {
        "org_documents": len({(r["project"], r["path"]) for r in rows}),
        "org_records": len(rows),
        "rows_made_s": round(made, 1),
        "export_s": round(time.perf_counter() - started, 1),
        "snapshot_mib": round(out.stat().st_size / 2**20, 1),
        "word_index_would_add_mib": round(word_index_bytes(rows) / 2**20, 1),
    }


def memory_of(pid: int | str = "self") -> dict[str, float]:
    """VmRSS, its anonymous and file-backed parts (a mapped file's pages count in VmRSS
    but are the page cache's to reclaim) and the peak, in MiB."""
    out: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile", "RssShmem", "VmHWM"):
            out[key] = round(int(value.split()[0]) / 1024, 1)
    return out


def varied_questions(limit: int) -> list[str]:
    """The dev questions, then titles and paragraphs of the ADR and rule fixtures: many
    questions about many subjects (each reads other documents' chunk pages)."""
    out = list(hook.questions())
    for _, title, text in fixture_texts(limit, whole=True):
        out.append(title)
        paragraphs = [p for p in text.split("\n\n") if len(p) > 120]
        if paragraphs:
            out.append(paragraphs[len(paragraphs) // 2][:400])
    return out[:limit]


def measure(home: Path, runs: int, env: dict[str, str], varied: int = 0) -> dict[str, Any]:
    """A fresh daemon on ``home``: stub and prompt hook alternated, then its memory; then
    ``varied`` more prompts of varied questions, and its memory again."""
    daemon = hook.start_daemon(home)
    try:
        started = time.perf_counter()
        hook.wait_ready(home)
        ready = time.perf_counter() - started
        time.sleep(2.0)  # the refresh thread's first passes (the org snapshot's load)
        texts = hook.questions()
        stdins = [
            json.dumps(
                {
                    "prompt": texts[i % len(texts)],
                    "cwd": hook.PROJECT,
                    "hook_event_name": "UserPromptSubmit",
                    "session_id": f"org-bench-{i}",
                }
            ).encode()
            for i in range(runs + 5)
        ]
        for s in stdins[:5]:
            hook.hook_once(s.replace(b'"org-bench-', b'"warm-'), env)
        stub: list[float] = []
        prompt: list[float] = []
        org_lines = 0
        for i in range(runs):
            t = time.perf_counter()
            subprocess.run([sys.executable, "-I", "-S", "-c", "pass"], env=env, check=True)
            stub.append(time.perf_counter() - t)
            took, out = hook.hook_once(stdins[5 + i], env)
            prompt.append(took)
            org_lines += out.count(b"(org, ")
        memory = memory_of(daemon.pid)
        more = varied_questions(varied) if varied else []
        for i, text in enumerate(more):
            prompt_json = {
                "prompt": text,
                "cwd": hook.PROJECT,
                "hook_event_name": "UserPromptSubmit",
                "session_id": f"org-varied-{i}",
            }
            _, out = hook.hook_once(json.dumps(prompt_json).encode(), env)
            org_lines += out.count(b"(org, ")
        after = memory_of(daemon.pid) if more else {}
    finally:
        daemon.terminate()
        daemon.wait(30)
    p50 = hook.stats(prompt)["p50"] - hook.stats(stub)["p50"]
    return {
        "ready_s": round(ready, 1),
        "stub_ms": hook.stats(stub),
        "prompt_hook_ms": hook.stats(prompt),
        "p50_above_stub_ms": round(p50, 1),
        "org_lines_injected": org_lines,
        "daemon_mib": memory,
        **({f"daemon_mib_after_{len(more)}_varied": after} if more else {}),
    }


def agreement(snapshot: Any, recall: Any, excluded: frozenset[str], count: int) -> dict[str, Any]:
    """The two stages against the whole matrix (:class:`VectorSnapshot` over the chunk
    vectors in memory, what the daemon ranked before) on ``count`` varied questions, one
    at a time, at several first-stage sizes: how often the top 10 (and 3) are the same
    documents in the same order, the mean overlap of the top 10, the largest score
    difference, and the ranking's time."""
    from precedents.recall.org import ORG_KEY
    from precedents.recall.org_ranking import CANDIDATES, OrgSnapshot
    from precedents.recall.vectors import VectorSnapshot

    texts = varied_questions(count)
    vectors = np.asarray(recall.embedder.encode_queries(texts), dtype=np.float32)
    whole = VectorSnapshot(
        version=snapshot.version, meta=snapshot.meta, matrix=np.array(snapshot.matrix)
    )
    exact = [whole.rank_many(v[None, :], (ORG_KEY,), excluded=excluded)[0] for v in vectors]
    del whole
    out: dict[str, Any] = {"questions": len(texts), "default_candidates": CANDIDATES}
    for size in (128, 256, 512, 1024):
        two = OrgSnapshot(
            version=snapshot.version,
            meta=snapshot.meta,
            matrix=snapshot.matrix,
            documents=snapshot.documents,
            coarse=snapshot.coarse,
            candidates=size,
        )
        took: list[float] = []
        same10 = same3 = 0
        overlap: list[float] = []
        diff = 0.0
        for v, want in zip(vectors, exact, strict=True):
            started = time.perf_counter()
            got = two.rank_many(v[None, :], (ORG_KEY,), excluded=excluded)[0]
            took.append(time.perf_counter() - started)
            a = [(h.record.path, h.chunk_index) for h in got[:10]]
            b = [(h.record.path, h.chunk_index) for h in want[:10]]
            same10 += a == b
            same3 += a[:3] == b[:3]
            overlap.append(len({x for x, _ in a} & {x for x, _ in b}) / max(1, len(b)))
            scores = {h.record.path: h.score for h in want}
            diff = max(
                [
                    diff,
                    *(abs(h.score - scores[h.record.path]) for h in got if h.record.path in scores),
                ]
            )
        out[str(size)] = {
            "top10_same_order": round(same10 / len(texts), 4),
            "top3_same_order": round(same3 / len(texts), 4),
            "top10_overlap_mean": round(float(np.mean(overlap)), 4),
            "max_score_difference": diff,
            "ranking_ms": hook.stats(took),
        }
    return out


def in_process(home: Path, runs: int, varied: int = 300) -> dict[str, Any]:
    """``Recall.context`` in this process, the org records served and not, alternating."""
    from precedents.config import load_settings
    from precedents.ingest.sources import project_keys
    from precedents.recall.core import Recall
    from precedents.recall.org import ORG_KEY, OrgRecords

    os.environ["PRECEDENTS_HOME"] = str(home)
    recall = Recall(load_settings(discover_claude=False), batch=True)
    served, none = recall.org, OrgRecords(home / "no-org")
    texts = hook.questions()
    samples: dict[str, list[float]] = {"without": [], "with": []}
    for i in range(2 * runs + 10):
        label = "with" if i % 2 else "without"
        recall.org = recall.marks.org = served if label == "with" else none
        started = time.perf_counter()
        recall.context(texts[(i // 2) % len(texts)], hook.PROJECT, session=f"in-{i}")
        if i >= 10:  # the first few warm the subsets, the masks, the model
            samples[label].append(time.perf_counter() - started)
    # The org ranking alone (the question embedded already): what the org records add to
    # a question, less the noise of everything else a context does.
    keys = tuple(project_keys(hook.PROJECT))
    excluded = served.excluded(keys[0], recall.snapshot, keys)
    vectors = [recall.embed(t) for t in texts[:20]]
    ranked: list[float] = []
    for i in range(runs + 10):
        started = time.perf_counter()
        served.snapshot.rank_many(vectors[i % len(vectors)][None, :], (ORG_KEY,), excluded=excluded)
        if i >= 10:
            ranked.append(time.perf_counter() - started)
    sweep = agreement(served.snapshot, recall, excluded, varied)
    memory = memory_of()
    recall.close()
    out = {f"context_{k}_org_ms": hook.stats(v) for k, v in samples.items()}
    out["org_ranking_alone_ms"] = hook.stats(ranked)
    out["agreement_with_whole_matrix"] = sweep
    out["bench_process_mib"] = memory
    out["p50_org_adds_ms"] = round(
        out["context_with_org_ms"]["p50"] - out["context_without_org_ms"]["p50"], 1
    )
    return out


LOAD_CHILD = """
import gc, json, sys, time
from pathlib import Path
from precedents.ingest.background import release_memory
from precedents.recall.org import OrgRecords
from precedents.recall.source import Model

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) / 1024
    return 0.0

gc.collect(); release_memory()
before = status("VmRSS")
records = OrgRecords(Path(sys.argv[1]))
started = time.perf_counter()
loaded = records.refresh(Model(sys.argv[2], int(sys.argv[3])))
took = time.perf_counter() - started
gc.collect(); release_memory()
after, peak = status("VmRSS"), status("VmHWM")
anon, mapped = status("RssAnon"), status("RssFile")
matrix = records.snapshot.matrix.nbytes / 2**20
coarse = getattr(records.snapshot, "coarse", None)
coarse = 0.0 if coarse is None else coarse.nbytes / 2**20
del records
gc.collect(); release_memory()
print(json.dumps({"loaded": loaded, "before": before, "after": after, "peak": peak,
                  "anon": anon, "file": mapped, "seconds": took,
                  "matrix": matrix, "coarse": coarse, "dropped": status("VmRSS")}))
"""


def load_memory(home: Path) -> dict[str, Any]:
    """What loading the org snapshot adds to a fresh process's memory (MiB)."""
    from precedents.config import load_settings
    from precedents.models.embedding import load_embedder

    os.environ["PRECEDENTS_HOME"] = str(home)
    settings = load_settings(discover_claude=False)
    embedder = load_embedder(settings.model_spec())
    child = subprocess.run(
        [
            sys.executable,
            "-c",
            LOAD_CHILD,
            str(settings.org_dir),
            embedder.model_id,
            str(embedder.dimension),
        ],
        capture_output=True,
        check=True,
    )
    got = json.loads(child.stdout)
    return {
        "loaded": got["loaded"],
        "load_s": round(got["seconds"], 2),
        "process_before_mib": round(got["before"], 1),
        "adds_mib": round(got["after"] - got["before"], 1),
        "process_rss_anon_mib": round(got["anon"], 1),
        "process_rss_file_mib": round(got["file"], 1),
        "chunk_matrix_mib_mapped_not_read": round(got["matrix"], 1),
        "document_vectors_mib": round(got["coarse"], 1),
        "peak_while_loading_mib": round(got["peak"], 1),
        "left_after_dropping_it_mib": round(got["dropped"] - got["before"], 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repos", type=int, default=500)
    parser.add_argument("--per-repo", type=int, default=60)
    parser.add_argument("--real", type=int, default=400, help="fixture texts embedded")
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument(
        "--real-length",
        action="store_true",
        help="each record its whole fixture text, chunked as the indexer does (~4.7 rows)",
    )
    parser.add_argument("--varied", type=int, default=300, help="varied questions after")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--home", type=Path, help="a previous run's state folder: no build")
    args = parser.parse_args()
    if not (hook.EVAL / "dev" / "notes").is_dir():
        print(f"skipped: {hook.EVAL / 'dev' / 'notes'} is missing")
        return 0
    sys.path.insert(0, str(HERE.parent))
    result: dict[str, Any] = {"cpus": os.cpu_count(), "load_avg_1m_start": os.getloadavg()[0]}
    if args.home is not None:
        home = args.home
        snapshot = home / "org" / "snapshot.npz"
        aside = snapshot.with_name("snapshot.npz.aside")
        env = {k: v for k, v in os.environ.items() if not k.startswith("PRECEDENTS_")}
        env["PRECEDENTS_HOME"] = str(home)
        snapshot.rename(aside)  # the daemon without org records first
        try:
            result["without_org"] = measure(home, args.runs, env)
        finally:
            aside.rename(snapshot)
        result["org"] = {"snapshot_mib": round(snapshot.stat().st_size / 2**20, 1)}
    else:
        home = Path(tempfile.mkdtemp(prefix="precedents-bench-org-"))
        print(f"building a {args.chunks}-chunk project index in {home} ...", flush=True)
        result["project_chunks"] = hook.build_index(home, args.chunks)
        env = {k: v for k, v in os.environ.items() if not k.startswith("PRECEDENTS_")}
        env["PRECEDENTS_HOME"] = str(home)
        result["without_org"] = measure(home, args.runs, env)
        print("building the org index ...", flush=True)
        result["org"] = build_org(home, args)
    result["with_org"] = measure(home, args.runs, env, args.varied)
    result["load_avg_1m_daemons"] = round(os.getloadavg()[0], 2)
    result["org_load"] = load_memory(home)
    result["in_process"] = in_process(home, args.runs * 2, args.varied)
    result["load_avg_1m_end"] = round(os.getloadavg()[0], 2)
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
