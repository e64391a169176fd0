"""What a question asks for, and whether a passage states it.

`asked_for(question)` reads the kind of answer a question wants from its wording alone:

- a **date** — a year (哪一年, in what year), a day (哪一天, 五旬节 is one) or an era (哪个时代);
- a **number** — a count (几个, 多少, how many), a measure (多高, 多长, how tall) or a span of
  time (多久, how long);
- a **place** (在哪里, 哪座城, where) — but not 区别在哪里 (where the difference lies) nor 从
  哪里来 (where from: a source, not a place);
- a **person** (谁, 哪位, who) — but 谁是得胜者 / who are the overcomers asks who *they* are,
  a definition, and 谁是推基古 / who was Tychicus (a name) who *he* is, a person's definition;
- a **definition** (什么是, 是什么意思, 指什么, 代表什么, what is, what does … mean / stand for);
- a **relation** (有什么关系, 区别, how is … related);
- else **open**.

An asking word before a noun asks for what the noun names, whatever the asking word (什么时候
and 几世纪 a time, 哪一个门徒 a person, 那个地方叫什么 a place, which city, which apostle); the
noun is then the answer's kind, not the question's subject. English question words ask at the
start of any sentence of the question ("… Who brought him that news?") or end it ("Where?").

`FactReader.states(asked, sentence, names)` says whether a sentence states a fact of a date,
number, place or person kind: a year (1984年, 一九八四年, 主后, 世纪), a named day (五旬节,
安息日, 主日), an era (千年国, 时代), a time relative to an event (大灾难以前, 主显现时，), a
numeral with a measure word (七个召会, 十四万四千人, 一百四十四肘, 十日) — not 一个 (which is
"a"), not a chapter (启二十一18) —, a place (a name jieba tags as one: 以弗所, 锡安山; Jerusalem
after "in"), a person (a person of the knowledge graph, a company of people: 一班得胜者, people
named by their role and time: 古时的教父, or a name after its role: 兄弟推基古), none of them one
the question itself names. Whatever the kind, a sentence that says a Chinese question's words
back with a name where it asked (摩押人是罗得的后代 for 摩押人是谁的后代) states it.

`Answerability.answerable(...)`: a question asking for one of those facts is answerable only
when some retrieved passage has a sentence about its subject (holding `subject_share` of its
subject terms, weighted by rarity, with the sentence before it when it points back, and the
outline point above it when it is a sub-point) that states such a fact; a definition only when
a passage names the term and says what it is (or the graph's concepts make it up).
`Answerability.bears(...)`: whether one of the sentences closest in meaning to the question
(`retrieval.answer.bearing`) states it — for a question the passages hold too few of the words
of (a paraphrase). The Scholar asks both before any model is called, so the answer is the same
with a model or without.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from retrieval.answer.bearing import POINTS_BACK, Said, said_in
from retrieval.relevance import holds
from retrieval.scripture import books
from retrieval.text import to_simplified

AskKind = Literal["date", "number", "place", "person", "definition", "relation", "open"]
FACT_KINDS: frozenset[str] = frozenset({"date", "number", "place", "person"})

# Cut into (word, part-of-speech tag) pairs: jieba's tagger with the domain dictionary.
Tagger = Callable[[str], list[tuple[str, str]]]
# The persons a text names (the knowledge graph's person nodes, by any alias).
PersonFinder = Callable[[str], list[str]]


@dataclass(frozen=True, slots=True)
class Asked:
    """The kind of answer a question wants; `detail` narrows a date (year, day, era), a
    number (count, measure, duration) or a definition (a person's: who 推基古 is); `cue` is the
    wording that asked (not its subject)."""

    kind: AskKind
    detail: str = ""
    cue: str = ""
    # A definition question's term (约柜 in 约柜到底是个什么东西): what a passage must define.
    head: str = ""
    # What a count counts (城门 in 一共有几个城门): a number of something else is no answer.
    counted: str = ""
    # The titles of Bible books the question names (以弗所书): a place in a title (以弗所) is
    # not named by the question as the place, and may be the answer.
    titles: tuple[str, ...] = ()
    # The question's words on either side of the asking word (摩押人是 · 的后代 in 摩押人是谁的
    # 后代): a sentence that says them back with a name between them states the fact.
    frame: tuple[str, str] | None = None

    @property
    def fact(self) -> bool:
        """A fact some passage must state: a date, number, place or person, or the
        definition of a named term."""
        return self.kind in FACT_KINDS or (self.kind == "definition" and bool(self.head))


# ---- what a question asks for ---------------------------------------------------------------

_N = r"[一二三四五六七八九十百千万两〇零\d]"
_WHICH = r"(?:一)?(?:个|位|些)?"  # what may stand between an asking word and its noun (哪一个)
# Nouns that name a person by role or company (门徒, 使徒, 教父, 先知, 信徒): an asking word
# before one asks for a person (哪一个门徒), and the noun is the answer's kind, not its subject.
_PERSON_NOUN = r"[\u3400-\u9fff]?(?:徒|人|者|父|知|师|王)"
Rule = tuple[AskKind, str, str]  # kind, detail, the wording (a regular expression)


def _compiled(
    rules: Sequence[Rule], flags: int = 0
) -> tuple[tuple[AskKind, str, re.Pattern[str]], ...]:
    return tuple((kind, detail, re.compile(pattern, flags)) for kind, detail, pattern in rules)


_ZH_ASKS: tuple[Rule, ...] = (
    ("date", "year", r"哪一年|哪年|何年|什么年份|年份|哪个世纪|哪一个世纪|几几年|公元几年"),
    (
        "date",
        "day",
        r"哪一天|哪天|什么日子|哪一日|何日|几月几[日号]|星期几|礼拜几|什么日期|哪个日期",
    ),
    ("date", "era", r"哪个时代|哪一个时代|什么时代|哪个时期|什么时期|哪个年代"),
    # An asking word before a noun of time asks a time (什么时候, 几世纪): the noun says the
    # kind, whatever the asking word is.
    ("date", "year", rf"(?:什么|哪|几|第几){_WHICH}(?:世纪|年代)"),
    ("date", "time", rf"(?:什么|哪|几){_WHICH}(?:时候|时间|时刻|时)|何时|几时"),
    ("number", "ordinal", r"第几|排(?:在)?第?几|排行"),
    ("number", "duration", r"多久|多少年|几年|多少天|几天|几日|多少日|多长时间|多少时候"),
    ("number", "measure", r"多高|多长|多宽|多深|多远|多重|多厚|多大|多少(?:肘|尺|米|里)"),
    ("number", "count", r"多少|(?<!哪)几[个位次样封种件章卷条座道支层步项名人]|有几|共几"),
    ("place", "sphere", r"(?:我们|信徒|圣徒)(?:能|可以|要|该)?(?:在|到)(?:哪里|何处|什么地方)"),
    (
        "place",
        "",
        r"(?<![区差别同错题键处诀因点义据])在(?:哪里|哪儿|何处|什么地方|哪个地方)"
        rf"|(?:什么|哪){_WHICH}[座个]?(?:城|城市|国家|地区|省|海岛|岛|山|地方|地点)|位于哪"
        r"|(?:到|去|往|住|寄给|写给)(?:了)?(?:哪里|哪儿|何处)"
        r"|(?:地方|地点|城|山|地)(?:叫|名叫|称为)(?:作|做)?(?:什么|何)(?:名字|名)?",
    ),
    (
        "person",
        "",
        rf"哪{_WHICH}{_PERSON_NOUN}(?![\u3400-\u9fff]*[书信])|谁|哪位|哪一位|什么人|何人",
    ),
    ("relation", "", r"关系|关联|区别|差别|不同|异同|相比|联系"),
    (
        "definition",
        "",
        r"什么是|是什么|何谓|指什么|指的是|意思|含义|定义|解释|怎么理解|怎样理解"
        r"|是个什么|什么东西|是怎么回事",
    ),
)
# Where an English question word asks: at the start of the question or of any of its
# sentences ("Paul had heard of their faith. Who brought him that news?").
_OPENS = r"(?:^|(?<=[.!?])\s+)\W*(?:and |but |so )?"
_EN_ASKS: tuple[Rule, ...] = (
    ("date", "year", r"\b(?:what|which) (?:year|century)\b|\bin what year\b"),
    ("date", "day", r"\b(?:what|which) (?:day|date)\b|\bon what day\b"),
    ("date", "era", r"\b(?:what|which) (?:age|era|period|dispensation)\b"),
    ("date", "time", rf"{_OPENS}when\b|\bat what (?:point|time|stage|moment)\b"),
    ("number", "ordinal", r"\bwhich (?:one|place) in (?:order|rank)\b|\branks?\b.*\bwhere\b"),
    ("number", "duration", r"\bhow long\b|\bhow many (?:years|days|months|hours)\b"),
    ("number", "measure", r"\bhow (?:tall|high|wide|deep|far|big|large|heavy)\b"),
    ("number", "count", r"\bhow (?:many|much)\b|\bnumber of\b"),
    (
        "place",
        "sphere",
        r"^\W*where (?:do|can|does|should|may|will) (?:we|i|you|believers|the saints|christians)\b",
    ),
    # which / what before a noun of place or of a person asks for one (the noun says the kind)
    (
        "place",
        "",
        r"\b(?:which|what) (?:city|town|place|country|mountain|mount|region|land|island|province)\b",
    ),
    (
        "person",
        "",
        r"\b(?:which|what) (?:apostle|disciple|prophet|man|woman|person|king|brother|elder"
        r"|people|one of (?:the|his|them))\b",
    ),
    (
        "place",
        "",
        rf"{_OPENS}where\b(?!.*\b(?:come|comes|came) from\b)|\bwhere\?\s*$",
    ),
    ("person", "", rf"{_OPENS}who(?:m|se)?\b|\b(?:by|to|from|with|for) whom\b"),
    ("relation", "", r"\brelat\w*|\bdifference\b|\bdiffer\b|\bcompare"),
    ("definition", "", r"\bwhat (?:is|are|was|were)\b|\bmean(?:s|ing)?\b|\bdefin|\bexplain"),
)
_ZH_RULES = _compiled(_ZH_ASKS)
_EN_RULES = _compiled(_EN_ASKS, re.IGNORECASE)
# Every (kind, detail) of a fact `asked_for` can give: an answer declined as not stating it
# names what was asked by this pair (a catalogue key each in `bot/catalogs/answer.toml`).
FACT_ASKS: frozenset[tuple[str, str]] = frozenset(
    {(kind, detail) for kind, detail, _ in (*_ZH_ASKS, *_EN_ASKS) if kind in FACT_KINDS}
    | {("definition", ""), ("definition", "person")}
)
# 谁是得胜者 / who are the overcomers: who a class of people is, a definition (士每拿召会的
# 使者是谁 asks for a person).
_CLASS_ZH = re.compile(r"谁是[\u3400-\u9fff]{0,6}(?:者|们|徒|人)")
_CLASS_EN = re.compile(r"\bwho (?:are|were) the \w+s\b", re.IGNORECASE)
# 谁是推基古 / 推基古是谁 / who was Tychicus: the question names the person and asks who he is,
# a definition of that name. A role (使者是谁, 谁是第一位长老) or a description (的) asks for a
# person.
_IDENTITY_ZH = re.compile(
    r"^(?:请问)?(?:谁是(?P<a>[\u3400-\u9fff]{1,5})|(?P<b>[\u3400-\u9fff]{1,5})(?:到底)?是谁)[？?。]?$"
)
_ROLE_END = re.compile(r"(?:[者人们徒王师长使父母子女主兄弟姊妹]|的.*)$|^[我你他她它祂这那]")
_IDENTITY_EN = re.compile(r"^(?i:who (?:is|was)) ([A-Z][a-z]+(?: [A-Z][a-z]+)?)\??$")


# What a passage means, asked outright: a definition whatever else the question quotes (弗1:10
# 在日期满足的时候同归于一是什么意思？ quotes a verse's 日期; it does not ask for a date).
# A verb of meaning asked with 什么 (乳香代表什么, 细面表征什么, what does it stand for) asks the
# same.
_MEANING = re.compile(
    r"意思|含义|指什么|指的是|怎么理解|怎样理解|如何理解|解释"
    r"|(?:代表|表征|预表|象征|表明|表示|说出)(?:的是)?什么"
    r"|\bmean(?:s|ing)?\b|\bexplain|\bstands? for\b|\b(?:represent|signif|symboli[sz])\w*",
    re.IGNORECASE,
)


def asked_for(question: str) -> Asked:
    """The kind of answer `question` wants (see the module doc)."""
    text = to_simplified(question)
    if _CLASS_ZH.search(text) or _CLASS_EN.search(text):
        return Asked("definition", cue="谁")
    named = _named_person(text.strip())
    if named:
        return Asked("definition", detail="person", cue="谁", head=named)
    meaning = _MEANING.search(text)
    if meaning is not None:
        return Asked("definition", cue=meaning.group(0), head=_head(text, meaning.start()))
    latin = not re.search(r"[\u3400-\u9fff]", text)
    for kind, detail, pattern in _EN_RULES if latin else _ZH_RULES:
        found = pattern.search(text)
        if found is not None:
            head = _head(text, found.start()) if kind == "definition" else ""
            counted = _counted(text[found.end() :]) if detail == "count" and not latin else ""
            titles = _titles(text) if kind in ("place", "person") else ()
            frame = _frame(text, found.start(), found.end()) if not latin else None
            return Asked(kind, detail, found.group(0).strip(), head, counted, titles, frame)
    return Asked("open")


_FRAME_STOP = re.compile(r"[，。！？；：、,.!?;:\s（）()「」“”\"']")
_FRAME_TAIL = re.compile(r"[呢吗嗎啊呀吧哪]+$")
_FRAME_SIDE = 6  # characters of the question kept on each side of the asking word


def _frame(text: str, start: int, end: int) -> tuple[str, str] | None:
    """The question's words right before and right after the asking word, within its clause
    (摩押人是 · 的后代); None when either side is too short to tell a sentence by."""
    left = _FRAME_STOP.split(text[:start])[-1][-_FRAME_SIDE:]
    right = _FRAME_TAIL.sub("", _FRAME_STOP.split(text[end:])[0])[:_FRAME_SIDE]
    if len(left) < 2 or not right:
        return None
    return left, right


# What fills a frame and names nothing: a pronoun, an asking word, a word of degree.
_FRAME_EMPTY = re.compile(r"^(?:他|她|它|祂|他们|她们|我|你|我们|你们|谁|哪|什么|某|这|那|其)")


def _fills(frame: tuple[str, str], text: str) -> bool:
    """`text` says the question's words back with a name in place of the asking word
    (摩押人是罗得的后代 for 摩押人是谁的后代)."""
    left, right = frame
    at = text.find(left)
    while at >= 0:
        rest = text[at + len(left) :]
        end = rest.find(right, 1)
        filled = rest[:end] if 0 < end <= 8 else ""
        if filled and not _FRAME_STOP.search(filled) and not _FRAME_EMPTY.match(filled):
            return True
        at = text.find(left, at + 1)
    return False


def _titles(text: str) -> tuple[str, ...]:
    """The Chinese titles of the Bible books `text` names (以弗所书), longest first."""
    named = {b.zh for b in books() if len(b.zh) >= 3 and b.zh in text}
    return tuple(sorted(named, key=len, reverse=True))


_COUNTED = re.compile(
    r"^[个位次样封种件章卷条座道支层步项名]?(人(?=[\u3400-\u9fff])|[\u3400-\u9fff]{2})"
)


def _counted(rest: str) -> str:
    """The noun a count question counts, right after its cue (几个城门 → 城门)."""
    found = _COUNTED.match(rest)
    return found.group(1) if found and not re.search(r"[呢吗呀啊]", found.group(1)) else ""


# What stands between a definition question's term and the words that ask (到底, 这个城名的).
_HEAD_FILLER = re.compile(r"(?:到底|究竟|是什么|什么|是|就是|这个|那个|这|那|的|各|都|又)+$")
_HEAD_LEAD = re.compile(r"^(?:这个|那个|这|那|所谓|所说的?)")
MAX_HEAD = 6


def _named_person(question: str) -> str:
    """The name a "who is X" question asks about (谁是推基古 → 推基古), "" when X is a role or a
    description (士每拿召会的使者是谁 asks for the person who is the messenger)."""
    zh = _IDENTITY_ZH.match(question)
    if zh is not None:
        name = zh.group("a") or zh.group("b")
        return "" if _ROLE_END.search(name) else name
    en = _IDENTITY_EN.match(question)
    return en.group(1) if en is not None else ""


def _head(text: str, at: int) -> str:
    """The short Chinese term a definition question asks about, the words just before its
    cue (约柜到底是个什么东西 → 约柜; 这个城名是什么意思 → 城名); "" when there is none, or it is
    long (a quoted verse asks what the whole says) — such a question is not checked."""
    after = re.match(r"(?:什么是|何谓)([\u3400-\u9fff]+)", text[at:])
    run = after or re.search(r"[\u3400-\u9fff]+$", text[:at])
    if run is None:
        return ""
    words = _HEAD_FILLER.sub("", run.group(run.lastindex or 0))
    if after is None and _HEAD_LEAD.match(words):  # 别迦摩，这个城名…: what 这个 points back at
        before = re.search(r"(?:的)?([\u3400-\u9fff]+)[，,、]$", text[: run.start()])
        words = before.group(1).rsplit("的", 1)[-1] if before else ""
    head = _HEAD_LEAD.sub("", words)
    return head if 2 <= len(head) <= MAX_HEAD else ""


# ---- what a sentence states -----------------------------------------------------------------

_YEAR = re.compile(
    r"\d{2,4}\s*年(?!代内)|[〇零一二三四五六七八九]{3,4}年|(?:公元|主后|主前|西元)\s*\S|"
    r"[一二三四五六七八九十\d]+世纪|\d{2,4}年代|\b(?:1\d{3}|20\d{2})\b|\b\d+(?:st|nd|rd|th) century\b"
    r"|\b(?:A\.?D\.?|B\.?C\.?)\s?\d",
    re.IGNORECASE,
)
_DAY = re.compile(
    r"五旬节|逾越节|住棚节|除酵节|安息日|主日|星期[一二三四五六日天]|礼拜[一二三四五六日天]"
    r"|\d{1,2}月\d{1,2}[日号]|[一二三四五六七八九十]{1,3}月[初]?[一二三四五六七八九十]{1,3}[日号]"
    r"|第[一二三四五六七八九十\d]+[天日]|[\u3400-\u9fff]的日子|之日"
    r"|\b(?:Pentecost|Passover|Sabbath|Lord's Day|Sunday)\b|\bthe day of\b",
    re.IGNORECASE,
)
_ERA = re.compile(
    r"时代|世代|千年国|千年|国度|新天新地|末世|大灾难|\b(?:age|era|millennium|millennial)\b",
    re.IGNORECASE,
)
# When, relative to an event: 大灾难以前, before the tribulation; a clause of time (主显现时，).
_RELATIVE_TIME = re.compile(
    r"[\u3400-\u9fff](?:以前|以后|之前|之后|的时候|之时)|[\u3400-\u9fff]时(?=[，,])"
    r"|\b(?:before|after|until|at the end of)\b",
    re.IGNORECASE,
)
_ORDINAL = re.compile(
    rf"第{_N}+|\b(?:first|second|third|fourth|fifth|sixth|seventh|last)\b", re.IGNORECASE
)
_CLASSIFIERS = "个位次样封种件章卷条座道支层步项名人门日天年月城召会阶段方面"
# A numeral that counts: not 一 alone ("a"), not after 第 / 每 / 某 / 哪 / 同 / 唯 (an ordinal,
# "every", "which").
_COUNT = re.compile(
    rf"(?<![第每某哪同唯单任])(?:{_N}{{2,}}|[二三四五六七八九十两\d]|\d+)"
    rf"(?:[{_CLASSIFIERS}]|[：:](?!\d))"
    rf"|[有共凡计]{_N}+(?=[：:，,。；;样件])"
)
_MEASURE = re.compile(
    rf"{_N}+\s*(?:肘|尺|丈|里|米|公尺|公里|英尺|英里|斯他迪|寸|拃|指)"
    r"|\b\d[\d,]*\s*(?:cubits?|feet|foot|stadia|furlongs?|miles?|meters?|metres?)\b",
    re.IGNORECASE,
)
_DURATION = re.compile(
    rf"(?<![第每某])(?:{_N}{{2,}}|[二三四五六七八九十两\d]|\d+)\s*(?:年|日|天|个月|月|小时|时辰|周|星期|世代)"
    rf"|千年|\b\d+\s*(?:years?|days?|months?|hours?)\b",
    re.IGNORECASE,
)
_EN_NUMBER = re.compile(
    r"\b(?:two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty"
    r"|hundred|thousand|(?<![:：\d])\d[\d,]*(?![\d,]*[:：]\d))\b",
    re.IGNORECASE,
)
_PLACE_TAGS = frozenset({"ns"})  # jieba's place names: 以弗所, 亚细亚, 锡安山, 耶路撒冷城
# People named as a company: 一班得胜者, 十四万四千人 (jieba's own person tags are too loose:
# it tags 荣耀 and 弗三 as names).
_PEOPLE = re.compile(
    rf"(?:一班|一群|这班|那班|这些|那些)[\u3400-\u9fff]{{1,6}}(?:者|人|徒)|{_N}{{2,}}人"
    r"|\b(?:a company|those) (?:of|who)\b"
)
# A role noun (教父, 使徒, 先知, 门徒, 老师, 兄弟): the people of one time are named by it
# (古时的教父), and a name after it is a person's (兄弟推基古, 使徒保罗).
_ROLE = re.compile(r"^(?:[\u3400-\u9fff]?(?:徒|者|父|知|师)|兄弟|弟兄|姊妹)$")
_NAME_TAGS = frozenset({"nr", "nrt", "nrfg", "nz"})  # jieba's tags of a proper name
# English words that are capitalised but name no place (sentence words, titles, names of God,
# the Bible's books and parts).
_EN_NOT_PLACE = frozenset(
    "i the a an in on at to of and but he she they we it his her their our this that these those "
    "lord god christ jesus spirit holy father son lamb old new testament bible scripture reading "
    "message revelation church body gospel word o rev eph col cor rom gal phil heb matt john "
    "genesis exodus psalm psalms ephesians colossians corinthians romans hebrews acts".split()
)
# A proper noun: a capitalised word that does not start its sentence.
_EN_PROPER = re.compile(r"(?<![.!?:;\"“(]\s)(?<!^)\b([A-Z][a-z]+)\b")


@dataclass(frozen=True, slots=True)
class FactReader:
    """Reads the facts a sentence states (see the module doc): `tag` cuts Chinese into
    tagged words (jieba), `persons` names the persons of the knowledge graph in a text."""

    tag: Tagger
    persons: PersonFinder | None = None

    def states(self, asked: Asked, sentence: str, named: Iterable[str] = ()) -> bool:
        """Whether `sentence` states a fact of the kind `asked` wants, other than the words
        the question `named` itself (its persons and places are not the answer)."""
        text = to_simplified(sentence)
        if asked.frame and _fills(asked.frame, text):
            return True
        if asked.kind == "date":
            return self._date(asked.detail, text)
        if asked.kind == "number":
            return self._number(asked.detail, text) and _counts(asked.counted, text)
        own = {form for n in named for form in _forms(to_simplified(n).lower())}
        if asked.kind == "definition":
            return _defines(asked.head, text)
        if asked.kind == "place":
            if asked.detail == "sphere" and _SPHERE.search(text):
                return True
            siblings = _listed_with(own, text)
            return any(p.lower() not in own and p not in siblings for p in self.places(text))
        if asked.kind == "person":
            return any(p.lower() not in own for p in self.people(text))
        return True

    def _date(self, detail: str, text: str) -> bool:
        if _YEAR.search(text):
            return True
        if detail == "time":
            return any(p.search(text) for p in (_DAY, _ERA, _RELATIVE_TIME))
        if detail == "day":
            return bool(_DAY.search(text))
        return detail == "era" and bool(_ERA.search(text))

    def _number(self, detail: str, text: str) -> bool:
        if detail == "ordinal":
            return bool(_ORDINAL.search(text))
        if detail == "measure":
            return bool(_MEASURE.search(text))
        if detail == "duration":
            return bool(_DURATION.search(text))
        return bool(_COUNT.search(text) or _MEASURE.search(text) or _EN_NUMBER.search(text))

    def places(self, text: str) -> list[str]:
        """The places `text` names: jieba's place names; in English, the proper nouns that
        are not persons (Zion, Jerusalem)."""
        found = [w for w, tag in self._cut(text) if tag in _PLACE_TAGS and len(w) >= 2]
        proper = [
            m.group(1)
            for m in _EN_PROPER.finditer(text.strip())
            if m.group(1).lower() not in _EN_NOT_PLACE
        ]
        if proper:
            persons = {p.lower() for p in self.persons(text)} if self.persons else set()
            found += [p for p in proper if p.lower() not in persons]
        return found

    def people(self, text: str) -> list[str]:
        """The persons `text` names (the knowledge graph's) and companies of people."""
        found = [m.group(0) for m in _PEOPLE.finditer(text)] + self._by_role(text)
        if self.persons is not None:
            found += self.persons(text)
        return found

    def _by_role(self, text: str) -> list[str]:
        """People named by a role: with the time they lived in (古时的教父, 当时的使徒: a time
        word, jieba's `t`, 的, a role noun), or a name right after the role (兄弟推基古: a
        name no dictionary of persons has). A role with any other mark is a company the
        sentence speaks of, not who did it (以弗所的圣徒 in 保罗写信给以弗所的圣徒)."""
        cut = [*self._cut(text), ("", ""), ("", "")]
        found = []
        for (word, tag), (nxt, nxt_tag), (third, _) in zip(cut, cut[1:], cut[2:], strict=False):
            if tag == "t" and nxt == "的" and _ROLE.match(third):
                found.append(word + nxt + third)
            elif _ROLE.match(word) and nxt_tag in _NAME_TAGS and len(nxt) >= 2:
                found.append(nxt)
        return found

    def _cut(self, text: str) -> list[tuple[str, str]]:
        if not re.search(r"[\u3400-\u9fff]", text):
            return []
        return self.tag(text)


# Where we experience something: in a setting, not a named place (in the church life, 在召会
# 生活中).
_SPHERE = re.compile(
    r"\bin (?:the|our|a|his|her|their|every|each) (?:\w+ ){0,3}\w+|在[\u3400-\u9fff]{2,12}(?:里|中|之中|里面)"
)
# A list of names (以弗所、士每拿、别迦摩): the names beside the one asked about are its
# siblings, not where it is.
_LISTED = re.compile(r"[\u3400-\u9fff]{2,6}(?:、[\u3400-\u9fff]{2,6})+")


def _listed_with(own: set[str], text: str) -> set[str]:
    """The names listed with one of the question's own words (`own`) in `text`."""
    out: set[str] = set()
    for found in _LISTED.finditer(text):
        items = found.group(0).split("、")
        if any(o and o in item for o in own for item in items):
            out.update(items)
    return out


# What says what a term is (约柜是…, 所谓神圣分赐，意思是…, X乃是, X指…): after the term in
# its clause, or 所谓/称为 before it.
_DEFINING = re.compile(
    r"是|乃|即|指|意思|意义|意即|表征|象征|预表|表明|说出|代表|含有|就是|称为|叫作|作为"
)


COUNTED_REACH = 4  # characters after a numeral its noun may stand (七个召会, 三千多人)


def _counts(counted: str, text: str) -> bool:
    """A count of `counted` (none asked: any count): 七个召会 does not count 城门."""
    if not counted:
        return True
    return any(
        counted in text[m.start() : m.end() + COUNTED_REACH]
        for p in (_COUNT, _MEASURE)
        for m in p.finditer(text)
    )


def _only_in_titles(name: str, titles: Sequence[str]) -> bool:
    """Whether `name` is part of a book title the question names (以弗所 in 以弗所书): the
    question named the book, not the place."""
    return any(name in t and name != t for t in titles)


def _discussed(head: str, concepts: Iterable[str]) -> bool:
    """Whether the graph's concepts make up `head` (神人调和: 神人 + 调和) or hold it."""
    labels = [to_simplified(c) for c in concepts if c]
    rest = head.replace("的", "")
    for label in sorted(labels, key=len, reverse=True):
        if head in label:
            return True
        rest = rest.replace(label, "")
    return len(rest) < len(head.replace("的", "")) and len(rest) <= 1


def _names(head: str, text: str) -> bool:
    return head in text or head.replace("的", "") in text


DEFINING_REACH = 12  # characters after the term a defining word may stand
_INTRODUCING = re.compile(r"所谓|称为|叫作|叫做|(?:[徒知师]|兄弟|弟兄|姊妹|执事|祭司|君王)$")


def _defines(head: str, text: str) -> bool:
    """Whether `text` says what `head` is: it names the term (or the term without its 的)
    with a defining word soon after it in the sentence, or 所谓 / 称为 just before it, or (a
    person's name) the role it bears just before it (忠心事奉主的兄弟推基古, 使徒保罗)."""
    forms = {head, head.replace("的", "")}
    for form in forms:
        for found in re.finditer(re.escape(form), text):
            after = text[found.end() : found.end() + DEFINING_REACH]
            after = re.split(r"[。！？!?]", after)[0]
            before = text[max(0, found.start() - 4) : found.start()]
            if _DEFINING.search(after) or _INTRODUCING.search(before):
                return True
    return False


# ---- is the question answerable from the passages ----------------------------------------------

SUBJECT_SHARE = 0.6  # of the subject's weight a clause and its neighbours hold (calibrated)
_CLAUSES = re.compile(r"(?<=[，,；;：:])")


@dataclass(frozen=True, slots=True)
class Answerability:
    """Whether the retrieved passages state what a question asks for (module doc)."""

    facts: FactReader
    subject_share: float = SUBJECT_SHARE

    def answerable(
        self,
        asked: Asked,
        terms: Mapping[str, float],
        passages: Sequence[str],
        concepts: Iterable[str] = (),
    ) -> bool:
        """`terms`: the question's subject terms and weights (the relevance evidence's, the
        words that asked removed); `passages`: the retrieved texts; `concepts`: the labels of
        the knowledge graph's concepts the question names (terms the corpus discusses). True
        for a question that asks for no fact."""
        if not asked.fact:
            return True
        if asked.kind == "definition":
            return self._defined(asked.head, passages, concepts)
        subject = subject_terms(terms, asked)
        names = [n for n in subject if not _only_in_titles(n, asked.titles)]
        for text in passages:
            if subject and self._share(subject, text) < self.subject_share:
                continue  # not about the subject at all
            before = ""
            for said in said_in([text]):
                if self._states_in(asked, said, subject, names, before):
                    return True
                before = said.sentence
        return False

    def stating(
        self,
        asked: Asked,
        said: Sequence[Said],
        terms: Mapping[str, float],
        passages: Sequence[str],
        *,
        pointed_only: bool = False,
    ) -> list[Said]:
        """The sentences of `said` (`bearing.said_in(passages)`) that state the fact `asked`
        wants — themselves, through the sentence after them that points back, or through the
        outline point they sit under — and name something the question is about that not every
        passage names (a sentence on 召会 in general does not say who the angel of the church
        in Smyrna is, however near its meaning). Whether one is close in meaning to the
        question is `AnswerBearing`'s call. `pointed_only`: only a sentence that points back
        may state it (one whose pronoun no word of the question can bind)."""
        if not asked.fact:
            return []  # nothing asked, nothing to bear
        subject = subject_terms(terms, asked)
        telling = _telling(subject, passages)
        names = [n for n in subject if not _only_in_titles(n, asked.titles)]
        out = []
        for one in said:
            told = [t for t in (one.parent, one.sentence, one.after) if t]
            if telling and not any(_held(t, to_simplified("".join(told)).lower()) for t in telling):
                continue
            stating = [one.after] if pointed_only else told
            if any(self._tells(asked, t, names) for t in stating if t):
                out.append(one)
        return out

    def _tells(self, asked: Asked, text: str, names: Sequence[str]) -> bool:
        if asked.kind == "definition":
            return _defines(asked.head, to_simplified(text))
        return self.facts.states(asked, text, names)

    def _states_in(
        self,
        asked: Asked,
        said: Said,
        subject: Mapping[str, float],
        names: list[str],
        before: str = "",
    ) -> bool:
        """A clause of `sentence` states the fact, and it with the clauses on either side
        is about the subject: in 「主吩咐约翰把所看见的写在书上，寄给亚细亚的七个召会，这七个召会
        各在一个城里：以弗所、士每拿」 约翰 is not said of 士每拿. A sentence that opens by
        pointing back (那日就是复活的日子) is about what the sentence `before` it says; an
        outline's sub-point about what the point above it names."""
        sentence = said.sentence
        clauses = [c for c in _CLAUSES.split(sentence) if c.strip()]
        for i, clause in enumerate(clauses):
            if not self.facts.states(asked, clause, names):
                continue
            near = "".join(clauses[max(0, i - 1) : i + 2])
            if i == 0 and POINTS_BACK.match(sentence.strip()):
                near = before + near
            near = said.parent + near
            if not subject or self._share(subject, near) >= self.subject_share:
                return True
        return False

    @staticmethod
    def _defined(head: str, passages: Sequence[str], concepts: Iterable[str]) -> bool:
        """A term the corpus discusses (its words are the graph's concepts) is answerable; one
        the passages only mention (约柜 in 神的殿与约柜都在那里, 别迦摩 in a list of cities) only
        when one of them says what it is; one no passage names at all (乳香 beside passages on
        细面 and 油) is not said by them."""
        if _discussed(head, concepts) or not passages:  # no passages: the gate's to decide
            return True
        texts = [to_simplified(text) for text in passages]
        return any(_defines(head, t) for t in texts if _names(head, t))

    @staticmethod
    def _share(subject: Mapping[str, float], text: str) -> float:
        folded = to_simplified(text).lower()
        total = sum(subject.values())
        held = sum(w for t, w in subject.items() if _held(t, folded))
        return held / total if total else 0.0


def _telling(subject: Mapping[str, float], passages: Sequence[str]) -> list[str]:
    """The subject terms some passages name and others do not: the ones that tell a sentence
    about this question from one about its general topic (none when no term tells)."""
    texts = [to_simplified(p).lower() for p in passages]
    out = []
    for term in subject:
        held = sum(_held(term, t) for t in texts)
        if 0 < held < len(texts):
            out.append(term)
    return out


# Aspect particles jieba glues to their verb (蒙着): the verb alone says the same (蒙住).
_ASPECT = re.compile(r"^([\u3400-\u9fff])[着了过]$")


# A place named with its kind (锡安山, 耶路撒冷城, 摩押地): the name alone names it too (锡安).
_PLACE_KIND = re.compile(r"^([\u3400-\u9fff]{2,})[山城地河海岛湖]$")


def _forms(term: str) -> set[str]:
    """`term` and the name a place term holds without its kind (锡安山 → 锡安)."""
    kind = _PLACE_KIND.match(term)
    return {term, kind.group(1)} if kind else {term}


def _held(term: str, text: str) -> bool:
    if term.isascii():
        return holds(term, text) > 0
    stem = _ASPECT.match(term)
    return any(form in text for form in _forms(term)) or (
        stem is not None and stem.group(1) in text
    )


_ASKING = re.compile(
    r"几|多少|哪|谁|何|一共|总共|^共|^(?:who|whom|whose|where|when|many|much|year|day)$"
)


def subject_terms(terms: Mapping[str, float], asked: Asked) -> dict[str, float]:
    """The question's terms without the words that ask (多高, 几样, who; 城墙 is the subject)."""
    cue = asked.cue.lower()
    return {
        t: w
        for t, w in terms.items()
        if not (cue and (t in cue or cue in t)) and not _ASKING.search(t)
    }
