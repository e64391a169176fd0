"""Reading Chinese narrative without a model: sentences, scenes, names, places, deaths,
relationships. The extractive summariser, the offline consistency rules and the blueprint
proposals all read a chapter through these functions, so they agree on what the text says.

Everything here is a heuristic tuned for precision (a wrong warning costs a writing group more
than a missed one); `bench/bench_consistency.py` measures it on Bible narrative (CUV 1919) and on
original novels in three registers (wuxia, modern urban, translated fiction) with planted
contradictions, part of them held out. Who a clause is about (他/她, dropped subjects) is
`novel.reading`; what the chapters establish over time is `novel.story_state`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from novel import lexicon, names

# ---- sentences and scenes ---------------------------------------------------------------------

_SENTENCE_END = re.compile(r"[^。！？!?；;\n]*(?:[。！？!?；;]+[”’」』\"）)]*|\n+|$)")


@dataclass(frozen=True, slots=True)
class Sentence:
    text: str
    start: int  # offset in the chapter
    scene: int  # index of the scene it belongs to
    paragraph: int = 0  # index of its paragraph


_SCENE_BREAK_LINE = re.compile(r"^\s*(?:[*＊#◆◇○●·\-—~～=]\s*){3,}\s*$")
_TIME_SHIFT = re.compile(
    r"^\s*(?:次日|第二天|翌日|隔天|当晚|当夜|入夜|夜里|天亮|黎明|清晨|早晨|傍晚|午后|黄昏|深夜|半夜|"
    r"后来|过了|与此同时|同一时刻|同一时间|同一夜|同一天|这天夜里|这天晚上|那天夜里|另一边|另一头|那一边|数日后|几天后|多年后|晚上|下午|上午|中午|早上|凌晨|"
    r"那天(?:晚上|夜里|下午|上午|早上)|当天|第[一二三四五六七八九十]+天|"
    r"[一二三四五六七八九十两几数百千\d]+(?:个)?(?:天|日|夜|年|月|个月|周|星期|小时|钟头|时辰|更)(?:之|以)?后)"
)


def sentences(text: str) -> list[Sentence]:
    """Sentences with their offsets and scene numbers. A scene ends at a break line (`***`)
    or at a paragraph that opens with a shift in time (次日、三天后、与此同时 …)."""
    out: list[Sentence] = []
    scene = 0
    offset = 0
    for number, paragraph in enumerate(re.split(r"(\n\s*\n|\n)", text)):
        if not paragraph or paragraph.isspace():
            offset += len(paragraph)
            continue
        if _SCENE_BREAK_LINE.match(paragraph):
            scene += 1
            offset += len(paragraph)
            continue
        if out and _TIME_SHIFT.match(paragraph):
            scene += 1
        for m in _SENTENCE_END.finditer(paragraph):
            piece = m.group(0)
            if piece.strip():
                lead = len(piece) - len(piece.lstrip())
                out.append(Sentence(piece.strip(), offset + m.start() + lead, scene, number))
        offset += len(paragraph)
    return out


def quoted_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of every “…” / 「…」 quotation: words inside are someone's speech."""
    return [(m.start(), m.end()) for m in re.finditer(r"“[^”]*”|「[^」]*」|『[^』]*』", text)]


def inside(spans: Sequence[tuple[int, int]], at: int) -> bool:
    return any(a < at < b for a, b in spans)


# ---- names ------------------------------------------------------------------------------------

SURNAMES = frozenset(
    "赵钱孙李周吴郑王冯陈褚卫蒋沈韩杨朱秦尤许何吕施张孔曹严华金魏陶姜戚谢邹喻柏水窦章云苏潘葛"
    "奚范彭郎鲁韦昌马苗凤花方俞任袁柳酆鲍史唐费廉岑薛雷贺倪汤滕殷罗毕郝邬安常乐于时傅皮卞齐康"
    "伍余元卜顾孟平黄和穆萧尹姚邵湛汪祁毛禹狄米贝明臧计伏成戴谈宋茅庞熊纪舒屈项祝董梁杜阮蓝闵"
    "席季麻强贾路娄危江童颜郭梅盛林刁钟徐邱骆高夏蔡田樊胡凌霍虞万支柯管卢莫经房裘缪干解应宗丁"
    "宣邓郁单杭洪包诸左石崔吉龚程邢裴陆荣翁荀羊甄曲家封储靳段富巫乌焦巴弓牧山谷车侯宓蓬全郗班"
    "仰秋仲伊宫宁仇栾暴甘厉戎祖武符刘景詹束龙叶幸司韶黎薄印宿白怀蒲邰从鄂索咸籍赖卓蔺屠蒙池乔"
    "阴胥能苍双闻莘党翟谭贡劳逄姬申扶堵冉宰郦雍桑桂濮牛寿通边扈燕冀浦尚农温别庄晏柴瞿阎充慕连"
    "茹习宦艾鱼容向古易慎戈廖庾终居衡步都耿满弘匡国文寇广禄阙东欧利蔚越夔隆师巩聂晁勾敖融冷訾"
    "辛阚那简饶空曾沙养鞠须丰巢关蒯相查后荆红游竺权盖益桓公岳帅缑亢况郈有琴商牟佘佴伯赏墨哈谯"
    "笪年爱阳佟"
)
COMPOUND_SURNAMES = (
    "欧阳",
    "司马",
    "上官",
    "诸葛",
    "慕容",
    "东方",
    "令狐",
    "公孙",
    "皇甫",
    "尉迟",
    "长孙",
    "宇文",
    "独孤",
    "南宫",
    "西门",
    "夏侯",
    "端木",
)
TITLES = (
    "师兄",
    "师姐",
    "师弟",
    "师妹",
    "师父",
    "师傅",
    "师叔",
    "师伯",
    "掌柜",
    "姑娘",
    "公子",
    "大哥",
    "大姐",
    "大嫂",
    "大叔",
    "大婶",
    "先生",
    "夫人",
    "小姐",
    "将军",
    "老爷",
    "娘子",
    "大人",
    "捕头",
    "郎中",
    "掌门",
    "长老",
    "当家",
    # modern and translated registers: a surname before these is someone's name too
    "主任",
    "警官",
    "经理",
    "医生",
    "老师",
    "律师",
    "教授",
    "队长",
    "所长",
    "局长",
    "老板",
    "阿姨",
    "牧师",
    "神父",
    "上尉",
    "中尉",
    "太太",
    "道长",
    "老爹",
    "老伯",
    "大妈",
    "大娘",
    "婆婆",
)
# People the narration names by what they are, not who: never a personal name (马车夫 is not
# a 马; 司狱 is not a 司), and a subject a pronoun may stand for.
ROLES = frozenset(
    "司狱 狱卒 掌柜 掌柜的 船夫 艄公 车夫 马车夫 马夫 店小二 小二 伙计 跑堂 捕快 衙役 更夫 渔夫 樵夫 "
    "猎户 和尚 老和尚 小和尚 沙弥 小沙弥 道士 尼姑 方丈 住持 师爷 侍卫 丫鬟 丫头 镖师 郎中 大夫 "
    "账房 会计 管事 老板 老板娘 司机 出租车司机 保安 护士 护士长 医生 主任 主编 经理 助理 民警 警官 警察 记者 "
    "律师 法官 门卫 前台 服务员 外卖员 外卖小哥 快递员 房东 邻居 老师 校长 厨子 厨师 管家 女管家 "
    "老管家 女仆 仆人 男仆 神父 牧师 邮差 店主 验尸官 马贩子 乐师 副手 军官 医官".split()
)
# Who someone is to someone else: a name right after one is being introduced (陆青崖的三叔，陆怀山).
KIN = (
    "父亲 母亲 儿子 女儿 哥哥 姐姐 弟弟 妹妹 妻子 丈夫 老伴 三叔 二叔 叔叔 伯父 舅舅 姨妈 姑妈 "
    "表兄 表妹 表哥 表姐 师父 师兄 师弟 徒弟 同事 同学 朋友 邻居 老板 助理 秘书 副手".split()
)
_TITLE_RE = "|".join(sorted(TITLES, key=len, reverse=True))
_HONORIFIC = re.compile(rf"([\u4e00-\u9fff])({_TITLE_RE})")
_ROLE_RE = "|".join(sorted(ROLES, key=len, reverse=True))
_INTRO_BEFORE = re.compile(
    r"(?:名叫|叫做|叫作|名为|名唤|唤作|唤做|自称|人称|号称|称作|外号|绰号|一个叫|一位叫|一名叫|他叫|她叫|我叫|"
    r"我是|来人是|此人是|此人便是|原来是|原来他是|原来她是|介绍说|姓|(?<![喊大尖惊])叫|"
    # a speaker naming himself with a humble first person (在下宋既白, 老夫姓…, 贫道清虚)
    r"(?<![所实自])在下|鄙人|老夫|老朽|晚辈|小女子|贫道|贫僧|"
    r"(?:都|大家|人们|人家|我们|他们)?(?:叫|称|管)(?:他|她|我)(?:叫|作|做)?|"
    rf"(?:{'|'.join(KIN)}|{_ROLE_RE})[，,]?)$"
)
# 民警姓孙 / 一个姓许的女经理: a surname introduced with a role; 孙警官 then names that person.
_SURNAME_INTRO = re.compile(r"姓([\u4e00-\u9fff])(?=[，。、的\s]|$)")
_NAMED = re.compile(  # 自称姓韩 gives a surname (_SURNAME_INTRO), not a name 姓韩
    r"(?:名叫|叫做|叫作|名为|名唤|唤作|唤做|自称|人称)(?!姓)"
    r"([\u4e00-\u9fff]{2,3}?|[\u4e00-\u9fff]{2,4}·[\u4e00-\u9fff]{2,4})(?=的|，|。|、|说|是|\s|$)"
)
_INTRO_AFTER = re.compile(
    r"^(?:的(?:人|少年|少女|女子|男子|老人|汉子|姑娘)|自我介绍|是(?:一个|一位|个|位))"
)
_SPEECH = re.compile(
    r"^(?:冷冷地|低声|高声|大声|轻声|沉声|笑着|急忙|连忙|忙|又|便|也|却|才|就|终于|忽然|突然|缓缓)?"
    r"(?:说道|说|道|问道|问|答道|答|喊道|喊|叫道|嚷道|笑道|冷笑道|叹道|开口)"
)

