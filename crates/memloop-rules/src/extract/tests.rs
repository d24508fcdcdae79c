//! Extraction cases: what each sentence must (and must not) yield.

use super::*;
use memloop_core::Kind;

/// Sunday 2026-11-15 12:00 UTC.
const AT: i64 = 1_794_744_000_000;

fn facts(text: &str) -> Vec<Fact> {
    extract_rules(text, "user", AT)
}

fn texts(text: &str) -> Vec<String> {
    facts(text).into_iter().map(|f| f.text).collect()
}

/// The one fact of `text`, or a failure that shows what came out.
fn one(text: &str) -> Fact {
    let mut f = facts(text);
    assert_eq!(f.len(), 1, "{text:?} gave {f:#?}");
    f.remove(0)
}

fn slot(f: &Fact) -> (String, Option<&str>, Option<&str>, Polarity) {
    (
        f.subject.clone(),
        f.attribute.as_deref(),
        f.value.as_deref(),
        f.polarity,
    )
}

fn is(text: &str, attribute: &str, value: &str, polarity: Polarity, expected_text: &str) {
    let f = one(text);
    assert_eq!(
        slot(&f),
        ("user".to_string(), Some(attribute), Some(value), polarity),
        "{text:?}"
    );
    assert_eq!(f.text, expected_text, "{text:?}");
}

fn none(text: &str) {
    let f = facts(text);
    assert!(f.is_empty(), "{text:?} should give no facts, gave {f:#?}");
}

fn date(ms: Option<i64>) -> Option<String> {
    ms.and_then(chrono::DateTime::from_timestamp_millis)
        .map(|t| t.date_naive().to_string())
}

use Polarity::{Asserted, Negated, Retracted};

#[test]
fn moving_resolves_last_month() {
    let f = one("I moved to Berlin last month");
    assert_eq!(f.text, "User lives in Berlin (since October 2026)");
    assert_eq!(
        slot(&f),
        ("user".into(), Some("lives_in"), Some("Berlin"), Asserted)
    );
    assert_eq!(date(f.time), Some("2026-10-01".into()));
    assert!(!f.multi);
    assert_eq!(f.entities, ["Berlin"]);
    assert_eq!(f.kind, Kind::Fact);
    assert!(f.importance >= 0.7 && f.confidence > 0.5);
    let f = one("Last month, I moved to Berlin.");
    assert_eq!(date(f.time), Some("2026-10-01".into()));
    assert_eq!(f.value.as_deref(), Some("Berlin"));
}

#[test]
fn living_and_moving() {
    is(
        "I live in Paris",
        "lives_in",
        "Paris",
        Asserted,
        "User lives in Paris",
    );
    is(
        "i live in paris",
        "lives_in",
        "paris",
        Asserted,
        "User lives in paris",
    );
    is(
        "I live in Paris, France",
        "lives_in",
        "Paris, France",
        Asserted,
        "User lives in Paris, France",
    );
    is(
        "We moved from London to New York in 2019",
        "lives_in",
        "New York",
        Asserted,
        "User lives in New York (since 2019)",
    );
    is(
        "I've been living in Lisbon for two years",
        "lives_in",
        "Lisbon",
        Asserted,
        "User lives in Lisbon",
    );
    is(
        "I moved out of Paris",
        "lives_in",
        "Paris",
        Negated,
        "User no longer lives in Paris",
    );
    is(
        "I used to live in Rome",
        "previously_lived_in",
        "Rome",
        Asserted,
        "User used to live in Rome",
    );
    is(
        "I'm moving to Tokyo next month",
        "moving_to",
        "Tokyo",
        Asserted,
        "User is moving to Tokyo in December 2026",
    );
}

