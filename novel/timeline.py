"""Story time, read from the text: 当夜, 第二天一早, 三天后, 半个月过去了, 天亮时.

A story's clock is a day (counted from the story's start) and a part of that day (dawn …
late night). `clock(sentences, start)` walks a chapter: a time phrase that opens a sentence
(or its first clause) moves the clock — forward by the days it says (三天后, 半个月过去了,
第二天), to a part of the same day (当夜, 傍晚, 晌午过后), or to the next dawn (天亮时 after a
night). Everything after it happens then, until the next phrase. A chapter starts where the one
before it ended. What the text does not say does not move the clock: a story read without a
single time phrase is all one day.

Phrases inside quotation marks, memories (三年前, 那年, 当年) and plans (明天一早我就动身) never
move it. `lapse(text)` is the length of time a phrase says (三个月 → 90 days), for healing times.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

# Parts of a day, in order.
DAWN, MORNING, NOON, AFTERNOON, EVENING, NIGHT, LATE = range(7)
PART_NAMES = ("dawn", "morning", "noon", "afternoon", "evening", "night", "late night")


@dataclass(frozen=True, slots=True, order=True)
class When:
    """A moment of story time: the day since the story's start and the part of it."""

    day: int = 0
    part: int = MORNING

    def later(self, days: int, part: int | None = None) -> When:
        """`days` later, at `part` (or at the day's start: 三天后。傍晚… is that day's)."""
        return When(self.day + days, DAWN if part is None else part)

    def at(self, part: int) -> When:
        """The next time of day `part`: today if it is not past, else tomorrow."""
        return When(self.day, part) if part >= self.part else When(self.day + 1, part)


_NUM = "零〇一二两三四五六七八九十百千半几数多"
_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6}
_DIGITS |= {"七": 7, "八": 8, "九": 9}


def number(text: str) -> float | None:
    """一 → 1, 十五 → 15, 两个半 → 2.5, 几 → 3, 半 → 0.5, '3' → 3."""
    text = text.replace("个", "")
    if not text:
        return None
    if text.isdigit():
        return float(text)
    half = 0.5 if text.endswith("半") and len(text) > 1 else 0.0
    text = text[:-1] if half else text
    if text in ("几", "数", "好几"):
        return 3.0
    if text == "半":
        return 0.5
    if text in ("百", "一百"):
        return 100.0
    value = 0
    if "十" in text:
        tens, _, ones = text.partition("十")
        value = 10 * (_DIGITS.get(tens, 1) if tens else 1) + _DIGITS.get(ones, 0)
    elif text in _DIGITS:
        value = _DIGITS[text]
    else:
        return None
    return value + half


_UNIT_DAYS = {
    "天": 1,
    "日": 1,
    "夜": 1,
    "宿": 1,
    "周": 7,
    "星期": 7,
    "礼拜": 7,
    "月": 30,
    "年": 365,
}
_AMOUNT = rf"([{_NUM}\d]+个?半?|好几个?|十来个?|一两个?)"
_UNIT = r"(天|日|夜|宿|周|星期|礼拜|个?月|年)"
_SPAN = re.compile(_AMOUNT + r"多?" + _UNIT + r"(?:多|来)?")
_SPECIAL_SPANS = (
    (re.compile(r"半个月"), 15),
    (re.compile(r"半年"), 182),
    (re.compile(r"百日|一百天|百天"), 100),
    (re.compile(r"很长时间|很久|好几个月|几个月|数月"), 90),
    (re.compile(r"大半年"), 240),
    (re.compile(r"一整夜|一夜"), 1),
)


def lapse(text: str) -> int | None:
    """The days a duration phrase says: 三个月 → 90, 半个月 → 15, 六个星期 → 42, 一百天 → 100,
    好几个月 → 90; None when it says none."""
    for pattern, days in _SPECIAL_SPANS:
        if pattern.search(text):
            return days
    m = _SPAN.search(text)
    if m is None:
        return None
    raw = m.group(1).replace("好几", "几").replace("十来", "十").replace("一两", "二")
    amount = number(raw.rstrip("多") or raw)  # 一百多日: at least a hundred
    unit = m.group(2).lstrip("个")
    if amount is None or unit not in _UNIT_DAYS:
        return None
    return max(1, round(amount * _UNIT_DAYS[unit]))


