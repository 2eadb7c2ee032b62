"""A frozen causal LM with a slot of brand-new tokens, each with its own input and output vector.

The LM's weights are never touched: nonce token i gets id V + i (V = the LM's vocabulary
size). Its input vector replaces the embedding lookup at those positions, and its output
vector adds one logit column after the LM head. Tied-embedding models (Gemma 3) thus get
an output vector of their own without untying or copying the 262k-row matrix.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from backends.decode_step import decode_step, supports
from backends.decoding import GREEDY, Decoding, TokenForms, adjust_, is_markup, pick, sampler

# A hook rewrites next-token log-probabilities given the final hidden states that
# produced them: (hidden [N, d], logprobs [N, V + n]) -> logprobs [N, V + n].
LogitHook = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]

# Inflectional endings left as ordinary text after the nonce: "wugs" = <nonce> + "s";
# an adjective's comparison too ("splunker", "the splunkest day of the year").
SUFFIXES = ("s", "es", "ed", "d", "ing", "er", "ers", "est", "'s")
_SUFFIX = f"(?:{'|'.join(re.escape(s) for s in SUFFIXES)})?"  # at most one of them

# Positions `token_logprobs` reads through the output layer in one product: their fp32
# logits take 1 MB each (262k columns), so 256 positions hold about 270 MB at once.
POSITIONS_PER_PRODUCT = 256


# English spelling changes the end of a word before some endings; the match then covers the
# changed stem and leaves the ending as text ("quibbed" = <nonce> + "ed"). Doubling is
# for -ed, -ing and -est (biggest) only: before -er it would read hammer as ham, letter as let.
_CONSONANT = "bcdfghjklmnpqrstvz"  # w, x and y are never doubled
_DOUBLED = re.compile(rf"(?:^|qu|[^aeiou])[aeiou][{_CONSONANT}]$")  # quib, wug, stop; not dax
_SILENT_E = re.compile(r"[^aeiouy]e$")  # glimble, but not flee or canoe
_CONSONANT_Y = re.compile(r"[^aeiou]y$")  # mimsy, but not play


def _stems(word: str) -> list[tuple[str, str]]:
    """(stem, endings) regex pairs: the word as typed with any plain ending, then the
    spellings English gives its stem before other endings."""
    w, lower = re.escape(word), word.lower()
    stems = [(w, _SUFFIX)]
    if len(lower) >= 3 and _DOUBLED.search(lower):  # quib -> quibbed, quibbing
        stems.append((w + re.escape(word[-1]), "(?:ed|ing|est)"))
    if len(lower) >= 3 and _SILENT_E.search(lower):  # glimble -> glimbling, glimbler, glimblest
        stems += [(re.escape(word[:-1]), "ing"), (w, "(?:r|rs|st)")]
    if len(lower) >= 3 and _CONSONANT_Y.search(lower):  # mimsy -> mimsier, glorpies
        stems.append((re.escape(word[:-1]) + "i", "(?:es|ed|er|ers|est)"))
    return stems


# Scripts written without spaces between words, by how a character's Unicode name begins
# (KATAKANA covers the prolonged sound mark ー too): a word in them sits inside a run of
# letters ("我喜欢弗洛普。"), so it has no word boundary to find, and takes no English ending.
# Hangul is written with spaces.
_SPACELESS_SCRIPTS = ("CJK", "IDEOGRAPHIC", "HIRAGANA", "KATAKANA", "HALFWIDTH KATAKANA")
_SPACELESS_SCRIPTS += ("THAI", "LAO", "KHMER", "MYANMAR")
# Combining marks (accents, Thai vowels and tone marks, kana voicing, variation selectors):
# a match must not end before one, or it would cut a letter in two.
_MARK_RANGES = ((0x0300, 0x036F), (0x0E00, 0x0EFF), (0x1000, 0x109F), (0x1780, 0x17FF))
_MARK_RANGES += ((0x3099, 0x309A), (0xFE00, 0xFE0F), (0xE0100, 0xE01EF))
_MARKS = "".join(
    re.escape(chr(c))
    for low, high in _MARK_RANGES
    for c in range(low, high + 1)
    if unicodedata.category(chr(c)) in ("Mn", "Mc", "Me")
)


def written_without_spaces(word: str) -> bool:
    """Whether `word` has a letter of a script written without spaces (Han, kana, Thai, Lao,
    Khmer, Myanmar); then mixed ones too ("T恤") sit inside their sentence's letters."""
    return any(unicodedata.name(c, "").startswith(_SPACELESS_SCRIPTS) for c in word)


