"""Write benchmarks/RESULTS.md from the committed run records in benchmarks/results/*.json:
`python -m benchmarks report`. One table per task (rows of every file of that task), then
the exact commands, machines and dates the numbers came from."""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path

from backends.definitions import ORACLE
from backends.learners import learner_names
from backends.shared_data import REPO_ROOT
from benchmarks import intervals
from benchmarks.results import row_kind
from benchmarks.tasks import TASKS

log = logging.getLogger(__name__)

RESULTS_DIR = REPO_ROOT / "benchmarks" / "results"
REPORT = REPO_ROOT / "benchmarks" / "RESULTS.md"

PREAMBLE = """\
# Benchmark results

Regenerate with `python -m benchmarks report` (reads `benchmarks/results/*.json`).
Each task is declared in `benchmarks/tasks.py`; every row is one learner (at a number of
shots) over `n` items. Choices that shape the numbers:

- The blank / `<nonce>` is filled with a made-up string WordNet does not know ("dax";
  Cloze candidates: dax, wug, blicket, toma, fep), so `definition_reader` cannot look the
  real word up; it reads only the string's spelling here (no definition is given).
- Word reference vector: mean of the LM's input embeddings of the tokens of " w"; cosine.
  Chimera and Definitional Nonce score the learned *input* vector. `cache`'s input vector
  is the centroid (its knowledge sits in the kNN store), so it equals `centroid` there;
  `prompting`'s is random (its knowledge sits in the prompt).
- Token tuning runs at the app's default, TT-4 (4 Adam steps, lr 0.01, L2 0.01, 2
  replay sentences per step, initialised at the centroid, both vectors put back at the
  LM's row length after every step). Older rows labelled TT-2 ran 2 steps without that.
  Rows named `token_tuning (keep best)` are TT-4 returning the vectors where its objective
  was lowest, the start included (`TokenTuningConfig.keep_best`), measured on dev and not
  shipped (the README's "One word, six learners").
- CoLLEGe (`college`) is the shipped generator in `assets/college/` with the frozen LM as
  a second reader (`backends/learners/lm_reader.py`; the model card says how). Rows
  named `college (generator only)` are the generator alone, before the reader; rows
  named `college (reader v1)` are the reader before it also asked the LM outright (no
  `from_blank` in their config); rows named `college (vectors only)` are the reader's
  second version with the examples not yet in front of the definition prompt (no
  `examples_in_prompt` in their config: the vectors, so Chimera and Nonce, are the same);
  rows named `college (reader v2)` are the reader before it took half the LM's prior out
  of each example's evidence and read its candidates at their base forms (no
  `prior_weight` in their config's `reader`); rows named `college (reader v3)` are the
  reader before its fourth version: 16 + 16 candidates, nouns as the blank prompt's
  worked examples, every right-context softmax over the whole vocabulary (no
  `exact_right` in their config's `reader`); rows named `college (reader v4)` are the
  reader before its fifth version, when a word the examples themselves use could be read
  as the new word (no `exclude_example_words` in their config's `reader`); rows named
  `college (reader v5)` are the learner before its definitions of three examples or
  more were written from the fitted weights' sharper reading (no `fitted_from` in their
  config; its vectors, and so its Chimera and Nonce rows, are the sixth version's); rows named
  `college (reader v6)` are the learner before its seventh version, when a participle was
  read at its verb's base form even where WordNet counts it mostly as an adjective (tired
  read as tire; the learner's code, not its config, changed); rows named
  `college (reader v8)` are the learner before its definition probe named the class the
  examples use the word in ('The verb "dax" is defined as' for a verb, the adjective's
  likewise; no `class_probes` in their config; run with the seventh version, whose
  definitions on these sets the eighth's repeat word for word; the vectors, and so Chimera
  and Nonce, do not change); rows named
  `college (reader v9)` are the learner before its definitions read the new word's
  lexeme, its best form in each example (no `define_lexemes` in their config), and
  before its class guess kept to the classes the examples' syntax allows (no
  `class_frames`; on these sets that changed 9 and 1 definitions and no score); rows named
  `college (reader v10)` are the learner before an adverb was a class of its own (its
  class guess weighed nouns, verbs and adjectives; its code changed, not its config: 2 of
  400 dev definitions and none held out changed, no score moved); rows named
  `college (reader v11)` are the learner before the reading its definitions of three
  examples or more are written from also weighed the fitted score's own best words (no
  `define_from_score` in their config; with one or two examples, and its vectors, so
  Chimera and Nonce, the same); rows named
  `college (quoted examples)` are the fourth version with its examples set before the
  definition prompt as a quoted usage note instead of a paragraph (`examples_in_prompt`
  "quoted" in their config),
  measured and not kept (the model card's "Quoted examples"); rows named `college (fitted
  reader)` and `college (fitted reader, no proposal)` are the fourth version with its
  reader's evidence weighed as `training/reader_weights.py` fitted it (`weights` in their
  config's `reader`), measured and not kept ("Learned weights for the reader's
  evidence"); rows named `college (mixed readings)` are the fourth version with
  `define_readings=3` in its config: each definition written from a mixture of the
  three heaviest words it read rather than from their mean vector, measured and not kept
  ("Definitions from a mixture of the readings"); rows named `college (lexeme vectors)`
  are the shipped learner with its vectors' reading, too, scoring the new word's lexeme on
  its best form in each example (`pool_forms` true in their config's `reader`; a scratch
  copy with that default), measured on Chimera and Nonce and not shipped ("Next"); rows
  named `college (before the linear head)` are the learner's Chimera and Nonce rows before
  its input vector blended in the linear head's (all-mpnet-base-v2 through one linear map:
  no `linear_head_weight` in their config; the model card's "A bigger encoder for the
  vectors"),
  and its Cloze rows before a filled sentence read the word through its one
  reading (`benchmarks/cloze.as_read_in_text`: 0.725 on the first 40 either way); its
  definitions, and so DefGen and the tournament, did not change. Rows named `college
  (6 000-word head)` are the learner with its linear head fitted on 6 000 WordNet pool
  words (ridge 1e4), before the shipped head refitted on all 20 376 (ridge 3e4; the
  model card's "Which layer, and how many words"); rows named `college (common directions
  kept)` are that 20 376-word head before the top 8 principal directions of its training
  words' vectors were taken out of both parts of the input vector's blend (the model
  card's "The common directions taken out"; `CollegeConfig.common_directions=0`); their
  records (`*-all-words-head*.json`) ran from a scratch copy with that head in place
  before it shipped, byte for byte the head that shipped.
  Records named `*-h100.json` ran on
  an H100, `*-h200.json` on an H200. Its training never saw an evaluation word (see
  `training/corpus.py`); the dev files here were read during training only to log
  progress.
- DefGen: first sentence of a generation (<= 32 new tokens) after
  `The word "dax" is defined as`, decoded as every definition is (greedy, the word banned
  from its own definition, no repeated word trigram, a content word said once and no word
  twice in a row, a word quoted alone never opening a second quotation, no sentence
  stopping on an article, a possessive, a preposition or a conjunction, plain text only:
  `backends/decoding.py`; records from 2026-11-24 on join a word's pieces for the trigram
  rule and skip a first line without a word, those before compared token by token; the
  once-rule from task version 3 on, the quotation rule from version 4; the plain-text
  rule, no control token or markup, came after every record and changes none of them, as
  none holds a '<' or '>'; the stop rule, `finish_sentence` in a record's decoding, from
  `defgen-{dev,test}-finished.json` on (token tuning's from
  `defgen-{dev,test}-token-tuning-particles.json`, where it changed 1 of its 600
  definitions): on dev it changed 36 of prompting's 400 definitions, 6 of
  college's and of the oracle's, 0-1 of the others'; held out 18, 2, 1 and 0-1; a
  phrasal verb's preposition allowed to end it and no line break inside an open
  quotation, `particle_ends` and `close_quotes`, from `defgen-{dev,test}-particles.json`
  and `defgen-{dev,test}-token-tuning-particles.json` on: 3 of 2 400 dev and 3 of 1 200
  held-out definitions changed, none of the oracle's; no stop before a content word is
  said or right after a colon, and the shown sentence not ended inside an open bracket
  or after "e.g." nor begun with a comma or colon, `content_first`, `colon_goes_on`,
  `brackets_go_on` and `drop_lead_marks`, from `defgen-{dev,test}-content.json` and
  `defgen-{dev,test}-token-tuning-content.json` on: 8 of 2 400 dev and 4 of 1 200
  held-out definitions changed, no identification, prompting's 'you can' -> 'you can
  make', the oracle's '"meeting" (1999, p.' -> '"meeting" (1999, p. 10).'); no stop on
  a modal verb or on "be" or "have" after one, `modals_go_on`, came after those records
  and changes none of them, as none of their definitions stops there; no sentence end
  inside an open quotation and no spaces just inside quotation marks, `quotes_close` and
  `tidy_quotes`, from `defgen-{dev,test}-quotes.json` and
  `defgen-{dev,test}-token-tuning-quotes.json` on (with `modals_go_on`): 25 of 2 400
  dev and 15 of 1 200 held-out definitions changed (token tuning's 5 of 400 and 4 of
  200), all but 2 and 3 (1 and 1) of them by the spaces alone, none of the oracle's, no
  identification ('"the part of the body that is below the knee.' -> '... below the
  knee" and is used to describe the lower leg.'); a definition near its 32-token budget
  winding down to a sentence end (in the last 12 tokens every allowed sentence end half
  a nat a token likelier), `wind_down`, from `defgen-{dev,test}-wind.json` and
  `defgen-{dev,test}-token-tuning-wind.json` on: on dev every definition of the
  definition reader's changed (its list of quoted function words now ends after "some")
  and 165 of the other 2 400 (token tuning's 33 of 400; '"to take possession of, to
  possess, ... to be in charge,' -> '... to hold."'), definitions of 18 words or more
  without a full stop (cut, or ended at a line break) 83 -> 11 of the five learners' and
  the oracle's 2 400, identification by one item at most (college 0.37 / 0.50 -> 0.375 /
  0.505, the definition reader 0.03 -> 0.025); held out 90 of 1 200 and all the
  definition reader's (token tuning's 18 of 200), 41 -> 3 long without a full stop, the
  oracle 0.52 -> 0.51, the definition reader 0.04 -> 0.05, every other learner unchanged;
  no space between a closing quotation mark and the stop after it (`tidy_stops`) came
  after every record: 3 of the 3 600 definitions in `defgen-{dev,test}-wind.json` show
  one ('"a part of the human being" .'), and tidied, each keeps its scores (rescored with
  `benchmarks.defgen.score_samples`, a scratch script that reproduced the recorded ones).
  Scores:
  `identified` (closer, by mean-pooled all-MiniLM-L6-v2 sentence embedding cosine, to its
  own reference than to each of 29 others drawn from the same file, or to all others when
  a run has fewer than 30 items; chance 1/30), `degenerate` (empty, says the word,
  repeats a word 3-gram, or, from task version 3 on, says a content word three times or a
  word right after itself, or, from version 4, quotes the same thing twice, or, from
  version 6, says "do" three times or babbles: 8 words or more, under 15% of them content
  words; version 4 records were read again as version 6 in place, `python -m benchmarks
  rescore`, each with a note), BERTScore
  F1 with all-MiniLM-L6-v2, layer 6 (its last), greedy cosine matching, no idf, no
  baseline rescaling (unrelated sentences still score well above 0: compare rows with
  each other), ROUGE-L F1. The `oracle` row is the LM defining
  the real word (its own tokens, same probe and decoding); `gap_closed_*` = (learner -
  centroid) / (oracle - centroid). Every definition is in the run record's `samples`.
  `names_word`: the definition says the real word or one of its forms. From 2026-11-29
  those are English's spellings of its endings where WordNet reads them as its forms or
  does not know them, and WordNet's irregular forms (`backends.word_forms`: "card" is no
  longer car + d, "flower" flow + er, "stared" star + ed; "written" is now write's), where
  records before then read any stem and ending; re-read so, 11 of the 78 734 recorded
  definitions would name their word ("written", "rung", "sent"; 8 of them in records
  that keep `names_word`) and 13 masked texts would change (a scratch scan of every
  record): the records keep the values they were made with. The oracle is
  banned from its word while decoding and a learner only from its new token, so a
  learner whose definition is the LM's definition of the word it read the new word as
  (college) may name it ('"to bruise" or "to cause pain"'): `identified_masked` is
  identification with the real word's forms masked (as "dax") in every definition, the
  oracle's too, what a definition says of the word besides its name. Both were added on
  2026-11-28 to the version-4 records by `python -m benchmarks rescore` (each record's
  note says so), which recomputed every recorded identification on the way unchanged.
- DefGen rows of `college` from 2026-11-26 on also say what its LM reader read the word
  as (each sample's `read_as`, the heaviest words and their weights): `read_first` is the
  share of items whose heaviest word is the real word, `identified_read_first` /
  `identified_read_other` identification on those and on the rest; `python -m
  benchmarks.read_as RECORD` splits a record by part of speech beside the oracle. From
  task version 4 each sample also keeps `read_rank`, the real word's place among every
  word the reader weighed (-1: not one of them), and the rows `read_top5` / `read_weighed`
  (the real word among the five heaviest / anywhere among them): how far a better ranking
  of the same candidates could go.
- `defgen.test.jsonl` is a held-out test file of our own (100 WordNet words drawn after
  the dev words, `benchmarks/build_wordnet_sets.py`): nothing was tuned on it, and its
  words are excluded from any training. Runs on it name the file in their command.
- `defgen.test.natural.jsonl` holds the same 100 words and references in sentences a
  user would type: three full sentences per word, in its reference's sense, written for
  it on 2026-11-29 before any learner read them, and run once (`defgen-test-natural.json`).
  The oracle does not read sentences, so its rows are the WordNet file's.
  `defgen.test.natural2.jsonl` is a second author's sentences for the same words, and
  `defgen.dev.natural.jsonl` the 200 dev words in sentences written the same way (both
  by helper sessions that had not seen the first file; a split to tune on).
- DefGen's `oracle_in_context` rows (from 2026-11-29) are the oracle after the item's
  first k examples, the real word in them, set before its probe as `college` sets its
  own (`benchmarks.defgen.define_in_context`): the ceiling for a learner that reads the
  examples, where the plain oracle defines the word's commonest sense. Here the real word
  goes into the placeholder as it is, the ending after it kept (`benchmarks.data.with_nonce`:
  the dev endings file's "<nonce>ed" for *occur* reads "occured"); the app's real-word
  card and the arena's oracle put it in a made-up word's place with
  `backends.word_forms.with_real_word`, which from 2026-11-29 spells WordNet's irregular
  form where it has just one (mouse + s -> mice, occur + ed -> occurred).
- `defgen.dev.endings.jsonl` / `defgen.test.endings.jsonl` (`python -m
  benchmarks.build_endings`) are the DefGen items whose WordNet sentences use the word
  with a regular ending, kept after the nonce ("feints and <nonce>s", where DefGen masks
  the whole word): 73 dev and 35 held-out items. Their records, in
  `benchmarks/results/endings/`, are not in these tables (their items are a part of
  DefGen's, their identification among 30 of their own references); the model card's
  "The word with an ending, read whole" has them.
- `defgen.adverbs.dev.jsonl` / `defgen.adverbs.test.jsonl` (`python -m
  benchmarks.build_adverbs`) are 30 + 30 WordNet adverbs built as DefGen's words are
  (DefGen has none); their records, in `benchmarks/results/adverbs/`, are not in these
  tables either: the model card's "Adverbs" has them.
- `benchmarks/results/copy-ban/` holds DefGen (dev and held out) and tournament runs with
  `copy_cosine=0.75` in their decoding (the known word a learned vector copies banned,
  with its inflections, and the oracle's word's inflections), run as a task version 5
  of their own and not kept (held out, college's masked identification did not move and
  its plain identification fell), and college's definitions of the written-sentence files
  with and without the ban (`college-*-natural*.json`, 2026-11-29: on the held-out files
  plain identification fell again); not in these tables: the model card's "Definitions
  that name the word they read" has them.
- `benchmarks/results/tt-steps/` holds token tuning's runs at other step counts on the
  written dev sentences at k = 3 (`--tt-steps 2`, `8`, and `16` on the first 100 items;
  2026-12-01): 8 and 16 fit the examples better and define the word worse, 2 no better
  than the shipped 4; not in these tables: the README's token-tuning notes (under the
  florp example) have them.
- `benchmarks/results/participles/` holds college's DefGen runs with an adjective's
  participle as read defined as itself (`CollegeConfig(adjective_participles=True)`,
  2026-12-02; measured, not kept) beside the shipped records: dev 1 of 400 definitions
  changed, the written dev sentences 0 of 600, held out 0 of 200, no score moved; not in
  these tables: the model card's "An adjective's participle as read" has them.
- DefGen records of task version 1 (greedy decoding without the controls, no
  identification) were removed when the decoding changed; they are in git history.
- Tournament: per DefGen item a random pair among the learners and the oracle and a
  random k in 1..3; a degenerate definition loses to a usable one (both: "both bad"),
  otherwise the one whose cosine to its own reference beats the best of the 29 others by
  more wins (from task version 5, with the real word masked in both definitions, as
  `identified_masked`: naming the word is no margin of its own), a difference <= 0.01 is
  a tie; online Elo (init 1000, K 4) and
  Bradley-Terry with 100 bootstrap rounds (95% interval). Task version 1 rows were
  judged by BERTScore F1 to the reference instead.
- Chimera: the `oracle` row is the mean of the reference vectors of the two words a
  chimera was made from (`sources.dev.tsv`); `of_oracle` = a learner's ρ / the oracle's.
- Definitional Nonce candidates: the 77,636 WordNet single-word lemmas ∪ the gold words.
- perf: one process measures everything side by side; definitions there are capped at 16
  new tokens. Decoding per token is one greedy sequence, (time for 17 tokens - time for
  1) / 16, against its floor: the weights' bytes (each read once per token; the input
  embedding's one row left out, the output layer as int8 plus its fp32 outlier columns
  in the `int8 head` rows) / the bandwidth of a 512 MB tensor copy timed in the same run
  (bytes read + written, as STREAM counts); `head_s` is the output layer alone (one row);
  from 2026-11-26, `body_s` is the blocks' linear products alone, one row of random input
  through each as that kernel reads them (the lean step's joint products where it has
  them), and `rest_s` what a token takes besides (norms, RoPE, attention, the decoding
  rules, Python): `seconds` - `head_s` - `body_s`, each timed apart. `all
  (fp32 head)` / `all (int8 head)`: every learner's definition in one batched
  generation, each learner's alone, and the batch over one learner's mean
  (`--decode-only` runs only these and the decode rows). Since 2026-11-25 a third kernel
  is measured beside those two, `int8 head, packed body`: the blocks' linear layers read
  through oneDNN's packed weights (`backends/packed_linear.py`); the rows without it
  read them through plain `F.linear`, as every earlier record did. Since 2026-11-25
  (late) a `lean step` kernel is measured too: each token after the prompts through
  `backends/decode_step.py` instead of transformers' forward (the shipped setting: on the
  CPU with the int8 head and the packed body; on CUDA `fp32 head, lean step, CUDA
  graph`, beside the lean step without the graph and transformers' forward); every row
  without it, earlier records' included, decoded through transformers' forward, which
  also ran the blocks once more after a definition's last token. Since 2026-11-28 the
  lean step is also measured reading the blocks' weights as fp16 (`..., fp16 weights`,
  `backends/half_body.py`; the shipped setting on the CPU from then on): its floor counts
  those weights at 2 bytes, and the rows without it read them as fp32. The kNN store holds
  Gemma's own final hidden states (what the cache stores) over WordNet glosses and usage
  examples joined into ~64-token passages (`benchmarks/knn_vectors.py`): 109,000 computed
  keys, and 1,000 queries from
  later text; the 10^6 rows add perturbed copies of those keys (Gaussian noise of 0.5 x
  each coordinate's sd), an approximation of a million real states. k = 16; recall@10
  and @16 against exact search; `recall_at_10_ties` also counts a found key whose exact
  cosine ties the exact 10th (the states hold exact duplicates, whose order exact search
  breaks arbitrarily); `bytes_per_vector` is the serialised faiss index (codes, ids,
  cells) over its size, what RAM holds (exact: 4 x 640). IVF-PQ: sqrt(n) cells, 32 8-bit
  sub-quantisers, 32 cells probed; IVF-PQ-R: the same plus an 80-byte PQ code of the
  residual that re-ranks 8 x k candidates; both on the L2 distance of unit vectors.
  IVF-PQ + disk (the store's choice from 10^5 keys): fast-scan IVF-PQ (64 4-bit
  sub-quantisers, 32 bytes), 64 cells probed for 512 candidates, re-ranked by exact
  cosine read from a memory-mapped file of the unit keys (`disk_bytes_per_vector`;
  float32, or float16 in the `fp16` row); its `query_ms` is the whole search, cosines
  included, with the file in the page cache (it was just written; `query_ms_cold`: its
  pages dropped first with posix_fadvise, on a virtual disk the host may cache);
  `disk_touched` is the share of the file's 4 KiB pages that the 1,000 queries'
  candidates lie on. Runs used `--threads 1` (torch and faiss) on 2 cores shared with
  other benchmark processes.
- int8: greedy definitions (one learner, k examples, DEFAULT_DECODING) of n DefGen dev
  items with the fp32 and the int8 output layer, one item at a time, in one process;
  `matching` = word-for-word identical; the record lists the ones that differ. Since
  2026-11-24 the int8 layer only shortlists 64 tokens per row, which the fp32 layer
  re-scores (`backends/int8_head.py`); the record before that (int8 logits throughout:
  27 of 40 matching, 1.58x) is in git history. Since 2026-11-25 the learner also learns
  under each layer (`learn` rows): with the int8 layer on, college's LM reader takes
  its right-context scores' normaliser from it (`NonceLM.target_logprobs`), so its
  rows compare the vectors as well as the decoding. College rows of other tasks made
  before 2026-11-25 read right contexts through the fp32 layer.
- packed: as int8, for the body's linear layers plain (`F.linear`) against packed
  (oneDNN), every learner given (each learns under each), and the oracle's definitions
  (decoding alone); `matching` per learner.
- steps: as packed, for each token decoded through transformers' forward against the
  lean step (`backends/decode_step.py`; on a GPU replayed as a CUDA graph).
- half: as packed, for the lean step reading the blocks' weights as fp32 against fp16
  (`backends/half_body.py`, fp32 inputs and sums); `int8`, `packed` and `steps` records
  from 2026-11-28 on decode with fp32 weights in both of their variants.
- Rows with a `--limit` cover the first n items of the file; the expensive learners
  (token_tuning, cache) ran on fewer items than the cheap ones, so compare within n: the
  cheap learners were also run on those first n items. In the headline a cell with
  "(n=…)" covers fewer items than the rest of its column.
"""


