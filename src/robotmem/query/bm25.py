"""In-memory BM25 postings that score exactly as FTS5's ``bm25()`` (pure: no SQLite).

FTS5 ranks a query by scoring every row that matches any of its words, in C, before it sorts; at 100k
memories a query with a common word (*grip* is in a third of them) spends about 35 ms there. This
index holds the same postings as numpy arrays and computes the same formula vectorised, so a query
costs a few array operations per word and the filter can be applied as a mask before the top-k.

The formula is FTS5's (``fts5_aux.c``; k1 = 1.2, b = 0.75, one column of weight 1): for every query
phrase *i* that a row contains ``f`` times, ``idf(i) · f · (k1 + 1) / (f + k1 · (1 − b + b · D / avgdl))``
summed over the phrases, with ``idf(i) = ln((N − n + 0.5) / (n + 0.5))`` (1e-6 when not positive), N the
rows, n the rows containing the phrase, D the row's token count and avgdl the mean token count. The
same word listed twice in a query counts twice, as in FTS5. Scores here are positive (FTS5 returns the
negation so that smaller sorts first).

Documents are lists of terms as FTS5's tokenizer produced them (``store/sqlite/mirror.py`` asks FTS5 itself). The
index has a sorted main segment and a small delta of documents added since; a changed or removed
document is masked out of the main segment until the next merge.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence

import numpy as np
import numpy.typing as npt

K1 = 1.2
B = 0.75
_MIN_IDF = 1e-6

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


def _idf(rows: float, hits: int) -> float:
    """FTS5's IDF of a phrase that ``hits`` of ``rows`` rows hold (``_MIN_IDF`` when not positive)."""
    idf = math.log((rows - hits + 0.5) / (hits + 0.5))
    return idf if idf > 0 else _MIN_IDF


def _term_part(
    norm: FloatArray, freqs: FloatArray, idf: float, average: float, k1: float, b: float
) -> FloatArray:
    """One term's BM25 part of each document: idf · f · (k1 + 1) / (f + k1 · (1 − b + b · D / avgdl)), from
    the documents' lengths ``norm`` (a fresh array, used in place) and the term's frequencies ``freqs``, in
    one fixed order of operations (so every caller gets the same floats) without a temporary per operation."""
    norm *= b
    norm /= average
    norm += 1.0 - b
    norm *= k1
    norm += freqs
    part = freqs * idf
    part *= k1 + 1.0
    part /= norm
    return part


def _matches(scores: FloatArray, matched: BoolArray) -> tuple[IntArray, FloatArray]:
    """``score``'s dense answer as ``(ids, scores)`` of the matched documents, ids ascending."""
    ids = np.flatnonzero(matched).astype(np.int64)
    return ids, scores.take(ids)


def _union(held: IntArray, more: IntArray) -> IntArray:
    """The sorted distinct ids of ``held`` (sorted, distinct) and ``more`` (distinct: one term's postings)."""
    if len(held) == 0:
        return more if len(more) < 2 or bool(np.all(more[1:] > more[:-1])) else np.sort(more)
    return np.union1d(held, more)


