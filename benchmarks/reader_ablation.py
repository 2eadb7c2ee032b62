"""DefGen on a range of items for versions of the college learner's LM reader, side by side.

The DefGen CLI runs the first N items with each learner as shipped; choosing the reader's
settings needs any range of items (DefGen dev holds nouns 0-79, verbs 80-139, adjectives
140-199) and several settings of one learner in the same batched generation. Scores are
DefGen's own (`benchmarks.defgen.score_samples`): identification among up to 30 of the
run's items, BERTScore, degenerate rate.

    python -m benchmarks.reader_ablation --items 80:140 --shots 1,3 \\
        --variants plain,shipped,oracle --json /tmp/verbs.json

`--layouts off,paragraph,quoted` defines the same learned vectors once per way of setting
the examples in front of the definition prompt (`college.PROMPT_LAYOUTS`), each row then
named "<variant> layout=<name>".

`--weights FILE` adds the variant `fitted`: the shipped reader weighing its candidates'
evidence with the weights `training/reader_weights.py` fitted (its JSON), temperature 1,
at every k.

`--word-uses 0,1,2` decodes the same learned vectors once per value of
`Decoding.word_uses` (how often a content word may be said; 0 = no limit), each row then
named "<variant> word_uses=<n>": a decoding choice measured on identical vectors.

Variants: `shipped` (the learner as shipped: `ReaderConfig()`, weighing its evidence with
the fitted weights from three examples up, `CollegeConfig.fitted_from`), `hand` (the same
reader with its hand-set weights at every k, as every variant below), `v3` (the third version, which
the rest were measured against and are built from), `plain` (the product of experts as
before the prior, candidates as read), `prior` (the prior only), `base` (base forms only),
`mixed_shots` (the fill-in-the-blank prompt's worked examples with a verb and an
adjective among its nouns), `mixed_prior_25` and `mixed_prior_75` (the same with a
quarter or three quarters of the prior taken out), `mixed_pool_64` (the mixed shots with
64 candidates each from the slot and the blank prompt, not 16), `mixed_pool_64_right_40`
(that pool with only its best 40 by left and blank scores read on the right),
`mixed_pool_64_right_40_first_1` (the same cut after reading the pool's first right-context
token), `mixed_pool_64_shortlist` (the whole pool, every right-context softmax over a
shared shortlist of 1024 tokens but the best 16 candidates': the fourth version),
`pool_128` (twice the shipped pool), `example_words` (the shipped reader letting the
examples' own words be candidates, as the fourth version did), `shipped_right_8` (the
learner as shipped reading 8 right-context tokens, not 4), `oracle`. A `+LAYOUT`
after a variant sets how the examples stand in front of the definition prompt
(`shipped+quoted`, `v3+paragraph`).
Closed-class words are never candidates in any variant (`lm_reader.word_tokens`).
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from dataclasses import asdict, replace
from pathlib import Path

from backends.learners.college import PROMPT_LAYOUTS, CollegeConfig, examples_prefix
from backends.learners.lm_reader import BLANK_SHOTS, MIXED_SHOTS, ReaderConfig, fitted_reader

# The reader's third version, which the variants below were measured against (16 + 16
# candidates, nouns as worked examples, every right-context softmax over the whole
# vocabulary, the examples' own words allowed); "shipped" is whatever `ReaderConfig()` is
# today.
V3 = ReaderConfig(
    from_slot=16,
    from_blank=16,
    blank_shots=BLANK_SHOTS,
    exact_right=0,
    exclude_example_words=False,
)

VARIANTS = {
    "shipped": ReaderConfig(),
    # the fifth version: the shipped reader's settings with its hand-set weights at every k
    "hand": ReaderConfig(),
    "v3": V3,
    "plain": replace(V3, prior_weight=0.0, base_forms=False),
    "prior": replace(V3, base_forms=False),
    "base": replace(V3, prior_weight=0.0),
    "mixed_shots": replace(V3, blank_shots=MIXED_SHOTS),
    "mixed_prior_25": replace(V3, blank_shots=MIXED_SHOTS, prior_weight=0.25),
    "mixed_prior_75": replace(V3, blank_shots=MIXED_SHOTS, prior_weight=0.75),
    # four times the candidates from the slot and from the blank prompt: on 60 dev verbs
    # and adjectives the word itself was a candidate in 0.30 / 0.27 of them as shipped
    "mixed_pool_64": replace(V3, blank_shots=MIXED_SHOTS, from_slot=64, from_blank=64),
    # the same pool with only its best 40 by left and blank scores read on the right,
    # about as many as 16 + 16 + 8 before: the wider pool at the old reading time
    "mixed_pool_64_right_40": replace(
        V3, blank_shots=MIXED_SHOTS, from_slot=64, from_blank=64, right_pool=40
    ),
    # the same cut made after reading the whole pool's first right-context token
    "mixed_pool_64_right_40_first_1": replace(
        V3, blank_shots=MIXED_SHOTS, from_slot=64, from_blank=64, right_pool=40, cut_on_right=1
    ),
    # that pool with the right context's softmaxes over a shared shortlist but for the
    # best 16 candidates (the fourth version, shipped)
    "mixed_pool_64_shortlist": replace(
        V3, blank_shots=MIXED_SHOTS, from_slot=64, from_blank=64, exact_right=16
    ),
    # the shipped reader with Bayes' rule's prior: counted once, so (k - 1) x the LM's
    # prior taken out of the product (none at k = 1, two of three at k = 3); and with
    # three quarters of it taken out of each example (the earlier sweep's k = 3 winner)
    "bayes_prior": replace(ReaderConfig(), prior_weight=1.0, prior_kept=1),
    "prior_75": replace(ReaderConfig(), prior_weight=0.75),
    # twice the shipped pool from the slot and from the blank prompt: on 60 dev adjectives
    # at k = 3 the word was a candidate in 34 of them with 64 + 64 and 38 with 128 + 128
    "pool_128": replace(ReaderConfig(), from_slot=128, from_blank=128),
    # the fourth version: the examples' own words may be candidates
    "example_words": replace(ReaderConfig(), exclude_example_words=False),
    # the learner as shipped (fitted weights from three examples up) reading 8 tokens to
    # the right of the word, not 4: written sentences have more there than WordNet's
    # fragments
    "shipped_right_8": replace(ReaderConfig(), right_tokens=8),
}


def known_variant(name: str, variants: dict[str, ReaderConfig] = VARIANTS) -> bool:
    reader, _, layout = name.partition("+")
    return reader in variants and (not layout or layout in PROMPT_LAYOUTS)


def college_config(name: str, variants: dict[str, ReaderConfig] = VARIANTS) -> CollegeConfig:
    """A variant's learner: its reader, and after a '+' how the examples stand in front of
    the definition prompt (`college.PROMPT_LAYOUTS`; else the shipped layout)."""
    reader, _, layout = name.partition("+")
    # "shipped" is the learner as shipped (the fitted weights from three examples up), and
    # so is "shipped_*" but for its reader's settings; every other variant is its reader's
    # settings with the hand weights at every k
    if reader.startswith("shipped"):
        config = CollegeConfig(reader=variants[reader])
    else:
        config = CollegeConfig(reader=variants[reader], fitted_from=0)
    return replace(config, examples_in_prompt=layout) if layout else config


def parse_items(text: str) -> list[int]:
    """'80:140,150:160' -> [80, ..., 139, 150, ..., 159]."""
    items = []
    for part in text.split(","):
        lo, hi = (int(x) for x in part.split(":"))
        items.extend(range(lo, hi))
    return items


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=None, help="DefGen file (default: the dev set)")
    parser.add_argument("--items", required=True, help="ranges LO:HI, comma-separated")
    parser.add_argument("--shots", default="1,3")
    parser.add_argument("--variants", default="plain,shipped,oracle")
    parser.add_argument("--word-uses", default=None, help="decode once per value, e.g. 0,1,2")
    parser.add_argument(
        "--layouts", default=None, help="define the same vectors once per layout, e.g. off,quoted"
    )
    parser.add_argument(
        "--weights",
        default=None,
        help="fitted reader weights (training/reader_weights.py's JSON): adds variant 'fitted'",
    )
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", default=None, help="write the samples and scores here")
    args = parser.parse_args(argv)

    import torch

    from backends.definitions import DEFAULT_DECODING, define, define_known
    from backends.learners import load_learner
    from backends.pipeline import load_lm
    from benchmarks import data
    from benchmarks.bertscore import BertScoreConfig, BertScorer
    from benchmarks.defgen import Sample, reading_scores, score_samples
    from benchmarks.runs import STAND_IN, examples_for

    if args.threads:
        torch.set_num_threads(args.threads)
    variants = {**VARIANTS, "fitted": fitted_reader(args.weights)} if args.weights else VARIANTS
    data_path = Path(args.data) if args.data else data.SETS_DIR / "defgen.dev.jsonl"
    if not data_path.is_file():
        parser.error(f"--data {args.data}: no such file")
    names = args.variants.split(",")
    unknown = [n for n in names if n != "oracle" and not known_variant(n, variants)]
    if unknown:
        parser.error(
            f"unknown variant(s) {unknown}: choose from {[*variants, 'oracle']}, "
            f"each optionally +LAYOUT, one of {list(PROMPT_LAYOUTS)}"
        )
    layouts = args.layouts.split(",") if args.layouts else []
    if any(layout not in PROMPT_LAYOUTS for layout in layouts):
        parser.error(f"--layouts takes names from {list(PROMPT_LAYOUTS)}; got {args.layouts!r}")
    decodings = {"": DEFAULT_DECODING}
    if args.word_uses:
        uses = args.word_uses.split(",")
        if not all(u.isdigit() for u in uses):
            parser.error(f"--word-uses takes counts >= 0, e.g. 0,1,2; got {args.word_uses!r}")
        decodings = {f" word_uses={u}": replace(DEFAULT_DECODING, word_uses=int(u)) for u in uses}
    lm = load_lm("gemma-3-270m", "cpu")
    items = data.load_defgen(data_path)
    learners = {
        n: load_learner("college", college_config(n, variants)) for n in names if n != "oracle"
    }
    samples, suffixes, start = [], [], time.time()  # suffixes[j]: samples[j]'s decoding
    for i in parse_items(args.items):
        item = items[i]
        for k in (int(s) for s in args.shots.split(",")):
            examples = examples_for(item.examples[:k])
            learned = [
                replace(learner.learn(lm, STAND_IN, examples), learner=n)
                for n, learner in learners.items()
            ]
            if layouts:  # the same vectors, the examples set before the prompt each way
                prefixes = {layout: examples_prefix(examples, layout) for layout in layouts}
                learned = [
                    replace(e, learner=f"{e.learner} layout={layout}", prompt_prefix=prefix)
                    for e in learned
                    for layout, prefix in prefixes.items()
                ]
            for suffix, decoding in decodings.items():
                found = define(lm, learned, decoding=decoding)
                read = [e.info.get("read_as") for e in learned]
                if "oracle" in names:
                    found += define_known(lm, [item.word], decoding=decoding)
                    read.append(None)
                samples += [
                    Sample(i, item.word, k, d.learner, d.text, item.definition, read_as=r)
                    for d, r in zip(found, read)
                ]
                suffixes += [suffix] * len(found)
        print(f"{i} {item.word} {time.time() - start:.0f} s", flush=True)

    # scored under their own names (the oracle's degenerate check reads its real word),
    # then named by their decoding
    score_samples(samples, [x.definition for x in items], BertScorer(BertScoreConfig()), 0)
    for s, suffix in zip(samples, suffixes):
        s.learner += suffix
    groups = defaultdict(list)
    for s in samples:
        groups[s.learner, s.shots].append(s)
    summary = {}
    for (name, k), group in sorted(groups.items(), key=lambda g: (g[0][1], g[0][0])):
        means = {m: sum(s.scores[m] for s in group) / len(group) for m in group[0].scores}
        means.update(reading_scores(group))
        summary[f"{name} k={k}"] = {"n": len(group), **means}
        print(
            f"{name:8s} k={k} n={len(group)} " + " ".join(f"{m}={v:.3f}" for m, v in means.items())
        )
    if args.json:
        record = {"args": vars(args), "summary": summary, "samples": [asdict(s) for s in samples]}
        with open(args.json, "w") as f:
            json.dump(record, f, indent=1, ensure_ascii=False)


if __name__ == "__main__":
    main()
