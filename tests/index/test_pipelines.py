"""The build's pipelines are declared lists over one registry of stages: each list is well
formed (nothing read before it is written), config turns stages on and off, the build and
the dry run run the lists they say they run."""

from graphrag_ray.config import load_config
from graphrag_ray.index.estimate import estimate_index, format_estimate
from graphrag_ray.index.pipelines import (
    PIPELINES, STAGES, check_pipeline, pipeline, pipeline_name)
from graphrag_ray.storage import IndexStore


def test_every_pipeline_is_well_formed():
    for name, stages in PIPELINES.items():
        assert check_pipeline(stages) == [], name


def test_a_stage_that_reads_what_nothing_wrote_yet_is_named():
    assert check_pipeline(["merge", "plan_extraction", "extract"]) == [
        "merge reads 'extraction' before any stage writes it"]
    assert check_pipeline(["no_such_stage"]) == ["unknown stage 'no_such_stage'"]


def test_every_stage_is_in_a_pipeline_and_says_what_it_does():
    used = {stage for stages in PIPELINES.values() for stage in stages}
    assert used == set(STAGES)
    assert all(stage.about for stage in STAGES.values())


def test_config_picks_the_pipeline_and_turns_stages_on():
    offline = load_config(None, [])
    assert pipeline_name(offline) == "nlp"
    names = [s.name for s in pipeline("nlp", offline)]
    assert "extract_nlp" in names and "extract" not in names
    assert not {"embedding_feed", "extract_batch", "summaries_and_reports_batch",
                "embed_batch"} & set(names)
    llm = load_config(None, ["extraction.method=llm", "llm.batch=extraction",
                             "embeddings.method=api", "embeddings.api_base=http://e/v1"])
    names = [s.name for s in pipeline(pipeline_name(llm), llm)]
    assert names.index("extract_batch") < names.index("extract")
    assert "summaries_and_reports_batch" not in names  # extraction only by batch
    assert "embedding_feed" in names and "embed_batch" not in names
    whole = load_config(None, ["extraction.method=llm", "llm.batch=true",
                               "embeddings.method=api", "embeddings.api_base=http://e/v1",
                               "embeddings.batch=true"])
    names = [s.name for s in pipeline("standard", whole)]
    assert {"extract_batch", "summaries_and_reports_batch", "embed_batch"} <= set(names)
    assert "embedding_feed" not in names  # the embeddings wait for the final texts


def test_the_build_records_the_stages_it_ran(small_index):
    manifest = IndexStore(str(small_index)).read_manifest()
    assert manifest.pipeline.name == "nlp"
    assert manifest.pipeline.stages == [
        s.name for s in pipeline("nlp", load_config(None, ["runtime.engine=local"]))]


def test_the_dry_run_lists_the_pipeline(carol_excerpt):
    config = load_config(None, ["runtime.engine=local", "extraction.method=llm"])
    estimate = estimate_index(str(carol_excerpt), config)
    assert [s["stage"] for s in estimate["pipeline"]["stages"]] == [
        s.name for s in pipeline("standard", config)]
    assert "extract (chat) -> report_inputs" in format_estimate(estimate)


def test_a_stage_that_sets_what_it_does_not_declare_is_stopped():
    """The runner holds every stage to its `writes`: setting another field of the state is
    a bug said at once, not a surprise for a later stage."""
    import dataclasses

    import numpy as np
    import pytest

    from graphrag_ray.index.pipelines import BuildState, Stage, run_stages

    def sneaky(ctx, state):
        state.warnings = ["set", "without", "saying"]
        state.counts = {"entities": 1}

    class Ctx:  # what `run_stages` uses of a BuildContext: nothing, for an untimed stage
        pass

    from graphrag_ray.index.extract.stage import CHUNK_STATUS_SCHEMA

    state = BuildState("in", "in", [], np.zeros(0), [], 1, [])
    state.extraction = CHUNK_STATUS_SCHEMA.empty_table()
    honest = dataclasses.replace(STAGES["report_inputs"], run=lambda ctx, s: None)
    run_stages(Ctx(), state, [honest])
    with pytest.raises(RuntimeError, match="stage sneaky set counts, warnings, which it does "
                                           "not declare"):
        run_stages(Ctx(), state, [Stage("sneaky", sneaky, writes=("skipped",), timed=False,
                                        about="a test")])


def test_a_product_without_its_columns_or_a_read_without_a_writer_names_the_stage():
    """Where data enters and leaves a stage: the stage that wrote a table without a column
    its readers take is named, and so is a stage started without what it reads; whatever
    stops the stages, the runner closes what they opened."""
    import numpy as np
    import pytest

    from graphrag_ray.index.extract.stage import CHUNK_STATUS_SCHEMA
    from graphrag_ray.index.pipelines import BuildState, Stage, run_stages

    class Ctx:
        pass

    class Pool:
        closed = False

        def close(self):
            self.closed = True

    def careless(ctx, state):
        state.extraction = CHUNK_STATUS_SCHEMA.empty_table().drop_columns(["seq"])

    state = BuildState("in", "in", [], np.zeros(0), [], 1, [])
    pool = Pool()
    state.pools.append(pool)
    with pytest.raises(RuntimeError, match="stage careless writes: extraction has no seq"):
        run_stages(Ctx(), state, [Stage("careless", careless, writes=("extraction",),
                                        timed=False, about="a test")])
    assert pool.closed
    with pytest.raises(RuntimeError, match="stage merge reads: extraction is not there"):
        run_stages(Ctx(), BuildState("in", "in", [], np.zeros(0), [], 1, []), [STAGES["merge"]])


def test_a_stage_added_to_a_pipeline_runs_and_its_figures_reach_the_manifest(
        tmp_path, monkeypatch):
    """A new stage is its function, one `Stage` entry and its name in a pipeline: it reads
    what it declares, and what it reports (`ctx.figures.of_stage`) is in the manifest's
    `stage_figures` with no other file to edit."""
    import pyarrow.compute as pc

    from conftest import carol_input
    from graphrag_ray.index import pipelines
    from graphrag_ray.index.build import build_index

    def count_failed_chunks(ctx, state):
        failed = pc.sum(pc.equal(state.extraction.column("status"), "failed")).as_py() or 0
        ctx.figures.of_stage("count_failed_chunks").update(
            {"chunks": state.extraction.num_rows, "failed": failed})

    stage = pipelines.Stage("count_failed_chunks", count_failed_chunks, reads=("extraction",),
                            about="a test's stage")
    monkeypatch.setitem(pipelines.STAGES, stage.name, stage)
    nlp = list(pipelines.PIPELINES["nlp"])
    nlp.insert(nlp.index("report_inputs") + 1, stage.name)
    monkeypatch.setitem(pipelines.PIPELINES, "nlp", nlp)
    manifest = build_index(str(carol_input(tmp_path / "input", 20_000)),
                           str(tmp_path / "index"), load_config(None, ["runtime.engine=local"]),
                           progress=lambda _: None)
    figures = IndexStore(str(tmp_path / "index")).read_manifest().stage_figures
    assert figures == {"count_failed_chunks": {"chunks": manifest.extraction.chunks,
                                               "failed": 0}}
    assert "count_failed_chunks" in manifest.pipeline.stages