_ADVERBS = (
    r"(?:正|又|也|便|就|却|才|还|再|都|立刻|连忙|急忙|忽然|突然|慢慢|缓缓|低声|大声|轻声|冷冷地?|一个人|独自|"
    r"笑着|竟然|居然|亲自|亲手|一边|默默地?|终于|当即|随即|头一个|第一个|最先|率先|抢先)*"
)
_VERBS = (
    r"(?:说|道|问|答|喊|叫|嚷|笑|哭|叹|走|跑|站|坐|拿|握|举|抬|点头|点了点头|摇头|摇了摇头|转身|"
    r"回头|看|望|瞧|伸手|拔|推|拉|跳|喝|吃|递|写|骂|跪|抱|挥|开口|赶来|冲|追|躲|打|救|扶|挡|接过|"
    r"抢|吩咐|命令|醒|起身|迎|撑|划|拍|放下|牵|领|带着|吻|去|来|回|进|出|上了|下了|对|向|把|将|"
    r"给|替|听|见|想|觉得|知道|明白|决定|答应|起来|睁开|伸出|摇|端|捧|扛|抡|蹲|躺|靠|探|挤|凑|瞪|盯|"
    r"擦|敲|踢|扔|搬|掀|拎|牵|咳|坐起|爬起)"
)
ACTS = re.compile("^" + _ADVERBS + _VERBS)
# Surnames that are also everyday words (王 king, 于, 和, 有, 向 …) make too many false names
# when a clause merely starts with them; only the others start a name by position alone.
_WEAK_SURNAMES = frozenset(
    "王于和向有那都蒙何万田金高方白文明成时常安平乐全余从连能双古易国广东利越师后相查游商年阳爱元水"
    "云花山谷车关红空曲家封富巫牧宫宁甘冷辛简沙益权盖伯赏墨哈容居衡步满弘匡寇禄阙欧蔚隆巩晁勾敖融"
    "饶曾养鞠须丰巢荆竺况琴佘佴笪能苍双闻党翟贡劳姬申扶堵宰雍桑桂牛寿通边燕浦尚农温别庄晏柴充慕连"
    "茹习宦艾鱼向古易慎戈终广禄东利蔚越夔师巩聂勾融辛阚那简空沙养须丰关相查后荆红游权盖益桓公岳帅"
    "亢况有琴商牟伯赏墨哈谯年爱阳"
)
STRONG_SURNAMES = SURNAMES - _WEAK_SURNAMES
# Before a title (掌柜, 大人 …) a surname is a surname unless it is a function word (和大哥).
TITLE_SURNAMES = SURNAMES - frozenset(
    "和于向有那都从连能相后国家时常全余万双空曲别通终养须居满禄益"
)
_SUBJECT = re.compile(
    r"(?:^|(?<=[，。！？；：”」\s]))(["
    + "".join(sorted(STRONG_SURNAMES))
    + r"][\u4e00-\u9fff]{1,2})"
)
# A name never contains these (they end or join clauses): 王又问 → 王又 is not a name.
_NOT = frozenset("不没未别")
_FUNCTION_CHARS = re.compile(
    r"[又就也便却才还再都把将被对向和与同跟给在是了的着过之其所以而于从自这那们一]"
)


@functools.cache
def _jieba() -> tuple[object, Mapping[str, int]]:
    """jieba's part-of-speech tokenizer over the main dictionary, which the process loads once
    and shares with the BM25 tokenizer (`retrieval.text`)."""
    from retrieval.text import Tokenizer, import_jieba

    import_jieba()  # before its submodule: jieba without `pkg_resources`
    import jieba.posseg

    tokenizer = Tokenizer(userdict=None, stopwords=None, synonyms=False).jieba
    return jieba.posseg.POSTokenizer(tokenizer), tokenizer.FREQ


def warm() -> None:
    """Load jieba now (about a second the first time in a process; run it off the loop)."""
    pos, _ = _jieba()
    list(pos.cut("林远说。"))  # type: ignore[attr-defined]


def words(text: str) -> list[str]:
    """jieba's words of two or more characters (no punctuation, no single characters)."""
    pos, _ = _jieba()
    cut = pos.cut(text)  # type: ignore[attr-defined]
    return [w for w, _ in cut if len(w) >= 2 and re.match(r"[\u4e00-\u9fff]", w)]


def common_word(word: str) -> bool:
    """A frequent dictionary word (师父, 众人, 老人) is not a personal name."""
    _, freq = _jieba()
    return int(freq.get(word, 0) or 0) >= 30


class TagMemo(Protocol):
    """Where cuts outlive the process (`novel.tag_cache`): None when it has none for a text."""

    def get(self, text: str) -> tuple[tuple[str, str], ...] | None: ...

    def put(self, text: str, tags: tuple[tuple[str, str], ...]) -> None: ...


class _Memo:
    current: TagMemo | None = None


def remember_tags_in(memo: TagMemo | None) -> None:
    """Let `tagged` read and keep its cuts in `memo` (None: in this process only)."""
    _Memo.current = memo


@functools.lru_cache(maxsize=512)
def tagged(text: str) -> tuple[tuple[str, str], ...]:
    """The analyser's (word, part of speech) for `text` (`novel.names`: LAC, with jieba's
    flags), cached: reading a chapter again after a revision of an earlier one repeats the
    cut, the expensive part (kept across restarts too when a `TagMemo` is installed)."""
    memo = _Memo.current
    kept = memo.get(text) if memo is not None else None
    if kept is not None:
        return kept
    cut = names.tags(text)
    if memo is not None:
        memo.put(text, cut)
    return cut


@dataclass(frozen=True, slots=True)
class NameUse:
    name: str
    start: int  # first use in the text
    introduced: bool  # the text introduces it (名叫…, 自称…, 一个叫…的人)


