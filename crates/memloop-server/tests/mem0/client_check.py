"""Drives Mem0's own Python client (mem0ai) against a running memloop server.

Usage: client_check.py HOST KEY OTHER_TENANTS_KEY
Each step prints "ok <call>"; the first failure raises (non-zero exit).
"""
import sys

from mem0 import MemoryClient
from mem0.exceptions import AuthenticationError, MemoryNotFoundError, ValidationError

host, key, other_key = sys.argv[1:4]


def ok(call):
    print(f"ok {call}", flush=True)


try:
    MemoryClient(api_key="not-a-key", host=host)
    raise AssertionError("a bad key was accepted")
except ValueError as e:  # the constructor's ping turns a 401 into ValueError
    assert "key" in str(e).lower(), e
ok("constructor refuses a bad key")

client = MemoryClient(api_key=key, host=host)
other = MemoryClient(api_key=other_key, host=host)
ok("constructor (ping)")

added = client.add(
    [
        {"role": "user", "content": "I am allergic to peanuts"},
        {"role": "assistant", "content": "Noted, no peanuts."},
    ],
    user_id="alice",
    infer=False,
)
assert [r["event"] for r in added["results"]] == ["ADD", "ADD"], added
client.add("I play the cello on weekends", user_id="alice", infer=False)
client.add("Bob drinks black coffee", user_id="bob", infer=False)
ok("add (infer=False)")

inferred = client.add("My name is Alice and I moved to Lisbon last year", user_id="alice")
assert inferred["results"], inferred
ok("add (infer=True, rules extraction)")

found = client.search("is she allergic to peanuts", filters={"user_id": "alice"})
assert found["results"][0]["memory"] == "I am allergic to peanuts", found
assert all(h["user_id"] == "alice" for h in found["results"]), found
ok("search")

page = client.get_all(filters={"user_id": "alice"}, page=1, page_size=2)
assert page["count"] >= 4 and len(page["results"]) == 2 and page["next"], page
ok("get_all (paged)")

memory_id = added["results"][0]["id"]
assert client.get(memory_id)["memory"] == "I am allergic to peanuts"
ok("get")

client.update(memory_id, text="I am allergic to peanuts and cashews")
assert client.get(memory_id)["memory"] == "I am allergic to peanuts and cashews"
ok("update")

events = [h["event"] for h in client.history(memory_id)["results"]]
assert events == ["ADD", "UPDATE"], events
ok("history")

try:
    other.get(memory_id)
    raise AssertionError("another tenant read the memory")
except MemoryNotFoundError:
    pass
ok("another tenant's key gets MemoryNotFoundError")

try:
    client.search("x", filters={"topic": "food"})
    raise AssertionError("a search without a scope was answered")
except ValidationError as e:
    assert "user_id" in str(e), e
ok("an unscoped search is a ValidationError that says what to give")

client.delete(memory_id)
try:
    client.delete(memory_id)
    raise AssertionError("a deleted memory was deleted again")
except ValidationError:
    pass
ok("delete")

names = sorted(u["name"] for u in client.users()["results"])
assert names == ["alice", "bob"], names
ok("users")

client.delete_all(user_id="bob")
assert client.get_all(filters={"user_id": "bob"})["count"] == 0
ok("delete_all")

client.reset()
assert client.users()["results"] == []
ok("reset")

try:
    MemoryClient(api_key=key, host=host).get("no-such-id")
    raise AssertionError("an unknown id was found")
except MemoryNotFoundError:
    pass
except AuthenticationError as e:
    raise AssertionError(f"the key was refused: {e}")
ok("get of an unknown id is MemoryNotFoundError")
