"""Environment failures are messages, not tracebacks."""

import errno

from graphrag_ray.cli import main
from graphrag_ray.errors import environment_error

from conftest import CAROL_DIR


class NoCredentialsError(Exception):
    """Shaped like botocore's: named, and wrapped by the storage library."""


def test_environment_failures_are_told_and_bugs_are_not():
    wrapped = OSError("could not write")
    wrapped.__cause__ = NoCredentialsError("Unable to locate credentials")
    assert "no credentials for the object store" in environment_error(wrapped)
    assert "permission denied on /data/index" in environment_error(
        PermissionError(errno.EACCES, "Permission denied", "/data/index"))
    assert "is a file where a folder is needed" in environment_error(
        NotADirectoryError(errno.ENOTDIR, "Not a directory", "/tmp/out/index"))
    assert "no space left" in environment_error(
        OSError(errno.ENOSPC, "No space left on device", "/tmp/out/part-0.parquet"))
    assert environment_error(KeyError("a bug")) is None
    assert environment_error(ValueError("another")) is None


def test_an_output_that_is_a_file_is_a_message(tmp_path, capsys):
    (tmp_path / "out").write_text("a file")
    code = main(["index", "--input", str(CAROL_DIR), "--output", str(tmp_path / "out" / "index")])
    assert code == 2
    captured = capsys.readouterr()
    assert "is a file where a folder is needed" in captured.err
    assert "Traceback" not in captured.err
    assert "[extract]" not in captured.out + captured.err  # told before any work