def word_pattern(word: str) -> re.Pattern[str]:
    """Case-insensitive whole-word match of `word`, allowing a plain inflectional ending
    ("wugs") or one that changes the stem's spelling ("quibbed", "glimbling", "mimsier");
    the match is the stem, the ending stays outside it. A word of a script written without
    spaces matches as typed, wherever it occurs ("弗洛普" in "我喜欢弗洛普。")."""
    if written_without_spaces(word):
        return re.compile(rf"{re.escape(word)}(?![{_MARKS}])", re.IGNORECASE)
    alternatives = "|".join(rf"{stem}(?={ends}(?!\w))" for stem, ends in _stems(word))
    return re.compile(rf"(?<!\w)(?:{alternatives})", re.IGNORECASE)


def inflect(word: str, ending: str) -> str:
    """`word` with `ending` as English spells it, each spelling one `word_pattern(word)`
    reads back: a real word's ending put on a made-up one ("stipulated" hidden behind
    frulisk had been "fruliskd"), or the forms an error message suggests. frulisk + d ->
    frulisked, pindle + ing -> pindling, quib + ed -> quibbed, mimsy + s -> mimsies,
    migrax + s -> migraxes, wug + es (from watches) -> wugs."""
    lower = word.lower()
    if lower.endswith("e"):
        if ending.startswith("e"):  # ed, es, er, ers
            return word + ending[1:]
        if ending == "ing" and _SILENT_E.search(lower):
            return word[:-1] + ending
        return word + ending
    if ending in ("d", "r", "rs"):  # the real word ended in e: stipulate-d, bake-r
        ending = "e" + ending
    if ending in ("s", "es"):
        ending = "es" if re.search(r"(?:s|x|z|ch|sh|[^aeiou]y)$", lower) else "s"
    if ending.startswith("e") and len(lower) >= 3 and _CONSONANT_Y.search(lower):
        return word[:-1] + "i" + ending  # mimsies, mimsied, mimsier
    # English doubles the consonant of a stressed last syllable; of a made-up word's, only
    # where it is the one syllable: quibbed, quibbing, but krebiped, not krebipped.
    one_syllable = len(re.findall(r"[aeiouy]+", lower)) == 1
    if ending in ("ed", "ing", "est") and one_syllable and _DOUBLED.search(lower):
        return word + word[-1] + ending
    return word + ending


def inflected_pattern(word: str) -> re.Pattern[str]:
    """`word_pattern` with the ending inside the match ("wiggins", "quibbed"; a possessive's
    "'s" stays out): the whole word a reader puts in a blank, where the nonce's own token
    leaves the ending as text."""
    if written_without_spaces(word):  # no ending: the letters after it are the next word's
        return word_pattern(word)
    return re.compile(word_pattern(word).pattern + r"[^\W\d_]*", re.IGNORECASE)


def capitals_like(typed: str, form: str) -> str:
    """`form` in the capitals of the `typed` word it takes the place of (BIRDS, Bird, bird),
    unless it has capitals of its own (eBay), which it keeps as written."""
    if form != form.lower():
        return form
    if typed.isupper() and len(typed) > 1:
        return form.upper()
    return form[:1].title() + form[1:] if typed[:1].isupper() else form


def mixed(logprobs: torch.Tensor, belief: torch.Tensor, text: torch.Tensor, n: int) -> torch.Tensor:
    """[L, V'] rows' next-token log-probabilities -> [n, V'] their texts': each text's rows
    mixed by their beliefs ([L] log-weights, normalised within a text): log sum_r
    softmax(belief)_r p_r. A text of one row gets that row's log-probabilities unchanged."""
    if n == len(text):  # one row per text, in batch order
        return logprobs
    out = []
    for t in range(n):
        rows = (text == t).nonzero()[:, 0]
        weight = torch.log_softmax(belief[rows], 0).to(logprobs)  # [R]
        out.append(torch.logsumexp(weight[:, None] + logprobs[rows.to(logprobs.device)], 0))
    return torch.stack(out)


def consecutive_groups(sizes: Sequence[int], most: int) -> list[list[int]]:
    """Indices of `sizes` in order, in runs whose sizes sum to at most `most` (a size over
    `most` is a run of its own)."""
    groups: list[list[int]] = []
    total = 0
    for i, size in enumerate(sizes):
        if groups and total + size <= most:
            groups[-1].append(i)
            total += size
        else:
            groups.append([i])
            total = size
    return groups


