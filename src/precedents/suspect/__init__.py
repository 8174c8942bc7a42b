"""The suspect check (docs/daemon.md, "Stored text is data"): a record whose text reads
as orders to the agent is shown as its path only. :func:`suspect_reason` says why.

Modules: ``normal`` (the variants a text is read in: NFKC, Unicode's default-ignorable
characters, confusables, leetspeak, base64), ``english``, ``commands`` and ``foreign``
(the patterns), ``confusables`` (a table generated from Unicode's confusables.txt),
``check`` (the check itself).
"""

from precedents.suspect.check import suspect_reason

__all__ = ["suspect_reason"]
