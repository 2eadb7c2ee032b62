"""CoLLEGe's training losses (Teehan, Lake & Ren 2024), plus the cheap embedding-space ones.

LM losses per episode (`lm_losses`): cross-entropy of a query with the new token, of a
nonce-free negative query, and distillation against the frozen LM reading the original
word (hidden-state cosine and logit MSE at aligned positions). Embedding-space losses,
which need no LM forward: `regression_loss` (the generated vector onto the word's own
embedding, as Form-Context and a la carte learn) and `contrastive_loss` (the word's own
embedding must beat every other word's: the retrieval the benchmarks measure). And one
on the LM's own output (`unlikelihood_loss`): the new token should not be what a greedy
definition of it keeps saying.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F

from backends.definitions import PROMPT
from backends.nonce_lm import NonceLM, NonceSlot, word_pattern

if TYPE_CHECKING:
    from training.college import TrainConfig


def regression_loss(v: torch.Tensor, ref: torch.Tensor, norm: float) -> torch.Tensor:
    """Generated [B, d] vs reference [B, d]: 1 - cosine, plus (||v|| / norm - 1)^2.

    Direction and length apart: a squared error against the rescaled reference would pay
    the vector to shrink while its direction is still uncertain (at cosine c the best
    length is c * norm), and Gemma's own rows all have norm ~1.03."""
    cos = F.cosine_similarity(v, ref, dim=-1)
    return (1 - cos).mean() + (v.norm(dim=-1) / norm - 1).pow(2).mean()


def base_rate_loss(v_out: torch.Tensor, hidden: torch.Tensor, lognorm: torch.Tensor):
    """The nonce-free negative query's loss, on a bank of precomputed LM states.

    With one extra logit column s = h . v_out, the cross-entropy of a nonce-free token y
    is -log p_LM(y) + log(1 + exp(s - Z)), Z the LM's own log-normaliser at h. Only the
    second term depends on the generator, so the negative query costs a matrix product:
    [B, d] output vectors x [N, d] states -> mean softplus(s - Z)."""
    scores = v_out @ hidden.T  # [B, N]
    return F.softplus(scores - lognorm[None]).mean()


def contrastive_loss(v: torch.Tensor, vocab: torch.Tensor, target: torch.Tensor, tau: float):
    """InfoNCE over a word list: generated [B, d] vs unit reference rows `vocab` [W, d];
    row b's own word is `target[b]`. Cosine / tau, cross-entropy: the word's own
    embedding must be nearer than every other word's, not just near on average."""
    scores = F.normalize(v, dim=-1) @ vocab.T / tau  # [B, W]
    return F.cross_entropy(scores, target)


@dataclass(frozen=True)
class Episode:
    """One LM episode: a query that uses the new token in the word's place, the same
    query with the word for the frozen teacher, and a nonce-free negative query."""

    student: list[int]  # query ids, the word replaced by `nonce_id`
    teacher: list[int]  # query ids with the word's own tokens
    align: list[tuple[int, int]]  # (student pos, teacher pos), from the one predicting the nonce
    negative: list[int]  # ids of a sentence without the new token
    nonce_id: int  # V + e for the e-th episode of a batch

    @property
    def first_word_token(self) -> int:
        """The teacher's first token of the word: where the student reads the nonce."""
        return self.teacher[self.student.index(self.nonce_id)]


def episode_ids(lm: NonceLM, text: str, word: str, nonce_id: int):
    """(student ids with the nonce, teacher ids with the word, [(student pos, teacher pos)])
    for every position from the one predicting the first nonce onwards."""
    tok = lm.tokenizer
    student = [tok.bos_token_id] if tok.bos_token_id is not None else []
    teacher = list(student)
    align = []
    pattern = word_pattern(word)
    pieces, found = pattern.split(text), [m.group(0) for m in pattern.finditer(text)]
    for k, piece in enumerate(pieces):
        last = k == len(pieces) - 1
        chunk = piece if last else piece.rstrip(" ")
        for i in tok(chunk, add_special_tokens=False)["input_ids"] if chunk else []:
            student.append(i)
            teacher.append(i)
            align.append((len(student) - 1, len(teacher) - 1))
        if not last:
            student.append(nonce_id)
            teacher += tok(" " + found[k], add_special_tokens=False)["input_ids"]
            align.append((len(student) - 1, len(teacher) - 1))
    first = student.index(nonce_id)
    align = [(s, t) for s, t in align if first - 1 <= s < len(student) - 1]
    return student, teacher, align


