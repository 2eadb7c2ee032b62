"""The frozen LM as a reader of the examples: what it expects in the new word's place.

CoLLEGe (Teehan, Lake & Ren 2024) reads examples with a masked-LM encoder; its paper
reader, RoBERTa-large, is bigger than our whole 270M LM, while our packaged encoder
(MiniLM, 22M) is far smaller. The LM itself already reads the examples well: at the
position just before the new word, its next-token distribution says which known words
fit there ("his ___ wandered": mind, thoughts, eyes, ...). Pooled over the examples by a
product of experts (summed log-probabilities, Hinton 2002), it keeps the words every
example allows. Restricted to whole-word tokens, tempered and cut to its top M, its
expected embedding row is a vector in the LM's own space: a soft guess of the word,
which the CoLLEGe learner blends with its generator's vector.

The LM is causal, so the slot's distribution sees only the left context. With
`right_tokens`, the best candidates are also put in the word's place and scored on the
tokens that follow it (log p(right context | left context, candidate)), so "she opened
the ___ and took out a cold bottle of milk" can prefer fridge to oven.

An example that starts with the word gives the slot nothing to read ("___ is a yellow
fruit that monkeys like to eat"). So the LM is also asked outright, in a few-shot
fill-in-the-blank prompt that shows it the whole sentence (`blank_prompt`): its answers,
pooled over the examples, add candidates and (at half weight) a score term. On
Definitional Nonce (every sentence starts with the word) it took the first 50 items' MRR
from 0.072 to about 0.16, and DefGen dev one-shot identification from 0.20 to 0.47-0.53
(first 15 items; model card, "Asked outright").
A causal LM's slot distribution also carries its prior: frequent words ("was", "had",
"made", "in") top it whatever the sentence says, and summing k examples' log-probabilities
counts that prior k times. Bayes with a flat prior over the new word would divide each
example's p(w | context) by p(w) (pointwise mutual information; for the blank prompt,
Holtzman et al. 2021's domain-conditional PMI: the same prompt with no sentence). Half
of that (`prior_weight`) brought content words to the top on DefGen dev verbs and
adjectives ("The rain water ___ into this big vat": had -> draining) and left nouns as
they were; all of it promotes rare junk tokens (model card, "Against the prior"). Words
of a closed class (articles, pronouns, prepositions, auxiliaries) are never candidates:
a language coins nouns, verbs and adjectives, not new prepositions.

The new word is the one missing from its examples, so no word they show can be it, yet
a small LM asked to fill a blank often answers with a word it can see ("She ___ our
expectations": expectations; "___ steel shelves": steel). Those words, and words whose
base form they share, are never candidates (`exclude_example_words`, the fifth version).

The slot is often inflected ("The noise ___ out her speech": drowned), and a new word
typed with an ending ("The wiggins are ripe") is read with the ending as its own: the
slot and the blank stand for the whole word, the right context starts after it. The
new word is a lexeme, defined in its base form. So each candidate's row is its WordNet
base form's where that is one whole-word token (`base_forms`): draining -> drain. A
participle that is mostly an adjective is a headword of its own (`lexicon.headword`:
tired, jagged and interesting stay; read as tire, jag and interest they were other
words, a car's tyre among them). The forms as read are kept (`Reading.forms`): an
inflected slot says the class of the word ("drowned", "crying": a verb), which its base
form may not ("cry": a noun or a verb), and the definition probe names the class
(`Reading.word_class`).

A lexeme's forms are separate candidates, and each example may want another one: "The
wugs were singing" fits birds, "A small wug built its nest" bird, and "group" fits both
as it is, so form by form it won. With `pool_forms` a candidate's evidence from each
example is its lexeme's best form's there (`Candidates.each`, `lexeme_scores`); the
CoLLEGe learner weighs the reading its definitions are written from so.

Each candidate's score weighs these pieces of evidence (`FEATURES`) with weights set by
hand on DefGen dev (`score_weights`); `training/reader_weights.py` fits them instead on
words no benchmark uses (better from three examples up, worse below: model card,
"Learned weights for the reader's evidence"; not shipped).

If no example uses the word the reader says nothing, and the generator alone is used.
"""

from __future__ import annotations

import copy
import json
import logging
import math
import re
from collections.abc import Collection
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

import torch
import torch.nn.functional as F

from backends.inputs import Example
from backends.lexicon import class_shares, headword, lemmatize, wordnet
from backends.nonce_lm import NonceLM, inflected_pattern

log = logging.getLogger(__name__)


# Worked examples for the fill-in-the-blank prompt: everyday words, none of them an
# evaluation word (tests/backends/test_lm_reader.py checks every benchmark file).
BLANK_SHOTS = (
    ("The ___ chased the mouse around the barn.", "cat"),
    ("___ is a hot drink made by pouring water over dried leaves.", "tea"),
    ("She opened her ___ and paid for the groceries.", "purse"),
)
# The same with a verb and an adjective: shots of nouns only may lead the LM to answer
# every blank with a noun, and verbs and adjectives are the reader's largest gap.
MIXED_SHOTS = (
    BLANK_SHOTS[0],
    ("Please ___ the door when you leave.", "close"),
    BLANK_SHOTS[1],
    ("The soup was too ___ to eat, so we let it cool.", "hot"),
    BLANK_SHOTS[2],
)


