"""A project's own rule files in every agent's format, and their scopes (docs/rules.md).

Pure logic over files: the standard library and the front matter reader only,
no model and no store. The indexer stores each rule with its :class:`Scope`;
the daemon matches scopes against the files the agent touches.
"""
