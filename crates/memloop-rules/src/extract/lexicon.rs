//! Word lists behind the offline rules. All entries are lower case; lookups
//! are linear scans over short lists, fast enough for a turn's few clauses.

pub(crate) fn is_in(list: &[&str], word: &str) -> bool {
    list.contains(&word)
}

/// Words that may stand before a clause's subject without changing what the
/// clause states ("Well, actually I live in Berlin", "and then I moved").
pub(crate) const FILLERS: &[&str] = &[
    "ah",
    "actually",
    "after",
    "also",
    "alright",
    "although",
    "and",
    "anyway",
    "anyways",
    "as",
    "basically",
    "because",
    "before",
    "btw",
    "but",
    "by",
    "cause",
    "cuz",
    "currently",
    "finally",
    "fortunately",
    "from",
    "fyi",
    "guess",
    "haha",
    "hello",
    "hey",
    "hi",
    "hiya",
    "hmm",
    "honestly",
    "indeed",
    "just",
    "lately",
    "lol",
    "luckily",
    "meanwhile",
    "no",
    "nah",
    "nope",
    "now",
    "oh",
    "ok",
    "okay",
    "on",
    "once",
    "or",
    "plus",
    "recently",
    "right",
    "sadly",
    "since",
    "so",
    "still",
    "sure",
    "the",
    "then",
    "though",
    "uh",
    "um",
    "unfortunately",
    "way",
    "well",
    "what",
    "when",
    "where",
    "whereas",
    "while",
    "wow",
    "yeah",
    "yep",
    "yes",
    "yup",
];

/// A clause opened by one of these is hypothetical: nothing it says is a fact.
pub(crate) const HYPOTHETICAL: &[&str] = &[
    "if",
    "unless",
    "whether",
    "suppose",
    "supposing",
    "imagine",
    "pretend",
    "hypothetically",
    "maybe",
    "perhaps",
];

pub(crate) const GREETINGS: &[&str] = &["hi", "hello", "hey", "hiya", "greetings", "howdy"];

/// Words after which a first-person "I" starts a new clause inside a sentence.
pub(crate) const CONJUNCTIONS: &[&str] = &[
    "and", "but", "so", "because", "cause", "cuz", "although", "though", "whereas", "while", "or",
    "then", "plus", "since",
];

/// Words that open a question clause ("…, where should I eat?").
pub(crate) const QUESTION_OPENERS: &[&str] = &[
    "where", "what", "how", "why", "when", "who", "which", "can", "could", "would", "should", "do",
    "does", "did", "is", "are", "any", "will", "shall",
];

/// Adverbs skipped between the subject and the verb ("I really like", "I now live").
pub(crate) const ADVERBS: &[&str] = &[
    "really",
    "also",
    "still",
    "just",
    "actually",
    "currently",
    "now",
    "recently",
    "finally",
    "totally",
    "absolutely",
    "definitely",
    "truly",
    "honestly",
    "already",
    "usually",
    "mostly",
    "generally",
    "officially",
    "basically",
    "literally",
    "kinda",
    "sorta",
    "genuinely",
    "even",
    "both",
    "all",
    "too",
];

/// Modal and intention words: "I would like", "I want to move", "I might" state no fact.
pub(crate) const MODALS: &[&str] = &[
    "would", "could", "should", "might", "may", "must", "can", "will", "shall", "want", "wanna",
    "wants", "need", "needs", "hope", "wish", "plan", "gonna", "try", "tried", "wonder",
    "wondered", "guess", "think", "thought", "feel", "felt", "said", "told", "asked", "ask",
];

/// Hedges before a first-person clause: "I think I'm allergic to peanuts".
pub(crate) const HEDGES: &[&str] = &["think", "guess", "believe", "suppose", "mean", "reckon"];

