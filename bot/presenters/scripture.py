"""A scripture reference that cannot be read (`retrieval.scripture.ScriptureError`), worded
for a user: the reason the parser gives, with the book named in the reader's language."""

from __future__ import annotations

from retrieval.i18n import Catalog, Lang
from retrieval.scripture import ScriptureError, render_en, render_zh

T = Catalog(
    {
        "empty": ("请输入经文出处，例如 弗1:10", "Give a scripture reference, e.g. Eph 1:10"),
        "unknown": (
            "无法识别的经文出处：「{text}」",
            "Not a scripture reference I can read: “{text}”",
        ),
        "unknown_book": ("没有这卷书：「{text}」", "No such book of the Bible: “{text}”"),
        "no_chapter": ("「{text}」后面缺少章号", "“{text}” needs a chapter number"),
        "zero": ("章和节从 1 开始：{text}", "Chapters and verses start at 1: {text}"),
        "chapters": ("{book}只有 {n} 章", "{book} has {n} {unit}"),
        "verses": ("{book}第 {c} 章只有 {n} 节", "{book} {c} has {n} {unit}"),
        "backwards": ("范围前后颠倒：{ref}", "The range runs backwards: {ref}"),
        "cross_book": ("不支持跨卷的范围：{text}", "Ranges across books are not supported: {text}"),
    }
)
# English counts: "1 chapter", "6 chapters".
UNITS = {"chapters": ("chapter", "chapters"), "verses": ("verse", "verses")}


def scripture_error_text(err: ScriptureError, lang: Lang) -> str:
    """Why the reference cannot be read, in `lang`."""
    fields: dict[str, object] = {"text": err.text, "c": err.chapter, "n": err.count}
    if err.book is not None:
        fields["book"] = err.book.en if lang == "en" else err.book.zh
        one, many = UNITS.get(err.reason, ("", ""))
        fields["unit"] = one if err.count == 1 else many
    if err.refs is not None:
        fields["ref"] = render_en(err.refs) if lang == "en" else render_zh(err.refs)
    return T(lang, err.reason, **fields)
