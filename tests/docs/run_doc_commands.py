#!/usr/bin/env python3
"""Runs the runnable commands of one documentation page, so the docs cannot rot.

Usage:
  python3 tests/docs/run_doc_commands.py PAGE.md --repo ROOT --build BUILD_DIR
      [--timeout SECONDS] [--keep] [--list]

The convention (docs/README.md, "Runnable commands"):

  ```sh runnable          a fenced block whose info string is `sh runnable` (or `bash runnable`)
  build/bin/harness ...   is run by this script, line by line; a plain ```sh block is only shown.
  ```

  ```yaml file=NAME       a fenced block whose info string holds `file=NAME` (any language) is
  ...                     written to NAME in the page's working directory before the page's
  ```                     runnable blocks run: the YAML a page shows is the YAML that runs.

  Each command must exit 0, unless its line ends in `# exit N` (the status it must exit with,
  e.g. `harness diff` exits 1 on a regression). A line ending in `\\` continues on the next.
  Blank lines and lines that start with `#` are skipped. Every command runs in a shell of its
  own (`bash -e -o pipefail -c`), in the page's working directory: a `cd` or an `export` does
  not carry over to the next line (write `VAR=value command` instead); files do.

The working directory is a fresh temporary directory whose entries are symlinks to the top-level
entries of the repository (configs, suites, golden, tests, src, harness, docs, ...), except
`build`, a symlink to BUILD_DIR (so `build/bin/harness` is the binary under test), and `reports`,
a new empty directory (so results stores, dashboards and anything a command writes land in the
temporary directory, never in the repository). It is removed at the end (kept with --keep).

Prints each command with its status and time; on a failure the command's output and the page's
file and line number. Exits 0 when every command exited as expected, 1 when one did not (or the
page has no runnable block: a page registered as a docs test must keep some), 2 on a usage error.
Python 3 standard library only.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
EXPECT = re.compile(r"#\s*exit\s+(?P<code>\d+)\s*$")
RUNNABLE_LANGUAGES = {"sh", "bash", "shell"}
MAX_OUTPUT_LINES = 200


@dataclass
class Block:
    info: list[str]
    line: int  # 1-based line number of the first content line
    lines: list[str] = field(default_factory=list)

    @property
    def runnable(self) -> bool:
        return bool(self.info) and self.info[0] in RUNNABLE_LANGUAGES and "runnable" in self.info[1:]

    @property
    def file(self) -> str | None:
        for word in self.info:
            if word.startswith("file="):
                return word[len("file="):]
        return None


@dataclass
class Command:
    text: str
    line: int
    expected: int


def read_blocks(text: str) -> list[Block]:
    """Every fenced code block of a markdown text, with its info string split into words."""
    blocks: list[Block] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m or (m.group("fence")[0] == "`" and "`" in m.group("info")):
            i += 1
            continue
        indent, fence = len(m.group("indent").expandtabs()), m.group("fence")
        block = Block(info=m.group("info").split(), line=i + 2)
        i += 1
        while i < len(lines):
            close = FENCE.match(lines[i])
            if (close and close.group("fence")[0] == fence[0] and len(close.group("fence")) >= len(fence)
                    and not close.group("info").strip()):
                break
            line = lines[i]
            # Content lines of an indented fence (in a list item) lose that indentation.
            strip = min(indent, len(line) - len(line.lstrip(" ")))
            block.lines.append(line[strip:])
            i += 1
        blocks.append(block)
        i += 1
    return blocks


def commands_of(block: Block) -> list[Command]:
    """The commands of a runnable block: continuation lines joined, comments and blanks skipped."""
    out: list[Command] = []
    pending: list[str] = []
    start = 0
    for offset, line in enumerate(block.lines):
        number = block.line + offset
        if not pending:
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            start = number
        if line.rstrip().endswith("\\"):
            pending.append(line.rstrip())  # bash joins the lines at the backslash-newline
            continue
        pending.append(line)
        text = "\n".join(pending).strip()
        m = EXPECT.search(pending[-1])
        out.append(Command(text=text, line=start, expected=int(m.group("code")) if m else 0))
        pending = []
    if pending:
        text = "\n".join(pending).strip()
        out.append(Command(text=text, line=start, expected=0))
    return out


def make_workdir(repo: str, build: str) -> str:
    work = tempfile.mkdtemp(prefix="h0-docs-")
    for entry in sorted(os.listdir(repo)):
        if entry in ("build", "reports", ".git"):
            continue
        os.symlink(os.path.join(repo, entry), os.path.join(work, entry))
    os.symlink(build, os.path.join(work, "build"))
    os.mkdir(os.path.join(work, "reports"))
    return work


def write_files(blocks: list[Block], work: str, page: str) -> list[str]:
    """Writes every `file=NAME` block into `work`; returns the errors (an unsafe or repeated name)."""
    errors: list[str] = []
    seen: dict[str, int] = {}
    for b in blocks:
        name = b.file
        if name is None:
            continue
        norm = os.path.normpath(name)
        if os.path.isabs(norm) or norm.startswith(".."):
            errors.append(f"{page}:{b.line - 1}: file={name}: a relative path inside the working directory, please")
            continue
        if norm in seen:
            errors.append(f"{page}:{b.line - 1}: file={name} is written twice (first at line {seen[norm]})")
            continue
        seen[norm] = b.line - 1
        path = os.path.join(work, norm)
        probe = os.path.dirname(path)
        while not os.path.exists(probe):
            probe = os.path.dirname(probe)
        inside = os.path.realpath(probe) + os.sep
        if not inside.startswith(os.path.realpath(work) + os.sep) or os.path.lexists(path):
            errors.append(f"{page}:{b.line - 1}: file={name} would replace {norm} of the repository")
            continue
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(b.lines) + "\n")
    return errors


def tail(text: str) -> str:
    lines = text.rstrip("\n").split("\n")
    if len(lines) > MAX_OUTPUT_LINES:
        lines = [f"... ({len(lines) - MAX_OUTPUT_LINES} lines before these)"] + lines[-MAX_OUTPUT_LINES:]
    return "\n".join("    | " + line for line in lines)


def run_command(cmd: Command, work: str, timeout: float) -> tuple[int | None, str, float]:
    started = time.monotonic()
    env = dict(os.environ)
    env.setdefault("NO_COLOR", "1")
    try:
        p = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", cmd.text], cwd=work, env=env,
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=timeout)
        return p.returncode, p.stdout.decode("utf-8", "replace"), time.monotonic() - started
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode("utf-8", "replace")
        return None, out, time.monotonic() - started


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("page", help="the markdown page")
    ap.add_argument("--repo", required=True, help="the repository root")
    ap.add_argument("--build", required=True, help="the build directory (holding bin/harness)")
    ap.add_argument("--timeout", type=float, default=120, help="seconds per command (default 120)")
    ap.add_argument("--keep", action="store_true", help="keep the working directory")
    ap.add_argument("--list", action="store_true", help="print the commands, run nothing")
    args = ap.parse_args()

    repo, build = os.path.abspath(args.repo), os.path.abspath(args.build)
    page = os.path.abspath(args.page if os.path.isabs(args.page) or os.path.exists(args.page)
                           else os.path.join(repo, args.page))
    shown = os.path.relpath(page, repo) if page.startswith(repo + os.sep) else args.page
    if not os.path.isfile(page):
        print(f"run_doc_commands: {args.page}: no such page", file=sys.stderr)
        return 2
    if not os.path.isdir(repo):
        print(f"run_doc_commands: --repo {args.repo}: not a directory", file=sys.stderr)
        return 2
    with open(page, encoding="utf-8") as f:
        blocks = read_blocks(f.read())
    commands = [c for b in blocks if b.runnable for c in commands_of(b)]
    files = [b.file for b in blocks if b.file]
    if args.list:
        for name in files:
            print(f"file {name}")
        for c in commands:
            print(f"{shown}:{c.line}: {c.text}" + (f"   (expects exit {c.expected})" if c.expected else ""))
        return 0
    if not commands:
        print(f"{shown}: no runnable block (```sh runnable): nothing proves this page's commands")
        return 1

    work = make_workdir(repo, build)
    failures: list[str] = []
    started = time.monotonic()
    try:
        errors = write_files(blocks, work, shown)
        for e in errors:
            print(f"FAIL {e}")
        failures += errors
        if not errors:
            for name in files:
                print(f"wrote {name}")
            for c in commands:
                print(f"$ {c.text}", flush=True)
                code, output, seconds = run_command(c, work, args.timeout)
                if code is None:
                    why = f"timed out after {args.timeout:g} s"
                elif code != c.expected:
                    why = f"exited {code}, expected {c.expected}"
                else:
                    print(f"  ok: exit {code} in {seconds:.1f} s", flush=True)
                    continue
                where = f"{shown}:{c.line}"
                print(f"  FAIL {where}: {why} ({seconds:.1f} s); its output:")
                print(tail(output) if output.strip() else "    | (no output)", flush=True)
                failures.append(f"{where}: {c.text.splitlines()[0]}: {why}")
    finally:
        if args.keep:
            print(f"working directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)

    total = time.monotonic() - started
    if failures:
        print(f"\n{shown}: {len(failures)} of {len(commands)} commands failed, in {total:.1f} s:")
        for f in failures:
            print(f"  {f}")
        return 1
    print(f"\n{shown}: {len(commands)} commands ran as documented, in {total:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