def load_runs(folder: Path) -> list[dict]:
    runs = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.json"))]
    for run, path in zip(runs, sorted(folder.glob("*.json"))):
        run["_file"] = path.name
    return runs


def _cell(value) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e4 else f"{value:,.0f}"
    return str(value)


def _config_label(row: dict) -> str:
    config = row.get("config") or {}
    return config.get("label", "")


def table(rows: list[dict]) -> list[str]:
    """A Markdown table over the union of the rows' keys (config reduced to its label)."""
    columns = list(dict.fromkeys(k for row in rows for k in row if k not in ("config", "samples")))
    if any(_config_label(r) for r in rows):
        columns.append("config")
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        values = [_config_label(row) if c == "config" else _cell(row.get(c)) for c in columns]
        lines.append("| " + " | ".join(values) + " |")
    return lines


# The headline: one row per learner, one column per (task, shots, metric). Where a
# learner ran on fewer items than the others in a column, its n is shown beside it.
HEADLINE_COLUMNS = (
    ("chimera", 2, "spearman", "Chimera L2 ρ"),
    ("chimera", 4, "spearman", "L4 ρ"),
    ("chimera", 6, "spearman", "L6 ρ"),
    ("nonce", 1, "mrr", "Nonce MRR"),
    ("nonce", 1, "median_rank", "median rank"),
    ("defgen", 1, "identified", "DefGen identified k=1"),
    ("defgen", 3, "identified", "k=3"),
    ("defgen", 1, "identified_masked", "identified, word masked k=1"),
    ("defgen", 3, "identified_masked", "k=3"),
    ("defgen", 3, "names_word", "names the word k=3"),
    ("defgen", 3, "degenerate", "degenerate k=3"),
    ("defgen", 1, "bertscore_f1", "BERTScore k=1"),
    ("defgen", 3, "bertscore_f1", "k=3"),
    ("defgen", 1, "rouge_l", "ROUGE-L k=1"),
    ("defgen", 3, "rouge_l", "k=3"),
    ("cloze", None, "accuracy", "Cloze acc."),
    ("tournament", None, "elo", "Tournament Elo"),
)
README_START, README_END = "<!-- headline:start -->", "<!-- headline:end -->"


