"""The strings every tokenizer golden encodes and decodes (golden/tokenizer/corpus.json).

Grouped by what they exercise; every string is valid UTF-8 (JSON cannot carry anything
else), but many look odd on purpose: controls, noncharacters, lone combining marks, BOMs.
The special tokens of all four tiny models appear inside text, so each tokenizer sees both
its own specials (matched as one id) and the others' (encoded as plain text).
"""

from __future__ import annotations

ENGLISH = [
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "A model that gives the right answer on one machine may differ on another.",
    "Tokenizers split text into pieces, and each piece into tokens.",
    "hello",
    "Hello",
    "HELLO WORLD",
    " hello",
    "hello ",
    "supercalifragilisticexpialidocious",
    "antidisestablishmentarianism is a long word",
    "Mr. Smith went to Washington, D.C., on Jan. 5th.",
    "e.g. i.e. etc. vs. a.m. p.m.",
    "Questions? Answers! Exclamations!!! Ellipses...",
    "\"Quoted\" and 'single-quoted' text, plus (parentheses) [brackets] {braces}.",
    "someone@example.com https://example.org/path?query=value&other=1#anchor",
    "C:\\Program Files\\Harness\\bin and /usr/local/bin/harness",
    "The harness measures these differences and decides whether they are acceptable.",
    "Weather: sunny, 25°C; wind 10 km/h NE.",
    "naïve café résumé coöperate façade jalapeño",
    "Straße Grüße München Ærøskøbing Œuvre",
    "ﬁnance ﬂow ﬀ (ligatures)",
    "snake_case camelCase PascalCase kebab-case SCREAMING_CASE",
    "x86_64 aarch64 riscv64 sm_90a gfx942",
]

CONTRACTIONS = [
    "don't can't won't shouldn't",
    "I'm you're he's she's it's we're they're",
    "I've you'll we'd they'll",
    "IT'S I'M YOU'RE THEY'VE WE'LL HE'D",
    "It'S mixed CaSe'Ll contraction'Ve",
    "'s 't 're 've 'm 'll 'd",
    "''s '''t",
    "' s ' t",
    "rock 'n' roll",
    "the dog's bone and the dogs' bones",
    "'tis 'twas",
    "it'ſ long s and it'\u212a kelvin",
    "O'Reilly D'Angelo l'homme",
    "quote's end'",
]

CHINESE = [
    "你好，世界！",
    "人工智能正在改变我们的生活方式。",
    "今天天气很好，我们一起去公园散步吧。",
    "大型语言模型可以回答问题、写文章、翻译文本，还可以编写程序。",
    "学而时习之，不亦说乎？",
    "床前明月光，疑是地上霜。举头望明月，低头思故乡。",
    "这个测试工具在新模型发布的当天检查它能否正确运行。",
    "中文English混合mixed文本text",
    "价格是99元，打8折以后是79.2元。",
    "第1章 第2节 第3段",
    "我",
    "龘",
    "龥龦",
    "𠀀𠀁 (CJK Extension B)",
    "㐀㐁 (CJK Extension A)",
    "「引号」『书名』【方括号】《书名号》",
    "一二三四五六七八九十百千万亿",
    "繁體中文：臺灣、香港、澳門。",
    "Ｆｕｌｌｗｉｄｔｈ　ＡＢＣ　１２３",
    "北京、上海、广州和深圳是中国的大城市。",
]

OTHER_SCRIPTS = [
    "こんにちは、世界。今日はいい天気ですね。",
    "東京は日本の首都です。カタカナ、ひらがな、漢字。",
    "ｶﾀｶﾅ (halfwidth katakana)",
    "ゟ゠ヿ・ー",
    "안녕하세요, 만나서 반갑습니다.",
    "Привет, мир! Как дела?",
    "Γεια σου κόσμε",
    "مرحبا بالعالم",
    "שלום עולם",
    "नमस्ते दुनिया",
    "สวัสดีชาวโลก",
    "Xin chào thế giới",
    "ሰላም ልዑል",
    "Բարեւ աշխարհ",
    "გამარჯობა მსოფლიო",
]

CODE = [
    "def f(x):\n    return x * 2\n",
    "for i in range(10):\n\tprint(i)\n",
    "int main() { return 0; }",
    "#include <vector>\nstd::vector<int32_t> ids;\n",
    "if (a != b && c <= d || e >= f) { x += 1; }",
    "const result = [1, 2, 3].map((x) => x * 2);",
    "SELECT * FROM results WHERE status = 'fail';",
    '{"model_type": "llama", "hidden_size": 4096, "rope_theta": 500000.0}',
    "$ cmake -S . -B build && make -j8",
    "x==y x===y x!==y x<<=2 x>>>=1 a->b a::b a?.b a??b",
    "fn main() { println!(\"{:?}\", v); }",
    "    indented four spaces\n        eight spaces\n",
    "<html><body><p class=\"ok\">text</p></body></html>",
    "#!/usr/bin/env bash\nset -euo pipefail\n",
    "foo()bar[]baz{}",
    ".hello ,world ;semicolon :colon !bang ?question",
    "$var @user #tag %percent ^caret &amp *star",
    "a.b.c.d a/b/c a\\b\\c",
    "__init__ __name__ == '__main__'",
    "0x7fffffff 0b1010 0o777 1e-6 -3.5e+10",
    "// comment\n/* block */\n# hash comment\n-- sql comment",
    "path/to/file.py:123:45: error: expected ';'",
    "key=value;key2=value2",
    "~/.config/harness/config.yaml",
]

