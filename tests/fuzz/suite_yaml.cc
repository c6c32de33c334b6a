// A suite file (its includes are looked up next to it, in the scratch directory), loaded,
// expanded and listed as `harness list` does.
#include "checks/check.h"
#include "fuzz_util.h"
#include "run/runner.h"
#include "suite/suite.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool registered = (h0::checks::register_kinds_with_suite_parser(), true);
  (void)registered;
  const std::string path = h0::fuzz::write_scratch("suite.yaml", h0::fuzz::as_text(data, size));
  h0::fuzz::expect_input_errors([&] {
    const h0::suite::Suite s = h0::suite::load_suite(path);
    (void)h0::run::list_cases(s, "*");
  });
  return 0;
}