def headline(runs: list[dict]) -> list[str]:
    """The learner x task table. Each column uses the largest n that every shipped learner
    in it (and the oracle) was run at, so a column compares like with like; a row without
    a value at that n (a variant measured and not kept, such as "college (quoted
    examples)", or an older version) shows its largest-n value with "(n=…)" beside it.
    The n of each column follows."""
    rows: dict[tuple, dict[int, dict]] = defaultdict(dict)  # (task, learner, shots) -> n -> row
    dates: dict[tuple, str] = {}  # where two runs have a learner at one n, the newer's row
    for run in runs:
        for row in run["results"]:
            if row_kind(row) != "learner":
                continue
            shots = row["shots"] if run["task"] in ("chimera", "nonce", "defgen") else None
            # a tournament row's n is its learner's battles; the column's n is the votes
            n = sum(r["n"] for r in run["results"]) // 2 if run["task"] == "tournament" else None
            key, date = (run["task"], row["learner"], shots, n or row["n"]), run.get("date", "")
            if date >= dates.get(key, ""):
                rows[key[:3]][key[3]], dates[key] = row, date
    learners = list(dict.fromkeys(learner for _, learner, _ in rows))
    columns = [c for c in HEADLINE_COLUMNS if any(k[0] == c[0] and k[2] == c[1] for k in rows)]
    chosen: dict[tuple, int] = {}
    shipped = {*learner_names(), ORACLE}
    for task, shots, _, _ in columns:
        column = {k: by_n for k, by_n in rows.items() if k[0] == task and k[2] == shots}
        present = [set(by_n) for by_n in column.values()]
        core = [set(by_n) for k, by_n in column.items() if k[1] in shipped]
        common = set.intersection(*(core or present))
        chosen[task, shots] = max(common) if common else max(set.union(*present))
    lines = [
        "| learner | " + " | ".join(c[3] for c in columns) + " |",
        "|---|" + "---|" * len(columns),
    ]
    for learner in learners:
        cells = []
        for task, shots, metric, _ in columns:
            by_n = rows.get((task, learner, shots), {})
            n = chosen[task, shots] if chosen[task, shots] in by_n else max(by_n, default=0)
            row = by_n.get(n)
            if row is None or metric not in row:
                cells.append("–")
            else:
                mark = "" if n == chosen[task, shots] else f" (n={n})"
                cells.append(_cell(row[metric]) + mark)
        lines.append(f"| {learner} | " + " | ".join(cells) + " |")
    sizes = dict.fromkeys(f"{t} n={n}" for (t, _), n in chosen.items() if n)
    lines += ["", "Items per column: " + ", ".join(sizes) + "."]
    return lines


