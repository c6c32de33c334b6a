// harness serve --model DIR [--platform P] [--host 127.0.0.1] [--port 8000] [--dtype f32]
//               [--max-batch 16] [--kv-tokens 8192] [--served-name NAME] [--api-key-env VAR]
//               [--json]
// The embedded OpenAI-compatible server: the model loaded as `harness model run` loads it, on the
// platform's backend, behind continuous batching (service/batch_engine.h) and cpp-httplib
// (service/server.h). Prints "serving <name> on http://host:port" once it answers (--port 0
// picks a free port); one line per request on stderr; SIGINT or SIGTERM stops it (exit 0)
// after the requests in flight.
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "backend/backend.h"
#include "base/error.h"
#include "base/json_read.h"
#include "cli_output.h"
#include "commands.h"
#include "io/sharded_checkpoint.h"
#include "model/config/tower.h"
#include "model/exec/executor.h"
#include "model/weights/model_source.h"
#include "service/server.h"
#include "suite/location.h"
#include "suite/platform.h"

namespace h0::cli {
namespace {

struct ServeOptions {
  std::string model, platform, host = "127.0.0.1", dtype = "f32", served_name, api_key_env;
  int port = 8000, max_batch = 16;
  int64_t kv_tokens = 8192;
  bool json = false;
};

int g_stop_pipe[2] = {-1, -1};

extern "C" void on_stop_signal(int) {
  const char c = 1;
  [[maybe_unused]] const ssize_t n = write(g_stop_pipe[1], &c, 1);
}

// The first of `dirs` holding `file`, else "".
std::string find_in(const std::vector<std::string>& dirs, const std::string& file) {
  for (const std::string& d : dirs) {
    if (std::filesystem::exists(d + "/" + file)) return d;
  }
  return "";
}

// The eos_token_id of a config or generation config (a number or a list; under text_config for
// a multimodal config.json).
std::vector<int64_t> eos_of(const std::string& file) {
  const std::optional<std::string> text = suite::read_text_file(file);
  nlohmann::json j = base::parse_json_or_discarded(text ? *text : "");
  if (j.is_object() && !j.contains("eos_token_id") && j.contains("text_config"))
    j = j["text_config"];
  const nlohmann::json eos =
      j.is_object() && j.contains("eos_token_id") ? j["eos_token_id"] : nlohmann::json();
  std::vector<int64_t> ids;
  for (const auto& x : eos.is_array() ? eos : nlohmann::json::array({eos})) {
    if (x.is_number_integer()) ids.push_back(x.get<int64_t>());
  }
  return ids;
}

// End-of-sequence ids as engines take them (vLLM: the tokenizer's eos ∪ the generation config's;
// transformers' generate: the generation config's): the tokenizer's eos_token and
// generation_config.json's eos_token_id, or config.json's where there is no
// generation_config.json (transformers derives the generation config from it).
// golden/tools/gen_e2e.py stops at the same set.
std::vector<int64_t> eos_ids(const tokenizer::Tokenizer& tok,
                             const std::vector<std::string>& dirs) {
  std::vector<int64_t> ids;
  if (tok.eos_id()) ids.push_back(*tok.eos_id());
  const std::string generation = find_in(dirs, "generation_config.json");
  const std::string config = find_in(dirs, "config.json");
  const std::vector<int64_t> more = !generation.empty()
                                        ? eos_of(generation + "/generation_config.json")
                                    : !config.empty() ? eos_of(config + "/config.json")
                                                      : std::vector<int64_t>{};
  ids.insert(ids.end(), more.begin(), more.end());
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

// The API key `--api-key-env` names: an unset or empty variable is an error, never an open server.
std::string api_key(const ServeOptions& opt) {
  if (opt.api_key_env.empty()) return "";
  const char* v = std::getenv(opt.api_key_env.c_str());
  if (v == nullptr || *v == '\0') {
    throw InputError("--api-key-env",
                     "environment variable " + opt.api_key_env + " is " +
                         (v == nullptr ? "unset" : "empty") +
                         ": the server would accept every request without a key (set it, or leave "
                         "--api-key-env out to serve without authentication)");
  }
  return v;
}

int run_serve(const ServeOptions& opt) {
  const std::string key = api_key(opt);  // before anything is loaded
  const suite::Platform platform = suite::load_platform(default_platform(opt.platform));
  const auto dtype = tensor::parse_dtype(opt.dtype);
  if (!dtype || !tensor::is_float(*dtype))
    throw InputError("--dtype", "must be f32, bf16 or f16, got '" + opt.dtype + "'");
  if (opt.max_batch < 1) throw InputError("--max-batch", "must be at least 1");
  if (opt.kv_tokens < 16) throw InputError("--kv-tokens", "must be at least 16");
  const model::ModelSource src = model::resolve_model(opt.model);
  const model::Architecture arch = model::load_architecture(src.dir);
  const io::ShardedCheckpoint ckpt = io::ShardedCheckpoint::open(src.dir);
  const std::vector<std::string> dirs = {opt.model, src.dir};
  const std::string tok_dir = find_in(dirs, "tokenizer.json");
  if (tok_dir.empty())
    throw InputError(opt.model, "has no tokenizer.json (the server tokenizes prompts)");
  const tokenizer::Tokenizer tokenizer = tokenizer::Tokenizer::from_file(tok_dir);

  service::ServedModel served;
  served.name = opt.served_name.empty()
                    ? std::filesystem::path(opt.model).lexically_normal().filename().string()
                    : opt.served_name;
  if (served.name.empty())
    served.name =
        std::filesystem::path(opt.model).lexically_normal().parent_path().filename().string();
  served.tokenizer = &tokenizer;
  try {
    served.chat = service::ChatTemplate::load(tok_dir);
  } catch (const InputError& e) {
    served.chat_error =
        std::string("the model has no chat template the server can render: ") + e.what();
  }
  served.image = service::image_tokens_of(src.dir);
  service::EngineOptions engine_options;
  engine_options.max_batch = opt.max_batch;
  if (const model::Tower* tower = model::tower_of(arch)) {
    const std::string pre = find_in(dirs, "preprocessor_config.json");
    served.images = tower->processor(pre.empty() ? opt.model : pre);
    engine_options.images = served.images.get();
  }
  engine_options.eos_ids = eos_ids(tokenizer, dirs);

  auto be = backend::Backend::open({platform.backend, platform.lib, platform.options});
  model::Executor ex(arch, ckpt, *be,
                     {*dtype, backend::FallbackMode::kHost, 16, opt.kv_tokens, false});
  service::BatchEngine engine(ex, engine_options);
  // Workers for 4 × the batch (at least 64 connections at once); the listen queue 4 × that.
  service::ServerOptions server_options{opt.host, opt.port, key, std::max(64, 4 * opt.max_batch)};
  service::Server server(engine, served, server_options);
  const int port = server.bind();

  if (pipe(g_stop_pipe) != 0) throw std::runtime_error("pipe() failed");
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  std::thread watcher([&server] {
    char c = 0;
    while (read(g_stop_pipe[0], &c, 1) < 0 && errno == EINTR) {
    }
    server.stop();
  });

  const std::string url = "http://" + opt.host + ":" + std::to_string(port);
  if (opt.json) {
    std::printf("%s\n", nlohmann::json{{"serving", served.name},
                                       {"url", url},
                                       {"port", port},
                                       {"backend", be->name()},
                                       {"kv_tokens", engine.kv_capacity()},
                                       {"max_batch", opt.max_batch}}
                            .dump()
                            .c_str());
  } else {
    std::printf("serving %s on %s (%s backend, %s, max batch %d, %lld KV tokens)\n",
                served.name.c_str(), url.c_str(), be->name().c_str(), opt.dtype.c_str(),
                opt.max_batch, (long long)engine.kv_capacity());
  }
  std::fflush(stdout);
  server.run();
  on_stop_signal(0);  // wakes the watcher when run() ended on its own
  watcher.join();
  engine.stop();
  std::fprintf(stderr, "serve: stopped\n");
  return kExitOk;
}

}  // namespace

void register_serve(CLI::App& app, Run* run) {
  auto opt = std::make_shared<ServeOptions>();
  CLI::App* sub = app.add_subcommand(
      "serve",
      "Serve a model over the OpenAI API (completions, chat, streaming) with continuous batching");
  sub->add_option("--model", opt->model,
                  "A checkpoint directory (or a model config directory: synthesized, seed 0)")
      ->required();
  sub->add_option("--platform", opt->platform,
                  "Platform config (default configs/platforms/cpu.yaml)");
  sub->add_option("--host", opt->host, "Address to listen on (default 127.0.0.1)");
  sub->add_option("--port", opt->port, "Port (default 8000; 0 picks a free one)")
      ->check(CLI::Range(0, 65535));
  sub->add_option("--dtype", opt->dtype, "Run dtype: f32, bf16 or f16 (weights converted on load)");
  sub->add_option("--max-batch", opt->max_batch, "Sequences per forward pass (default 16)");
  sub->add_option("--kv-tokens", opt->kv_tokens,
                  "KV cache capacity in tokens over all sequences (default 8192)");
  sub->add_option("--served-name", opt->served_name,
                  "The model id clients send (default: the model directory's name)");
  sub->add_option(
      "--api-key-env", opt->api_key_env,
      "Require 'Authorization: Bearer <key>' with the key from this environment variable");
  sub->add_flag("--json", opt->json, "Print the startup line as JSON");
  sub->callback([run, opt] { *run = [opt] { return run_serve(*opt); }; });
}

}  // namespace h0::cli
