"""A scripture reference that cannot be read (`retrieval.scripture.ScriptureError`), worded
for a user: the reason the parser gives, with the book named in the reader's language."""

from __future__ import annotations

from bot.i18n import catalog
from kernel.i18n import Lang
from retrieval.scripture import ScriptureError, render_en, render_zh

T = catalog("scripture")
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