def update_readme(table_lines: list[str], readme: Path) -> None:
    """Replace the text between the headline markers in the README, if it has them."""
    if not readme.exists():
        return
    text = readme.read_text(encoding="utf-8")
    if README_START not in text or README_END not in text:
        return
    head, rest = text.split(README_START, 1)
    _, tail = rest.split(README_END, 1)
    body = "\n".join(table_lines)
    readme.write_text(f"{head}{README_START}\n{body}\n{README_END}{tail}", encoding="utf-8")


OLDER = (
    "Records of a task's earlier versions: DefGen and the tournament before version 3 "
    "decoded without the once-rule (a content word said again, a word right after "
    "itself) and did not count such loops as degenerate; before version 4 without the "
    "quotation rule (a word quoted alone quoted again: the definition reader's "
    '\'"a" or "a" (plural)\' for every dev word), which the degenerate rate did not '
    "count either; the tournament's version 4 judged each definition with the real word "
    "unmasked, and its version 5 with version 4's degenerate rate; its version 7 fitted "
    "the same battles' Bradley–Terry columns without the prior and anchored them at the "
    "mean over learners (its Elo, n and battles are version 8's). Kept to read what the "
    "model card cites; their numbers are not comparable with the newest version's."
)

SURE = (
    "Each DefGen score above is a mean over 100-200 words, so another draw of words would "
    "move it. Here, from the definitions the newest records keep (`benchmarks/intervals.py`: "
    "2000 resamplings of the items, seed 0), each shipped learner's identification and "
    "BERTScore with a 95% interval, and `college`'s lead over it on the same items with the "
    "interval of that paired difference: where it excludes 0, the lead is not the draw of "
    "words. Negative leads are the oracle's (the LM defining the real word)."
)

