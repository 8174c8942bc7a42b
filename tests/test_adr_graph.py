"""The status rule on small synthetic folders: one case per hard situation."""

from __future__ import annotations

from pathlib import Path

import pytest

from precedents.adr_graph import AdrChainError, build_graph
from precedents.errors import UsageError


def nygard(n: int, title: str, status: str, extra: str = "") -> str:
    return (
        f"# {n}. {title}\n\nDate: 2024-01-0{n % 9 + 1}\n\n## Status\n\n{status}\n\n"
        f"## Context\n\nSome context.\n\n## Decision\n\nWe will do it.{extra}\n"
    )


def folder(tmp_path: Path, files: dict[str, str | bytes]) -> Path:
    root = tmp_path / "adr"
    root.mkdir(exist_ok=True)
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


def test_cycle_makes_records_unknown(tmp_path: Path) -> None:
    root = folder(
        tmp_path,
        {
            "0001-a.md": nygard(1, "A", "Superseded by [2. B](0002-b.md)"),
            "0002-b.md": nygard(2, "B", "Superseded by [1. A](0001-a.md)"),
            "0003-c.md": nygard(3, "C", "Superseded by [1. A](0001-a.md)"),
        },
    )
    g = build_graph(root)
    assert g.status_of("1") == g.status_of("2") == "unknown"
    assert g.mark_of("1") == "status unknown"
    # Leading into a cycle is still superseded, but its end is named as unknown.
    assert g.status_of("3") == "superseded"
    assert g.mark_of("3") == "⚠️superseded → ADR-0001 (status unknown)"
    assert any(f.kind == "cycle" for f in g.check())
    with pytest.raises(AdrChainError, match="cycle"):
        g.chain("1")
    with pytest.raises(AdrChainError):
        g.chain("3")


def test_dangling_successor(tmp_path: Path) -> None:
    root = folder(tmp_path, {"0001-a.md": nygard(1, "A", "Superseded by [28. X](0028-x.md)")})
    g = build_graph(root)
    rec = g.get("ADR-0001")
    assert rec.status == "superseded"
    assert rec.successors == ["0028-x.md"]
    # The mark never names a successor the folder does not hold (SPEC §4 decision
    # in docs/adr-graph.md); `adr check` lists the broken link with file and line.
    assert rec.mark == "⚠️superseded (successor missing)"
    findings = g.check()
    assert [f.kind for f in findings] == ["dangling_link"]
    assert findings[0].path == "0001-a.md"
    assert findings[0].message.startswith("line 7: ADR-0001 superseded by 0028-x.md")
    with pytest.raises(AdrChainError, match="dangling"):
        g.chain("1")


def test_proposed_successor_replaces_nothing(tmp_path: Path) -> None:
    root = folder(
        tmp_path,
        {
            "0001-a.md": nygard(1, "A", "Accepted"),
            "0002-b.md": nygard(2, "B", "Proposed\n\nSupersedes [1. A](0001-a.md)"),
            "0003-c.md": nygard(3, "C", "Rejected\n\nSupersedes [1. A](0001-a.md)"),
        },
    )
    g = build_graph(root)
    assert g.status_of("1") == "live"
    assert g.status_of("2") == "proposed" and g.mark_of("2") == "△proposed (not approved)"
    assert g.status_of("3") == "rejected" and g.mark_of("3") == "⚠️rejected"
    # Once accepted, the same declaration counts.
    (root / "0002-b.md").write_text(nygard(2, "B", "Accepted\n\nSupersedes [1. A](0001-a.md)"))
    g = build_graph(root)
    assert g.status_of("1") == "superseded"
    assert g.get("1").successors == ["0002-b.md"]


def test_old_record_names_a_proposed_successor(tmp_path: Path) -> None:
    root = folder(
        tmp_path,
        {
            "0001-a.md": nygard(1, "A", "Superseded by [2. B](0002-b.md)"),
            "0002-b.md": nygard(2, "B", "Proposed"),
        },
    )
    g = build_graph(root)
    assert g.mark_of("1") == "⚠️superseded → ADR-0002 (proposed)"
    assert any(f.kind == "disagreement" for f in g.check())
    with pytest.raises(AdrChainError, match="no accepted record"):
        g.chain("1")