/// Words that end a value: "I live in Paris because …", "I work at Acme with …".
pub(crate) const VALUE_STOPS: &[&str] = &[
    "because",
    "cause",
    "cuz",
    "since",
    "but",
    "so",
    "which",
    "who",
    "whom",
    "whose",
    "where",
    "when",
    "while",
    "although",
    "though",
    "as",
    "with",
    "if",
    "unless",
    "until",
    "after",
    "before",
    "now",
    "anymore",
    "again",
    "too",
    "either",
    "currently",
    "nowadays",
    "lately",
    "recently",
    "lol",
    "haha",
    "btw",
    "instead",
    "then",
    "these",
    "right",
    "though",
    "anyway",
    "actually",
    "really",
    "already",
    "yet",
    "ever",
    "though",
    "thanks",
    "please",
];

/// First words of a value that make it a pronoun, not information ("I like it").
pub(crate) const PRONOUN_VALUES: &[&str] = &[
    "it",
    "that",
    "this",
    "these",
    "those",
    "you",
    "him",
    "her",
    "them",
    "what",
    "how",
    "when",
    "where",
    "why",
    "who",
    "which",
    "something",
    "anything",
    "everything",
    "nothing",
    "someone",
    "anyone",
    "everyone",
    "one",
    "so",
    "very",
    "too",
    "much",
    "lots",
    "your",
    "yours",
    "there",
    "here",
    "own",
    "home",
];

/// "I have a …" objects that are not possessions.
pub(crate) const NOT_POSSESSIONS: &[&str] = &[
    "question",
    "questions",
    "idea",
    "problem",
    "doubt",
    "feeling",
    "look",
    "minute",
    "moment",
    "second",
    "chance",
    "suggestion",
    "request",
    "issue",
    "favor",
    "favour",
    "lot",
    "bit",
    "headache",
    "cold",
    "fever",
    "time",
    "day",
    "way",
    "point",
    "thought",
    "sense",
    "clue",
    "concern",
    "query",
    "quick",
    "great",
    "good",
    "nice",
    "wonderful",
    "fun",
    "message",
    "call",
    "email",
    "text",
    "letter",
    "reply",
    "response",
    "answer",
    "notification",
    "few",
    "couple",
    "hard",
    "tough",
    "busy",
    "long",
    "hunch",
    "follow-up",
    "bad",
    "guess",
    "sec",
    "couple",
];

/// Capitalised words after "I'm" that are not names ("I'm OK").
pub(crate) const NOT_NAMES: &[&str] = &[
    "ok", "okay", "fine", "good", "great", "sorry", "here", "back", "done", "ready", "sure",
    "well", "new", "alright", "lost", "home", "so", "very", "not", "just", "really", "also",
    "still", "glad", "happy", "sad", "tired", "excited", "busy", "free", "in", "on", "at",
];

/// "I work at …" objects that are times or places of work, not employers.
pub(crate) const NOT_EMPLOYERS: &[&str] = &[
    "night", "nights", "home", "weekends", "weekend", "noon", "midnight", "least", "most", "all",
    "times", "the", "my", "night,", "dawn", "work", "it",
];

/// "my X is …" heads that introduce talk, not an attribute ("my point is …").
pub(crate) const NOT_ATTRIBUTES: &[&str] = &[
    "point",
    "guess",
    "question",
    "problem",
    "issue",
    "concern",
    "fault",
    "pleasure",
    "turn",
    "bad",
    "mind",
    "bet",
    "answer",
    "thought",
    "understanding",
    "worry",
    "day",
    "week",
    "morning",
    "evening",
    "night",
    "feeling",
    "impression",
    "take",
    "opinion",
    "apologies",
    "apology",
    "bad",
    "life",
    "god",
    "gosh",
    "goodness",
    "head",
];