EMOJI = [
    "😀",
    "😀😃😄😁",
    "👍 👍🏻 👍🏼 👍🏽 👍🏾 👍🏿",
    "👨‍👩‍👧‍👦 family",
    "🏳️‍🌈 🏴‍☠️",
    "🇨🇳 🇺🇸 🇯🇵 🇩🇪",
    "❤️ ❤ ♥️",
    "1️⃣ 2️⃣ #️⃣",
    "🧑🏽‍💻 technologist",
    "I love 🍕 and 🍣!",
    "🚀🚀🚀 launch",
    "✅ pass ❌ fail ⚠️ warn",
    "🙂\u200d🙂 stray ZWJ",
    "emoji at end 🎉",
]

WHITESPACE = [
    "",
    " ",
    "  ",
    "   ",
    "\t",
    "\n",
    "\r\n",
    "\n\n\n",
    " \n ",
    "a  b",
    "a   b    c",
    "a\t\tb",
    "a\n\nb",
    "a \n b",
    "   leading spaces",
    "trailing spaces   ",
    "\tleading tab",
    "trailing newline\n",
    "mixed \t \n \r\n whitespace",
    "ideographic\u3000space",
    "no-break\u00a0space",
    "next\u0085line",
    "line\u2028separator paragraph\u2029separator",
    "thin\u2009space en\u2002space em\u2003space",
    "zero\u200bwidth",
    "\r",
    "\x0b\x0c vertical tab and form feed",
    "\n \n \n",
    "a\r\n\r\nb",
    "end with spaces and newline  \n",
]

DIGITS = [
    "1",
    "12",
    "123",
    "1234",
    "12345",
    "1234567",
    "12345678901234567890",
    "3.14159",
    "1,000,000",
    "2024-03-04T08:15:00Z",
    "v1.2.3-rc4",
    "٣٤٥ (Arabic-Indic digits)",
    "१२३ (Devanagari digits)",
    "１２３４ (fullwidth digits)",
    "①②③ ½ ¾ ² ³",
    "Ⅻ Ⅳ (Roman numerals)",
    "abc123def456",
    "-42 +17 0.5e10",
    "phone: +1 (555) 123-4567",
]

# Special tokens of the four tiny models, inside and around text.
SPECIALS = [
    "<|begin_of_text|>",
    "<|begin_of_text|>Hello",
    "Hello<|eot_id|>",
    "a<|eot_id|>b",
    "<|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|>",
    "<|start_header_id|>assistant<|end_header_id|>\n\n",
    "<|eot_id|><|eot_id|>",
    "<|end_of_text|> after end",
    " <|eot_id|> spaced ",
    "<|begin_of_text|",
    "<|eot_id",
    "<<|eot_id|>>",
    "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|><|im_end|>",
    "<|endoftext|>",
    "text<|endoftext|>more text",
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>",
    "<think>\nreasoning here\n</think>\n\nanswer",
    "<think></think>",
    "<|im_start",
    "<｜begin▁of▁sentence｜>你好",
    "<｜begin▁of▁sentence｜><｜User｜>Hello<｜Assistant｜>Hi!<｜end▁of▁sentence｜>",
    "<｜User｜>1+1=?<｜Assistant｜>2",
    "<｜end▁of▁sentence｜>",
    "<｜begin▁of▁sentence",
    "<image>",
    "<image>\nDescribe this image.",
    "USER: <image>\nWhat is in the picture? ASSISTANT:",
    "<image><image>",
    "<imag> <image > < image>",
    "<|begin_of_text|><image>\n<|eot_id|>",
]

# Normalization forms: decomposed and composed sequences, NFC-sensitive characters.
NORMALIZATION = [
    "e\u0301",
    "caf\u0065\u0301 vs caf\u00e9",
    "A\u030a vs \u00c5 vs \u212b",
    "\u1100\u1161\u11a8 (Hangul jamo)",
    "\u0041\u0308\u0304",
    "\u1e9b\u0323",
    "\u03a9 vs \u2126 (ohm)",
    "\u0301 leading combining mark",
    "q\u0307\u0323",
    "\u00c7\u0301",
    "n\u0303o",
]

# Valid UTF-8 that looks invalid or unusual.
ODD = [
    "\x00",
    "nul\x00inside",
    "\x01\x02\x03\x1b[31mred\x1b[0m",
    "\x7f delete",
    "\u0080\u0081\u009f C1 controls",
    "\ufeffBOM at start",
    "mid\ufeffBOM",
    "\ufffd replacement character",
    "\ufffe\uffff noncharacters",
    "\ue000\uf8ff private use",
    "\U0010ffff last code point",
    "\U0001d400\U0001d401 math bold",
    "\ud7ff\ue000 around the surrogates",
    "\u200d lone ZWJ",
    "\u202eright-to-left override",
    "\u00ad soft hyphen",
    "\U000e0001\U000e0041 tags",
    "\ufe0f lone variation selector",
]


def _long_strings() -> list[str]:
    paragraph = ("The harness checks that a new model runs correctly on an accelerator "
                 "platform on the day it is released. ")
    chinese = "大型语言模型可以回答问题、写文章、翻译文本，还可以编写程序。"
    return [
        paragraph * 20,
        chinese * 30,
        "a" * 1000,
        " " * 500,
        "\n" * 200,
        "7" * 301,
        "😀" * 100,
        (paragraph + chinese + "def f(x):\n    return x\n") * 10,
        "ab " * 400,
        "<|eot_id|>" * 50,
    ]


def corpus() -> list[str]:
    """All corpus strings, in a fixed order."""
    return (ENGLISH + CONTRACTIONS + CHINESE + OTHER_SCRIPTS + CODE + EMOJI + WHITESPACE +
            DIGITS + SPECIALS + NORMALIZATION + ODD + _long_strings())
