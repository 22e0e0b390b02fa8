"""An update carries the unchanged files' reading over (`index/carry_over`): only added and
changed files are read, chunked and extracted, offline too, and the summaries of unchanged
elements are kept (`reports/kept_summaries`); the tables are those of a full build of the
new corpus, also when a change elsewhere makes a passage of an unchanged file repeated (that
file is read again)."""

import os
import re
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from graphrag_ray import schema
from graphrag_ray.config import load_config
from graphrag_ray.index.build import build_index
from graphrag_ray.index.chunks.passage_scans import SCANS
from graphrag_ray.index.carry_over import READING, CarriedReading
from graphrag_ray.index.chunks.positions import FileMap, chunk_seq
from graphrag_ray.index.reports.kept_summaries import ELEMENT_DIGESTS
from graphrag_ray.index.update import update_index
from graphrag_ray.index.write import tables
from graphrag_ray.storage import IndexStore
from graphrag_ray.storage.parquet_io import read_parquet, write_parquet
from graphrag_testkit.synthetic_corpus import generate_corpus

DISCLAIMER = ("This transcript is provided for information only and may contain errors; "
              "nothing in it is an offer, a recommendation or advice of any kind.")


def _config():
    return load_config(None, ["runtime.engine=local"])


def _rows(url: str, name: str, key: str, columns: list[str]) -> dict:
    """A table by `key`, list columns sorted (row order and human-readable ids depend on
    the order parts were written in, not on content)."""
    rows = {}
    for row in IndexStore(url).open().read_table(name, [key, *columns]).to_pylist():
        rows[row[key]] = tuple(sorted(v) if isinstance(v, list) else v
                               for v in (row[c] for c in columns))
    return rows


TABLES = {
    schema.ENTITIES: ("title", ["type", "description", "text_unit_ids"]),
    schema.RELATIONSHIPS: ("id", ["source", "target", "description", "weight",
                                  "text_unit_ids"]),
    schema.TEXT_UNITS: ("id", ["text", "n_tokens", "document_ids", "entity_ids",
                               "relationship_ids", "extraction_status"]),
    schema.DOCUMENTS: ("id", ["title", "text", "text_unit_ids"]),
}


EMBEDDINGS = [schema.TEXT_UNIT_EMBEDDINGS, schema.ENTITY_DESCRIPTION_EMBEDDINGS,
              schema.REPORT_EMBEDDINGS]


def _vectors(url: str, name: str) -> dict:
    table = IndexStore(url).open().read_table(name)
    return dict(zip(table.column("id").to_pylist(), table.column("vector").to_pylist()))


def _assert_same_tables(url: str, full: str, report_vectors: bool = True) -> None:
    """`report_vectors`: also the report embeddings of the reports whose text the two
    share (an update whose every report changed shares none)."""
    for name, (key, columns) in TABLES.items():
        assert _rows(url, name, key, columns) == _rows(full, name, key, columns), name
    # Vectors copied from the previous version (carried text units, entities and reports
    # whose text did not change) are those a full build computes.
    for name in (schema.TEXT_UNIT_EMBEDDINGS, schema.ENTITY_DESCRIPTION_EMBEDDINGS):
        assert _vectors(url, name) == _vectors(full, name), name
    if not report_vectors:
        return
    # Reports: the update's communities keep their ids (Leiden starts from the previous
    # ones), so a report is compared with the full build's report of the same text.
    by_text = [{text: vectors[i] for i, text in _rows(index, schema.COMMUNITY_REPORTS, "id",
                                                      ["full_content"]).items()}
               for index, vectors in ((u, _vectors(u, schema.REPORT_EMBEDDINGS))
                                      for u in (url, full))]
    assert _vectors(url, schema.REPORT_EMBEDDINGS).keys() == _rows(
        url, schema.COMMUNITY_REPORTS, "id", ["full_content"]).keys()
    shared = by_text[0].keys() & by_text[1].keys()
    assert shared and all(by_text[0][t] == by_text[1][t] for t in shared)


def _update(index: str, corpus: Path) -> tuple[object, list[str]]:
    lines: list[str] = []
    return update_index(index, str(corpus), _config(), progress=lines.append), lines


@pytest.fixture
def corpus(tmp_path) -> Path:
    folder = tmp_path / "corpus"
    generate_corpus(folder, 24_000, seed=3, tokens_per_document=1_500)
    return folder