/// Nouns after "my" that name a person or animal: a new subject.
pub(crate) const RELATIONS: &[&str] = &[
    "mom",
    "mum",
    "mother",
    "dad",
    "father",
    "parents",
    "sister",
    "brother",
    "sibling",
    "siblings",
    "wife",
    "husband",
    "partner",
    "spouse",
    "boyfriend",
    "girlfriend",
    "fiance",
    "fiancé",
    "fiancee",
    "fiancée",
    "son",
    "daughter",
    "kid",
    "kids",
    "child",
    "children",
    "baby",
    "friend",
    "boss",
    "manager",
    "colleague",
    "coworker",
    "co-worker",
    "roommate",
    "flatmate",
    "neighbor",
    "neighbour",
    "grandma",
    "grandmother",
    "grandpa",
    "grandfather",
    "aunt",
    "uncle",
    "cousin",
    "niece",
    "nephew",
    "dog",
    "cat",
    "puppy",
    "kitten",
    "pet",
    "therapist",
    "doctor",
    "grandparents",
    "stepmother",
    "stepfather",
    "stepson",
    "stepdaughter",
    "twin",
    "mentor",
];

/// Occupations recognised after "I'm a …" (plus the suffixes in `is_job`).
const JOBS: &[&str] = &[
    "teacher",
    "nurse",
    "doctor",
    "chef",
    "cook",
    "lawyer",
    "student",
    "engineer",
    "developer",
    "designer",
    "pilot",
    "writer",
    "architect",
    "accountant",
    "consultant",
    "programmer",
    "manager",
    "freelancer",
    "researcher",
    "professor",
    "firefighter",
    "farmer",
    "barista",
    "judge",
    "surgeon",
    "photographer",
    "editor",
    "analyst",
    "plumber",
    "electrician",
    "carpenter",
    "mechanic",
    "vet",
    "veterinarian",
    "paramedic",
    "soldier",
    "officer",
    "clerk",
    "cashier",
    "waiter",
    "waitress",
    "actor",
    "actress",
    "dancer",
    "singer",
    "coach",
    "tutor",
    "intern",
    "ceo",
    "cto",
    "cfo",
    "founder",
    "entrepreneur",
    "banker",
    "baker",
    "builder",
    "driver",
    "lecturer",
    "librarian",
    "midwife",
    "miner",
    "model",
    "painter",
    "police",
    "policeman",
    "policewoman",
    "postman",
    "producer",
    "programmer",
    "realtor",
    "receptionist",
    "sailor",
    "salesman",
    "saleswoman",
    "secretary",
    "security",
    "teacher",
    "trader",
    "translator",
    "interpreter",
    "tailor",
    "butcher",
    "caregiver",
    "carer",
    "nanny",
    "housewife",
    "homemaker",
    "contractor",
    "director",
    "executive",
    "administrator",
    "auditor",
    "investor",
    "marketer",
    "recruiter",
    "assistant",
    "attorney",
    "paralegal",
    "officer",
    "scientist",
    "dentist",
    "pharmacist",
    "therapist",
    "psychologist",
    "psychiatrist",
    "physician",
    "technician",
    "musician",
    "journalist",
    "artist",
    "mathematician",
    "professor",
    "volunteer",
    "pastor",
    "priest",
    "rabbi",
    "imam",
    "streamer",
    "youtuber",
    "blogger",
    "influencer",
    "gardener",
    "janitor",
    "cleaner",
    "welder",
    "machinist",
];

/// True for a word that names an occupation ("teacher", "dentist", "cardiologist").
pub(crate) fn is_job(word: &str) -> bool {
    is_in(JOBS, word)
        || (word.chars().count() > 5
            && [
                "ist", "ician", "ologist", "grapher", "eer", "smith", "wright",
            ]
            .iter()
            .any(|s| word.ends_with(s)))
}

pub(crate) const DIETS: &[&str] = &[
    "vegetarian",
    "vegan",
    "pescatarian",
    "pescetarian",
    "flexitarian",
    "carnivore",
    "omnivore",
];

pub(crate) const RELATIONSHIP: &[&str] = &[
    "married",
    "engaged",
    "divorced",
    "single",
    "widowed",
    "separated",
];

