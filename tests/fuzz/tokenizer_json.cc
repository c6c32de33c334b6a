// A tokenizer.json, then a round trip of a mixed text through it.
#include "fuzz_util.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  h0::fuzz::expect_input_errors([&] {
    const auto tok =
        h0::tokenizer::Tokenizer::from_json(h0::fuzz::as_text(data, size), "fuzz/tokenizer.json");
    const std::vector<int32_t> ids =
        tok.encode("Hello, world! 123 \xc3\xa9t\xc3\xa9  \n\t<|im_start|>x");
    (void)tok.decode(ids);
    (void)tok.decode(ids, /*skip_special_tokens=*/true);
  });
  return 0;
}
