"""A deterministic, synthetic chat-like corpus: what one user told an agent.

Generated here rather than read from a dataset, so anyone can rebuild the same
texts (same seed, same size, same texts, on any machine) and nothing
third-party is copied. Every text is unique, because stores are compared by
which memories they return.
"""

import random

PEOPLE = ["my sister", "my brother", "my boss", "Emma", "my neighbour", "Dad", "Mum",
          "my best friend", "Carlos", "the kids", "Priya", "my landlord", "Tom", "Aisha",
          "my manager", "Grandma", "Yuki", "my partner", "Lena", "the new intern"]
PLACES = ["Berlin", "Lisbon", "the office", "the gym", "Tokyo", "the lake house", "Chicago",
          "the farmers market", "the dentist", "the library", "Montreal", "the climbing hall",
          "Nairobi", "the coworking space", "Kyoto", "the beach cabin", "Oslo", "the bakery",
          "Buenos Aires", "the hospital"]
THINGS = ["sourdough bread", "a vintage camera", "the quarterly report", "vegan lasagna",
          "a new laptop", "trail running shoes", "a sci-fi novel", "the garden fence",
          "jazz records", "a sushi dinner", "an electric bike", "the tax return",
          "a sourdough starter", "noise-cancelling headphones", "a board game", "the wedding speech",
          "a standing desk", "the car insurance", "a pottery class", "a Spanish course"]
FOODS = ["peanuts", "shellfish", "gluten", "lactose", "eggs", "soy", "sesame", "strawberries",
         "mushrooms", "cilantro"]
JOBS = ["data engineer", "nurse", "teacher", "product designer", "accountant", "chef",
        "physiotherapist", "lawyer", "architect", "support agent"]
HOBBIES = ["bouldering", "the piano", "watercolour painting", "chess", "sourdough baking",
           "salsa dancing", "birdwatching", "woodworking", "Japanese", "marathon training"]
TIMES = ["last weekend", "yesterday", "next Tuesday", "in March", "this morning", "every Friday",
         "two weeks ago", "tonight", "over the holidays", "after work", "on Sunday", "in the summer"]
FEELINGS = ["excited", "stressed", "relieved", "nervous", "happy", "annoyed", "curious", "tired"]

# Each template draws from the lists above; a memory is one or two of them.
TEMPLATES = [
    "I'm allergic to {food}, so please avoid it in recipes.",
    "{person} lives in {place} now.",
    "I went to {place} with {person} {time}.",
    "I bought {thing} {time}.",
    "{person} recommended {thing} to me.",
    "I work as a {job} and I'm {feeling} about the new project.",
    "I've been learning {hobby} since {time}.",
    "Remind me to call {person} about {thing}.",
    "My favourite thing about {place} is {thing}.",
    "I'm meeting {person} at {place} {time}.",
    "{person} is {feeling} because of {thing}.",
    "I don't eat {food} and {person} doesn't either.",
    "We're planning a trip to {place} {time}.",
    "I lent {thing} to {person} {time}.",
    "{person} works as a {job} in {place}.",
    "I felt {feeling} after {hobby} {time}.",
    "I need to finish {thing} before I see {person}.",
    "My goal this year is to get better at {hobby}.",
    "{person} started {hobby} {time} and loves it.",
    "The appointment at {place} is {time}.",
]

# Questions an agent would ask its memory about such a user.
QUESTIONS = [
    "What am I allergic to?",
    "Where does {person} live?",
    "What did I buy recently?",
    "What did {person} recommend?",
    "What is my job?",
    "Which hobby am I learning?",
    "Who should I call about {thing}?",
    "When am I meeting {person}?",
    "Why is {person} {feeling}?",
    "Which foods should my recipes avoid?",
    "Where are we travelling next?",
    "Who has my {thing}?",
    "What does {person} do for a living?",
    "How do I feel about {hobby}?",
    "What do I have to finish before seeing {person}?",
    "What are my goals for this year?",
    "What happened at {place}?",
    "What do I like about {place}?",
    "Tell me about {person}.",
    "Anything about {thing}?",
]


def _fill(rng: random.Random, template: str) -> str:
    return template.format(
        person=rng.choice(PEOPLE), place=rng.choice(PLACES), thing=rng.choice(THINGS),
        food=rng.choice(FOODS), job=rng.choice(JOBS), hobby=rng.choice(HOBBIES),
        time=rng.choice(TIMES), feeling=rng.choice(FEELINGS))


def _cap(s: str) -> str:
    return s[0].upper() + s[1:]


def memories(n: int, seed: int = 7) -> list:
    """n unique chat-like memories; the same (n, seed) always gives the same list."""
    rng = random.Random(seed)
    out, seen = [], set()
    while len(out) < n:
        text = _cap(_fill(rng, rng.choice(TEMPLATES)))
        # Half the memories carry a second sentence, as chat turns do; it also
        # makes room for 100k+ unique texts.
        if rng.random() < 0.5:
            text += " " + _cap(_fill(rng, rng.choice(TEMPLATES)))
        if text not in seen:
            seen.add(text)
            out.append(text)
    return out


def queries(n: int = 200, seed: int = 11) -> list:
    """n unique questions over the same vocabulary (no time words, so no store
    reads a date out of them)."""
    rng = random.Random(seed)
    out, seen = [], set()
    while len(out) < n:
        text = _fill(rng, rng.choice(QUESTIONS))
        text = _cap(text)
        if text not in seen:
            seen.add(text)
            out.append(text)
    return out
