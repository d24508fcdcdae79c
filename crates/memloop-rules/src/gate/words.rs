//! The word lists the gate's rules read.

#[rustfmt::skip]
pub(super) const SUBJECTS: &[&str] = &[
    "i", "i'm", "im", "i've", "ive", "i'd", "i'll", "we", "we're", "we've", "we'd", "we'll",
];
pub(super) const POSSESSIVES: &[&str] = &["my", "our", "mine", "ours"];
/// What follows "my"/"our" in a set phrase, not a thing of the speaker's
/// ("my pleasure", "our loved ones", "my dreams").
#[rustfmt::skip]
pub(super) const SET_POSSESSIONS: &[&str] = &[
    "", "pleasure", "bad", "goodness", "god", "gosh", "condolences", "apologies", "heart",
    "thoughts", "word", "friend", "dear", "opinion", "dreams", "loved", "best", "part", "lives",
    "hearts", "back", "corner", "day", "way",
];
#[rustfmt::skip]
pub(super) const SECOND_PERSON: &[&str] = &[
    "you", "your", "you're", "youre", "yours", "you've", "you'd", "you'll", "yourself", "ya",
    "u", "ur", "y'all",
];
/// Words skipped between a subject and its verb ("I really love", "I just moved").
#[rustfmt::skip]
pub(super) const ADVERBS: &[&str] = &[
    "so", "really", "totally", "just", "truly", "also", "too", "absolutely", "definitely",
    "completely", "still", "always", "genuinely", "seriously", "honestly", "kinda",
    "actually", "finally", "recently", "already", "even", "never", "usually", "often",
    "sometimes", "now", "mostly", "pretty", "very", "sure", "super",
];
/// Copulas and fillers between a subject and what it is ("I was so glad", "I'm a big fan").
#[rustfmt::skip]
pub(super) const COPULAS: &[&str] = &[
    "am", "are", "was", "were", "a", "an", "big", "huge", "such", "total", "real", "been",
];
/// Modal verbs: "I can help" offers, "we should" suggests; neither reports.
#[rustfmt::skip]
pub(super) const MODALS: &[&str] = &[
    "can", "could", "should", "would", "might", "may", "must", "shall", "will", "gotta",
];
/// Words that open a sentence without saying anything ("Wow, ...", "Oh yeah, ...").
#[rustfmt::skip]
pub(super) const INTERJECTIONS: &[&str] = &[
    "oh", "wow", "hey", "hi", "hello", "yeah", "yes", "yep", "yup", "yea", "well", "so", "ok",
    "okay", "ah", "aw", "aww", "awww", "haha", "hahaha", "lol", "hmm", "um", "uh", "oops",
    "whoa", "woah", "omg", "gosh", "cool", "nice", "great", "awesome", "sure", "right", "true",
    "and", "but", "anyway", "anyways", "btw", "plus", "also", "thanks", "yay", "woohoo", "no",
    "nope", "nah",
];
#[rustfmt::skip]
pub(super) const GREETINGS: &[&str] = &[
    "hi", "hello", "hey", "heya", "hiya", "yo", "morning", "evening", "afternoon", "bye",
    "goodbye", "goodnight", "cya", "howdy", "greetings", "welcome",
];
#[rustfmt::skip]
pub(super) const THANKS: &[&str] = &["thanks", "thank", "thx", "ty", "cheers", "appreciate", "appreciated"];
#[rustfmt::skip]
pub(super) const ACKNOWLEDGEMENTS: &[&str] = &[
    "ok", "okay", "k", "kk", "sure", "yes", "yeah", "yep", "yup", "yea", "no", "nope", "nah",
    "right", "alright", "cool", "nice", "great", "awesome", "wow", "oh", "ah", "aw", "aww",
    "haha", "lol", "hmm", "indeed", "exactly", "definitely", "absolutely", "totally", "true",
    "agreed", "perfect", "done", "noted", "understood", "fine", "good", "got", "it", "makes",
    "sense", "sounds", "of", "course", "will", "do", "np", "problem", "worries", "fair",
    "enough", "i", "see", "amazing", "wonderful", "fantastic", "lovely", "sweet", "neat",
    "same", "me", "too", "agree", "so", "very", "really", "that's", "thats", "that", "is",
];
/// Openers of a wish or an encouragement: never news ("Have a great weekend!").
#[rustfmt::skip]
pub(super) const WISHES: &[&str] = &[
    "have", "enjoy", "good", "congrats", "congratulations", "happy", "best", "cheers", "take",
    "keep", "stay", "hope", "wishing", "sending", "fingers", "way",
];
/// A word after "I"/"I'm"/"we" that makes the clause a reaction, not a fact
/// ("I hope", "I'm here for you", "I bet").
#[rustfmt::skip]
pub(super) const PHATIC_VERBS: &[&str] = &[
    "hope", "bet", "agree", "guess", "mean", "appreciate", "admire", "wish", "suppose",
    "reckon", "imagine", "hear", "here", "rooting", "with", "impressed", "inspired", "amazed",
    "curious", "all", "touched", "honored", "honoured", "flattered", "speechless", "blown",
    "jealous", "fine", "good", "okay", "ok", "well", "great", "wondering", "must", "gotta",
    "totally", "agreed", "there", "around", "available",
];
/// Feelings that, alone or about the other's news, are reactions ("I'm so
/// happy for you") but with an action are news ("I'm stoked to start ...").
#[rustfmt::skip]
pub(super) const FEELINGS: &[&str] = &[
    "glad", "happy", "excited", "stoked", "thrilled", "proud", "grateful", "thankful", "sad",
    "sorry", "relieved", "delighted", "pumped", "psyched", "eager", "lucky", "blessed",
];
/// Objects after "I love"/"I like" that make it a reaction to what the other said.
#[rustfmt::skip]
pub(super) const REACTION_OBJECTS: &[&str] = &[
    "that", "this", "it", "how", "your", "you", "seeing", "hearing", "these", "those", "the",
    "when", "what", "them",
];
#[rustfmt::skip]
pub(super) const PREFERENCE_VERBS: &[&str] = &[
    "love", "loved", "like", "liked", "hate", "hated", "prefer", "enjoy", "enjoyed", "adore",
    "dislike", "detest", "loathe", "into", "allergic", "passionate", "obsessed", "fan",
    "addicted", "vegan", "vegetarian",
];
pub(super) const DECISION_WORDS: &[&str] =
    &["decided", "chose", "chosen", "picked", "opted", "settled"];
