"""Small named exceptions, raised by the library and translated at the boundaries.

The CLI turns :class:`UsageError` into exit code 2 and every other
:class:`PrecedentsError` into exit code 1, each as a one-line message.
"""

from __future__ import annotations


class PrecedentsError(Exception):
    """Base class of every error precedents reports to a user."""


class UsageError(PrecedentsError):
    """The user asked for something that cannot be: a missing folder, a bad option."""


class ConfigError(UsageError):
    """The configuration file or an environment variable is malformed."""


class ModelError(PrecedentsError):
    """The embedding model cannot be loaded or used."""


class ModelNotAvailable(ModelError, UsageError):
    """The model is not on this machine (and this command may not download it)."""


class StoreError(PrecedentsError):
    """LanceDB failed: the store is damaged, locked or unreadable."""


class ModelMismatch(StoreError):
    """The store was built with another model; a full re-embed is needed."""