#[test]
fn work_and_jobs() {
    is(
        "I'm a teacher",
        "job",
        "teacher",
        Asserted,
        "User is a teacher",
    );
    is(
        "I am an engineer",
        "job",
        "engineer",
        Asserted,
        "User is an engineer",
    );
    is(
        "I work at Acme",
        "works_at",
        "Acme",
        Asserted,
        "User works at Acme",
    );
    is(
        "I work for Procter and Gamble",
        "works_at",
        "Procter and Gamble",
        Asserted,
        "User works for Procter and Gamble",
    );
    is("I'm retired", "job", "retired", Asserted, "User is retired");
    let f = facts("I work as a nurse at St Mary's");
    assert_eq!(
        f.iter().map(slot).collect::<Vec<_>>(),
        [
            ("user".into(), Some("job"), Some("nurse"), Asserted),
            ("user".into(), Some("works_at"), Some("St Mary's"), Asserted),
        ]
    );
    let f = one("I started a new job at Google last week");
    assert_eq!(
        f.text,
        "User works at Google (since the week of November 2, 2026)"
    );
    assert_eq!(date(f.time), Some("2026-11-02".into()));
    is(
        "I quit my job at Acme",
        "works_at",
        "Acme",
        Negated,
        "User no longer works at Acme",
    );
    is(
        "I stopped working at Google in March",
        "works_at",
        "Google",
        Negated,
        "User no longer works at Google (since March 2026)",
    );
    let f = one("I lost my job yesterday");
    assert_eq!(slot(&f), ("user".into(), Some("works_at"), None, Negated));
    assert_eq!(f.text, "User lost their job on November 14, 2026");
    is(
        "I'm no longer a teacher",
        "job",
        "teacher",
        Negated,
        "User is no longer a teacher",
    );
}

#[test]
fn preferences() {
    is("I like tea", "likes", "tea", Asserted, "User likes tea");
    is(
        "I really love hiking",
        "likes",
        "hiking",
        Asserted,
        "User loves hiking",
    );
    is(
        "I hate cilantro",
        "likes",
        "cilantro",
        Negated,
        "User hates cilantro",
    );
    is(
        "I can't stand jazz",
        "likes",
        "jazz",
        Negated,
        "User cannot stand jazz",
    );
    is(
        "I don't like horror movies anymore",
        "likes",
        "horror movies",
        Negated,
        "User no longer likes horror movies",
    );
    is(
        "I'm a big fan of the Beatles",
        "likes",
        "Beatles",
        Asserted,
        "User is a fan of the Beatles",
    );
    is(
        "I'm into jazz",
        "likes",
        "jazz",
        Asserted,
        "User is into jazz",
    );
    let f = facts("I like tea, coffee and cake");
    assert_eq!(
        f.iter()
            .map(|f| f.value.as_deref().unwrap_or(""))
            .collect::<Vec<_>>(),
        ["tea", "coffee", "cake"]
    );
    assert!(f.iter().all(|f| f.multi));
    let long_list = "I like tea, coffee, cake, jazz, chess, rain, cats, dogs, tennis and golf";
    assert_eq!(facts(long_list).len(), 10);
    is(
        "I like to cook",
        "likes",
        "to cook",
        Asserted,
        "User likes to cook",
    );
    none("I like it");
    none("I love you");
    none("I'd like a coffee");
    none("I liked that movie");
    none("I like your answer");
    none("I hate when that happens");
}

#[test]
fn my_x_is_y() {
    is(
        "My favorite color is blue",
        "favourite_color",
        "blue",
        Asserted,
        "User's favorite color is blue",
    );
    is(
        "My name is Tom",
        "name",
        "Tom",
        Asserted,
        "User's name is Tom",
    );
    is(
        "My name's Tom",
        "name",
        "Tom",
        Asserted,
        "User's name is Tom",
    );
    is(
        "My birthday is May 7",
        "birthday",
        "May 7",
        Asserted,
        "User's birthday is May 7",
    );
    is(
        "My exam is tomorrow",
        "exam",
        "on November 16, 2026",
        Asserted,
        "User's exam is on November 16, 2026",
    );
    let f = facts("My hobbies are chess, climbing and baking");
    assert_eq!(f.len(), 3);
    assert!(f
        .iter()
        .all(|f| f.multi && f.attribute.as_deref() == Some("hobbies")));
    assert_eq!(f[0].text, "User's hobbies include chess");
    none("My point is that it doesn't matter");
    none("My question is simple");
}

