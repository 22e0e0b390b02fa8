"""Chunk -> element instances (entities, relationships, claims), by LLM or offline NLP."""
