//! A deterministic synthetic corpus of chat-like memories for benchmarks:
//! the same seed gives the same texts on every machine.

pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// splitmix64
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    pub fn unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }

    pub fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

const PEOPLE: &[&str] = &[
    "my sister",
    "my boss",
    "Emma",
    "my neighbour",
    "Dad",
    "my best friend",
    "Carlos",
    "the kids",
    "Priya",
    "my landlord",
];
const PLACES: &[&str] = &[
    "Berlin",
    "Lisbon",
    "the office",
    "the gym",
    "Tokyo",
    "the lake house",
    "Chicago",
    "the farmers market",
    "the dentist",
    "the library",
];
const THINGS: &[&str] = &[
    "sourdough bread",
    "a vintage camera",
    "the quarterly report",
    "vegan lasagna",
    "a new laptop",
    "trail running shoes",
    "a sci-fi novel",
    "the garden fence",
    "jazz records",
    "a sushi dinner",
];
const TIMES: &[&str] = &[
    "last weekend",
    "yesterday",
    "next Tuesday",
    "in March",
    "this morning",
    "every Friday",
    "two weeks ago",
    "tonight",
    "over the holidays",
    "after work",
];
const FEELINGS: &[&str] = &[
    "really enjoyed",
    "can't stand",
    "am excited about",
    "keep forgetting",
    "finally finished",
    "want to try",
    "had trouble with",
    "love",
];
const TEMPLATES: &[&str] = &[
    "I went to {place} with {person} {time}.",
    "{person} recommended {thing} and I {feeling} it.",
    "Remind me to call {person} about {thing} {time}.",
    "I {feeling} {thing}, especially {time}.",
    "We are planning a trip to {place} {time} with {person}.",
    "My favourite thing about {place} is {thing}.",
    "{person} moved to {place} {time}.",
    "I bought {thing} for {person} {time}.",
    "Can you help me plan what to do at {place} {time}?",
    "I told {person} that I {feeling} {thing}.",
];

/// The i-th text of the corpus with this seed.
pub fn sentence(rng: &mut Rng) -> String {
    let t = rng.pick(TEMPLATES);
    t.replace("{person}", rng.pick(PEOPLE))
        .replace("{place}", rng.pick(PLACES))
        .replace("{thing}", rng.pick(THINGS))
        .replace("{time}", rng.pick(TIMES))
        .replace("{feeling}", rng.pick(FEELINGS))
}

pub fn sentences(seed: u64, n: usize) -> Vec<String> {
    let mut rng = Rng::new(seed);
    (0..n).map(|_| sentence(&mut rng)).collect()
}

/// Random but clustered unit vectors: mixtures of two real embeddings from
/// `pool` plus a little noise, so neighbourhoods look like real text's.
pub fn mixed_vector(rng: &mut Rng, pool: &[Vec<f32>]) -> Vec<f32> {
    let (a, b) = (&pool[rng.below(pool.len())], &pool[rng.below(pool.len())]);
    let w = 0.5 + 0.5 * rng.unit();
    let mut v: Vec<f32> = a
        .iter()
        .zip(b)
        .map(|(x, y)| w * x + (1.0 - w) * y + 0.02 * (rng.unit() - 0.5))
        .collect();
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter_mut().for_each(|x| *x /= n);
    v
}