#[test]
fn people_and_pets_are_their_own_subjects() {
    let f = one("My sister lives in Rome");
    assert_eq!(
        slot(&f),
        (
            "user's sister".into(),
            Some("lives_in"),
            Some("Rome"),
            Asserted
        )
    );
    assert_eq!(f.text, "User's sister lives in Rome");
    let f = one("My dog's name is Rex");
    assert_eq!(
        slot(&f),
        ("user's dog".into(), Some("name"), Some("Rex"), Asserted)
    );
    assert_eq!(f.text, "User's dog's name is Rex");
    let f = one("My best friend is a nurse");
    assert_eq!(f.subject, "user's best friend");
    assert_eq!(f.text, "User's best friend is a nurse");
    assert_eq!(
        texts("My kids love the beach"),
        ["User's kids love the beach"]
    );
    assert_eq!(
        texts("My parents are retired"),
        ["User's parents are retired"]
    );
    assert_eq!(
        texts("My parents no longer live in Ohio"),
        ["User's parents no longer live in Ohio"]
    );
    let f = facts("My sister Anna works at Google");
    assert_eq!(f.len(), 2);
    assert_eq!(f[0].text, "User's sister's name is Anna");
    // Named, she is her own subject: another sister's job is not a change of hers.
    assert_eq!(f[1].text, "User's sister Anna works at Google");
    assert_eq!(f[1].subject, "user's sister anna");
    assert_eq!(f[1].entities, ["Anna", "Google"]);
    assert!(f[0].multi, "one sister's name does not replace another's");
}

#[test]
fn identity_and_states() {
    is("I'm 34", "age", "34", Asserted, "User is 34 years old");
    is(
        "I am 34 years old",
        "age",
        "34",
        Asserted,
        "User is 34 years old",
    );
    is(
        "I'm from Brazil",
        "origin",
        "Brazil",
        Asserted,
        "User is from Brazil",
    );
    is(
        "I'm vegetarian",
        "diet",
        "vegetarian",
        Asserted,
        "User is vegetarian",
    );
    is("I'm a vegan", "diet", "vegan", Asserted, "User is a vegan");
    is(
        "I'm Italian",
        "nationality",
        "Italian",
        Asserted,
        "User is Italian",
    );
    is(
        "I'm married",
        "relationship_status",
        "married",
        Asserted,
        "User is married",
    );
    is(
        "I'm lactose intolerant",
        "traits",
        "lactose intolerant",
        Asserted,
        "User is lactose intolerant",
    );
    let f = facts("I'm vegetarian and allergic to peanuts");
    assert_eq!(
        f.iter().map(|f| f.text.as_str()).collect::<Vec<_>>(),
        ["User is vegetarian", "User is allergic to peanuts"]
    );
    assert_eq!(texts("I'm a teacher and a mother of two").len(), 2);
    let f = facts("I'm allergic to peanuts and shellfish");
    assert_eq!(
        f.iter().map(slot).collect::<Vec<_>>(),
        [
            ("user".into(), Some("allergies"), Some("peanuts"), Asserted),
            (
                "user".into(),
                Some("allergies"),
                Some("shellfish"),
                Asserted
            ),
        ]
    );
    assert!(f.iter().all(|f| f.importance >= 0.9));
    is(
        "I have a peanut allergy",
        "allergies",
        "peanut",
        Asserted,
        "User is allergic to peanut",
    );
    let f = one("Hi, I'm Tom");
    assert_eq!(
        slot(&f),
        ("user".into(), Some("name"), Some("Tom"), Asserted)
    );
    assert!(f.confidence >= 0.8);
    let f = one("Call me Tom");
    assert_eq!(f.text, "User goes by Tom");
    let f = one("I was born in Lyon in 1990");
    assert_eq!(f.text, "User was born in Lyon in 1990");
    let f = one("I was born on May 7, 1990");
    assert_eq!(
        slot(&f),
        (
            "user".into(),
            Some("birth_date"),
            Some("May 7, 1990"),
            Asserted
        )
    );
    assert_eq!(f.text, "User was born on May 7, 1990");
    let f = one("I turned 30 last week");
    assert_eq!(slot(&f), ("user".into(), Some("age"), Some("30"), Asserted));
    assert_eq!(f.text, "User turned 30 in the week of November 2, 2026");
    none("I'm tired");
    none("I'm fine, thanks");
    none("I'm not sure");
    none("I am in Berlin right now");
    none("I'm a bit tired");
    none("I'm OK");
    is(
        "I'm a big believer in therapy",
        "identity",
        "big believer in therapy",
        Asserted,
        "User is a big believer in therapy",
    );
    none("I'm a fan");
}

