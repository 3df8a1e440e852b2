"""Training the injection model (`compaction.safety.model`) on the development part of the corpus.

Documents: every turn of every development case (a carrying turn of an injection is positive, anything else
negative; a turn that recurs, such as the ordinary exchange around the cases, once: weighing it as often as it
occurs set the thresholds so high that the held-out recall fell by half), each carrying turn read together with
its neighbours (positive for an injection: a split one is only whole there), the clean instruction of each
injection, and the lines and sentences of innocent turns. Ordinary text that is not the evaluation's ordinary
chat (LoCoMo and the demo are kept for the evaluation alone) keeps the model quiet on everyday writing: the
redaction corpus's chat, code and logs, the project's own code in short chunks, and Faker's sentences in many
languages.

The model is a logistic regression on the hashed, length-normalised n-gram counts, fitted by Adam on
mini-batches with an L2 penalty, class-balanced. Thresholds come from held-out scores: cases are grouped by the
phrasing they were made from into FOLDS folds (as the corpus splits its parts), one fold is left out of a first
fit, and its scores (a text read as at run time: whole or its best piece) set the lowest logit that keeps the
flagged share of benign development turns at most BENIGN_FP and of ordinary text at most ORDINARY_FP, for a text
alone and for two neighbours read together, and never below 0 (the balanced model's own boundary). The shipped
model is then fitted on everything.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable
from pathlib import Path

import numpy as np

from compaction.safety import model as injection_model
from compaction.safety.encoded import without_runs
from compaction.safety.normalize import fold
from devtools.injection_data import Case

FOLDS = 3
HELD_OUT_FOLD = 0  # the cases of this fold are left out of a first fit, whose scores on them set the thresholds
EPOCHS = 8
BATCH_DOCS = 2_048
LEARNING_RATE = 0.02
SEED = 29
L2 = 1e-5
BENIGN_FP = 0.01  # the goal is 2% on the test part: half of it on development data leaves room for the unseen
# Of the training's ordinary text, which is far denser in ids, hashes and order numbers than chat (and the payloads
# of injections are such tokens): a stricter budget on it left the model a quarter of its held-out recall. Chat
# itself (LoCoMo, the demo) is held out and measured by injection_eval.
ORDINARY_FP = 0.002
GENERIC_WEIGHT = 0.5  # an ordinary sentence weighs half a labelled turn: there are many of them
PAIR_WEIGHT = 0.5  # two neighbours read together: a second view of turns already counted
PIECE_WEIGHT = 0.5  # a line or sentence of an innocent turn, read alone as the model reads pieces
FAKER_LOCALES = (
    "en_US de_DE fr_FR es_ES it_IT pt_BR nl_NL pl_PL ru_RU uk_UA el_GR cs_CZ sv_SE da_DK fi_FI hu_HU ro_RO "
    "vi_VN tl_PH zh_CN ja_JP ko_KR ar_AA he_IL fa_IR th_TH hy_AM ka_GE bn_BD"
).split()
FAKER_SENTENCES = 120  # per locale


@dataclasses.dataclass(frozen=True)
class Doc:
    text: str  # empty for a pair
    label: int
    weight: float
    group: int  # the fold of its case; -1 for ordinary text (always trained on)
    kind: str  # "turn", "pair", "augmented", "ordinary", "ordinary_pair"
    pair: tuple[int, int] | None = None  # the two documents a pair reads together
    language: str = ""  # the case's language ("" for ordinary text)


def _fold(case_id: str) -> int:
    return int(hashlib.sha256(case_id.encode()).hexdigest(), 16) % FOLDS


def case_documents(cases: list[Case], docs: list[Doc]) -> None:
    """Appends each case's turns (a turn repeated across cases, such as the ordinary exchange around them, once)
    and the neighbours read together around its carrying turns to `docs`."""
    seen: dict[str, int] = {}
    for case in cases:
        group = _fold(case.group or case.id)
        targets = set(case.target)
        indices = []
        for index, text in enumerate(case.texts):
            label = int(case.injection and index in targets)
            if label == 0 and text in seen:
                indices.append(seen[text])
                continue
            indices.append(len(docs))
            if label == 0:
                seen[text] = len(docs)
            docs.append(Doc(text, label, 1.0, group, "turn", language=case.language))
        if case.injection and case.text:
            docs.append(
                Doc(case.text, 1, 1.0, group, "clean", language=case.language)
            )  # the instruction before any disguise or frame
        for index, text in enumerate(case.texts):
            if case.injection and index in targets:
                continue  # which line of a carrying turn carries it is not known
            for piece in injection_model.pieces(fold(text)):
                if piece not in seen:
                    seen[piece] = len(docs)
                    docs.append(Doc(piece, 0, PIECE_WEIGHT, group, "piece", language=case.language))
        for index in range(len(case.texts) - 1):
            if index in targets or index + 1 in targets:
                label = int(case.injection)
                pair = (indices[index], indices[index + 1])
                docs.append(Doc("", label, PAIR_WEIGHT, group, "pair", pair, case.language))


def ordinary_documents(texts: list[str], docs: list[Doc]) -> None:
    first = len(docs)
    docs.extend(Doc(text, 0, GENERIC_WEIGHT, -1, "ordinary") for text in texts)
    docs.extend(
        Doc("", 0, GENERIC_WEIGHT, -1, "ordinary_pair", (first + i, first + i + 1)) for i in range(len(texts) - 1)
    )


def ordinary_texts() -> list[str]:
    """Everyday writing that the evaluation does not measure on (see the module docstring)."""
    from faker import Faker

    from devtools import redaction_eval

    texts: list[str] = []
    for path in sorted((redaction_eval.default_corpus() / "negative").glob("*.txt")):
        texts += redaction_eval.file_messages([path])
    texts += _source_chunks()
    for locale in FAKER_LOCALES:
        fake = Faker(locale)
        fake.seed_instance(len(texts))
        texts += [fake.sentence(nb_words=12) for _ in range(FAKER_SENTENCES // 2)]
        texts += [fake.paragraph(nb_sentences=3) for _ in range(FAKER_SENTENCES // 2)]
    return [text for text in texts if text.strip()]


SOURCE_CHUNK_LINES = 6  # lines of the project's code read as one ordinary technical text


def _source_chunks() -> list[str]:
    """The project's own code in short chunks: technical text (paths, commands, identifiers, messages about
    instructions and summaries) that addresses no model. The transcript-safety package, whose patterns spell
    injections out, is left out."""
    from django.conf import settings

    chunks = []
    for package in ("chatcore", "compaction", "project"):
        for path in sorted((Path(settings.BASE_DIR) / package).rglob("*.py")):
            if "safety" in path.parts or "migrations" in path.parts:
                continue
            lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
            chunks += ["\n".join(lines[i : i + SOURCE_CHUNK_LINES]) for i in range(0, len(lines), SOURCE_CHUNK_LINES)]
    return chunks


@dataclasses.dataclass
class Design:
    """The hashed, length-normalised n-gram counts of the documents, as coordinate lists. A pair of neighbours
    is the sum of the two texts' counts, exactly as `model.pair_logits` reads it at run time."""

    rows: np.ndarray
    buckets: np.ndarray
    values: np.ndarray
    size: int

    @classmethod
    def of(cls, texts: list[str], pairs: list[tuple[int, int]]) -> Design:
        read = [without_runs(fold(text)) for text in texts]
        rows, buckets = injection_model.entries(read)
        counts = np.bincount(rows, minlength=len(texts)).astype(np.float64) + injection_model.neutral_counts(read)
        order = np.argsort(rows, kind="stable")
        rows, buckets = rows[order], buckets[order]
        bounds = np.searchsorted(rows, np.arange(len(texts) + 1))
        pair_rows, pair_buckets, pair_counts = [], [], []
        for number, (first, second) in enumerate(pairs):
            for text in (first, second):
                span = slice(bounds[text], bounds[text + 1])
                pair_rows.append(np.full(span.stop - span.start, len(texts) + number))
                pair_buckets.append(buckets[span])
            pair_counts.append(counts[first] + counts[second])
        all_counts = np.concatenate([counts, np.array(pair_counts)])
        rows = np.concatenate([rows, *pair_rows]).astype(np.int32)
        buckets = np.concatenate([buckets, *pair_buckets]).astype(np.int32)
        size = len(texts) + len(pairs)
        values = (1.0 / np.sqrt(np.maximum(all_counts, 1.0))).astype(np.float32)[rows]
        return cls(rows, buckets, values, size)

    def margins(self, weights: np.ndarray) -> np.ndarray:
        return np.bincount(self.rows, weights=weights[self.buckets] * self.values, minlength=self.size)


