"""How a definition is decoded: which tokens are allowed at each step, and how one is picked.

A new token's embedding often makes the LM say the word again and again ("a florp florp
florp ...") or loop over a phrase ("a group of people" or "a group of people" or ...).
The controls, applied to every row of the one batched generation (each a `Decoding` field):

- the word being defined may not appear in its own definition (a dictionary never does
  that, and the new token's own logit is where most loops start). Optionally
  (`copy_cosine`, off by default) the word the LM reads a learned vector as is banned
  too, with its inflected forms: a vector that is nearly a known word's row *is* that
  word to the LM, which then names its guess instead of defining it ('"to collapse" or
  "to fall" in English.'); the real word's inflected forms are banned from the oracle's
  definition alike. At 0.75, CoLLEGe's definitions named the word they read in 0-1% of
  DefGen items instead of 34% (dev) and 28% (held out) at k = 3, and were identified
  with that word masked 0.415 -> 0.46 on dev but 0.36 -> 0.36 on the held-out file,
  where plain identification fell 0.46 -> 0.36: naming the word it read is much of
  what makes a definition recognisable, so it stays off (model card, "Definitions that
  name the word they read");
- no word n-gram may repeat inside a definition (`no_repeat_ngram`, as in Paulus, Xiong &
  Socher 2018, "A Deep Reinforced Model for Abstractive Summarization"); the rule reads
  the tokens as words (case, spaces and quotes ignored, a word's pieces joined), so
  '"the faculty of thinking, the faculty of' is caught although its two "the" are
  different tokens, and 'a "counterfeit" or "counterfeit" is a counterfeit or' although
  one "counterfeit" is the pieces counter+feit and the other a single token;
- a content word may be said at most `word_uses` times, and no word twice in a row: the
  loops the n-gram rule reads past because the words between change ('a " shed " or
  " shed " is a " shed "', 'to imagine, to imagine, and to imagine', 'a secret, a secret,
  or a secret'); function words (backends/function_words.py) repeat freely, but for "do"
  (`count_do`): 'to run, to go, to travel, to race, to compete, to do, to do something, to
  do.' was college's reading of a verb on DefGen dev, and "do" said twice is rarely more
  than a placeholder;
- a word quoted alone may not open a quotation again: the loops on quoted function words
  the once rule leaves free, since "a" and "the" must repeat in ordinary definitions (the
  definition reader, with only a word's spelling to read, wrote 'a "small" or "little" or
  "a" or "a" (plural) or "a" (singular)' for every DefGen dev word). As in the n-gram
  rule, a token spelling the start of such a word is blocked there too, so it cannot be
  written in pieces; a quotation of another word that starts the same way is blocked with
  it ('"up"' then '"upward"'): 0-4 of each learner's 200 dev definitions changed;
- no token may follow itself more than `token_run` times (5): the loops inside one
  "word" that no word rule sees, since a number or a run of marks is one word to them
  ('2.44444444444444444444444444444', 'the number 100000000000000000000000', ten opening
  quotes in a row — Gemma writes a digit or an opening quote as a token of its own;
  five quotes, as the cache once sampled for "literal", still pass). Of the 8 790
  distinct definitions in benchmarks/results, 6 have even four of one token in a row, all
  of them such runs; of the greedy DefGen definitions of the learners as they are, the one
  with six is prompting's for "unbroken" on the held-out file (k = 3, the zeros above),
  so that is the one the rule changes there. "1999", "100,000" and "5000-10000" are
  untouched. Sampled for a battle (dev, temperature 0.8), prompting's "dependent" became
  '2.44444 meters in length, 244444 yards wide and 244444 feet above sea': no longer a
  loop, still no definition;
- slurs (backends/blocked_words.py) are never said, in one token or in pieces: a
  definition is shown to other people, and the LM learnt from the web;
- a definition is plain text (`text_only`): neither the tokenizer's special tokens other
  than the end of text (Gemma 3's image markers, its 6 000 '<unusedN>', padding) nor
  markup (any piece with '<' or '>': '<b>', '</td>', 843 more of Gemma's pieces) is written.
  No DefGen record holds either (0 of 26 610 greedy texts has a '<' or '>'); the arena's
  sampling (temperature 0.8, top-k 40) reaches them: 2 of 200 samples on the typed "wug"
  wrote tags ('eaten in the <b>night</b>'), and a battle in a browser check showed
  'a feeling, a thought, or expression.<start_of_image>The word "x" is ...';
- a sentence may not stop right after a word it cannot stop on (`finish_sentence`,
  backends/function_words.py's `UNFINISHED`: an article, a possessive, a preposition, a
  conjunction): no line break or full stop there. A line break ends a
  definition, and with the examples above the probe one per line (the prompting
  baseline) the LM copies their short lines: 'a word that is used to describe a' /
  'person or thing.', 'a piece of the game to your' / 'a', 'a' / 'the' were shown as its
  definitions of politics, idea and level (dev, k = 3); with the line break blocked,
  level's became 'a.' until the full stop was blocked too. On DefGen dev it changed 36 of
  prompting's 400 definitions (k = 1 and 3), 6 of college's, 6 of the oracle's and 0-1 of
  the other learners' ('to see or look at.' -> 'to see or look at something.'); a
  preposition may end a phrasal verb, and there the LM wrote on instead ('to cut into"
  in the Cambridge English Dictionary.'), in 3 of college's 6. On the held-out file: 18
  of prompting's 200, 2 of college's ('a noun that is used to describe a' -> '... a
  person, place, or thing.'), 1 of the oracle's; college's scores did not move on either;
- ... nor on a modal verb, or on "be" or "have" right after one (`modals_go_on`): sampled
  for a battle in a browser check, prompting's 'a series of characters that can be' was
  shown; no definition in the records stops there, so the rule changes none of them;
- ... except that a preposition of `PARTICLES` may end a phrasal verb right after "to"
  and a content word (`particle_ends`): 'to cut into.' instead of 'to cut into" in the
  Cambridge English Dictionary.' (college, rip, dev);
- no line break inside a quotation the definition opened (`close_quotes`): college's
  '"to move or change direction' and '"a result of a decision or action that is' ended
  at a line break and were shown so. With both rules on (`defgen-{dev,test}-particles.json`
  against `-finished.json`) 3 of 2 400 dev and 3 of 1 200 held-out definitions changed:
  college's 4 to whole sentences ('... that is a consequence of a previous one.', '"the
  right to life, liberty, and the pursuit of happiness."'; held-out k = 1 identified 0.28
  -> 0.29), prompting's 2 from one fragment to another ('the word "in' -> 'the word "in"
  a, the 12000, ...');
- ... nor a full stop, '!' or '?' inside a quotation unless its token closes the
  quotation too ('."'; `quotes_close`): sampled for battles, '"extreme.' and '"a person,
  event or thing that takes place.' were shown, the quotation never closed. The shown
  text also loses the spaces Gemma leaves just inside quotation marks ('" the state or
  condition of certainty ".' -> '"the state or condition of certainty".'; `tidy_quotes`,
  applied by `backends.definitions.first_sentence`), a mark whose sides disagree with its
  turn left where it is, so scattered marks are not joined to the wrong word, and the
  space it leaves between a closing mark and a stop ('"being" .' -> '"being".';
  `tidy_stops`). In
  `benchmarks/results/arena_sampling/dev-every4th-quotes.json` against
  `dev-every4th-content.json` (the same 50 dev words and seeds) 2 of 1 050 definitions end
  a sentence inside an open quotation (28 before) and 7 show such spaces (70), the rest
  where marks nest or dangle; 90 of the 700 sampled ones run to 20 words or more with no
  sentence end (81), and no learner's identification moved;
- and a blank token ('▁', '▁▁▁▁') after such a word does not free it (`stop_past_blanks`):
  sampled for a battle, college wrote 'a', a lone space, a line break, shown as 'a'. In
  `benchmarks/results/arena_sampling/dev-every4th-finished.json` (50 DefGen dev words,
  six learners and the oracle, `python -m benchmarks.arena_sampling --items 0:200:4
  --temperatures 0.8 --seeds 1,2`) no definition of 1 050 stopped on such a word
  (`unfinished`), greedy or sampled; in `dev-every4th-reader6.json`, before the stop rule,
  44 of the 700 sampled ones did ('a', 'the', 'the order of', 'a sound that follows a
  certain form or'), counted on its texts (a letter last, under 20 words); the blank
  rule itself changed 1 of the 1 050 ('a' -> 'a 1.': still no definition);
- and no line break or full stop before the definition has said a content word
  (`content_first`): sampled for battles, '1.', 'a 1.' (a numbered list begun), 'a) 5.'
  and '"a", "the" and "are".' were shown as definitions, and greedy, prompting's 'a,',
  'you can' and 'it'. A first line of marks alone is still skipped (no word said yet),
  and a number's decimal point waits for a word too ('1.5 m' becomes '1,5 m' or the like);
- no line break or full stop right after a colon (`colon_goes_on`): 'the following:',
  'a knot:' and '"to dominate":' were shown, what they announced left for the next line;
- two rules of where the shown sentence ends live in `backends.definitions.first_sentence`
  and are switched here so a stored vote replays as shown: a full stop inside a bracket
  still open or after 'e.g.' does not end it (`brackets_go_on`: '... porous structure
  (e.g.' and '"meeting" (1999, p.' were shown), and a comma, colon or semicolon it began
  with is dropped (`drop_lead_marks`: ', "to give up" or "to let go," ...'). With these
  four (`benchmarks/results/arena_sampling/dev-every4th-content.json` against
  `-finished.json`, the same 50 dev words and seeds) none of 1 050 definitions said no
  content word (9 before), ended on a colon (8), began with a mark (15) or ended inside a
  bracket or on 'e.g.' (5); 81 of the 700 sampled ones had 20 words or more and no
  sentence end, against 74 ('"to do".' went on as a list), and 2 of the 350 greedy ones
  changed (prompting's 'you can' -> 'you can make');
- and near the end of its token budget a definition winds down (`wind_down`,
  `wind_down_rate`): in the budget's last 12 tokens, once a content word is said, every
  sentence end the rules above still allow gains half a nat a token more (6 at the
  last), so what would have run to the budget ends instead of being shown cut ('"to do,
  to succeed, to be successful, ... or to get …'), and a definition that ends sooner is
  untouched whatever the budget. A ramp by words (from the 14th, or the 12th at a nat a
  word) was measured first and not kept: it shortened sentences that had ended well on
  their own ('the power to control.'). In
  `benchmarks/results/arena_sampling/dev-every4th-wind.json` against
  `dev-every4th-quotes.json` (the same 50 dev words and seeds) 15 of the 700 sampled
  definitions were cut by the budget (91 ran 20 words or more without an end before) and
  none of the 350 greedy ones (12); 71 greedy definitions changed, 50 of them the
  definition reader's list of quoted function words, now ended ('a "small" or "little"
  or ... or "some".'), and no learner's greedy identification moved; sampled, 6
  definitions shortened from identified to not and 1 the other way (0.210 -> 0.203 over
  all: a shorter text has fewer words to be recognised by);
- and a definition whose budget ran out right after its sentence end is whole, not shown
  cut (`ends_at_budget`): a full stop counts as an end once the space after it is written
  (so '1.5' and '."' go on), and at the budget nothing was. The wind-down ends many
  definitions on their budget's last token: 11 of the 15 sampled texts that
  `dev-every4th-wind.json` counted cut ended '... over a period of time."' or the like;
  with the rule (`dev-every4th-budget.json`, the same words and seeds, every text word
  for word the same) 4 of 700 are shown cut, each stopped mid-phrase;
- optionally, tokens already generated are penalised (`repetition_penalty`, Keskar et al.
  2019, CTRL) and the next token is sampled with a temperature and top-k, as CoLLEGe's
  own DefGen did (Teehan, Lake & Ren 2024); temperature 0 is greedy.

The default was chosen on the DefGen tuning half (benchmarks/RESULTS.md, "Decoding").
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import torch

from backends import vocab_select
from backends.blocked_words import SLURS
from backends.function_words import (
    MODALS,
    PARTICLES,
    UNFINISHED,
    is_content_word,
    is_counted_word,
)


@dataclass(frozen=True)
class Decoding:
    # Forbid the defined word's own token(s) in its definition.
    ban_word: bool = True
    # Also forbid the spellings and inflected forms (-s, -ed, -ing, ...) of the word, and of
    # any known word whose input row is at least this close (cosine) to the new word's
    # input vector: the word the LM reads it as (0 = off: only the word's own tokens;
    # 0.75 was measured on dev and held out, see the module docstring).
    copy_cosine: float = 0.0
    # Block any token that would repeat an n-gram of token ids already in the output (0 = off).
    no_repeat_ngram: int = 3
    # A content word may be said at most this many times, and no word right after itself
    # (0 = off). Once, chosen on 90 DefGen dev items over twice and off (model card,
    # "Loops the n-gram rule missed"): it also stops "or"-lists of near-copies.
    word_uses: int = 1
    # ... and "do" counts as a content word there ('to do, to do something, to do.'):
    # `backends.function_words.DO_FORMS`.
    count_do: bool = True
    # A word quoted alone ('"a"') may not open a quotation again ('"a" or "a"').
    quote_once: bool = True
    # The same token at most this many times in a row (0 = off): '2.444444...' stops.
    token_run: int = 5
    # Never say a word of backends.blocked_words.SLURS.
    block_slurs: bool = True
    # No line break or full stop right after a word a sentence cannot stop on
    # ('... to describe a').
    finish_sentence: bool = True
    # ... but a preposition may end a phrasal verb: 'to cut into.' (`PARTICLES`).
    particle_ends: bool = True
    # ... and a blank token after the word does not free it: sampled, college wrote 'a',
    # a lone space, then a line break.
    stop_past_blanks: bool = True
    # ... nor right after a modal verb, or "be" or "have" after one: 'that can be'.
    modals_go_on: bool = True
    # No line break inside a quotation the definition opened: '"a person or thing that is'.
    close_quotes: bool = True
    # ... nor a full stop, '!' or '?' that does not close it too: '"extreme.' and '"a
    # person, event or thing that takes place.' were shown, their quotation never closed.
    quotes_close: bool = True
    # No line break or full stop before the definition has said a content word: '1.',
    # 'a 1.', 'a,' and 'you can' were shown as definitions.
    content_first: bool = True
    # No line break or full stop right after a colon: 'the following:' and 'a knot:' were
    # shown as definitions, what the colon announced left for the next line.
    colon_goes_on: bool = True
    # A full stop inside a bracket still open or right after 'e.g.', 'i.e.', 'cf.', 'viz.'
    # or 'vs.' does not end the sentence: '(1999, p.', '(e.g.' and '(U.N.' were shown
    # (`backends.definitions.first_sentence`).
    brackets_go_on: bool = True
    # A definition is shown without a comma, colon or semicolon it began with: the probe
    # ends '... is defined as', and sampled, the LM went on ', "to give up" or ...'.
    drop_lead_marks: bool = True
    # Shown without the spaces Gemma leaves just inside quotation marks ('" the state of
    # certainty ".' -> '"the state of certainty".'; `backends.definitions.first_sentence`).
    tidy_quotes: bool = True
    # ... and without a space between a closing quotation mark and the mark after it
    # ('"a part of the human being" .' -> '... being".', '"plural noun" , a word'): 3 of
    # 3 600 greedy DefGen definitions and 4 of 1 050 arena-sampled ones showed one.
    tidy_stops: bool = True
    # Write plain text: no special token but the end of text, no markup
    # (`NonceLM.unwritable_ids`).
    text_only: bool = True
    # In the last this many tokens of a definition's budget (0 = off), once a content word
    # is said, every stop still allowed gains `wind_down_rate` nats a token more, so one
    # that would run to its budget ends instead of being shown cut ('"to do, to succeed,
    # ... or to get …'); one that ends sooner is untouched, whatever the budget. 12 and 0.5
    # (6 nats at a 32-token budget's last token) chosen on arena-sampling dev words over
    # 10 and 1.0 (alike) and a ramp by words from the 14th or 12th (shortened sentences
    # that ended well on their own).
    wind_down: int = 12
    wind_down_rate: float = 0.5
    # A definition whose budget ran out right after its sentence end ('... over time."') is
    # whole, not shown cut: generation waits for what follows a full stop before it counts
    # as an end ('1.5', '."'), and at the budget nothing followed. The wind-down makes such
    # ends common: 11 of the 15 sampled texts marked cut in dev-every4th-wind.json were
    # whole (`backends.definitions.ends_at_its_end`).
    ends_at_budget: bool = True
    # Divide the probability of every token already generated by this (1.0 = off).
    repetition_penalty: float = 1.0
    # Sampling temperature; 0 = greedy (the benchmarks' and the Learn tab's choice).
    temperature: float = 0.0
    # Sample among the k most likely tokens only (0 = all); ignored when greedy.
    top_k: int = 0
    # Seed of the sampling generator (stored with an arena vote so a battle replays).
    seed: int = 0

    def __post_init__(self):
        counts = (self.no_repeat_ngram, self.top_k, self.word_uses, self.token_run, self.wind_down)
        if min(counts) < 0 or self.wind_down_rate < 0:
            raise ValueError(
                "no_repeat_ngram, word_uses, token_run, top_k, wind_down and wind_down_rate"
                f" must be >= 0, got {self}"
            )
        if not 0 <= self.copy_cosine <= 1:
            raise ValueError(f"copy_cosine must be in 0..1, got {self}")
        if self.repetition_penalty < 1.0 or self.temperature < 0:
            raise ValueError(f"need repetition_penalty >= 1 and temperature >= 0, got {self}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    @property
    def reads_words(self) -> bool:
        """Whether a rule on here reads the text as words (`adjust` needs `TokenForms`);
        the others (the word's own ban, runs of a token, the penalty) read token ids."""
        return bool(
            self.no_repeat_ngram
            or self.word_uses
            or self.quote_once
            or self.block_slurs
            or self.finish_sentence
            or self.close_quotes
            or self.quotes_close
            or self.content_first
            or self.colon_goes_on
            or self.wind_down
        )

    def record(self) -> dict:
        return asdict(self)

    @classmethod
    def from_record(cls, record: dict) -> Decoding:
        """A stored decoding (an arena vote's): a rule added since it was stored was not
        applied then, so it is off here, and the battle generates the texts it showed."""
        return cls(**{**RULES_ADDED_LATER, **record})


# Rules added after decodings were first stored with votes, and their "off" values.
RULES_ADDED_LATER = {
    "word_uses": 0,
    "block_slurs": False,
    "quote_once": False,
    "text_only": False,
    "token_run": 0,
    "finish_sentence": False,
    "particle_ends": False,
    "stop_past_blanks": False,
    "close_quotes": False,
    "quotes_close": False,
    "tidy_quotes": False,
    "tidy_stops": False,
    "modals_go_on": False,
    "content_first": False,
    "colon_goes_on": False,
    "brackets_go_on": False,
    "drop_lead_marks": False,
    "wind_down": 0,
    "ends_at_budget": False,
    "count_do": False,
}


@dataclass(frozen=True)
class TokenForms:
    """How each token reads as part of a word, so the no-repeat rule counts words, not
    tokens: '"counterfeit"' is three tokens (counter, feit and a quote) where ' counterfeit'
    is one, and "the" has several spellings ('"the', ' the', ' The').

    `key[i]`: token i's spelling, lowercased, a leading space or '▁' and attached quotes
    dropped; `starts[i]`: it begins a word (a leading space or '▁'), else it continues the
    word before it, unless that word was closed by punctuation; ids past the table (nonce
    ids) are words of their own."""

    key: list[str]  # [V]
    starts: list[bool]  # [V]
    # Tokens without a letter or digit (quotes, commas, spaces): they end a word, and the
    # no-repeat rule reads through them, so 'a " piece of' and 'a piece of' are one 3-gram.
    punctuation: frozenset[int]
    by_key: dict[str, list[int]]  # spelling -> the tokens with it
    # Tokens that open with a quotation mark, after their space ('▁"', '▁"a'): the quote rule's.
    quoting: frozenset[int]
    surface: list[str]  # [V] each token as text ('▁"a' -> ' "a')
    # Tokens that stop a sentence: a line break ('\n', '\n\n') or marks with a full stop,
    # '!' or '?' ('.', '."', '?"').
    stops: frozenset[int]
    breaks: frozenset[int]  # the stops with a line break
    blanks: frozenset[int]  # tokens of white space alone ('▁', '▁▁▁▁', '\t')
    # Tokens with a quotation mark anywhere ('"', '."', '",'): inside a quotation, they close it.
    closing: frozenset[int]
    # `ids`'s tensors, made on first use (not part of the value)
    _tensors: dict = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of_vocabulary(cls, pieces: Sequence[str]) -> TokenForms:
        key, starts, punctuation, by_key, quoting = [], [], set(), {}, set()
        for i, piece in enumerate(pieces):
            key.append(piece.lstrip("▁ Ġ").strip(_QUOTES).lower() or piece)
            starts.append(piece[:1] in ("▁", " ", "Ġ"))
            by_key.setdefault(key[-1], []).append(i)
            if not any(ch.isalnum() for ch in piece):
                punctuation.add(i)
            if piece.lstrip("▁ Ġ")[:1] in QUOTATION_MARKS:
                quoting.add(i)
        surface = [piece.replace("▁", " ").replace("Ġ", " ") for piece in pieces]
        breaks = frozenset(i for i, text in enumerate(surface) if "\n" in text)
        stops = breaks | {i for i in punctuation if any(mark in surface[i] for mark in ".!?")}
        blanks = frozenset(i for i, text in enumerate(surface) if text and not text.strip())
        closing = frozenset(
            i for i, text in enumerate(surface) if any(m in text for m in QUOTATION_MARKS)
        )
        return cls(
            key,
            starts,
            frozenset(punctuation),
            by_key,
            frozenset(quoting),
            surface,
            stops,
            breaks,
            blanks,
            closing,
        )

    @property
    def open_stops(self) -> frozenset[int]:
        """The stops with no quotation mark: inside a quotation, they would leave it open."""
        return self.stops - self.closing

    def ids(self, name: str, device: torch.device) -> torch.Tensor:
        """The token set `name` ('stops', 'breaks', 'open_stops') as a sorted id tensor,
        made once per device: `adjust_` fills hundreds of them in at every token."""
        key = (name, str(device))
        if key not in self._tensors:
            self._tensors[key] = torch.tensor(
                sorted(getattr(self, name)), dtype=torch.long, device=device
            )
        return self._tensors[key]

    def words(self, tokens: Sequence[int]) -> list[str]:
        """The words `tokens` spell, punctuation left out."""
        words: list[str] = []
        open_word = False  # may the next token continue words[-1]?
        for t in tokens:
            if t >= len(self.key):
                words.append(f"<{t}>")
                open_word = False
            elif t in self.punctuation:
                open_word = False
            elif self.starts[t] or not open_word:
                words.append(self.key[t])
                open_word = True
            else:
                words[-1] += self.key[t]
        return words

    def text(self, tokens: Sequence[int]) -> str:
        """The text `tokens` spell (a nonce id as a word of its own)."""
        n = len(self.surface)
        return "".join(self.surface[t] if t < n else f" <{t}>" for t in tokens)

    def open_word(self, tokens: Sequence[int], words: list[str]) -> str | None:
        """The word the last of `tokens` leaves open to a continuation piece ('counter' after
        ' counter', which 'feit' would make 'counterfeit'), or None after punctuation;
        `words`: `self.words(tokens)`."""
        return None if self.at_boundary(tokens) else words[-1]

    def at_boundary(self, tokens: Sequence[int]) -> bool:
        """Whether any next token starts a word: at the start, after punctuation or a nonce
        id (after a letter, only a token with a leading space does)."""
        return not tokens or tokens[-1] in self.punctuation or tokens[-1] >= len(self.key)

    def saying(self, words, after: Sequence[int], partial: str | None = None) -> set[int]:
        """Tokens that would say all of one of `words` next after the tokens `after`: one
        spelling it that starts a word there, or a piece finishing the open word `partial`
        into it ('feit' after ' counter' says 'counterfeit')."""
        boundary = self.at_boundary(after)
        found = set()
        for word in words:
            found |= {t for t in self.by_key.get(word, ()) if boundary or self.starts[t]}
            if partial and len(partial) < len(word) and word.startswith(partial):
                rest = self.by_key.get(word[len(partial) :], ())
                found |= {t for t in rest if not self.starts[t]}
        return found

    def beginning(self, word: str, after: Sequence[int]) -> set[int]:
        """Tokens that would begin `word` as the next word after the tokens `after`: those
        spelling a prefix of it that start a word there (any token at the start or after
        punctuation; after a letter, only those with a leading space)."""
        boundary = self.at_boundary(after)
        return {
            t
            for end in range(1, len(word) + 1)
            for t in self.by_key.get(word[:end], ())
            if boundary or self.starts[t]
        }


_QUOTES = "\"'“”‘’`"  # quotes a token may carry: '"a', 'thing"'
QUOTATION_MARKS = '"“”'  # the marks a quotation opens and closes with (apostrophes are not)
_QUOTATION = re.compile(r'["“”]([^"“”]*)["“”]')


def quotations(text: str) -> list[str]:
    """What `text` quotes, in order, lowercased and trimmed: the first mark opens, the second
    closes, and so on ('a "small" or "a"' -> ["small", "a"]); an unclosed one is left out."""
    return [q.strip(" .,;:!?'").lower() for q in _QUOTATION.findall(text)]


# Plain argmax, nothing blocked or boosted: training reads the LM's own answers with it, a
# fixed number of tokens, not a sentence. Every rule added since is off here too (the stop
# rules had been left on, and forbade a full stop the LM's argmax would have written).
GREEDY = Decoding(**RULES_ADDED_LATER, ban_word=False, no_repeat_ngram=0)


def is_markup(piece: str) -> bool:
    """A vocabulary piece with an angle bracket: an HTML tag ('<b>', '</td>') or a piece of
    one, which plain text does not need."""
    return "<" in piece or ">" in piece


def blocked_tokens(generated: Sequence, n: int) -> set:
    """Tokens (or words) that would complete an n-gram already present in `generated`."""
    if n <= 0 or len(generated) < n - 1:
        return set()
    prefix = tuple(generated[len(generated) - (n - 1) :]) if n > 1 else ()
    return {
        generated[i + n - 1]
        for i in range(len(generated) - n + 1)
        if tuple(generated[i : i + n - 1]) == prefix
    }


def adjust(
    logprobs: torch.Tensor,
    generated: Sequence[int],
    banned: Sequence[int],
    decoding: Decoding,
    forms: TokenForms | None = None,
    budget: int | None = None,
) -> torch.Tensor:
    """[V'] next-token log-probabilities of one row -> the same with the controls applied.

    `forms` (optional) compares tokens by word form for the n-gram rule; `budget`, the most
    tokens the definition may have, places `wind_down`."""
    return adjust_(logprobs.clone(), generated, banned, decoding, forms, budget)


def adjust_(
    out: torch.Tensor,
    generated: Sequence[int],
    banned: Sequence[int],
    decoding: Decoding,
    forms: TokenForms | None = None,
    budget: int | None = None,
) -> torch.Tensor:
    """`adjust` written into `out` itself (a row of the batch's fresh log-probabilities:
    generation copies no 262k-wide row to change a few of its entries). Returns `out`.

    The rules that forbid a fixed set of tokens (every stop, every line break) fill their
    ids in from tensors made once, not through the set of this token's other bans."""
    if decoding.repetition_penalty > 1.0 and generated:
        seen = torch.tensor(sorted(set(generated)), device=out.device)
        out[seen] -= math.log(decoding.repetition_penalty)
    forbidden = set(banned) if decoding.ban_word else set()
    run = decoding.token_run
    if run and len(generated) >= run and len(set(generated[-run:])) == 1:
        forbidden.add(generated[-1])  # a token's run is at its limit
    if forms is None:
        forbidden |= blocked_tokens(generated, decoding.no_repeat_ngram)
    else:
        said = forms.words(generated)
        for word in blocked_tokens(said, decoding.no_repeat_ngram):
            forbidden.update(forms.beginning(word, generated))
        partial = forms.open_word(generated, said)
        if decoding.word_uses:
            forbidden |= overused(
                said, generated, partial, decoding.word_uses, forms, decoding.count_do
            )
        quoting = decoding.quote_once or decoding.close_quotes or decoding.quotes_close
        text = forms.text(generated) if quoting else ""
        if decoding.quote_once:
            forbidden |= requoted(generated, text, forms)
        if decoding.block_slurs:
            forbidden |= forms.saying(SLURS, generated, partial)
        into = winding(said, len(generated), budget, decoding)
        if into:
            out[forms.ids("stops", out.device)] += into * decoding.wind_down_rate
        if may_not_stop(said, generated, partial, decoding, forms):
            out.index_fill_(0, forms.ids("stops", out.device), float("-inf"))
        if in_quotation(text):
            if decoding.close_quotes:
                out.index_fill_(0, forms.ids("breaks", out.device), float("-inf"))
            if decoding.quotes_close:
                out.index_fill_(0, forms.ids("open_stops", out.device), float("-inf"))
    if forbidden:
        out[torch.tensor(sorted(forbidden), device=out.device)] = float("-inf")
    return out


def winding(said: list[str], written: int, budget: int | None, decoding: Decoding) -> int:
    """How far into the budget's last `wind_down` tokens the next token is (1 at the first,
    0 before them, or with no budget), once the definition has said a content word: with
    a small budget the window holds its start, and an end there would show nothing.
    `said`: the words of the `written` tokens so far."""
    if not decoding.wind_down or budget is None:
        return 0
    into = written + 1 - (budget - decoding.wind_down)
    return max(into, 0) if any(is_content_word(w) for w in said) else 0


def may_not_stop(
    said: list[str],
    generated: Sequence[int],
    partial: str | None,
    decoding: Decoding,
    forms: TokenForms,
) -> bool:
    """Whether no line break or full stop may come next, each rule behind its own flag: not
    right after a word that wants another (`finish_sentence`; with `stop_past_blanks` the
    word before any blank tokens), not before a content word is said (`content_first`),
    not right after a colon once a word is (`colon_goes_on`: 'defined as:', a line break,
    then the definition, is the LM's common way to begin). `said`: the words of
    `generated`, `partial`: the one still open."""
    end = len(generated)  # the tokens before any blank ones ('▁', '▁▁▁▁')
    while end and generated[end - 1] in forms.blanks:
        end -= 1
    if decoding.finish_sentence:
        last = forms.open_word(generated[:end], said) if decoding.stop_past_blanks else partial
        if wants_another(said, last, decoding):
            return True
    if decoding.content_first and says_nothing_yet(said):
        return True
    colon = bool(end) and forms.text(generated[end - 1 : end]).rstrip().endswith(":")
    return decoding.colon_goes_on and bool(said) and colon


def wants_another(said: list[str], last: str | None, decoding: Decoding) -> bool:
    """Whether the sentence may not stop here: `last`, its last word if no mark came after
    it (else None), is one of `UNFINISHED`, and not a particle ending 'to <verb> <particle>',
    or (`modals_go_on`) a modal verb, or "be" or "have" right after one ('that can be')."""
    if decoding.modals_go_on and last is not None:
        if last in MODALS or (last in ("be", "have") and len(said) >= 2 and said[-2] in MODALS):
            return True
    if last not in UNFINISHED:
        return False
    phrasal = len(said) >= 3 and said[-3] == "to" and is_content_word(said[-2])
    return not (decoding.particle_ends and last in PARTICLES and phrasal)


def says_nothing_yet(said: list[str]) -> bool:
    """Whether the definition has begun (`said`, its words, holds one: a first line of marks
    alone is skipped as no line at all) and has not yet said a content word: '1', 'a 1',
    'you can'. A stop there would show no definition."""
    return bool(said) and not any(is_content_word(w) for w in said)


def overused(
    said: list[str],
    generated: Sequence[int],
    partial: str | None,
    uses: int,
    forms: TokenForms,
    count_do: bool,
) -> set[int]:
    """Tokens that would say a content word (with `count_do`, or a form of "do") for the
    (uses + 1)-th time, or repeat the last word said right after itself (through
    punctuation: 'events, events'); `said`: the words of `generated`, `partial`: the one
    still open."""
    counts = Counter(w for w in said if is_counted_word(w, count_do))
    forbidden = forms.saying([w for w, n in counts.items() if n >= uses], generated, partial)
    if said:  # a new word only: a piece continuing the last one makes a different word
        forbidden |= forms.saying([said[-1]], generated)
    return forbidden


def in_quotation(text: str) -> bool:
    """Whether a quotation opened in `text` is still open: the marks alternate, the first
    opening, so an odd number of them leaves one open (as `quotations` reads them)."""
    return sum(text.count(mark) for mark in QUOTATION_MARKS) % 2 == 1


def requoted(generated: Sequence[int], text: str, forms: TokenForms) -> set[int]:
    """Tokens that would open a quotation with a word already quoted alone: right after an
    opening mark, any token beginning it ('"a" or "' then 'a'); elsewhere, a token carrying
    the mark with it ('"a" or' then '▁"a'). `text`: what `generated` spells."""
    alone = {q for q in quotations(text) if q and len(q.split()) == 1}
    if not alone:
        return set()
    found = set().union(*(forms.beginning(word, generated) for word in alone))
    just_opened = in_quotation(text) and text.rstrip()[-1:] in QUOTATION_MARKS
    return found if just_opened else found & forms.quoting


def pick(logprobs: torch.Tensor, decoding: Decoding, generator: torch.Generator | None):
    """[L, V'] adjusted log-probabilities -> [L] chosen token ids (argmax or a sample)."""
    if decoding.greedy:
        return vocab_select.argmax(logprobs)  # torch's argmax, about 5x faster over 262k
    scores = logprobs / decoding.temperature
    if decoding.top_k:
        kth = scores.topk(min(decoding.top_k, scores.shape[-1]), dim=-1).values[..., -1:]
        scores = scores.masked_fill(scores < kth, float("-inf"))
    probs = torch.softmax(scores.float(), dim=-1).cpu()
    return torch.multinomial(probs, 1, generator=generator)[:, 0].to(logprobs.device)


def sampler(decoding: Decoding) -> torch.Generator | None:
    """The seeded CPU generator a sampling decode draws from (None when greedy)."""
    if decoding.greedy:
        return None
    return torch.Generator().manual_seed(decoding.seed)