def test_chain_of_three_names_the_live_end(tmp_path: Path) -> None:
    root = folder(
        tmp_path,
        {
            "0001-a.md": nygard(1, "A", "Superseded by [2. B](0002-b.md)"),
            "0002-b.md": nygard(2, "B", "Superseded by [3. C](0003-c.md)"),
            "0003-c.md": nygard(3, "C", "Accepted"),
        },
    )
    g = build_graph(root)
    a = g.get("1")
    assert a.successors == ["0002-b.md"]  # immediate successor
    assert a.current == "0003"  # live end
    assert a.mark == "⚠️superseded → ADR-0003"
    packet = g.chain("1")
    assert packet["current"] == "0003"
    assert packet["history"] == ["0001", "0002"]
    assert set(packet["sources"]) == {"0001", "0002", "0003"}
    assert packet["sources"]["0003"]["path"] == "0003-c.md"
    live = g.chain("3")
    assert live["current"] == "0003" and live["history"] == []


def test_external_successor(tmp_path: Path) -> None:
    url = "https://example.org/other-repo/adr/7"
    root = folder(tmp_path, {"0001-a.md": nygard(1, "A", f"Superseded by [their ADR 7]({url})")})
    g = build_graph(root)
    rec = g.get("1")
    assert rec.successors == [url]
    assert rec.mark == "⚠️superseded → external"
    with pytest.raises(AdrChainError, match="outside the repository"):
        g.chain("1")


def test_link_outside_the_folder_is_external(tmp_path: Path) -> None:
    root = folder(
        tmp_path, {"0001-a.md": nygard(1, "A", "Superseded by [X](../../other/0009-x.md)")}
    )
    rec = build_graph(root).get("1")
    assert rec.mark == "⚠️superseded → external"
    assert rec.successors == ["../../other/0009-x.md"]


def test_partial_supersession(tmp_path: Path) -> None:
    root = folder(
        tmp_path,
        {
            "0001-a.md": nygard(1, "A", "Accepted"),
            "0002-b.md": nygard(2, "B", "Accepted\n\nPartially supersedes [1. A](0001-a.md)"),
            "0003-c.md": nygard(3, "C", "Partially superseded by [4. D](0004-d.md)"),
            "0004-d.md": nygard(4, "D", "Accepted"),
        },
    )
    g = build_graph(root)
    assert g.status_of("1") == "partially_superseded"
    assert g.mark_of("1") == "△partially superseded → ADR-0002"
    assert g.mark_of("3") == "△partially superseded → ADR-0004"
    packet = g.chain("3")
    assert packet["current"] == ["0003", "0004"]
    assert "partially" in packet["note"]


def test_amendment_and_supplement_stay_live(tmp_path: Path) -> None:
    root = folder(
        tmp_path,
        {
            "0001-a.md": nygard(1, "A", "Accepted\n\nAmended by [2. B](0002-b.md)"),
            "0002-b.md": nygard(2, "B", "Accepted\n\nAmends [1. A](0001-a.md)"),
            "0003-c.md": nygard(3, "C", "Accepted, Supplemented by [4. D](0004-d.md)"),
            "0004-d.md": nygard(4, "D", "Accepted"),
        },
    )
    g = build_graph(root)
    assert [g.status_of(i) for i in "1234"] == ["live"] * 4
    assert {(r["type"], r["id"]) for r in g.get("1").relations} == {("amended_by", "0002")}
    assert ("supplemented_by", "0004") in {(r["type"], r["id"]) for r in g.get("3").relations}
    assert ("supplements", "0003") in {(r["type"], r["id"]) for r in g.get("4").relations}
    assert g.check() == []


def test_contradictory_declarations_are_unknown(tmp_path: Path) -> None:
    text = "---\nstatus: accepted\n---\n" + nygard(1, "A", "Rejected")
    g = build_graph(folder(tmp_path, {"0001-a.md": text}))
    rec = g.get("1")
    assert rec.status == "unknown"
    assert "contradictory" in rec.reason
    assert any("contradictory" in w for w in g.warnings)
    assert [f.kind for f in g.check()] == ["contradictory"]


