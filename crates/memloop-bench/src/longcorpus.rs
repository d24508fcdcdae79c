//! A deterministic synthetic dataset of long technical conversations
//! between a user and an assistant, in the eval format
//! (docs/eval-format.md): about 500 turns per user, assistant replies of
//! 1–3k characters, and questions whose evidence is a fact planted in a
//! user turn, early in an assistant reply (within the embedding's first
//! 256 tokens) or late in one (past them). Unlike LoCoMo: long turns,
//! technical vocabulary shared by many turns, evidence in both roles.
//! `memloop bench` measures search on it; `memloop bench
//! --write-long-jsonl` writes it for `memloop eval jsonl`.

use crate::corpus::Rng;
use crate::eval::format::{Conversation, Question, Session, Turn};

/// Seed of the long-conversation dataset: `memloop bench`, the file it
/// writes and `eval suite`'s `synthetic-long:N` all draw the same one.
pub const LONG_SEED: u64 = 500;

const TOPICS: &[&str] = &[
    "the PostgreSQL replica",
    "the Kubernetes ingress",
    "the Rust build",
    "the CI pipeline",
    "the Redis cache",
    "the Terraform modules",
    "the React dashboard",
    "the Kafka consumers",
    "the nginx proxy",
    "the Python ETL job",
    "the gRPC gateway",
    "the Docker images",
    "the S3 backups",
    "the Prometheus alerts",
    "the OAuth login",
    "the search indexer",
];
const ACTIONS: &[&str] = &[
    "check the logs for timeouts before changing anything",
    "pin the dependency versions so the build is reproducible",
    "add a health check and restart the container",
    "raise the connection pool size and watch the latency",
    "split the migration into smaller batches",
    "turn on debug logging for one request and compare",
    "move the secret into the vault and rotate it",
    "add a retry with exponential backoff",
    "cache the result and invalidate it on write",
    "profile the slow path before optimising it",
    "write a regression test that reproduces the failure",
    "roll back the last deploy and bisect the change",
];
const DETAILS: &[&str] = &[
    "The error usually means the client gave up before the server answered.",
    "Memory usage grows with each request, which points to a leak in the handler.",
    "The config file is read once at startup, so a reload needs a restart.",
    "Most of the time goes into serialising the response, not the query itself.",
    "The default timeout of thirty seconds is too short for the nightly batch.",
    "Permissions are checked per namespace, so the service account needs a role binding.",
    "The lock is held across an await point, which blocks the other workers.",
    "Compression halves the transfer size but costs some CPU on every call.",
    "The metrics show a spike every hour, matching the cron schedule.",
    "The schema change adds a column with a default, which rewrites the table.",
    "A smaller image starts faster and has fewer packages to patch.",
    "The queue backs up when a consumer crashes without committing its offset.",
];
const ASKS: &[&str] = &[
    "Can you help me with {topic}? It has been flaky since yesterday.",
    "What is the best way to speed up {topic}?",
    "I keep getting errors from {topic}, any idea why?",
    "How should we monitor {topic} in production?",
    "Could you review how we set up {topic}?",
    "Is there a safer way to deploy {topic}?",
];
const SERVICES: &[&str] = &[
    "billing",
    "inventory",
    "checkout",
    "reporting",
    "notifications",
    "ledger",
    "catalog",
    "auth",
    "shipping",
    "analytics",
    "payroll",
    "scheduler",
];
const PEOPLE: &[&str] = &[
    "Amara", "Bruno", "Chen", "Dalia", "Emeka", "Freya", "Goran", "Hana", "Ivo", "Jun",
];
const REGIONS: &[&str] = &[
    "Frankfurt",
    "Oregon",
    "Singapore",
    "Dublin",
    "Sao Paulo",
    "Sydney",
    "Montreal",
    "Mumbai",
];

/// Where a question's evidence sits.
#[derive(Clone, Copy)]
enum Place {
    UserTurn,
    AssistantEarly,
    AssistantLate,
}

impl Place {
    fn name(self) -> &'static str {
        match self {
            Place::UserTurn => "user-turn",
            Place::AssistantEarly => "assistant-early",
            Place::AssistantLate => "assistant-late",
        }
    }
}

/// One planted fact: its sentence, a question about it (paraphrased, so
/// the question does not repeat the sentence word for word) and the answer.
fn fact(rng: &mut Rng, user: usize, i: usize) -> (String, String, String) {
    let service = rng.pick(SERVICES);
    // Unique per fact so each question has one right turn.
    let n = 1000 + (user * 37 + i * 101) % 8000;
    match rng.below(4) {
        0 => (
            format!("The {service} service listens on port {n} in staging."),
            format!("Which port does our {service} API use on the staging environment?"),
            n.to_string(),
        ),
        1 => {
            let who = rng.pick(PEOPLE);
            (
                format!(
                    "{who} owns the {service} migration and signs off every schema change ({n})."
                ),
                format!("Who is responsible for moving {service} to the new schema?"),
                who.to_string(),
            )
        }
        2 => {
            let region = rng.pick(REGIONS);
            (
                format!("The {service} cluster number {n} runs in the {region} data centre."),
                format!("In which region is the {service} cluster hosted?"),
                region.to_string(),
            )
        }
        _ => (
            format!("We cap the {service} queue at {n} messages before shedding load."),
            format!("What is the limit on pending messages for {service}?"),
            n.to_string(),
        ),
    }
}

