#include "kope/memory/outcome_json.h"

#include "outcome_fields.h"

namespace kope::memory {
namespace {

using nlohmann::json;

json OptionalNumber(const std::optional<double>& value) {
  return value.has_value() ? json(*value) : json(nullptr);
}

json ObjectOrEmpty(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  return j.is_object() ? j : json::object();
}

}  // namespace

json OutcomeFields(const OutcomeNode& o) {
  return {{"key", o.key},
          {"stage", o.stage},
          {"verdict", o.verdict},
          {"flagged", o.flagged},
          {"speedup", OptionalNumber(o.speedup)},
          {"time_ms", OptionalNumber(o.time_ms)},
          {"roofline", OptionalNumber(o.roofline)},
          {"error_message", o.error_message},
          {"error_signature", o.error_signature},
          {"evidence", ObjectOrEmpty(o.evidence_json)},
          {"created_at", o.created_at}};
}

std::string OutcomeJson(const OutcomeNode& outcome) {
  json j = OutcomeFields(outcome);
  j["id"] = outcome.id;
  j["attempt"] = outcome.attempt_id;
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace kope::memory
