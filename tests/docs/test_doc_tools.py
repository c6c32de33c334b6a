#!/usr/bin/env python3
"""Self-test of the docs tools: they can fail, and say where.

Usage: python3 tests/docs/test_doc_tools.py --repo ROOT --build BUILD_DIR

- run_doc_commands.py on fixtures/failing.md exits 1 and names the failing command's page and
  line (failing.md:10), while the command marked `# exit 3` passes and the run goes on after the
  failure;
- on fixtures/passing.md (a `file=` block, continuation lines, `# exit 1`, a pipeline whose
  first command fails) it exits 0, and the working directory is gone afterwards;
- check_links.py on fixtures/broken_links.md exits 1 naming the missing file and the missing
  anchor, and nothing in inline code or a fence.
Exits 0 when all hold, 1 otherwise. Python 3 standard library only.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
failures: list[str] = []


def run(*args: str) -> tuple[int, str]:
    p = subprocess.run([sys.executable, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    return p.returncode, p.stdout


def expect(what: str, ok: bool, output: str) -> None:
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failures.append(what)
        print("\n".join("    | " + line for line in output.rstrip().split("\n")))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", required=True)
    ap.add_argument("--build", required=True)
    args = ap.parse_args()
    runner = os.path.join(HERE, "run_doc_commands.py")
    links = os.path.join(HERE, "check_links.py")
    fixtures = os.path.join(HERE, "fixtures")
    common = ["--repo", args.repo, "--build", args.build]

    code, out = run(runner, os.path.join(fixtures, "failing.md"), *common)
    expect("a failing command fails the page (exit 1)", code == 1, out)
    expect("the failure names the page and line", "failing.md:10: exited 1, expected 0" in out, out)
    expect("a command marked '# exit 3' that exits 3 passes", "ok: exit 3" in out, out)
    expect("the commands after a failure still run", "runs on after a failure" in out, out)
    expect("the summary counts it", "1 of 4 commands failed" in out, out)

    code, out = run(runner, os.path.join(fixtures, "passing.md"), *common, "--keep")
    expect("a page whose commands exit as marked passes (exit 0)", code == 0, out)
    kept = [line.split(": ", 1)[1] for line in out.splitlines()
            if line.startswith("working directory kept: ")]
    if kept:
        expect("the working directory's reports/ is its own", os.path.isdir(os.path.join(kept[0], "reports"))
               and not os.path.islink(os.path.join(kept[0], "reports")), out)
        subprocess.run(["rm", "-rf", kept[0]])
    code, out = run(runner, os.path.join(fixtures, "passing.md"), *common)
    expect("a plain ```sh block is not run", "this plain block" not in out, out)

    code, out = run(runner, os.path.join(fixtures, "no_such_page.md"), *common)
    expect("a missing page is a usage error (exit 2)", code == 2, out)

    code, out = run(links, "--repo", args.repo, os.path.join(fixtures, "broken_links.md"))
    expect("a broken link fails the link check (exit 1)", code == 1, out)
    expect("the missing file is named", "broken_links.md:6: no-such-page.md: no such file" in out, out)
    expect("the missing anchor is named", "#no-such-heading" in out, out)
    expect("exactly those two", "2 broken" in out, out)

    print(f"\n{'all hold' if not failures else f'{len(failures)} failed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