def test_missing_status_unknown_outside_madr_live_in_madr(tmp_path: Path) -> None:
    madr = (
        "---\nparent: Decisions\n---\n# Use X\n\n## Context and Problem Statement\n\nWhy.\n\n"
        "## Considered Options\n\n* X\n* Y\n\n## Decision Outcome\n\nChosen option: X.\n"
    )
    root = folder(
        tmp_path,
        {"0001-a.md": "# 1. A\n\n## Context\n\nNo status here.\n", "0002-b.md": madr},
    )
    g = build_graph(root)
    assert g.status_of("1") == "unknown" and g.mark_of("1") == "status unknown"
    assert g.status_of("2") == "live" and g.get("2").reason.startswith("MADR")
    assert [f.kind for f in g.check()] == ["no_status"]


def test_unfilled_template_is_unknown(tmp_path: Path) -> None:
    text = nygard(0, "Title", "Accepted | Pending | Superseded by [ADR000](000-template.md)")
    g = build_graph(folder(tmp_path, {"ADR000-template.md": text}))
    assert g.status_of("000") == "unknown"
    assert g.get("000").successors == []


def test_windows_line_endings_and_bom(tmp_path: Path) -> None:
    text = nygard(1, "Crlf", "Superseded by [2. B](0002-b.md)").replace("\n", "\r\n")
    root = folder(
        tmp_path,
        {
            "0001-crlf.md": text.encode("utf-8"),
            "0002-b.md": b"\xef\xbb\xbf" + nygard(2, "Bom title", "Accepted").encode("utf-8"),
            "0003-front.md": b"\xef\xbb\xbf---\r\nstatus: proposed\r\n---\r\n# Front\r\n",
        },
    )
    g = build_graph(root)
    assert g.get("1").title == "Crlf"
    assert g.mark_of("1") == "⚠️superseded → ADR-0002"
    assert g.get("2").title == "Bom title" and g.status_of("2") == "live"
    assert g.status_of("3") == "proposed"


def test_renamed_file_resolves_by_number(tmp_path: Path) -> None:
    root = folder(
        tmp_path,
        {
            "0001-a.md": nygard(1, "A", "Superseded by [2. Old name](0002-old-name.md)"),
            "0002-new-name.md": nygard(2, "New name", "Accepted"),
        },
    )
    g = build_graph(root)
    rec = g.get("1")
    assert rec.successors == ["0002-old-name.md"]  # as written
    assert rec.current == "0002"
    assert rec.mark == "⚠️superseded → ADR-0002"
    assert [(f.kind, f.severity) for f in g.check()] == [("renamed_link", "warning")]


def test_unreadable_and_malformed_degrade_to_unknown(tmp_path: Path) -> None:
    root = folder(
        tmp_path,
        {
            "0001-latin1.md": "# 1. Caf\xe9\n\n## Status\n\nAccepted\n".encode("latin-1"),
            "0002-yaml.md": "---\nstatus: [accepted\n---\n# Broken front matter\n",
            "0003-empty.md": "",
            "0004-binary.md": b"\x00\x01\x02\xff\xfe",
            "0005-ok.md": nygard(5, "Fine", "Accepted"),
        },
    )
    g = build_graph(root)
    assert [g.status_of(str(i)) for i in range(1, 6)] == ["unknown"] * 4 + ["live"]
    assert len(g.warnings) >= 3
    kinds = {f.kind for f in g.check()}
    assert "unreadable" in kinds


def test_front_matter_value_yaml_cannot_build_is_unreadable_not_a_crash(tmp_path: Path) -> None:
    # An unquoted impossible date makes PyYAML raise ValueError (not a YAMLError);
    # it once escaped the parser and stopped the whole folder from building.
    root = folder(
        tmp_path,
        {
            "0001-bad-date.md": "---\ndate: 2024-02-30\nstatus: accepted\n---\n# 1. A\n",
            "0002-ok.md": nygard(2, "Fine", "Accepted"),
        },
    )
    g = build_graph(root)
    rec = g.get("1")
    assert (rec.status, rec.reason, rec.title) == ("unknown", "unreadable", "A")
    assert rec.warnings == [
        "0001-bad-date.md: front matter is not valid YAML (day is out of range for month)"
    ]
    assert g.status_of("2") == "live"
    assert ("unreadable", "0001-bad-date.md") in {(f.kind, f.path) for f in g.check()}