def fit(design: Design, labels: np.ndarray, sample_weights: np.ndarray, *, epochs: int = EPOCHS):
    """(weights, bias) of a class-balanced, L2-penalised logistic regression, by Adam on mini-batches of
    BATCH_DOCS consecutive documents taken in a shuffled order (a few passes over the data instead of a hundred)."""
    positive = labels == 1
    balance = np.where(positive, 0.5 / max(sample_weights[positive].sum(), 1e-9), 0.5 / sample_weights[~positive].sum())
    scale = sample_weights * balance
    size = 1 << injection_model.BITS
    weights, bias = np.zeros(size), 0.0
    moment, second = np.zeros(size + 1), np.zeros(size + 1)
    bounds = np.searchsorted(design.rows, np.arange(design.size + 1))
    starts = np.arange(0, design.size, BATCH_DOCS)
    random = np.random.default_rng(SEED)
    step = 0
    for _ in range(epochs):
        for first in random.permutation(starts):
            last = min(first + BATCH_DOCS, design.size)
            if not scale[first:last].any():
                continue
            step += 1
            span = slice(bounds[first], bounds[last])
            rows, buckets, values = design.rows[span] - first, design.buckets[span], design.values[span]
            margin = np.bincount(rows, weights=weights[buckets] * values, minlength=last - first) + bias
            # The batch's share of the whole gradient, scaled up to stand for all of it.
            error = (1.0 / (1.0 + np.exp(-margin)) - labels[first:last]) * scale[first:last]
            error *= design.size / (last - first)
            gradient = np.empty(size + 1)
            gradient[:size] = np.bincount(buckets, weights=error[rows] * values, minlength=size) + L2 * weights
            gradient[size] = error.sum()
            moment = 0.9 * moment + 0.1 * gradient
            second = 0.999 * second + 0.001 * gradient * gradient
            update = LEARNING_RATE * (moment / (1 - 0.9**step)) / (np.sqrt(second / (1 - 0.999**step)) + 1e-8)
            weights -= update[:size]
            bias -= update[size]
    return weights, bias


