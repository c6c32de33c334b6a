// An engine's dump as `harness compare-dumps` reads it, the first byte choosing the file: an
// msprobe dump.json (then every probe's tensor file it names), a .npy or a torch .pt tensor.
#include "fuzz_util.h"
#include "io/msprobe_dump.h"
#include "io/torch_tensor_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view bytes = h0::fuzz::as_text(data + 1, size - 1);
  h0::fuzz::expect_input_errors([&] {
    switch (data[0] % 3) {
      case 0: {
        h0::fuzz::write_scratch("dump/dump.json", bytes);
        const h0::io::MsprobeDump dump =
            h0::io::read_msprobe_dump(h0::fuzz::scratch_dir() + "/dump");
        for (const auto& p : dump.probes) {
          if (!p.tensor_file.empty()) (void)p.load();
        }
        break;
      }
      case 1:
        (void)h0::io::read_npy(h0::fuzz::write_scratch("tensor.npy", bytes));
        break;
      default:
        (void)h0::io::read_torch_pt(h0::fuzz::write_scratch("tensor.pt", bytes));
        break;
    }
  });
  return 0;
}
