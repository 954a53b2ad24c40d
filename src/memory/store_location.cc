#include "kope/memory/store_location.h"

#include <cstdlib>

#include "kope/memory/postgres/postgres_store.h"

namespace kope::memory {
namespace {

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::string(value) : std::string();
}

}  // namespace

Result<std::string> DefaultStoreLocation() {
  std::string data = Env("XDG_DATA_HOME");
  if (!data.empty()) return data + "/kope/experience.db";
  std::string home = Env("HOME");
  if (!home.empty()) return home + "/.local/share/kope/experience.db";
  return Status::InvalidArgument(
      "no location for the experience store: set KOPE_STORE, XDG_DATA_HOME or HOME, or pass "
      "--store");
}

Result<std::string> ResolveStoreLocation(std::string_view flag_value) {
  if (!flag_value.empty()) return std::string(flag_value);
  std::string env = Env("KOPE_STORE");
  if (!env.empty()) return env;
  return DefaultStoreLocation();
}

Result<std::unique_ptr<GraphStore>> OpenStore(std::string_view location,
                                              const StoreOptions& options) {
  if (IsPostgresLocation(location)) return OpenPostgresStore(location, options);
  return OpenSqliteStore(std::filesystem::path(location), options);
}

}  // namespace kope::memory
