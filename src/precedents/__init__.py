"""precedents: local memory recall for AI coding agents.

Kept import-light on purpose: ``precedents.hook.core`` lives below this package and
must start in a few milliseconds, so nothing heavy is imported here.
"""

__version__ = "0.1.0"