class NameIndex:
    """Who the story knows: canonical names with their aliases, and where each occurs."""

    def __init__(
        self,
        names: Mapping[str, str],
        places: Iterable[str] = (),
        surnames: Iterable[str] = (),
    ) -> None:
        self.names = {k: v for k, v in names.items() if k}
        self.places = frozenset(places)  # never mistaken for people
        # surnames introduced with a role (民警姓孙): 孙警官 is that person, not a new name
        self.introduced_surnames = frozenset(surnames)
        # longest first, so 沈师父 is found before 沈
        self._ordered = sorted(self.names, key=len, reverse=True)
        self._parts = frozenset(
            p for n in self.names if "·" in n for p in n.split("·") if len(p) > 1
        )
        # every alias at every position in one pass (a lookahead lets matches overlap)
        self._any = (
            re.compile("(?=(" + "|".join(re.escape(a) for a in self._ordered) + "))")
            if self._ordered
            else None
        )

    def canonical(self, name: str) -> str | None:
        return self.names.get(name)

    def occurrences(self, text: str) -> list[tuple[int, int, str]]:
        """(start, end, canonical) for every known name/alias in `text`, non-overlapping."""
        if self._any is None:
            return []
        # the longest alias at each position, then the longest first where they overlap
        hits = [
            (m.start(), m.start() + len(m.group(1)), m.group(1)) for m in self._any.finditer(text)
        ]
        hits.sort(key=lambda h: (-(h[1] - h[0]), h[0]))
        # which characters a kept hit covers: a hit overlaps a kept one exactly when it covers
        # a covered character (linear in the hits' lengths; checking every kept hit was
        # quadratic, and most of a long chapter's replay)
        taken = bytearray(len(text))
        found: list[tuple[int, int, str]] = []
        for start, end, alias in hits:
            if 1 in taken[start:end]:
                continue
            taken[start:end] = b"\x01" * (end - start)
            found.append((start, end, self.names[alias]))
        return sorted(found)

    def known(self, word: str) -> bool:
        if word in self.names or word in self._parts:
            return True  # a name, or a part of a foreign one (杜布瓦 of 阿尔芒·杜布瓦)
        # a known name plus a stray character (霍三站) or part of one (林远 → 林)
        return any(word.startswith(n) or n.startswith(word) for n in self._ordered if len(n) > 1)

    def surnames(self) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for alias, canon in self.names.items():
            for prefix in COMPOUND_SURNAMES:
                if alias.startswith(prefix):
                    out.setdefault(prefix, set()).add(canon)
                    break
            else:
                out.setdefault(alias[:1], set()).add(canon)
        return out


def _introduced(text: str, start: int, end: int) -> bool:
    before = text[max(0, start - 8) : start]
    after = text[end : end + 12]
    return bool(_INTRO_BEFORE.search(before) or _INTRO_AFTER.match(after))


# 驿丞是个胖子，姓范 / 那个伙计姓卢: what opens a clause that then gives a surname.
_ROLE_THEN_SURNAME = re.compile(
    r"(?:^|(?<=[，。！？；：”」\s]))(?:那个|这个|那位|这位)?([\u4e00-\u9fff]{2,3}?)"
    r"(?:是(?:个|一个|位|一位)[^，。！？；]{1,8}[，,])?姓([\u4e00-\u9fff])(?=[，。、的\s]|$)"
)


def _surnamed_roles(text: str) -> frozenset[str]:
    """Words the narration gives a surname to, which do not start with it (驿丞是个胖子，姓范):
    someone named by what they are, whose surname then makes their name (范驿丞)."""
    return frozenset(
        m.group(1)
        for m in _ROLE_THEN_SURNAME.finditer(text)
        if m.group(2) in SURNAMES and not m.group(1).startswith(m.group(2))
    )


def surnames_introduced(text: str) -> set[str]:
    """Surnames the narration gives someone it names by role (年轻的民警姓孙)."""
    return {m.group(1) for m in _SURNAME_INTRO.finditer(text) if m.group(1) in SURNAMES}


_CONNECTIVE = (
    r"(?:于是|便|就|又|也|随即|忽然|突然|这时|那时|然后|后来|可是|但是|却|只见|此时|此刻|接着|随后|终于|"
    r"身后的|身边的|旁边的)"
)
_CLAUSE_HEAD = re.compile(rf"[\n，。！？；：、”」』]\s*{_CONNECTIVE}?$")
_SURNAME = f"[{''.join(sorted(SURNAMES))}]"  # one character of a surname
# Characters of transliterated foreign names (安德烈, 娜塔莎, 玛格丽特 …).
_TRANSLIT = (
    "阿埃艾爱安奥澳巴拜班邦鲍贝本比彼毕别宾波伯勃博布查达戴丹道德迪蒂丁东杜多厄俄恩尔法凡菲斐费芬"
    "丰佛夫弗福盖甘冈戈哥格葛根贡古圭哈海汉豪赫亨华霍基吉济加贾嘉简杰捷卡凯坎康考柯科克肯库奎拉莱"
    "赖兰朗劳勒雷蕾里丽利莉莲琳卢鲁露伦罗洛玛马迈麦曼芒梅蒙米密摩莫姆穆娜纳南内妮尼涅纽努诺欧帕潘"
    "佩彭皮珀普奇齐契恰乔切琴萨塞瑟森沙莎舍什斯索塔泰坦汤特提廷图托瓦万威韦维温沃乌西希锡夏谢辛"
    "休雅亚扬耶叶伊依因英尤约泽扎詹兹佐芙娃娅丝黛茜薇琪缇妲甫廖得佳列"
)
_FOREIGN = re.compile(rf"[{_TRANSLIT}]{{2,}}(?:·[{_TRANSLIT}]{{2,}})*")
# What a name looks like when only its position says so: a surname first, or a foreign name.
_NAME_SHAPED = re.compile(rf"{_SURNAME}|[{_TRANSLIT}·]+$")
_COMPOUND_NAME = re.compile(rf"(?:{'|'.join(COMPOUND_SURNAMES)})[\u4e00-\u9fff]{{1,2}}")
_APPOSED = re.compile(
    rf"(?:{'|'.join(KIN)}|{_ROLE_RE})[，,]?({_SURNAME}[\u4e00-\u9fff]{{1,2}}?)"
    r"(?=[，。！？、；”」\s]|是|的)"
)
_CALLED = re.compile(
    rf"(?<![喊大尖惊])叫(?:他|她|我)?({_SURNAME}[\u4e00-\u9fff]{{1,2}}?)"
    r"(?=[，。！？、；”」\s]|的|是|$)"
)
_LOCATIVE_END = re.compile(
    r"[里上中内外边前后下旁]$|^.[肩臂腿手脚头腰胸背眼脸腕膝]$|"
    r"(?:胳膊|手臂|肩膀|眼睛|脑袋|手腕|脚踝|膝盖|手指|手掌)$"
)
# 钟记修表铺: a shop's name, not a person's.
_SHOP_AFTER = re.compile(
    r"^[\u4e00-\u9fff]{0,3}(?:铺|店|馆|行|号|楼|庄|厂|坊|斋|堂)(?=$|[的，。里门前后在是])"
)


# 在船尾摇橹 / 正坐在城门口: where the clause's subject is, then what they do there.
_AT_A_PLACE = re.compile(
    r"^(?:正|也|还|却|又|就|便|一直|早已|早)*(?:在|坐在|站在|蹲在|躺在|立在)[\u4e00-\u9fff]{1,6}?"
    r"(?:里|上|下|边|旁|前|后|口|头|尾|中|外)[\u4e00-\u9fff]"
)


def at_clause_head(text: str, start: int) -> bool:
    """Does a clause (or sentence) begin at `start`, perhaps after a connective (这时, 于是)?"""
    before = text[max(0, start - 6) : start]
    return bool(_CLAUSE_HEAD.search(before if start > 6 else "\n" + before))


