"""Maintenance of golden/manifest.json, shared by all golden generators.

The manifest records, for every generated golden file, its SHA-256, its size,
the script that produced it and the versions of the Python packages that were
used.  Each generator calls :func:`update_manifest` for the files it wrote;
entries belonging to other generators are kept untouched.

Format (keys sorted, indent 2, trailing newline)::

    {
      "files": {
        "foundation/conversions.safetensors": {
          "bytes": 123,
          "producer": "golden/tools/gen_foundation.py",
          "sha256": "<hex>",
          "versions": {"numpy": "2.4.6", "python": "3.11.7", ...}
        }
      },
      "version": 1
    }

Paths are relative to golden/ and always use forward slashes.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import platform
from pathlib import Path
from typing import Iterable

MANIFEST_NAME = "manifest.json"
MANIFEST_VERSION = 1

# Packages whose version is recorded when importable (and only then).
_TRACKED_PACKAGES = ("torch", "numpy", "safetensors", "transformers", "tokenizers", "scipy",
                     "statsmodels")


def _public_version(version: str) -> str:
    """Drop a PEP 440 local label: '2.15.0+cu132' and '2.15.0+cpu' -> '2.15.0'.

    The local label only says which wheel flavour (CPU/CUDA) was installed;
    it does not affect the CPU results the goldens are made of, and recording
    it would make the manifest churn between otherwise identical runs.
    """
    return version.split("+", 1)[0]


def tool_versions() -> dict[str, str]:
    """python + the versions of whichever tracked packages are importable."""
    versions = {"python": platform.python_version()}
    for name in _TRACKED_PACKAGES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        version = getattr(module, "__version__", None)
        if version is not None:
            versions[name] = _public_version(str(version))
    return versions


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _rel_key(golden_root: Path, path: str | os.PathLike) -> str:
    """Manifest key for a path given relative to golden/ (or absolute inside it)."""
    p = Path(path)
    if p.is_absolute():
        p = p.resolve().relative_to(golden_root.resolve())
    key = p.as_posix()
    if key.startswith("../") or key.startswith("/"):
        raise ValueError(f"{path} is not inside {golden_root}")
    return key


def update_manifest(golden_root: str | os.PathLike,
                    rel_paths: Iterable[str | os.PathLike],
                    producer: str) -> Path:
    """(Re)write the manifest entries for ``rel_paths``, keeping all others.

    golden_root: the golden/ directory.
    rel_paths:   files relative to golden_root (absolute paths inside it are
                 accepted too).
    producer:    the generating script as a repository-relative path, e.g.
                 "golden/tools/gen_foundation.py".
    Returns the manifest path.
    """
    root = Path(golden_root)
    manifest_path = root / MANIFEST_NAME
    if manifest_path.exists():
        with open(manifest_path, "r", encoding="utf-8") as handle:
            manifest = json.load(handle)
        if manifest.get("version") != MANIFEST_VERSION:
            raise ValueError(f"{manifest_path}: unsupported manifest version "
                             f"{manifest.get('version')!r}")
    else:
        manifest = {"version": MANIFEST_VERSION, "files": {}}

    versions = tool_versions()
    files = manifest.setdefault("files", {})
    for rel in rel_paths:
        key = _rel_key(root, rel)
        file_path = root / key
        files[key] = {
            "sha256": sha256_of(file_path),
            "bytes": file_path.stat().st_size,
            "producer": producer,
            "versions": dict(versions),
        }

    text = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
    tmp_path = manifest_path.with_suffix(".json.tmp")
    with open(tmp_path, "w", encoding="utf-8", newline="\n") as handle:
        handle.write(text)
    os.replace(tmp_path, manifest_path)
    return manifest_path


def write_rows_json(golden_root: str | os.PathLike, rel_path: str, tables: dict[str, list],
                    producer: str) -> Path:
    """Write {name: [row, ...]} as JSON with one row a line (small and diffable; names sorted,
    each row's keys sorted) at golden_root/rel_path, and record it in the manifest."""
    path = Path(golden_root) / rel_path
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for key in sorted(tables):
        rows = ",\n".join("  " + json.dumps(r, sort_keys=True) for r in tables[key])
        lines.append(f" {json.dumps(key)}: [\n{rows}\n ]")
    path.write_text("{\n" + ",\n".join(lines) + "\n}\n")
    update_manifest(golden_root, [rel_path], producer)
    return path