def test_an_update_reads_only_new_and_changed_files_and_equals_a_full_build(corpus, tmp_path):
    index, full = str(tmp_path / "index"), str(tmp_path / "full")
    build_index(str(corpus), index, _config(), progress=lambda _: None)
    positions = _rows(index, schema.ENTITIES, "id", ["x", "y"])
    files = sorted(corpus.glob("*.txt"))
    # Inserted between two files (every later file's position moves), one changed, one gone.
    (corpus / f"{files[3].stem}-b.txt").write_text(files[8].read_text()[:3000] + "\n\nJonas "
                                                   "Pellew founded Quarry Lane Works.")
    files[5].write_text(files[5].read_text() + "\n\nMarta Quill joined Quarry Lane Works.")
    files[10].unlink()
    manifest, lines = _update(index, corpus)
    assert manifest.update["documents"] == {"added": 1, "changed": 1, "deleted": 1,
                                            "unchanged": len(files) - 2}
    carried = [line for line in lines if "carried over" in line]
    assert carried == [f"{len(files) - 2} unchanged files carried over "
                       f"({manifest.update['chunks']['reused']} chunks); 2 to read"]
    assert manifest.repeated_passages["documents_scanned"] == 2
    assert manifest.repeated_passages["documents_carried"] == len(files) - 2
    assert manifest.tables[schema.TEXT_UNIT_EMBEDDINGS] == manifest.tables[schema.TEXT_UNITS]
    # Elements whose description lists did not change keep their summaries.
    assert manifest.summaries["kept"] > 0
    full_manifest = build_index(str(corpus), full, _config(), progress=lambda _: None)
    assert manifest.summaries["summarized"] + manifest.summaries["kept"] == \
        full_manifest.summaries["summarized"]
    assert manifest.summaries["summarized"] < full_manifest.summaries["summarized"] / 2
    _assert_same_tables(index, full)
    # The merge merged again only what the changes touched; its figures are the whole
    # graph's. The entities there before keep their places in the layout.
    assert manifest.merge == full_manifest.merge
    after = _rows(index, schema.ENTITIES, "id", ["x", "y"])
    assert after.keys() - positions.keys()
    assert all(after[i] == positions[i] for i in after.keys() & positions.keys())
    # What the next update keeps is what a full build would have kept.
    assert _rows(index, ELEMENT_DIGESTS, "id", ["digest", "inner_tokens"]) == \
        _rows(full, ELEMENT_DIGESTS, "id", ["digest", "inner_tokens"])
    version = IndexStore(index).open()
    assert version.fs.exists(f"{version.root}/{READING}/status.parquet")
    assert version.fs.glob(f"{version.root}/{READING}/merged/block-*.parquet")
    assert not version.fs.exists(f"{version.root}/_work")
    for name in EMBEDDINGS:
        assert version.fs.glob(f"{version.root}/{name}/part-carried-*"), name
    # And again from the carried-over version: nothing changed, nothing to do.
    assert _update(index, corpus)[0] == {"no_change": True, "version": version.version,
                                         "documents": {"added": 0, "changed": 0,
                                                       "deleted": 0,
                                                       "unchanged": len(files)}}
    # A later update that only adds a file carries every stored part of the reading as it
    # is: the same files, linked, not read and written again.
    before = _stored_reading(index)
    (corpus / "zz-later.txt").write_text(files[2].read_text()[:2000])
    _update(index, corpus)
    after = _stored_reading(index)
    assert before.keys() <= after.keys()
    assert [n for n, inode in before.items() if after[n] != inode] == []
    assert any(name.startswith(("chunks/", "documents/")) for name in after.keys() - before)
    # Every row has its vector, each once.
    version = IndexStore(index).open()
    for name, table in ((schema.TEXT_UNIT_EMBEDDINGS, schema.TEXT_UNITS),
                        (schema.ENTITY_DESCRIPTION_EMBEDDINGS, schema.ENTITIES)):
        vectors = version.read_table(name, ["id"]).column("id").to_pylist()
        assert sorted(vectors) == sorted(version.read_table(table, ["id"]).column(
            "id").to_pylist()), name


def _stored_reading(url: str) -> dict[str, int]:
    """The stored parts of a version's reading, by path under it (an instance piece under
    the name an update links it by), with their inodes."""
    version = IndexStore(url).open()
    root = f"{version.root}/{READING}/"
    parts = {}
    for path in version.fs.find(root):
        # (Not the listing, status, passages found and every document's scan: rewritten.)
        name = path[len(root):]
        if path.endswith((".parquet", ".json")) and "/" in name \
                and not name.startswith("merged/") and name != SCANS:
            if name.startswith("instances/"):
                folder, piece = name.rsplit("/", 1)
                name = f"{folder}/{piece if piece.startswith('carried') else 'carried-' + piece}"
            parts[name] = os.stat(path).st_ino
    return parts


