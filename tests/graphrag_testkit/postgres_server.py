"""A PostgreSQL server with pgvector for the tests, started and stopped by them: the server
`pgserver`'s wheel bundles (PostgreSQL and pgvector, from the package registry), run from its
own binaries in a temporary data directory, on a port picked free, listening on 127.0.0.1
only, stopped by its own `pg_ctl` at the end. PostgreSQL will not run as root: as root, the
server runs as `nobody` (no user is created, no permission changed), from a copy of the
binaries in its own folder."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path


def installed() -> Path | None:
    """pgserver's binaries, or None when it is not installed (found, not imported: its own
    server management is not used)."""
    import importlib.util

    spec = importlib.util.find_spec("pgserver")
    if spec is None or not spec.submodule_search_locations:
        return None
    binaries = Path(list(spec.submodule_search_locations)[0]) / "pginstall" / "bin"
    return binaries if (binaries / "pg_ctl").exists() else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _copied_for_nobody(binaries: Path, folder: Path) -> Path:
    """As root the server runs as `nobody`, who may not reach the installed package (under
    /root, say): its binaries and the libraries they load are copied into `folder`, in the
    same places relative to each other (the binaries find the libraries by `$ORIGIN`)."""
    package = binaries.parent.parent
    copy = folder / "pg" / package.name
    shutil.copytree(binaries.parent, copy / "pginstall", symlinks=True)
    libraries = package.parent / f"{package.name}.libs"
    if libraries.exists():
        shutil.copytree(libraries, folder / "pg" / libraries.name, symlinks=True)
    return copy / "pginstall" / "bin"


def _as_server_user(command: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return command
    return ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
            "--inh-caps=-all", *command]


@contextlib.contextmanager
def postgres_server() -> Iterator[str]:
    """A running server; yields its URL (database postgres, user postgres, no password)."""
    binaries = installed()
    assert binaries is not None, "pgserver is not installed"
    folder = Path(tempfile.mkdtemp(prefix="graphrag-postgres-"))
    folder.chmod(0o755)
    data, sockets = folder / "data", folder / "sockets"
    sockets.mkdir()
    if os.geteuid() == 0:
        binaries = _copied_for_nobody(binaries, folder)
        os.chown(folder, 65534, 65534)
        os.chown(sockets, 65534, 65534)
    port = _free_port()
    env = {**os.environ, "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"}

    def run(*args) -> None:
        subprocess.run(_as_server_user([str(a) for a in args]), check=True,
                       capture_output=True, text=True, env=env, cwd=folder)
    try:
        run(binaries / "initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8")
        run(binaries / "pg_ctl", "-D", data, "-w", "-t", "60", "-l", folder / "server.log",
            "-o", f"-p {port} -k {sockets} -c listen_addresses=127.0.0.1", "start")
        try:
            yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
        finally:
            run(binaries / "pg_ctl", "-D", data, "-m", "fast", "-w", "stop")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