@dataclass(frozen=True)
class ReaderConfig:
    # Temperature of the candidates' pooled scores (< 1 sharpens towards the top guess).
    temperature: float = 0.5
    # Candidates taken from the pooled slot distribution (its 262k-token tail only blurs).
    # 64, not 16 as before: on 60 dev verbs and adjectives the word was among 16 in only
    # about a third of them (model card, "The reader's fourth version").
    from_slot: int = 64
    # Candidates taken from a proposal vector's nearest words (the CoLLEGe generator's):
    # an example that starts with the word gives the slot nothing to go on.
    from_proposal: int = 8
    # Right context read per example, in tokens (0 = left context only): every candidate
    # is put in the word's place and scored on how well the LM then predicts the tokens
    # that follow, in one batch.
    right_tokens: int = 4
    # Candidates read on the right, the best by their left and blank scores (0: all of
    # them): reading the right context is most of the reader's time (a softmax over the
    # vocabulary per candidate and token), so a wider pool is read on the left first.
    right_pool: int = 0
    # Right-context tokens read for the whole pool before that cut (0: cut on the left
    # and blank scores alone): one token costs about a quarter of four.
    cut_on_right: int = 0
    # Candidates whose right-context scores take a softmax over the whole vocabulary (0:
    # all of them); the rest take it over `right_shortlist` tokens shared by every
    # candidate (`NonceLM.shared_target_logprobs`), and the best by then are re-read in
    # full. The full softmaxes were two thirds of the right-context reading's time.
    exact_right: int = 16
    right_shortlist: int = 1024
    # Candidates taken from the LM asked outright, in a few-shot fill-in-the-blank prompt
    # (`BLANK_SHOTS`), pooled over examples: the only reading of the whole sentence a
    # causal LM gives before the word, so the one source when the word starts it.
    from_blank: int = 64
    # Weight of that prompt's log-probability in the candidates' scores (0: it only proposes).
    blank_weight: float = 0.5
    # Share of the LM's prior p(w) taken out of each example's log p(w | context): 0 is
    # the plain product of experts, 1 the full pointwise mutual information.
    prior_weight: float = 0.5
    # Examples whose prior is not taken out: 0 takes `prior_weight` of it out of every
    # example; 1 with `prior_weight` 1 is Bayes' rule with the LM's own prior counted once
    # (k examples' product holds it k times; nothing is taken out of a single example).
    prior_kept: int = 0
    # Read each candidate as its base form's row (drained -> drain; a participle mostly
    # used as an adjective is its own: tired) where WordNet and the vocabulary have one.
    base_forms: bool = True
    # The fill-in-the-blank prompt's worked examples: `MIXED_SHOTS` (a verb and an
    # adjective among its nouns) or `BLANK_SHOTS` (three nouns, the third version's; model
    # card, "Worked examples of every part of speech").
    blank_shots: tuple[tuple[str, str], ...] = MIXED_SHOTS
    # Weights of the candidates' evidence (`FEATURES`, in that order) in their scores;
    # None: the hand-set ones (`score_weights`), one for the slot and the right context,
    # `blank_weight` for the blank prompt and `prior_weight` of each prior taken out.
    # Learned weights (`training/reader_weights.py`) come with temperature 1.
    weights: tuple[float, ...] | None = None
    # Never take a word the examples themselves use (or its base form) as a candidate:
    # the new word is the one missing from them, yet the blank prompt often answers with
    # a word it can see ("She ___ our expectations": expectations; "___ steel shelves":
    # steel). On DefGen dev at k = 3 the word was read first in 105 of 200 items with
    # this, 100 without (model card, "The examples' own words").
    exclude_example_words: bool = True
    # Score the new word's lexeme, not one form of it, in each example: a candidate's
    # evidence from an example is that of its best form there (the forms sharing a base
    # form's row), summed over the examples, and the lexeme's weight goes to its best form.
    # "The wugs were singing" and "A small wug built its nest" fit birds and bird, each
    # in one example, and together neither: read as group 0.52, bird 0.28. Off for the
    # vectors (Chimera L2 gained, held-out L6 lost: model card, "Next"); CoLLEGe's
    # definitions read so (`CollegeConfig.define_lexemes`).
    pool_forms: bool = False
    # Candidates taken from this reader's own score over the whole vocabulary (0: none):
    # its weights on each word's slot, blank-prompt and prior evidence and its cosine to
    # the proposal, everything but the right context, which is read for them afterwards.
    # The slot's, the blank prompt's and the proposal's lists are each cut by one source
    # alone, and the fitted weights lean on all of them at once (31 on the proposal's
    # cosine): on DefGen dev at k = 3 the word was in those lists for 71% of items, in
    # them or among the fitted score's best 64 words for 75% (model card, "Candidates by
    # the fitted score").
    # Gathered for another reader's evidence (`candidate_features(gather=...)`), they
    # are weighed by a reader that asks for them only (`Candidates.extra`).
    from_score: int = 0

    def __post_init__(self):
        if self.weights is not None and len(self.weights) != len(FEATURES):
            raise ValueError(f"weights: {len(self.weights)} given, one per {FEATURES} needed")


