import io

from graphrag_ray.progress import ProgressBar


def test_log_lines_when_not_a_terminal_show_count_rate_and_eta():
    stream = io.StringIO()
    bar = ProgressBar("extract", total=10, unit="chunks", stream=stream, log_every_s=0)
    bar.update(4)
    bar.update(6)
    bar.close()
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("[extract] 4/10 chunks") and "ETA" in lines[0] and "/s" in lines[0]
    assert lines[-1].startswith("[extract] 10/10 chunks")


def test_terminal_mode_rewrites_one_line():
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    stream = Terminal()
    bar = ProgressBar("reports", total=3, stream=stream)
    bar.update(3)
    bar.close()
    assert stream.getvalue().count("\r") >= 1 and stream.getvalue().endswith("\n")


def test_chunk_totals_are_estimated_per_file_and_corrected_as_files_are_read():
    import pyarrow as pa

    from graphrag_ray.index.chunks.positions import chunk_seq, seq_file_number
    from graphrag_ray.progress import ChunkProgress, estimated_chunks

    # Many small files: one window each, not the corpus's bytes over the window size.
    assert estimated_chunks(2_400, 600, 100) == 1
    assert estimated_chunks(4 * 1_100, 600, 100) == 2
    stream = io.StringIO()
    # Three files, by their numbers (spread apart: `positions.spread_numbers`).
    bar = ChunkProgress("extract", {40: 1, 80: 1, 120: 1}, seq_file_number, stream=stream,
                        log_every_s=0)
    # File 80 turned out to make 4 chunks: the total moves to 6 when its first chunk is done.
    bar.add_rows(pa.table({"seq": [chunk_seq(80, 0, 0), chunk_seq(80, 0, 1)],
                           "file_chunks": [4, 4]}))
    assert bar.total == 6 and bar.done == 2
    bar.add_rows(pa.table({"seq": [chunk_seq(80, 0, 2), chunk_seq(80, 0, 3),
                                   chunk_seq(40, 0, 0), chunk_seq(120, 0, 0)],
                           "file_chunks": [4, 4, 1, 1]}))
    bar.close()
    assert bar.total == bar.done == 6
    assert "ETA -" not in stream.getvalue()


def test_a_short_estimate_never_shows_a_negative_eta():
    stream = io.StringIO()
    bar = ProgressBar("extract", total=2, stream=stream, log_every_s=0)
    bar.update(5)
    assert "5/5" in bar.line() and "ETA -" not in bar.line()


def test_a_line_comes_every_interval_while_nothing_finishes():
    """A slow stage logged nothing until a batch finished (on Ray: ~2 minutes of silence,
    then the whole stage at once). The ticker keeps elapsed and ETA moving."""
    import time

    stream = io.StringIO()
    bar = ProgressBar("extract", total=10, unit="chunks", stream=stream, log_every_s=0.3)
    bar.TICK_S = 0.05
    deadline = time.monotonic() + 30
    while stream.getvalue().count("\n") < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    bar.close()
    lines = stream.getvalue().splitlines()
    assert len(lines) >= 3 and all(line.startswith("[extract] 0/10 chunks") for line in lines[:2])


def test_chunk_progress_shows_calls_and_tokens():
    import pyarrow as pa

    from graphrag_ray.index.chunks.positions import chunk_seq, seq_file_number
    from graphrag_ray.progress import ChunkProgress

    bar = ChunkProgress("extract", {0: 2}, seq_file_number, stream=io.StringIO(),
                        log_every_s=60)
    bar.add_rows(pa.table({"seq": [chunk_seq(0, 0, 0)], "file_chunks": [2], "calls": [3],
                           "prompt_tokens": [1000], "completion_tokens": [200]}))
    assert "1/2 chunks, 3 calls, 1,200 tokens" in bar.line()
    bar.close()


def test_a_failed_stage_leaves_no_ticker_writing():
    """A stage that raised left its bar's ticker writing to stderr every 10 s (into a closed
    stream under pytest: 'I/O operation on closed file')."""
    import pyarrow as pa
    import pytest

    from graphrag_ray.config import RuntimeConfig
    from graphrag_ray.distributed import map_table

    class Failing:
        def __call__(self, batch):
            raise RuntimeError("disk full")

    stream = io.StringIO()
    bar = ProgressBar("extract", total=3, stream=stream, log_every_s=0)
    with pytest.raises(RuntimeError, match="disk full"):
        map_table(pa.table({"key": [1, 2, 3]}), Failing, {}, RuntimeConfig(engine="local"),
                  output_schema=pa.schema([("key", pa.int64())]), progress=bar)
    assert not bar._ticker.join(timeout=5) and not bar._ticker.is_alive()
    # And a stream that closes under a running bar stops its ticker, not the process.
    other = io.StringIO()
    running = ProgressBar("x", total=1, stream=other, log_every_s=0)
    running.TICK_S = 0.01
    other.close()
    running._ticker.join(timeout=5)
    assert not running._ticker.is_alive()


def test_the_eta_counts_from_the_first_finished_item():
    """Reports wait for summaries: nothing finishes for a while, then they come quickly. The
    ETA counted from the bar's start said "ETA 322972s" on the 116M-token build."""
    import time

    stream = io.StringIO()
    bar = ProgressBar("reports", total=1000, stream=stream, log_every_s=3600)
    bar.started -= 600  # ten minutes waiting on the summaries
    bar.update(1)
    assert "ETA ?" in bar.line()  # one point is no rate
    bar.first_update = (bar.first_update[0] - 1.0, 1)  # then 99 more in a second
    bar.update(99)
    eta = float(bar.line().split("ETA ")[1].rstrip("s"))
    assert eta < 20, bar.line()  # ~9 s at 100/s; from the start it would be ~5,400 s
    bar.close()
    assert time.monotonic() - bar.started >= 600


def test_an_llm_stage_counts_the_calls_the_provider_answered_and_estimates_its_total():
    """Chunks finish late (extraction, then gleaning, many at once): the line counts the
    calls as they settle, its rate and ETA follow them, and the chunk total stays an
    estimate ("~") until every file has said how many chunks it made."""
    import io

    import pyarrow as pa

    from graphrag_ray.progress import ChunkProgress

    answered = {"calls": 0}
    stream = io.StringIO()
    bar = ChunkProgress("extract", {1: 10, 2: 10}, lambda seq: seq // 100,
                        calls_source=lambda: dict(answered), calls_per_chunk=2.0,
                        stream=stream)
    bar.POLL_S = 0.0
    assert "0/~20 chunks" in bar.line() and "ETA ?" in bar.line()
    answered["calls"] = 12
    line = bar.line()
    assert "0/~20 chunks, 12 calls" in line and "calls/s" in line
    assert "ETA ?" not in line  # (40 expected calls - 12) at the calls' rate
    bar.add_rows(pa.table({"seq": [100, 200], "file_chunks": [8, 9], "calls": [2, 2],
                           "prompt_tokens": [10, 10], "completion_tokens": [5, 5]}))
    assert "2/17 chunks" in bar.line()  # both files counted: the total is known
    bar.stop()
