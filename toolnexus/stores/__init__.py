"""Conversation stores: where transcripts live between runs, addressed by thread id."""

from __future__ import annotations

from .base import ConversationStore
from .memory import MemoryStore

__all__ = ["ConversationStore", "MemoryStore"]