def test_declared_only_by_successor_in_prose_and_front_matter(tmp_path: Path) -> None:
    root = folder(
        tmp_path,
        {
            "0001-a.md": "# A\n\n- Status: accepted\n\n## Context and Problem Statement\n\nX.\n",
            "0002-b.md": (
                "# B\n\n- Status: accepted\n\n## Decision Outcome\n\nThis supersedes adr0001.\n"
            ),
            "0003-c.md": '---\nstatus: "accepted; supersedes ADR-0004"\n---\n# C\n',
            "0004-d.md": "---\nstatus: accepted\n---\n# D\n",
            "0005-e.md": "# E\n\n- Status: accepted\n\nThis does not supersede ADR-0004.\n",
        },
    )
    g = build_graph(root)
    assert g.mark_of("1") == "⚠️superseded → ADR-0002"
    assert g.mark_of("4") == "⚠️superseded → ADR-0003"
    assert g.get("4").successors == ["0003-c.md"]


def test_superseded_prose_about_a_library_is_not_a_relation(tmp_path: Path) -> None:
    text = "# 1. Use slf4j\n\n## Status\n\nAccepted\n\nThe old library is superseded by log4j.\n"
    g = build_graph(folder(tmp_path, {"0001-a.md": text}))
    assert g.status_of("1") == "live"


def test_cross_component_replacement_is_reported(tmp_path: Path) -> None:
    root = folder(
        tmp_path,
        {
            "0001-a.md": "---\ncomponent: api\nstatus: superseded by ADR-0002\n---\n# A\n",
            "0002-b.md": "---\ncomponent: web\nstatus: accepted\n---\n# B\n",
        },
    )
    g = build_graph(root)
    assert g.get("1").component == "api"
    assert [f.kind for f in g.check()] == ["cross_component"]
    assert g.chain("1")["cross_component"][0]["components"] == "api -> web"


def test_one_record_replaced_by_two(tmp_path: Path) -> None:
    root = folder(
        tmp_path,
        {
            "0001-a.md": nygard(1, "A", "Superseded by [2](0002-b.md) and [3](0003-c.md)"),
            "0002-b.md": nygard(2, "B", "Accepted"),
            "0003-c.md": nygard(3, "C", "Accepted"),
        },
    )
    g = build_graph(root)
    assert g.mark_of("1") == "⚠️superseded → ADR-0002, ADR-0003"
    assert g.chain("1")["current"] == ["0002", "0003"]


def test_ids_from_names_and_front_matter(tmp_path: Path) -> None:
    root = folder(
        tmp_path,
        {
            "ADR-0007-x.md": nygard(7, "Seven", "Accepted"),
            "adr-8.md": "# ADR-8: Eight\n\nStatus: Deprecated\n",
            "decision.md": "---\nid: ADR-0009\nstatus: rejected\n---\n# Nine\n",
            "20240101-slug.md": "# Slug\n\n- Status: accepted\n",
            "README.md": "# Index\n\n- [Seven](ADR-0007-x.md)\n",
        },
    )
    g = build_graph(root)
    assert g.status_of("0007") == "live" and g.get("0007").title == "Seven"
    assert g.status_of("8") == "deprecated" and g.mark_of("8") == "⚠️deprecated"
    assert g.get("8").title == "Eight"
    assert g.get("decision.md").id == "0009" and g.status_of("0009") == "rejected"
    assert g.status_of("20240101-slug") == "live"
    assert [n.path for n in g.non_adrs] == ["README.md"]


