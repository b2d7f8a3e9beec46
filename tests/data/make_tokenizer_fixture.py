"""Writes small Hugging Face tokenizer folders and the ids the `tokenizers`
library gives for a set of prompts, for tests/text/test_bpe_tokenizer.cpp.

A byte-level BPE is trained on a small multilingual corpus with DeepSeek-LLM's
pre-tokenizer (the one Janus-Pro's tokenizer uses: five Split regexes, Digits
with individual digits, ByteLevel without prefix space or regex), then given
DeepSeek's and Janus's added tokens at their real ids (100000 and up). Variants
of the same vocabulary exercise the other pre-tokenizer steps, merge formats,
normalizers and added-token flags. Every expected value comes from `tokenizers`.

Usage: make_tokenizer_fixture.py OUT_DIR
Without the `tokenizers` package it writes OUT_DIR/SKIP with the reason and
exits 0, so that the C++ test can say why it skips.
"""
import copy
import json
import os
import sys

out_dir = sys.argv[1]
os.makedirs(out_dir, exist_ok=True)
if os.path.exists(os.path.join(out_dir, "SKIP")):
    os.remove(os.path.join(out_dir, "SKIP"))
try:
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
except ImportError as e:  # reported by the C++ test as its skip reason
    with open(os.path.join(out_dir, "SKIP"), "w") as f:
        f.write(f"Python package 'tokenizers' is not importable ({e}); installer/install-deps.sh installs it")
    sys.exit(0)

from deepseek_pre_tokenizer import BYTE_LEVEL_PLAIN, DEEPSEEK_PRE_TOKENIZER, split  # noqa: E402


def added(id_, content, special=True, normalized=True, lstrip=False, rstrip=False, single_word=False):
    return {"id": id_, "content": content, "single_word": single_word, "lstrip": lstrip, "rstrip": rstrip,
            "normalized": normalized, "special": special}


BOS, EOS, PAD = "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜▁pad▁｜>"
# DeepSeek-LLM's first added tokens and Janus's image and chat tokens, at their ids.
DEEPSEEK_ADDED = [
    added(100000, BOS), added(100001, EOS), added(100002, PAD, normalized=False),
    added(100016, "<begin_of_image>", normalized=False), added(100581, "<image_placeholder>", normalized=False),
    added(100588, "<|User|>", normalized=False), added(100589, "<|Assistant|>", normalized=False),
    added(100593, "<end_of_image>", normalized=False),
]

CORPUS = [
    "The quick brown fox jumps over the lazy dog. A photo of a cat sitting on a red sofa, highly detailed.",
    "An astronaut riding a horse on the moon, oil painting, 4k, trending on artstation!",
    "Café crème, naïve façade, smörgåsbord, Ærøskøbing, jalapeño, über straße.",
    "Η γρήγορη καφέ αλεπού πηδά πάνω από τον τεμπέλη σκύλο. Καλημέρα κόσμε!",
    "Съешь же ещё этих мягких французских булок, да выпей чаю. Привет, мир!",
    "一只猫坐在红色的沙发上，高清细节。我爱北京天安门。你好，世界！",
    "고양이가 빨간 소파에 앉아 있습니다. 안녕하세요 세계!",
    "القط يجلس على الأريكة الحمراء. مرحبا بالعالم!",
    "लाल सोफे पर बैठी एक बिल्ली। नमस्ते दुनिया!",
    "日本語のテキストも少し。こんにちは世界。",
    "Emoji: 😀 🐱 👩‍💻 👨‍👩‍👧‍👦 🏳️‍🌈 ❤️ 🇫🇷",
    "Numbers 12345 and 3.14159 and 2026-11-24, 100% sure; x = y + 1; f(x) -> [a, b] {c: d}",
    "Whitespace\tand\ttabs\n\nnew lines   and   runs of spaces   \n",
    "<|User|>: a cute corgi\n\n<|Assistant|>:<begin_of_image>",
]

tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.Sequence([])  # replaced in the JSON below
tok.decoder = decoders.ByteLevel()
base = json.loads(tok.to_str())
base["pre_tokenizer"] = DEEPSEEK_PRE_TOKENIZER
tok = Tokenizer.from_str(json.dumps(base))
trainer = trainers.BpeTrainer(vocab_size=900, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                              show_progress=False, special_tokens=[])
tok.train_from_iterator(CORPUS * 3, trainer)
trained = json.loads(tok.to_str())


def merges_as_strings(model):
    model["merges"] = [m if isinstance(m, str) else f"{m[0]} {m[1]}" for m in model["merges"]]