class _NameFinder:
    """The candidates of `person_names`, each path a method; `found` collects them."""

    def __init__(self, text: str, known: NameIndex) -> None:
        self.text = text
        self.known = known
        self.spans = quoted_spans(text)
        self.by_surname = known.surnames()
        self.known_spans = [(a, b) for a, b, _ in known.occurrences(text)]
        self.tokens = tagged(text)
        self.flag_at: dict[int, str] = {}
        self.word_at: dict[int, str] = {}
        offset = 0
        for word, flag in self.tokens:
            self.flag_at[offset] = flag
            self.word_at[offset] = word
            offset += len(word)
        self.found: dict[str, NameUse] = {}

    def verbish(self, end: int) -> bool:
        """Is what follows `end` the rest of a clause about the word before it (an action,
        speech, a preposition or an adverb opening a predicate)?"""
        after = self.text[end : end + 8]
        if ACTS.match(after) or _SPEECH.match(after):
            return True
        flag = self.flag_at.get(end, "")
        return flag.startswith(("v", "p", "d", "t")) and not after.startswith(("是", "的"))

    def role(self, word: str, start: int, end: int) -> bool:
        if word in ROLES:
            return True
        if word[1:] in TITLES or (word[:1] in SURNAMES and word[1:] in ROLES):
            return False  # 孙警官, 李管家: a surname and a title, not a role
        window = self.text[max(0, start - 3) : end + 3]
        base = max(0, start - 3)
        return any(
            base + m.start() < end and start < base + m.end() for m in re.finditer(_ROLE_RE, window)
        )

    def known_or_part(self, word: str, start: int, end: int) -> bool:
        """Someone the story knows (a name, a part of one, the only 林 as 林公子)."""
        known = self.known
        if word in self.found or known.known(word):
            return True
        if any(u.start < end and start < u.start + len(u.name) for u in self.found.values()):
            return True  # inside a longer candidate (耶维奇 in 阿纳托利·瓦西里耶维奇)
        if any(u.introduced and word in u.name.split("·")[1:] for u in self.found.values()):
            return True  # 别洛夫 after 我叫米哈伊尔·安东诺维奇·别洛夫: his surname
        base = next(
            (word[: -len(t)] for t in TITLES if word.endswith(t) and len(word) > len(t)), ""
        )
        if base and known.known(base):
            return True  # 杜布瓦先生 after 阿尔芒·杜布瓦
        titled = word[1:] in TITLES or (word[1:] in ROLES and word not in ROLES)
        surnamed = known.introduced_surnames | surnames_introduced(self.text[:start])
        if titled and (len(self.by_surname.get(word[:1], set())) == 1 or word[:1] in surnamed):
            return True  # 林公子 is 林远 when he is the only 林; 孙警官 after 民警姓孙
        if "·" in word:  # 瓦尔瓦拉·彼得罗芙娜 is not 彼得·尼古拉耶维奇 (彼得 is inside it)
            return any(p in known.names for p in word.split("·"))
        return any(a < end and start < b for a, b in self.known_spans)  # 亚哈随鲁王 → 鲁王

    def role_surnamed(self, word: str, start: int) -> bool:
        """A surname the text gave before, and the role it gave it to (范 + 驿丞)."""
        before = self.text[:start]
        return (
            len(word) >= 3
            and word[:1] in surnames_introduced(before)
            and word[1:] in _surnamed_roles(before)
        )

    def no_name(self, word: str, start: int, end: int) -> bool:
        """A word that names nobody, whatever its position."""
        if common_word(word) or _FUNCTION_CHARS.search(word) or word.endswith("人"):
            return True  # 众人; 王又问 → 王又; 赫人 is a people
        if word in _surnamed_roles(self.text):
            return True  # 驿丞是个胖子，姓范: a role the narration gives a surname, no name
        locative = _LOCATIVE_END.search(word) and (
            len(word) == 2
            or not self.flag_at.get(start, "").startswith("nr")
            or lexicon.ordinary_noun(word[:-1])  # 林子里, not 马千里
        )
        if word in self.known.places or locative or self.role(word, start, end):
            return True  # 伯利恒 is a place; 包里 a place in a bag; 马车夫 a coachman
        shop = _SHOP_AFTER.match(self.text[end:])
        if shop and not ACTS.match(self.text[end:]):
            return True  # 钟记修表铺 is a shop (孙德旺走进店里 is someone)
        if len(word) >= 3 and word.endswith("王"):
            return True  # 犹大王: the king of Judah
        if len(word) >= 3 and word[2] in "里上中内外边" and lexicon.ordinary_noun(word[:2]):
            return True  # 林子里静: 林子里 is in the woods
        if lexicon.ordinary_noun(word) and not _introduced(self.text, start, end):
            return True  # 江风带着潮腥: a river wind, no one's name
        if len(word) == 3 and lexicon.nature_compound(word[:2]):
            return True  # 江风吹进来: the wind blew in
        if len(word) == 3 and word[0] in SURNAMES and _plain_noun(word[:2]):
            return True  # 马掌钉好了: the horseshoe was nailed (not 斯文森: 斯文 is no thing)
        if word[0] not in _WEAK_SURNAMES or word[1:] in TITLES or word[1:] in ROLES:
            return False  # 王掌柜 is somebody
        given = names.tags(word[1:])
        verb = (bool(given) and given[0][1].startswith("v")) or lexicon.first_sense(
            word[1:]
        ).startswith("to ")
        place = bool(given) and given[0][1] in ("nr", "ns")  # 金宝山: 宝山 names somewhere
        return verb or (common_word(word[1:]) and not place)  # 王回答说, 王派定: the king

    def consider(self, word: str, start: int, end: int) -> None:
        if self.known_or_part(word, start, end) or self.no_name(word, start, end):
            return
        if self.role_surnamed(word, start):
            self.found.setdefault(word, NameUse(word, start, True))
            return  # 范驿丞 after 驿丞是个胖子，姓范: the one named by role, by surname and role
        text = self.text
        first = text.find(word)  # introduced at its first mention (名叫钱七的船夫 … 钱七说)
        introduced = _introduced(text, first, first + len(word)) or _introduced(text, start, end)
        if inside(self.spans, start) and not _SPEECH.match(text[end : end + 8]):
            if introduced:  # 陆青崖的三叔，陆怀山 — said by someone, still an introduction
                self.found[word] = NameUse(word, start, True)
            return  # a name inside someone's speech may be anything (a place, an idiom)
        self.found[word] = NameUse(word, start, introduced)

    def tagged_names(self) -> None:
        offset = 0
        for k, (word, flag) in enumerate(self.tokens):
            start = offset
            offset += len(word)
            longest = 20 if "·" in word else 7 if word.endswith(TITLES) else 4  # 史密斯太太
            if not flag.startswith("nr") or not 2 <= len(word) <= longest:
                continue
            rest = self.tokens[k + 1][0] if k + 1 < len(self.tokens) else ""
            whole = word + rest[:1]
            # 高桂 / 芬系 / 着: the analyser took a name's last character into the verb
            one = len(rest) == 1 or (
                len(rest) == 2 and self.text[offset + 2 : offset + 3] in "着了过"
            )
            if (
                len(word) == 2
                and one
                and word[0] in SURNAMES
                and rest[:1] not in "的地得了着过一"
                and not lexicon.ordinary_noun(word)  # 进林子去看看: the woods
            ):
                after_whole = self.text[offset + 1 : offset + 9]
                aspect = _VERB_ASPECT.match(after_whole) and after_whole[0] not in "好完对错坏"
                if ACTS.match(after_whole) or aspect:  # 冯子/敬/叹了: 冯子敬
                    self.consider(whole, start, offset + 1)
                    continue
            if _introduced(self.text, start, offset):
                self.consider(word, start, offset)  # 我叫理查德·格兰特, 名叫…: introduced
                continue
            after = self.text[offset : offset + 8]
            alone = names.tags(word)
            named_alone = len(alone) == 1 and alone[0][1] == "nr"  # 马掌 alone is a horseshoe
            if (
                at_clause_head(self.text, start)
                and named_alone
                and _clause_verb(self.tokens, k + 1)
            ):
                self.consider(word, start, offset)  # 侯三喜第一个站出来: a name heading a clause
                continue
            if at_clause_head(self.text, start) and named_alone and _AT_A_PLACE.match(after):
                if not lexicon.senses(word):  # 秦仲在船尾摇橹 (not 秦岭在云里, a mountain)
                    self.consider(word, start, offset)
                    continue
            title = next((t for t in TITLES if after.startswith(t)), "")
            if title and self.verbish(offset + len(title)) and at_clause_head(self.text, start):
                self.consider(word + title, start, offset + len(title))  # 斯文森太太端着…
                continue
            # only where it stands, a full name (顾建明挤到…) or a foreign one (格里沙跑进…);
            # not a surname-like verb (张开嘴/nr)
            shaped = len(word) >= 3 and _NAME_SHAPED.match(word) is not None
            shaped = shaped and not common_word(word[:2])
            head = shaped and at_clause_head(self.text, start)
            if ACTS.match(after) or _SPEECH.match(after) or (head and self.verbish(offset)):
                self.consider(word, start, offset)

    def clause_heads(self) -> None:
        text = self.text
        for m in _SUBJECT.finditer(text):
            start = m.start(1)
            for length in (2, 3):
                word, end = m.group(1)[:length], start + length
                if len(word) != length:
                    continue
                # 秦/怀远/拨开: jieba cut the surname off a full name that opens a clause; but
                # 仰起/头, 骆驼/嘶叫 are words that merely start with a surname
                first = self.word_at.get(start, "")
                # (the analyser reads 赵六点了点头 as a time, 赵六点: still a name first)
                if len(first) > 1 and not self.flag_at[start].startswith(("nr", "t")):
                    break
                if len(first) == 1 and self._thing_negated(start):
                    break  # 路/不好/走: a thing (the road) and what it is not, not a name
                split = length == 3 and first == word[0] and end in self.word_at
                if ACTS.match(text[end:]) or (split and self.verbish(end)):
                    self.consider(word, start, end)
                    break
        for pattern, shortest in ((_COMPOUND_NAME, 3), (_FOREIGN, 3)):
            for m in pattern.finditer(text):
                for end in range(m.end(), m.start() + shortest - 1, -1):
                    word = text[m.start() : end]
                    if len(word.replace("·", "")) < shortest:
                        break
                    if at_clause_head(text, m.start()) and self.verbish(end):
                        self.consider(word, m.start(), end)
                        break

    def _thing_negated(self, start: int) -> bool:
        """The analyser reads the one character at `start` as a common noun, and a negation
        follows it (路/不好/走, 钱/不够/用): a thing and what it is not. A name read whole (岳不群)
        is no such noun."""
        return self.flag_at.get(start, "") == "n" and self.text[start + 1 : start + 2] in _NOT

    def apposed(self) -> None:
        """陆青崖的三叔，陆怀山 / 船夫孟三: a name right after who the person is."""
        for m in _APPOSED.finditer(self.text):
            word = m.group(1)
            if not self.known.known(word) and not common_word(word):
                if not _FUNCTION_CHARS.search(word):
                    self.found.setdefault(word, NameUse(word, m.start(1), True))

    def called(self) -> None:
        """(老板)叫崔永健 / 真名叫卢四海: a name given with 叫 is introduced (in speech too)."""
        for m in _CALLED.finditer(self.text):
            word = m.group(1)
            if not self.known.known(word) and not common_word(word):
                if not _FUNCTION_CHARS.search(word):
                    self.found.setdefault(word, NameUse(word, m.start(1), True))

    def titled_and_named(self) -> None:
        for m in _HONORIFIC.finditer(self.text):
            if m.start() not in self.word_at:
                continue  # 账房先生: 房 ends a word, it is no surname
            if m.group(1) in TITLE_SURNAMES:
                self.consider(m.group(1) + m.group(2), m.start(), m.end())
        for m in _NAMED.finditer(self.text):  # 一个名叫钱七的船夫: a new name, introduced
            word = m.group(1)
            if word not in self.found and not self.known.known(word) and not common_word(word):
                self.found[word] = NameUse(word, m.start(1), True)


