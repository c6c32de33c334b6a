#!/usr/bin/env python3
"""Generate the prompt-rendering goldens (golden/chat/<model>/<case>.json) of the chat fixtures.

Usage:
  python3 golden/tools/gen_chat.py [--root REPO_ROOT] [--only MODEL ...]

Each file is one OpenAI chat request (messages in the API's format: a tool call's `arguments` is a
JSON string, a tool result names its `tool_call_id`; optional `tools`, `chat_template_kwargs`,
`add_generation_prompt`) and the prompt transformers renders for it from the fixture in
tests/data/chat-models/<model>/ (gen_chat_models.py; its chat_template.jinja is written by hand):

  1. every assistant tool call's `arguments` string is parsed into a dict (transformers'
     documented convention for tool-use templates; vLLM does the same in
     vllm/renderers/chat_utils.py:_postprocess_messages before it renders);
  2. prompt_text = tokenizer.apply_chat_template(messages, tools=tools,
     add_generation_prompt=add_generation_prompt, tokenize=False, **chat_template_kwargs);
  3. prompt_token_ids = tokenizer(prompt_text, add_special_tokens=False).input_ids
     (the template writes bos itself; this is how vLLM tokenizes a chat prompt); for a model with
     a vision tower (VISION), each image's placeholder expanded as its processor does (LLaVA:
     image_seq_length copies of image_token_index; Qwen2.5-VL: <|image_pad|> per merged patch).

An engine serving the fixture must put exactly prompt_token_ids in front of its answer.  Before
writing, the script checks that each token the fixture added (<tool_call>, <|python_tag|>,
<｜tool▁sep｜>, ...) is one id in prompt_token_ids wherever its text is in prompt_text, that the ids
decode back to prompt_text, and each case's own expectation (what must and must not be rendered).
No randomness is involved: a rerun writes byte-identical files.  golden/manifest.json is updated
for every file written.  See golden/chat/README.md.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from pathlib import Path

from transformers import AutoTokenizer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_chat_models import FIXTURES  # noqa: E402
from manifest import update_manifest  # noqa: E402

PRODUCER = "golden/tools/gen_chat.py"


# --------------------------------------------------------------------------
# Messages in the OpenAI chat format
# --------------------------------------------------------------------------


def system(content: str) -> dict:
    return {"role": "system", "content": content}


def user(content: str | list[dict]) -> dict:
    return {"role": "user", "content": content}


def assistant(content: str | None, reasoning: str | None = None, calls: list[dict] | None = None) -> dict:
    m = {"role": "assistant", "content": content}
    if reasoning is not None:
        m["reasoning_content"] = reasoning
    if calls:
        m["tool_calls"] = calls
    return m


def call(call_id: str, name: str, arguments: dict) -> dict:
    """A tool call as the API carries it: arguments as a JSON string."""
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)}}


def tool(call_id: str, content: str) -> dict:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def function(name: str, description: str, properties: dict, required: list[str]) -> dict:
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": properties, "required": required}}}


WEATHER = function("get_weather", "Get the current weather in a city.",
                   {"city": {"type": "string", "description": "The city name."},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, ["city"])
TIME = function("get_time", "Get the local time in a time zone.",
                {"timezone": {"type": "string", "description": "An IANA time zone, e.g. Europe/Paris."}},
                ["timezone"])
TOOLS = [WEATHER, TIME]

SYSTEM = system("You are a helpful assistant.")
CAPITAL = user("What is the capital of France?")
WEATHER_Q = user("What is the weather in Paris and in São Paulo?")
WEATHER_CALLS = [call("call_1", "get_weather", {"city": "Paris"}),
                 call("call_2", "get_weather", {"city": "São Paulo", "unit": "celsius"})]
WEATHER_RESULTS = [tool("call_1", '{"temperature": 18, "unit": "celsius", "sky": "cloudy"}'),
                   tool("call_2", '{"temperature": 24, "unit": "celsius", "sky": "sunny"}')]
WEATHER_ANSWER = assistant("Paris: 18 °C and cloudy. São Paulo: 24 °C and sunny.")
SUM_Q = user("What is 2 + 2?")
SUM_REASONING = "The user asks for a sum. 2 plus 2 is 4."


def request(messages: list[dict], tools: list[dict] | None = None, kwargs: dict | None = None,
            generation_prompt: bool = True) -> dict:
    r = {"messages": messages}
    if tools is not None:
        r["tools"] = tools
    if kwargs is not None:
        r["chat_template_kwargs"] = kwargs
    if not generation_prompt:
        r["add_generation_prompt"] = False
    return r


def case(description: str, req: dict, must: tuple[str, ...] = (), must_not: tuple[str, ...] = ()) -> dict:
    """must / must_not: substrings the rendered prompt has to contain / must not contain."""
    return {"description": description, "request": req, "must": must, "must_not": must_not}


# --------------------------------------------------------------------------
# Cases per fixture
# --------------------------------------------------------------------------


def qwen3_cases() -> dict[str, dict]:
    return {
        "system_user": case("system + user", request([SYSTEM, CAPITAL]),
                            must=("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n",)),
        "multi_turn": case("user, assistant, user", request([
            user("Hello! Who are you?"), assistant("I am a tiny test model."), user("What can you do?")])),
        "tools": case("two tools listed in the system turn, then a user question", request([WEATHER_Q], TOOLS),
                      must=("<tools>\n{\"type\": \"function\"", "<tool_call>\n{\"name\": <function-name>")),
        "tool_history": case(
            "system + tools; two parallel tool calls, their two results in one user turn, the answer, a new question",
            request([SYSTEM, WEATHER_Q, assistant(None, calls=WEATHER_CALLS), *WEATHER_RESULTS, WEATHER_ANSWER,
                     user("And in Berlin?")], TOOLS),
            must=("You are a helpful assistant.\n\n# Tools",
                  '<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}'
                  '\n</tool_call>\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "São Paulo", '
                  '"unit": "celsius"}}\n</tool_call><|im_end|>',
                  "</tool_response>\n<tool_response>\n")),
        "tool_reasoning": case(
            "a tool call with reasoning after the last user query (the reasoning is kept), its result, generation",
            request([user("What is the weather in Paris?"),
                     assistant("", "I should look the weather up.", [call("call_1", "get_weather", {"city": "Paris"})]),
                     WEATHER_RESULTS[0]], TOOLS),
            must=("<|im_start|>assistant\n<think>\nI should look the weather up.\n</think>\n\n<tool_call>",)),
        "thinking_off": case("enable_thinking false: an empty think block after the generation prompt",
                             request([SUM_Q], kwargs={"enable_thinking": False}),
                             must=("<|im_start|>assistant\n<think>\n\n</think>\n\n",)),
        "thinking_on": case("enable_thinking true: the plain generation prompt", request([SUM_Q], kwargs={"enable_thinking": True}),
                            must_not=("<think>",)),
        "reasoning_history": case(
            "earlier assistant turns with reasoning (reasoning_content; <think> in the content) drop it",
            request([SUM_Q, assistant("2 + 2 = 4.", SUM_REASONING), user("And 3 + 3?"),
                     assistant("<think>\nThree plus three is six.\n</think>\n\n3 + 3 = 6."), user("Thanks!")]),
            must=("<|im_start|>assistant\n2 + 2 = 4.<|im_end|>", "<|im_start|>assistant\n3 + 3 = 6.<|im_end|>"),
            must_not=("<think>",)),
        "no_generation_prompt": case("system + user, add_generation_prompt false",
                                     request([SYSTEM, CAPITAL], generation_prompt=False),
                                     must_not=("<|im_start|>assistant",)),
    }


def llama3_cases() -> dict[str, dict]:
    return {
        "system_user": case("system + user", request([SYSTEM, CAPITAL])),
        "multi_turn": case("user, assistant, user; contents trimmed", request([
            user("  Hello! Who are you?\n"), assistant("\nI am a tiny test model. "), user("What can you do?\n\n")]),
            must=("<|end_header_id|>\n\nHello! Who are you?<|eot_id|>",)),
        "tools": case("system + tools (Environment: ipython, tools in the first user message) + user",
                      request([SYSTEM, user("What is the weather in Paris?")], TOOLS),
                      must=("<|start_header_id|>system<|end_header_id|>\n\nEnvironment: ipython\n\n"
                            "You are a helpful assistant.<|eot_id|>", '"parameters": dictionary')),
        "tool_history": case(
            "tools; a tool call, its result under ipython, the answer, a new question",
            request([user("What is the weather in Paris?"),
                     assistant(None, calls=[call("call_1", "get_weather", {"city": "Paris"})]), WEATHER_RESULTS[0],
                     assistant("Paris: 18 °C and cloudy."), user("And in Berlin?")], TOOLS),
            must=('<|start_header_id|>assistant<|end_header_id|>\n\n{"name": "get_weather", "parameters": '
                  '{"city": "Paris"}}<|eot_id|><|start_header_id|>ipython<|end_header_id|>\n\n{"temperature": 18',)),
        "no_generation_prompt": case("system + user, add_generation_prompt false",
                                     request([SYSTEM, CAPITAL], generation_prompt=False),
                                     must_not=("<|start_header_id|>assistant",)),
    }


def deepseek_cases() -> dict[str, dict]:
    return {
        "system_user": case("system + user", request([SYSTEM, CAPITAL]),
                            must=("<｜begin▁of▁sentence｜>You are a helpful assistant.<｜User｜>",)),
        "multi_turn": case("user, assistant, user", request([
            user("Hello! Who are you?"), assistant("I am a tiny test model."), user("What can you do?")]),
            must=("<｜Assistant｜></think>I am a tiny test model.<｜end▁of▁sentence｜><｜User｜>",)),
        "tools": case("system + tools in the system prompt, then a user question",
                      request([SYSTEM, WEATHER_Q], TOOLS), must=("You are a helpful assistant.\n\n## Tools",)),
        "tool_history": case(
            "tools; two parallel tool calls, their two results, the answer, a new question",
            request([WEATHER_Q, assistant(None, calls=WEATHER_CALLS), *WEATHER_RESULTS, WEATHER_ANSWER,
                     user("And in Berlin?")], TOOLS),
            must=('<｜Assistant｜></think><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>'
                  '{"city": "Paris"}<｜tool▁call▁end｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>'
                  '{"city": "São Paulo", "unit": "celsius"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>'
                  '<｜end▁of▁sentence｜><｜tool▁output▁begin｜>',)),
        "thinking_on": case("thinking true: the generation prompt opens <think>",
                            request([SUM_Q], kwargs={"thinking": True}), must=("<｜Assistant｜><think>",)),
        "thinking_off": case("thinking false: the generation prompt closes </think>",
                             request([SUM_Q], kwargs={"thinking": False}), must=("<｜Assistant｜></think>",)),
        "reasoning_history": case(
            "thinking true; an earlier assistant turn keeps its answer only (reasoning_content and <think> dropped)",
            request([SUM_Q, assistant("2 + 2 = 4.", SUM_REASONING), user("And 3 + 3?"),
                     assistant("<think>Three plus three is six.</think>3 + 3 = 6."), user("Thanks!")],
                    kwargs={"thinking": True}),
            must=("<｜Assistant｜></think>3 + 3 = 6.<｜end▁of▁sentence｜>",), must_not=("plus",)),
        "no_generation_prompt": case("system + user, add_generation_prompt false",
                                     request([SYSTEM, CAPITAL], generation_prompt=False),
                                     must_not=("<｜Assistant｜>",)),
    }


def plain_cases() -> dict[str, dict]:
    """The shipped tiny models (configs/models/): templates of plain turns, no tools, no switches."""
    return {
        "system_user": case("system + user", request([SYSTEM, CAPITAL])),
        "multi_turn": case("user, assistant, user", request([
            user("Hello! Who are you?"), assistant("I am a tiny test model."), user("What can you do?")]),
            must=("I am a tiny test model.",)),
        "no_generation_prompt": case("system + user, add_generation_prompt false",
                                     request([SYSTEM, CAPITAL], generation_prompt=False)),
    }


def image_part(stem: str) -> dict:
    """An image as the goldens carry it: a repository path (golden/models/images/), which the
    chat_template check sends as a data: URL."""
    return {"type": "image_url", "image_url": {"url": f"golden/models/images/{stem}"}}


def text_part(text: str) -> dict:
    return {"type": "text", "text": text}


def image_cases(first: str, second: str) -> dict[str, dict]:
    """A model with a vision tower: its plain cases, and images in a conversation."""
    return {
        **plain_cases(),
        "image_system": case("system + a user turn of an image and a question",
                             request([SYSTEM, user([image_part(first), text_part("What is in this image?")])])),
        "image_history": case(
            "an image, the answer, a second image in a later turn after its text",
            request([user([image_part(first), text_part("What is in this image?")]),
                     assistant("A test pattern."),
                     user([text_part("And this one?"), image_part(second)])]),
            must=("A test pattern.",)),
    }


CASES = {"tiny-qwen3-chat": qwen3_cases, "tiny-llama3-chat": llama3_cases, "tiny-deepseek-v3-chat": deepseek_cases}
# The shipped models (configs/models/<name>): the Day-0 checklist's conversation stage renders them.
PLAIN = ("tiny-llama", "tiny-llava", "tiny-llava-hd32", "tiny-qwen3-moe", "tiny-deepseek-v3",
         "tiny-deepseek-v3-fp8")
CASES.update({name: plain_cases for name in PLAIN})
# Models with a vision tower: the image is expanded as the engine's processor does (LLaVA:
# image_seq_length copies of image_token_index for each <image>; Qwen2.5-VL: <|image_pad|> once per
# merged patch of the image's grid, Qwen2-VL's PIL image processor).
VISION = {"tiny-llava": ("checker.png", "gradient.png"), "tiny-llava-hd32": ("checker.png", "gradient.png"),
          "tiny-qwen2-5-vl-hd32": ("qvl_wide.png", "qvl_tall.jpg")}
for _name, (_first, _second) in VISION.items():
    CASES[_name] = (lambda a, b: lambda: image_cases(a, b))(_first, _second)
# Fixtures outside configs/models and tests/data/chat-models.
MODEL_DIRS = {"tiny-qwen2-5-vl-hd32": "tests/data/models/tiny-qwen2-5-vl-hd32"}


# --------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------


def template_messages(messages: list[dict]) -> list[dict]:
    """The request's messages with each tool call's arguments string parsed into a dict."""
    out = copy.deepcopy(messages)
    for m in out:
        for c in m.get("tool_calls") or []:
            if isinstance(c["function"]["arguments"], str):
                c["function"]["arguments"] = json.loads(c["function"]["arguments"])
    return out


def image_paths(messages: list[dict]) -> list[str]:
    return [p["image_url"]["url"] for m in messages if not isinstance(m["content"], str)
            for p in m["content"] if p["type"] == "image_url"]


def expand_images(root: Path, model_dir: Path, tok, text: str, paths: list[str]) -> list[int]:
    """The prompt ids of a rendering with images, each image's placeholder expanded to its tokens."""
    config = json.loads((model_dir / "config.json").read_text())
    if config["model_type"] == "qwen2_5_vl":
        from PIL import Image
        from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

        processor = Qwen2VLImageProcessorPil.from_pretrained(model_dir)
        grids = processor(images=[Image.open(root / p) for p in paths], return_tensors="pt")["image_grid_thw"]
        pieces = text.split("<|image_pad|>")
        if len(pieces) - 1 != len(paths):
            raise SystemExit(f"{len(pieces) - 1} <|image_pad|> rendered for {len(paths)} images")
        merge = processor.merge_size ** 2
        expanded = pieces[0] + "".join("<|image_pad|>" * int(grids[i].prod() // merge) + rest
                                       for i, rest in enumerate(pieces[1:]))
        return tok(expanded, add_special_tokens=False).input_ids
    # LLaVA: the text is never tokenized at an <image>; each becomes image_seq_length ids.
    pieces = text.split("<image>")
    if len(pieces) - 1 != len(paths):
        raise SystemExit(f"{len(pieces) - 1} <image> rendered for {len(paths)} images")
    ids: list[int] = []
    for i, piece in enumerate(pieces):
        if i:
            ids += [config["image_token_index"]] * config["image_seq_length"]
        ids += tok(piece, add_special_tokens=False).input_ids if piece else []
    return ids


def render(root: Path, model_dir: Path, tok, req: dict) -> tuple[str, list[int]]:
    text = tok.apply_chat_template(template_messages(req["messages"]), tools=req.get("tools"),
                                   add_generation_prompt=req.get("add_generation_prompt", True),
                                   tokenize=False, **req.get("chat_template_kwargs", {}))
    paths = image_paths(req["messages"])
    if paths:
        return text, expand_images(root, model_dir, tok, text, paths)
    return text, tok(text, add_special_tokens=False).input_ids


def check(name: str, case_name: str, c: dict, tok, text: str, ids: list[int]) -> None:
    where = f"{name}/{case_name}"
    for s in c["must"]:
        if s not in text:
            raise SystemExit(f"{where}: the prompt lacks {s!r}:\n{text}")
    for s in c["must_not"]:
        if s in text:
            raise SystemExit(f"{where}: the prompt has {s!r}:\n{text}")
    if not image_paths(c["request"]["messages"]) and tok.decode(ids, skip_special_tokens=False) != text:
        raise SystemExit(f"{where}: the ids do not decode back to the prompt")
    for content, _ in FIXTURES[name]["added"] if name in FIXTURES else []:
        token_id = tok.convert_tokens_to_ids(content)
        if text.count(content) != ids.count(token_id):
            raise SystemExit(f"{where}: {content} occurs {text.count(content)} times in the text, "
                             f"id {token_id} {ids.count(token_id)} times")


def dumps(g: dict) -> str:
    """Sorted keys; the request's lists one item a line, the ids on one line."""
    lines = []
    for k in sorted(g):
        if k == "request":
            inner = []
            for rk in sorted(g[k]):
                v = g[k][rk]
                if isinstance(v, list):
                    items = ",\n   ".join(json.dumps(x, ensure_ascii=False) for x in v)
                    inner.append(f"  {json.dumps(rk)}: [\n   {items}\n  ]")
                else:
                    inner.append(f"  {json.dumps(rk)}: {json.dumps(v, ensure_ascii=False)}")
            value = "{\n" + ",\n".join(inner) + "\n }"
        else:
            value = json.dumps(g[k], ensure_ascii=False)
        lines.append(f" {json.dumps(k)}: {value}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[2])
    ap.add_argument("--only", nargs="+", choices=sorted(CASES), help="only these fixtures")
    args = ap.parse_args()
    root = args.root.resolve()
    written = []
    for name, cases in CASES.items():
        if args.only and name not in args.only:
            continue
        model_dir = MODEL_DIRS.get(name) or (f"configs/models/{name}" if name in PLAIN
                                             else f"tests/data/chat-models/{name}")
        tok = AutoTokenizer.from_pretrained(root / model_dir)
        for case_name, c in cases().items():
            text, ids = render(root, root / model_dir, tok, c["request"])
            check(name, case_name, c, tok, text, ids)
            g = {"case": case_name, "description": c["description"], "model": name, "model_dir": model_dir,
                 "producer": PRODUCER, "request": c["request"], "prompt_text": text, "prompt_token_ids": ids}
            path = root / "golden" / "chat" / name / f"{case_name}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(dumps(g), encoding="utf-8", newline="\n")
            written.append(path)
            print(f"{name}/{case_name}: {len(ids)} tokens")
    update_manifest(root / "golden", written, PRODUCER)
    return 0


if __name__ == "__main__":
    sys.exit(main())
