"""memloop's records under the keys Mem0's `Memory` answers with. Every
memloop key stays (kind, valid_from, scores, provenance ...); Mem0's are
added beside them: `hash`, `run_id` (memloop's session), and `role` /
`actor_id` lifted from the metadata where a message's role was stored."""

from __future__ import annotations

from typing import Any


def item(record: dict[str, Any]) -> dict[str, Any]:
    """A memory (or search hit) with Mem0's keys."""
    if "content_hash" in record:
        record["hash"] = record["content_hash"]
    if "session_id" in record:
        record["run_id"] = record["session_id"]
    metadata = record.get("metadata")
    if isinstance(metadata, dict):
        for key in ("role", "actor_id"):
            if key in metadata and key not in record:
                record[key] = metadata[key]
    return record


def history_row(entry: dict[str, Any]) -> dict[str, Any]:
    """A history entry with Mem0's keys: its time as `created_at` and
    `updated_at`, `is_deleted` for a deletion."""
    entry["created_at"] = entry.get("at")
    entry["updated_at"] = entry.get("at")
    entry["is_deleted"] = entry.get("event") == "DELETE"
    entry.setdefault("actor_id", None)
    entry.setdefault("role", None)
    return entry
