"""The organisation's index (issue #30, docs/org.md).

One table on object storage (or a path), built by `precedents org build` in CI
from many repositories with the local index's own readers, and pulled by every
developer's daemon into ``<state>/org/``: decisions of repositories nobody
cloned reach the agent, marked ``(org, <repository>)``.

* :mod:`.table`: the table's layout at its URI (the contract between the build
  and every reader): the Lance dataset, the served pointer, the lock object.
* :mod:`.snapshot`: a pulled version as the daemon's snapshot file.

Nothing here imports recall, the daemon, the CLI or the API: data flows one way.
"""
