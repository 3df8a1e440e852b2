"""Summarizer backends that need no model: what a fresh install runs (invariant 8)."""

from compaction.summarizers.offline import SECTIONS, summarize_offline

__all__ = ["SECTIONS", "summarize_offline"]