# The evidence each candidate word w is scored on, one column each (`candidate_features`).
FEATURES = (
    "slot",  # sum over the examples of log p(w | left context)
    "slot_prior",  # the LM's prior log p(w) (`slot_prior`), once per example it is taken from
    "blank",  # sum over the examples of log p(w | fill-in-the-blank prompt)
    "blank_prior",  # that prompt's answer with no sentence (`blank_prior`), once per example
    "right",  # sum over the examples of log p(the next tokens | left context, w)
    "proposal",  # cosine of w's input row to the generator's proposal (0 without one)
)


def score_weights(config: ReaderConfig) -> torch.Tensor:
    """[F] the weights of `FEATURES` in a candidate's score: `config.weights`, or the ones
    the reader's first four versions were tuned to by hand on dev."""
    if config.weights is not None:
        return torch.tensor(config.weights)
    pw, bw = config.prior_weight, config.blank_weight
    return torch.tensor([1.0, -pw, bw, -bw * pw, 1.0, 0.0])


def fitted_reader(path: str | Path, base: ReaderConfig = ReaderConfig()) -> ReaderConfig:
    """`base` weighing its candidates' evidence with the weights of a
    `training/reader_weights.py` file (fitted at temperature 1)."""
    weights = json.loads(Path(path).read_text(encoding="utf-8"))["weights"]
    return replace(base, weights=tuple(weights), temperature=1.0)


def blank_prompt(sentence: str, shots: tuple[tuple[str, str], ...] = BLANK_SHOTS) -> str:
    """The few-shot prompt asking which word fills the ___ in `sentence`. A base LM of
    this size does not follow a bare instruction (the gold word's median rank was ~800 of
    the vocabulary on DefGen dev); three worked examples bring it to ~70-150."""
    return f"{worked_examples(shots)}Sentence: {sentence}\nMissing word:"


def worked_examples(shots: tuple[tuple[str, str], ...] = BLANK_SHOTS) -> str:
    """The part of every fill-in-the-blank prompt before its own sentence."""
    return "".join(f"Sentence: {s}\nMissing word: {w}\n\n" for s, w in shots)


# English's closed classes: determiners, pronouns, prepositions, conjunctions, auxiliary
# and modal verbs, and a few function adverbs. A made-up word is never one of them.
CLOSED_CLASS = frozenset(
    """a an the this that these those some any each every no all both either neither
    another such what which whose whom who whoever whatever whichever my your his her its
    our their mine yours hers ours theirs me him us them it he she they we you i myself
    yourself himself herself itself ourselves themselves one ones of in on at by for with
    from to into onto upon about above below over under between among through during
    before after since until till against toward towards across along around behind
    beyond within without via per than as like unlike despite and or but nor so yet if
    unless because although though while whereas whether when where why how then there
    here be is am are was were been being have has had having do does did done doing will
    would shall should can could may might must ought not also just only very too quite
    rather more most less least much many few several""".split()
)

# Left contexts with nothing to say about the next word but that one comes: the LM's
# mean next-token distribution after them is its prior over words in a sentence.
NEUTRAL_CONTEXTS = (
    "The", "A", "She saw the", "He was", "They", "I have a", "It is very", "We",
    "There is a", "My", "This is the", "You can", "He", "She will", "The old",
    "They were", "It was a", "I", "We need to", "The first", "His", "Her", "Our",
    "After the", "It looks", "The man", "Some", "She", "They all", "That was",
)  # fmt: skip


def word_tokens(lm: NonceLM) -> torch.Tensor:
    """[V] bool: tokens that are a whole open-class word on their own ('▁mind', '▁Mind'),
    not punctuation, digits, pieces of words, special tokens or closed-class words."""

    def compute() -> torch.Tensor:
        keep = [
            p.startswith("▁")
            and p[1:].isalpha()
            and len(p) > 2
            and p[1:].lower() not in CLOSED_CLASS
            for p in lm.pieces()
        ]
        return torch.tensor(keep, device=lm.device)

    return lm.memo("word_tokens", compute)


@torch.no_grad()
def slot_prior(lm: NonceLM) -> torch.Tensor:
    """[V] log p(w): the LM's next-token distribution averaged over neutral contexts."""

    def compute() -> torch.Tensor:
        prefixes = [lm.encode(text) for text in NEUTRAL_CONTEXTS]
        return torch.logsumexp(slot_logprobs(lm, prefixes), 0) - math.log(len(prefixes))

    return lm.memo("slot_prior", compute)


@torch.no_grad()
def blank_prior(lm: NonceLM, shots: tuple[tuple[str, str], ...] = BLANK_SHOTS) -> torch.Tensor:
    """[V] the fill-in-the-blank prompt's answer with no sentence around the blank."""
    prompt = blank_prompt("___.", shots)
    return lm.memo(("blank_prior", prompt), lambda: slot_logprobs(lm, [lm.encode(prompt)])[0])


