//! The mixed load, one worker per thread. Each worker owns its users, so
//! it knows exactly what the server must hold for them (its oracle): the
//! memories it was told were stored, minus those it deleted, purged or
//! let expire. A user is purged once it has had its share of writes and
//! comes back under a new name, so partitions keep arriving and leaving
//! as with real users.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::http::{Answer, Client};

/// An add carries this TTL one time in six; the soak's sweeper interval is
/// shorter, so these are deleted while the load runs.
pub const TTL_SECS: u64 = 20;
/// Sessions per user.
const SESSIONS: usize = 8;

/// Every operation the load mixes, with its weight out of 100.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    Add,
    Search,
    Context,
    RecordTurn,
    Append,
    ReadSession,
    Get,
    List,
    Delete,
    Purge,
}

const MIX: [(Op, u32); 9] = [
    (Op::Add, 24),
    (Op::Search, 22),
    (Op::Context, 8),
    (Op::RecordTurn, 10),
    (Op::Append, 16),
    (Op::ReadSession, 5),
    (Op::Get, 8),
    (Op::List, 3),
    (Op::Delete, 4),
];

impl Op {
    pub fn name(self) -> &'static str {
        match self {
            Op::Add => "add",
            Op::Search => "search",
            Op::Context => "context",
            Op::RecordTurn => "record turn",
            Op::Append => "session append",
            Op::ReadSession => "session read",
            Op::Get => "get",
            Op::List => "list",
            Op::Delete => "delete",
            Op::Purge => "purge",
        }
    }
}

/// Latencies of the window being filled, shared by the workers.
#[derive(Default)]
pub struct Window {
    pub latencies_us: Vec<u32>,
    pub by_op: Vec<(Op, u32)>,
    pub errors: usize,
}

/// What the workers share: the window, the stop flag, the error log.
pub struct Shared {
    pub window: Mutex<Window>,
    pub stop: AtomicBool,
    pub requests: AtomicU64,
    pub max_requests: u64,
    /// The first errors, described (the rest are counted).
    pub errors: Mutex<Vec<String>>,
}

impl Shared {
    fn record(&self, op: Op, a: &Answer, error: Option<String>) {
        let us = a.took.as_micros().min(u32::MAX as u128) as u32;
        let mut w = self.window.lock().unwrap_or_else(|p| p.into_inner());
        w.latencies_us.push(us);
        w.by_op.push((op, us));
        if let Some(e) = error {
            w.errors += 1;
            drop(w);
            let mut log = self.errors.lock().unwrap_or_else(|p| p.into_inner());
            if log.len() < 20 {
                log.push(format!("{}: {e}", op.name()));
            }
        }
    }

    fn go_on(&self) -> bool {
        !self.stop.load(Ordering::Relaxed)
            && self.requests.fetch_add(1, Ordering::Relaxed) < self.max_requests
    }
}

/// One user as its worker knows it.
struct User {
    name: String,
    generation: u32,
    /// Memories acknowledged and neither deleted nor purged, without a TTL.
    live: Vec<String>,
    /// Acknowledged with a TTL: the id and when it expires at the latest.
    expiring: Vec<(String, Instant)>,
    writes: u32,
    /// Writes after which the user is purged (5 to 60).
    quota: u32,
}

/// What a worker expects of the server at the end.
#[derive(Default)]
pub struct Oracle {
    /// (user, id) of every memory that must be found.
    pub live: Vec<(String, String)>,
    /// Deleted or purged: must not be found.
    pub gone: Vec<String>,
    /// With a TTL: (user, id, expiry at the latest); once past, not found.
    pub expiring: Vec<(String, String, Instant)>,
    pub acknowledged: usize,
    pub purges: usize,
}

pub struct Worker {
    id: usize,
    client: Client,
    rng: Rng,
    users: Vec<User>,
    gone: Vec<String>,
    acknowledged: usize,
    purges: usize,
    seq: u64,
}