def merges_as_pairs(model):
    model["merges"] = [m.split(" ") if isinstance(m, str) else m for m in model["merges"]]


def relist_early_merges(model):
    """Lists every fifth of the first 200 merges again at the end: the library
    ranks a pair listed twice by its last listing, so these merges come last."""
    merges_as_strings(model)
    model["merges"] = model["merges"] + model["merges"][:200:5]


def template(bos_id):
    return {"type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": BOS, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": BOS, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": BOS, "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {BOS: {"id": BOS, "ids": [bos_id], "tokens": [BOS]}}}


def variant(pre_tokenizer=DEEPSEEK_PRE_TOKENIZER, added_tokens=DEEPSEEK_ADDED, normalizer=None,
            post_processor=None, merge_format=merges_as_strings):
    t = copy.deepcopy(trained)
    merge_format(t["model"])
    t["pre_tokenizer"] = pre_tokenizer
    t["added_tokens"] = added_tokens
    # The library keeps an added token's id only when the model's vocabulary
    # holds its content at that id (otherwise it renumbers it after the
    # vocabulary), so the vocabulary lists them too, leaving the gap below
    # 100000 that DeepSeek's ids have over this small vocabulary.
    for token in added_tokens:
        t["model"]["vocab"][token["content"]] = token["id"]
    t["normalizer"] = normalizer
    t["post_processor"] = post_processor
    t["decoder"] = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}
    return t


def bos_object(content):
    return {"__type": "AddedToken", "content": content, "lstrip": False, "normalized": True, "rstrip": False,
            "single_word": False}


DEEPSEEK_CONFIG = {
    "add_bos_token": True, "add_eos_token": False, "bos_token": bos_object(BOS), "eos_token": bos_object(EOS),
    "clean_up_tokenization_spaces": False, "legacy": True, "model_max_length": 16384, "pad_token": None,
    "sp_model_kwargs": {}, "tokenizer_class": "LlamaTokenizerFast", "unk_token": None, "use_default_system_prompt": False,
}
DEEPSEEK_MAP = {"bos_token": bos_object(BOS), "eos_token": bos_object(EOS), "pad_token": PAD}