def _instance_pieces(url: str) -> dict[str, list[str]]:
    """The kept reading's instance pieces' paths by folder, in name order."""
    version = IndexStore(url).open()
    pieces: dict[str, list[str]] = {}
    for path in sorted(version.fs.find(f"{version.root}/{READING}/instances")):
        folder, name = path.rsplit("/", 1)
        pieces.setdefault(folder, []).append(path)
    return pieces


def test_a_build_keeps_its_instances_gathered_and_an_update_links_them(corpus, tmp_path,
                                                                        monkeypatch):
    """Past `GATHER_PAST_PIECES` pieces, the merge writes a folder of instances again as
    bounded pieces in `seq` order, which the version keeps instead of the extraction's; the
    next update links those its change leaves alone and equals a full build."""
    from graphrag_ray.index.extract import instance_shards

    index, full = str(tmp_path / "index"), str(tmp_path / "full")
    monkeypatch.setattr(instance_shards, "GATHER_PAST_PIECES", 0)
    monkeypatch.setattr(instance_shards, "GATHERED_PIECE_ROWS", 40)
    build_index(str(corpus), index, _config(), progress=lambda _: None)
    version = IndexStore(index).open()
    assert not version.fs.exists(f"{version.root}/_work")
    gathered = _instance_pieces(index)
    shard_folders = [f for f in gathered if "/shard-" in f]
    assert shard_folders and any(len(gathered[f]) > 1 for f in shard_folders)
    for folder in shard_folders:
        names = [path.rsplit("/", 1)[-1] for path in gathered[folder]]
        assert all(name.startswith("carried-") for name in names), names
        seqs = [read_parquet(version.fs, path, ["seq"]).column("seq").to_pylist()
                for path in gathered[folder]]
        assert all(0 < len(s) <= 40 for s in seqs)
        flat = [q for s in seqs for q in s]
        assert flat == sorted(flat)  # listed in name order, they are in seq order
    monkeypatch.setattr(instance_shards, "GATHER_PAST_PIECES", 1_000)
    before = _stored_reading(index)
    (corpus / "zz-later.txt").write_text(sorted(corpus.glob("*.txt"))[2].read_text()[:2000])
    _update(index, corpus)
    after = _stored_reading(index)
    linked = [n for n, inode in before.items() if n.startswith("instances/")
              and after.get(n) == inode]
    assert linked and len(linked) == len([n for n in before if n.startswith("instances/")])
    build_index(str(corpus), full, _config(), progress=lambda _: None)
    _assert_same_tables(index, full)


def test_an_update_gathers_a_folder_of_too_many_pieces(corpus, tmp_path, monkeypatch):
    """Each update links the pieces it carries and adds its own: past a number, the merge
    gathers them, and the update still equals a full build."""
    from graphrag_ray.index.extract import instance_shards

    index, full = str(tmp_path / "index"), str(tmp_path / "full")
    build_index(str(corpus), index, _config(), progress=lambda _: None)
    monkeypatch.setattr(instance_shards, "GATHER_PAST_PIECES", 1)
    files = sorted(corpus.glob("*.txt"))
    (corpus / f"{files[4].stem}-b.txt").write_text(files[9].read_text()[:3000])
    files[6].unlink()
    _update(index, corpus)
    pieces = _instance_pieces(index)
    shard_folders = [f for f in pieces if "/shard-" in f]
    assert shard_folders
    # Carried, extracted now and rewritten around the deleted file: more than one piece
    # before the merge, gathered into bounded ones after it.
    assert all(p.rsplit("/", 1)[-1].startswith("carried-")
               for f in shard_folders for p in pieces[f])
    assert all(len(pieces[f]) == 1 for f in shard_folders)
    assert any(re.fullmatch(r"carried-\d{19}-00000\.parquet", pieces[f][0].rsplit("/", 1)[-1])
               for f in shard_folders)
    build_index(str(corpus), full, _config(), progress=lambda _: None)
    _assert_same_tables(index, full)


def test_a_carried_files_reading_warning_stays_with_the_index(corpus, tmp_path):
    """What the readers said of a file (here: bytes that are not UTF-8) is said again by
    the update that carries the file over, also when its name holds ": "."""
    index = str(tmp_path / "index")
    odd = corpus / "notes: draft.txt"
    odd.write_bytes(sorted(corpus.glob("doc-*.txt"))[0].read_bytes()[:2000] + b"\xff\xfe ok")
    built = build_index(str(corpus), index, _config(), progress=lambda _: None)
    warned = [w for w in built.input_warnings if w.startswith("notes: draft.txt: ")]
    assert warned
    (corpus / "zz-new.txt").write_text("Jonas Pellew founded Quarry Lane Works.")
    manifest, lines = _update(index, corpus)
    assert any("unchanged files carried over" in line for line in lines)
    assert [w for w in manifest.input_warnings if w.startswith("notes: draft.txt: ")] == warned


