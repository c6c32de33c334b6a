#!/usr/bin/env python3
"""Probe a running OpenAI-compatible server against the e2e goldens (run by hand, never by CI).

Usage:
  python3 tests/peers/probe_openai_server.py --url http://127.0.0.1:PORT --model NAME --golden golden/e2e/<name>
      [--samples DIR] [--json OUT]

Standard library only.  For each golden/e2e/<name>/<case>.json it sends the golden's request the
way the harness's `dialect: openai` would (chat: messages; completions: a text prompt, or the
token-id list as `prompt`), with "temperature": 0, "seed": 0, max_tokens from the golden, non-streamed
and streamed, and compares the answer's text with the golden's `text` (and usage.completion_tokens
with len(token_ids)).  Exit status 1 when an answered (HTTP 200) request's text differs; refused
requests (4xx) are listed, not counted.  Then it sends one request per extra field (vLLM's and OpenAI's logprob /
token-id options) and reports the HTTP status and whether the field had an effect, and the model
names the server accepts.  Prints one line per probe and, with --json, writes all results.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.request
from pathlib import Path


def post(url: str, body: dict, timeout: float = 120.0) -> tuple[int, str]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")


def get(url: str, timeout: float = 10.0) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")


def sse_events(text: str) -> list:
    out = []
    for line in text.splitlines():
        if line.startswith("data: "):
            data = line[6:]
            out.append(data if data == "[DONE]" else json.loads(data))
    return out


def request_for(g: dict, model: str) -> tuple[str, dict]:
    r = g["request"]
    body = {"model": model, "max_tokens": r["max_tokens"], "temperature": 0, "seed": 0}
    if g["endpoint"] == "chat":
        body["messages"] = r["messages"]
        return "/v1/chat/completions", body
    body["prompt"] = r["prompt_ids"] if "prompt_ids" in r else r["prompt"]
    return "/v1/completions", body


def answer_text(endpoint: str, status: int, raw: str, stream: bool) -> tuple[str | None, int | None, str | None]:
    """(text, completion_tokens, finish_reason) of a 200 answer, else (None, None, None)."""
    if status != 200:
        return None, None, None
    if not stream:
        j = json.loads(raw)
        c = j["choices"][0]
        text = c["message"]["content"] if endpoint.endswith("chat/completions") else c["text"]
        return text, j.get("usage", {}).get("completion_tokens"), c.get("finish_reason")
    text, usage, finish = "", None, None
    for ev in sse_events(raw):
        if ev == "[DONE]" or "choices" not in ev:
            continue
        for c in ev["choices"]:
            piece = c.get("delta", {}).get("content") if "delta" in c else c.get("text")
            text += piece or ""
            finish = c.get("finish_reason") or finish
        if ev.get("usage"):
            usage = ev["usage"].get("completion_tokens")
    return text, usage, finish


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--model", required=True, help="the model name to send")
    ap.add_argument("--golden", required=True, help="golden/e2e/<name>")
    ap.add_argument("--samples", help="write one raw chat response and one SSE stream here")
    ap.add_argument("--json", help="write all results here")
    args = ap.parse_args()
    base = args.url.rstrip("/")
    results = {"health": get(base + "/health"), "models": get(base + "/v1/models"), "cases": [], "fields": [],
               "model_names": []}
    print(f"GET /health -> {results['health'][0]} {results['health'][1]}")
    print(f"GET /v1/models -> {results['models'][0]} {results['models'][1]}")

    goldens = [json.loads(p.read_text()) for p in sorted(Path(args.golden).glob("*.json"))]
    chat_g = next((g for g in goldens if g["endpoint"] == "chat"), None)
    ok_all = True
    for g in goldens:
        path, body = request_for(g, args.model)
        for stream in (False, True):
            b = dict(body, stream=True) if stream else body
            status, raw = post(base + path, b)
            text, n, finish = answer_text(path, status, raw, stream)
            match = text == g["text"]
            ok_all &= match or status != 200  # a refused request is reported, not counted as a mismatch
            entry = {"case": g["case"], "stream": stream, "request": b, "status": status, "text": text,
                     "golden_text": g["text"], "match": match, "completion_tokens": n,
                     "golden_tokens": len(g["token_ids"]), "finish_reason": finish,
                     "error": None if status == 200 else raw[:300]}
            results["cases"].append(entry)
            print(f"{g['case']:<16} stream={stream!s:<5} -> {status} "
                  + (f"text {'==' if match else '!='} golden, completion_tokens {n} (golden {len(g['token_ids'])}), "
                     f"finish {finish}" if status == 200 else raw[:200]))
            if args.samples and chat_g is g:
                d = Path(args.samples)
                d.mkdir(parents=True, exist_ok=True)
                stem = "chat_stream" if stream else "chat"
                (d / f"{stem}.request.json").write_text(
                    json.dumps({"POST": path, "body": b}, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
                (d / (f"{stem}.response.sse.txt" if stream else f"{stem}.response.json")).write_text(
                    raw, encoding="utf-8")

    # One extra field at a time, on the first chat golden and a text completion.
    extras = {
        "logprobs": True, "top_logprobs": 5, "return_token_ids": True, "return_tokens_as_token_ids": True,
        "ignore_eos": True, "top_k": 1, "min_tokens": 1, "skip_special_tokens": True,
        "stream_options": {"include_usage": True}, "n": 1, "stop": ["\n\n"], "max_completion_tokens": 4,
        "echo": True, "repetition_penalty": 1.0, "seed": 0, "user": "x", "presence_penalty": 0.0,
    }
    completion_g = next((g for g in goldens if g["endpoint"] == "completions" and "prompt" in g["request"]), None)
    for g in (chat_g, completion_g):
        if g is None:
            continue
        path, body = request_for(g, args.model)
        for k, v in extras.items():
            if k == "logprobs" and path == "/v1/completions":
                v = 5
            status, raw = post(base + path, dict(body, **{k: v}))
            effect = None
            if status == 200:
                c = json.loads(raw)["choices"][0]
                effect = {kk: c[kk] for kk in ("logprobs", "token_ids", "prompt_token_ids") if kk in c}
                if "token_ids" in json.loads(raw):
                    effect["top_level_token_ids"] = True
            results["fields"].append({"endpoint": path, "field": k, "value": v, "status": status,
                                      "detail": raw[:300] if status != 200 else None, "in_choice": effect})
            print(f"{path:<22} +{k}={json.dumps(v)} -> {status} "
                  + (raw[:160] if status != 200 else f"choice keys {sorted(json.loads(raw)['choices'][0])}"))

    # Which model names are accepted.
    if chat_g is not None:
        path, body = request_for(chat_g, args.model)
        body = dict(body, max_tokens=1)
        for name in (None, args.model, str(Path(args.model).resolve()), Path(args.model).name, "other"):
            b = {k: v for k, v in body.items() if k != "model"} if name is None else dict(body, model=name)
            status, raw = post(base + path, b)
            resp_model = json.loads(raw).get("model") if status == 200 else None
            results["model_names"].append({"sent": name, "status": status, "response_model": resp_model,
                                           "detail": raw[:200] if status != 200 else None})
            print(f"model={json.dumps(name)} -> {status} " + (f"response model {resp_model!r}" if status == 200 else raw[:160]))

    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    refused = sum(1 for c in results["cases"] if c["status"] != 200)
    print(("every answered golden request matched" if ok_all else "some golden texts did not match")
          + (f" ({refused} requests refused)" if refused else ""))
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
