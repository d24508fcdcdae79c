"""One adapter per store. Each gets the same texts, the same float32 vectors
(memloop's own MiniLM embeddings, exported with `memloop export --vectors`)
and the same query vectors, and answers the top 10 as corpus indices.

Every adapter uses the store's ordinary public API, with its defaults, the way
its documentation shows, with cosine distance. `query` is what a caller of
that API pays for one search by vector, including turning the hits back into
Python objects with their texts (memloop's hits carry their texts too).
"""

import http.client
import json
import os
import shutil
import socket
import subprocess
import time

K = 10
DIM = 384


class Skip(Exception):
    """The store cannot run here; the message says why."""


class Store:
    name = "?"
    includes = ""  # what the store ran, printed under the table
    query_kind = "by vector, in process"  # what one query's figure includes

    def open(self, path: str):
        raise NotImplementedError

    def ingest(self, texts, vecs):
        raise NotImplementedError

    def query(self, qi: int, qtext: str, qvec) -> list:
        raise NotImplementedError

    def close(self):
        pass


def _fresh(path):
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)


class Chroma(Store):
    name = "Chroma"
    includes = "PersistentClient, HNSW (its defaults), ids + documents returned"

    def open(self, path):
        try:
            import chromadb
            from chromadb.config import Settings
        except ImportError as e:
            raise Skip(f"chromadb not importable: {e}")
        _fresh(path)
        self.client = chromadb.PersistentClient(path=path, settings=Settings(anonymized_telemetry=False))
        # No embedding function: vectors are given, Chroma must not embed.
        self.col = self.client.create_collection(
            "peers", embedding_function=None, configuration={"hnsw": {"space": "cosine"}})

    def ingest(self, texts, vecs):
        step = self.client.get_max_batch_size()
        for s in range(0, len(texts), step):
            self.col.add(ids=[str(i) for i in range(s, min(s + step, len(texts)))],
                         embeddings=vecs[s:s + step], documents=texts[s:s + step])

    def query(self, qi, qtext, qvec):
        r = self.col.query(query_embeddings=[qvec], n_results=K, include=["documents", "distances"])
        return [int(i) for i in r["ids"][0]]


class LanceDB(Store):
    includes = "on-disk table, ids + texts returned"

    def __init__(self, index: bool):
        # LanceDB searches without an index (an exact scan) until one is built;
        # both are what a user may run, so both are measured.
        self.index = index
        self.name = "LanceDB, IVF_HNSW_SQ index" if index else "LanceDB, no index (exact scan)"

    def open(self, path):
        try:
            import lancedb
            import pyarrow  # noqa: F401
        except ImportError as e:
            raise Skip(f"lancedb not importable: {e}")
        _fresh(path)
        self.db = lancedb.connect(path)

    def ingest(self, texts, vecs):
        import pyarrow as pa
        vec_col = pa.FixedSizeListArray.from_arrays(pa.array(vecs.ravel(), type=pa.float32()), DIM)
        data = pa.table({"id": pa.array(range(len(texts)), type=pa.int64()),
                         "text": pa.array(texts), "vector": vec_col})
        self.tbl = self.db.create_table("peers", data=data)
        if self.index:  # the index build is part of the ingest, as memloop's graph is
            self.tbl.create_index(metric="cosine", index_type="IVF_HNSW_SQ")

    def query(self, qi, qtext, qvec):
        rows = (self.tbl.search(qvec).distance_type("cosine").limit(K)
                .select(["id", "text", "_distance"]).to_list())
        return [int(r["id"]) for r in rows]


def _sqlite_with_extensions():
    """The stdlib sqlite3 when this Python was built to load extensions (some
    pyenv builds are not), else pysqlite3 (requirements.txt installs it)."""
    import sqlite3
    if hasattr(sqlite3.Connection, "enable_load_extension"):
        return sqlite3
    try:
        import pysqlite3
        return pysqlite3
    except ImportError:
        raise Skip("this Python's sqlite3 cannot load extensions and pysqlite3 is not installed")