def test_a_passage_made_repeated_by_a_new_file_is_cut_from_the_unchanged_ones(corpus,
                                                                              tmp_path):
    index, full = str(tmp_path / "index"), str(tmp_path / "full")
    files = sorted(corpus.glob("*.txt"))
    for path in files[1:3]:  # in two documents: not yet repeated (three are needed)
        path.write_text(path.read_text() + "\n\n" + DISCLAIMER)
    build_index(str(corpus), index, _config(), progress=lambda _: None)
    (corpus / "zz-new.txt").write_text(files[6].read_text()[:4000] + "\n\n" + DISCLAIMER)
    manifest, lines = _update(index, corpus)
    # The two unchanged files holding it are read again, with the new one.
    assert f"{len(files) - 2} unchanged files carried over" in " ".join(lines)
    assert manifest.repeated_passages["boilerplate_passages"] == 1
    build_index(str(corpus), full, _config(), progress=lambda _: None)
    _assert_same_tables(index, full)
    units = IndexStore(index).open().read_table(schema.TEXT_UNITS, ["text"]).column(
        "text").to_pylist()
    assert sum(DISCLAIMER in text for text in units) == 1  # kept once, as its own unit


def _scans(url: str) -> tuple[list[str], pa.Table]:
    """The parts of a version's kept passage scans, and their rows."""
    version = IndexStore(url).open()
    parts = sorted(version.fs.glob(f"{version.root}/{READING}/passages/*.parquet"))
    return parts, pa.concat_tables([read_parquet(version.fs, p) for p in parts])


def test_every_documents_scan_is_kept_in_one_table_and_older_parts_are_read(corpus, tmp_path):
    index, full = str(tmp_path / "index"), str(tmp_path / "full")
    files = sorted(corpus.glob("*.txt"))
    for path in files[1:4]:  # a repeated passage, which the carried scans must still find
        path.write_text(path.read_text() + "\n\n" + DISCLAIMER)
    manifest = build_index(str(corpus), index, _config(), progress=lambda _: None)
    parts, scans = _scans(index)
    assert [p.rsplit("/", 2)[-2:] for p in parts] == [SCANS.split("/")]
    positions = scans.column("position").to_pylist()
    assert positions == sorted(positions) and len(positions) == manifest.tables[
        schema.DOCUMENTS]
    # A version written before kept them in a part per read batch: split so, it is read
    # whole, and the update keeps one table again.
    version = IndexStore(index).open()
    for number, start in enumerate(range(0, scans.num_rows, 5)):
        write_parquet(version.fs, f"{version.root}/{READING}/passages/files-{number:08d}"
                      ".parquet", scans.slice(start, 5))
    version.fs.rm(parts[0])
    files[7].write_text(files[7].read_text() + "\n\nMarta Quill joined Quarry Lane Works.")
    files[9].unlink()
    manifest, _ = _update(index, corpus)
    assert manifest.repeated_passages["documents_carried"] == len(files) - 2
    assert manifest.repeated_passages["boilerplate_passages"] == 1
    build_index(str(corpus), full, _config(), progress=lambda _: None)
    _assert_same_tables(index, full)
    parts, scans = _scans(index)
    # (Positions aside: an update keeps the files' numbers, a build numbers them afresh.)
    assert len(parts) == 1 and scans.drop(["position"]).equals(_scans(full)[1].drop(
        ["position"]))


def test_carried_vectors_come_in_parts_of_bounded_size(tmp_path, monkeypatch):
    """A reader holds a part whole: the carried vectors are written in parts of about
    `CARRIED_VECTOR_PART_BYTES`, not one per share."""
    import fsspec
    import numpy as np
    import pyarrow as pa

    from graphrag_ray.index import carry_over
    from graphrag_ray.storage.parquet_io import parquet_parts, read_parquet, write_parquet

    fs = fsspec.filesystem("file")
    sources = []
    for part in range(6):
        ids = [f"u{part}-{k}" for k in range(100)]
        vectors = pa.array(list(np.ones((100, 32), np.float32)), pa.list_(pa.float32(), 32))
        sources.append(str(tmp_path / f"previous-{part}.parquet"))
        write_parquet(fs, sources[-1], pa.table({"id": ids, "vector": vectors}))
    wanted = pa.chunked_array([pa.array([f"u{p}-{k}" for p in range(6)
                                         for k in range(0, 100, 2)])])
    monkeypatch.setattr(carry_over, "CARRIED_VECTOR_PART_BYTES", 2 * 50 * 32 * 4)
    (tmp_path / "staged").mkdir()
    target = str(tmp_path / "staged" / "part-carried-00000")
    rows, left_out = carry_over._carry_vector_parts((sources, target), wanted, {})
    parts = parquet_parts(fs, str(tmp_path / "staged"))
    assert rows == 300 and len(parts) == 3 and left_out == {}
    carried = pa.concat_tables([read_parquet(fs, p) for p in parts])
    assert sorted(carried.column("id").to_pylist()) == sorted(wanted.to_pylist())


