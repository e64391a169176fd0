"""The grounded answer, in small units (everything here is pure: `Scholar` does the I/O).

- `prompt`   — the model's rules, the question and the numbered passages it may cite;
- `quotes`   — a sentence splitter that knows scripture references and brackets, the form
               quotations are compared in, the quote and excerpt shown for a passage;
- `verify`   — every citation and quotation of a model answer checked against the passages,
               as small named steps (read markers → check native citations → check quotations
               → rewrite);
- `result`   — `Answer`: what `/ask` found, for the reply and for `baibao ask --json`;
- `notices`  — why an answer fell back to the passages (the model failed or said nothing),
               as typed facts the chat layer words;
- `asks`     — what a question asks for (a date, a number, a place, a person …) and whether
               a retrieved passage states it;
- `bearing`  — the sentences closest in meaning to a question (the embedder's similarity),
               each with the sentence that points back at it and its outline point.

`Answer` → `Reply` is the chat layer's job (`bot.presenters.answer`).

Labels come from `retrieval.labels.CitationLabel`; whether the corpus addresses a question from
`retrieval.relevance`.
"""

from retrieval.answer.asks import Answerability, Asked, AskKind, FactReader, asked_for
from retrieval.answer.bearing import AnswerBearing, Said, SentenceScorer, cosine_scorer, said_in
from retrieval.answer.notices import EmptyModelAnswer, ModelFailed, Notice
from retrieval.answer.prompt import (
    DECLINE_MARKER,
    NOT_ADDRESSED,
    SYSTEM_PROMPT_ZH,
    Passage,
    Prompt,
    build_prompt,
    model_declined,
    preview,
)
from retrieval.answer.quotes import (
    excerpt,
    quote_at,
    quote_found,
    short_quote,
    split_sentences,
    verify_form,
)
from retrieval.answer.result import (
    Answer,
    Cited,
    Mode,
    extractive_answer,
    model_answer,
    not_addressed_answer,
)
from retrieval.answer.verify import Verified, resolve_label, verify
from retrieval.relevance import Evidence, RelevanceGate

__all__ = [
    "DECLINE_MARKER",
    "NOT_ADDRESSED",
    "SYSTEM_PROMPT_ZH",
    "Answer",
    "AnswerBearing",
    "Answerability",
    "AskKind",
    "Asked",
    "Cited",
    "EmptyModelAnswer",
    "Evidence",
    "FactReader",
    "Mode",
    "ModelFailed",
    "Notice",
    "Passage",
    "Prompt",
    "RelevanceGate",
    "Said",
    "SentenceScorer",
    "Verified",
    "asked_for",
    "build_prompt",
    "cosine_scorer",
    "excerpt",
    "extractive_answer",
    "model_answer",
    "model_declined",
    "not_addressed_answer",
    "preview",
    "quote_at",
    "quote_found",
    "resolve_label",
    "said_in",
    "short_quote",
    "split_sentences",
    "verify",
    "verify_form",
]