/// Lasting conditions and traits that are worth remembering ("I'm diabetic");
/// passing states ("I'm tired") are not listed and yield no fact.
pub(crate) const TRAITS: &[&str] = &[
    "left-handed",
    "right-handed",
    "diabetic",
    "colorblind",
    "color-blind",
    "colourblind",
    "deaf",
    "blind",
    "pregnant",
    "introverted",
    "extroverted",
    "asthmatic",
    "epileptic",
    "dyslexic",
    "autistic",
    "celiac",
    "coeliac",
    "gluten-free",
    "lactose-intolerant",
    "sober",
    "bilingual",
    "trilingual",
    "disabled",
    "vaccinated",
    "nearsighted",
    "shortsighted",
];

/// Adjectives that pair with "intolerant" ("I'm lactose intolerant").
pub(crate) const INTOLERANCES: &[&str] = &["lactose", "gluten", "fructose", "histamine"];

pub(crate) const JOB_STATES: &[&str] = &["retired", "unemployed", "self-employed", "freelance"];

pub(crate) const NATIONALITIES: &[&str] = &[
    "american",
    "british",
    "english",
    "scottish",
    "welsh",
    "irish",
    "canadian",
    "mexican",
    "brazilian",
    "argentinian",
    "argentine",
    "chilean",
    "colombian",
    "peruvian",
    "french",
    "german",
    "italian",
    "spanish",
    "portuguese",
    "dutch",
    "belgian",
    "swiss",
    "austrian",
    "swedish",
    "norwegian",
    "danish",
    "finnish",
    "icelandic",
    "polish",
    "czech",
    "slovak",
    "hungarian",
    "romanian",
    "bulgarian",
    "greek",
    "turkish",
    "russian",
    "ukrainian",
    "serbian",
    "croatian",
    "israeli",
    "lebanese",
    "egyptian",
    "moroccan",
    "nigerian",
    "kenyan",
    "ethiopian",
    "ghanaian",
    "indian",
    "pakistani",
    "bangladeshi",
    "chinese",
    "japanese",
    "korean",
    "vietnamese",
    "thai",
    "filipino",
    "indonesian",
    "malaysian",
    "singaporean",
    "australian",
    "iranian",
    "iraqi",
    "syrian",
    "saudi",
    "emirati",
    "jamaican",
    "cuban",
    "venezuelan",
    "taiwanese",
    "nepali",
];

pub(crate) const RELIGIONS: &[&str] = &[
    "christian",
    "catholic",
    "protestant",
    "muslim",
    "jewish",
    "hindu",
    "buddhist",
    "atheist",
    "agnostic",
    "mormon",
    "sikh",
    "orthodox",
];

/// Words that point a bare date ("on Monday", "May 7") at the future.
pub(crate) const FUTURE_MARKERS: &[&str] = &[
    "will", "going", "gonna", "next", "tomorrow", "plan", "planning", "planned", "upcoming",
    "soon", "shall", "moving",
];

/// A verb the rules read as a standing habit or ability ("I speak French",
/// "I don't smoke"): its forms and whether it stands without an object.
pub(crate) struct HabitVerb {
    pub base: &'static str,
    pub third: &'static str,
    pub ing: &'static str,
    pub intransitive: bool,
}

const fn hv(
    base: &'static str,
    third: &'static str,
    ing: &'static str,
    intransitive: bool,
) -> HabitVerb {
    HabitVerb {
        base,
        third,
        ing,
        intransitive,
    }
}

pub(crate) const HABIT_VERBS: &[HabitVerb] = &[
    hv("eat", "eats", "eating", false),
    hv("drink", "drinks", "drinking", true),
    hv("smoke", "smokes", "smoking", true),
    hv("vape", "vapes", "vaping", true),
    hv("drive", "drives", "driving", true),
    hv("speak", "speaks", "speaking", false),
    hv("play", "plays", "playing", false),
    hv("own", "owns", "owning", false),
    hv("use", "uses", "using", false),
    hv("read", "reads", "reading", false),
    hv("watch", "watches", "watching", false),
    hv("collect", "collects", "collecting", false),
    hv("cook", "cooks", "cooking", true),
    hv("study", "studies", "studying", false),
    hv("practice", "practices", "practicing", false),
    hv("practise", "practises", "practising", false),
    hv("teach", "teaches", "teaching", false),
    hv("run", "runs", "running", true),
    hv("swim", "swims", "swimming", true),
    hv("ride", "rides", "riding", false),
    hv("wear", "wears", "wearing", false),
    hv("volunteer", "volunteers", "volunteering", true),
    hv("meditate", "meditates", "meditating", true),
    hv("knit", "knits", "knitting", true),
    hv("paint", "paints", "painting", true),
    hv("take", "takes", "taking", false),
    hv("follow", "follows", "following", false),
];

