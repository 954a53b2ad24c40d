#include "node_checks.h"

#include <string>

#include "json_object.h"

namespace kope::memory {

Status CheckKey(std::string_view what, const std::string& key) {
  if (key.empty() || IsValidKey(key)) return Status::Ok();
  return Status::InvalidArgument("bad " + std::string(what) + " key '" + key +
                                 "': expected 32 lowercase hex digits");
}

Status CheckWorkload(const WorkloadNode& w) {
  if (w.name.empty() || w.workload_hash.empty()) {
    return Status::InvalidArgument("a workload needs a name and a workload hash");
  }
  KOPE_RETURN_IF_ERROR(CheckKey(NodeKind::kWorkload, w.key));
  if (!IsJsonObject(w.attrs_json)) {
    return Status::InvalidArgument("workload attrs must be a JSON object");
  }
  return Status::Ok();
}

Status CheckDeployment(const DeploymentRecord& d) {
  KOPE_RETURN_IF_ERROR(CheckKey("deployment", d.key));
  if (!IsJsonObject(d.report_json)) {
    return Status::InvalidArgument("a deployment report must be a JSON object");
  }
  return Status::Ok();
}

}  // namespace kope::memory
