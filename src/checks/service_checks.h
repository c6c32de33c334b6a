// The check kinds that talk to a model service over the OpenAI-compatible API (the runner
// starts the service from the platform's `service:` section first; run/service_registry.h):
//   service      the service started (startup time) and lists the model
//   e2e_text     one text request against its golden / expectation, streamed and not
//   e2e_image    the same with image content parts
//   determinism  the same request repeated, and among concurrent different ones: identical
//   e2e_load     many requests at a concurrency or a Poisson rate: latency percentiles, goodput
//   eval         task accuracy item by item against a reference's, behind a statistical gate
//   serving      one serving feature of the engine (prefix cache, batching, chunked prefill,
//                preemption, speculative decoding, ...) used and shown to change nothing
//   structured_output  guided decoding (json_schema, json_object, choice, regex): complete
//                answers validate, streamed equals not, an invalid constraint is a 4xx
//   tool_calls   required / named tool calls: valid against the function's parameters, the
//                streamed deltas assembling to the plain calls
//   kv_capacity  the memory plan's KV tokens against what the engine reports it allocated
//   prompt_logprobs  a long prompt's own token logprobs (echo) at a long golden's sampled
//                positions
#pragma once

#include "checks/check.h"

namespace h0::checks {

CheckKind service_check_kind();
CheckKind e2e_text_check_kind();
CheckKind e2e_image_check_kind();
CheckKind determinism_check_kind();
CheckKind e2e_load_check_kind();
CheckKind eval_check_kind();
CheckKind serving_check_kind();
CheckKind structured_output_check_kind();
CheckKind tool_call_check_kind();
CheckKind chat_template_check_kind();
CheckKind reasoning_check_kind();
CheckKind tool_agreement_check_kind();
CheckKind kv_capacity_check_kind();
CheckKind prompt_logprobs_check_kind();

}  // namespace h0::checks