WRITTEN = (
    "The dev words in three written sentences each (`defgen.dev.natural.jsonl`), the kind "
    "of input the app is given, where DefGen's headline columns read WordNet's usage "
    "fragments; the held-out words' written sentences are under the held-out splits."
)

HELD_OUT = (
    "Our own test splits, run after the choices were made on dev: DefGen's "
    "`defgen.test.jsonl`; Chimera's items 111-220 of each level file and Definitional "
    "Nonce's items 351-700 (`--offset`; `held_out_from` in `benchmarks/tasks.py`)."
)


def held_out(run: dict) -> bool:
    """Whether a run read our held-out test split (reported apart from the dev headline):
    a test file, or a task's items from its `held_out_from` on (`--offset`)."""
    task = TASKS.get(run.get("task", ""))
    start = task.held_out_from if task else None
    return ".test." in run.get("data", "") or (start is not None and offset(run) >= start)


def written(run: dict) -> bool:
    """Whether a run read a written-sentence file (`defgen.*.natural*.jsonl`): the same
    words as a WordNet file in other sentences, so its rows are reported apart, not in
    the headline's columns over that file."""
    return ".natural" in run.get("data", "")


def partition(runs: list[dict]) -> tuple[list[dict], list[dict], list[dict]]:
    """(the headline's dev runs, dev runs on written sentences, held-out runs)."""
    test = [r for r in runs if held_out(r)]
    dev = [r for r in runs if not held_out(r) and not written(r)]
    return dev, [r for r in runs if not held_out(r) and written(r)], test