class SqliteVec(Store):
    name = "sqlite-vec"
    includes = "vec0 virtual table (exact scan), texts joined from a table, one transaction"

    def open(self, path):
        try:
            import sqlite_vec
        except ImportError as e:
            raise Skip(f"sqlite-vec not importable: {e}")
        sqlite = _sqlite_with_extensions()
        _fresh(path)
        self.db = sqlite.connect(os.path.join(path, "peers.db"))
        self.db.enable_load_extension(True)
        sqlite_vec.load(self.db)
        self.db.enable_load_extension(False)
        self.db.execute("CREATE TABLE mem(id INTEGER PRIMARY KEY, text TEXT NOT NULL)")
        self.db.execute(f"CREATE VIRTUAL TABLE vec USING vec0(embedding float[{DIM}] distance_metric=cosine)")

    def ingest(self, texts, vecs):
        with self.db:  # one transaction, committed (default synchronous=FULL)
            self.db.executemany("INSERT INTO mem(id, text) VALUES (?, ?)", enumerate(texts))
            self.db.executemany("INSERT INTO vec(rowid, embedding) VALUES (?, ?)",
                                ((i, vecs[i].tobytes()) for i in range(len(texts))))

    def query(self, qi, qtext, qvec):
        rows = self.db.execute(
            "WITH knn AS (SELECT rowid, distance FROM vec WHERE embedding MATCH ? AND k = ?) "
            "SELECT knn.rowid, mem.text FROM knn JOIN mem ON mem.id = knn.rowid ORDER BY knn.distance",
            (qvec.tobytes(), K)).fetchall()
        return [int(r[0]) for r in rows]


class QdrantLocal(Store):
    name = "Qdrant, local mode"
    includes = "qdrant-client's in-process local mode (exact scan in numpy), payload returned"

    def open(self, path):
        try:
            from qdrant_client import QdrantClient, models
        except ImportError as e:
            raise Skip(f"qdrant-client not importable: {e}")
        _fresh(path)
        self.models = models
        self.client = QdrantClient(path=path)
        self.client.create_collection(
            "peers", vectors_config=models.VectorParams(size=DIM, distance=models.Distance.COSINE))

    def ingest(self, texts, vecs):
        step = 1000
        for s in range(0, len(texts), step):
            e = min(s + step, len(texts))
            self.client.upsert("peers", points=self.models.Batch(
                ids=list(range(s, e)), vectors=vecs[s:e].tolist(),
                payloads=[{"text": t} for t in texts[s:e]]))

    def query(self, qi, qtext, qvec):
        r = self.client.query_points("peers", query=qvec.tolist(), limit=K, with_payload=True)
        return [int(p.id) for p in r.points]

    def close(self):
        if hasattr(self, "client"):
            self.client.close()


