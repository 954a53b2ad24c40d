// The reference runner's answers to the checking requests (python/kope_bridge/checker.py):
// JSON, with floating values as C99 hexadecimal strings so that NaN and infinities survive.
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "session.h"

namespace kope {
namespace {

double HexDouble(const nlohmann::json& v) {
  const std::string s = v.get<std::string>();
  return std::strtod(s.c_str(), nullptr);
}

Status Malformed(const std::string& what, const std::string& json) {
  return Status::Internal("the reference runner's " + what +
                          " is malformed: " + json.substr(0, 300));
}

}  // namespace

Result<std::vector<EvalSession::OutputSummary>> ParseReferenceSummary(const std::string& json,
                                                                      const ArenaLayout& layout) {
  nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  try {
    if (j.is_discarded() || j.at("outputs").size() != layout.outputs.size()) {
      return Malformed("summary", json);
    }
    std::vector<EvalSession::OutputSummary> out;
    for (const auto& o : j.at("outputs")) {
      out.push_back({o.at("constant").get<bool>(),
                     std::strtoull(o.at("fingerprint").get<std::string>().c_str(), nullptr, 10)});
    }
    return out;
  } catch (const nlohmann::json::exception&) {
    return Malformed("summary", json);
  }
}

Result<EvalSession::CallFindings> ParseCallFindings(const std::string& json,
                                                    const ArenaLayout& layout) {
  nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  if (j.is_discarded()) return Malformed("check", json);
  try {
    EvalSession::CallFindings f;
    f.input_modified = j.at("input").get<int>();
    if (f.input_modified >= static_cast<int>(layout.inputs.size())) {
      return Malformed("check", json);
    }
    if (!j.at("guard").is_null()) {
      f.guard_output = j["guard"].at(0).get<int>();
      f.guard_byte = j["guard"].at(1).get<int64_t>();
      if (f.guard_output < 0 || f.guard_output >= static_cast<int>(layout.outputs.size())) {
        return Malformed("check", json);
      }
    }
    for (const auto& o : j.at("outputs")) {
      if (f.outputs.size() == layout.outputs.size()) return Malformed("check", json);
      Comparison c;
      c.mismatches = o.at("mismatches").get<int64_t>();
      c.ok = c.mismatches == 0;
      c.first_index = o.at("first").get<int64_t>();
      c.expected = HexDouble(o.at("expected"));
      c.actual = HexDouble(o.at("actual"));
      c.max_abs_error = HexDouble(o.at("max_abs"));
      c.max_rel_error = HexDouble(o.at("max_rel"));
      c.nan_inf_mismatch = o.at("nan_inf").get<bool>();
      f.outputs.push_back(c);
    }
    // A check that found nothing covers every output.
    if (f.input_modified < 0 && f.guard_output < 0 && f.outputs.size() != layout.outputs.size() &&
        (f.outputs.empty() || f.outputs.back().ok)) {
      return Malformed("check", json);
    }
    return f;
  } catch (const nlohmann::json::exception&) {
    return Malformed("check", json);
  }
}

}  // namespace kope
