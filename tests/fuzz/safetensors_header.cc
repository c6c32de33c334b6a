// A safetensors file image: the 8-byte header length, the JSON header, the data section.
#include "fuzz_util.h"
#include "io/safetensors_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  h0::fuzz::expect_input_errors([&] {
    const auto file = h0::io::SafetensorsFile::parse(reinterpret_cast<const std::byte*>(data), size,
                                                     "fuzz.safetensors", nullptr);
    for (const auto& e : file.entries()) {
      const h0::tensor::Tensor t = file.get(e.name);  // every accepted entry must be readable
      if (t.nbytes() != e.nbytes()) std::abort();
      if (!e.shape.empty() && e.shape[0] > 1) (void)file.slice(e.name, 0, 0, 1);
    }
  });
  return 0;
}
