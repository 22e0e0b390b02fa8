"""Entity resolution measured against hand labels of a real corpus
(`tests/data/resolution_labels/*.json`): which pairs of its most frequent entities are one
thing (`same`), which short names are a full name where a document names it
(`same_where_named`), which are never one (`different`), and the right types of the most
frequent entities.

- precision: of the index's merges (an `entity_aliases` row, whole or per document) between
  two labelled names, the share labelled one thing; a merge of a pair no label judges is
  listed as unjudged;
- recall: of the pairs labelled one thing, the share the index made one (merged directly,
  per document, in one cluster of whole merges, or both given one entity in a document);
- wrong types: of the labelled types, the share the index gives otherwise (an entity merged
  away is judged by its canonical entity's type);
- homonym splits (`homonyms`: a name -> the groups of documents where it is one bearer;
  `one_across_documents`: names that are one thing wherever written): over pairs of labelled
  documents of a name, the share of those the index put in different entities that are
  different bearers (precision), and of the pairs of different bearers, the share it put
  apart (recall); a split of a name that is one thing is wrong.
"""

from __future__ import annotations

import json
from pathlib import Path

LABELS = Path(__file__).resolve().parents[1] / "data" / "resolution_labels"


def load_labels(name: str) -> dict:
    return json.loads((LABELS / f"{name}.json").read_text(encoding="utf-8"))


def restricted(labels: dict, names: set[str]) -> dict:
    """The labels of pairs (and types) whose names are all in `names`: for a corpus built
    from part of the labelled one."""
    kept = {kind: [p for p in labels[kind] if set(p) <= names]
            for kind in ("same", "same_where_named", "different")}
    return {**labels, **kept,
            "types": {t: k for t, k in labels["types"].items() if t in names}}


def _pairs(items: list[list[str]]) -> set[frozenset[str]]:
    return {frozenset(pair) for pair in items}


class _Groups:
    def __init__(self):
        self.parent: dict[str, str] = {}

    def find(self, name: str) -> str:
        self.parent.setdefault(name, name)
        while self.parent[name] != name:
            name = self.parent[name] = self.parent[self.parent[name]]
        return name

    def join(self, a: str, b: str) -> None:
        self.parent[self.find(a)] = self.find(b)


def merge_quality(aliases: list[dict], labels: dict) -> dict:
    """`aliases`: `entity_aliases` rows (alias, entity_title, document_ids)."""
    same, where_named = _pairs(labels["same"]), _pairs(labels["same_where_named"])
    different = _pairs(labels["different"])
    truth = _Groups()
    for a, b in labels["same"]:
        truth.join(a, b)
    merged = _Groups()
    links = set()
    for row in aliases:
        links.add(frozenset((row["alias"], row["entity_title"])))
        if not row.get("document_ids"):
            merged.join(row["alias"], row["entity_title"])
    right, wrong, unjudged = [], [], []
    for link in sorted(links, key=sorted):
        a, b = sorted(link)
        if link in where_named or truth.find(a) == truth.find(b):
            right.append((a, b))
        elif link in different:
            wrong.append((a, b))
        else:
            unjudged.append((a, b))
    # Names given to one entity in a document they are both resolved in are one there too
    # (ANNE and MISS ANNE, both Anne Elliot's in Persuasion), and so is a name resolved in a
    # document to the entity another was merged into whole (ROCHESTER there, MR ROCHESTER
    # everywhere). A name merged whole into one resolved in a document goes with it there
    # (MR WICKHAM, merged into WICKHAM: the fold renames its mentions as WICKHAM's).
    targets: dict[str, list[tuple[str, frozenset]]] = {}
    for row in aliases:
        if row.get("document_ids"):
            targets.setdefault(row["alias"], []).append(
                (merged.find(row["entity_title"]), frozenset(row["document_ids"])))

    def targets_of(name: str) -> list[tuple[str, frozenset]]:
        whole = merged.find(name)
        return targets.get(name, []) + (targets.get(whole, []) if whole != name else [])

    def resolved_alike(a: str, b: str) -> bool:
        return any(ta == tb and da & db for ta, da in targets_of(a) for tb, db in targets_of(b)) \
            or any(merged.find(a) == tb for tb, _ in targets_of(b)) or \
            any(merged.find(b) == ta for ta, _ in targets_of(a))
    one_thing = same | where_named
    found = [pair for pair in one_thing if pair in links or
             merged.find(sorted(pair)[0]) == merged.find(sorted(pair)[1]) or
             resolved_alike(*sorted(pair))]
    judged = len(right) + len(wrong)
    return {"precision": round(len(right) / judged, 3) if judged else None,
            "recall": round(len(found) / len(one_thing), 3) if one_thing else None,
            "merges_judged": judged, "wrong_merges": wrong,
            "missed": sorted(sorted(p) for p in one_thing - set(found)),
            "unjudged_merges": len(unjudged)}