@lru_cache(maxsize=1)
def _has_wordnet() -> bool:
    """Whether WordNet's files are there; where they are not, said once."""
    try:
        wordnet()
    except (RuntimeError, LookupError, OSError) as error:
        log.warning("the LM reader's candidates are read as they are, not at base forms: %s", error)
        return False
    return True


def base_form_ids(lm: NonceLM, ids: list[int]) -> list[int]:
    """Each token id as its headword's whole-word token (▁drained -> ▁drain, ▁tired
    stays); the id itself where the token is a headword already, WordNet does not know
    it, or the headword is not one token. Unchanged, with a log line, without WordNet."""
    if not _has_wordnet():
        return ids

    tokenizer, known = lm.tokenizer, lm.memo("base_form_ids", dict)
    out = []
    for i in ids:
        if i not in known:
            form = lm.pieces()[i][1:]
            base = headword(form)
            j = tokenizer.convert_tokens_to_ids("▁" + base)  # the unknown id if not one token
            known[i] = i if base == form.lower() or j == tokenizer.unk_token_id else j
        out.append(known[i])
    return out


def split_at_word(lm: NonceLM, word: str, examples: list[Example]) -> list[tuple]:
    """(ids before, ids after) the word's first occurrence, per example that uses it. An
    ending is the word's ("The wiggins are ripe": the slot reads bananas, the right
    context starts at " are"); read as text after a candidate, "s" follows banana, which
    the LM writes as one token, bananas, and a word whose plural it splits wins."""
    parts, pattern = [], inflected_pattern(word)
    for example in examples:
        match = pattern.search(example.text)
        if match is not None:
            before = example.text[: match.start()].rstrip(" ")
            parts.append((lm.encode(before), lm.encode(example.text[match.end() :], bos=False)))
    return parts


def example_word_ids(lm: NonceLM, word: str, examples: list[Example]) -> set[int]:
    """Ids of the whole-word tokens ('▁steel', '▁Steel') of every word the examples use
    but the new word itself, and of those words' base forms (expectations -> expectation)."""
    pattern, forms = inflected_pattern(word), set()
    for example in examples:
        for seen in re.findall(r"[^\W\d_]+", pattern.sub(" ", example.text)):
            forms.add(seen.lower())
    if _has_wordnet():
        forms |= {lemmatize(form) for form in forms}
    tokens = [f"▁{f}" for form in forms for f in (form, form.capitalize())]
    ids = set(lm.tokenizer.convert_tokens_to_ids(tokens))
    return ids - {lm.tokenizer.unk_token_id}


def left_contexts(lm: NonceLM, word: str, examples: list[Example]) -> list[list[int]]:
    """Token ids before the word's first occurrence, for each example that has some."""
    parts = split_at_word(lm, word, examples)
    return [parts[i][0] for i in with_left_context(lm, parts)]


def with_left_context(lm: NonceLM, parts: list[tuple]) -> list[int]:
    """Which of `split_at_word`'s parts have a left context (more than the BOS token)."""
    bos = len(lm.encode(""))
    return [i for i, (before, _) in enumerate(parts) if len(before) > bos]


@torch.no_grad()
def slot_logprobs(
    lm: NonceLM, prefixes: list[list[int]], shared: list[int] | None = None
) -> torch.Tensor:
    """[k, V] the LM's next-token log-probabilities after each prefix (one batch).

    `shared`: ids every prefix starts with (the blank prompt's worked examples, about
    three quarters of each prompt), read once per LM and kept; each prefix then reads
    only what follows them. Prefixes that do not all start with it are read whole."""
    if shared and all(len(p) > len(shared) and p[: len(shared)] == shared for p in prefixes):
        return _logprobs_after(lm, shared, [p[len(shared) :] for p in prefixes])
    ids, mask = lm.pad(prefixes, left=True)
    hidden = lm.hidden(ids, mask, None).last_hidden_state[:, -1]  # [k, d]
    return F.log_softmax(lm.logits(hidden, None).float(), dim=-1)


def _logprobs_after(lm: NonceLM, shared: list[int], rests: list[list[int]]) -> torch.Tensor:
    """[k, V] next-token log-probabilities after `shared` + each of `rests`, reading
    `shared` from a key/value cache kept on the LM (right padding: a causal LM's real
    tokens never see the pads after them)."""
    kept = lm.memo(("shared_prefix", tuple(shared)), lambda: _prefix_cache(lm, shared))
    ids, mask = lm.pad(rests, left=False)  # [k, R]
    hidden = _read_after(lm, copy.deepcopy(kept), len(shared), ids, mask)  # reading extends it
    last = torch.tensor([len(r) - 1 for r in rests], device=lm.device)
    hidden = hidden[torch.arange(len(rests), device=lm.device), last]  # [k, d]
    return F.log_softmax(lm.logits(hidden, None).float(), dim=-1)


def _prefix_cache(lm: NonceLM, prefix: list[int]):
    """The key/value cache of one token sequence, to be read after."""
    from transformers import DynamicCache

    ids = torch.tensor([prefix], device=lm.device)
    return lm.hidden(ids, torch.ones_like(ids), None, past=DynamicCache()).past_key_values


