"""BERTScore (Zhang, Kishore, Wu, Weinberger & Artzi 2020) with the local encoder.

Each text is encoded by all-MiniLM-L6-v2 (`backends.models.load_encoder("minilm-l6")`);
the contextual token embeddings of one layer (without [CLS]/[SEP]) are L2-normalised and
matched greedily: precision averages each candidate token's best cosine to the reference,
recall each reference token's best cosine to the candidate, F1 is their harmonic mean.
No idf weighting and no baseline rescaling, so scores are on the raw cosine scale
(unrelated sentences are far above 0). Layer 6, the encoder's last, is the one its
sentence-embedding training shaped for semantic similarity.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch


@dataclass(frozen=True)
class BertScoreConfig:
    encoder: str = "minilm-l6"  # backends.models encoder preset
    layer: int = 6  # hidden_states index: 0 = word embeddings, 6 = MiniLM-L6's last layer
    idf: bool = False  # as the task asks: plain means over tokens
    rescale_with_baseline: bool = False
    batch_size: int = 64

    def record(self) -> dict:
        return asdict(self)


def greedy_f1(reference: torch.Tensor, candidate: torch.Tensor) -> float:
    """BERTScore F1 of token embeddings [m, d] (reference) and [n, d] (candidate); 0 if empty."""
    if len(reference) == 0 or len(candidate) == 0:
        return 0.0
    ref = torch.nn.functional.normalize(reference.float(), dim=-1)
    cand = torch.nn.functional.normalize(candidate.float(), dim=-1)
    sim = cand @ ref.T  # [n, m] cosines
    precision = float(sim.max(dim=1).values.mean())
    recall = float(sim.max(dim=0).values.mean())
    if precision + recall <= 0:
        return 0.0
    return 2 * precision * recall / (precision + recall)


class BertScorer:
    """Scores candidate texts against references with one encoder loaded once."""

    def __init__(self, config: BertScoreConfig = BertScoreConfig(), device: str = "cpu"):
        from backends.models import load_encoder

        self.config = config
        self.model, self.tokenizer = load_encoder(config.encoder, device)
        layers = self.model.config.num_hidden_layers
        if not 0 <= config.layer <= layers:
            raise ValueError(f"layer={config.layer}: {config.encoder} has layers 0..{layers}")

    @torch.no_grad()
    def embed(self, texts: list[str]) -> list[torch.Tensor]:
        """Per text, its [tokens, d] contextual embeddings at the chosen layer (no CLS/SEP)."""
        out: list[torch.Tensor] = []
        for start in range(0, len(texts), self.config.batch_size):
            chunk = texts[start : start + self.config.batch_size]
            batch = self.tokenizer(chunk, padding=True, truncation=True, return_tensors="pt")
            batch = batch.to(self.model.device)
            states = self.model(**batch, output_hidden_states=True).hidden_states[self.config.layer]
            lengths = batch["attention_mask"].sum(-1).tolist()
            out.extend(states[row, 1 : n - 1].cpu() for row, n in enumerate(lengths))
        return out

    def sentence_vectors(self, texts: list[str]) -> torch.Tensor:
        """[len(texts), d] unit-length mean-pooled sentence embeddings (the encoder's own
        sentence-transformers pooling is a token mean); an empty text gets a zero row."""
        rows = [t.mean(0) if len(t) else torch.zeros(t.shape[-1]) for t in self.embed(texts)]
        return torch.nn.functional.normalize(torch.stack(rows).float(), dim=-1)

    def f1(self, references: list[str], candidates: list[str]) -> list[float]:
        """BERTScore F1 of each candidate against its reference."""
        if len(references) != len(candidates):
            raise ValueError(f"{len(references)} references but {len(candidates)} candidates")
        refs, cands = self.embed(references), self.embed(candidates)
        return [greedy_f1(r, c) for r, c in zip(refs, cands)]
