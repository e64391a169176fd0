"""The notices an `Answer` carries when it falls back to the passages: why there is no model
answer (the model failed, or said nothing). They travel in `Answer.notice` (also in
`baibao ask --json`); the presenter shows them above the excerpts."""

from __future__ import annotations

from retrieval.i18n import Catalog, Lang

T = Catalog(
    {
        "llm_failed": (
            "语言模型暂时无法回答（{reason}），以下改为列出检索到的原文摘录。",
            "The language model could not answer ({reason}); here are the retrieved passages instead.",
        ),
        "reason_timeout": ("超时", "timed out"),
        "reason_rate_limited": ("请求过多，已被限流", "rate limited"),
        "reason_unavailable": ("服务不可用", "service unavailable"),
        "reason_malformed": ("返回格式错误", "malformed response"),
        "empty_answer": (
            "语言模型没有给出回答，以下为检索到的原文摘录。",
            "The language model returned no answer; here are the retrieved passages.",
        ),
    }
)


def failure_notice(kind: str, lang: Lang) -> str:
    """The model failed (`LLMError.kind`): said so, naming the reason."""
    key = f"reason_{kind}"
    reason = T(lang, key) if key in T.keys() else T(lang, "reason_unavailable")
    return T(lang, "llm_failed", reason=reason)


def empty_answer_notice(lang: Lang) -> str:
    """The model answered with nothing."""
    return T(lang, "empty_answer")
