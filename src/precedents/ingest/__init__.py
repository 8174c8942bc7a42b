"""The ingest stage: source folders -> files read and masked -> chunks -> the store (SPEC §2-3)."""
