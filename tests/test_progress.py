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