def threshold_for(negatives: np.ndarray, share: float) -> float:
    """The lowest logit at which at most `share` of `negatives` score at or above it."""
    if not len(negatives):
        return 0.0
    ordered = np.sort(negatives)[::-1]
    allowed = int(np.floor(share * len(ordered)))
    return float(np.nextafter(ordered[allowed], np.inf)) if allowed < len(ordered) else float(ordered[-1])


@dataclasses.dataclass
class Trained:
    model: injection_model.Model
    out_of_fold: dict[str, float]  # figures of the cross-validation, for the command's report
    held_out: injection_model.Model | None = None  # the first fit (without the held-out fold), same thresholds


def train(cases: list[Case], ordinary: list[str], *, log: Callable[[str], None] = lambda _: None) -> Trained:
    docs: list[Doc] = []
    case_documents(cases, docs)
    ordinary_documents(ordinary, docs)
    position = {}  # a document's index among the texts alone
    for index, doc in enumerate(docs):
        if doc.pair is None:
            position[index] = len(position)
    texts = [doc for doc in docs if doc.pair is None]
    pairs = [doc for doc in docs if doc.pair is not None]
    docs = texts + pairs  # Design puts the pairs after the texts
    log(f"{len(docs):,} documents ({sum(d.label for d in docs):,} positive); hashing")
    design = Design.of(
        [doc.text for doc in texts], [(position[doc.pair[0]], position[doc.pair[1]]) for doc in pairs if doc.pair]
    )
    labels = np.array([doc.label for doc in docs], dtype=np.float64)
    weights = _balanced_by_language(docs)
    held = np.array([doc.group for doc in docs]) == HELD_OUT_FOLD
    log(f"fit without fold {HELD_OUT_FOLD + 1} of {FOLDS}: {int((~held).sum()):,} documents")
    fold_weights, fold_bias = fit(design, labels, np.where(held, 0.0, weights))
    first = injection_model.Model(fold_weights.astype(np.float32), float(fold_bias), 0.0, 0.0)
    thresholds, figures = _thresholds(first, docs, design.margins(fold_weights) + fold_bias, labels)
    log("the final fit on every document")
    final_weights, bias = fit(design, labels, weights)
    model = injection_model.Model(final_weights.astype(np.float32), float(bias), *thresholds)
    return Trained(
        model=model,
        out_of_fold=figures,
        held_out=dataclasses.replace(first, threshold=thresholds[0], pair_threshold=thresholds[1]),
    )