/// An assistant reply of about `chars` characters on `topic`; `fact`, when
/// given, is placed at about `at` (0..1) of the way through.
fn reply(rng: &mut Rng, topic: &str, chars: usize, fact: Option<(&str, f32)>) -> String {
    let mut parts: Vec<String> = vec![format!("Here is how I would approach {topic}.")];
    let mut len = parts[0].len();
    while len < chars {
        let s = if rng.below(2) == 0 {
            format!("First, {}.", rng.pick(ACTIONS))
        } else {
            rng.pick(DETAILS).to_string()
        };
        len += s.len() + 1;
        parts.push(s);
    }
    if let Some((f, at)) = fact {
        let pos = ((parts.len() as f32 * at) as usize).clamp(1, parts.len());
        parts.insert(pos, f.to_string());
    }
    parts.join(" ")
}

/// Turns and questions of each user in the bench's and the eval's corpus.
pub const TURNS: usize = 500;
pub const QUESTIONS: usize = 30;

/// `users` conversations of `turns` turns each (half user, half
/// assistant), with `questions` questions each.
pub fn conversations(seed: u64, users: usize, turns: usize, questions: usize) -> Vec<Conversation> {
    let mut rng = Rng::new(seed);
    (0..users)
        .map(|u| conversation(&mut rng, u, turns, questions))
        .collect()
}

fn conversation(rng: &mut Rng, user: usize, turns: usize, questions: usize) -> Conversation {
    let pairs = (turns / 2).max(1);
    // Which pair carries which question's fact, and where in it.
    let mut planted: Vec<Option<(usize, Place)>> = vec![None; pairs];
    let mut qs = Vec::new();
    for i in 0..questions.min(pairs) {
        let mut p = rng.below(pairs);
        while planted[p].is_some() {
            p = (p + 1) % pairs;
        }
        let place = match i % 3 {
            0 => Place::UserTurn,
            1 => Place::AssistantEarly,
            _ => Place::AssistantLate,
        };
        planted[p] = Some((i, place));
    }
    let mut facts = Vec::new();
    for i in 0..questions.min(pairs) {
        facts.push(fact(rng, user, i));
    }
    let per_session = 20;
    let mut sessions = Vec::new();
    for (s, chunk) in planted.chunks(per_session).enumerate() {
        let mut session_turns = Vec::new();
        for (k, plant) in chunk.iter().enumerate() {
            let topic = rng.pick(TOPICS);
            let mut ask = rng.pick(ASKS).replace("{topic}", topic);
            let chars = 1000 + rng.below(2000);
            let text = match plant {
                Some((i, Place::UserTurn)) => {
                    ask = format!("{ask} For context: {}", facts[*i].0);
                    reply(rng, topic, chars, None)
                }
                Some((i, Place::AssistantEarly)) => {
                    reply(rng, topic, chars, Some((&facts[*i].0, 0.1)))
                }
                Some((i, Place::AssistantLate)) => {
                    reply(rng, topic, chars.max(2000), Some((&facts[*i].0, 0.85)))
                }
                None => reply(rng, topic, chars, None),
            };
            let (uid, aid) = (format!("S{s}:{}", 2 * k + 1), format!("S{s}:{}", 2 * k + 2));
            if let Some((i, place)) = plant {
                let evidence = match place {
                    Place::UserTurn => uid.clone(),
                    _ => aid.clone(),
                };
                qs.push((
                    *i,
                    Question {
                        question: facts[*i].1.clone(),
                        answer: Some(facts[*i].2.clone()),
                        evidence: vec![evidence],
                        category: Some(place.name().into()),
                        category_name: Some(place.name().into()),
                        date: None,
                    },
                ));
            }
            session_turns.push(Turn {
                id: uid,
                speaker: "user".into(),
                text: ask,
                timestamp: None,
            });
            session_turns.push(Turn {
                id: aid,
                speaker: "assistant".into(),
                text,
                timestamp: None,
            });
        }
        sessions.push(Session {
            id: format!("S{s}"),
            date: Some(format!(
                "2025-{:02}-{:02}T10:00:00Z",
                1 + s % 12,
                1 + s % 28
            )),
            turns: session_turns,
        });
    }
    qs.sort_by_key(|q| q.0);
    Conversation {
        id: format!("long-{user}"),
        sessions,
        questions: qs.into_iter().map(|q| q.1).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_and_evidence() {
        let convs = conversations(7, 2, 500, 30);
        assert_eq!(convs.len(), 2);
        for c in &convs {
            let turns: Vec<&Turn> = c.sessions.iter().flat_map(|s| &s.turns).collect();
            assert_eq!(turns.len(), 500);
            let replies: Vec<usize> = turns
                .iter()
                .filter(|t| t.speaker == "assistant")
                .map(|t| t.text.len())
                .collect();
            assert!(
                replies.iter().all(|&n| (1000..3500).contains(&n)),
                "{replies:?}"
            );
            assert_eq!(c.questions.len(), 30);
            for q in &c.questions {
                let t = turns
                    .iter()
                    .find(|t| t.id == q.evidence[0])
                    .expect("evidence turn exists");
                let answer = q.answer.as_deref().unwrap_or_default();
                assert!(t.text.contains(answer), "{answer} in {}", t.id);
                if q.category.as_deref() == Some("assistant-late") {
                    // Past the first 256 tokens (~4 characters each).
                    let at = t.text.find(answer).unwrap_or(0);
                    assert!(at > 1100, "late fact at {at}");
                }
            }
        }
        // Deterministic.
        let again = conversations(7, 2, 500, 30);
        assert_eq!(
            again[1].sessions[3].turns[5].text,
            convs[1].sessions[3].turns[5].text
        );
    }
}
