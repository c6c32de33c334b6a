// A platform file, loaded as `harness run --platform` does.
#include "fuzz_util.h"
#include "suite/platform.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = h0::fuzz::write_scratch("platform.yaml", h0::fuzz::as_text(data, size));
  h0::fuzz::expect_input_errors([&] { (void)h0::suite::load_platform(path); });
  return 0;
}
