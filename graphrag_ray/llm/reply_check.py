"""A stage that gets nothing usable from the model stops early, before it pays for the rest:
prompts tuned into nonsense, a model that answers "OK." to everything, a template with its
placeholders unfilled.

Each worker notes whether a reply was usable (the stage says what usable means: extraction,
records in the format its prompt asks for); among a stage's first `llm.check_replies`
replies, `llm.unusable_share` of them or more unusable stops the stage: every further call of
it is refused with the reason, a sample reply and what to look at. The check is held with
the job's rate budget (`rate_limiter.LocalRateLimiter`, `distributed/shared_budget`), the
one place every worker of a job shares, on either engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from graphrag_ray.errors import LLMError

SAMPLE_CHARS = 200


class UnusableReplies(LLMError):
    """A stage's first replies were unusable: the build stops, naming the cause."""


@dataclass
class ReplyCheck:
    """The first `calls` replies of each stage, and a verdict once they are in."""
    calls: int
    share: float
    noted: dict[str, list[int]] = field(default_factory=dict)  # stage -> [replies, unusable]
    verdicts: dict[str, str] = field(default_factory=dict)  # stage -> why it stopped

    def note(self, stage: str, usable: bool, sample: str, look_at: str) -> str | None:
        """A reply of `stage`; its verdict when this reply settles it (else None)."""
        if self.calls <= 0 or stage in self.verdicts:
            return self.verdicts.get(stage)
        counts = self.noted.setdefault(stage, [0, 0])
        if counts[0] >= self.calls:
            return None
        counts[0] += 1
        counts[1] += not usable
        if counts[0] == self.calls and counts[1] >= self.share * self.calls:
            shown = " ".join(sample.split())[:SAMPLE_CHARS]
            self.verdicts[stage] = (
                f"stage {stage} stopped: {counts[1]} of its first {counts[0]} replies were "
                f"unusable (one of them: {shown!r}); check {look_at}, or the model "
                "(llm.model) that answered it; nothing was published")
        return self.verdicts.get(stage)

    def verdict(self, stage: str) -> str | None:
        return self.verdicts.get(stage)