def person_names(text: str, known: NameIndex) -> list[NameUse]:
    """Personal names in `text` that the index does not know, first use first.

    A name is recognised where it acts (the position that matters for "used as if known"):
    a jieba person-name token (nr) followed by an action or speech, or opening a clause whose
    predicate follows; a surname and one or two characters opening a clause and followed by an
    action (jieba splits 赵六点了点头 as 赵 / 六点); a compound surname (欧阳烈) or a
    transliterated name (叶甫盖尼, 玛莎·布朗) opening a clause; a surname + title (沈师兄,
    王掌柜, 钱主任). Never a name: a frequent dictionary word, a role (司狱, 马车夫, 掌柜), a
    place word (包里), a piece of a known name (斯帖 in 以斯帖), a candidate with a function
    character (王又问 → 王又), a surname + title when exactly one known character has that
    surname (林公子 → 林远) or the narration gave that surname to someone (民警姓孙 → 孙警官).
    A name introduced inside speech (陆青崖的三叔，陆怀山) is kept, as introduced.
    """
    finder = _NameFinder(text, known)
    finder.clause_heads()
    finder.apposed()
    finder.called()
    finder.tagged_names()
    finder.titled_and_named()
    return sorted(_parts_pruned(finder.found.values()), key=lambda u: u.start)


def _plain_noun(word: str) -> bool:
    """A word for a thing (马掌 "horseshoe") rather than the start of a name (斯文森, 苗大有):
    the analyser calls it a noun on its own, and a dictionary has it."""
    alone = names.tags(word)
    known = common_word(word) or bool(lexicon.senses(word))
    return len(alone) == 1 and alone[0][1] == "n" and known


def _clause_verb(tokens: Sequence[tuple[str, str]], k: int) -> bool:
    """Does a verb follow token `k` within three tokens of its clause, with only numbers,
    adverbs and times between (侯三喜第一个站出来), not more nouns (钟记修表铺的门窗)?"""
    for word, flag in tokens[k : k + 3]:
        if word in "，。！？；：、“”「」" or flag == "x":
            return False
        if flag.startswith("v"):
            return True
        if not flag.startswith(("m", "d", "t", "p")):
            return False
    return False


def _parts_pruned(uses: Iterable[NameUse]) -> list[NameUse]:
    """Without a use that is a part of another one's name, perhaps with a title (杜布瓦先生
    after 阿尔芒·杜布瓦): the same person."""
    uses = list(uses)
    parts = {p for u in uses if "·" in u.name for p in u.name.split("·") if len(p) >= 2}
    out: list[NameUse] = []
    for u in uses:
        base = next((u.name[: -len(t)] for t in TITLES if u.name.endswith(t)), u.name)
        if "·" not in u.name and base in parts:
            continue
        out.append(u)
    return out


# ---- places -----------------------------------------------------------------------------------

PLACE_SUFFIXES = (
    "渡口",
    "渡",
    "码头",
    "口",
    "岛",
    "山",
    "峰",
    "城",
    "镇",
    "村",
    "寺",
    "庙",
    "观",
    "阁",
    "楼",
    "府",
    "殿",
    "江",
    "河",
    "湖",
    "林",
    "谷",
    "关",
    "港",
    "街",
    "巷",
    "院",
    "堂",
    "宫",
    "桥",
    "店",
    "客栈",
    "栈",
    "庄",
    "营",
    "寨",
    "总舵",
    "舵",
    "地",
    "国",
    "家",
    "田",
    "场",
    "园",
    "屋",
    "房",
    "船",
    "岸",
    "坡",
    "洞",
    "井",
    "门",
    "海",
    "狱",
    "牢",
    "坑",
    "监",
    "帐棚",
    "营",
    "殿",
    "馆",
    "社",
    "车站",
    "驿站",
    "铺",
    "派出所",
    "诊所",
    "事务所",
    "住院部",
    "俱乐部",
    "酒吧",
    "机场",
    "法院",
    "医院",
    "公司",
    "庄园",
    "教堂",
    # offices and institutions: 医务所, 巡检司, 县衙, 邮局, 集市
    "所",
    "司",
    "衙",
    "衙门",
    "署",
    "局",
    "集市",
    "市场",
)
_PRESENCE = re.compile(
    r"(?:正|仍|还|却|也|又|都|依旧|此刻|此时|这时候|那时候|这时|那时|这会儿|那会儿|眼下|已经|已|独自|一直|早就|早已|"
    r"正好|一个人|(?:悄悄|静静|默默|偷偷|远远|早早)地?|一整天|整天|一整夜|整夜)*"
    r"(?:在|站在|坐在|躺在|待在|呆在|留在|守在|蹲在|藏在|住在|跪在|靠在|停在|等在|趴在|睡在|关在|倚在|躲在|"
    r"缩在|蜷在|窝在|猫在|埋伏在|伏在|守候在|候在|立在|歇在)"
)
# Where someone is inside the place they are at: not a second place (门口, 窗边, 楼上, 书房).
# Buildings whose names end like a room's (营房 are barracks, not a room of wherever one is).
_BUILDINGS = ("营房", "厂房", "库房", "仓房", "粮房")
PLACE_PARTS = tuple(
    "门口 门外 门前 门边 门后 门廊 侧门 窗边 窗前 窗下 窗口 窗台 楼上 楼下 楼梯 阳台 院子 院里 院内 "
    "院中 后院 前院 天井 堂屋 正屋 里屋 屋里 屋内 屋外 屋檐 房里 房间 床边 床前 床头 床上 桌边 桌前 桌旁 柜台 台阶 "
    "走廊 过道 楼道 角落 墙角 墙根 船头 船尾 船舱 船板 船底 甲板 炉边 火盆 壁炉 灯下 身边 身后 身旁 "
    "旁边 对面 隔壁 大厅 客厅 书房 卧室 厨房 里屋 外屋 堂上 堂前 廊下 檐下 树下 长椅 花坛 钢琴".split()
)
_PART = re.compile(
    "(?:" + "|".join(PLACE_PARTS) + r"|(?:\d+|[一二三四五六七八九十]+)楼"
    r"|(?:(?!的)[\u4e00-\u9fff]){0,3}(?:房|室|厅|舱)(?![\u4e00-\u9fff]*(?:城|镇|村|街)))"
)
_OWNER = re.compile(r"^(?:他|她|他们|她们|我|你|众人|大家)的?")  # 她身后: where she is
# A town holds the places in it: being in 雁回城 and in its inn is one place.
_SETTLEMENT = (
    "城",
    "镇",
    "村",
    "县",
    "州",
    "乡",
    "市",
    "省",
    "区",
    "国",
    "都",
    "关",
    "寨",
    "堡",
    "营",
)


@dataclass(frozen=True, slots=True)
class Location:
    """Where a phrase puts someone: a place (江心岛, 书珊城外), a part of wherever they are
    (窗边, 楼上, 书房), or a part of a named place (福来客栈 + 门口)."""

    place: str | None
    part: str | None = None


