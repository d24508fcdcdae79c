"""Mem0's `Memory` interface: the calls of Mem0's documented examples, with
only the import changed, and the shapes of their answers."""

from __future__ import annotations

import datetime as dt

import pytest

import memloop
from memloop import Memory


def test_the_documented_quickstart_runs_unchanged(tmp_path):
    m = Memory.from_config({"path": str(tmp_path / "d")})
    messages = [
        {"role": "user", "content": "I'm planning to watch a movie tonight. Any recommendations?"},
        {"role": "assistant", "content": "How about thriller movies? They can be quite engaging."},
        {"role": "user", "content": "I'm not a big fan of thriller movies but I love sci-fi movies."},
        {"role": "assistant", "content": "Got it! I'll avoid thriller recommendations."},
    ]
    result = m.add(messages, user_id="alice", metadata={"category": "movies"})
    assert result["results"], result
    for r in result["results"]:
        assert {"id", "memory", "event"} <= set(r)
        assert r["event"] in {"ADD", "UPDATE", "DELETE", "NOOP"}

    related = m.search("What kind of movies does alice like?", filters={"user_id": "alice"})
    hits = related["results"]
    assert any("sci-fi" in h["memory"] for h in hits[:2]), [h["memory"] for h in hits]
    assert any(h["kind"] == "fact" and h["memory"] == "User loves sci-fi movies" for h in hits)
    # The metadata given to add is on every memory it distilled: filterable.
    assert all(h["metadata"]["category"] == "movies" for h in hits)
    by_category = m.search("movies", filters={"user_id": "alice", "category": "movies"})["results"]
    assert {h["id"] for h in by_category} == {h["id"] for h in hits}
    assert m.search("movies", filters={"user_id": "alice", "category": "food"})["results"] == []
    for h in hits:
        for key in ("id", "memory", "hash", "metadata", "score", "created_at", "updated_at", "user_id"):
            assert key in h, key
        assert 0 <= h["score"] <= 1
        assert h["user_id"] == "alice"
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)

    all_memories = m.get_all(filters={"user_id": "alice"})
    ids = {r["id"] for r in all_memories["results"]}
    assert ids >= {h["id"] for h in hits}
    assert all("score" not in r for r in all_memories["results"])

    one = m.get(hits[0]["id"])
    assert one["memory"] == hits[0]["memory"]
    assert m.get("0193a5c2-7e41-7b8a-9f3e-2d1c4b5a6e7f") is None

    target = hits[0]["id"]
    updated = m.update(memory_id=target, data="Likes sci-fi and documentaries")
    assert updated["message"] == "Memory updated successfully!"
    assert updated["results"][0]["event"] == "UPDATE"
    history = m.history(memory_id=target)
    assert [h["event"] for h in history][:2] == ["ADD", "UPDATE"], history
    for h in history:
        for key in ("id", "memory_id", "old_memory", "new_memory", "event", "created_at", "updated_at", "is_deleted"):
            assert key in h, key
    assert history[1]["new_memory"] == "Likes sci-fi and documentaries"

    assert m.delete(memory_id=target)["message"] == "Memory deleted successfully!"
    assert m.get(target) is None
    assert m.history(target)[-1]["is_deleted"] is True

    assert m.delete_all(user_id="alice")["message"] == "Memories deleted successfully!"
    assert m.get_all(filters={"user_id": "alice"})["results"] == []
    m.reset()


def test_infer_false_stores_each_message_with_its_role(memory):
    out = memory.add(
        [{"role": "system", "content": "be brief"},
         {"role": "user", "content": "My sister Ana lives in Lisbon."},
         {"role": "assistant", "content": "Lisbon is lovely in spring."}],
        user_id="bob", infer=False, metadata={"source": "chat"},
    )
    assert [r["event"] for r in out["results"]] == ["ADD", "ADD"]
    assert [r["memory"] for r in out["results"]] == [
        "My sister Ana lives in Lisbon.", "Lisbon is lovely in spring."]
    got = memory.get(out["results"][0]["id"])
    assert got["metadata"] == {"source": "chat", "role": "user"}
    assert got["role"] == "user"
    one = memory.add("a bare string is one user message", user_id="bob", infer=False)
    assert memory.get(one["results"][0]["id"])["metadata"] == {}