class Mem0(Store):
    name = "Mem0 (OSS, infer=False)"
    query_kind = "by text, in process; its embedder returns the given vector"
    includes = ("Memory.search on its default vector store (Qdrant local); embedder replaced by a "
                "lookup of the given vectors; no LLM call")

    def __init__(self, query_texts, query_vecs):
        # Mem0 embeds every text it is given and has no way to take a vector,
        # so its embedder is swapped for a dictionary of the precomputed ones:
        # Mem0 then indexes and searches exactly the vectors the others get.
        self.lookup = {t: v for t, v in zip(query_texts, query_vecs)}

    def open(self, path):
        _fresh(path)
        os.environ["MEM0_TELEMETRY"] = "False"  # read at import: no network calls
        os.environ["MEM0_DIR"] = os.path.join(path, "home")
        try:
            from mem0 import Memory
        except ImportError as e:
            raise Skip(f"mem0ai not importable: {e}")
        lookup = self.lookup

        class Given:
            def embed(self, text, memory_action=None):
                if text not in lookup:
                    raise KeyError(f"no precomputed vector for {text!r}")
                return lookup[text]

            def embed_batch(self, texts, memory_action=None):
                return [self.embed(t) for t in texts]

        # The OpenAI provider only builds a client object here; with
        # infer=False Mem0 never calls the LLM, and the embedder is replaced.
        self.m = Memory.from_config({
            "vector_store": {"provider": "qdrant", "config": {
                "collection_name": "peers", "embedding_model_dims": DIM,
                "path": os.path.join(path, "qdrant"), "on_disk": True}},
            "embedder": {"provider": "openai", "config": {"api_key": "unused", "embedding_dims": DIM}},
            "llm": {"provider": "openai", "config": {"api_key": "unused"}},
            "history_db_path": os.path.join(path, "history.db"),
        })
        self.m.embedding_model = Given()

    def ingest(self, texts, vecs):
        for t, v in zip(texts, vecs):
            self.lookup[t] = v.tolist()
        self.index_of = {t: i for i, t in enumerate(texts)}
        step = 100  # a list of messages is Mem0's batch form: one memory each with infer=False
        for s in range(0, len(texts), step):
            self.m.add([{"role": "user", "content": t} for t in texts[s:s + step]],
                       user_id="peers", infer=False)

    def query(self, qi, qtext, qvec):
        r = self.m.search(qtext, filters={"user_id": "peers"}, top_k=K, threshold=0.0)
        return [self.index_of[h["memory"]] for h in r["results"]]

    def close(self):
        try:
            self.m.vector_store.client.close()
        except Exception:
            pass


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Memloop(Store):
    name = "memloop"
    query_kind = "HTTP + query embedding + hybrid search"
    includes = ("`memloop import` (vectors given) for ingest; search through `memloop serve`'s REST "
                "route: HTTP on loopback + query embedding + hybrid (BM25 + vector) search")

    def __init__(self, binary, export_file, id_to_index):
        self.binary, self.export_file, self.id_to_index = binary, export_file, id_to_index
        self.proc = None

    def _cli(self, *args, **kw):
        return subprocess.run([self.binary, "--data-dir", self.path, *args], check=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)

    def open(self, path):
        if not (self.binary and os.access(self.binary, os.X_OK)):
            raise Skip(f"memloop binary not found: {self.binary}")
        _fresh(path)
        self.path = path

    def ingest(self, texts, vecs):
        # The export the vectors came from, restored: memloop's bulk path with
        # vectors given (each transaction of 256 fsync'd, keyword index and
        # HNSW graph kept current). Timed as the whole process, start included.
        self._cli("import", self.export_file)

    def serve(self, log_path):
        port = _free_port()
        self.log = open(log_path, "w")
        self.proc = subprocess.Popen([self.binary, "--data-dir", self.path, "serve",
                                      "--addr", f"127.0.0.1:{port}"],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        self.port = port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        deadline = time.time() + 120
        while True:  # the server loads the model before it listens
            try:
                self.conn.request("GET", "/healthz")
                r = self.conn.getresponse()
                r.read()
                if r.status == 200:
                    break
            except OSError:
                self.conn.close()
            if self.proc.poll() is not None or time.time() > deadline:
                raise Skip(f"memloop serve did not start (see {log_path})")
            time.sleep(0.2)
        # A user with one memory: the same request there costs HTTP + query
        # embedding + a trivial search, so the difference from the full user
        # estimates the search's own share (memloop has no search-by-vector
        # in its CLI or REST API).
        self._post("/v1/memories", {"messages": "I like green tea.", "user_id": "peers-one", "infer": False})

    def reconnect(self):
        """A fresh keep-alive connection: the server closes idle ones after
        10 s, and the other stores' turns last longer than that."""
        self.conn.close()
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        self.conn.connect()

    def _post(self, route, body):
        payload = json.dumps(body)
        for attempt in (0, 1):
            try:
                self.conn.request("POST", route, body=payload, headers={"Content-Type": "application/json"})
                r = self.conn.getresponse()
                data = r.read()
                break
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                if attempt:
                    raise
                self.reconnect()
        if r.status != 200:
            raise RuntimeError(f"{route}: HTTP {r.status}: {data[:300]!r}")
        return json.loads(data)

    def query(self, qi, qtext, qvec):
        r = self._post("/v1/memories/search", {"query": qtext, "user_id": "peers", "top_k": K})
        return [self.id_to_index[h["id"]] for h in r["results"]]

    def query_one(self, qtext):
        self._post("/v1/memories/search", {"query": qtext, "user_id": "peers-one", "top_k": K})

    def close(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()  # the server we started, by its own handle
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        if self.proc:
            self.log.close()
