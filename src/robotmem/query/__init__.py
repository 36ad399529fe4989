"""What a recall asks and how answers rank: filters, spatial order, BM25 postings, vectors, score fusion."""