def lm_losses(
    lm: NonceLM,
    slot: NonceSlot,
    episodes: list[Episode],
    cfg: TrainConfig,
    gen: torch.Generator,
    kinds: list[str] | None = None,
):
    """Query CE with the nonce, negative-query CE, hidden cosine and logit MSE distillation.

    Episode e's new token is V + e. With `kinds` (a name per episode's query) the parts
    also hold the query CE of each kind apart, `ce_<kind>`: logged only, the loss is the
    same."""
    E = len(episodes)
    hidden, nll, rows = student_nll(lm, slot, episodes)
    is_query = rows < E  # rows E..2E-1 are the negative queries
    ce_query, ce_negative = nll[is_query].mean(), nll[~is_query].mean()
    cos, mse = distillation(lm, slot, episodes, hidden, cfg, gen)
    total = ce_query + ce_negative + cfg.distill_cos * cos + cfg.distill_mse * mse
    parts = {
        "ce_query": ce_query,
        "ce_negative": ce_negative,
        "distill_cos": cos,
        "distill_mse": mse,
    }
    for kind in sorted(set(kinds or ())):
        of_kind = torch.tensor([k == kind for k in kinds], device=nll.device)  # [E]
        parts[f"ce_{kind}"] = nll[is_query & of_kind[rows % E]].mean()
    return total, {k: float(v.detach()) for k, v in parts.items()}


def student_nll(lm: NonceLM, slot: NonceSlot, episodes: list[Episode]):
    """The LM with the new tokens reading each episode's query, then its negative query:
    final hidden states [2E, T, d], and the next-token NLL [N] at every predicting
    position with the sequence row [N] it belongs to (row e and E + e: episode e)."""
    E = len(episodes)
    seqs = [ep.student for ep in episodes] + [ep.negative for ep in episodes]
    ids, mask = lm.pad(seqs, left=False)
    hidden = lm.hidden(ids, mask, slot).last_hidden_state  # [2E, T, d]
    dev = hidden.device  # index tensors live with what they index (CUDA refuses a CPU index)
    rows = torch.tensor([r for r, s in enumerate(seqs) for _ in range(len(s) - 1)], device=dev)
    pos = torch.tensor([p for s in seqs for p in range(len(s) - 1)], device=dev)
    h = hidden[rows, pos]  # [N, d], every predicting position
    # each row sees its own episode's new token only: [N, V + E]
    own = (lm.vocab_size + rows % E).tolist()
    logits = lm.own_nonce_only(lm.logits(h, slot).float(), own)
    nll = F.cross_entropy(logits, ids[rows, pos + 1], reduction="none")
    return hidden, nll, rows


