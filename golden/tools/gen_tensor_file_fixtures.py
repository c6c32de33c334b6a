#!/usr/bin/env python3
"""Write tests/data/tensor_files/: tensors saved by torch.save and numpy.save (the formats msprobe
dumps use), and malformed files that the harness's reader must refuse with a clear error.

Usage:  python3 golden/tools/gen_tensor_file_fixtures.py [--out tests/data/tensor_files]

Valid (values are arange(n) in the dtype, so a reader's result is checked without a golden):
  f32_2x3.pt          torch.arange(6, f32).reshape(2, 3)
  bf16_3x2_t.pt       torch.arange(6, bf16).reshape(2, 3).t()   (strides (1, 3): a strided view)
  i64_5.pt            torch.arange(5, i64)
  f32_offset.pt       torch.arange(8, f32)[3:7]                 (storage offset 3; 8-element storage)
  f32_2x3.npy, f16_4.npy, i32_3.npy
Malformed (each must be an InputError naming the file, never a crash):
  evil_global.pt      data.pkl calls GLOBAL 'os system' (the reader must refuse, never execute)
  compressed.pt       f32_2x3.pt re-zipped with DEFLATE
  no_pickle.pt        a zip without data.pkl
  truncated_pickle.pt data.pkl cut before its STOP
  short_storage.pt    data/0 holds 4 bytes fewer than the pickle's storage says
  big_endian.pt       byteorder "big"
  not_a_zip.pt        text
  bad_magic.npy, fortran.npy, big_endian.npy, short_data.npy, huge_shape.npy
"""
from __future__ import annotations

import argparse
import io
import zipfile
from pathlib import Path

import numpy as np
import torch


def saved(t: torch.Tensor) -> bytes:
    buf = io.BytesIO()
    torch.save(t, buf)
    return buf.getvalue()


def rezip(data: bytes, edit) -> bytes:
    """The archive of `data` with edit(name, bytes) -> bytes | None (None drops the entry)."""
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            b = edit(info.filename, src.read(info.filename))
            if b is not None:
                dst.writestr(info.filename, b)
    return out.getvalue()


def npy_bytes(header: str, data: bytes) -> bytes:
    h = header.encode("latin1")
    pad = 64 - (10 + len(h) + 1) % 64
    h = h + b" " * (pad % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(h).to_bytes(2, "little") + h + data


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[2] / "tests/data/tensor_files"))
    out = Path(ap.parse_args().out)
    out.mkdir(parents=True, exist_ok=True)
    files = {
        "f32_2x3.pt": saved(torch.arange(6, dtype=torch.float32).reshape(2, 3)),
        "bf16_3x2_t.pt": saved(torch.arange(6, dtype=torch.bfloat16).reshape(2, 3).t()),
        "i64_5.pt": saved(torch.arange(5, dtype=torch.int64)),
        "f32_offset.pt": saved(torch.arange(8, dtype=torch.float32)[3:7]),
    }
    base = files["f32_2x3.pt"]
    evil = (b"\x80\x02cos\nsystem\nq\x00X\x04\x00\x00\x00trueq\x01\x85q\x02Rq\x03.")
    files["evil_global.pt"] = rezip(base, lambda n, b: evil if n.endswith("data.pkl") else b)
    src = zipfile.ZipFile(io.BytesIO(base))
    comp = io.BytesIO()
    with zipfile.ZipFile(comp, "w", compression=zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info.filename))
    files["compressed.pt"] = comp.getvalue()
    files["no_pickle.pt"] = rezip(base, lambda n, b: None if n.endswith("data.pkl") else b)
    files["truncated_pickle.pt"] = rezip(base, lambda n, b: b[:-20] if n.endswith("data.pkl") else b)
    files["short_storage.pt"] = rezip(base, lambda n, b: b[:-4] if n.endswith("data/0") else b)
    files["big_endian.pt"] = rezip(base, lambda n, b: b"big" if n.endswith("byteorder") else b)
    files["not_a_zip.pt"] = b"this is not a zip archive\n"
    for name, a in {"f32_2x3.npy": np.arange(6, dtype=np.float32).reshape(2, 3),
                    "f16_4.npy": np.arange(4, dtype=np.float16),
                    "i32_3.npy": np.arange(3, dtype=np.int32)}.items():
        buf = io.BytesIO()
        np.save(buf, a)
        files[name] = buf.getvalue()
    six = np.arange(6, dtype=np.float32).tobytes()
    files["bad_magic.npy"] = b"NOTNUMPY" + six
    files["fortran.npy"] = npy_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", six)
    files["big_endian.npy"] = npy_bytes("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", six)
    files["short_data.npy"] = npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4), }", six)
    files["huge_shape.npy"] = npy_bytes(
        "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 16), }", six)
    for name, data in files.items():
        (out / name).write_bytes(data)
        print(f"{name}: {len(data)} bytes")


if __name__ == "__main__":
    main()