def _read_after(lm: NonceLM, cache, width: int, ids: torch.Tensor, mask: torch.Tensor):
    """[n, R, d] final states of n rows of ids ([n, R], mask [n, R]) read after one cached
    sequence of `width` tokens, which the n rows share (the cache is repeated in place)."""
    n = ids.shape[0]
    cache.batch_repeat_interleave(n)
    mask = torch.cat([torch.ones(n, width, dtype=mask.dtype, device=mask.device), mask], 1)
    positions = torch.arange(width, mask.shape[1], device=lm.device).expand(n, -1)
    return lm.hidden(ids, mask, None, past=cache, positions=positions).last_hidden_state


@torch.no_grad()
def blank_logprobs(
    lm: NonceLM,
    word: str,
    examples: list[Example],
    shots: tuple[tuple[str, str], ...] = BLANK_SHOTS,
    each: bool = False,
) -> torch.Tensor:
    """[V] the LM's answer to the fill-in-the-blank prompt, summed over the examples that
    use the word (product of experts, as for the slot); [k, V] one row per example with
    `each`. The blank takes the whole word, ending and all ("The ___ are ripe"), as the
    worked examples' answers are words."""
    pattern = inflected_pattern(word)
    blanks = [pattern.sub("___", e.text) for e in examples if pattern.search(e.text)]
    prompts = [lm.encode(blank_prompt(" ".join(b.split()), shots)) for b in blanks]
    answers = slot_logprobs(lm, prompts, shared=lm.encode(worked_examples(shots)))
    return answers if each else answers.sum(0)


class Candidates(NamedTuple):
    """The words the reader weighs and its evidence on each (`candidate_features`)."""

    rows: torch.Tensor  # [n] their rows of the input matrix, at base forms (repeats possible)
    features: torch.Tensor  # [n, F] the evidence, one column per `FEATURES`
    forms: torch.Tensor  # [n] the same words' tokens as read ("drowned" where rows has drown)
    # [n, E, F] the evidence from each of the E examples that use the word (summed over
    # them: `features`, but for the proposal's column, which is no example's)
    each: torch.Tensor | None = None
    # [n] bool: taken for a reader with `from_score` only (`candidate_features(gather=)`);
    # a reader without it gives them no weight, so its reading is what it was without them
    extra: torch.Tensor | None = None


class Reading(NamedTuple):
    """What the LM read the new word as: its candidates' rows and weights, and the vector."""

    rows: torch.Tensor  # [n] candidate rows of the input matrix (repeats possible)
    weights: torch.Tensor  # [n] softmax(score / temperature), summing to 1
    vector: torch.Tensor  # [d] the weighted mean of those rows
    forms: torch.Tensor  # [n] the candidates' tokens as read, before base forms

    def word_class(self, lm: NonceLM, allowed: Collection[str] | None = None) -> str | None:
        """The part of speech the examples use the word in, "n", "v", "a" or "r": the class
        WordNet's sense counts give the candidates' forms as read (`lexicon.class_shares`),
        weighed as the candidates are, among the `allowed` ones where the examples' syntax
        rules some out (`frames.allowed_classes`; ignored where the reading gives them no
        weight). None where WordNet knows none of them. On the 200 DefGen dev items the
        right class for 97% at k = 3, 88% at k = 1 (model card, "The examples' syntax in
        the class guess")."""
        if not _has_wordnet():
            return None
        spell = lm.pieces()
        mass: dict[str, float] = {}
        for form, weight in zip(self.forms.tolist(), self.weights.tolist()):
            for pos, share in class_shares(spell[form].lstrip("▁")).items():
                mass[pos] = mass.get(pos, 0.0) + weight * share
        kept = {pos: m for pos, m in mass.items() if allowed is None or pos in allowed}
        mass = kept if any(kept.values()) else mass
        return max(mass, key=mass.__getitem__) if mass else None

    def heaviest(self, n: int, least: float) -> list[tuple[int, float]]:
        """The `n` heaviest rows holding at least `least` of the weight each, [(row,
        weight)], a row's weight summed where base forms made it a candidate twice."""
        total: dict[int, float] = {}
        for row, weight in zip(self.rows.tolist(), self.weights.tolist()):
            total[row] = total.get(row, 0.0) + weight
        best = sorted(total.items(), key=lambda rw: -rw[1])[:n]
        return [(row, weight) for row, weight in best if weight >= least]

    def words(self, lm: NonceLM, n: int = 3, least: float = 0.01) -> list[tuple[str, float]]:
        """The heaviest words, spelt: [("anvil", 0.97), ...]."""
        spell = lm.pieces()
        return [(spell[row].lstrip("▁ Ġ"), round(w, 3)) for row, w in self.heaviest(n, least)]


@torch.no_grad()
def read(
    lm: NonceLM,
    word: str,
    examples: list[Example],
    config: ReaderConfig = ReaderConfig(),
    proposal: torch.Tensor | None = None,
) -> Reading | None:
    """The candidate words, each scored by the LM on every example (left: the slot's
    log-probability; right: the context that follows), weighted, and their expected
    input-embedding row; None when the examples leave nothing to read."""
    found = candidate_features(lm, word, examples, config, proposal)
    return None if found is None else weigh(lm, found, config)


