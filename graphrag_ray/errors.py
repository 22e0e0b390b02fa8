"""User-facing errors: the CLI prints their message and exits non-zero, with no traceback."""


class GraphRagError(Exception):
    """An error whose message tells the user what to fix."""


class ConfigError(GraphRagError):
    """A bad config file, key or value."""


class InputError(GraphRagError):
    """Input documents that cannot be read or hold nothing to index."""


class LLMError(GraphRagError):
    """The LLM endpoint failed in a way retries cannot fix."""


class IndexNotFoundError(GraphRagError):
    """No published index at the given URL."""


class IndexFormatError(GraphRagError):
    """An index this version of graphrag-ray cannot read (written by a later one)."""


def environment_error(exc: BaseException) -> str | None:
    """What the user should read for a failure of the environment rather than of our code:
    missing cloud credentials, an unreachable object store, a denied permission, a path that
    is a file, a full disk. None for anything else (a bug keeps its traceback). Looks through
    the exception's causes: storage libraries wrap the cloud SDK's errors, Ray a worker's."""
    import errno
    import re

    seen = []
    while exc is not None and exc not in seen:
        seen.append(exc)
        name = type(exc).__name__
        if name in ("NoCredentialsError", "PartialCredentialsError",
                    "NoAuthTokenError", "DefaultCredentialsError"):
            return (f"no credentials for the object store ({exc}): set them the way its SDK "
                    "reads them (for S3: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a "
                    "profile, or an instance role)")
        if name in ("EndpointConnectionError", "ConnectTimeoutError"):
            return (f"cannot reach the object store: {_first_line(exc)} (check the endpoint, "
                    "for S3 AWS_ENDPOINT_URL or the region, and the network)")
        if isinstance(exc, PermissionError) or "AccessDenied" in str(exc)[:300]:
            where = getattr(exc, "filename", None) or ""
            return f"permission denied{f' on {where}' if where else ''}: {_first_line(exc)}"
        if isinstance(exc, (NotADirectoryError, FileExistsError)):
            return (f"{exc.filename} is a file where a folder is needed (choose another path, "
                    "or remove the file)")
        if isinstance(exc, IsADirectoryError):
            return (f"{exc.filename} is a folder where a file is needed (choose another path, "
                    "or remove the folder)")
        if isinstance(exc, OSError) and exc.errno == errno.EROFS:
            return (f"read-only file system: cannot write {exc.filename or 'the output'} "
                    "(choose an output on a writable disk)")
        if isinstance(exc, ImportError) and "to access" in str(exc):
            # fsspec's word for a URL whose backend is not installed ("Install s3fs to
            # access S3"): the package to install, in one line.
            package = re.search(r"install (\S+) to access", str(exc), re.I)
            return (f"{_first_line(exc)}: `pip install {package.group(1)}` adds it"
                    if package else _first_line(exc))
        if isinstance(exc, ValueError) and str(exc).startswith("Protocol not known"):
            return f"{_first_line(exc)}: no fsspec backend reads URLs of that kind"
        if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
            return (f"no space left on the device writing {exc.filename or 'the index'}: free "
                    "some, then rerun (cached LLM calls are not repeated); "
                    "`graphrag-ray versions --prune N` removes abandoned builds")
        # Ray's task errors carry the worker's exception as `cause` (their __cause__ is
        # Ray Data's marker of where it failed).
        exc = getattr(exc, "cause", None) or exc.__cause__ or exc.__context__
    return None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__
