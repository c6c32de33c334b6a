// harness op OP --inputs IN.safetensors [--attrs JSON] [--platform P] --out OUT.safetensors
//              [--fallback none|decompose|host] [--repeats N] [--json]
// Runs one op on given inputs (tensors in0, in1, ... in operand order, or named by operand as
// `run --dump-cases` writes them: x, w) and writes its outputs
// (out0, ...): the replay tool for inputs dumped from a failing model, and a way to check the
// reference kernels against one's own framework (`--platform configs/platforms/reference.yaml`).
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "backend/fallback.h"
#include "base/error.h"
#include "checks/check.h"
#include "cli_output.h"
#include "commands.h"
#include "io/safetensors_reader.h"
#include "io/safetensors_writer.h"
#include "ops/op.h"
#include "suite/platform.h"

namespace h0::cli {
namespace {

struct OpOptions {
  std::string op, inputs, attrs = "{}", platform, out, fallback = "none";
  int repeats = 1;
  bool json = false;
};

// The tensor names a file holds, for an error: "'a', 'b'" (the first 8).
std::string held_names(const io::SafetensorsFile& file) {
  std::string out;
  size_t n = 0;
  for (const auto& t : file.entries()) {
    if (n++ == 8) return out + ", ...";
    out += (out.empty() ? "'" : ", '") + t.name + "'";
  }
  return out.empty() ? "no tensor" : out;
}

int run_op(const OpOptions& opt) {
  const ops::OpDef& op = ops::require_op(opt.op);
  ops::Json attrs;
  try {
    attrs = ops::Json::parse(opt.attrs);
  } catch (const ops::Json::exception& e) {
    throw InputError("--attrs", std::string("not JSON: ") + e.what());
  }
  attrs = ops::validate_attrs(op, attrs);
  backend::FallbackMode mode;
  if (!backend::parse_fallback(opt.fallback, &mode))
    throw InputError("--fallback", "expected none, decompose or host");
  if (opt.repeats < 1) throw InputError("--repeats", "must be >= 1");

  const auto file = io::SafetensorsFile::open(opt.inputs);
  std::vector<tensor::Tensor> inputs;
  std::vector<ops::TensorDesc> descs;
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    // By position (in0, in1, ...) or by operand name, as `run --dump-cases` writes them.
    const std::string position = "in" + std::to_string(i), operand = op.inputs[i].name;
    const std::string name = file.find(position) != nullptr ? position : operand;
    if (file.find(name) == nullptr) {
      if (op.inputs[i].optional) break;
      throw InputError(opt.inputs, "no tensor '" + position + "' or '" + operand + "' (input " +
                                       std::to_string(i) + " of " + op.name + "); it holds " +
                                       held_names(file));
    }
    inputs.push_back(file.get(name));
    descs.push_back({inputs.back().dtype(), inputs.back().shape(), true});
  }
  const auto out_descs = ops::infer_outputs(op, descs, attrs);

  const suite::Platform platform = suite::load_platform(default_platform(opt.platform));
  auto be = backend::Backend::open({platform.backend, platform.lib, platform.options});
  std::vector<backend::DeviceTensor> dev_in, dev_out;
  for (const auto& t : inputs) dev_in.push_back(be->upload(t));
  for (const auto& d : out_descs) dev_out.push_back(be->allocate(d.dtype, d.shape));
  std::vector<const backend::DeviceTensor*> in_ptrs;
  std::vector<backend::DeviceTensor*> out_ptrs;
  for (auto& t : dev_in) in_ptrs.push_back(&t);
  for (auto& t : dev_out) out_ptrs.push_back(&t);

  std::vector<double> samples;
  backend::Outcome outcome;
  for (int i = 0; i < opt.repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    outcome = backend::execute(*be, op, in_ptrs, out_ptrs, attrs, mode);
    be->synchronize();
    samples.push_back(
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count());
    if (outcome.route == backend::Route::kUnsupported) {
      throw InputError(opt.op, outcome.detail + " (try --fallback host)");
    }
  }
  std::vector<io::NamedTensor> outputs;
  for (size_t i = 0; i < dev_out.size(); ++i)
    outputs.push_back({"out" + std::to_string(i), be->download(dev_out[i])});
  io::write_safetensors(opt.out, outputs,
                        {{"op", op.name}, {"attrs", attrs.dump()}, {"backend", be->name()}});

  const auto row = checks::summarize("steady", op.name, samples);
  if (opt.json) {
    nlohmann::json outs = nlohmann::json::array();
    for (const auto& o : outputs)
      outs.push_back({{"name", o.name},
                      {"dtype", tensor::dtype_name(o.tensor.dtype())},
                      {"shape", o.tensor.shape()}});
    std::printf("%s\n", nlohmann::json{{"op", op.name},
                                       {"backend", be->name()},
                                       {"route", backend::route_name(outcome.route)},
                                       {"route_detail", outcome.detail},
                                       {"attrs", attrs},
                                       {"outputs", outs},
                                       {"median_ns", row.median_ns},
                                       {"out", opt.out}}
                            .dump(2)
                            .c_str());
  } else {
    std::printf("%s on %s (%s%s%s): %s in %s ms (median of %d)\n", op.name, be->name().c_str(),
                backend::route_name(outcome.route), outcome.detail.empty() ? "" : ": ",
                outcome.detail.c_str(), opt.out.c_str(), short_number(row.median_ns * 1e-6).c_str(),
                opt.repeats);
  }
  return kExitOk;
}

}  // namespace

void register_op(CLI::App& app, Run* run) {
  auto opt = std::make_shared<OpOptions>();
  CLI::App* sub =
      app.add_subcommand("op", "Run one op on given inputs and write its outputs (replay tool)");
  sub->add_option("op", opt->op, "Operator name from the catalogue")->required();
  sub->add_option("--inputs", opt->inputs,
                  "Safetensors file with in0, in1, ... in operand order, or the operands' names "
                  "(x, w: as run --dump-cases writes them)")
      ->required();
  sub->add_option("--attrs", opt->attrs, "Attributes as JSON, e.g. '{\"eps\":1e-6}'");
  sub->add_option("--platform", opt->platform,
                  "Platform config (default configs/platforms/cpu.yaml)");
  sub->add_option("--out", opt->out, "Output safetensors file (out0, out1, ...)")->required();
  sub->add_option("--fallback", opt->fallback, "When unsupported: none (error), decompose, host")
      ->capture_default_str();
  sub->add_option("--repeats", opt->repeats, "Run this many times and report the median time")
      ->capture_default_str();
  sub->add_flag("--json", opt->json, "Machine-readable output");
  sub->callback([run, opt] { *run = [opt] { return run_op(*opt); }; });
}

}  // namespace h0::cli