def length_groups(lengths: Sequence[int]) -> list[list[int]]:
    """Indices of `lengths` in groups of similar length (sorted): a row joins the current
    group unless it is longer than 1.5 x the group's shortest + 8 tokens, where padding
    would cost more than reading the weights once more."""
    groups: list[list[int]] = []
    for i in sorted(range(len(lengths)), key=lambda i: lengths[i]):
        if groups and lengths[i] <= 1.5 * lengths[groups[-1][0]] + 8:
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


@dataclass
class NonceSlot:
    """The new tokens' vectors: row i belongs to token id V + i."""

    inputs: torch.Tensor  # [n, d], in the space of the LM's embedding matrix rows
    outputs: torch.Tensor  # [n, d], in the space of the LM head's rows

    @classmethod
    def stack(cls, pairs: Sequence[tuple[torch.Tensor, torch.Tensor]]) -> NonceSlot:
        return cls(torch.stack([p[0] for p in pairs]), torch.stack([p[1] for p in pairs]))


# Ordinary sentences whose final states tell which coordinates are the large ones.
_PROBE_TEXTS = (
    "The word is defined as a small animal that lives in the forest.",
    "She opened the window and looked at the rain falling on the street.",
    "In 1905 the company built a bridge across the river near the old mill.",
    "He said that the results of the experiment were not what they expected.",
)


