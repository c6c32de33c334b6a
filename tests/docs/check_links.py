#!/usr/bin/env python3
"""Checks that every relative link of the documentation points at something that exists.

Usage:
  python3 tests/docs/check_links.py --repo ROOT [FILE.md ...]

Without files: README.md and docs/*.md of ROOT. A link is `[text](target)`, `![alt](target)` or a
reference definition `[name]: target`, outside fenced code blocks and inline code. Links with a
scheme (https:, mailto:) are not followed. A relative target must name an existing file or
directory, relative to the page; a `#anchor` on a markdown page (the page itself for a bare
`#anchor`) must name one of its headings as GitHub spells them (lower case, punctuation dropped,
spaces as hyphens, a repeated heading's anchor suffixed -1, -2, ...).

Prints each broken link as FILE:LINE: target: why. Exits 0 when none is broken, 1 otherwise,
2 on a usage error. Python 3 standard library only.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import sys
import urllib.parse

FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def slug(heading: str) -> str:
    """A heading's anchor as GitHub writes it."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    # Inline code keeps its text as written; elsewhere HTML tags and emphasis marks go.
    parts = re.split(r"(`+[^`]*`+)", text)
    text = "".join(p.strip("`") if p.startswith("`") else re.sub(r"<[^>]+>", "", p).replace("*", "")
                   for p in parts)
    kept = "".join(ch for ch in text.lower() if ch.isalnum() or ch in "-_ ")
    return kept.replace(" ", "-")


def lines_outside_code(text: str):
    """(line number, line) for every line outside fenced code, inline code blanked out."""
    fence = None
    for number, line in enumerate(text.split("\n"), start=1):
        m = FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)
            continue
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and \
                    not line.strip().lstrip(fence[0]).strip():
                fence = None
            continue
        yield number, INLINE_CODE.sub(lambda c: " " * len(c.group(0)), line)


_anchors: dict[str, set[str]] = {}


def anchors_of(path: str) -> set[str]:
    if path not in _anchors:
        seen: dict[str, int] = {}
        out: set[str] = set()
        with open(path, encoding="utf-8") as f:
            text = f.read()
        fence = None
        for line in text.split("\n"):
            m = FENCE.match(line)
            if fence is None and m:
                fence = m.group(1)
                continue
            if fence is not None:
                if m and m.group(1)[0] == fence[0] and not line.strip().lstrip(fence[0]).strip():
                    fence = None
                continue
            h = HEADING.match(line)
            if not h:
                continue
            base = slug(h.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
        for explicit in re.findall(r"<a\s+(?:name|id)=\"([^\"]+)\"", text):
            out.add(explicit)
        _anchors[path] = out
    return _anchors[path]


def check(page: str, repo: str) -> list[str]:
    problems: list[str] = []
    with open(page, encoding="utf-8") as f:
        text = f.read()
    shown = os.path.relpath(page, repo)
    for number, line in lines_outside_code(text):
        targets = [m.group(1) for m in LINK.finditer(line)]
        r = REFERENCE.match(line)
        if r:
            targets.append(r.group(1))
        for target in targets:
            if SCHEME.match(target):
                continue
            path_part, _, anchor = target.partition("#")
            path_part = urllib.parse.unquote(path_part)
            if path_part:
                resolved = os.path.normpath(os.path.join(os.path.dirname(page), path_part))
                if not os.path.exists(resolved):
                    problems.append(f"{shown}:{number}: {target}: no such file or directory")
                    continue
                if not os.path.realpath(resolved).startswith(os.path.realpath(repo) + os.sep):
                    problems.append(f"{shown}:{number}: {target}: outside the repository")
                    continue
            else:
                resolved = page
            if anchor and resolved.endswith(".md") and os.path.isfile(resolved):
                if urllib.parse.unquote(anchor).lower() not in anchors_of(resolved):
                    problems.append(f"{shown}:{number}: {target}: no heading with the anchor "
                                    f"#{anchor} in {os.path.relpath(resolved, repo)}")
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", required=True, help="the repository root")
    ap.add_argument("files", nargs="*", help="pages to check (default: README.md, docs/*.md)")
    args = ap.parse_args()
    repo = os.path.abspath(args.repo)
    if not os.path.isdir(repo):
        print(f"check_links: --repo {args.repo}: not a directory", file=sys.stderr)
        return 2
    pages = [os.path.abspath(p) for p in args.files] or (
        [os.path.join(repo, "README.md")] + sorted(glob.glob(os.path.join(repo, "docs", "*.md"))))
    problems: list[str] = []
    links = 0
    for page in pages:
        if not os.path.isfile(page):
            print(f"check_links: {page}: no such page", file=sys.stderr)
            return 2
        problems += check(page, repo)
        with open(page, encoding="utf-8") as f:
            links += sum(len(LINK.findall(line)) for _, line in lines_outside_code(f.read()))
    for p in problems:
        print(p)
    print(f"{len(pages)} pages, {links} links: " +
          (f"{len(problems)} broken" if problems else "every relative link resolves"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