#[test]
fn possessions_and_habits() {
    is(
        "I have a dog named Rex",
        "has",
        "dog named Rex",
        Asserted,
        "User has a dog named Rex",
    );
    let f = facts("I have a dog and a cat");
    assert_eq!(f.len(), 2);
    is(
        "I have two kids",
        "has",
        "two kids",
        Asserted,
        "User has two kids",
    );
    let f = one("We adopted a puppy last month");
    assert_eq!(f.text, "User has a puppy (adopted in October 2026)");
    is(
        "I don't have a car anymore",
        "has",
        "car",
        Negated,
        "User no longer has a car",
    );
    is(
        "I speak French",
        "speaks",
        "French",
        Asserted,
        "User speaks French",
    );
    is(
        "I don't eat meat anymore",
        "eats",
        "meat",
        Negated,
        "User no longer eats meat",
    );
    is(
        "I don't eat meat",
        "eats",
        "meat",
        Negated,
        "User does not eat meat",
    );
    let f = one("I don't smoke");
    assert_eq!(slot(&f), ("user".into(), Some("smokes"), None, Negated));
    assert_eq!(f.text, "User does not smoke");
    let f = one("I quit smoking");
    assert_eq!(slot(&f), ("user".into(), Some("smokes"), None, Negated));
    assert_eq!(f.text, "User no longer smokes");
}

#[test]
fn negations_and_retractions() {
    is(
        "I no longer live in Paris",
        "lives_in",
        "Paris",
        Negated,
        "User no longer lives in Paris",
    );
    is(
        "I don't live in Paris anymore",
        "lives_in",
        "Paris",
        Negated,
        "User no longer lives in Paris",
    );
    is(
        "Forget that I live in Paris",
        "lives_in",
        "Paris",
        Retracted,
        "Retracted: User lives in Paris",
    );
    let f = one("Please forget my address");
    assert_eq!(slot(&f), ("user".into(), Some("address"), None, Retracted));
    let f = one("Forget what I said about Paris");
    assert_eq!(slot(&f), ("user".into(), None, Some("Paris"), Retracted));
    none("Forget it");
    none("Never mind");
}

#[test]
fn instructions_are_procedures() {
    let f = one("Always answer in French");
    assert_eq!(f.kind, Kind::Procedure);
    assert_eq!(f.text, "User asks to always answer in French");
    assert_eq!(f.attribute.as_deref(), Some("instruction"));
    assert!(f.multi);
    let f = one("Please don't use emojis");
    assert_eq!(f.text, "User asks to never use emojis");
}

#[test]
fn greetings_and_small_talk_give_nothing() {
    for text in [
        "Hi!",
        "Hello there, how are you?",
        "Good morning",
        "Thanks a lot!",
        "ok",
        "lol",
        "That sounds great",
        "You are very helpful",
        "It is raining today",
    ] {
        none(text);
    }
}

#[test]
fn questions_give_nothing_unless_they_state_a_fact() {
    none("Do you know where I live?");
    none("What's my name?");
    none("Am I allergic to peanuts?");
    none("Should I move to Berlin?");
    none("Can you recommend a restaurant in Paris?");
    let f = one("I live in Paris, can you recommend a restaurant?");
    assert_eq!(f.value.as_deref(), Some("Paris"));
    let f = one("I moved to Berlin last month, any tips?");
    assert_eq!(f.text, "User lives in Berlin (since October 2026)");
    let f = one("Did you know that I moved to Berlin?");
    assert_eq!(f.value.as_deref(), Some("Berlin"));
}

