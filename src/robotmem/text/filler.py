"""The words two wordings of one lesson may differ in (data only; the rules that read it are in ``wording.py``).

Two lessons are one experience only when every word in which they differ is listed here: articles and
auxiliaries, particles, discourse fillers ("basically", "as noted before", "其实", "如上所述"). Every other
word is content and keeps two lessons apart, whether or not anyone thought of it as an opposite: "large" and
"small", "green" and "red", "开" and "关". The lists can only be incomplete in the safe direction: a filler
word missing here keeps two wordings of one lesson apart (both are stored), it never merges two lessons.

Words are written as the tokenizer yields them: case-folded, English letters only ("don't" is read as
"do not", "it's" as "it"), Chinese as the dictionary segments it ("我 觉得" is two words). Phrases are
space-separated words and match only whole.
"""

from __future__ import annotations

# Filler anywhere, English: articles, the auxiliaries be / do / have, intensifiers and discourse adverbs.
# Modals (may, must, should, can, will) are content: "may enter" and "must enter" are different rules.
FILLER_WORDS_EN = """
    a an the
    be is are was were been being am do does did has have had
    please kindly just really actually basically simply very quite indeed truly certainly definitely
    surely honestly literally essentially obviously clearly also again anyway anyways fyi btw
"""

# Filler anywhere, English phrases, matched only whole. None holds a word of ``NEVER_FILLER``.
FILLER_PHRASES_EN = """
    of course | as expected | as usual | in fact | in practice | by the way | to be honest | i think
    | i believe | i guess | you know | i mean | note that | please note | please note that | keep in mind
    | keep in mind that | bear in mind | bear in mind that | remember that | remember to | make sure to
    | make sure that | be sure to | as noted | as mentioned | as stated | as we know | as you know
    | in short | in summary | all in all | needless to say | for the record
    | for your information
"""

# Filler right after a quantity, English: a number, or a number and the word after it (its unit). "with 12 N
# of force" is "with 12 N force" and "3 of 4 grasps" is "3 4 grasps"; elsewhere the word decides ("the top of
# the box" is not "the top box").
QUANTITY_LINKS_EN = "of"

# Filler only as a whole clause between punctuation or the ends of the text: "Most importantly, …" and
# "…, as noted before" are fillers, "move it before the arm" keeps its "before".
FILLER_CLAUSES_EN = """
    most importantly | more importantly | as always | always remember | as noted before | as noted above
    | as noted earlier | as mentioned before | as mentioned above | as mentioned earlier | as said before
    | as stated before | as stated above | to sum up
"""

# Filler only in the first clause of a lesson, when every word of that clause is an opener or a filler and
# punctuation ends it ("Note: …", "OK, so, …", "请注意：…").
OPENERS_EN = "note nb important importantly remember reminder tip hint ok okay alright well so yes"

# Openers only when a comma ends the clause: "Right, …" is a filler, "Right: …" a heading and "right"
# anywhere else a direction.
COMMA_OPENERS_EN = "right now"

# Filler anywhere, Chinese: particles, the copula, intensifiers and discourse phrases.
FILLER_WORDS_ZH = """
    的 了 呢 吧 啊 嘛 呀 哦 哈 啦 喔 呗 是 很 非常 真的 确实 的确 其实 实际上 事实上 基本上
    总之 总的来说 总而言之 简而言之 一般来说 一般而言 如上所述 如前所述 众所周知 说实话 当然 显然
    换句话说 也就是说 请
"""

FILLER_PHRASES_ZH = "我 觉得 | 我 认为 | 老实 说"

FILLER_CLAUSES_ZH = ""

OPENERS_ZH = "注意 记住 提示 重要 那么"

COMMA_OPENERS_ZH = "好"

# Negators, English and Chinese: never filler, and decisive as prefixes too ("unsafe", "不安全", "未完成" are
# other words than "safe", "安全", "完成").
NEGATORS = """
    not no none nothing nobody nowhere neither nor never without cannot non
    不 没 没有 未 无 非 别 勿 莫 否 不要 不能 不可 不得 不会 切勿 请勿 无法 不用 甭
"""

# Words that may never be listed above: the negators, and words that decide a robot's lesson even when they
# look like fillers ("right", "on", "before", "more").
NEVER_FILLER = (
    NEGATORS
    + """
    right left up down open close closed on off over under above below before after more less most least
    high low max min maximum minimum always only fast slow
    开 关 大 小 上 下 左 右 前 后 高 低 多 少 快 慢 最
"""
)