#[rustfmt::skip]
pub(super) const PLAN_WORDS: &[&str] = &[
    "will", "going", "gonna", "planning", "plan", "plans", "intend", "intending", "hoping",
    "aiming", "about", "want", "wanna", "thinking", "considering", "looking", "scheduled",
    "booked",
];
/// Times ahead: with them a sentence is a plan even without "I".
pub(super) const FUTURE_TIMES: &[&str] = &["tomorrow", "tonight", "soon", "upcoming", "next"];
#[rustfmt::skip]
pub(super) const TIME_WORDS: &[&str] = &[
    "yesterday", "today", "tonight", "tomorrow", "ago", "last", "next", "weekend", "monday",
    "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "mon", "tues", "wed",
    "thurs", "fri", "january", "february", "april", "june", "july", "august", "september",
    "october", "november", "december", "jan", "feb", "apr", "aug", "sept", "oct", "nov", "dec",
    "birthday", "anniversary", "christmas", "summer", "winter", "autumn",
];
/// Months that are also everyday words count only when capitalised.
pub(super) const AMBIGUOUS_MONTHS: &[&str] = &["march", "may"];
#[rustfmt::skip]
pub(super) const NUMBER_WORDS: &[&str] = &[
    "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
    "twenty", "thirty", "forty", "fifty", "hundred", "thousand", "million", "twice",
];
/// Sentence openers that report what the speaker did, with "I" left out
/// ("Been busy repainting", "Just started yoga", "Still working on it").
#[rustfmt::skip]
pub(super) const DROPPED_SUBJECT_OPENERS: &[&str] = &[
    "been", "got", "went", "had", "started", "finished", "bought", "visited", "tried", "took",
    "made", "found", "met", "spent", "moved", "joined", "signed", "landed", "won", "lost",
    "adopted", "working", "trying", "planning", "hoping", "learning", "heading", "gonna",
    "going", "saw", "did", "ran", "wrote", "built", "painted", "decided", "loved", "enjoyed",
    "luckily", "sadly", "unfortunately", "currently", "appreciate", "admire", "miss",
];
#[rustfmt::skip]
pub(super) const IRREGULAR_PAST: &[&str] = &[
    "was", "were", "had", "went", "got", "made", "took", "saw", "met", "found", "bought",
    "gave", "came", "left", "told", "said", "began", "became", "won", "lost", "ran", "wrote",
    "ate", "drove", "flew", "felt", "kept", "spent", "sold", "built", "taught", "caught",
    "brought", "thought", "heard", "held", "sat", "stood", "knew", "grew", "drew", "wore",
    "chose", "broke", "fell", "paid", "sent", "did", "sang", "swam", "threw", "hid", "led",
    "slept", "woke", "rode",
];
/// Words ending in -ed that are usually adjectives of feeling, not events.
#[rustfmt::skip]
pub(super) const ED_ADJECTIVES: &[&str] = &[
    "excited", "interested", "inspired", "motivated", "amazed", "impressed", "thrilled",
    "pleased", "surprised", "stressed", "blessed", "determined", "focused", "dedicated",
    "talented", "committed", "tired", "relaxed", "bored", "scared", "worried", "overwhelmed",
    "touched", "needed", "related", "based", "supposed", "used", "wicked", "beloved", "sacred",
    "naked", "hundred", "kindred", "rugged", "advanced", "detailed", "gifted", "skilled",
    "balanced", "united", "limited", "pumped", "stoked", "obsessed", "ashamed", "annoyed",
    "confused", "frustrated", "disappointed", "encouraged", "empowered", "appreciated",
    "wanted", "involved", "organized", "organised", "prepared", "fired",
];
/// -ing words that are not an activity the speaker is doing.
#[rustfmt::skip]
pub(super) const NOT_GERUNDS: &[&str] = &[
    "amazing", "interesting", "nothing", "something", "anything", "everything", "morning",
    "evening", "during", "exciting", "inspiring", "relaxing", "boring", "being", "sounding",
    "looking", "loving", "wishing", "hoping", "keeping", "sending", "rooting", "feeling",
    "missing", "hearing", "seeing", "knowing", "having", "making", "saying", "speaking",
    "talking", "cheering", "thinking", "darling", "outstanding", "charming", "stunning",
    "touching", "refreshing", "encouraging", "heartwarming", "uplifting", "fascinating",
    "challenging", "rewarding", "satisfying", "appealing", "pleasing",
];
/// Openers of a reaction to what the other said ("That was awesome!").
#[rustfmt::skip]
pub(super) const REACTION_OPENERS: &[&str] = &[
    "that", "this", "it", "that's", "thats", "it's", "its", "sounds", "looks", "seems", "what",
    "how", "such", "so", "glad",
];
/// Verbs of seeming, which after a reaction opener describe the other's news ("It looked great").
pub(super) const SEEMING: &[&str] = &["was", "were", "looked", "sounded", "seemed", "made"];
#[rustfmt::skip]
pub(super) const WE: &[&str] = &["we", "we're", "we've", "we'd", "we'll"];
/// After "I see"/"I know": the other's point, not a thing ("I see what you mean").
#[rustfmt::skip]
pub(super) const KNOWN_OBJECTS: &[&str] = &[
    "", "what", "how", "that", "it", "right", "why", "exactly", "the", "when", "i", "it's",
    "what's", "where",
];
#[rustfmt::skip]
pub(super) const DOING_WELL: &[&str] = &[
    "well", "good", "great", "fine", "ok", "okay", "alright", "awesome", "amazing", "better",
    "pretty", "so",
];
/// "keep going", "keep it up", "keep pushing".
#[rustfmt::skip]
pub(super) const KEEP_GOING: &[&str] = &[
    "that", "it", "you", "ya", "going", "pushing", "trying", "on", "up", "at", "moving",
    "chasing", "working", "fighting", "dreaming", "believing", "doing", "in",
];
#[rustfmt::skip]
pub(super) const STAY_WHAT: &[&str] = &[
    "positive", "strong", "motivated", "focused", "determined", "tuned", "safe",
];
/// Verbs of learning about the other's news: "can't wait to see it", "love to hear more".
#[rustfmt::skip]
pub(super) const LEARN_VERBS: &[&str] = &[
    "see", "hear", "know", "say", "thank", "check", "meet", "chat", "talk", "catch",
    "celebrate", "share", "let", "wish", "read", "miss", "cry",
];
/// Words before "I" that make a question ask rather than state ("How do I ...?").
#[rustfmt::skip]
pub(super) const QUESTION_WORDS: &[&str] = &[
    "do", "can", "should", "could", "would", "will", "am", "shall", "may", "did", "if", "where",
    "how", "what",
];
pub(super) const TALKED: &[&str] = &["talked", "spoke", "chatted", "caught", "met"];
/// After a leading "No,": the right version follows ("No, it's the blue one").
#[rustfmt::skip]
pub(super) const RESTATED: &[&str] = &[
    "it's", "its", "it", "i", "i'm", "my", "we", "the", "that's", "actually", "not",
];
#[rustfmt::skip]
pub(super) const THIRD_PERSON_LIKES: &[&str] = &["loves", "likes", "hates", "prefers", "enjoys", "adores"];
/// Words before "'s" that do not name a thing ("it's", "that's", "let's").
#[rustfmt::skip]
pub(super) const NOT_THINGS: &[&str] = &[
    "it", "that", "what", "there", "here", "he", "she", "let", "who", "how",
];
