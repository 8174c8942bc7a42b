"""`precedents service install/uninstall`: the watcher and the daemon at login (`units`; the
unit templates ship in `templates/`).
"""