def offset(run: dict) -> int:
    """The items a run skipped (`--offset`; records from before it have none)."""
    return (run.get("settings") or {}).get("offset", 0)


def newest_versions(runs: list[dict]) -> tuple[list[dict], list[dict]]:
    """(runs of each task's newest version, the older ones): a task's version changes when
    its scoring or decoding does, so only the newest version's numbers are compared."""
    newest: dict[str, int] = {}
    for run in runs:
        newest[run["task"]] = max(newest.get(run["task"], 0), run.get("version", 0))
    current = [r for r in runs if r.get("version", 0) == newest[r["task"]]]
    return current, [r for r in runs if r.get("version", 0) != newest[r["task"]]]


def render(runs: list[dict]) -> str:
    current, older = newest_versions(runs)
    dev, sentences, test = partition(current)
    lines = [PREAMBLE, "## Headline (development data)", ""]
    lines += headline(dev) + [""]
    if sentences:
        lines += ["## Written sentences (development data)", "", WRITTEN, ""]
        for run in sentences:
            lines += [f"`{run['_file']}`:", ""] + table(run["results"]) + [""]
    if test:
        lines += ["## Held-out test splits (never tuned on)", "", HELD_OUT, ""]
        for name in TASKS:
            mine = [r for r in test if r["task"] == name]
            if mine:
                lines += [f"### {name} (held out)", ""]
            for run in mine:  # one table per record: runs may cover different items
                lines += [f"`{run['_file']}`, from item {offset(run) + 1}:", ""]
                lines += table(run["results"]) + [""]
    comparisons = intervals.compare(current, "college", list(learner_names()))
    if comparisons:
        lines += ["## DefGen: how sure (paired bootstrap over items)", "", SURE, ""]
        lines += intervals.render(comparisons, "college")
    for name, task in TASKS.items():
        mine = [r for r in dev if r["task"] == name]
        if not mine:
            continue
        lines += [f"## {name}", "", task.description + ".", ""]
        metrics = ", ".join(
            f"`{m.name}` ({'higher' if m.higher_is_better else 'lower'} is better)"
            for m in task.metrics
        )
        lines += [f"Metrics: {metrics}. LM: {', '.join(sorted({r['lm'] for r in mine}))}.", ""]
        if name == "perf":  # one table per run: its rows share one machine and its ratios
            for run in mine:
                lines += [f"`{run['_file']}` ({run['machine']}):", ""]
                lines += table(run["results"]) + [""]
            continue
        lines += table([row for run in mine for row in run["results"]])
        lines.append("")
    if older:
        lines += ["## Older task versions (not compared with the above)", "", OLDER, ""]
        for run in older:
            lines += [f"`{run['_file']}` ({run['task']} version {run.get('version')}):", ""]
            lines += table(run["results"]) + [""]
    lines += ["## How these numbers were made", ""]
    for run in runs:
        seconds = (run.get("settings") or {}).get("seconds")
        lines.append(f"- `{run['_file']}` ({run['date']}, {run['machine']}, {seconds} s):")
        lines.append(f"  `{run['command']}`")
        if run.get("note"):  # what was done to the record since (e.g. rows of an old model removed)
            lines.append(f"  Note: {run['note']}")
    lines += ["", f"_Written {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC._", ""]
    return "\n".join(lines)


def write_report(folder: Path | None = None, out: Path | None = None) -> Path:
    folder, out = folder or RESULTS_DIR, out or REPORT
    runs = load_runs(folder)
    if not runs:
        raise ValueError(f"no run records (*.json) in {folder}; run a task with --json first")
    out.write_text(render(runs), encoding="utf-8")
    if out == REPORT:
        current, _ = newest_versions(runs)
        update_readme(headline(partition(current)[0]), REPO_ROOT / "README.md")
    log.info("wrote %s from %d runs", out, len(runs))
    return out
