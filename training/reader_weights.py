"""Learn how the LM reader weighs its evidence, on words no benchmark uses.

The reader (`backends/learners/lm_reader.py`) scores each candidate word by a weighted
sum of its evidence (`FEATURES`: the slot's log-probability, the blank prompt's, the
right context's, the LM's priors taken out of them, the generator's proposal). Its first
four versions set those weights by hand while reading DefGen dev; here they are fitted
instead, as a conditional logit over each item's candidates (McFadden 1974; the
listwise softmax loss of learning to rank), then scaled (a temperature) to put the most
weight on the right word: the reader's vector is the candidates' rows weighted so.

Items are made as DefGen's are (`backends/usages.py`): eligible WordNet
words of each part of speech, their first 1-3 usage sentences with "dax" in the word's
place, but none of them an evaluation word, an inflection of one, or a synonym of one
(no synset shared with one), so dev and test stay untouched. A candidate is right when
its row (at its base form, as the reader reads it) is the word's own single token.

    python -m training.reader_weights --per-pos 100,100,100 --shots 1,2,3 \\
        --out benchmarks/results/reader_ablation/reader-weights-fitted.json

Features are cached (`--cache`), so refitting is instant; `--drop proposal` fits without
a feature; the same command runs on a GPU (`--device cuda`). Measured against the
hand-set weights on dev and not shipped (model card, "Learned weights for the reader's
evidence"); `benchmarks.reader_ablation --weights FILE` reads such a file.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import sys
import time
from pathlib import Path

import torch

log = logging.getLogger(__name__)

SEED = 1  # not the benchmark sets' 0: a draw of its own
SHOTS = 3  # usages kept per word, as DefGen keeps
STAND_IN = "dax"  # the made-up string in the word's place, as the benchmarks write it


def training_words(per_pos: dict[str, int], seed: int = SEED) -> list[tuple[str, str, list[str]]]:
    """(word, part of speech, its first `SHOTS` usages with "dax" in its place) for
    `per_pos[pos]` eligible WordNet words of each part of speech, none an evaluation word
    or its synonym."""
    from backends import lexicon
    from backends.shared_data import excluded_words
    from backends.usages import fill, find_usages, is_eligible, ordered
    from training.corpus import is_excluded

    excluded = frozenset(excluded_words())

    def clean(word: str) -> bool:
        if is_excluded(word, excluded):
            return False
        synonyms = {m.lower() for s in lexicon.wordnet().synsets(word) for m in s.lemma_names()}
        return not any(is_excluded(m, excluded) for m in synonyms)

    rng = random.Random(seed)
    words = []
    for pos, n in per_pos.items():
        usages = find_usages(pos)
        eligible = sorted(w for w, us in usages.items() if is_eligible(w, pos, us) and clean(w))
        rng.shuffle(eligible)
        log.info("%s: %d eligible words outside every evaluation set", pos, len(eligible))
        for word in eligible[:n]:
            shown = ordered(word, pos, usages[word])[:SHOTS]
            words.append((word, pos, [fill(u, STAND_IN) for u in shown]))
    return words


@torch.no_grad()
def extract(lm, learner, words, shots: list[int]) -> list[dict]:
    """Per (word, k): the reader's candidates' features and which of them is the word."""
    from backends.inputs import Example
    from backends.learners.lm_reader import candidate_features

    rows, start = [], time.time()
    for i, (word, pos, texts) in enumerate(words):
        gold = lm.tokenizer.convert_tokens_to_ids("▁" + word)
        if gold == lm.tokenizer.unk_token_id:
            continue  # not one token: no candidate row can be the word
        for k in shots:
            examples = [Example(text) for text in texts[:k]]
            proposal = learner.concept(STAND_IN).add(examples).embedding()[0]
            found = candidate_features(lm, STAND_IN, examples, learner.config.reader, proposal)
            if found is not None:
                index, features = found.rows, found.features
                rows.append(
                    {"word": word, "pos": pos, "k": k, "features": features.float().cpu(),
                     "gold": (index == gold).cpu()}
                )  # fmt: skip
        if i % 25 == 0:
            log.info("%d/%d words, %.0f s", i, len(words), time.time() - start)
    return rows


def listwise_loss(rows: list[dict], weights: torch.Tensor) -> torch.Tensor:
    """Mean over items of -log(the softmax weight the right rows get)."""
    losses = []
    for row in rows:
        scores = row["features"] @ weights
        losses.append(torch.logsumexp(scores, 0) - torch.logsumexp(scores[row["gold"]], 0))
    return torch.stack(losses).mean()


def fit(rows: list[dict], start: torch.Tensor, l2: float = 1e-3) -> torch.Tensor:
    """Weights minimising the listwise loss (+ L2) over `rows` that hold the word."""
    rows = [r for r in rows if r["gold"].any()]
    weights = start.clone().requires_grad_(True)
    optimizer = torch.optim.LBFGS([weights], max_iter=200, line_search_fn="strong_wolfe")

    def closure():
        optimizer.zero_grad()
        loss = listwise_loss(rows, weights) + l2 * weights.square().sum()
        loss.backward()
        return loss

    optimizer.step(closure)
    return weights.detach()


def sharpen(rows: list[dict], weights: torch.Tensor) -> torch.Tensor:
    """`weights` times the scale (a temperature) that puts the most weight on the word.

    The log-loss fit is calibrated: it spreads weight over plausible words, right for a
    probability but not for the reader's vector, a weighted mean of rows, which blurs
    towards no word at all when spread. The direction stays the fit's; only the
    sharpness is chosen for the mean weight on the right word."""
    scales = [1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0]
    best = max(scales, key=lambda s: evaluate(rows, s * weights)["weight_on_word"])
    return best * weights


def evaluate(rows: list[dict], weights: torch.Tensor) -> dict[str, float]:
    """The share of items whose top candidate is the word, and the mean weight on it."""
    top = mass = 0.0
    for row in rows:
        scores = row["features"] @ weights
        top += float(row["gold"][scores.argmax()])
        mass += float(torch.softmax(scores, 0)[row["gold"]].sum())
    n = max(1, len(rows))
    return {"n": len(rows), "top1": round(top / n, 4), "weight_on_word": round(mass / n, 4)}


def main(argv: list[str] | None = None) -> None:
    from backends.arguments import file_to_write, whole_number, whole_numbers

    parser = argparse.ArgumentParser(
        prog="python -m training.reader_weights", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--per-pos",
        type=whole_numbers(0, most=3),
        default="100,100,100",
        help="nouns,verbs,adjectives",
    )
    parser.add_argument("--shots", type=whole_numbers(1, SHOTS, most=SHOTS), default="1,2,3")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=whole_number(0), default=0, help="0 = torch's default")
    parser.add_argument("--cache", default=None, help="features file (default: in the cache)")
    parser.add_argument(
        "--out", type=file_to_write, default=None, help="write the fitted weights (JSON) here"
    )
    parser.add_argument(
        "--drop", default="", help="features left out (weight 0), comma-separated, e.g. proposal"
    )
    args = parser.parse_args(argv)

    from backends.learners.lm_reader import FEATURES, score_weights

    if not any(args.per_pos):
        parser.error("argument --per-pos: no words to read (every count is 0)")
    unknown = [name for name in args.drop.split(",") if name and name not in FEATURES]
    if unknown:
        parser.error(f"argument --drop: {unknown[0][:40]!r} is not one of {', '.join(FEATURES)}")
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")

    from backends.learners import load_learner
    from backends.learners.college import CollegeConfig
    from backends.lexicon import cache_dir
    from backends.pipeline import load_lm

    if args.threads:
        torch.set_num_threads(args.threads)
    per_pos = dict(zip("nva", args.per_pos))
    shots = args.shots
    named = f"{','.join(map(str, args.per_pos))}-{','.join(map(str, shots))}"  # as typed
    cache = Path(args.cache or cache_dir() / "reader_weights" / f"{named}.pt")
    learner = load_learner("college", CollegeConfig(device=args.device))
    if cache.exists():
        rows = torch.load(cache)
    else:
        lm = load_lm("gemma-3-270m", args.device)
        rows = extract(lm, learner, training_words(per_pos), shots)
        cache.parent.mkdir(parents=True, exist_ok=True)
        torch.save(rows, cache)

    dropped = [FEATURES.index(name) for name in args.drop.split(",") if name]
    for row in rows:  # a feature left out weighs nothing, however it is fitted
        row["features"][:, dropped] = 0.0

    # Half the words fit, the other half check; then all of them fit the weights written out.
    words = sorted({r["word"] for r in rows})
    random.Random(SEED).shuffle(words)
    held = set(words[: len(words) // 2])
    fit_rows = [r for r in rows if r["word"] not in held]
    check_rows = [r for r in rows if r["word"] in held]
    config = learner.config.reader
    hand = score_weights(config) / config.temperature  # the shipped reader's softmax
    learned = fit(fit_rows, hand)
    report = {
        "hand-set (shipped)": hand,
        "fitted on the other half": learned,
        "fitted and sharpened there": sharpen(fit_rows, learned),
    }
    summary = {}
    for name, weights in report.items():
        for k in shots:
            part = [r for r in check_rows if r["k"] == k]
            summary[f"{name}, k={k}"] = evaluate(part, weights)
            print(f"{name:28s} k={k} {summary[f'{name}, k={k}']}")
    final = sharpen(rows, fit(rows, hand))
    print("weights:", dict(zip(FEATURES, [round(w, 4) for w in final.tolist()])))
    if args.out:
        record = {
            "features": list(FEATURES),
            "weights": [round(w, 5) for w in final.tolist()],
            "hand_set": [round(w, 5) for w in hand.tolist()],
            "held_out_half": summary,
            "items": len(rows),
            "words": len(words),
            "with_the_word_among_candidates": sum(bool(r["gold"].any()) for r in rows),
            "command": "python -m training.reader_weights " + " ".join(argv or sys.argv[1:]),
        }
        args.out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
