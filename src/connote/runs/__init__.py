"""Run folders: a resumable SQLite store of per-item results keyed by model fingerprint."""

from connote.runs.store import RunStore, fingerprint, run_metadata, write_json

__all__ = ["RunStore", "fingerprint", "run_metadata", "write_json"]