VARIANTS = {
    # DeepSeek-LLM / Janus-Pro as shipped: "a b" merges, an empty normalizer
    # Sequence, BOS from tokenizer_config.json (and the equivalent template).
    "deepseek": (variant(normalizer={"type": "Sequence", "normalizers": []}, post_processor=template(100000)),
                 DEEPSEEK_CONFIG, DEEPSEEK_MAP),
    # The same with ["a", "b"] merges and BOS from the template alone.
    "deepseek_pairs": (variant(post_processor=template(100000), merge_format=merges_as_pairs), None, None),
    "gpt2_byte_level": (variant(pre_tokenizer={"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                                               "use_regex": True}), None, None),
    # Pairs listed twice (the later listing gives the rank).
    "duplicate_merges": (variant(merge_format=relist_early_merges), None, None),
    # Patterns that match the empty string. Replace inserts its content at an
    # empty match, but the search skips an empty match where the previous match
    # ended ("(?<=.)o*": "oo" and then no match right after it); Split sees the
    # same matches. No empty match at a text's start: there the library's encode
    # repeats the inserted content, or panics, while its normalizer alone gives
    # what the floor gives (test_tokenizer_semantics.cpp checks that case).
    # The added tokens are matched in the raw text: the library (0.23) decodes
    # a normalized added token as its normalized text, which this normalizer
    # would change.
    "empty_matches": (variant(
        normalizer={"type": "Replace", "pattern": {"Regex": "(?<=.)o*"}, "content": "\u00b7"},
        added_tokens=[dict(t, normalized=False) for t in DEEPSEEK_ADDED],
        pre_tokenizer={"type": "Sequence", "pretokenizers": [
            split("\\p{N}*", "MergedWithNext"), split(" *", "MergedWithPrevious"), BYTE_LEVEL_PLAIN]}),
        None, None),
    "split_behaviors": (variant(pre_tokenizer={"type": "Sequence", "pretokenizers": [
        split("\\s+", "Removed"), split(",", "MergedWithPrevious", kind="String"),
        split("[.!?;:]", "MergedWithNext"), split("\\p{P}", "Contiguous"), {"type": "Digits", "individual_digits": False},
        BYTE_LEVEL_PLAIN]}), None, None),
    "split_inverted": (variant(pre_tokenizer={"type": "Sequence", "pretokenizers": [
        split("\\p{L}+", "Isolated", invert=True), split("\\p{N}+", "Removed", invert=True), BYTE_LEVEL_PLAIN]}),
        None, None),
    "added_flags": (variant(
        normalizer={"type": "Sequence", "normalizers": [
            {"type": "Replace", "pattern": {"String": "\t"}, "content": "  "},
            {"type": "Replace", "pattern": {"Regex": "[«»]"}, "content": "\""}]},
        added_tokens=DEEPSEEK_ADDED + [
            added(100100, "<lstrip>", lstrip=True, normalized=False), added(100101, "<rstrip>", rstrip=True),
            added(100102, "cat", special=False, single_word=True), added(100103, "<both>", lstrip=True, rstrip=True,
                                                                          special=False, normalized=False),
            added(100104, "<image_place", normalized=False)]), None, None),
}

PROMPTS = [
    "A photo of a cat sitting on a red sofa",
    "Café crème brûlée, naïve Ærøskøbing façade",
    "Η γρήγορη καφέ αλεπού",
    "Съешь же ещё этих мягких булок",
    "一只猫坐在红色的沙发上，高清细节。",
    "고양이가 빨간 소파에 앉아 있습니다",
    "القط يجلس على الأريكة",
    "लाल सोफे पर बैठी एक बिल्ली",
    "Emoji 😀🐱 and ZWJ 👩‍💻 👨‍👩‍👧‍👦 🏳️‍🌈 flags 🇫🇷🇯🇵 ❤️",
    "digits 1234567890 ٣٤٥ ５６ ² ½ x1y22z333",
    "  leading spaces, trailing spaces   ",
    "tabs\tand\t\ttabs\nnew\n\nlines\r\nwindows\u00a0nbsp\u3000ideographic space",
    "   ",
    "\n\n\n",
    "",
    "<|User|>: a cute corgi in a spacesuit\n\n<|Assistant|>:<begin_of_image>",
    "<｜begin▁of▁sentence｜>hello<｜end▁of▁sentence｜><｜▁pad▁｜><｜▁pad▁｜>",
    "<image_placeholder><image_placeholder> text <end_of_image>",
    "cat concat cats the cat, a <lstrip>  x   <lstrip> y<rstrip>   z <both>  w<image_pla",
    "mixed: Hello世界мир 123 ＡＢＣ ｆｕｌｌwidth “quotes” ‘single’ — dash… ellipsis",
    "punctuation!!! ??? ... ,,, ;;; (((nested))) [[x]] {{y}} <<z>> a->b a=>b «guillemets»",
    "𐐀𐐁 Deseret, 𞤀 Adlam, Ⰰ Glagolitic, Ꭰ Cherokee",
    "e\u0301 combining acute, ﬁ ligature, Ω ohm, K kelvin",
    # A long prompt: many pieces, long runs of spaces and digits, many added tokens.
    "A painting of 3 cats, 42 dogs; " * 200 + " " * 3000 + "\t" * 50 + "9" * 400 + "<image_placeholder>" * 100 + "  end  ",
]

expected = {"variants": []}
for name, (tokenizer_json, config, special_map) in VARIANTS.items():
    folder = os.path.join(out_dir, name)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer_json, f, ensure_ascii=False, indent=1)
    if config is not None:
        with open(os.path.join(folder, "tokenizer_config.json"), "w", encoding="utf-8") as f:
            json.dump(config, f, ensure_ascii=False, indent=1)
    if special_map is not None:
        with open(os.path.join(folder, "special_tokens_map.json"), "w", encoding="utf-8") as f:
            json.dump(special_map, f, ensure_ascii=False, indent=1)
    hf = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    cases = []
    for text in PROMPTS:
        for add_special in (True, False):
            ids = hf.encode(text, add_special_tokens=add_special).ids
            cases.append({
                "text": text, "add_special_tokens": add_special, "ids": ids,
                "decoded": hf.decode(ids, skip_special_tokens=False),
                "decoded_skipping_special": hf.decode(ids, skip_special_tokens=True),
                "token_texts": [hf.decode([i], skip_special_tokens=False) for i in ids],
            })
    expected["variants"].append({"name": name, "cases": cases,
                                 "tokens": {t: hf.token_to_id(t) for t in (BOS, EOS, PAD, "<begin_of_image>", "Ġcat")}})

with open(os.path.join(out_dir, "expected.json"), "w", encoding="utf-8") as f:
    json.dump(expected, f, ensure_ascii=False, indent=1)
print(f"wrote {len(VARIANTS)} tokenizer folders and expected.json to {out_dir}")