def weigh(lm: NonceLM, found: Candidates, config: ReaderConfig) -> Reading:
    """The reading `config`'s weights and temperature make of the candidates' evidence
    (`candidate_features`): one set of evidence can be weighed more than one way."""
    evidence = score_weights(config).to(found.features)  # [F]
    if config.pool_forms and found.each is not None:
        scores = lexeme_scores(found, evidence)
    else:
        scores = found.features @ evidence  # [n]
    if found.extra is not None and not config.from_score:  # not gathered for this reader
        scores = scores.masked_fill(found.extra, float("-inf"))
    weights = torch.softmax(scores / config.temperature, dim=-1)  # [n]
    vector = weights @ lm.input_matrix[found.rows].float()
    return Reading(found.rows, weights, vector, found.forms)


def participles_as_read(lm: NonceLM, reading: Reading) -> Reading:
    """`reading` with each candidate read as a form WordNet also lists as an adjective
    ("strapping", "drained") at its own row rather than its base form's (strap, drain):
    where the word is an adjective, the participle is the word read. The same reading
    where no candidate is such a form."""
    if not _has_wordnet():
        return reading
    spell = lm.pieces()
    rows = reading.rows.clone()
    for i, (form, row) in enumerate(zip(reading.forms.tolist(), reading.rows.tolist())):
        if form != row and "a" in class_shares(spell[form].lstrip("▁")):
            rows[i] = form
    if torch.equal(rows, reading.rows):
        return reading
    vector = reading.weights @ lm.input_matrix[rows].float()
    return reading._replace(rows=rows, vector=vector)


def lexeme_scores(found: Candidates, weights: torch.Tensor) -> torch.Tensor:
    """[n] each lexeme's score on its best form ("birds" in one example, "bird" in the
    next), summed over the examples, given to the form that scores best on them all; the
    lexeme's other forms get -inf (no weight): the forms of a lexeme share a row of
    `found.rows`. The proposal's cosine, no example's evidence, is added once."""
    per_example = found.each @ weights  # [n, E]
    own = found.features @ weights  # [n]
    proposal = FEATURES.index("proposal")
    scores = torch.full_like(own, float("-inf"))
    lexemes: dict[int, list[int]] = {}
    for i, row in enumerate(found.rows.tolist()):
        lexemes.setdefault(row, []).append(i)
    for members in lexemes.values():
        forms = torch.tensor(members, device=own.device)
        best = forms[own[forms].argmax()]
        pooled = per_example[forms].max(0).values.sum()
        scores[best] = pooled + found.features[best, proposal] * weights[proposal]
    return scores


def soft_guess(
    lm: NonceLM,
    word: str,
    examples: list[Example],
    config: ReaderConfig = ReaderConfig(),
    proposal: torch.Tensor | None = None,
) -> torch.Tensor | None:
    """[d] expected input-embedding row over the candidate words (`read`'s vector); None
    when the examples leave nothing to read."""
    reading = read(lm, word, examples, config, proposal)
    return None if reading is None else reading.vector


def candidate_scores(
    lm: NonceLM,
    word: str,
    examples: list[Example],
    config: ReaderConfig = ReaderConfig(),
    proposal: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor] | None:
    """([n] the candidates' rows in the input matrix, [n] their pooled scores), or None
    when the examples leave nothing to read."""
    found = candidate_features(lm, word, examples, config, proposal)
    if found is None:
        return None
    return found.rows, found.features @ score_weights(config).to(found.features)