def distillation(
    lm: NonceLM,
    slot: NonceSlot,
    episodes: list[Episode],
    hidden: torch.Tensor,
    cfg: TrainConfig,
    gen: torch.Generator,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(1 - cosine of hidden states, MSE of centred logits) between the student's `hidden`
    [2E, T, d] and the frozen LM reading the original word, at aligned positions. The MSE
    compares the teacher's top-k columns, random shared ones, and the new token's column
    against the teacher's logit for the word's first token."""
    V, dev = lm.vocab_size, hidden.device
    with torch.no_grad():  # the teacher: the same frozen LM reading the original word
        t_ids, t_mask = lm.pad([ep.teacher for ep in episodes], left=False)
        t_hidden = lm.hidden(t_ids, t_mask, None).last_hidden_state  # [E, T', d]
    s_at = torch.tensor([(e, s) for e, ep in enumerate(episodes) for s, _ in ep.align], device=dev)
    t_at = torch.tensor([(e, t) for e, ep in enumerate(episodes) for _, t in ep.align], device=dev)
    hs = hidden[s_at[:, 0], s_at[:, 1]]  # [M, d]
    ht = t_hidden[t_at[:, 0], t_at[:, 1]]  # [M, d]
    cos = 1 - F.cosine_similarity(hs, ht, dim=-1).mean()

    s_logits = lm.logits(hs, slot).float()  # [M, V + E]
    s_logits = torch.cat([s_logits[:, :V], s_logits[:, V:].gather(1, s_at[:, :1])], 1)  # own nonce
    with torch.no_grad():
        t_logits = lm.logits(ht, None).float()  # [M, V]
        first_tok = torch.tensor([ep.first_word_token for ep in episodes], device=dev)
        t_logits = torch.cat([t_logits, t_logits.gather(1, first_tok[t_at[:, 0], None])], 1)
        cols = torch.cat(
            [
                t_logits[:, :V].topk(cfg.topk, dim=-1).indices,
                torch.randint(0, V, (1, cfg.random_cols), generator=gen)  # CPU: reproducible
                .to(dev)
                .expand(len(ht), -1),
                torch.full((len(ht), 1), V, device=dev),
            ],
            1,
        )  # [M, k + r + 1]
    s_sel, t_sel = s_logits.gather(1, cols), t_logits.gather(1, cols)
    mse = F.mse_loss(s_sel - s_sel.mean(1, keepdim=True), t_sel - t_sel.mean(1, keepdim=True))
    return cos, mse


def unlikelihood_loss(lm: NonceLM, v_in: torch.Tensor, v_out: torch.Tensor, max_new_tokens: int):
    """Unlikelihood (Welleck et al. 2020) of the new token in the LM's own greedy definitions.

    Each of the B concepts (rows of `v_in`, `v_out`) is asked the app's definition probe
    with "dax" as its token; the frozen LM answers greedily, then reads the answers back,
    and every answer position pays -log(1 - p(own new token)). Teacher-forced queries
    never show the LM its own loops (`a "dax" or "dax" or ...`), which is where a one-shot
    output vector goes wrong; this term sees them. Generation and the hidden states use
    the vectors as they are (no graph), so the gradient reaches the output vector alone:
    the one that is predicted. Returns (loss, {"unlikelihood", "nonce_emitted": new tokens
    per answer})."""
    V, B = lm.vocab_size, len(v_in)
    fixed = NonceSlot(v_in.detach(), v_out.detach())
    nonces = [V + b for b in range(B)]
    prompts = [lm.encode(PROMPT.format(word="dax"), "dax", n) for n in nonces]
    with torch.no_grad():
        answers = lm.generate(prompts, fixed, None, max_new_tokens, nonce_of_row=nonces)
        seqs = [p + a for p, a in zip(prompts, answers)]
        ids, mask = lm.pad(seqs, left=False)
        hidden = lm.hidden(ids, mask, fixed).last_hidden_state  # [B, T, d]
    at = [  # every position that predicts an answer token
        (b, t) for b, (p, s) in enumerate(zip(prompts, seqs)) for t in range(len(p) - 1, len(s) - 1)
    ]
    rows, pos = torch.tensor(at).T.to(hidden.device)
    logits = lm.logits(hidden[rows, pos], NonceSlot(fixed.inputs, v_out)).float()  # [N, V + B]
    own = torch.cat([logits[:, :V], logits[:, V:].gather(1, rows[:, None])], 1)  # own nonce last
    # -log(1 - p) as log-normaliser minus the other columns' log-mass: exact, and its
    # gradient does not vanish where the loop has made p = 1 in floating point
    loss = (own.logsumexp(-1) - own[:, :-1].logsumexp(-1)).mean()
    emitted = sum(t >= V for a in answers for t in a) / B
    return loss, {"unlikelihood": float(loss.detach()), "nonce_emitted": emitted}