_PARTS = (
    (re.compile(r"天亮|黎明|拂晓|破晓|天蒙蒙亮|天刚亮|鸡叫|日出"), DAWN),
    (re.compile(r"一早|清早|清晨|早晨|早上|大清早|一大早"), DAWN),
    (re.compile(r"上午|晌午前"), MORNING),
    (re.compile(r"晌午过后|午后|下午|日头偏西|太阳偏西"), AFTERNOON),
    (re.compile(r"中午|晌午|正午"), NOON),
    (re.compile(r"傍晚|黄昏|天黑|擦黑|日落|入夜前|天快黑"), EVENING),
    (re.compile(r"半夜|三更|四更|五更|深夜|后半夜|午夜|夜半"), LATE),
    (
        re.compile(r"夜里|晚上|当夜|当晚|入夜|夜晚|那夜|这夜|这一夜|那一夜|同一夜|是夜|夜间|晚间"),
        NIGHT,
    ),
)
_SAME_DAY = re.compile(
    r"^(?:当天|当日|当夜|当晚|那天|这天|这一天|那一天|这一日|那一日|这一夜|那一夜|同一天|同一时刻|"
    r"同一夜|与此同时|此时|这时|这会儿|那会儿|是夜|当时|其时|彼时|这当口)"
)
_NEXT_DAY = re.compile(r"^(?:第二天|次日|翌日|隔天|第二日|转天|第二天的)")
# 一天下午, 有一天, 某日: a later day the text does not count (at least the next).
_SOME_DAY = re.compile(
    r"^(?:有|某)?一(?:天|日)(?!一|两|半|的)|^某(?:天|日)|^有一回|^一个(?=[^，。]{0,4}(?:早上|下午|晚上|傍晚|清晨))"
)
_NTH_DAY = re.compile(rf"^第([{_NUM}\d]+)天")
_AFTER = re.compile(
    rf"^(?:又|再)?(?:过了|隔了)?{_AMOUNT}多?{_UNIT}(?:多|来)?(?:之后|以后|后|过去了|过去|过后|光景)"
)
_PASSED = re.compile(rf"^(?:又|再)?过了{_AMOUNT}多?{_UNIT}")
# 一连半个月，他都躺着 / 整整三天没有出门: the sentence spans that time, and the story is past it.
_THROUGH = re.compile(
    rf"^(?:一连|接连|连着|整整|足足)(?:{_AMOUNT}多?{_UNIT}|半个月|半年|大半年|几个月|好几个月)"
)
_SPECIAL_AFTER = re.compile(
    r"^(?:又|再)?(?:过了)?(半个月|半年|百日|一百天|大半年|几个月|好几个月)(?:之后|以后|后|过去了|过去)?"
)
_BACK = re.compile(r"[年天日月夜]前|那年|当年|从前|以前|之前|曾经|小时候|那时")
_PLAN = re.compile(r"^(?:明天|明日|明早|明晚|后天|改天|过几天)")


# 转眼过了一百多日 / 一晃半年过去了: the same lapse, told as time flying.
_FLYING = re.compile(
    r"^(?:转眼间?|眨眼间?|一晃眼?|不觉|不知不觉|倏忽|光阴似箭|日子一天天过去)(?:又|已经|就)?"
)
# 冬天终于过去了 / 一个夏天过去了: a season passed.
_SEASON_PASSED = re.compile(
    r"^(?:整个|一个|这个|那个)?(?:冬天|夏天|春天|秋天|寒冬|一冬|一夏)(?:终于|总算|就这样|又|很快|转眼)?过去了"
)


def same_stretch(sentence: str) -> bool:
    """Does the sentence open by saying it is the same day or hour (当夜, 其时, 这一夜, 这时候)?"""
    return bool(_SAME_DAY.match(sentence.lstrip("“”「」『』 \u3000")))


def _days_after(head: str) -> int | None:
    """三天后 / 半个月过去了 / 又过了两天 / 第二天 → the days it moves forward."""
    if _SEASON_PASSED.match(head):
        return 90
    flying = _FLYING.match(head)
    if flying is not None and flying.end() < len(head):
        head = head[flying.end() :]
    if _NEXT_DAY.match(head) or _SOME_DAY.match(head):
        return 1
    m = _NTH_DAY.match(head)
    if m is not None:
        n = number(m.group(1))
        return max(1, int(n) - 1) if n else None
    m = _SPECIAL_AFTER.match(head)
    if m is not None and (m.end() > len(m.group(1)) or head[m.end() : m.end() + 1] in "，。,"):
        return lapse(m.group(1))
    m = _AFTER.match(head) or _PASSED.match(head) or _THROUGH.match(head)
    if m is not None:
        return lapse(m.group(0))
    return None


def _part(head: str) -> int | None:
    for pattern, part in _PARTS:
        m = pattern.search(head)
        if m is not None and m.start() <= 6:
            return part
    return None


def move(now: When, sentence: str) -> When:
    """The clock after a sentence's opening time phrase, if it has one (else `now`)."""
    head = sentence.lstrip("“”「」『』 \u3000")[:16]
    if _PLAN.match(head) or head.startswith(("“", "「")):
        return now
    first = re.split(r"[，。！？；,]", head, maxsplit=1)[0]
    if _BACK.search(first) and not _AFTER.match(first):
        return now  # 三年前, 那年: a memory, not the story moving
    days = _days_after(first)
    part = _part(first)
    if days is not None:
        return now.later(days, part)
    if part is None:
        return now
    if _SAME_DAY.match(first):
        return When(now.day, part) if part >= now.part or part >= EVENING else now.at(part)
    if part == DAWN and now.part >= EVENING:
        return When(now.day + 1, DAWN)
    return now.at(part) if part < now.part else When(now.day, part)


def clock(sentences: Sequence[str], start: When, skip: Sequence[bool] = ()) -> list[When]:
    """The story time of each sentence (see the module docstring); `skip[i]`: sentence i is a
    memory or someone's words, which never moves the clock."""
    out: list[When] = []
    now = start
    for i, text in enumerate(sentences):
        if not (i < len(skip) and skip[i]):
            now = move(now, text)
        out.append(now)
    return out


# A watch kept until dawn (守到天亮, 守了一整夜): where someone is until the next dawn.
UNTIL_DAWN = re.compile(
    r"(?:守|等|坐|站|待|躲|蹲|看|守着|坐着|站着)[^，。；！？]{0,8}?"
    r"(?:直到天亮|到了?天亮|到了?天明|一整夜|整整一夜|一夜|通宵)|"
    r"(?:直到天亮|一直到天亮|一直守到了?天亮)"
)


def until_dawn(now: When) -> When:
    """The dawn that ends a night's watch begun at `now` (a day's parts run dawn to late
    night: the next dawn is the next day's)."""
    return When(now.day + 1, DAWN)