def test_filters_take_mem0_operators(memory):
    for text, meta in [
        ("Ate ramen in Tokyo", {"topic": "food", "rating": 5}),
        ("Ate a bland sandwich", {"topic": "food", "rating": 2}),
        ("Hiked Mount Takao", {"topic": "travel", "rating": 4}),
    ]:
        memory.add(text, user_id="u", metadata=meta, infer=False)

    def found(filters):
        return sorted(h["memory"] for h in memory.search("what happened?", filters=filters)["results"])

    assert found({"user_id": "u", "topic": "food"}) == ["Ate a bland sandwich", "Ate ramen in Tokyo"]
    assert found({"user_id": "u", "rating": {"gte": 4}}) == ["Ate ramen in Tokyo", "Hiked Mount Takao"]
    assert found({"AND": [{"user_id": "u"}, {"topic": {"in": ["travel"]}}]}) == ["Hiked Mount Takao"]
    assert found({"user_id": "u", "OR": [{"rating": {"lt": 3}}, {"topic": "travel"}]}) == [
        "Ate a bland sandwich", "Hiked Mount Takao"]
    assert found({"user_id": "u", "NOT": [{"topic": "food"}]}) == ["Hiked Mount Takao"]
    assert found({"user_id": "u", "topic": {"ne": "food"}, "rating": {"nin": [1, 2]}}) == ["Hiked Mount Takao"]
    assert found({"user_id": "u", "topic": {"icontains": "TRAV"}}) == ["Hiked Mount Takao"]
    assert found({"user_id": "u", "topic": {"contains": "oo"}}) == ["Ate a bland sandwich", "Ate ramen in Tokyo"]
    assert len(found({"user_id": "u", "rating": "*"})) == 3
    assert found({"user_id": "u", "mood": "*"}) == []
    listed = memory.get_all(filters={"user_id": "u", "topic": "travel"})["results"]
    assert [r["memory"] for r in listed] == ["Hiked Mount Takao"]
    with pytest.raises(memloop.InvalidInput, match="operator"):
        memory.search("x", filters={"user_id": "u", "rating": {"between": [1, 2]}})


def test_mem0_refusals_keep_mem0_messages(memory):
    with pytest.raises(ValueError) as e:
        memory.search("x", user_id="u")
    assert str(e.value) == (
        "Top-level entity parameters frozenset({'user_id'}) are not supported in search(). "
        "Use filters={'user_id': '...'} instead.")
    assert isinstance(e.value, memloop.InvalidInput)
    with pytest.raises(ValueError, match="not supported in get_all"):
        memory.get_all(agent_id="a")
    with pytest.raises(memloop.InvalidInput, match="filters must contain at least one of"):
        memory.search("x", filters={"topic": "food"})
    with pytest.raises(memloop.InvalidInput, match="At least one of 'user_id'"):
        memory.add("hello there", infer=False)
    with pytest.raises(memloop.InvalidInput, match="Invalid threshold"):
        memory.search("x", filters={"user_id": "u"}, threshold=2)
    with pytest.raises(memloop.InvalidInput, match="top_k must be a valid integer"):
        memory.search("x", filters={"user_id": "u"}, top_k="3")
    with pytest.raises(memloop.InvalidInput, match="cannot be empty"):
        memory.search("   ", filters={"user_id": "u"})
    with pytest.raises(memloop.InvalidInput, match="At least one filter is required"):
        memory.delete_all()
    with pytest.raises(memloop.InvalidInput, match="At least one of text, metadata"):
        memory.update("0193a5c2-7e41-7b8a-9f3e-2d1c4b5a6e7f")
    with pytest.raises(memloop.InvalidInput, match="YYYY-MM-DD"):
        memory.add("x", user_id="u", expiration_date="next week")
    with pytest.raises(TypeError, match="unexpected keyword"):
        memory.search("x", filters={"user_id": "u"}, tok_k=3)
    assert memory.search("x", filters={"user_id": "u"}, top_k=0) == {"results": []}


def test_update_merges_metadata_and_sets_expiry(memory):
    mid = memory.add("Prefers window seats", user_id="u", metadata={"a": 1}, infer=False)["results"][0]["id"]
    memory.update(mid, metadata={"b": 2})
    assert memory.get(mid)["metadata"] == {"a": 1, "b": 2}
    memory.update(mid, expiration_date="2999-01-01")
    assert memory.get(mid)["expires_at"].startswith("2999-01-02")
    memory.update(mid, expiration_date=None)
    assert memory.get(mid)["expires_at"] is None
    past = dt.date.today() - dt.timedelta(days=2)
    memory.update(mid, expiration_date=past)
    assert memory.get(mid) is None, "expired: not current"
    assert memory.get(mid, include_deleted=True)["status"] == "expired"


def test_unknown_ids_raise_not_found_as_mem0_raises_value_error(memory):
    missing = "0193a5c2-7e41-7b8a-9f3e-2d1c4b5a6e7f"
    for call in (lambda: memory.delete(missing), lambda: memory.update(missing, text="x")):
        with pytest.raises(ValueError) as e:
            call()
        assert isinstance(e.value, memloop.NotFound) and e.value.code == "not_found"
        assert missing in str(e.value)
    with pytest.raises(memloop.InvalidInput, match="UUID"):
        memory.delete("bad\nid")
