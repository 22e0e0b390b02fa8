"""Environment failures are messages, not tracebacks."""

import errno
import shutil
import subprocess
import sys

import pytest

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
    assert f"{tmp_path / 'out'} is a file, not a folder" in captured.err
    assert "Traceback" not in captured.err
    assert "[extract]" not in captured.out + captured.err  # told before any work


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs Linux's /proc")
def test_an_output_the_system_will_not_create_is_a_message(capsys):
    # /proc takes no new folders (ENOENT, a reason without a message of its own)
    code = main(["index", "--input", str(CAROL_DIR), "--output", "/proc/graphrag-ray/index"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "cannot write the index at /proc/graphrag-ray/index: no such file" in err


def test_a_build_with_nothing_readable_leaves_no_unpublished_version(tmp_path, capsys):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "empty.txt").write_text("")
    out = tmp_path / "index"
    assert main(["index", "--input", str(tmp_path / "in"), "--output", str(out)]) == 2
    assert "no readable documents" in capsys.readouterr().err
    assert list((out / "versions").iterdir()) == []


@pytest.mark.slow
def test_the_command_line_ends_without_teardown_and_loses_no_words(tmp_path):
    """`cli.run` ends the process at once after `main` (no interpreter teardown): the exit
    code and everything written to a pipe arrive; an exception still exits as Python does."""
    missing = tmp_path / "no-index"
    done = subprocess.run([sys.executable, "-m", "graphrag_ray", "query", "--index",
                           str(missing), "Who is Scrooge?"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2 and done.stderr.startswith("error: ") and str(missing) in \
        done.stderr, done.stderr[-2000:]
    listed = subprocess.run([sys.executable, "-m", "graphrag_ray", "--help"],
                            capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0 and "prompt-tune" in listed.stdout


@pytest.fixture
def small_disk(tmp_path):
    """A 2 MiB filesystem of the test's own (tmpfs), where a disk really fills up."""
    mount_point = tmp_path / "small_disk"
    mount_point.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount_point)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", str(mount_point)], check=True)


@pytest.mark.parametrize("engine", ["local", "ray"])
def test_a_full_disk_is_a_message_and_the_published_version_stays(small_disk, capsys, engine):
    """On Ray the disk fills up in a worker: the message is the same."""
    from graphrag_ray.storage import IndexStore

    out = small_disk / "index"
    assert main(["index", "--input", str(CAROL_DIR), "--output", str(out)]) == 0
    published = IndexStore(str(out)).versions()
    free = shutil.disk_usage(small_disk).free
    (small_disk / "filler").write_bytes(b"\0" * (free - 64 * 1024))
    capsys.readouterr()
    assert main(["index", "--input", str(CAROL_DIR), "--output", str(out),
                 "--set", "chunks.size=600", "--set", f"runtime.engine={engine}",
                 "--set", "runtime.num_cpus=2"]) == 2
    err = capsys.readouterr().err
    assert "no space left on the device" in err and "Traceback" not in err
    store = IndexStore(str(out))
    assert store.versions() == published  # the failed build's version is gone, freeing space
    assert store.open().read_table("entities").num_rows > 0


def test_environment_failures_of_real_corpora_runs_are_messages():
    assert "read-only file system: cannot write /mnt/ro/index" in environment_error(
        OSError(errno.EROFS, "Read-only file system", "/mnt/ro/index"))
    assert "is a folder where a file is needed" in environment_error(
        IsADirectoryError(errno.EISDIR, "Is a directory", "/tmp/plots"))
    assert "is a file where a folder is needed" in environment_error(
        FileExistsError(errno.EEXIST, "File exists", "/tmp/site"))
    # fsspec's error for a URL whose backend is not installed, as it raises it.
    assert environment_error(ImportError("Install gcsfs to access Google Storage")) == (
        "Install gcsfs to access Google Storage: `pip install gcsfs` adds it")


def test_the_output_path_named_is_the_one_the_user_gave(tmp_path, capsys):
    (tmp_path / "afile").write_text("a file")
    code = main(["index", "--input", str(CAROL_DIR), "--output", str(tmp_path / "afile")])
    err = capsys.readouterr().err
    assert code == 2 and f"{tmp_path / 'afile'} is a file, not a folder" in err
    assert "versions" not in err


@pytest.mark.parametrize("command", ["stats", "explore", "export"])
def test_an_out_of_the_wrong_kind_is_a_message(small_index, tmp_path, capsys, command):
    """`stats --out FILE`, `explore --out FILE`, `export --out DIR-that-is-a-file`: raw
    FileExistsError / IsADirectoryError tracebacks before."""
    (tmp_path / "taken").write_text("a file")
    extra = ["--format", "csv"] if command == "export" else []  # csv writes a folder
    code = main([command, "--index", str(small_index), "--out", str(tmp_path / "taken"), *extra])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and str(tmp_path / "taken") in err, err