def candidate_features(
    lm: NonceLM,
    word: str,
    examples: list[Example],
    config: ReaderConfig = ReaderConfig(),
    proposal: torch.Tensor | None = None,
    gather: ReaderConfig | None = None,
) -> Candidates | None:
    """The candidates' rows in the input matrix, their evidence (`FEATURES`) and their
    forms as read, or None when the examples leave nothing to read.

    Candidates come from the slot's and the blank prompt's best words with the priors
    taken out as `config` says, and from the proposal's nearest words; the right context
    is read for all of them (or the best `right_pool` by the rest of their score). A
    reader with `from_score` (`config`, or `gather`: a second reader that will weigh the
    same evidence) adds its best words by its own score (`extra_candidates`), read on
    the right after the rest, so the others' evidence is what it was without them."""
    parts = split_at_word(lm, word, examples)
    with_left = with_left_context(lm, parts)
    prefixes = [parts[i][0] for i in with_left]  # `left_contexts`
    words = word_tokens(lm)
    seen = set()
    if config.exclude_example_words:
        seen = example_word_ids(lm, word, examples)
        words = words.clone()
        words[list(seen)] = False
    weights = score_weights(config).to(lm.device)
    slot = prior = blank = prior_blank = torch.zeros(lm.vocab_size, device=lm.device)
    slot_each = blank_each = None  # [k, V] per example, for `Candidates.each`
    candidates = []
    if prefixes:
        slot_each = slot_logprobs(lm, prefixes)
        slot = slot_each.sum(0)  # [V], product of experts
        prior = max(0, len(prefixes) - config.prior_kept) * slot_prior(lm)
        left = slot - config.prior_weight * prior  # each example's evidence over the LM's prior
        candidates += (
            left.masked_fill(~words, float("-inf")).topk(config.from_slot).indices.tolist()
        )
    if parts and config.from_blank:
        blank_each = blank_logprobs(lm, word, examples, config.blank_shots, each=True)
        blank = blank_each.sum(0)
        prior_blank = max(0, len(parts) - config.prior_kept) * blank_prior(lm, config.blank_shots)
        asked = blank - config.prior_weight * prior_blank
        candidates += (
            asked.masked_fill(~words, float("-inf")).topk(config.from_blank).indices.tolist()
        )
    if proposal is not None and config.from_proposal:
        candidates += nearest_words(lm, proposal, config.from_proposal).tolist()
    candidates = list(dict.fromkeys(candidates))  # [n], first occurrence kept
    if seen:  # the proposal's words, and words whose base form the examples use
        bases = base_form_ids(lm, candidates) if config.base_forms else candidates
        candidates = [c for c, b in zip(candidates, bases) if c not in seen and b not in seen]
    if not candidates or not (prefixes or config.right_tokens):
        return None
    index = torch.tensor(candidates, device=lm.device)
    near = torch.zeros(len(index), device=lm.device)
    if proposal is not None:
        near = F.cosine_similarity(lm.input_matrix[index].float(), proposal.to(near)[None], dim=-1)
    evidence = Evidence(slot, prior, blank, prior_blank, slot_each, blank_each, with_left)
    features = evidence.features(index, near)  # [n, F], the right context's column filled below
    if config.right_tokens > 0:
        scores = features @ weights  # the rest of the evidence: what the right context adds to
        if 0 < config.right_pool < len(candidates):
            ranking = scores
            if config.cut_on_right:
                first = replace(config, right_tokens=config.cut_on_right)
                ranking = scores + right_scores(lm, parts, index, first, ranking=scores)
            kept = ranking.topk(config.right_pool).indices.sort().values  # keep their order
            index, features, scores = index[kept], features[kept], scores[kept]
        right_each = right_scores(lm, parts, index, config, scores, each=True)  # [n, E]
        features[:, FEATURES.index("right")] = sum(right_each.unbind(1))  # in the examples' order
    else:
        right_each = torch.zeros(len(index), len(parts), device=lm.device)
    each = evidence_each(lm, parts, index, evidence, right_each, config)
    found = Candidates(candidate_rows(lm, index, config), features, index, each)
    asker = gather if gather is not None and gather.from_score else config
    if asker.from_score:
        taken = set(candidates) | seen
        found = extra_candidates(lm, parts, found, evidence, words, taken, proposal, config, asker)
    return found


def candidate_rows(lm: NonceLM, forms: torch.Tensor, config: ReaderConfig) -> torch.Tensor:
    """The input rows the candidates `forms` (as read) are weighed at: each one's base form
    where `config.base_forms` says so, else the form itself."""
    if not config.base_forms:
        return forms
    return torch.tensor(base_form_ids(lm, forms.tolist()), device=lm.device)


class Evidence(NamedTuple):
    """Every word's left-side evidence, read once (`candidate_features`): [V] summed over
    the examples (the priors as taken out), [E', V] per example that has it."""

    slot: torch.Tensor
    prior: torch.Tensor
    blank: torch.Tensor
    prior_blank: torch.Tensor
    slot_each: torch.Tensor | None
    blank_each: torch.Tensor | None
    with_left: list[int]  # the examples with a left context, the rows of `slot_each`

    def features(self, index: torch.Tensor, near: torch.Tensor) -> torch.Tensor:
        """[n, F] the words `index`'s evidence (`FEATURES`), their cosines to the proposal
        `near` ([n]) beside it, the right context's column 0 (it is read for a few only)."""
        columns = [self.slot, self.prior, self.blank, self.prior_blank]
        return torch.stack([*(c[index] for c in columns), torch.zeros_like(near), near], dim=1)


def evidence_each(
    lm: NonceLM,
    parts: list[tuple],
    index: torch.Tensor,
    evidence: Evidence,
    right_each: torch.Tensor,
    config: ReaderConfig,
) -> torch.Tensor:
    """[n, E, F] the candidates' evidence example by example (`Candidates.each`), each
    prior taken out shared among the examples it was taken from."""
    each = torch.zeros(len(index), len(parts), len(FEATURES), device=lm.device)
    column = {name: i for i, name in enumerate(FEATURES)}
    with_left = evidence.with_left
    if evidence.slot_each is not None:
        share = max(0, len(with_left) - config.prior_kept) / len(with_left)
        each[:, with_left, column["slot"]] = evidence.slot_each[:, index].T
        each[:, with_left, column["slot_prior"]] = share * slot_prior(lm)[index, None]
    if evidence.blank_each is not None:
        share = max(0, len(parts) - config.prior_kept) / len(parts)
        each[:, :, column["blank"]] = evidence.blank_each[:, index].T
        prior_each = share * blank_prior(lm, config.blank_shots)[index, None]
        each[:, :, column["blank_prior"]] = prior_each
    each[:, :, column["right"]] = right_each
    return each