# After a place word, the side of it (岛边, 岸边, 山下, 城外): where someone is, by that place.
_SIDE = ("边", "旁", "畔", "头", "前", "后", "外", "下", "脚")
# A verb with an aspect particle (守着, 睡了, 守过) starts what someone does there.
_VERB_ASPECT = re.compile(r"[\u4e00-\u9fff][着了过]")


def _before_verb(words: str) -> str:
    """`words` up to the first verb with an aspect particle: 岛边守着船 → 岛边 (what someone does
    at a place is never part of its name)."""
    m = _VERB_ASPECT.search(words, 1)
    return words[: m.start()] if m else words


def _beside(phrase: str) -> str:
    """The place word of 岛边 / 河畔 / 桥旁 (being beside it is being there), else the phrase."""
    if len(phrase) == 2 and phrase[1] in "边旁畔" and phrase[0] in PLACE_SUFFIXES:
        return phrase[0]
    return phrase


SETTLEMENTS = _SETTLEMENT


def same_place(a: str, b: str) -> bool:
    """One place named twice (渡口 / 青岚渡口), or a town and a place in it (雁回城 / 福来客栈),
    or the side of a place and the place (岛边 / 江心岛)."""
    if a == b or a in b or b in a:
        return True
    if b.endswith(_beside(a)) or a.endswith(_beside(b)):
        return True
    return _settlement(a) != _settlement(b)


def _settlement(place: str) -> bool:
    """A town or a village (县城, 柳浦镇), not a market in one (县城的集市)."""
    return place.endswith(_SETTLEMENT) and not place.endswith(_MARKETS)


_MARKETS = ("集市", "市场", "超市", "菜市", "夜市", "早市", "庙会")


def _building(words: str) -> str:
    """The shortest phrase (2–6 characters, no punctuation) ending in a place word (after a
    count: 一家小旅馆 → 小旅馆)."""
    words = re.sub(r"^[里中内]?(?=[一两几这那][家间座个所处栋幢])", "", words)  # 城里一家勾栏
    words = re.sub(r"^[一两几这那][家间座个所处栋幢]", "", words)
    for end in range(2, min(len(words), 6) + 1):
        piece = words[:end]
        if re.search(r"[^\u4e00-\u9fff]", piece):
            break
        if piece.endswith(PLACE_SUFFIXES) and not _PART.match(piece):
            return piece
    return ""


def locate(rest: str, known_places: Sequence[str]) -> Location | None:
    """The location the words `rest` name (the text just after 在 / 站在 / 走到 …)."""
    rest = rest[:14]
    stem = next(  # 往扬州去: 扬州城 named without its 城
        (p for p in known_places if len(p) >= 3 and p.endswith(_SETTLEMENT) and rest == p[:-1]),
        None,
    )
    if stem is not None:
        return Location(stem)
    for place in sorted(known_places, key=len, reverse=True):
        if place and rest.startswith(place):
            more = rest[len(place) :]
            inside = next((p for p in known_places if len(p) >= 2 and more.startswith(p)), None)
            if inside is not None:  # 柳浦镇城隍庙: the temple, a known place in the town
                part = _PART.match(more[len(inside) :].lstrip("的"))
                return Location(inside, part.group(0) if part else None)
            tail = next((x for x in PLACE_SUFFIXES if more.startswith(x)), "")
            if _PART.match(more):
                tail = ""  # 福来客栈门口: the inn's door, not a place called 福来客栈门
            if place.endswith(_SETTLEMENT) and more[len(tail) :].startswith("外"):
                tail += "外"  # 书珊城外 is not in 书珊城
            part = _PART.match(more.lstrip("的"))
            inner = _building(more[len(tail) :].lstrip("的")) if place.endswith(_SETTLEMENT) else ""
            if inner and not part:
                return Location(f"{place}的{inner}")  # 县城的俱乐部: a building in the town
            return Location(place + tail, part.group(0) if part else None)  # 青岚渡 + 口
    rest = _before_verb(rest)
    owner = _OWNER.match(rest)
    part = _PART.match(rest, owner.end() if owner else 0)
    if part and not part.group(0).endswith(_BUILDINGS):
        return Location(None, part.group(0))  # 窗边 / 她身后
    if (
        rest[:1] in PLACE_SUFFIXES
        and rest[1:2] in ("里", "中", "内", "上")
        and rest[0] not in "地门田"
    ):
        return Location(rest[:1])  # 在监里, 在坑中, 在船上 (地上 is the ground, no place)
    return _phrase_place(rest)


# 这里, 哪家; 靠门的桌子, 朝门: a phrase starting so names no place.
_NOT_A_PLACE_START = ("这", "那", "哪", "何", "靠", "朝", "向", "往", "对", "临", "挨", "沿", "顺")


def _phrase_place(rest: str) -> Location | None:
    """The place a phrase with no known place names (`rest` stops before any verb)."""
    if rest[:1] in ("去", "来") or _doing(rest[:6]):
        return None  # 下楼去收拾客房: what they went to do
    # the shortest phrase (≤ 6 characters, no punctuation) that ends in a place word; a part
    # after it (医院的门口, 住院部楼下) is where in that place
    for end in range(2, min(len(rest), 6) + 1):
        piece = rest[:end]
        if re.search(r"[^\u4e00-\u9fff]", piece):
            break
        if piece.endswith("地") and len(piece) < 3:
            continue  # 雪地, 草地, 空地: the ground somewhere, no place of its own
        if re.search(r"[一两几这那][家间座个所处栋幢]$", piece):
            continue  # 路边一家(驿站): a count, the place comes after it
        if piece.endswith(PLACE_SUFFIXES) and not piece.startswith(_NOT_A_PLACE_START):
            while (
                end < min(len(rest), 6)
                and rest[: end + 1].endswith(PLACE_SUFFIXES)
                and (not _PART.match(rest[end:]) or rest[: end + 1].endswith(_BUILDINGS))
            ):
                end += 1  # 住院 → 住院部
            after = _PART.match(rest[end:].lstrip("的"))
            named = rest[:end].rpartition("的")[2]  # 下游的石埠镇: the town has a name
            if len(named) < 3 or not named.endswith(_SETTLEMENT):
                named = rest[:end]
            return Location(named, after.group(0) if after else None)
    if rest[:1] in PLACE_SUFFIXES and rest[1:2] and rest[1] in _SIDE:
        return Location(rest[:2])  # 在岛边守着船: 岛边
    owner = rest.find("的")
    if 0 < owner <= 5 and not rest.startswith(_NOT_A_PLACE_START):
        inner = _phrase_place(rest[owner + 1 :])  # 娜塔莎的医务所: someone's place
        if inner is not None and inner.place and len(inner.place) >= 2:
            return inner
    return None


def presence(sentence: str, start: int, known_places: Sequence[str]) -> Location | None:
    """Where a sentence puts someone, from the position `start` (just after a name):
    `林远站在渡口` → 渡口; `林远站在窗边` → a part of wherever he is."""
    m = _PRESENCE.match(sentence, start)
    if m is None:
        return None
    rest = sentence[m.end() :]
    if not any(p and rest.startswith(p) for p in known_places) and _doing(rest[:6]):
        return None  # 正在看湖: doing something, nowhere in particular
    if _ASKED.search(rest[:14].split("，")[0]):
        return None  # (问他)在县城里有没有熟人: a question about a place, nobody there
    return locate(rest, known_places)


_ASKED = re.compile(r"有没有|有无|是否|可曾|可有|有没")
_THERE = re.compile(r"那里|那儿|那边|那地方")


def there(sentence: str, start: int) -> bool:
    """Does the clause put its subject 在那里 (the place the text just named)?"""
    m = _PRESENCE.match(sentence, start)
    return m is not None and _THERE.match(sentence, m.end()) is not None


def _doing(words: str) -> bool:
    """Do `words` start with a verb (看湖, 收拾客房), not a place?"""
    cut = names.tags(words) if words else ()
    return bool(cut) and cut[0][1].startswith("v") and len(cut[0][0]) <= 2


# Leaving for, or arriving at, somewhere; a bare 到 / 去 only right after the one who moves.
_MOVE = re.compile(
    r"来到|走到|回到|赶到|跑到|冲到|到达|抵达|前往|离开|逃往|逃到|逃进|逃出|奔往|赶赴|去往|走出|走进|跑进|跑出|冲进|冲出|进了|出了|渡过|"
    r"摸到|摸进|闯进|钻进|闯入|潜入|溜进|往回走|往回|追上去|追了上去|追出去|追了出去|赶过去|跑过去|冲过去|"
    r"走过去|走上前|迎上去|迎了上去|"
    r"奔向|赶往|赶回|跑回|走回|回了|去了|进入|登上|转到|搬到|返回|走向|进城|出城|上山|下山|进镇|出镇|"
    r"过河|过江|上岸|上船|下船|上车|下车|上楼|下楼|进门|出门|进屋|出屋|进来|出去|回来|回去|离去|赶来|"
    r"赶去|动身|启程|出发|走了|上了(?:船|车|岸|楼)|下了(?:船|车|楼)|上了"
)
_BARE_MOVE = re.compile(_ADVERBS + r"(?:去|到|回|进|往|来)(?:了)?")
MOVES = ("来到", "走到", "回到", "赶到", "到了", "离开", "前往", "去了", "回来", "回去")


