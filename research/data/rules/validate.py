"""Validate the rules training data: parse, paths, ids, counts, lengths.

Run from anywhere: python research/data/rules/validate.py
"""

import collections
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def load(name):
    rows = []
    with open(os.path.join(HERE, name), encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                sys.exit(f"{name}:{n}: does not parse: {e}")
    return rows


def main():
    pairs = load("pairs.jsonl")
    unrel = load("unrelated.jsonl")
    errors = []
    ids = collections.Counter(r["id"] for r in pairs + unrel)
    errors += [f"duplicate id {i}" for i, c in ids.items() if c > 1]
    records = {"records/" + f for f in os.listdir(os.path.join(HERE, "records"))}
    per = collections.defaultdict(collections.Counter)
    for r in pairs:
        if set(r) - {"id", "record", "text", "kind", "also"}:
            errors.append(f"{r['id']}: unexpected keys {set(r)}")
        if r["kind"] not in ("situational", "paraphrase"):
            errors.append(f"{r['id']}: bad kind {r['kind']}")
        for p in [r["record"], *r.get("also", [])]:
            if p not in records:
                errors.append(f"{r['id']}: missing record {p}")
        if r["record"] in r.get("also", []):
            errors.append(f"{r['id']}: also repeats record")
        per[r["record"]][r["kind"]] += 1
    unused = records - set(per)
    errors += [f"record without messages: {p}" for p in sorted(unused)]
    plain_ids = {r["id"] for r in unrel if "padded_from" not in r}
    for r in unrel:
        if r["kind"] != "unrelated":
            errors.append(f"{r['id']}: bad kind")
        if "padded_from" in r and r["padded_from"] not in plain_ids:
            errors.append(f"{r['id']}: padded_from unknown {r['padded_from']}")
    texts = collections.Counter(r["text"] for r in pairs + unrel)
    errors += [f"duplicate text: {t[:60]!r}" for t, c in texts.items() if c > 1]
    for e in errors:
        print("ERROR", e)

    def med(xs):
        return statistics.median(xs) if xs else 0

    sit = [len(r["text"]) for r in pairs if r["kind"] == "situational"]
    par = [len(r["text"]) for r in pairs if r["kind"] == "paraphrase"]
    up = [len(r["text"]) for r in unrel if "padded_from" not in r]
    ud = [len(r["text"]) for r in unrel if "padded_from" in r]
    print(f"records: {len(records)} (with messages: {len(per)})")
    print(
        f"pairs: {len(pairs)}  situational {len(sit)}  paraphrase {len(par)}  "
        f"with also: {sum(1 for r in pairs if r.get('also'))}"
    )
    sc = collections.Counter(c["situational"] for c in per.values())
    print("situational per record:", dict(sorted(sc.items())))
    print(f"unrelated: {len(unrel)}  plain {len(up)}  padded {len(ud)}")
    print(
        f"length median  situational {med(sit)} (min {min(sit)}, max {max(sit)})  "
        f"paraphrase {med(par)}"
    )
    print(
        f"length median  unrelated plain {med(up)} (min {min(up)}, max {max(up)})  "
        f"padded {med(ud)} (min {min(ud)}, max {max(ud)})  all {med(up + ud)}"
    )
    by_repo = collections.Counter(p.split("/")[1].split("__")[0] for p in records)
    print("records by source:", dict(by_repo))
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
