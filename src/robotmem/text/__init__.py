"""How words are read: tokens and FTS5 queries, a lesson's wording and filler, the context values a text
names, and the regex classification of a lesson (category, confidence, tags, parameters)."""
