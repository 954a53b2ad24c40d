#include "wire.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace kope::llm {
namespace {

std::string StringOrNumber(const nlohmann::json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_number_integer()) return std::to_string(j.get<int64_t>());
  return {};
}

void ReadErrorObject(const nlohmann::json& e, ServerError& out) {
  if (auto it = e.find("message"); it != e.end() && it->is_string()) out.message = *it;
  if (auto it = e.find("type"); it != e.end()) out.type = StringOrNumber(*it);
  if (auto it = e.find("code"); it != e.end()) out.code = StringOrNumber(*it);
}

}  // namespace

ServerError ParseServerError(std::string_view body) {
  ServerError out;
  nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    out.message = BodyExcerpt(body);
    return out;
  }
  auto err = j.find("error");
  if (err != j.end() && err->is_object()) {
    ReadErrorObject(*err, out);
  } else if (err != j.end() && err->is_string()) {
    out.message = err->get<std::string>();
  } else {
    ReadErrorObject(j, out);
  }
  if (out.message.empty()) out.message = BodyExcerpt(body);
  return out;
}

Result<nlohmann::json> ParseJsonBody(std::string_view body) {
  try {
    return nlohmann::json::parse(body);
  } catch (const nlohmann::json::exception& e) {
    return Status::Unavailable(fmt::format("the response is not valid JSON ({}); it starts: {}",
                                           e.what(), BodyExcerpt(body)));
  }
}

const nlohmann::json* FindField(const nlohmann::json& j, std::string_view key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

std::optional<int64_t> IntField(const nlohmann::json& j, std::string_view key) {
  if (!j.is_object()) return std::nullopt;
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}

std::string StringField(const nlohmann::json& j, std::string_view key) {
  if (!j.is_object()) return {};
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return {};
  return it->get<std::string>();
}

std::string JoinUrl(std::string_view base, std::string_view path) {
  while (!base.empty() && base.back() == '/') base.remove_suffix(1);
  return std::string(base) + std::string(path);
}

std::string BodyExcerpt(std::string_view body, size_t max) {
  if (body.empty()) return "(empty body)";
  std::string out;
  for (char c : body.substr(0, max)) {
    out += (static_cast<unsigned char>(c) < 0x20 && c != '\n') ? '?' : c;
  }
  if (body.size() > max) out += fmt::format("... ({} bytes in all)", body.size());
  return out;
}

}  // namespace kope::llm