/// The habit verb a word is a present form of ("eat", "eats"), or None.
pub(crate) fn habit_present(word: &str) -> Option<&'static HabitVerb> {
    HABIT_VERBS
        .iter()
        .find(|v| v.base == word || v.third == word)
}

/// The habit verb a word is the -ing form of ("smoking"), or None.
pub(crate) fn habit_ing(word: &str) -> Option<&'static HabitVerb> {
    HABIT_VERBS.iter().find(|v| v.ing == word)
}

/// Liking verbs (base, third person). Hating verbs are in `DISLIKE_VERBS`.
pub(crate) const LIKE_VERBS: &[(&str, &str)] = &[
    ("like", "likes"),
    ("love", "loves"),
    ("enjoy", "enjoys"),
    ("adore", "adores"),
    ("prefer", "prefers"),
];

pub(crate) const DISLIKE_VERBS: &[(&str, &str)] = &[
    ("hate", "hates"),
    ("dislike", "dislikes"),
    ("detest", "detests"),
    ("loathe", "loathes"),
];

/// (base, third) of a present-tense verb in `list`.
pub(crate) fn verb_forms(
    list: &'static [(&'static str, &'static str)],
    word: &str,
) -> Option<(&'static str, &'static str)> {
    list.iter().find(|(b, t)| *b == word || *t == word).copied()
}

/// Numbers spelled out, for "two weeks ago" and "I have three kids".
/// "first" … "twelfth", "1st", "2nd", "23rd" → 1, 2, 23.
pub(crate) fn small_ordinal(word: &str) -> Option<u32> {
    const WORDS: &[&str] = &[
        "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth",
        "tenth", "eleventh", "twelfth",
    ];
    if let Some(n) = WORDS.iter().position(|w| *w == word) {
        return u32::try_from(n + 1).ok();
    }
    let digits = word.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = word.get(digits.len()..)?;
    if digits.is_empty() || digits.len() > 3 || !is_in(&["st", "nd", "rd", "th"], suffix) {
        return None;
    }
    digits.parse().ok().filter(|&n| n > 0)
}

pub(crate) fn small_number(word: &str) -> Option<u32> {
    const WORDS: &[&str] = &[
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve",
    ];
    if let Some(n) = WORDS.iter().position(|w| *w == word) {
        return u32::try_from(n).ok();
    }
    match word {
        "a" | "an" => Some(1),
        "couple" => Some(2),
        "few" | "several" => Some(3),
        _ if !word.is_empty() && word.len() <= 4 && word.bytes().all(|b| b.is_ascii_digit()) => {
            word.parse().ok()
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_by_list_and_suffix() {
        assert!(is_job("teacher"));
        assert!(is_job("cardiologist"));
        assert!(is_job("engineer"));
        assert!(!is_job("list"));
        assert!(!is_job("dreamer"));
    }

    #[test]
    fn habit_forms() {
        assert_eq!(habit_present("eats").map(|v| v.base), Some("eat"));
        assert_eq!(habit_ing("smoking").map(|v| v.third), Some("smokes"));
        assert!(habit_present("sleeps").is_none());
    }

    #[test]
    fn numbers() {
        assert_eq!(small_number("three"), Some(3));
        assert_eq!(small_number("12"), Some(12));
        assert_eq!(small_number("a"), Some(1));
        assert_eq!(small_number("99999"), None);
        assert_eq!(small_number("x"), None);
    }
}
