"""The words that decide which way a lesson points (data only; the rules that read it are in ``polarity.py``).

A robot's lesson and its opposite share almost every word: "it is safe to move the arm while the door is
open" and the same with "unsafe", or with "closed", differ in one word, and both word Jaccard and embedding
cosine call them the same text. For a robot that is a safety bug, so dedup and consolidation treat these
words as decisive: two lessons whose decisive words differ are never one lesson.

Each word list is a space-separated string of the forms that occur (inflections written out, so nothing is
guessed). A form belongs to one entry only. Extending a list is safe in one direction: a decisive word too
many keeps two near-identical lessons apart, a word too few can swallow an opposite lesson.
"""

from __future__ import annotations

# Opposite poles, English. Words of one pole count as the same decisive word ("above" and "over" agree),
# words of the two poles as opposites.
ANTONYMS_EN: tuple[tuple[str, str], ...] = (
    (
        "success successes successful successfully succeed succeeds succeeded succeeding pass passes passed",
        "fail fails failed failing failure failures unsuccessful unsuccessfully",
    ),
    ("always forever", "never"),
    ("open opens opened opening", "close closes closed closing shut shuts shutting"),
    ("on", "off"),
    ("enable enables enabled enabling", "disable disables disabled disabling"),
    ("activate activates activated activating", "deactivate deactivates deactivated deactivating"),
    (
        "allow allows allowed allowing permit permits permitted permissible",
        "forbid forbids forbidden forbidding prohibit prohibits prohibited disallow disallows disallowed",
    ),
    ("required mandatory", "optional"),
    ("maximum maximal max maximise maximize most", "minimum minimal min minimise minimize least"),
    (
        "increase increases increased increasing raise raises raised raising",
        "decrease decreases decreased decreasing reduce reduces reduced reducing",
    ),
    ("more", "less fewer"),
    ("higher high highest", "lower low lowest"),
    ("faster fast fastest quick quickly quicker", "slower slow slowest slowly"),
    ("above over", "below under beneath"),
    ("up upward upwards", "down downward downwards"),
    ("before earlier", "after later"),
    ("left", "right"),
    ("front", "rear"),
    ("top", "bottom"),
    ("inner inside", "outer outside"),
    ("forward forwards", "backward backwards reverse reversed"),
    ("clockwise", "counterclockwise anticlockwise"),
    ("start starts started starting begin begins began", "stop stops stopped stopping halt halts halted"),
    ("pause pauses paused", "resume resumes resumed"),
    ("safe safely safer safest", "dangerous hazardous danger"),
    ("true", "false"),
    ("correct correctly", "wrong wrongly"),
    ("good better best", "bad worse worst"),
    ("accept accepts accepted", "reject rejects rejected"),
    ("include includes included", "exclude excludes excluded"),
    ("attach attaches attached", "detach detaches detached"),
    ("push pushes pushed pushing", "pull pulls pulled pulling"),
    ("tight tighter tighten tightens tightened", "loose looser loosen loosens loosened"),
    ("hot warm", "cold cool"),
    ("wet", "dry"),
    ("full", "empty"),
    ("positive", "negative"),
    ("too", "enough"),
)

# Words that negate what follows, English. "n't" is read as "not"; "non-slip" splits into "non" "slip".
NEGATORS_EN = "not no none nothing nobody nowhere neither nor without cannot non"

# Negating prefixes, English: "unsafe" against "safe", "incorrect" against "correct". A prefixed word
# counts only when the other lesson holds the rest of it (so "indeed" alone decides nothing).
NEGATING_PREFIXES_EN = ("un", "in", "im", "il", "ir", "dis", "non")

# Words that start like a negation but are not one, and whose rest is a common word of its own
# ("under" is not "not der", "display" is not "not play", "into" is not "not to").
PREFIX_EXCEPTIONS_EN = """
    under understand understood until unit units union unique universal uniform unify unified
    into inside input inputs insight install installed installing instead index indexes indeed income
    inform informed information inner intake inlet inlets inbound indoor indoors insert inserted inserting
    inspect inspected instance intend intended interest invest invert inverted invoke inward incline
    inboard inflow infill ingress
    import imports imported impact impacts impulse impulses impose imposed impress improve improved
    improves impart imprint imply
    display displays displayed discover discovered dismiss dismissed distance distances dispose disposed
    dispatch dispatched discount discuss discussed dissolve
    irate illustrate
"""

# Opposite poles, Chinese. Chinese is read character by character with the longest entry winning, so
# "最大" is found before "大" would be, and an exception below shields a word that only contains a
# decisive character.
ANTONYMS_ZH: tuple[tuple[str, str], ...] = (
    ("成功 顺利 通过", "失败"),
    ("总是 始终 永远 一直 每次", "从不 从未 绝不 永不 决不"),
    ("打开 开启 张开 开着", "关闭 关上 合上 闭合 关着 合拢"),
    ("接通 通电", "断开 断电"),
    ("启用 使能", "禁用 停用"),
    ("允许 准许 可以", "禁止 严禁 不准 不许"),
    ("最大 最高 最多 上限 至多", "最小 最低 最少 下限 至少"),
    (
        "增加 提高 增大 升高 加大 加快 上升 增强",
        "减少 降低 减小 减慢 下降 减弱 放慢",
    ),
    ("多 更多 较多", "少 更少 较少"),
    ("高 更高 较高", "低 更低 较低"),
    ("快 更快 较快 快速 高速", "慢 更慢 较慢 慢速 低速"),
    ("上 向上 以上 上方", "下 向下 以下 下方"),
    ("之前 以前 前", "之后 以后 后"),
    ("左", "右"),
    ("内侧 里面 内部", "外侧 外面 外部"),
    ("前进 正向", "后退 反向 倒退"),
    ("顺时针", "逆时针"),
    ("开始 启动", "停止 停下 暂停"),
    ("装载 装上 安装", "卸载 卸下 拆下 拆卸"),
    ("安全", "危险"),
    ("正确", "错误 错"),
    ("松开 放松 松动", "夹紧 拧紧 收紧 抓紧"),
    ("潮湿 湿", "干燥"),
    ("正值 正数", "负值 负数"),
    ("热", "冷"),
)

# Negators, Chinese: each also works as a prefix ("不安全", "未完成", "无碰撞", "非法"), which is why a
# single character suffices.
NEGATORS_ZH = "不 没 没有 未 无 非 别 勿 莫 否 不要 不能 不可 不得 不会 切勿 请勿"

# Words that contain a decisive character without being decisive ("左右" is "about", "非常" is "very",
# "识别" is "recognise", "当前" is "current", "无人机" is "drone").
EXCEPTIONS_ZH = """
    左右 上下 上下文 一下 基本上 实际上 事实上 理论上 总体上 加上 马上
    不过 不断 不少 不但 不仅 差不多 非常 无论 无人机 未来 否则 是否 能否 可否
    特别 区别 分别 识别 类别 级别 差别 别的 别人 告别
    当前 目前 然后 最后 随后 多少 多次 多个 高度 湿度 尽快
"""