@dataclass(frozen=True, slots=True)
class Move:
    where: Location | None  # the destination when the words name one
    left: str | None = None  # the place left, when the words name it (出了盐井镇)
    journey: bool = False  # setting out, or arriving, on a journey (动身, 往县城赶去, 赶到)


# Leaving a place the words name: 出了盐井镇, 离开白沙镇, 走出客栈.
_DEPARTURE = ("离开", "出了", "走出", "跑出", "冲出", "逃出")
_NO_DESTINATION: tuple[str, ...] = (
    "离开",
    "出去",
    "走了",
    "出城",
    "出镇",
    "出门",
    "下船",
    "下车",
    "动身",
    "往回走",
    "往回",
)
_NO_DESTINATION += (
    "追上去",
    "追了上去",
    "追出去",
    "追了出去",
    "赶过去",
    "跑过去",
    "冲过去",
    "走过去",
)
_NO_DESTINATION += ("走上前", "迎上去", "迎了上去")
# Words of a journey rather than a step across a room: setting out, travelling, arriving.
_JOURNEY = re.compile(
    r"动身|启程|出发|上路|上了路|赶去|赶往|前往|去往|奔往|赶赴|赶到|抵达|到达|出了|离开|搭|坐船|骑|"
    r"往[\u4e00-\u9fff]{1,6}?(?:赶去|去了|走去|而去|赶)"
)


_PLANNED = re.compile(r"[没不未别]|要|想|打算|准备|得")
# Wanting or planning to go (the modal 想, not 想起 / 想到 / 想了想 / 想也没想).
_WANTED = re.compile(
    r"想要|打算|准备|决定|计划|巴不得|恨不得|(?<![回思猜])想(?![起到通法象像念了过必也])"
)
_SEES_SOMEONE = re.compile(r"看见|看到|听见|望见|瞧见|发现|等着|盼着|[他她]们?")
_TOWARD = re.compile(r"(?:往|向|朝)([\u4e00-\u9fff]{2,6}?)(?:赶去|去了|走去|而去|奔去|赶|去)")


def movement(clause: str, head: int, known_places: Sequence[str]) -> Move | None:
    """Does the clause move its subject (whose words end at `head`)? Where to, or from where,
    if it says, and is it a journey (see `Move`)?"""
    m = _MOVE.search(clause, head)
    journey = bool(_JOURNEY.search(clause, head))
    toward = _TOWARD.search(clause, head)
    if toward is not None and (m is None or m.start() >= toward.start()):
        where = locate(toward.group(1), known_places)
        far = where is not None and where.place is not None and where.part is None
        return Move(where, journey=far)
    if m is None:
        bare = _BARE_MOVE.match(clause, head)
        if (
            bare is None
            or clause.startswith("到底", bare.end() - 1)
            or _PLANNED.search(bare.group(0))
        ):
            return None  # 到底 is "after all"; 要去 is a plan
        where = locate(clause[bare.end() :], known_places)
        return Move(where, journey=journey) if where is not None else None
    if _PLANNED.search(clause[max(head, m.start() - 2) : m.start()]):
        return None  # 没有回来; 他要赶回周家大院: not a move (yet)
    if _WANTED.search(clause, head, m.start()):
        return None  # 他很想快点回到镇上: a wish, however many words before the move
    if _SEES_SOMEONE.search(clause[head : m.start()]):
        return None  # 看见他进来: someone else moves
    if clause[m.start() - 1 : m.start()] in tuple("捅刺扎插砍劈射钻戳"):
        return None  # 一刀捅进了他的胸口: the blade went in, nobody moved
    if m.group(0) == "上了":
        up = locate(clause[m.end() :], known_places)
        return Move(up) if up is not None and up.place in known_places else None
    if m.group(0) in _DEPARTURE:
        source = locate(clause[m.end() :].lstrip("了"), known_places)
        ahead = _TOWARD.search(clause, m.end())
        where = locate(ahead.group(1), known_places) if ahead else None
        left = source.place if source is not None and source.part is None else None
        return Move(where, left, journey)
    if m.group(0) in _NO_DESTINATION:
        return Move(None, journey=journey)
    return Move(locate(clause[m.end() :].lstrip("了"), known_places), journey=journey)


def places_in(text: str, known_places: Iterable[str]) -> list[str]:
    """Known places the text mentions, then places that presence/motion phrases name."""
    out: list[str] = list(dict.fromkeys(p for p in known_places if p and p in text))
    pattern = re.compile(
        # longer verbs first, and an aspect 了 after them: 回到了县衙 names 县衙, not 到了县衙
        r"(?:(?:离开|来到|回到|走进|抵达|前往|到|进|出|回|去)了?|在|往)([\u4e00-\u9fff]{1,5}?(?:"
        + "|".join(sorted(PLACE_SUFFIXES, key=len, reverse=True))
        + r"))(?=[，。！？、；\s的里中上外边旁前后]|$)"
    )
    for m in pattern.finditer(text):
        place = m.group(1)
        if _before_verb(place) != place or place.startswith("了"):
            continue  # 岛边守着船 is no place's name
        if len(place) >= 2 and place not in out and not place.startswith(("这", "那", "哪")):
            if not common_word(place):
                out.append(place)
    return out


# ---- events that change the blueprint ---------------------------------------------------------

DEATH_AFTER = re.compile(
    r"^(?:已经|也|就|便|终于|竟|竟然|随即|当场|因病|却|早就|早已)*(?:死了|死去|身亡|去世|过世|遇害|丧命|断了气|咽了气|"
    r"没气了|没了气|没有气了|"
    r"气绝|阵亡|殒命|归天|被杀|被害死|被杀死|被处死|被挂|被吊死|死在|死亡|停止了呼吸|没了气息|被宣告死亡|"
    r"咽气|"
    # no breath, no pulse: 没有了气息, 早没了鼻息, 停了心跳
    r"(?:没有?了?|停了|停止了|断了)(?:气息|呼吸|鼻息|脉搏|心跳)|"
    r"是[^，。；！？不没]{1,8}死的)"  # 她是半夜前后死的: when she died
)
# 钟国平在医院去世了 / 老人在睡梦中死去: the subject's clause says it
DEATH_IN_CLAUSE = re.compile(
    r"去世|身亡|(?<![吓笑累饿气急烦困热冷渴痛疼想闷馋])死(?:了|在)|死去(?!活来)|断了气|咽了?气|"
    r"遇害|丧命|毙命|停止了呼吸|没了气息|再也没有(?:起来|醒来|醒过来|浮上来|睁开眼)|"
    r"(?<![不没])(?:没有了|没了|停了|停止了|断了)(?:气息|呼吸|鼻息|脉搏|心跳)"
)
CORPSE = re.compile(r"^的(?:尸体|遗体|尸首|尸身|灵柩)")
DEATH_BEFORE = re.compile(r"(?:杀死了|杀了|害死了|害死|杀死|吊死|处死了?)$")
MISSING_AFTER = re.compile(r"^(?:已经|也|就|便|竟)*(?:失踪|下落不明|不知去向|不见了踪影)")
HURT_AFTER = re.compile(
    r"^(?:已经|也|就|便|竟|当场|却|还是)*(?:受了重伤|身受重伤|重伤|受伤|负伤|中了一箭|中箭|中刀|中了一刀|"
    r"挨了一刀|伤了)"
)
_HURT = re.compile(
    r"受了重伤|身受重伤|受了伤|受伤|负伤|中了[一两三几数]?(?:刀|剑|箭|枪|掌)|挨了[一两三几数]?(?:刀|剑|枪|掌|拳)|"
    r"中箭|中刀|中弹|中枪|骨折|骨裂|扭伤|烧伤|烫伤|摔断了|伤得很重|伤得不轻|养伤|肿得|"
    r"(?:踩|打|砍|咬|撞|摔|压|扭)(?:断|伤|破|裂)了|(?:打|绑|缠|吊|上)着(?:石膏|夹板|绷带|纱布)|"
    r"伤(?:口)?[^，。；！？]{0,4}(?:裂开|崩开|复发|化脓)|"
    r"(?:腿|胳膊|手臂|臂|骨)[^，。；！？]{0,3}骨?(?:头)?断了|被划了一道口子|"
    r"(?:腿|胳膊|手臂|臂|骨|脚踝|肋骨|锁骨)[^，。；！？]{0,4}(?:折断|断成|断裂|断掉)|"
    r"(?:摔|跌|砸|压|踩|撞|磕|打)(?:折|断)了?[^，。；！？]{0,2}(?:腿|胳膊|手臂|臂|骨|脚)|划了一道口子|(?:划|割|拉)(?:开|破)了?一道(?:血)?口子?|骨头断|"
    r"(?:臂|腿|胳膊|肩|脚|腰)[^，。；！？]{0,2}(?:一阵剧痛|剧痛)"
)
# 一刀砍在他的左腿上 / 一支箭射中了白守义的肩膀: the one whose body it is was hurt.
HURT_OBJECT = re.compile(
    r"(?:砍|刺|射|打|击|划|捅|劈|咬|扎|砸|戳|踢)(?:中了|中|在了|在|进了|进|伤了|破了|穿了|断了)"
    r"(?=[^，。！？；]{0,6}的)"
)


