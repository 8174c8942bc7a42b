"""The Claude Code hook (stdlib only): `core` answers each event, `launch` is its fast entry,
`install` writes it into settings.
"""
