"""A worker: the one place that knows which device the model runs on."""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class Worker:
    device: torch.device
    vocab_size: int = 512
    num_speculative_tokens: int = 3
    seed: int = 0

    def dummy_target_logits(self, num_tokens: int) -> torch.Tensor:
        """Deterministic logits on the worker's device, as a target model would produce them."""
        generator = torch.Generator().manual_seed(self.seed)
        logits = torch.randn(num_tokens, self.vocab_size, generator=generator)
        return logits.to(self.device)
