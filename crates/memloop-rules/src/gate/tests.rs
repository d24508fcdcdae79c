use super::*;

fn judge(text: &str) -> GateDecision {
    heuristic(text, "user", &GateConfig::default())
}

fn kept(text: &str) -> bool {
    judge(text).persist
}

#[test]
fn keeps_preferences_with_the_marker_in_the_reason() {
    let d = judge("I love spicy Thai food.");
    assert!(d.persist);
    assert_eq!(d.reason, "preference (\"I love\")");
    assert_eq!(
        judge("My favourite band is Radiohead").reason,
        "preference (\"my favourite\")"
    );
    assert!(judge("I really can't stand cilantro")
        .reason
        .starts_with("preference"));
    assert!(kept("I prefer window seats on long flights"));
    assert!(kept("we hate crowded beaches"));
}

#[test]
fn keeps_facts_about_the_speaker_and_their_world() {
    for t in [
        "I adopted a greyhound named Pixel last week.",
        "My sister lives in Lisbon with her two kids.",
        "We bought a house near the lake",
        "I work as a nurse at St Mary's.",
        "I'm allergic to peanuts",
        "Our daughter starts school in September",
        "Been busy repainting the kitchen and training for a 10k.",
        "Just started taking cello lessons, it's hard.",
        "The twins adored it! They built a sandcastle.",
        "It was Nina Simone, she is my all-time idol!",
        "Can't wait for tomorrow's book launch!",
    ] {
        assert!(kept(t), "{t}: {:?}", judge(t));
    }
}

#[test]
fn keeps_plans_decisions_and_corrections() {
    assert_eq!(
        judge("I'm going to Japan in April").reason,
        "plan (\"going to\")"
    );
    assert_eq!(
        judge("I'll start the new job on Monday").reason,
        "plan (\"I'll\")"
    );
    assert!(judge("We're planning a trip to Norway next summer")
        .reason
        .starts_with("plan"));
    assert_eq!(
        judge("I decided to quit my job").reason,
        "decision (\"decided\")"
    );
    assert!(judge("Actually, it's Tuesday, not Monday.")
        .reason
        .starts_with("correction"));
    assert!(judge("No, it's the blue one.")
        .reason
        .starts_with("correction"));
    assert!(judge("I don't eat meat anymore")
        .reason
        .starts_with("correction"));
    assert_eq!(
        judge("I moved to Berlin.").reason,
        "correction (\"I moved\")"
    );
}

#[test]
fn a_question_can_carry_a_fact() {
    assert!(kept("Did you know I adopted a dog?"));
    assert!(kept("Can you suggest a gift for my wife's 40th birthday?"));
    let d = judge("How are you doing today?");
    assert!(!d.persist);
    assert!(!kept("What do you think about that?"));
    assert!(!kept("How do I reverse a list in Python?"));
    assert!(!kept("Can you help me with this?"));
}

#[test]
fn skips_chit_chat_with_a_named_reason() {
    assert_eq!(judge("Hey Priya, how's it going?").reason, "greeting");
    assert_eq!(judge("Thanks so much, Priya!").reason, "thanks");
    assert_eq!(judge("ok").reason, "too short (1 word)");
    assert_eq!(judge("Sounds good!").reason, "too short (2 words)");
    assert_eq!(judge("Yeah, that is so true.").reason, "acknowledgement");
    assert!(judge("Wow, you're doing amazing! Keep it up!")
        .reason
        .starts_with("reaction to the other speaker"));
    for t in [
        "I'm so proud of you, keep going!",
        "I hope you have a great time.",
        "I love that! What inspired it?",
        "Wow, that's awesome!",
        "I'm here for you, always.",
        "That was amazing, Sam!",
    ] {
        assert!(!kept(t), "{t}: {:?}", judge(t));
    }
}

#[test]
fn short_turns_keep_only_first_person_facts() {
    assert!(kept("I'm vegan."));
    assert!(kept("Actually Tuesday"));
    assert!(!kept("Paris!"));
}

#[test]
fn feelings_are_reactions_unless_they_carry_news() {
    assert!(!kept("I'm so happy for you, Priya!"));
    assert!(!kept("I'm glad to hear that, it sounds lovely."));
    assert!(kept("I'm stoked to start at the bakery."));
    assert!(kept("Glad to be part of the choir this year."));
}

#[test]
fn perseverance_and_offers_are_not_plans() {
    for t in [
        "I'm gonna keep going, whatever comes my way, no matter what.",
        "I'll do my best, thanks!",
        "We'll get through this together.",
        "I won't give up.",
        "Glad I could help, let me know anytime.",
        "I can support you with that.",
        "Thanks, I definitely will!",
    ] {
        assert!(!kept(t), "{t}: {:?}", judge(t));
    }
    assert!(kept("I'm gonna make pizza with the kids on Sunday."));
}