#[test]
fn hypotheticals_modals_and_others_give_nothing() {
    none("If I move to Berlin, I will need a flat");
    none("I want to move to Berlin");
    none("I might be allergic to cats");
    none("I should learn French");
    none("Maybe I live in Paris");
    none("You said I live in Paris");
    none("Anna lives in Rome");
    none("My friend said that");
    none("I work at night");
    none("I live on my own");
    none("I live for the weekends");
    none("I have to work at 5");
    none("I have an idea");
    none("My job is stressful");
    none("I'm going to bed");
    let f = texts("I live in Paris. My sister lives there too.");
    assert_eq!(f, ["User lives in Paris"]);
}

#[test]
fn a_home_is_not_a_city() {
    is(
        "I live in a house",
        "home",
        "house",
        Asserted,
        "User lives in a house",
    );
    is(
        "I live on Main Street",
        "lives_in",
        "Main Street",
        Asserted,
        "User lives on Main Street",
    );
    is(
        "I live in the US",
        "lives_in",
        "US",
        Asserted,
        "User lives in the US",
    );
}

#[test]
fn several_clauses_and_sentences() {
    let t = texts("Hi! I'm a teacher and I live in Paris. My sister lives in Rome.");
    assert_eq!(
        t,
        [
            "User is a teacher",
            "User lives in Paris",
            "User's sister lives in Rome"
        ]
    );
    let t = texts("I live in Paris but last month I moved to Berlin");
    assert_eq!(
        t,
        [
            "User lives in Paris",
            "User lives in Berlin (since October 2026)"
        ]
    );
    // The same fact twice in a turn is one fact.
    assert_eq!(texts("I like tea. I like tea!").len(), 1);
}

#[test]
fn named_speakers() {
    let f = extract_rules("I moved to Berlin last month", "Caroline", AT);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].subject, "caroline");
    assert_eq!(f[0].text, "Caroline lives in Berlin (since October 2026)");
    let f = extract_rules("My sister lives in Rome", "Caroline", AT);
    assert_eq!(f[0].subject, "caroline's sister");
    assert_eq!(f[0].text, "Caroline's sister lives in Rome");
    let f = extract_rules("I like my job", " ", AT);
    assert_eq!(f[0].text, "User likes their job");
}

#[test]
fn odd_input_never_panics() {
    for text in [
        "",
        " ",
        "\n\n",
        "?!.,;:",
        "I",
        "I'm",
        "my",
        "my is",
        "I am a",
        "I live in",
        "I moved to",
        "forget",
        "always",
        "İ live in İstanbul",
        "I live in Zürich 🇨🇭",
        "Ich wohne in Berlin",
        "私は東京に住んでいます",
        "I'm 999999999999999999999 years old",
        "I moved to Berlin 99999 years ago",
        "I was born on Feb 30, 2023",
        "I like , , and , or",
        "my my my is is is",
        "' \" ( ) [ ] { }",
        "I'm\u{0}a\u{0}teacher",
    ] {
        let _ = facts(text);
        let _ = extract_rules(text, "user", i64::MIN);
        let _ = extract_rules(text, "user", i64::MAX);
    }
    let long = "I like tea and ".repeat(2000);
    assert_eq!(facts(&long).len(), 1);
    // Deeply chained input must not exhaust a (2 MiB test thread) stack.
    let _ = facts(&format!("I am {}", "a teacher and ".repeat(4000)));
    let _ = facts(&format!("I {}", "like tea and love ".repeat(4000)));
    let _ = facts(&format!("{}I live in Paris", "I think ".repeat(8000)));
    let _ = facts(&"forget that ".repeat(8000));
    let _ = facts(&"remember that ".repeat(8000));
    let _ = facts(&"my ".repeat(8000));
}

