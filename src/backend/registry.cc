#include "backend/registry.h"

#include <dlfcn.h>

#include "backends/cpu/cpu_backend.h"
#include "backends/reference/reference_backend.h"
#include "base/error.h"

namespace h0::backend {

const std::vector<BuiltinBackend>& builtin_backends() {
  static const std::vector<BuiltinBackend> table = {
      {"reference", &h0_reference_backend_entry,
       "the catalogue's plain reference kernels on host memory (f64 accumulation)"},
      {"cpu", &h0_cpu_backend_entry,
       "the default platform under test: OpenBLAS GEMM, f32 accumulation, threaded kernels"},
  };
  return table;
}

const BuiltinBackend* find_builtin(std::string_view name) {
  for (const auto& b : builtin_backends()) {
    if (name == b.name) return &b;
  }
  return nullptr;
}

const hb_backend* load_plugin(const std::string& path) {
  // RTLD_LOCAL: a plugin's symbols never satisfy another plugin's; never unloaded, so its
  // threads and static destructors stay valid until exit.
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) throw InputError(path, std::string("cannot load plugin: ") + ::dlerror());
  using Entry = const hb_backend* (*)();
  auto entry = reinterpret_cast<Entry>(::dlsym(handle, "hb_backend_entry"));
  if (entry == nullptr) throw InputError(path, "not a harness plugin: no hb_backend_entry symbol");
  const hb_backend* backend = entry();
  if (backend == nullptr) throw InputError(path, "hb_backend_entry() returned null");
  if (backend->abi_version == 0 || backend->abi_version > HB_ABI_VERSION) {
    throw InputError(path, "plugin built for ABI version " + std::to_string(backend->abi_version) +
                               "; this harness speaks ABI " + std::to_string(HB_ABI_VERSION) +
                               " and older");
  }
  return backend;
}

}  // namespace h0::backend