def test_a_vector_part_that_keeps_most_of_its_rows_is_carried_as_it_is(tmp_path, monkeypatch):
    """An add keeps every previous text unit and most entities: those parts are linked, not
    decoded and encoded again, with the ids of the rows they no longer serve (left out by
    every reader of the table); a part that lost most of its rows, and a short part, are
    gathered as before; the rows keep the previous table's order. A row a previous version
    left out stays out, whatever `ids` says (its vector is in another part)."""
    import os

    import fsspec
    import numpy as np
    import pyarrow as pa

    from graphrag_ray.index import carry_over
    from graphrag_ray.storage.parquet_io import parquet_parts, read_parquet, write_parquet

    fs = fsspec.filesystem("file")
    monkeypatch.setattr(carry_over, "CARRIED_WHOLE_ROWS", 100)
    sources, order = [], []
    for part, rows in enumerate([100, 100, 40, 100, 100]):
        ids = [f"u{part}-{k}" for k in range(rows)]
        order += ids
        vectors = pa.array(list(np.full((rows, 8), part, np.float32)), pa.list_(pa.float32(), 8))
        sources.append(str(tmp_path / f"previous-{part}.parquet"))
        write_parquet(fs, sources[-1], pa.table({"id": ids, "vector": vectors}))
    dropped = {"u1-7", *(f"u4-{k}" for k in range(60))}
    before = {"previous-3.parquet": pa.array(["u3-5"])}  # left out by the previous version
    wanted = pa.chunked_array([pa.array([i for i in order if i not in dropped])])
    (tmp_path / "staged").mkdir()
    target = str(tmp_path / "staged" / "part-carried-00000")
    rows, left_out = carry_over._carry_vector_parts((sources, target), wanted, before)
    assert rows == len(order) - len(dropped) - 1
    parts = parquet_parts(fs, str(tmp_path / "staged"))
    linked = [p for p in parts if any(os.path.samefile(p, s) for s in sources)]
    assert [os.path.basename(p) for p in linked] == [f"part-carried-00000-{n:04d}.parquet"
                                                     for n in (0, 1, 3)]
    assert all(os.path.samefile(p, s) for p, s in zip(linked, sources[:2] + sources[3:4]))
    assert {part: ids.to_pylist() for part, ids in left_out.items()} == {
        "part-carried-00000-0001.parquet": ["u1-7"], "part-carried-00000-0003.parquet": ["u3-5"]}
    assert len(parts) == 5  # the short third part and the fifth's kept rows: gathered
    carried = pa.concat_tables([read_parquet(fs, p) for p in parts])
    served = [i for i in carried.column("id").to_pylist() if i not in {"u1-7", "u3-5"}]
    assert served == [i for i in wanted.to_pylist() if i != "u3-5"]


@pytest.mark.slow  # whole builds and updates
def test_vectors_an_update_leaves_out_of_linked_parts_are_served_by_no_reader(corpus, tmp_path,
                                                                             monkeypatch):
    """Entities whose description changed: their vectors' parts are linked with those rows
    left out, and the table read whole, searched brute force or through its Lance index
    holds the full build's vectors, each once; the next update carries the left-out rows
    on."""
    from graphrag_ray import GraphIndex
    from graphrag_ray.index import carry_over
    from graphrag_ray.query.vectors import VectorTable

    monkeypatch.setattr(carry_over, "CARRIED_WHOLE_ROWS", 1)
    overrides = ["runtime.engine=local", "vector_index.ann_min_rows=8"]
    index, full = str(tmp_path / "index"), str(tmp_path / "full")
    build_index(str(corpus), index, load_config(None, overrides), progress=lambda _: None)
    files = sorted(corpus.glob("*.txt"))
    files[5].write_text(files[5].read_text() + "\n\nMarta Quill joined Quarry Lane Works.")
    files[9].unlink()
    manifest = update_index(index, str(corpus), load_config(None, overrides),
                            progress=lambda _: None)
    build_index(str(corpus), full, load_config(None, overrides), progress=lambda _: None)
    version = IndexStore(index).open()
    name = schema.ENTITY_DESCRIPTION_EMBEDDINGS
    left_out = version.left_out(name)
    assert left_out and all(part.startswith("part-carried-") for part in left_out)
    for table in EMBEDDINGS[:2]:
        assert _vectors(index, table) == _vectors(full, table), table
    searched = VectorTable.from_groups(version.row_reader(name))
    assert sorted(searched.ids) == sorted(_vectors(full, name))
    assert manifest.vector_stores[name]["rows"] == len(searched.ids)
    assert len(GraphIndex.open(index).vectors(name)) == len(searched.ids)
    # The next update (one more file) carries the linked parts and what they leave out.
    (corpus / "zz-later.txt").write_text(files[2].read_text()[:2000])
    update_index(index, str(corpus), load_config(None, overrides), progress=lambda _: None)
    build_index(str(corpus), str(tmp_path / "full2"), load_config(None, overrides),
                progress=lambda _: None)
    assert _vectors(index, name) == _vectors(str(tmp_path / "full2"), name)
    assert IndexStore(index).open().read_table(name).num_rows == len(_vectors(index, name))


