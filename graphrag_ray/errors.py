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
