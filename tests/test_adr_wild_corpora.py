"""The ADR graph against 16 more hand-labelled ADR folders from public repositories
(tests/fixtures/adr-wild, see its README.md): 100% agreement, as for the shared seven.

Each folder was labelled by reading every record before the code ran on it; the
labels are the truth. Formats the shared corpora lack: status tables, status
words in other tenses and languages, dated and timestamped file names, site-route
links, templates named like ADRs, partial supersession said in a sentence.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from precedents.adr_graph import STATUSES, build_graph

from .adr_labels import disagreements

WILD = Path(__file__).parent / "fixtures" / "adr-wild"
NAMES = sorted(p.name for p in WILD.iterdir() if (p / "EXPECTED.json").is_file())
SHARED_SEVEN = {
    "JabRef/jabref",
    "alphagov/govuk-aws",
    "alphagov/gsp",
    "elastisys/compliantkubernetes",
    "ministryofjustice/modernisation-platform",
    "thomvaill/log4brains",
}
TRAINING_SOURCES = Path(__file__).parents[1] / "research" / "data" / "adrs" / "SOURCE.md"


def _expected(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((WILD / name / "EXPECTED.json").read_text("utf-8"))
    return data


def _source(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((WILD / name / "SOURCE.json").read_text("utf-8"))
    return data


def test_at_least_fifteen_folders_disjoint_from_shared_and_training() -> None:
    assert len(NAMES) >= 15
    repos = {_source(n)["repo"] for n in NAMES}
    assert len(repos) == len(NAMES)
    assert not repos & SHARED_SEVEN
    if TRAINING_SOURCES.is_file():
        training = set(re.findall(r"github\.com/([\w.-]+/[\w.-]+)\)", TRAINING_SOURCES.read_text()))
        assert training, "the training SOURCE.md lists its repositories"
        assert not repos & training


@pytest.mark.parametrize("name", NAMES)
def test_folder_has_its_provenance_and_licence(name: str) -> None:
    source = _source(name)
    for key in ("repo", "url", "path", "commit", "license", "format", "adr_count"):
        assert source.get(key), (name, key)
    assert re.fullmatch(r"[0-9a-f]{40}", source["commit"])
    assert (WILD / name / source["license_file"]).is_file()
    assert source["adr_count"] == len(_expected(name))


@pytest.mark.parametrize("name", NAMES)
def test_folder_agrees_with_every_label(name: str) -> None:
    wrong = disagreements(WILD / name, _expected(name))
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("name", NAMES)
def test_folder_ids_titles_and_marks(name: str) -> None:
    graph = build_graph(WILD / name)
    for path, label in _expected(name).items():
        rec = graph.by_path[path]
        assert rec.id == label["id"], path
        assert rec.title == label["title"], path
        assert rec.status in STATUSES
        if rec.status == "live":
            assert rec.mark == "", path
        else:
            assert rec.mark, path
        if rec.status == "superseded":
            assert rec.mark.startswith("⚠️superseded → "), rec.mark
        if rec.status == "partially_superseded":
            assert rec.mark.startswith("△partially superseded → "), rec.mark


@pytest.mark.parametrize("name", NAMES)
def test_non_adr_files_listed_apart(name: str) -> None:
    graph = build_graph(WILD / name)
    apart = {n.path for n in graph.non_adrs}
    for non_adr in _source(name).get("non_adr_files", {}):
        assert non_adr in apart, (name, non_adr)


def test_status_table_rows_are_declarations() -> None:
    graph = build_graph(WILD / "nats-io__nats-architecture-and-design")
    assert graph.status_of("13") == "live"  # | Status | Partially Implemented |
    assert graph.status_of("15") == "deprecated"
    assert graph.status_of("53") == "proposed"
    # A later "## Status" section of prose does not contradict the table.
    assert graph.status_of("2") == "live"
    odh = build_graph(WILD / "opendatahub-io__architecture-decision-records")
    rec = odh.by_path["operator/ODH-ADR-Operator-0005-configure-resources.md"]
    assert rec.status == "proposed"  # "| Supersedes | <pull request URL> |" in a draft
    assert not any(r["type"] == "supersedes" and r["id"] for r in rec.relations)


def test_site_route_successors_name_the_records() -> None:
    graph = build_graph(WILD / "input-output-hk__hydra")
    rec = graph.by_path["2022-04-13_018-single-state.md"]
    assert rec.id == "018"
    assert rec.mark == "⚠️superseded → ADR-023, ADR-026 (proposed)"
    assert not [f for f in graph.check() if f.kind == "dangling_link"]


def test_partial_supersession_said_in_a_sentence() -> None:
    graph = build_graph(WILD / "celestiaorg__celestia-app")
    assert graph.mark_of("006") == "△partially superseded → ADR-020"
    assert graph.mark_of("009") == "⚠️superseded → ADR-013"


def test_partly_undo_in_a_title_and_reverted() -> None:
    graph = build_graph(WILD / "cometbft__cometbft")
    assert graph.mark_of("109") == "△partially superseded → ADR-114"
    assert graph.status_of("105") == "deprecated"  # Reverted
    assert graph.status_of("110") == "rejected"  # Rejected in favour of ADR 111


def test_a_template_named_like_an_adr_is_never_a_proposal() -> None:
    graph = build_graph(WILD / "thunderbird__thunderbird-android")
    assert graph.status_of("0000") == "unknown"
    assert graph.by_path["0000-adr-template.md"].mark == "status unknown"


def test_a_sentence_about_another_record_declares_nothing() -> None:
    graph = build_graph(WILD / "linagora__james-project")
    # 0038: "[35. ...](0035-...) also covers ... and supersedes ADR 0026".
    assert graph.by_path["0026-removing-configured-additional-mailboxListeners.md"].successors == [
        "0035-distributed-listeners-configuration.md"
    ]
    kinds = {(f.kind, f.path) for f in graph.check()}
    assert ("duplicate_id", "0009-java-11-migration.md") in kinds
