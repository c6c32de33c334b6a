#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora (tests/fuzz/corpus/<target>/), small on purpose: files of
this repository cut down, the shared reproducers, and hand-written edge cases. Run by hand from
the project root when a parser learns a new form:  python3 tests/fuzz/make_corpus.py
Needs only the standard library (and `tokenizers`, pinned in golden/tools/requirements.txt, for
two tiny tokenizer.json seeds; without it those are kept as they are)."""
import json
import os
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fuzz", "corpus")
REPRO = os.path.join(ROOT, "..", "shared", "reproducers")


def write(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def read(path):
    with open(os.path.join(ROOT, path), "rb") as f:
        return f.read()


def safetensors(header, data=b""):
    h = json.dumps(header, separators=(",", ":")).encode()
    return struct.pack("<Q", len(h)) + h + data


def safetensors_seeds():
    write("safetensors_header", "all_dtypes.safetensors", read("golden/foundation/st/all_dtypes.safetensors"))
    write("safetensors_header", "two.safetensors", safetensors(
        {"__metadata__": {"format": "pt", "probes": "[\"a\",\"b\"]"},
         "a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
         "b": {"dtype": "BF16", "shape": [3], "data_offsets": [16, 22]}}, bytes(22)))
    write("safetensors_header", "fp8_scales.safetensors", safetensors(
        {"w": {"dtype": "F8_E4M3", "shape": [4, 4], "data_offsets": [0, 16]},
         "w_scale_inv": {"dtype": "F32", "shape": [1, 1], "data_offsets": [16, 20]},
         "e": {"dtype": "U8", "shape": [0], "data_offsets": [20, 20]}}, bytes(20)))
    for name in ("deep_shape.safetensors",):  # cut to a few hundred levels: the same shape
        raw = open(os.path.join(REPRO, name), "rb").read()
        n = struct.unpack("<Q", raw[:8])[0]
        head = raw[8:8 + n].decode("latin-1")
        cut = head[:400] + head[-400:]
        write("safetensors_header", "deep_cut.safetensors", struct.pack("<Q", len(cut)) + cut.encode("latin-1"))


def yaml_seeds():
    for f in ("day0.yaml", "image.yaml", "layers.yaml"):
        write("suite_yaml", f, read("suites/" + f))
    for f in sorted(os.listdir(REPRO)):
        if f.startswith("suite_"):
            write("suite_yaml", f, open(os.path.join(REPRO, f), "rb").read())
    write("suite_yaml", "matrix_defaults.yaml", """name: seeds
defaults: &d {tolerance: {preset: bf16}, timeout: 30s}
checks:
  - id: op/{op}/{dtype}
    kind: op
    <<: *d
    matrix: {op: [rmsnorm, gemm], dtype: [f32, bf16]}
    shape: [2, 8]
    tags: [smoke]
  - id: cyc
    kind: model
    model: tests/data/models/tiny-mistral
    golden: golden/models/tiny-mistral