#[test]
fn generic_we_is_not_a_fact_but_our_things_are() {
    assert!(!kept("Music shows us who we really are."));
    assert!(!kept("We can do it!"));
    assert!(!kept("What's been up since we talked?"));
    assert!(kept("We went sailing with my parents a few weeks ago."));
    assert!(kept("Our dog Max passed away."));
}

#[test]
fn things_and_people_of_the_speakers_world() {
    assert!(kept("My neighbours are great. Appreciate them so much."));
    assert!(!kept("Appreciate it, that means a lot."));
    assert!(kept("Hey Sam! The bakery's doing great!"));
    assert!(!kept("Hey Sam! It's going great!"));
    assert!(kept("Yeah, they've been rehearsing hard for the recital."));
    assert!(kept("Nope, never been to one of those."));
    assert!(kept("Pixel loves running on the beach at sunrise."));
}

#[test]
fn roles_other_than_the_user_are_skipped_unless_configured() {
    let d = heuristic("I love jazz", "assistant", &GateConfig::default());
    assert!(!d.persist);
    assert!(d.reason.starts_with("assistant turn"));
    let all = GateConfig {
        judged_roles: vec!["user".into(), "assistant".into()],
        ..GateConfig::default()
    };
    assert!(heuristic("I love jazz", "Assistant", &all).persist);
    assert!(heuristic("I love jazz", "USER", &GateConfig::default()).persist);
}

#[test]
fn never_panics_on_odd_input() {
    for t in [
        "",
        " ",
        "\n\n",
        "?",
        "...",
        "!!!?",
        "’",
        "'",
        "—",
        "- - -",
        "I",
        "my",
        "I'm",
        "😀😀 I ❤ 東京",
        "Ich wohne in Zürich — ça va?",
        "İ̇stanbul’da yaşıyorum.",
        "e.g. 3.5 km",
        "I.",
        "'I'",
        "\u{0}\u{200b}",
        "a\u{2019}",
        "no",
        "No,",
        "next",
        "I'll",
        "going to",
        "my favourite",
        "I love",
    ] {
        let d = judge(t);
        assert!(!d.reason.is_empty(), "{t:?}");
    }
    let long = "I love tea and ".repeat(5000);
    assert!(judge(&long).persist);
    assert_eq!(judge("").reason, "empty");
    assert!(!heuristic("hello", "", &GateConfig::default()).persist);
}

#[test]
fn decisions_round_trip_through_json() {
    let d = judge("I love jazz");
    let s = serde_json::to_string(&d).unwrap();
    assert_eq!(serde_json::from_str::<GateDecision>(&s).unwrap(), d);
    let c: GateConfig = serde_json::from_str("{\"min_words\": 2}").unwrap();
    assert_eq!(c.judged_roles, GateConfig::default().judged_roles);
}

#[test]
fn llm_prompt_names_the_answer_format_and_holds_the_turn() {
    let p = llm_tag_prompt("I adopted a dog \"\"\" named Rex");
    assert!(p.contains("YES or NO"));
    assert!(p.contains("I adopted a dog"));
    assert_eq!(
        p.matches("\"\"\"").count(),
        2,
        "the turn cannot close the quote"
    );
}

#[test]
fn llm_replies_are_read_tolerantly() {
    assert_eq!(parse_llm_tag("YES"), Some(true));
    assert_eq!(parse_llm_tag("yes."), Some(true));
    assert_eq!(
        parse_llm_tag("  **Yes** - it states a preference"),
        Some(true)
    );
    assert_eq!(parse_llm_tag("No — it is a greeting"), Some(false));
    assert_eq!(parse_llm_tag("no"), Some(false));
    assert_eq!(parse_llm_tag("Answer: NO"), Some(false));
    assert_eq!(parse_llm_tag("\"YES\""), Some(true));
    assert_eq!(parse_llm_tag("Nope"), None);
    assert_eq!(parse_llm_tag("Maybe"), None);
    assert_eq!(parse_llm_tag(""), None);
    assert_eq!(parse_llm_tag("I think the answer is yes"), None);
    assert_eq!(parse_llm_tag("Yesterday"), None);
}

#[test]
fn a_closing_formula_with_a_time_word_is_not_an_event() {
    for t in ["Thanks, that's all for today!", "Bye, 2 cool!"] {
        assert!(!kept(t), "{t}: {:?}", judge(t));
    }
    assert!(kept("Thanks! I ran my first 10k yesterday."));
}
