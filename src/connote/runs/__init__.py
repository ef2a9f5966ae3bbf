"""Run folders: the resumable SQLite store of per-item results and the one runner that fills it."""

from connote.runs.store import RunStore, content_key, fingerprint, run_metadata, write_json, write_jsonl, write_text

__all__ = ["RunStore", "content_key", "fingerprint", "run_metadata", "write_json", "write_jsonl", "write_text"]