""")
    for f in sorted(os.listdir(os.path.join(ROOT, "configs", "platforms"))):
        write("platform_yaml", f, read("configs/platforms/" + f))
    for f in sorted(os.listdir(REPRO)):
        if f.startswith("platform_"):
            write("platform_yaml", f, open(os.path.join(REPRO, f), "rb").read())


def config_seeds():
    for f in ("llama-3.1-8b.json", "deepseek-v3.json", "gpt-oss-120b.json", "qwen3-235b-a22b.json",
              "llava-1.5-7b-hf.json", "qwen2.5-vl-7b-instruct.json"):
        write("config_json", f, open(os.path.join(ROOT, "..", "shared", "model-configs", f), "rb").read())
    for m in ("tiny-qwen3-next", "tiny-deepseek-v32", "tiny-gemma3", "tiny-gpt-oss-mxfp4"):
        write("config_json", m + ".json", read("tests/data/models/%s/config.json" % m))
    raw = open(os.path.join(REPRO, "cfg_layers_2e31", "config.json"), "rb").read()
    write("config_json", "layers_2e31.json", raw)


def tokenizer_seeds():
    keep = os.path.join(OUT, "tokenizer_json")
    try:
        from tokenizers import Tokenizer, models, pre_tokenizers, decoders, normalizers, processors, trainers
    except ImportError:
        print("tokenizers missing: tokenizer_json seeds kept", file=sys.stderr)
        return
    text = ["Hello, world! 123 été naïve", "the quick brown fox", "<|im_start|>user\nhi<|im_end|>"]
    t = Tokenizer(models.BPE())
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    t.decoder = decoders.ByteLevel()
    t.train_from_iterator(text, trainers.BpeTrainer(vocab_size=280, special_tokens=["<|im_start|>", "<|im_end|>"],
                                                    initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    write("tokenizer_json", "byte_level_bpe.json", t.to_str())
    t = Tokenizer(models.BPE(byte_fallback=True, unk_token="<unk>"))
    t.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    t.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                   decoders.Strip(" ", 1, 0)])
    t.train_from_iterator(text, trainers.BpeTrainer(vocab_size=60, special_tokens=["<unk>", "<s>", "</s>"]
                                                    + ["<0x%02X>" % b for b in range(256)][:8]))
    t.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    write("tokenizer_json", "metaspace_bpe.json", t.to_str())
    assert os.path.isdir(keep)


def sse_seeds():
    # First byte: bytes per feed (low 6 bits) and chat (0x40).
    chat = "".join("data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": w}, "logprobs": None}]}) + "\n\n"
                   for w in ("Hel", "lo", " world"))
    chat += ": ping\n\nevent: message\nid: 3\nretry: 10\ndata: " + json.dumps(
        {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 3}}) + "\r\n\r\ndata: [DONE]\n\n"
    write("sse_stream", "chat.sse", b"\x47" + chat.encode())
    comp = "".join("data: " + json.dumps({"choices": [{"index": 0, "text": w, "token_ids": [i],
                                                       "logprobs": {"tokens": [w], "token_logprobs": [-0.5],
                                                                    "top_logprobs": [{w: -0.5, "x": -2.0}]},
                                                       "finish_reason": "stop" if i == 2 else None}]}) + "\n\n"
                   for i, w in enumerate(("a", "b", "token_id:7")))
    write("sse_stream", "completion.sse", b"\x03\xef\xbb\xbf" + comp.encode() + b"data: [DONE]\n\n")


def response_seeds():
    write("openai_response", "chat.json", b"\x01" + json.dumps({
        "id": "x", "object": "chat.completion", "choices": [{
            "index": 0, "message": {"role": "assistant", "content": "Hi there", "reasoning_content": "hm"},
            "finish_reason": "length", "token_ids": [5, 6],
            "logprobs": {"content": [{"token": "Hi", "logprob": -0.1, "top_logprobs": [{"token": "Hi", "logprob": -0.1}]},
                                     {"token": " there", "logprob": -1.5, "top_logprobs": []}]}}],
        "prompt_token_ids": [1, 2, 3], "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}).encode())
    write("openai_response", "completion.json", b"\x00" + json.dumps({
        "choices": [{"index": 0, "text": "ab", "finish_reason": "stop",
                     "logprobs": {"tokens": ["a", "b"], "token_logprobs": [-1.0, None],
                                  "top_logprobs": [{"a": -1.0}, None]}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 2}}).encode())
    write("openai_response", "error.json", b"\x01" + json.dumps({"error": {"message": "bad", "code": 400}}).encode())


def dump_seeds():
    # First byte: 0 dump.json, 1 .npy, 2 .pt.
    d = json.loads(read("tests/data/msprobe/tiny-llama-L0-statistics/step0/rank0/dump.json"))
    data = dict(list(d["data"].items())[:3])
    d["data"] = data
    write("dump_files", "msprobe_statistics.json", b"\x00" + json.dumps(d).replace('0.0', 'NaN', 1).encode())
    d = json.loads(read("tests/data/msprobe/tiny-llama-L0-tensor/step0/rank0/dump.json"))
    d["data"] = dict(list(d["data"].items())[:2])
    write("dump_files", "msprobe_tensor.json", b"\x00" + json.dumps(d).encode())
    write("dump_files", "i32_3.npy", b"\x01" + read("tests/data/tensor_files/i32_3.npy"))
    for f in ("f16.pt", "f32_view_offset_stride.pt", "bool.pt"):
        write("dump_files", f, b"\x02" + read("tests/data/msprobe/pt-forms/" + f))


def main():
    # Rewritten, except found_*: inputs a fuzz campaign found (kept as regression seeds).
    for t in ("safetensors_header", "suite_yaml", "platform_yaml", "config_json", "sse_stream", "openai_response",
              "dump_files"):
        d = os.path.join(OUT, t)
        for f in os.listdir(d) if os.path.isdir(d) else []:
            if not f.startswith("found_"):
                os.remove(os.path.join(d, f))
    safetensors_seeds()
    yaml_seeds()
    config_seeds()
    tokenizer_seeds()
    sse_seeds()
    response_seeds()
    dump_seeds()


if __name__ == "__main__":
    main()