def test_an_update_completes_the_times_of_files_it_carries(corpus, tmp_path):
    """Files read a moment after they were written record no time (`settled_time`), nor did
    versions from before times were kept: an update that finds them settled records theirs,
    so the next one takes their hashes without reading them."""
    import time

    from graphrag_ray.index.previous_version import INPUT_FILES

    index = str(tmp_path / "index")
    build_index(str(corpus), index, _config(), progress=lambda _: None)
    before = IndexStore(index).open().read_table(INPUT_FILES)
    assert before.column("modified").null_count == before.num_rows  # just generated
    then = time.time() - 60
    for path in corpus.glob("*.txt"):
        os.utime(path, (then, then))
    (corpus / "zz-new.txt").write_text("Jonas Pellew founded Quarry Lane Works.")
    _update(index, corpus)
    after = IndexStore(index).open().read_table(INPUT_FILES)
    times = dict(zip(after.column("path").to_pylist(), after.column("modified").to_pylist()))
    assert times.pop("zz-new.txt") is None  # (written just now)
    assert times and all(t == then for t in times.values())


def test_same_texts_finds_the_rows_whose_embedded_text_did_not_change(tmp_path):
    import pyarrow as pa

    from graphrag_ray.index.carry_over import same_texts

    store = IndexStore(str(tmp_path / "index"))
    before, after = store.stage(), store.stage()
    before.write_table("entities", pa.table({
        "id": ["a", "b", "c", "d", "e"], "title": ["A", "B", "C", "D", "E"],
        "description": ["one", "two", None, "four", "five"]}))
    after.write_table("entities", pa.table({  # in parts, another order; "e" gone, "f" new
        "id": ["d", "c", "b", "a", "f"], "title": ["D", "C", "B", "A2", "F"],
        "description": ["four", "", "TWO", "one", "six"]}), rows_per_part=2)
    assert sorted(same_texts(before, after, "entities", ["title", "description"])
                  .to_pylist()) == ["c", "d"]  # (a null and an empty text are alike)


def test_same_texts_takes_the_rows_of_linked_parts_as_they_were(tmp_path):
    """A part the update linked from the previous version serves the previous rows (but
    those it leaves out); only the parts written now are compared."""
    import numpy as np
    import pyarrow as pa

    from graphrag_ray.index.carry_over import same_texts

    store = IndexStore(str(tmp_path / "index"))
    before, after = store.stage(), store.stage()
    before.write_table("entities", pa.table({
        "id": ["a", "b", "c", "d"], "title": ["A", "B", "C", "D"],
        "description": ["one", "two", "three", "four"]}), rows_per_part=2)
    linked, first = after.link_parts(before, "entities", ["id"], lambda number, part: (
        np.array([i != "b" for i in part.column("id").to_pylist()]), None))
    assert [number for number, _, _ in linked] == [0, 1] and first == 2
    after.write_table("entities", pa.table({  # "b" changed, "e" new
        "id": ["b", "e"], "title": ["B", "E"], "description": ["TWO", "five"]}),
        rows_per_part=2, first_part=first)
    assert sorted(same_texts(before, after, "entities", ["title", "description"])
                  .to_pylist()) == ["a", "c", "d"]
    # The same parts, not linked by this process, are compared text by text.
    again = IndexStore(str(tmp_path / "index"))._version(after.version)
    assert sorted(same_texts(before, again, "entities", ["title", "description"])
                  .to_pylist()) == ["a", "c", "d"]