def type_quality(entity_types: dict[str, str], aliases: list[dict], labels: dict) -> dict:
    """`entity_types`: title -> type of the index's entities. A name merged away is judged
    by its canonical entity's type; one resolved away document by document (DAVID, all of
    whose mentions went to the Davids each episode names) by the types of the entities its
    mentions went to, wrong if any of them is."""
    canonical = {row["alias"]: row["entity_title"] for row in aliases
                 if not row.get("document_ids")}
    scattered: dict[str, set[str]] = {}
    for row in aliases:
        if row.get("document_ids") and row["entity_title"] in entity_types:
            scattered.setdefault(row["alias"], set()).add(entity_types[row["entity_title"]])
    wrong, judged = [], 0
    for title, allowed in sorted(labels["types"].items()):
        kind = entity_types.get(title, entity_types.get(canonical.get(title, "")))
        if kind is None and title in scattered:
            kinds = sorted(scattered[title])
            kind = next((k for k in kinds if k not in allowed), kinds[0])
        if kind is None:
            continue
        judged += 1
        if kind not in allowed:
            wrong.append((title, kind, allowed))
    return {"wrong_type_share": round(len(wrong) / judged, 3) if judged else None,
            "types_judged": judged, "wrong_types": wrong}


def split_quality(aliases: list[dict], labels: dict) -> dict:
    """`aliases`: `entity_aliases` rows (alias, entity_title, method, document_ids). A name's
    documents are apart where its mentions there went to different entities: by a homonym
    split, or by resolving it in a document to a full name (DICK to DICK WILKINS in one book,
    to DICK MUSGROVE in another)."""
    moved: dict[str, dict[str, str]] = {}
    resolved: dict[str, dict[str, str]] = {}
    for row in aliases:
        if row["method"] == "homonym_split" or row["method"].startswith(("in_document", "in_work")):
            (moved if row["method"] == "homonym_split" else resolved).setdefault(
                row["alias"], {}).update(dict.fromkeys(row["document_ids"], row["entity_title"]))
    apart_right = apart_wrong = missed = 0
    for title, groups in labels.get("homonyms", {}).items():
        bearer = {document: k for k, group in enumerate(groups) for document in group}
        entity = {document: resolved.get(title, {}).get(
            document, moved.get(title, {}).get(document, title)) for document in bearer}
        documents = sorted(bearer)
        for i, a in enumerate(documents):
            for b in documents[i + 1:]:
                different, split = bearer[a] != bearer[b], entity[a] != entity[b]
                apart_right += different and split
                apart_wrong += split and not different
                missed += different and not split
    wrong_splits = sorted(set(moved) & set(labels.get("one_across_documents", [])))
    judged = apart_right + apart_wrong + len(wrong_splits)
    return {"split_precision": round(apart_right / judged, 3) if judged else None,
            "split_recall": round(apart_right / (apart_right + missed), 3)
            if apart_right + missed else None,
            "names_split": len(moved), "wrong_splits": wrong_splits,
            "unjudged_splits": sorted(set(moved) - set(labels.get("homonyms", {}))
                                      - set(wrong_splits))}