class LexicalIndex:
    """Term postings of documents keyed by integer id, scored with FTS5's BM25."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._term_ids: dict[str, int] = {}
        # Main segment, sorted by (term, doc): postings of term t are [_starts[t], _starts[t + 1]).
        self._starts: IntArray = np.zeros(1, dtype=np.int64)
        self._docs: npt.NDArray[np.int32] = np.zeros(0, dtype=np.int32)
        self._freqs: npt.NDArray[np.float32] = np.zeros(0, dtype=np.float32)
        # Delta segment: documents added since the last merge, by term and by document.
        self._delta: dict[int, dict[int, int]] = {}
        self._delta_docs: dict[int, Counter[int]] = {}
        self._delta_postings = 0
        # Per document id: token count (0 = absent) and whether its main-segment postings are void.
        self._length: FloatArray = np.zeros(0, dtype=np.float64)
        self._void: BoolArray = np.zeros(0, dtype=np.bool_)
        self._voided = 0  # documents whose main postings are void
        # Per term of the main segment: its largest frequency and the shortest document holding it,
        # which bound what the term can add to any score (``_bound``).
        self._max_freq: FloatArray = np.zeros(0, dtype=np.float64)
        self._min_length: FloatArray = np.zeros(0, dtype=np.float64)
        self.documents = 0
        self._total_length = 0.0

    def __len__(self) -> int:
        return self.documents

    def __contains__(self, doc: object) -> bool:
        return isinstance(doc, int) and 0 <= doc < len(self._length) and self._length[doc] > 0

    @property
    def nbytes(self) -> int:
        """Bytes held by the main segment and the per-document arrays (not the delta or the term names)."""
        arrays = (self._starts, self._docs, self._freqs, self._length, self._void)
        return sum(int(a.nbytes) for a in arrays)

    @property
    def capacity(self) -> int:
        """One more than the largest document id the arrays can hold."""
        return len(self._length)

    def _reserve(self, doc: int) -> None:
        if doc < len(self._length):
            return
        size = max(1024, doc + 1, 2 * len(self._length))
        self._length = np.concatenate([self._length, np.zeros(size - len(self._length))])
        self._void = np.concatenate([self._void, np.zeros(size - len(self._void), dtype=np.bool_)])

    def _term(self, term: str) -> int:
        found = self._term_ids.get(term)
        if found is None:
            found = self._term_ids[term] = len(self._term_ids)
        return found

    def term_id(self, term: str) -> int:
        """Return the id of ``term``, giving it one if new (for ``build_ids``)."""
        return self._term(term)

    def build(self, documents: Iterable[tuple[int, Sequence[str]]]) -> None:
        """Replace the whole index by ``documents`` (``(doc, terms)`` pairs, each doc once)."""
        self._reset()
        self._load((doc, [self._term(t) for t in terms]) for doc, terms in documents)

    def build_ids(self, documents: Callable[[LexicalIndex], Iterable[tuple[int, list[int]]]]) -> None:
        """Replace the whole index by ``documents(self)``: ``(doc, term ids)`` made with ``term_id``.

        The fast way to load many documents: the caller maps tokens to ids with its own cache.
        """
        self._reset()
        self._load(documents(self))

    def _load(self, documents: Iterable[tuple[int, list[int]]]) -> None:
        # Postings go into numpy blocks as they come: a Python list of every posting would hold
        # tens of MB (and keep them in the allocator) at 100k documents.
        term_blocks: list[IntArray] = []
        doc_blocks: list[IntArray] = []
        term_list: list[int] = []
        doc_list: list[int] = []
        lengths: dict[int, int] = {}

        def flush() -> None:
            term_blocks.append(np.asarray(term_list, dtype=np.int64))
            doc_blocks.append(np.asarray(doc_list, dtype=np.int64))
            term_list.clear()
            doc_list.clear()

        for doc, ids in documents:
            if not ids:
                continue
            term_list.extend(ids)
            doc_list.extend([doc] * len(ids))
            lengths[doc] = len(ids)
            if len(term_list) >= 65536:
                flush()
        flush()
        self._reserve(max(lengths, default=0))
        for doc, length in lengths.items():
            self._length[doc] = length
        self.documents = len(lengths)
        self._total_length = float(sum(lengths.values()))
        self._set_main(np.concatenate(term_blocks), np.concatenate(doc_blocks), None)

    def _set_main(self, terms: IntArray, docs: IntArray, freqs: npt.NDArray[np.float32] | None) -> None:
        """Sort ``(term, doc[, freq])`` triples into the main segment; repeated pairs add up."""
        stride = np.int64(max(len(self._length), 1))
        keys = terms * stride + docs
        if freqs is None:
            keys, counts = np.unique(keys, return_counts=True)
            weights = counts.astype(np.float32)
        else:
            order = np.argsort(keys, kind="stable")
            keys, weights = keys[order], freqs[order]
        self._docs = (keys % stride).astype(np.int32)
        self._freqs = weights.astype(np.float32)
        self._starts = np.searchsorted(keys // stride, np.arange(len(self._term_ids) + 1)).astype(np.int64)
        terms_held = len(self._starts) - 1
        self._max_freq = np.zeros(terms_held, dtype=np.float64)
        self._min_length = np.full(terms_held, np.inf, dtype=np.float64)
        held = np.flatnonzero(np.diff(self._starts) > 0)
        if len(held):  # the terms with postings lie back to back, so each reduction spans one term
            first = self._starts[held]
            self._max_freq[held] = np.maximum.reduceat(self._freqs, first)
            self._min_length[held] = np.minimum.reduceat(self._length.take(self._docs), first)

    def add(self, doc: int, terms: Sequence[str]) -> None:
        """Index ``doc`` with ``terms`` (replacing what it had). A document without terms is not indexed."""
        self.add_ids(doc, [self._term(t) for t in terms])

    def add_ids(self, doc: int, terms: Sequence[int]) -> None:
        """``add`` with term ids made by ``term_id``."""
        self.remove(doc)
        if not terms:
            return
        self._reserve(doc)
        counts = Counter(terms)
        for term, freq in counts.items():
            self._delta.setdefault(term, {})[doc] = freq
        self._delta_docs[doc] = counts
        self._delta_postings += len(counts)
        self._length[doc] = len(terms)
        self.documents += 1
        self._total_length += len(terms)

    def remove(self, doc: int) -> None:
        """Drop ``doc`` (no-op if absent)."""
        if doc not in self:
            return
        self._total_length -= float(self._length[doc])
        self._length[doc] = 0.0
        self.documents -= 1
        counts = self._delta_docs.pop(doc, None)
        if counts is None:
            self._void[doc] = True
            self._voided += 1
            return
        for term in counts:
            del self._delta[term][doc]
        self._delta_postings -= len(counts)

    def needs_merge(self) -> bool:
        """Whether the delta (or the void part of main) has grown enough to fold into the main segment."""
        dead = int(np.count_nonzero(self._void))
        return self._delta_postings > max(4096, len(self._docs) // 16) or dead > max(
            1024, self.documents // 8
        )

    def merge(self) -> None:
        """Fold the delta into the main segment and forget void postings."""
        keep = ~self._void[self._docs] if len(self._docs) else np.zeros(0, dtype=np.bool_)
        term_of_posting = np.repeat(np.arange(len(self._starts) - 1, dtype=np.int64), np.diff(self._starts))
        terms = [term_of_posting[keep]]
        docs = [self._docs[keep].astype(np.int64)]
        freqs = [self._freqs[keep]]
        for term, postings in self._delta.items():
            if postings:
                terms.append(np.full(len(postings), term, dtype=np.int64))
                docs.append(np.fromiter(postings.keys(), dtype=np.int64, count=len(postings)))
                freqs.append(np.fromiter(postings.values(), dtype=np.float32, count=len(postings)))
        self._delta.clear()
        self._delta_docs.clear()
        self._delta_postings = 0
        self._void[:] = False
        self._voided = 0
        self._set_main(np.concatenate(terms), np.concatenate(docs), np.concatenate(freqs))

    def _postings(self, term: int, allowed: BoolArray | None = None) -> tuple[IntArray, FloatArray, int]:
        """The live postings of ``term`` (documents and frequencies), only of the documents ``allowed``
        (a mask as long as ``_length``) lets pass when given, and how many live postings it has in all."""
        docs: IntArray = np.zeros(0, dtype=np.int64)
        freqs: FloatArray = np.zeros(0, dtype=np.float64)
        hits = 0
        if term + 1 < len(self._starts):
            lo, hi = int(self._starts[term]), int(self._starts[term + 1])
            held, weights = self._docs[lo:hi], self._freqs[lo:hi]
            void = self._void.take(held) if self._voided else None
            hits = len(held) - (int(np.count_nonzero(void)) if void is not None else 0)
            keep = None if allowed is None else allowed.take(held)
            if void is not None and hits < len(held):
                keep = ~void if keep is None else keep & ~void
            if keep is not None:  # positions, then take: faster than a boolean index of each array
                at = np.flatnonzero(keep)
                held, weights = held.take(at), weights.take(at)
            docs, freqs = held.astype(np.int64), weights.astype(np.float64)
        extra = self._delta.get(term)
        if extra:
            hits += len(extra)
            more = np.fromiter(extra.keys(), dtype=np.int64, count=len(extra))
            counts = np.fromiter(extra.values(), dtype=np.float64, count=len(extra))
            if allowed is not None:
                wanted = allowed[more]
                more, counts = more[wanted], counts[wanted]
            docs = np.concatenate([docs, more])
            freqs = np.concatenate([freqs, counts])
        return docs, freqs, hits

    def score(
        self,
        phrases: Sequence[str],
        min_coverage: float = 0.0,
        k1: float = K1,
        b: float = B,
        totals: tuple[int, float] | None = None,
        allowed: BoolArray | None = None,
    ) -> tuple[FloatArray, BoolArray]:
        """Return ``(scores, matched)`` over document ids for the OR of the single-term ``phrases``.

        ``scores[d]`` is FTS5's ``-bm25()`` of document ``d``; ``matched[d]`` says whether ``d``
        contains any phrase (only matched documents are ranked by FTS5) and, when ``min_coverage``
        is above 0, whether the IDFs of the phrases it contains add up to that share of the IDFs of
        all phrases (a phrase no document holds counts with the IDF of a word in none). ``k1`` and ``b``
        other than FTS5's 1.2 and 0.75 score with the same formula and those constants. ``totals``
        (rows, tokens) replaces the index's own when the ranked set also counts documents without terms,
        which FTS5 counts but this index does not hold. ``allowed`` (a mask over ids; past its end: none)
        scores only the documents it lets pass: the others are neither scored nor matched, and the
        statistics stay those of every document.
        """
        size = len(self._length)
        scores = np.zeros(size, dtype=np.float64)
        matched = np.zeros(size, dtype=np.bool_)
        statistics = self._statistics(totals)
        if statistics is None:
            return scores, matched
        rows, average = statistics
        covered = np.zeros(size, dtype=np.float64) if min_coverage > 0 else None
        passing = self._padded(allowed)
        mass = 0.0
        for phrase in phrases:
            term = self._term_ids.get(phrase)
            if term is None:
                docs, freqs, hits = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64), 0
            else:
                docs, freqs, hits = self._postings(term, passing)
            idf = _idf(rows, hits)
            mass += idf
            if len(docs) == 0:
                continue
            part = _term_part(self._length.take(docs), freqs, idf, average, k1, b)
            # A document holds a term once (its main postings are void while it sits in the delta), so
            # the scatter adds each document's part once, in the order of the phrases.
            scores[docs] += part
            matched[docs] = True
            if covered is not None:
                covered[docs] += idf
        if covered is not None:
            matched &= covered >= min_coverage * mass - 1e-12
        return scores, matched

    def coverage(
        self, phrases: Sequence[str], ids: IntArray, totals: tuple[int, float] | None = None
    ) -> FloatArray:
        """Return, for each of ``ids``, the share of the phrases' IDFs that the phrases it contains carry: the
        ``min_coverage`` test of ``score`` answered for a few documents (a document holding no phrase has 0;
        a phrase no document holds counts with the IDF of a word in none). Each document is looked up in
        each phrase's postings (``_found_in``), so the cost follows ``ids``, not the postings' lengths."""
        shares = np.zeros(len(ids), dtype=np.float64)
        statistics = self._statistics(totals)
        if statistics is None or not len(ids):
            return shares
        rows, _ = statistics
        inside = np.flatnonzero((ids >= 0) & (ids < len(self._length)))
        asked = ids[inside]
        covered = np.zeros(len(asked), dtype=np.float64)
        mass = 0.0
        for phrase in phrases:
            term = self._term_ids.get(phrase)
            hits = 0 if term is None else self._hits(term)
            idf = _idf(rows, hits)
            mass += idf
            if term is not None and hits:
                covered[self._found_in(term, asked)[0]] += idf
        if mass > 0:
            shares[inside] = covered / mass
        return shares

    def _found_in(self, term: int, docs: IntArray) -> tuple[IntArray, FloatArray]:
        """The positions in ``docs`` (ids within the per-document arrays, in any order) of those holding
        ``term`` (live postings only), and their frequencies: each looked up in the term's sorted postings,
        so the cost follows ``docs``, not the postings' length."""
        at: IntArray = np.zeros(0, dtype=np.int64)
        freqs: FloatArray = np.zeros(0, dtype=np.float64)
        if term + 1 < len(self._starts):
            lo, hi = int(self._starts[term]), int(self._starts[term + 1])
            if hi > lo:
                held = self._docs[lo:hi]  # sorted: the main segment is ordered by (term, doc)
                keys = docs.astype(held.dtype)  # ids fit: else searchsorted copies ``held`` to widen it
                slot = np.minimum(np.searchsorted(held, keys), hi - lo - 1)
                found = held.take(slot) == keys
                if self._voided:
                    found &= ~self._void.take(docs)
                at = np.flatnonzero(found)
                freqs = self._freqs[lo:hi].take(slot.take(at)).astype(np.float64)
        extra = self._delta.get(term)
        if extra:
            more = np.flatnonzero(np.isin(docs, np.fromiter(extra, dtype=np.int64, count=len(extra))))
            counts = [extra[doc] for doc in docs.take(more).tolist()]
            at = np.concatenate([at, more])
            freqs = np.concatenate([freqs, np.asarray(counts, dtype=np.float64)])
        return at, freqs

    def _found_among(self, term: int, chosen: BoolArray, docs: IntArray) -> tuple[IntArray, FloatArray]:
        """``_found_in`` for many ``docs`` (sorted, distinct; ``chosen`` marks them over every id): the
        term's postings are masked by ``chosen``, a pass over them that stays in the cache, and the few
        found are placed in ``docs``."""
        found: IntArray = np.zeros(0, dtype=np.int64)
        freqs: FloatArray = np.zeros(0, dtype=np.float64)
        if term + 1 < len(self._starts):
            lo, hi = int(self._starts[term]), int(self._starts[term + 1])
            held = self._docs[lo:hi]
            keep = chosen.take(held)
            if self._voided:
                keep &= ~self._void.take(held)
            hit = np.flatnonzero(keep)
            found = held.take(hit).astype(np.int64)
            freqs = self._freqs[lo:hi].take(hit).astype(np.float64)
        extra = self._delta.get(term)
        if extra:
            more = np.fromiter(extra, dtype=np.int64, count=len(extra))
            counts = np.fromiter(extra.values(), dtype=np.float64, count=len(extra))
            wanted = chosen[more]
            found = np.concatenate([found, more[wanted]])
            freqs = np.concatenate([freqs, counts[wanted]])
        return np.searchsorted(docs, found), freqs

    def _score_among(
        self,
        phrases: Sequence[str],
        docs: IntArray,
        min_coverage: float,
        k1: float,
        b: float,
        statistics: tuple[float, float],
    ) -> tuple[FloatArray, BoolArray]:
        """``score`` of only ``docs`` (distinct ids within the per-document arrays), as arrays along
        ``docs``: the same floats, each phrase's part added in the query's order, without a pass over
        every document or every posting of a common word."""
        rows, average = statistics
        chosen = np.zeros(len(self._length), dtype=np.bool_)
        chosen[docs] = True
        lengths = self._length.take(docs)
        scores = np.zeros(len(docs), dtype=np.float64)
        matched = np.zeros(len(docs), dtype=np.bool_)
        covered = np.zeros(len(docs), dtype=np.float64) if min_coverage > 0 else None
        mass = 0.0
        for phrase in phrases:
            term = self._term_ids.get(phrase)
            hits = 0 if term is None else self._hits(term)
            idf = _idf(rows, hits)
            mass += idf
            if term is None or not hits:
                continue
            at, freqs = self._found_among(term, chosen, docs)
            if len(at) == 0:
                continue
            part = _term_part(lengths.take(at), freqs, idf, average, k1, b)  # as ``score``: the same floats
            scores[at] += part
            matched[at] = True
            if covered is not None:
                covered[at] += idf
        if covered is not None:
            matched &= covered >= min_coverage * mass - 1e-12
        return scores, matched

    def _padded(self, allowed: BoolArray | None) -> BoolArray | None:
        """``allowed`` as long as the per-document arrays (ids past its end: not allowed), for ``_postings``."""
        if allowed is None:
            return None
        size = len(self._length)
        passing = np.zeros(size, dtype=np.bool_)
        passing[: min(size, len(allowed))] = allowed[:size]
        return passing

    def _statistics(self, totals: tuple[int, float] | None) -> tuple[float, float] | None:
        """(rows, average length) of ``totals`` or of the index itself; None when nothing is held."""
        documents, tokens = totals if totals is not None else (self.documents, self._total_length)
        if documents <= 0 or self.documents == 0:
            return None
        rows = float(documents)
        return rows, max(float(tokens) / rows, 1e-9)

    def _bound(self, term: int, k1: float, b: float, average: float) -> float:
        """The most ``term`` can add to a score, per unit of IDF: ``f · (k1 + 1) / (f + k1 · (1 − b + b · D /
        avgdl))`` grows with the frequency f and shrinks with the length D, so the largest frequency and
        the shortest document holding the term (not necessarily the same document) bound it."""
        freq, length = 0.0, math.inf
        if term < len(self._max_freq):
            freq, length = float(self._max_freq[term]), float(self._min_length[term])
        extra = self._delta.get(term)
        if extra:
            freq = max(freq, float(max(extra.values())))
            length = min(length, float(self._length.take(np.fromiter(extra, dtype=np.int64)).min()))
        if freq <= 0:
            return 0.0
        return freq * (k1 + 1.0) / (freq + k1 * (1.0 - b + b * length / average))

    def score_best(
        self,
        phrases: Sequence[str],
        best: int,
        min_coverage: float = 0.0,
        k1: float = K1,
        b: float = B,
        totals: tuple[int, float] | None = None,
        allowed: BoolArray | None = None,
    ) -> tuple[IntArray, FloatArray]:
        """The matches of ``score`` that may be among the ``best`` highest scores, as ``(ids, scores)``
        (ids ascending): every document scoring at or above the ``best``-th score of ``score`` is there,
        with the same score; others may be left out.

        MaxScore: the terms are taken in order of the most they can add (``_bound`` × IDF, rare terms
        first); only documents holding a taken term are scored, on every term (``_score_among``). Once
        the ``best``-th score among them beats what the terms not taken could add together (or a document
        holding none of the taken terms cannot reach ``min_coverage``), no other document can rank. A
        query of one rare word and a few common ones then scores the rare word's postings only, and looks
        the common ones up for those documents instead of scoring all of theirs.
        """
        statistics = self._statistics(totals)
        if best <= 0 or statistics is None:
            return _matches(*self.score(phrases, min_coverage, k1, b, totals, allowed))
        rows, average = statistics
        weight: dict[int, float] = {}  # term → its IDF times how often the query lists it
        mass = 0.0
        for phrase in phrases:
            term = self._term_ids.get(phrase)
            hits = self._hits(term) if term is not None else 0
            idf = _idf(rows, hits)
            mass += idf
            if term is not None and hits:
                weight[term] = weight.get(term, 0.0) + idf
        most = {t: w * self._bound(t, k1, b, average) for t, w in weight.items()}
        order = sorted(most, key=lambda t: (-most[t], t))
        passing = self._padded(allowed)
        candidates: IntArray = np.zeros(0, dtype=np.int64)
        for taken in range(1, len(order)):
            docs, _, _ = self._postings(order[taken - 1], passing)
            candidates = _union(candidates, docs)
            rest = order[taken:]
            # The most a document holding none of the taken terms can score, and can cover.
            ceiling = sum(most[t] for t in rest) * (1.0 + 1e-9)
            reach = mass - sum(weight[t] for t in order[:taken])
            if min_coverage > 0 and reach < min_coverage * mass - 1e-9:
                scores, matched = self._score_among(phrases, candidates, min_coverage, k1, b, statistics)
                return candidates[matched], scores[matched]
            if len(candidates) < best:
                continue
            scores, matched = self._score_among(phrases, candidates, min_coverage, k1, b, statistics)
            found = scores[matched]
            if len(found) >= best and np.partition(found, len(found) - best)[len(found) - best] > ceiling:
                return candidates[matched], found
        return _matches(*self.score(phrases, min_coverage, k1, b, totals, allowed))

    def _hits(self, term: int) -> int:
        """How many live documents hold ``term``."""
        count = len(self._delta.get(term, ()))
        if term + 1 < len(self._starts):
            lo, hi = int(self._starts[term]), int(self._starts[term + 1])
            count += hi - lo
            if self._voided and hi > lo:
                count -= int(np.count_nonzero(self._void.take(self._docs[lo:hi])))
        return count
