#include "kope/backend/kernel_resources_json.h"

#include <nlohmann/json.hpp>

namespace kope {

using nlohmann::json;

std::string KernelResourcesToJson(const std::vector<KernelResources>& resources) {
  json j = json::array();
  for (const KernelResources& r : resources) {
    j.push_back({{"function", r.function},
                 {"arch", r.arch},
                 {"registers", r.registers},
                 {"shared_bytes", r.shared_bytes},
                 {"constant_bytes", r.constant_bytes},
                 {"stack_bytes", r.stack_bytes},
                 {"spill_store_bytes", r.spill_store_bytes},
                 {"spill_load_bytes", r.spill_load_bytes}});
  }
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::vector<KernelResources> KernelResourcesFromJson(std::string_view text) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  std::vector<KernelResources> out;
  if (!j.is_array()) return out;
  try {
    for (const json& e : j) {
      if (!e.is_object()) continue;
      KernelResources r;
      r.function = e.value("function", "");
      r.arch = e.value("arch", "");
      r.registers = e.value("registers", 0);
      r.shared_bytes = e.value("shared_bytes", int64_t{0});
      r.constant_bytes = e.value("constant_bytes", int64_t{0});
      r.stack_bytes = e.value("stack_bytes", int64_t{0});
      r.spill_store_bytes = e.value("spill_store_bytes", int64_t{0});
      r.spill_load_bytes = e.value("spill_load_bytes", int64_t{0});
      out.push_back(std::move(r));
    }
  } catch (const json::exception&) {
    return {};
  }
  return out;
}

}  // namespace kope
