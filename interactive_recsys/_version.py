"""The version of interactive-recsys (one place: the package, the CLI and saved workflows read
it; pyproject.toml states the same)."""

__version__ = "0.1.0"
