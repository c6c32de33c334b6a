// A model's config.json: the architecture (a modelled family or the generic description), then
// what is sized by it: the weight inventory and a memory plan on one 80 GB device.
#include "fuzz_util.h"
#include "model/config/architecture.h"
#include "model/weights/inventory.h"
#include "plan/memory_plan.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  h0::fuzz::write_scratch("model/config.json", h0::fuzz::as_text(data, size));
  const std::string dir = h0::fuzz::scratch_dir() + "/model";
  h0::fuzz::expect_input_errors([&] {
    const h0::model::Architecture arch = h0::model::load_any_architecture(dir);
    if (!arch.modelled) return;
    (void)h0::model::build_inventory(arch);
    h0::plan::MemoryOptions options;
    options.device_memory = 80e9;
    (void)h0::plan::plan_memory(arch, h0::plan::ParallelPlan{}, options);
  });
  return 0;
}