def test_an_index_numbered_densely_is_renumbered_by_its_first_update(corpus, tmp_path,
                                                                    monkeypatch):
    """Versions from before file numbers were spread numbered files 0, 1, 2, ...: a file
    added between two has no number free, so the update numbers every file afresh and
    carries the whole reading renumbered; the next update links it."""
    import numpy as np

    from graphrag_ray.index.chunks import positions

    index, full = str(tmp_path / "index"), str(tmp_path / "full")
    spread = positions.spread_numbers
    monkeypatch.setattr(positions, "spread_numbers",
                        lambda count: np.arange(count, dtype=np.int64))
    build_index(str(corpus), index, _config(), progress=lambda _: None)
    listing = IndexStore(index).open().read_table(f"{READING}/files")
    assert listing.column("file_index").to_pylist() == list(range(listing.num_rows))
    monkeypatch.setattr(positions, "spread_numbers", spread)
    files = sorted(corpus.glob("*.txt"))
    (corpus / f"{files[3].stem}-b.txt").write_text(files[8].read_text()[:3000])
    before = _stored_reading(index)
    _update(index, corpus)
    after = _stored_reading(index)
    assert not any(after.get(name) == inode for name, inode in before.items())  # rewritten
    numbers = IndexStore(index).open().read_table(f"{READING}/files").column(
        "file_index").to_pylist()
    assert numbers == spread(len(numbers)).tolist()
    build_index(str(corpus), full, _config(), progress=lambda _: None)
    _assert_same_tables(index, full)


def test_reports_an_update_keeps_in_place_are_served_by_the_previous_parts(corpus, tmp_path):
    """The previous reports file is linked (the same file), the reports of the communities
    that changed are left out of it and written in a part after it; read back, the table
    has one report per community, in its community's place, as the communities table says."""
    index = str(tmp_path / "index")
    build_index(str(corpus), index, _config(), progress=lambda _: None)
    before = IndexStore(index).open()
    previous_file = before.table_files(schema.COMMUNITY_REPORTS)[0]
    files = sorted(corpus.glob("*.txt"))
    files[5].write_text(files[5].read_text() + "\n\nMarta Quill joined Quarry Lane Works.")
    manifest, _ = _update(index, corpus)
    version = IndexStore(index).open()
    parts = version.table_files(schema.COMMUNITY_REPORTS)
    assert len(parts) == 2 and parts[0].endswith("part-00000.parquet")
    assert os.stat(parts[0]).st_ino == os.stat(previous_file).st_ino
    left_out = version.left_out(schema.COMMUNITY_REPORTS)
    assert list(left_out) == ["part-00000.parquet"] and len(left_out["part-00000.parquet"])
    reports = version.read_table(schema.COMMUNITY_REPORTS)
    communities = version.read_table(schema.COMMUNITIES)
    assert reports.num_rows == communities.num_rows == manifest.tables[schema.COMMUNITIES]
    assert len(set(reports.column("id").to_pylist())) == reports.num_rows
    place = ["community", "level", "parent", "size"]
    assert sorted(reports.select(place).to_pylist(), key=lambda r: r["community"]) == \
        sorted(communities.select(place).to_pylist(), key=lambda r: r["community"])
    assert 0 < manifest.update["reports_kept"] < reports.num_rows
    assert sum(manifest.reports_by_generation.values()) == reports.num_rows


def test_communities_an_update_keeps_are_served_by_the_previous_parts(corpus, tmp_path,
                                                                    monkeypatch):
    """Two copies of one index, updated alike: one links the previous communities part
    and writes only the rows that changed after it, the other writes every row again. Read
    back, the two tables are the same rows."""
    index, again = tmp_path / "index", tmp_path / "again"
    build_index(str(corpus), str(index), _config(), progress=lambda _: None)
    shutil.copytree(index, again)
    previous_file = IndexStore(str(index)).open().table_files(schema.COMMUNITIES)[0]
    # New names and one sentence of an existing file: a few entities touched, most not.
    first_sentence = sorted(corpus.glob("*.txt"))[2].read_text().split(". ")[0]
    (corpus / "zz-new.txt").write_text("Jonas Pellew founded Quarry Lane Works. Marta Quill "
                                       f"met Jonas Pellew. {first_sentence}.")
    manifest, _ = _update(str(index), corpus)
    monkeypatch.setattr(tables, "link_kept_communities", lambda *_: (set(), 0))
    _update(str(again), corpus)
    version = IndexStore(str(index)).open()
    parts = version.table_files(schema.COMMUNITIES)
    assert len(parts) == 2 and os.stat(parts[0]).st_ino == os.stat(previous_file).st_ino
    assert len(version.left_out(schema.COMMUNITIES)["part-00000.parquet"])
    linked = version.read_table(schema.COMMUNITIES)
    assert linked.num_rows == manifest.tables[schema.COMMUNITIES]
    assert 0 < read_parquet(version.fs, parts[1]).num_rows < linked.num_rows / 2
    written = IndexStore(str(again)).open().read_table(schema.COMMUNITIES)
    assert linked.sort_by("community").to_pylist() == written.sort_by("community").to_pylist()


