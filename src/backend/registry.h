// The built-in backends, by name. Each is an hb_backend exactly like a plugin's; the only
// difference is that its entry function is linked in instead of found with dlsym.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "backend/harness_backend.h"

namespace h0::backend {

struct BuiltinBackend {
  const char* name;
  const hb_backend* (*entry)();
  const char* description;
};

const std::vector<BuiltinBackend>& builtin_backends();
// nullptr if no built-in has that name.
const BuiltinBackend* find_builtin(std::string_view name);

// Loads a plugin library and returns its entry. Throws InputError naming the library for a
// library that does not load, a missing hb_backend_entry, a null entry, or an ABI version
// newer than this harness's (HB_ABI_VERSION) or zero.
const hb_backend* load_plugin(const std::string& path);

}  // namespace h0::backend