def _balanced_by_language(docs: list[Doc]) -> np.ndarray:
    """The documents' weights, scaled so that in each language the injections and the innocent texts weigh the
    same: otherwise a language with more injections than look-alikes teaches the model that its script itself is
    an instruction (a language whose injections outnumber its look-alikes has its look-alikes flagged)."""
    weights = np.array([doc.weight for doc in docs])
    totals: dict[tuple[str, int], float] = {}
    for doc, weight in zip(docs, weights, strict=True):
        totals[doc.language, doc.label] = totals.get((doc.language, doc.label), 0.0) + weight
    for index, doc in enumerate(docs):
        if doc.language:
            both = totals.get((doc.language, 0), 0.0) + totals.get((doc.language, 1), 0.0)
            weights[index] *= both / 2 / totals[doc.language, doc.label]
    return weights


def _thresholds(first: injection_model.Model, docs: list[Doc], margins: np.ndarray, labels: np.ndarray):
    """((threshold, pair threshold), figures) from the first fit: a text's logit as the model reads it at run
    time (the whole or its best piece) on the held-out fold's turns and on the ordinary text (which the first fit
    trained on: its budget is therefore the stricter figure), and the neighbours' joint logits likewise."""

    def own(kind: str, held_only: bool) -> tuple[np.ndarray, np.ndarray]:
        chosen = [i for i, d in enumerate(docs) if d.kind == kind and (d.group == HELD_OUT_FOLD or not held_only)]
        scores = injection_model.own_logits(first, [without_runs(fold(docs[i].text)) for i in chosen])[0]
        return scores, labels[chosen]

    turns, turn_labels = own("turn", True)
    ordinary, _ = own("ordinary", False)
    kinds = np.array([doc.kind for doc in docs])
    held = np.array([doc.group for doc in docs]) == HELD_OUT_FOLD
    benign_pairs = margins[(kinds == "pair") & held & (labels == 0)]
    ordinary_pairs = margins[kinds == "ordinary_pair"]
    benign = turns[turn_labels == 0]
    positives = turns[turn_labels == 1]
    # A balanced logistic regression's own boundary is a logit of 0; the false-positive budgets only raise it.
    threshold = max(0.0, threshold_for(benign, BENIGN_FP), threshold_for(ordinary, ORDINARY_FP))
    pair_threshold = max(0.0, threshold_for(benign_pairs, BENIGN_FP), threshold_for(ordinary_pairs, ORDINARY_FP))
    figures = {
        "threshold": threshold,
        "pair_threshold": pair_threshold,
        "recall_turns": float((positives >= threshold).mean()) if len(positives) else 0.0,
        "benign_turns_flagged": float((benign >= threshold).mean()) if len(benign) else 0.0,
        "ordinary_flagged": float((ordinary >= threshold).mean()) if len(ordinary) else 0.0,
    }
    return (threshold, pair_threshold), figures
