"""Fit college's linear head (backends/learners/linear_head.py) on training words only:
`python -m training.linear_head --out assets/college/minilm-l6__gemma-3-270m`.

1. CoLLEGe's corpus (`training.corpus`: WordNet usages and other synsets' glosses that use a
   word; every evaluation word and its inflections removed), a seeded sample of `--words`
   words with at least two sentences, their first `--sentences` each, the word masked.
2. The frozen encoder's pooled features of each sentence (`pooled_features`), averaged per
   word; the target is the LM's reference vector of the word (mean input embedding of the
   tokens of " w", what Chimera and Definitional Nonce score against).
3. The penalty: each of `--ridges` fitted on all but a seeded fifth of the words and scored
   on that fifth by the held-out word's rank among all sampled words' references (MRR);
   the best one is then fitted on every word and saved with those scores. The shipped
   head's (3e4, over all 20 376 words) was chosen on Chimera and Definitional Nonce dev,
   where the ranking of training words preferred less (model card, "A bigger encoder for
   the vectors" and "Which layer, and how many words").

No benchmark item is read here. The encoder's reading of 40 752 sentences (20 376 words)
takes about 20 minutes on two CPU cores and is cached; a fit then takes seconds.
"""

from __future__ import annotations

import argparse
import logging
import random
import time

import torch

from backends import shared_data
from backends.learners.college import mask_word
from backends.learners.linear_head import LinearHead, LinearHeadConfig, fit_ridge, pooled_features
from backends.models import load_encoder
from backends.pipeline import load_lm
from backends.reference import reference_vectors
from training.corpus import CorpusConfig, build_corpus
from training.features import cache_dir

log = logging.getLogger(__name__)


def featurize(encoder, tokenizer, texts: list[str], max_tokens: int, batch: int = 32):
    """[n, F] pooled features, read shortest first (less padding), returned in order."""
    from tqdm import tqdm

    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    out = torch.zeros(len(texts), 2 * encoder.config.hidden_size)
    for start in tqdm(range(0, len(order), batch), desc="encoder features", unit="batch"):
        chunk = order[start : start + batch]
        out[chunk] = pooled_features(encoder, tokenizer, [texts[i] for i in chunk], max_tokens)
    return out


def ranks_of_own(predicted: torch.Tensor, references: torch.Tensor, rows: torch.Tensor):
    """1-based rank of each prediction's own word among all references, by cosine."""
    sims = (
        torch.nn.functional.normalize(predicted, dim=-1)
        @ torch.nn.functional.normalize(references, dim=-1).T
    )
    own = sims[torch.arange(len(rows)), rows]
    return 1 + (sims > own[:, None]).sum(-1)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="the generator's folder to save the head in")
    parser.add_argument("--encoder", default="mpnet-base")
    parser.add_argument("--lm", default="gemma-3-270m")
    # 0: every pool word with two sentences (20 376 here). The shipped head uses them all:
    # better than 6 000 on dev and held out (model card, "Which layer, and how many words")
    parser.add_argument("--words", type=int, default=0)
    parser.add_argument("--sentences", type=int, default=2)
    # the shipped head's penalty was chosen on Chimera and Nonce dev (model card); given
    # several, the one that ranks the held-out training words best is kept
    parser.add_argument("--ridges", type=float, nargs="+", default=[3e4])
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    torch.set_num_threads(args.threads)

    start = time.perf_counter()
    # WordNet alone: GCIDE (Debian dict-gcide) is not on every machine, and the head needs
    # words with two sentences, which WordNet has for some 20 000
    corpus = build_corpus(shared_data.excluded_words(), CorpusConfig(use_gcide=False))
    pool = sorted(w for w, s in corpus.items() if len(s) >= 2)
    count = len(pool) if args.words <= 0 else min(args.words, len(pool))
    words = random.Random(args.seed).sample(pool, count)
    encoder, tokenizer = load_encoder(args.encoder, "cpu")
    # the encoder's reading is most of the time, and the same for every penalty: kept
    cached = cache_dir() / (
        f"linear-head-{args.encoder}-{len(words)}w-{args.sentences}s-"
        f"{args.max_tokens}t-seed{args.seed}.pt"
    )
    if cached.exists():
        features = torch.load(cached)
    else:
        texts, owner = [], []
        for row, word in enumerate(words):
            for sentence in corpus[word][: args.sentences]:
                texts.append(mask_word(sentence, word, tokenizer.mask_token))
                owner.append(row)
        per_text = featurize(encoder, tokenizer, texts, args.max_tokens)
        owner = torch.tensor(owner)
        counts = torch.bincount(owner, minlength=len(words)).clamp(min=1)[:, None].float()
        features = torch.zeros(len(words), per_text.shape[1]).index_add(0, owner, per_text)
        features = features / counts
        torch.save(features, cached)
    lm = load_lm(args.lm, "cpu")
    targets = torch.from_numpy(reference_vectors(lm, words))
    log.info("%d words read in %.0f s", len(words), time.perf_counter() - start)

    order = torch.randperm(len(words), generator=torch.Generator().manual_seed(args.seed))
    held, fitted = order[: len(words) // 5], order[len(words) // 5 :]
    scores = {}
    for ridge in args.ridges:
        head = LinearHead(None, fit_ridge(features[fitted], targets[fitted], ridge))
        predicted = torch.stack([head.row(f) for f in features[held]])
        ranks = ranks_of_own(predicted, targets, held).float()
        cosine = torch.nn.functional.cosine_similarity(predicted, targets[held]).mean()
        scores[ridge] = {
            "mrr": float((1 / ranks).mean()),
            "median_rank": float(ranks.median()),
            "cosine": float(cosine),
            "among": len(words),
        }
        log.info("ridge %g: %s", ridge, scores[ridge])
    best = max(scores, key=lambda r: scores[r]["mrr"])
    config = LinearHeadConfig(
        encoder=args.encoder,
        lm=lm.name,
        d_enc=encoder.config.hidden_size,
        d_lm=lm.dim,
        max_tokens=args.max_tokens,
        ridge=best,
        words=len(words),
        held_out={"ridge": best, **scores[best], "words": len(held), "seed": args.seed},
    )
    LinearHead(config, fit_ridge(features, targets, best)).save(args.out)
    log.info(
        "ridge %g chosen; saved to %s (%.0f s in all)", best, args.out, time.perf_counter() - start
    )


if __name__ == "__main__":
    main()