def extra_candidates(
    lm: NonceLM,
    parts: list[tuple],
    found: Candidates,
    evidence: Evidence,
    words: torch.Tensor,
    taken: set[int],
    proposal: torch.Tensor | None,
    config: ReaderConfig,
    asker: ReaderConfig,
) -> Candidates:
    """`found` and `asker.from_score` more: the words `asker`'s weights score best on the
    evidence every word already has (all of `FEATURES` but the right context) that are
    not candidates yet, their right context then read (its shortlist and full re-reads
    apart from the others', ranked by `asker`'s score), marked `extra`."""
    near = torch.zeros(lm.vocab_size, device=lm.device)
    if proposal is not None:  # every row's cosine to it (the pool's, per candidate, alike)
        norms = lm.memo("input_row_norms", lambda: lm.input_matrix.float().norm(dim=-1))
        unit = F.normalize(proposal.float().to(lm.device), dim=0)
        near = (lm.input_matrix.float() @ unit) / norms.clamp_min(1e-8)
    every = evidence.features(torch.arange(lm.vocab_size, device=lm.device), near)  # [V, F]
    left = every @ score_weights(asker).to(lm.device)  # the right context's column is 0
    allowed = words.clone()
    allowed[list(taken)] = False
    best = left.masked_fill(~allowed, float("-inf")).topk(asker.from_score)
    index = best.indices[best.values > float("-inf")]
    if not len(index):
        return found
    features = every[index]
    right_each = torch.zeros(len(index), len(parts), device=lm.device)
    if config.right_tokens > 0:
        right_each = right_scores(lm, parts, index, config, left[index], each=True)
        features[:, FEATURES.index("right")] = sum(right_each.unbind(1))
    each = torch.cat([found.each, evidence_each(lm, parts, index, evidence, right_each, config)])
    extra = torch.arange(len(found.rows) + len(index), device=lm.device) >= len(found.rows)
    return Candidates(
        torch.cat([found.rows, candidate_rows(lm, index, config)]),
        torch.cat([found.features, features]),
        torch.cat([found.forms, index]),
        each,
        extra,
    )


def nearest_words(lm: NonceLM, vector: torch.Tensor, n: int) -> torch.Tensor:
    """[n] ids of the whole-word tokens nearest `vector` by cosine: the app's own faiss
    index of the input rows (`backends.neighbours`), not a second copy of the matrix."""
    from backends.neighbours import vocabulary_index

    found = vocabulary_index(lm, "input").search(vector, n)[0]
    return torch.tensor([w.token_id for w in found], device=lm.device)


@torch.no_grad()
def right_scores(
    lm: NonceLM,
    parts: list[tuple],
    candidates: torch.Tensor,
    config: ReaderConfig,
    ranking: torch.Tensor | None = None,
    each: bool = False,
) -> torch.Tensor:
    """[n] summed log p(next `right_tokens` tokens | left context, candidate) over examples;
    [n, E] one column per example of `parts` with `each` (0 where nothing follows the word).

    Per example, the left context is read once and its key/value cache shared by the n
    candidates, which then read only [candidate, right context but its last token]: n x R
    tokens instead of n whole sentences (the last token is only predicted, never read).

    With more than `config.exact_right` candidates, each token's softmax is first taken
    over a shortlist the candidates share; the best `exact_right` by `ranking` (their
    other scores, if any) plus these are then scored with the full softmax, so an
    under-normalised candidate cannot stay on top (model card, "A shared shortlist")."""
    n = len(candidates)
    shared = 0 < config.exact_right < n
    total = torch.zeros(n, device=lm.device)  # summed in the examples' order, as ever
    scores = torch.zeros(n, len(parts), device=lm.device)  # [n, E]
    readings = []  # per example read: its column, [n, R, d] final states, [R] the tokens
    for column, (before, after) in enumerate(parts):
        after = after[: config.right_tokens]
        if not after:
            continue
        follow = torch.tensor(after, device=lm.device)  # [R]
        ids = torch.cat([candidates[:, None], follow[:-1].expand(n, -1)], dim=1)  # [n, R]
        hidden = _read_after(lm, _prefix_cache(lm, before), len(before), ids, torch.ones_like(ids))
        if shared:
            found = lm.shared_target_logprobs(hidden, follow, config.right_shortlist)
            readings.append((column, hidden, follow))
        else:
            found = lm.target_logprobs(hidden, follow.expand(n, -1))  # [n, R]
        scores[:, column] = found.sum(-1)
        total += scores[:, column]
    if readings:
        best = (total if ranking is None else ranking + total).topk(config.exact_right).indices
        exact = torch.zeros(len(best), device=lm.device)
        for column, hidden, follow in readings:
            found = lm.target_logprobs(hidden[best], follow.expand(len(best), -1))
            scores[best, column] = found.sum(-1)
            exact += scores[best, column]
        total[best] = exact
    return scores if each else total
