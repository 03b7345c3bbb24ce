"""pygomp's version (as pyproject.toml says): the package's ``__version__`` and part of
the disk cache's keys."""
VERSION = "0.1.0"