def test_record_for_path_and_lookup_errors(tmp_path: Path) -> None:
    root = folder(tmp_path, {"0001-a.md": nygard(1, "A", "Accepted")})
    g = build_graph(root)
    rec = g.record_for_path(root / "0001-a.md")
    assert rec is not None and (rec.id, rec.title, rec.status, rec.mark) == (
        "0001",
        "A",
        "live",
        "",
    )
    assert rec.date == "2024-01-02"
    assert g.record_for_path(tmp_path / "elsewhere.md") is None
    with pytest.raises(UsageError):
        g.get("42")
    with pytest.raises(UsageError):
        build_graph(tmp_path / "nope")


def test_cache_keyed_by_content_not_mtime(tmp_path: Path) -> None:
    root = folder(tmp_path, {"0001-a.md": nygard(1, "A", "Accepted")})
    cache = tmp_path / "cache"
    first = build_graph(root, cache)
    assert not first.from_cache
    second = build_graph(root, cache)
    assert second.from_cache and second.status_of("1") == "live"
    import os

    os.utime(root / "0001-a.md", (1, 1))  # an mtime change alone: still cached
    assert build_graph(root, cache).from_cache
    (root / "0001-a.md").write_text(nygard(1, "A", "Rejected"))
    third = build_graph(root, cache)
    assert not third.from_cache and third.status_of("1") == "rejected"
    (root / "0002-b.md").write_text(nygard(2, "B", "Accepted"))  # a new file changes the key
    assert not build_graph(root, cache).from_cache
    for f in cache.iterdir():  # a damaged cache is rebuilt, not trusted
        f.write_bytes(b"garbage")
    assert build_graph(root, cache).status_of("2") == "live"


def test_one_missing_successor_next_to_an_existing_one(tmp_path: Path) -> None:
    root = folder(
        tmp_path,
        {
            "0001-a.md": nygard(1, "A", "Superseded by [2. B](0002-b.md) and [9. Z](0009-z.md)"),
            "0002-b.md": nygard(2, "B", "Accepted"),
        },
    )
    g = build_graph(root)
    assert g.mark_of("1") == "⚠️superseded → ADR-0002 (another successor missing)"
    assert [(f.kind, f.path) for f in g.check()] == [("dangling_link", "0001-a.md")]


def test_status_table_rows_dated_names_and_templates(tmp_path: Path) -> None:
    table = (
        "# {t}\n\n| Metadata | Value |\n|---|---|\n| **Status** | {s} |\n{rel}\n## Context\n\nX.\n"
    )
    root = folder(
        tmp_path,
        {
            "2021-06-05_001-old.md": table.format(t="Old", s="Implemented", rel=""),
            "2022-01-02_002-new.md": table.format(
                t="New", s="Approved", rel="| Supersedes | [ADR 1](/adr/1) |\n"
            ),
            "2020_03_03_topic.md": "# Topic\n\n* Status: accepted\n",
            "20240516132303-x.md": "---\nstatut: proposé\n---\n# X\n",
            "0000-adr-template.md": "# ADR: Title\n\n- Status: **Proposed**\n",
            "ADR-nnn_Template.md": (
                "# T\n\n>| Status | `RFC by dd/mm, Proposed, Rejected, Accepted` |\n"
            ),
        },
    )
    g = build_graph(root)
    assert g.get("001").title == "Old"
    assert g.mark_of("001") == "⚠️superseded → ADR-002"
    assert g.get("001").successors == ["2022-01-02_002-new.md"]
    assert g.status_of("2020_03_03_topic") == "live"
    assert g.status_of("20240516132303-x") == "proposed"
    assert g.status_of("0000") == "unknown"  # a template, whatever status it shows
    assert "ADR-nnn_Template.md" in {n.path for n in g.non_adrs}


def test_a_later_stage_in_the_same_status_value(tmp_path: Path) -> None:
    root = folder(
        tmp_path,
        {
            "0001-a.md": nygard(1, "A", "Implemented. Superseded by [ADR-3](0003-c.md)."),
            "0002-b.md": nygard(2, "B", "Implemented. Parts of this ADR were superseded by ADR-3."),
            "0003-c.md": nygard(3, "C", "Accepted"),
        },
    )
    g = build_graph(root)
    assert g.mark_of("1") == "⚠️superseded → ADR-0003"
    assert g.mark_of("2") == "△partially superseded → ADR-0003"