def test_text_units_in_linked_parts_are_not_embedded_again_and_keep_their_vectors(
        corpus, tmp_path, monkeypatch):
    """Text units in many parts (files read two at a time): an added file's update links
    the previous parts whose rows it carries as they are, embeds only the new text units
    (`feed.parts_without` does not read the linked parts) and every text unit has its
    vector, the full build's."""
    from graphrag_ray.index.extract import stage
    from graphrag_ray.index.write import carried_tables

    monkeypatch.setattr(carried_tables, "SMALL_PART_BYTES", 0)
    monkeypatch.setattr(stage, "FILES_PER_READ", 2)
    overrides = ["runtime.engine=local", "output.rows_per_part=16"]
    index, full = str(tmp_path / "index"), str(tmp_path / "full")
    build_index(str(corpus), index, load_config(None, overrides), progress=lambda _: None)
    before = IndexStore(index).open().table_files(schema.TEXT_UNITS)
    (corpus / "zz-later.txt").write_text(sorted(corpus.glob("*.txt"))[2].read_text()[:2000])
    manifest = update_index(index, str(corpus), load_config(None, overrides),
                            progress=lambda _: None)
    version = IndexStore(index).open()
    inodes = {os.stat(p).st_ino for p in version.table_files(schema.TEXT_UNITS)}
    assert len(before) > 2 and sum(os.stat(p).st_ino in inodes for p in before) > 1
    units = manifest.tables[schema.TEXT_UNITS]
    assert manifest.tables[schema.TEXT_UNIT_EMBEDDINGS] == units
    build_index(str(corpus), full, load_config(None, overrides), progress=lambda _: None)
    assert _vectors(index, schema.TEXT_UNIT_EMBEDDINGS) == \
        _vectors(full, schema.TEXT_UNIT_EMBEDDINGS)
    assert len(version.read_table(schema.TEXT_UNIT_EMBEDDINGS, ["id"])) == units


def test_files_added_where_their_gap_is_full_renumber_only_their_neighbours(corpus, tmp_path,
                                                                          monkeypatch):
    """A build spaced its files 4 numbers apart; 6 files added after the fourth do not fit
    their gap, so the files around them are numbered again with them: the parts of files far
    from them stay linked, the moved files' are rewritten, and the tables are a full
    build's."""
    import numpy as np

    from graphrag_ray.index.chunks import positions
    from graphrag_ray.index.extract import stage

    index, full = str(tmp_path / "index"), str(tmp_path / "full")
    monkeypatch.setattr(stage, "FILES_PER_READ", 2)  # parts of a few files each
    spread = positions.spread_numbers
    monkeypatch.setattr(positions, "spread_numbers",
                        lambda count: np.arange(1, count + 1, dtype=np.int64) * 4)
    build_index(str(corpus), index, _config(), progress=lambda _: None)
    monkeypatch.setattr(positions, "spread_numbers", spread)
    before_numbers = _numbers(index)
    files = sorted(corpus.glob("*.txt"))
    added = generate_corpus(tmp_path / "added", 6_000, seed=9, tokens_per_document=1_000)
    for k, path in enumerate(sorted(added.files)):
        (corpus / f"{files[3].stem}-b{k}.txt").write_text(Path(path).read_text())
    before = _stored_reading(index)
    _update(index, corpus)
    after = _stored_reading(index)
    numbers = _numbers(index)
    kept = [name for name in before_numbers if numbers.get(name) == before_numbers[name]]
    assert 0 < len(kept) < len(before_numbers)
    assert any(after.get(name) == inode for name, inode in before.items())  # linked
    assert any(after.get(name) != inode for name, inode in before.items())  # rewritten
    build_index(str(corpus), full, _config(), progress=lambda _: None)
    _assert_same_tables(index, full, report_vectors=False)


def _numbers(url: str) -> dict[str, int]:
    listing = IndexStore(url).open().read_table(f"{READING}/files")
    return dict(zip(listing.column("path").to_pylist(),
                    listing.column("file_index").to_pylist()))


def test_the_text_units_gone_are_those_no_carried_chunk_shares():
    """A chunk of a file read again is gone unless a carried chunk has the same text (the
    same id): its vector stays."""
    status = pa.table({"seq": [chunk_seq(f, 0, 0) for f in (10, 20, 30, 30)],
                       "text_unit_id": ["a", "b", "c", "a"]})
    carried = CarriedReading(None, FileMap(np.array([10, 20, 30]), np.array([10, 20, 30])),
                             ["x", "y", "z"], 1, status)
    assert carried.text_unit_ids_gone().to_pylist() == []
    carried.read_again({20, 30})
    assert carried.text_unit_ids_gone().to_pylist() == ["b", "c"]