class NonceLM:
    """Frozen causal LM + nonce slot: encode, embed, logits, score, generate."""

    def __init__(self, model, tokenizer, name: str = "lm"):
        self.model, self.tokenizer, self.name = model, tokenizer, name
        self.embedding = model.get_input_embeddings()
        self.head = model.get_output_embeddings()
        self.vocab_size = self.embedding.weight.shape[0]  # V
        self.dim = self.embedding.weight.shape[1]  # d
        # Gemma multiplies looked-up rows by sqrt(d); nonce rows must be scaled alike.
        self.embed_scale = float(getattr(self.embedding, "embed_scale", 1.0))
        self.softcap = getattr(model.config, "final_logit_softcapping", None)
        self.tied = self.head.weight.data_ptr() == self.embedding.weight.data_ptr()
        self.head_int8 = None  # see use_int8_head
        self.packed = None  # see use_packed_linears
        self.half_body = None  # see use_half_body
        # Read prompts of very different lengths in groups (see prefill) or as one padded
        # batch; None: see `grouping_prompts` (perf measures both side by side).
        self.group_prompts: bool | None = None
        # Decode through backends/decode_step.py (the blocks' arithmetic over fixed buffers)
        # rather than transformers' forward, and on CUDA replay it as a CUDA graph; off:
        # transformers' forward per token, as before (perf measures both side by side).
        self.lean_steps = True
        self.cuda_graphs = True
        self._memo: dict = {}

    def use_int8_head(self, outliers: int = 16, shortlist: int = 64) -> None:
        """Choose each generated token from an int8 reading of the [V, d] output layer,
        re-scored in fp32 on a shortlist (backends/int8_head.py). Generation uses it, and
        the LM reader's right-context scores (`target_logprobs`); the rest of scoring (token
        tuning, the Cloze task, the reader's slot distributions) reads the fp32 layer."""
        if self.device.type != "cpu":
            raise RuntimeError("the int8 output layer is a CPU kernel; leave it off on CUDA")
        from backends.int8_head import Int8Head

        with torch.no_grad():
            ids, mask = self.pad([self.encode(t) for t in _PROBE_TEXTS], left=False)
            states = self.hidden(ids, mask, None).last_hidden_state[mask.bool()]  # [N, d]
        self.head_int8 = Int8Head.build(self.head.weight, states, outliers, shortlist)

    def use_packed_linears(self) -> None:
        """Read the transformer body's linear layers through oneDNN's packed weights whenever
        no gradient is recorded (generation, scoring, the LM reader): 1.2-2.5x faster on
        the CPU for the few rows decoding multiplies (backends/packed_linear.py)."""
        if self.device.type != "cpu":
            raise RuntimeError("packed linear layers are a CPU kernel; leave them off on CUDA")
        from backends.packed_linear import PackedLinears

        self.packed = PackedLinears(self.model.base_model)

    def use_half_body(self) -> None:
        """Let each lean decoding step read the blocks' weights from fp16 copies
        (backends/half_body.py): half the bytes a token reads. Prompts, scoring and anything
        with a gradient keep the fp32 layers."""
        if self.device.type != "cpu":
            raise RuntimeError("the fp16 decoding weights are a CPU kernel; leave them off on CUDA")
        from backends.half_body import HalfBody

        self.half_body = HalfBody(self.model.base_model)

    def grouping_prompts(self) -> bool:
        """Whether prefill reads prompts in groups of similar length: as set, else on the
        CPU only. The CPU pays per position read, so groups save the padding's work; a GPU
        pays per kernel launched, so one padded batch is cheaper there (an H200: the six
        learners' definitions 0.142 s read as one batch, 0.178 s in groups,
        perf-gpu-lean-h200.json)."""
        if self.group_prompts is not None:
            return self.group_prompts
        return self.device.type == "cpu"

    def memo(self, key, compute: Callable[[], object]):
        """A constant derived from this (frozen) LM, computed once: row norms, replay states."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def pieces(self) -> list[str]:
        """Each embedding row's token piece ('▁anvil'), built once; "" for a row the
        tokenizer has no token for. Embedding matrices are often longer than the
        tokenizer's vocabulary (padded to a round size), and the tokenizer then spells
        those rows None; a GPU image's transformers 5.17 converted this GGUF so."""

        def build() -> list[str]:
            ids = list(range(self.vocab_size))
            return [piece or "" for piece in self.tokenizer.convert_ids_to_tokens(ids)]

        return self.memo("pieces", build)

    def token_forms(self) -> TokenForms:
        """The vocabulary grouped by word form (for the no-repeat rule), built once."""
        return self.memo("token_forms", lambda: TokenForms.of_vocabulary(self.pieces()))

    def unwritable_ids(self) -> torch.Tensor:
        """[n] ids a definition may not write (`Decoding.text_only`): the tokenizer's special
        ids but the end of text (image markers, '<unusedN>', padding, '<bos>') and markup
        pieces ('<b>', '</td>'); the end of text is how a definition may stop."""

        def build() -> torch.Tensor:
            tokenizer = self.tokenizer
            found = {i for i, t in tokenizer.added_tokens_decoder.items() if t.special}
            found |= set(tokenizer.all_special_ids)
            found |= {i for i, piece in enumerate(self.pieces()) if is_markup(piece)}
            ids = sorted(i for i in found if i < self.vocab_size and i != tokenizer.eos_token_id)
            return torch.tensor(ids, dtype=torch.long)

        return self.memo("unwritable_ids", build)

    @property
    def device(self) -> torch.device:
        return self.embedding.weight.device

    @property
    def input_matrix(self) -> torch.Tensor:
        return self.embedding.weight  # [V, d]

    @property
    def output_matrix(self) -> torch.Tensor:
        return self.head.weight  # [V, d]

    # --- text <-> ids -------------------------------------------------------------------

    def encode(
        self, text: str, word: str | None = None, nonce_id: int | None = None, bos: bool = True
    ) -> list[int]:
        """Token ids of `text`, each occurrence of `word` replaced by the single id `nonce_id`."""
        ids = (
            [self.tokenizer.bos_token_id] if bos and self.tokenizer.bos_token_id is not None else []
        )
        if word is None:
            return ids + self._ids(text)
        pieces = word_pattern(word).split(text)
        for k, piece in enumerate(pieces):
            # The nonce stands for " word": a space before it belongs to the nonce.
            ids += self._ids(piece.rstrip(" ") if k < len(pieces) - 1 else piece)
            if k < len(pieces) - 1:
                ids.append(nonce_id)
        return ids

    def _ids(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"] if text else []

    def decode(self, ids: Sequence[int], words: dict[int, str] | None = None) -> str:
        """Text of `ids`; nonce ids print as their word (`words`: nonce id -> word)."""
        out, run = [], []
        for i in ids:
            if i < self.vocab_size:
                run.append(i)
                continue
            out.append(self.tokenizer.decode(run))
            run = []
            out.append(" " + (words or {}).get(i, f"<nonce{i - self.vocab_size}>"))
        out.append(self.tokenizer.decode(run))
        return "".join(out)

    # --- forward pieces --------------------------------------------------------------------

    def embed(self, ids: torch.Tensor, slot: NonceSlot | None) -> torch.Tensor:
        """[B, T] ids -> [B, T, d] input embeddings, nonce rows taken from the slot."""
        is_nonce = ids >= self.vocab_size
        base = self.embedding(ids.clamp(max=self.vocab_size - 1))
        if slot is None or not bool(is_nonce.any()):
            return base
        rows = slot.inputs[(ids - self.vocab_size).clamp(min=0)] * self.embed_scale
        return torch.where(is_nonce[..., None], rows.to(base.dtype), base)

    def logits(
        self, hidden: torch.Tensor, slot: NonceSlot | None, choosing: bool = False
    ) -> torch.Tensor:
        """[..., d] final hidden states -> [..., V + n] logits (one extra column per nonce).

        `choosing`: only the next token's choice needs them (generation), so the int8
        head may draw up the candidates, when it is on."""
        if choosing and self._int8_may_choose():
            logits = self.head_int8(hidden)
        else:
            logits = self._fp32_logits(hidden)
        if slot is not None:
            logits = torch.cat([logits, hidden @ slot.outputs.to(hidden.dtype).T], dim=-1)
        if self.softcap:
            logits = torch.tanh(logits / self.softcap) * self.softcap
        return logits

    def _fp32_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """The fp32 output layer. For 2-8 rows on the CPU with no gradient (the LM reader's
        slot, blank-prompt and shortlist distributions) it is computed as (W h^T)^T: there
        torch's `F.linear` takes a slow path against the 262k-row layer (3 rows: 195 ms on
        two threads, 192 on one; this way 30 and 48 ms; measured here, torch 2.13, equal at
        one row, and at 10-32 rows on one thread no faster). The sums are ordered
        differently: logits move by ~1e-6."""
        rows = hidden.reshape(-1, hidden.shape[-1])
        weight = self.head.weight
        if (
            2 <= rows.shape[0] <= 8
            and hidden.device.type == "cpu"
            and self.head.bias is None
            and not torch.is_grad_enabled()
            and hidden.dtype == weight.dtype
        ):
            return (weight @ rows.T).T.contiguous().reshape(*hidden.shape[:-1], -1)
        return self.head(hidden)

    def _int8_may_choose(self) -> bool:
        """The int8 head is on and no gradient has to flow through the output layer."""
        return self.head_int8 is not None and not torch.is_grad_enabled()

    def target_logprobs(self, hidden: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """[..., d] final hidden states, [...] vocabulary ids -> [...] log p(target | state).

        Without a gradient and with the int8 head on, the target's own logit is exact fp32
        and the softmax's normaliser is summed over the int8 head's logits (fp32 on each
        row's shortlist): the fp32 layer's [rows x 262k] product is what made the LM
        reader's right-context scores slow (13 of a 3-example reading's 18 s), and the int8
        one is several times faster; the scores move by hundredths of a nat (model card,
        "Latency")."""
        logits = self.logits(hidden, None, choosing=True).float()  # [..., V]
        if self._int8_may_choose():  # the normaliser came from the int8 head
            exact = (hidden.float() * self.head.weight[targets].float()).sum(-1)  # [...]
            if self.head.bias is not None:
                exact = exact + self.head.bias[targets].float()
            if self.softcap:
                exact = torch.tanh(exact / self.softcap) * self.softcap
            logits = logits.scatter(-1, targets[..., None], exact[..., None])
        return logits.gather(-1, targets[..., None])[..., 0] - torch.logsumexp(logits, dim=-1)

    @torch.no_grad()
    def shared_target_logprobs(
        self, hidden: torch.Tensor, targets: torch.Tensor, shortlist: int
    ) -> torch.Tensor:
        """[n, R, d] states of n readings of the same R targets (the LM reader's candidates,
        each followed by one right context), [R] ids -> [n, R] approximate log p(target).

        Each softmax's normaliser is summed exactly over a `shortlist` shared by the n
        rows: the tokens that their mean state ranks highest at that position; the rest of
        the vocabulary adds the share it has under that mean state (a self-normalised
        estimate, as in sampled softmax; Jean et al. 2015). One [R x V] product replaces
        n of them. A row whose own likely tokens are off the shortlist is under-normalised
        (its score too high, by up to ~10-20 nats at 1024 on dev items), so callers re-read
        their best rows exactly (`lm_reader.right_scores`)."""
        weight = self.head.weight
        reference = self.logits(hidden.float().mean(0).to(hidden.dtype), None).float()  # [R, V]
        size = min(shortlist, self.vocab_size)
        chosen = reference.topk(size, dim=-1).indices  # [R, K]
        everything = torch.logsumexp(reference, dim=-1)  # [R]
        listed = torch.logsumexp(reference.gather(-1, chosen), dim=-1)  # [R]
        # log(mass off the list / mass on it) under the mean state; -inf when nothing is off
        rest = torch.log(-torch.expm1((listed - everything).clamp(max=0.0))) + everything - listed
        columns = torch.cat([chosen, targets[:, None]], dim=-1)  # [R, K + 1]
        logits = torch.einsum("nrd,rkd->nrk", hidden.float(), weight[columns].float())
        if self.head.bias is not None:
            logits = logits + self.head.bias[columns].float()
        if self.softcap:
            logits = torch.tanh(logits / self.softcap) * self.softcap
        normaliser = torch.logsumexp(logits[..., :size], dim=-1) + F.softplus(rest)  # [n, R]
        # a target off the shortlist is added to its own normaliser, so that no score tops
        # 0 when the mean state's share of the rest misses what this row predicts
        off = ~(chosen == targets[:, None]).any(-1)  # [R]
        normaliser = torch.where(off, torch.logaddexp(normaliser, logits[..., size]), normaliser)
        return logits[..., size] - normaliser

    def hidden(
        self,
        ids: torch.Tensor,
        mask: torch.Tensor,
        slot: NonceSlot | None,
        past=None,
        positions: torch.Tensor | None = None,
    ):
        """Run the frozen transformer body; returns its output (last_hidden_state, cache)."""
        if positions is None:
            positions = (mask.long().cumsum(-1) - 1).clamp(min=0)
        return self.model.base_model(
            inputs_embeds=self.embed(ids, slot),
            attention_mask=mask,
            position_ids=positions,
            past_key_values=past,
            use_cache=past is not None or not torch.is_grad_enabled(),
        )

    def own_nonce_only(
        self, logits: torch.Tensor, nonce_id: int | None | list[int | None]
    ) -> torch.Tensor:
        """Hide the other words' columns: in a batch, each row knows only its own new word.
        `nonce_id`: the one nonce id every row of `logits` [..., V + n] may write (None:
        none), or a list of one per row of [R, V + n] logits."""
        if logits.shape[-1] == self.vocab_size:
            return logits
        per_row = isinstance(nonce_id, list)
        own = [-1 if i is None else i for i in (nonce_id if per_row else [nonce_id])]
        columns = torch.arange(self.vocab_size, logits.shape[-1], device=logits.device)
        hidden_cols = columns != torch.tensor(own, device=logits.device)[:, None]  # [R or 1, n]
        return torch.cat(
            [
                logits[..., : self.vocab_size],
                logits[..., self.vocab_size :].masked_fill(
                    hidden_cols if per_row else hidden_cols[0], float("-inf")
                ),
            ],
            -1,
        )

    # --- batching ------------------------------------------------------------------------------

    def pad(self, seqs: Sequence[Sequence[int]], left: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """Pad id lists to [B, T] with a mask; left padding for generation, right for scoring."""
        width = max(len(s) for s in seqs)
        pad_id = self.tokenizer.pad_token_id or 0
        ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for row, seq in enumerate(seqs):
            span = slice(width - len(seq), width) if left else slice(0, len(seq))
            ids[row, span] = torch.tensor(list(seq), dtype=torch.long)
            mask[row, span] = 1
        return ids.to(self.device), mask.to(self.device)

    # --- scoring ---------------------------------------------------------------------------------

    def token_logprobs(
        self,
        seqs: Sequence[Sequence[int]],
        slot: NonceSlot | None = None,
        hooks: Sequence[LogitHook | None] | None = None,
        nonce_of_row: Sequence[int | None] | None = None,
    ) -> list[torch.Tensor]:
        """Per sequence, log p(token_t | tokens_<t) for t >= 1; differentiable w.r.t. the slot.

        `nonce_of_row[r]`: the one nonce id row r may predict (default: every slot column)."""
        ids, mask = self.pad(seqs, left=False)
        hidden = self.hidden(ids, mask, slot).last_hidden_state[:, :-1]  # [B, T-1, d]
        lengths = [len(seq) - 1 for seq in seqs]
        out = []
        # rows' positions go through the output layer together, its 262k-row matrix read
        # once per product, forward and backward: token tuning's three sentences (some 45
        # positions, 4 steps, 2 cores) took 1.9 s this way and 3.7 s a row at a time
        for rows in consecutive_groups(lengths, POSITIONS_PER_PRODUCT):
            states = torch.cat([hidden[row, : lengths[row]] for row in rows])
            products = self.logits(states, slot).float().split([lengths[row] for row in rows])
            for row, logits in zip(rows, products):
                n = lengths[row]
                if nonce_of_row is not None:
                    logits = self.own_nonce_only(logits, nonce_of_row[row])
                logprobs = F.log_softmax(logits, dim=-1)
                hook = hooks[row] if hooks else None
                if hook is not None:
                    logprobs = hook(hidden[row, :n], logprobs)
                out.append(logprobs.gather(-1, ids[row, 1 : n + 1, None])[:, 0])
        return out

    @torch.no_grad()
    def score(
        self,
        seqs: Sequence[Sequence[int]],
        slot: NonceSlot | None = None,
        hooks: Sequence[LogitHook | None] | None = None,
        nonce_of_row: Sequence[int | None] | None = None,
    ) -> list[float]:
        """Total log-probability of each sequence (its first token given)."""
        return [float(lp.sum()) for lp in self.token_logprobs(seqs, slot, hooks, nonce_of_row)]

    # --- generation --------------------------------------------------------------------------

    @torch.no_grad()
    def generate(
        self,
        prompts: Sequence[Sequence[int]],
        slot: NonceSlot | None = None,
        hooks: Sequence[LogitHook | None] | None = None,
        max_new_tokens: int = 32,
        stop: Callable[[list[int]], bool] | None = None,
        nonce_of_row: Sequence[int | None] | None = None,
        decoding: Decoding = GREEDY,
        banned: Sequence[Sequence[int]] | None = None,
        mixture: Sequence[tuple[int, float]] | None = None,
    ) -> list[list[int]]:
        """Continuation of every prompt in one batch, with a KV cache, decoded by `decoding`
        (`banned[r]`: token ids row r may not produce when `decoding.ban_word`).

        `mixture[r] = (g, w)`: row r is one reading of text g, with prior weight w. A text's
        rows write the same tokens, each chosen from their next-token distributions mixed
        by the weights, and each row's weight is then updated by Bayes' rule with the
        probability it gave the token chosen (a mixture over what the new word is, whose
        belief follows the text it writes). Rows of no mixture are texts of their own.

        A row that has finished leaves the batch (and the cache), so the rows still
        generating do not pay for it: a batch costs about its longest row, not
        longest row x batch size."""
        generator = sampler(decoding)
        unwritable = self.unwritable_ids().to(self.device) if decoding.text_only else None
        forms = self.token_forms() if decoding.reads_words else None
        text_of = [m[0] for m in mixture] if mixture else list(range(len(prompts)))  # row -> text
        belief = torch.tensor(
            [math.log(m[1]) for m in mixture] if mixture else [0.0] * len(text_of)
        )
        text_bans: dict[int, list[int]] = {}  # a text may say none of its rows' banned ids
        for row, text in enumerate(text_of):
            text_bans.setdefault(text, []).extend(banned[row] if banned else ())
        hidden, cache, mask = self.prefill(prompts, slot)
        positions = mask.sum(-1, keepdim=True) - 1  # [B, 1] each row's last position
        stepper = None
        if self.lean_steps and supports(self.model) and max_new_tokens > 1:
            stepper = decode_step(
                self.model,
                cache,
                mask,
                positions,
                max_new_tokens,
                self.cuda_graphs,
                self.packed,
                self.half_body,
            )
        new: list[list[int]] = [[] for _ in prompts]
        live = list(range(len(prompts)))  # original row of each batch row still generating
        for said in range(1, max_new_tokens + 1):
            logprobs = self._next_logprobs(hidden, slot, live, hooks, nonce_of_row)  # [L, V']
            leads, raw = live, logprobs  # a row per text: without a mixture, every row
            if mixture:  # a text's rows' distributions mixed into one: [G, V']
                texts = list(dict.fromkeys(text_of[row] for row in live))  # in batch order
                of_text = torch.tensor([texts.index(text_of[row]) for row in live])  # [L] -> G
                leads = [next(r for r in live if text_of[r] == t) for t in texts]
                logprobs = mixed(raw, belief[live], of_text, len(texts))
            if unwritable is not None and len(unwritable):
                logprobs.index_fill_(1, unwritable, float("-inf"))  # a fresh tensor, ours to change
            for i, row in enumerate(leads):
                bans = text_bans[text_of[row]]
                adjust_(logprobs[i], new[row], bans, decoding, forms, max_new_tokens)
            step = pick(logprobs, decoding, generator)  # [G]
            if mixture:  # each text's token to its rows; each reading weighed again by Bayes
                step = step[of_text.to(self.device)]  # [L]
                belief[live] += raw.gather(1, step[:, None])[:, 0].float().cpu()
            keep = []
            for i, token in enumerate(step.tolist()):
                new[live[i]].append(token)
                finished = token == self.tokenizer.eos_token_id or bool(stop and stop(new[live[i]]))
                if not finished:
                    keep.append(i)
            if not keep or said == max_new_tokens:  # no state is needed after the last token
                break
            if len(keep) < len(live):
                index = torch.tensor(keep, device=self.device)
                if stepper is not None:
                    stepper.keep(index)
                else:
                    cache.batch_select_indices(index)
                mask, positions, step = mask[index], positions[index], step[index]
                live = [live[i] for i in keep]
            if stepper is not None:  # backends/decode_step.py: the same arithmetic, leaner
                hidden = stepper.step(self.embed(step[:, None], slot))
                continue
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
            positions = positions + 1
            out = self.hidden(step[:, None], mask, slot, past=cache, positions=positions)
            hidden = out.last_hidden_state[:, -1]  # [L, d]
        return new

    @torch.no_grad()
    def prefill(self, prompts: Sequence[Sequence[int]], slot: NonceSlot | None):
        """Read every prompt once: ([B, d] last hidden states, the key/value cache, [B, T]
        mask), rows in the order given, left-padded to the longest prompt T.

        Prompts of very different lengths (a learner that puts the examples in front of the
        probe, beside five that do not: 48 and 9 tokens) are read in groups of similar
        length, each padded only to its own longest, and the groups' caches then joined:
        one padded batch would compute 6 x 48 positions where 2 x 48 + 4 x 9 hold text. The
        joined cache is laid out as one padded batch's would be (each row left-padded to T,
        the padding masked), so decoding goes on exactly as after one batch."""
        from transformers import DynamicCache

        ids, mask = self.pad(prompts, left=True)  # [B, T]
        groups = [list(range(len(prompts)))]
        if self.grouping_prompts():
            groups = length_groups([len(p) for p in prompts])
        if len(groups) == 1:
            positions = (mask.cumsum(-1) - 1).clamp(min=0)
            out = self.hidden(ids, mask, slot, past=DynamicCache(), positions=positions)
            return out.last_hidden_state[:, -1], out.past_key_values, mask
        last, layers = [], []
        for rows in groups:
            group_ids, group_mask = self.pad([prompts[r] for r in rows], left=True)
            positions = (group_mask.cumsum(-1) - 1).clamp(min=0)
            out = self.hidden(group_ids, group_mask, slot, past=DynamicCache(), positions=positions)
            last.append(out.last_hidden_state[:, -1])
            pad = mask.shape[1] - group_ids.shape[1]  # masked out: any value will do
            layers.append(
                [
                    (F.pad(lay.keys, (0, 0, pad, 0)), F.pad(lay.values, (0, 0, pad, 0)))
                    for lay in out.past_key_values.layers
                ]
            )
        joined = [
            (torch.cat([g[i][0] for g in layers]), torch.cat([g[i][1] for g in layers]))
            for i in range(len(layers[0]))
        ]
        order = [r for rows in groups for r in rows]  # batch row -> prompt
        back = torch.tensor([order.index(r) for r in range(len(prompts))], device=self.device)
        cache = DynamicCache(joined)
        cache.batch_select_indices(back)
        return torch.cat(last)[back], cache, mask

    def _next_logprobs(self, hidden, slot, live, hooks, nonce_of_row) -> torch.Tensor:
        """Next-token log-probabilities per live row: its own nonce column only, then its hook."""
        logits = self.logits(hidden, slot, choosing=True).float()  # [L, V + n]
        if nonce_of_row is not None:  # every row at once, not a copy of each row's logits
            logits = self.own_nonce_only(logits, [nonce_of_row[row] for row in live])
        logprobs = F.log_softmax(logits, dim=-1)
        for i, row in enumerate(live):
            hook = hooks[row] if hooks else None
            if hook is not None:
                logprobs[i] = hook(hidden[i : i + 1], logprobs[i : i + 1])[0]
        return logprobs
