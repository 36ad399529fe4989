"""Decisions over memories: duplicates, consolidation and decay, and which of two versions sync keeps."""
