"""Secrets masked before anything is embedded or stored (SPEC §3): by shape, by key and
context, echoes, and in file names.
"""
