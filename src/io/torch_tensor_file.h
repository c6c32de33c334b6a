// One tensor from a file another tool wrote: numpy's .npy (format 1.0–3.0, little-endian, C
// order; f2 f4 f8 i1 i4 i8 u1 b1) and PyTorch's `torch.save(tensor, path)` (.pt): a zip archive,
// entries stored uncompressed, holding `<archive>/data.pkl` — a pickle that rebuilds one tensor
// with torch._utils._rebuild_tensor_v2 from one storage (`<archive>/data/<key>`) — and
// `<archive>/byteorder` ("little"). Only that form is read: the pickle runs on a tiny stack
// machine that knows the opcodes such a file uses and the one global it may call; any other
// opcode, global, archive layout or a compressed entry is refused. Never executes anything.
// msprobe (mindstudio-probe) writes its tensor dumps in these two formats.
#pragma once

#include <string>

#include "tensor/tensor.h"

namespace h0::io {

// Throws InputError naming the file and what is wrong ("not a .npy file (no \x93NUMPY magic)",
// "data.pkl: opcode 0x63 GLOBAL 'os system' is not a tensor rebuild", ...).
tensor::Tensor read_npy(const std::string& path);
tensor::Tensor read_torch_pt(const std::string& path);
// By extension: .npy or .pt (.pth).
tensor::Tensor read_tensor_file(const std::string& path);

}  // namespace h0::io