def _hurt_in_clause(sentence: str, start: int, end: int) -> bool:
    clause = subject_clause(sentence, start, end)
    if clause is None:
        return False
    return hurt_in(clause)


def hurt_in(clause: str) -> bool:
    """Does the clause say its subject was hurt (not 没受伤, not 险些中箭)?"""
    m = _HURT.search(clause)
    return m is not None and not re.search(r"没|不|未|免|险些|差点", clause[: m.start()])


HEALED = re.compile(
    r"毫发无伤|伤势全好|伤已痊愈|伤口已经愈合|伤口愈合|伤全好了|伤好了|完好如初|行动如常|若无其事|"
    r"生龙活虎|健步如飞|活蹦乱跳|一点伤也没有|丝毫无损|灵活如常|灵活自如|行动自如|一点也不疼了|消了肿|"
    r"伤(?:口|势|处)?(?:(?![没未不还])[^，。；！？的]){0,4}?(?:愈合|痊愈|长好|全好|复原)|"
    r"(?:疤|伤痕)(?:也|都)没(?:有)?留下|从(?:来)?没(?:有)?(?:受过伤|骨折过|伤过)|"
    r"(?:骨折|伤)的地方[^，。；！？]{0,6}好了|"
    r"(?:伤|刀口|创口|口子|腿|胳膊|手腕|手臂|臂|脚踝|骨头)(?:(?![没未不还])[^，。；！？的]){0,5}?"
    r"(?:好了|痊愈|愈合|长好|复原|好利索|收了口)|伤口[^，。；！？]{0,3}收了口|"
    # the bone knit (长结实, 长得结结实实, 长拢), or mostly healed (好了个七七八八, 好了大半)
    r"(?:伤|腿|胳膊|手臂|臂|骨头?|腿骨|骨折)(?:(?![没未不还])[^，。；！？的]){0,5}?"
    r"(?:长(?:得)?(?:结实|结结实实|牢|拢|合了)|好了(?:个)?(?:七七八八|八九成|大半|十之八九))"
)
# Enough time for a wound to heal: weeks, months, a season.
LONG_LAPSE = re.compile(
    r"(?:[一二三四五六七八九十两几数半多\d]+个?多?(?:月|年|星期|礼拜|周)(?:之|以)?(?:后|过去|过后)|"
    r"半个月|整个(?:冬天|夏天|春天|秋天)|数月|几个月|大半年|好几个星期)"
)


@dataclass(frozen=True, slots=True)
class StatusEvent:
    name: str  # canonical
    status: str  # 已死亡 | 失踪 | 受伤
    sentence: str


def status_events(text: str, names: NameIndex) -> list[StatusEvent]:
    """Deaths, disappearances and injuries the narration states (not inside speech)."""
    spans = quoted_spans(text)
    out: list[StatusEvent] = []
    for s in sentences(text):
        for start, end, canon in names.occurrences(s.text):
            if inside(spans, s.start + start):
                continue
            after = s.text[end : end + 10]
            before = s.text[max(0, start - 6) : start]
            if DEATH_AFTER.match(after) or DEATH_BEFORE.search(before):
                out.append(StatusEvent(canon, "已死亡", s.text))
            elif MISSING_AFTER.match(after):
                out.append(StatusEvent(canon, "失踪", s.text))
            elif HURT_AFTER.match(after) or _hurt_in_clause(s.text, start, end):
                out.append(StatusEvent(canon, "受伤", s.text))
    return out


_RELATION_WORDS = (
    "师父",
    "徒弟",
    "父亲",
    "母亲",
    "儿子",
    "女儿",
    "哥哥",
    "姐姐",
    "弟弟",
    "妹妹",
    "妻子",
    "丈夫",
    "朋友",
    "仇人",
    "师兄",
    "师妹",
    "师姐",
    "师弟",
    "婆婆",
    "儿妇",
    "媳妇",
    "亲族",
    "叔叔",
    "伯父",
    "舅舅",
    "恩人",
)
_REL = "|".join(_RELATION_WORDS)


@dataclass(frozen=True, slots=True)
class Relation:
    a: str  # whose relationship
    b: str  # with whom
    relation: str  # what b is to a


def relations(text: str, names: NameIndex) -> list[Relation]:
    """`X是Y的师父` → Y: X is 师父; `X拜Y为师` → X: Y is 师父; `X与Y结为夫妻` → both."""
    out: list[Relation] = []
    occ = names.occurrences(text)
    for i, (_s1, e1, a) in enumerate(occ):
        for s2, e2, b in occ[i + 1 : i + 3]:
            if a == b or s2 - e1 > 6:
                continue
            gap = text[e1:s2]
            tail = text[e2 : e2 + 8]
            m = re.match(rf"^的({_REL})", tail)
            if gap in ("是", "乃是", "就是") and m:
                out.append(Relation(b, a, m.group(1)))
            elif gap in ("拜", "认") and re.match(r"^(?:为|作|做)(?:师|师父)", tail):
                out.append(Relation(a, b, "师父"))
                out.append(Relation(b, a, "徒弟"))
            elif gap in ("和", "与", "同", "跟"):
                m2 = re.match(r"^(?:结为|成了|成为|做了)(夫妻|兄弟|姐妹|朋友|仇人|义兄弟)", tail)
                if m2:
                    rel = {"夫妻": "配偶", "义兄弟": "兄弟"}.get(m2.group(1), m2.group(1))
                    out.append(Relation(a, b, rel))
                    out.append(Relation(b, a, rel))
            elif gap in ("娶了", "娶", "嫁给了", "嫁给"):
                out.append(Relation(a, b, "配偶"))
                out.append(Relation(b, a, "配偶"))
    return out


_CLAUSE_END = re.compile(r"[，。！？；：,.!?;:「」“”『』]")
_SUBJECT_BEFORE = re.compile(
    r"(?:^|[，。！？；：、「」“”『』\s]|于是|便|就|又|也|随即|忽然|这时|那时|然后|后来)$"
)
_NOT_SUBJECT_AFTER = re.compile(r"^(?:的|之|是|家|氏|所|等人|们)")
CLAUSE_ACTS = re.compile(
    r"说|道|问|答|喊|叫|嚷|笑|哭|走|跑|站|坐|跪|拿|握|举|拄|抬|点头|摇头|转身|回头|伸手|吩咐|"
    r"命令|祝福|起身|站起|迎|拉着|扶|抱|来|去|进|出|端|捧|吃|喝|拎|提着|跟着|跟在|推|拍|敲|摸|搓|"
    r"挥|招手|凑|插话|瞪|盯|叼|拥抱|鞠躬|咳嗽|跳|骑|写|念|唱|指着|冷笑|骂|送|帮|搬|陪|背起|扛|划|"
    r"睁开|挤|拍了拍|喝|吃|倒了|咳|呻吟|坐起"
)


def subject_clause(sentence: str, start: int, end: int) -> str | None:
    """The rest of the clause when the name at [start, end) is its subject (林远站起来 …),
    else None (沈默的船, 从哈曼追回)."""
    if not _SUBJECT_BEFORE.search(sentence[max(0, start - 4) : start]):
        return None
    rest = sentence[end:]
    if _NOT_SUBJECT_AFTER.match(rest):
        return None
    m = _CLAUSE_END.search(rest)
    return rest[: m.start()] if m else rest


def dead(status: str) -> bool:
    """Is a blueprint status a death (已死亡, 死亡, 已故, dead …)?"""
    low = status.lower()
    if "假死" in status or "not dead" in low:
        return False
    return any(w in status for w in ("死", "亡", "故", "逝", "殁")) or any(
        w in low for w in ("dead", "deceased", "killed")
    )