/// Words the rules react to, shuffled into sentences, reach deep rule paths
/// that arbitrary text rarely does.
const VOCAB: &[&str] = &[
    "I",
    "i'm",
    "my",
    "we",
    "am",
    "is",
    "are",
    "not",
    "no",
    "longer",
    "anymore",
    "a",
    "the",
    "and",
    ",",
    ".",
    "?",
    "live",
    "in",
    "moved",
    "to",
    "from",
    "work",
    "at",
    "as",
    "like",
    "hate",
    "have",
    "been",
    "got",
    "quit",
    "my",
    "job",
    "sister's",
    "name",
    "forget",
    "that",
    "always",
    "never",
    "please",
    "call",
    "me",
    "last",
    "month",
    "May",
    "7",
    "2023",
    "ago",
    "two",
    "weeks",
    "Paris",
    "Berlin",
    "teacher",
    "allergic",
    "vegetarian",
    "34",
    "born",
    "on",
    "Monday",
    "don't",
    "can't",
    "stand",
    "used",
    "started",
    "turned",
    "of",
    "fan",
    "favourite",
    "remember",
    "did",
    "you",
    "know",
    "if",
    "İ",
    "🇨🇭",
    "",
    "-",
    ":",
    "'s",
];

proptest::proptest! {
    #[test]
    fn any_text_is_safe(text in "\\PC{0,120}", at in proptest::num::i64::ANY) {
        let _ = extract_rules(&text, "user", at);
    }

    #[test]
    fn word_salad_is_safe(
        words in proptest::collection::vec(proptest::sample::select(VOCAB), 0..24),
        at in -10_000_000_000_000i64..10_000_000_000_000,
    ) {
        let text = words.join(" ");
        for f in extract_rules(&text, "Caroline", at) {
            proptest::prop_assert!(!f.text.is_empty());
            proptest::prop_assert!((0.0..=1.0).contains(&f.confidence));
            proptest::prop_assert!((0.0..=1.0).contains(&f.importance));
            let metadata = f.metadata();
            let c = Candidate::from_metadata("x", &f.text, 0.9, &metadata);
            let _ = reconcile(&f, &[c], &Thresholds::default());
        }
    }
}

#[test]
fn times_outside_the_calendar_are_dropped() {
    let f = extract_rules("I moved to Berlin last month", "user", i64::MAX);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].time, None);
    assert_eq!(f[0].text, "User lives in Berlin");
}

#[test]
fn facts_serialize_with_rfc3339_times() {
    let f = one("I moved to Berlin last month");
    let json = serde_json::to_value(&f).unwrap();
    assert_eq!(json["time"], "2026-10-01T00:00:00.000Z");
    assert_eq!(json["polarity"], "asserted");
    let back: Fact = serde_json::from_value(json).unwrap();
    assert_eq!(back, f);
    // An LLM may answer with a date only and leave fields out.
    let llm: Fact = serde_json::from_value(serde_json::json!({
        "text": "User lives in Berlin", "subject": "user", "attribute": "lives_in",
        "value": "Berlin", "time": "2026-10-01", "importance": 0.8, "confidence": 0.9
    }))
    .unwrap();
    assert_eq!(llm.time, f.time);
    assert_eq!(llm.polarity, Asserted);
    assert_eq!(
        f.metadata(),
        serde_json::json!({"fact": {"subject": "user", "attribute": "lives_in",
            "value": "Berlin", "multi": false, "polarity": "asserted"}})
    );
}

/// Pieces of time expressions, with numbers far past any calendar, so the
/// arithmetic of "N units ago" meets its overflow edges.
const TIME_PIECES: &[&str] = &[
    "ago",
    "in",
    "last",
    "next",
    "this",
    "the",
    "day",
    "days",
    "week",
    "weeks",
    "month",
    "months",
    "year",
    "years",
    "before",
    "after",
    "yesterday",
    "tomorrow",
    "on",
    "Monday",
    "May",
    "summer",
    "of",
    "3",
    "0",
    "-1",
    "12",
    "31",
    "2023",
    "2023-05-07",
    "9999",
    "99999999999",
    "18446744073709551615",
    "-9223372036854775808",
    "two",
    "a",
    "couple",
    "th",
    "3rd",
    ",",
    "between",
    "and",
    "since",
];

proptest::proptest! {
    #[test]
    fn time_expressions_never_panic(
        words in proptest::collection::vec(proptest::sample::select(TIME_PIECES), 0..12),
        at in proptest::num::i64::ANY,
    ) {
        let text = words.join(" ");
        if let Some(t) = resolve_relative_time(&text, at) {
            // Whatever is resolved must be a date chrono can print.
            let _ = format!("{t:?}");
        }
    }
}