impl Worker {
    pub fn new(id: usize, url: &str, users: usize, seed: u64) -> Worker {
        let mut rng = Rng(seed ^ (id as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let users = (0..users.max(1))
            .map(|k| User {
                name: format!("soak-w{id}-u{k}-g0"),
                generation: 0,
                live: Vec::new(),
                expiring: Vec::new(),
                writes: 0,
                quota: 5 + rng.below(56) as u32,
            })
            .collect();
        Worker {
            id,
            client: Client::new(url),
            rng,
            users,
            gone: Vec::new(),
            acknowledged: 0,
            purges: 0,
            seq: 0,
        }
    }

    /// Runs operations until told to stop; returns what must hold.
    pub fn run(mut self, shared: &Shared) -> Oracle {
        while shared.go_on() {
            let k = self.rng.below(self.users.len() as u64) as usize;
            let op = if self.users[k].writes >= self.users[k].quota {
                Op::Purge
            } else {
                self.pick()
            };
            let (answer, error) = self.step(op, k);
            shared.record(op, &answer, error);
        }
        self.finish()
    }

    fn pick(&mut self) -> Op {
        let total: u32 = MIX.iter().map(|(_, w)| w).sum();
        let mut r = self.rng.below(u64::from(total)) as u32;
        for (op, w) in MIX {
            if r < w {
                return op;
            }
            r -= w;
        }
        Op::Search
    }

    /// One operation on user `k`: the answer, and what was wrong with it.
    fn step(&mut self, op: Op, k: usize) -> (Answer, Option<String>) {
        self.seq += 1;
        let user = self.users[k].name.clone();
        let session = format!("{user}-s{}", self.rng.below(SESSIONS as u64));
        let token = format!("k{}x{}", self.id, self.seq);
        match op {
            Op::Add => {
                let ttl = self.rng.below(6) == 0;
                let mut body = json!({"messages": format!("{} {token}", self.words(10)),
                    "user_id": user, "run_id": session, "infer": false});
                if ttl {
                    body["ttl"] = json!(format!("{TTL_SECS}s"));
                }
                let a = self.client.post("/v1/memories", &body);
                let id = a.body["results"][0]["id"].as_str().map(str::to_string);
                match (a.ok(), id) {
                    (true, Some(id)) => {
                        self.acknowledged += 1;
                        let u = &mut self.users[k];
                        u.writes += 1;
                        if ttl {
                            let by = Instant::now() + Duration::from_secs(TTL_SECS);
                            u.expiring.push((id, by));
                        } else {
                            u.live.push(id);
                        }
                        (a, None)
                    }
                    _ => {
                        let e = a.describe();
                        (a, Some(e))
                    }
                }
            }
            Op::RecordTurn => {
                let body = json!({"messages": [
                    {"role": "user", "content": format!("I bought {} today, note {token}", self.words(4))},
                    {"role": "assistant", "content": format!("Noted: {}", self.words(8))}],
                    "user_id": user, "run_id": session, "turn_id": token});
                let a = self.client.post("/v1/turn/record", &body);
                if !a.ok() {
                    let e = a.describe();
                    return (a, Some(e));
                }
                // Episodes stay current as said; facts may be superseded by
                // later ones, so only episodes are expected to stay.
                let ids: Vec<String> = a.body["writes"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|w| w["event"] == "ADD" && w["kind"] == "episode")
                    .filter_map(|w| w["id"].as_str().map(str::to_string))
                    .collect();
                self.acknowledged += ids.len();
                let u = &mut self.users[k];
                u.writes += 1;
                u.live.extend(ids);
                (a, None)
            }
            Op::Search => {
                let body = json!({"query": self.words(5), "user_id": user, "top_k": 10});
                self.expect_ok(self.client.post("/v1/memories/search", &body))
            }
            Op::Context => {
                let body = json!({"input": self.words(8), "user_id": user, "run_id": session});
                self.expect_ok(self.client.post("/v1/context", &body))
            }
            Op::Append => {
                // About 1 KB a message, as the probe sent.
                let body = json!({"messages": [{"role": "user", "content": self.words(150)}],
                    "user_id": user});
                let path = format!("/v1/sessions/{session}/messages");
                self.expect_ok(self.client.post(&path, &body))
            }
            Op::ReadSession => self.expect_ok(self.client.get(&format!("/v1/sessions/{session}"))),
            Op::Get => self.get_one(k),
            Op::List => self.list_one(k),
            Op::Delete => self.delete_one(k),
            Op::Purge => self.purge(k),
        }
    }

    fn expect_ok(&self, a: Answer) -> (Answer, Option<String>) {
        let error = (!a.ok()).then(|| a.describe());
        (a, error)
    }

    /// A memory acknowledged earlier reads back, by id.
    fn get_one(&mut self, k: usize) -> (Answer, Option<String>) {
        let Some(id) = self.any_live(k) else {
            return self.expect_ok(self.client.get("/healthz"));
        };
        let a = self.client.get(&format!("/v1/memories/{id}"));
        let error = match (a.ok(), a.body["id"].as_str()) {
            (true, Some(got)) if got == id => None,
            _ => Some(format!(
                "acknowledged memory {id} not read back: {}",
                a.describe()
            )),
        };
        (a, error)
    }

    /// The user's list holds every memory acknowledged for it and none
    /// deleted.
    fn list_one(&mut self, k: usize) -> (Answer, Option<String>) {
        let u = &self.users[k];
        let a = self
            .client
            .get(&format!("/v1/memories?user_id={}&limit=1000", u.name));
        if !a.ok() {
            let e = a.describe();
            return (a, Some(e));
        }
        let listed = listed_ids(&a.body);
        let missing = u.live.iter().filter(|id| !listed.contains(*id)).count();
        let error = (missing > 0).then(|| {
            format!(
                "{missing} of {} acknowledged memories of {} missing from its list",
                u.live.len(),
                u.name
            )
        });
        (a, error)
    }

    fn delete_one(&mut self, k: usize) -> (Answer, Option<String>) {
        let Some(id) = self.any_live(k) else {
            return self.expect_ok(self.client.get("/healthz"));
        };
        let a = self.client.delete(&format!("/v1/memories/{id}"));
        if !a.ok() {
            let e = a.describe();
            return (a, Some(e));
        }
        self.users[k].live.retain(|x| *x != id);
        self.gone.push(id);
        (a, None)
    }

    /// Purges the user (memories, history, sessions) and starts it anew
    /// under its next name.
    fn purge(&mut self, k: usize) -> (Answer, Option<String>) {
        let name = self.users[k].name.clone();
        let a = self
            .client
            .delete(&format!("/v1/memories?user_id={name}&purge=true"));
        if !a.ok() {
            let e = a.describe();
            return (a, Some(e));
        }
        self.purges += 1;
        let quota = 5 + self.rng.below(56) as u32;
        let u = &mut self.users[k];
        self.gone.append(&mut u.live);
        self.gone.extend(u.expiring.drain(..).map(|(id, _)| id));
        u.generation += 1;
        u.name = format!("soak-w{}-u{k}-g{}", self.id, u.generation);
        u.writes = 0;
        u.quota = quota;
        (a, None)
    }

    fn any_live(&mut self, k: usize) -> Option<String> {
        let live = &self.users[k].live;
        (!live.is_empty()).then(|| live[self.rng.below(live.len() as u64) as usize].clone())
    }

    fn words(&mut self, n: usize) -> String {
        (0..n)
            .map(|_| WORDS[self.rng.below(WORDS.len() as u64) as usize])
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn finish(self) -> Oracle {
        let mut o = Oracle {
            gone: self.gone,
            acknowledged: self.acknowledged,
            purges: self.purges,
            ..Oracle::default()
        };
        for u in self.users {
            o.live
                .extend(u.live.into_iter().map(|id| (u.name.clone(), id)));
            o.expiring.extend(
                u.expiring
                    .into_iter()
                    .map(|(id, by)| (u.name.clone(), id, by)),
            );
        }
        o
    }
}

/// The ids of a list answer.
pub fn listed_ids(body: &Value) -> std::collections::HashSet<String> {
    body["results"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["id"].as_str().map(str::to_string))
        .collect()
}

/// xorshift64*: reproducible from `--seed`, no dependency for it.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        let mut x = self.0.max(1);
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d) % n.max(1)
    }
}

const WORDS: [&str; 64] = [
    "apple", "river", "garden", "coffee", "train", "doctor", "summer", "violin", "market", "bread",
    "mountain", "letter", "pencil", "window", "ticket", "kitchen", "bicycle", "holiday", "sister",
    "meeting", "project", "budget", "recipe", "museum", "harbour", "blanket", "engine", "forest",
    "island", "lantern", "orange", "pepper", "rabbit", "saddle", "tennis", "tomato", "valley",
    "wallet", "yellow", "anchor", "basket", "candle", "dinner", "empire", "falcon", "guitar",
    "hammer", "insect", "jacket", "kettle", "ladder", "magnet", "needle", "oyster", "parrot",
    "quartz", "rocket", "silver", "temple", "umbrella", "velvet", "walnut", "zipper", "beacon",
];
