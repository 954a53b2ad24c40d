#include "kope/memory/evidence.h"

#include <algorithm>
#include <cmath>

namespace kope::memory {

double WilsonLowerBound(int64_t successes, int64_t trials, double z) {
  if (trials <= 0) return 0.0;
  const double n = static_cast<double>(trials);
  const double p = static_cast<double>(std::clamp<int64_t>(successes, 0, trials)) / n;
  const double z2 = z * z;
  const double center = p + z2 / (2 * n);
  const double margin = z * std::sqrt(p * (1 - p) / n + z2 / (4 * n * n));
  return std::max(0.0, (center - margin) / (1 + z2 / n));
}

double InsightEvidence(const InsightNode& insight) {
  return WilsonLowerBound(insight.support, insight.support + insight.contradiction) *
         insight.effect_size;
}

double ScopeWeight(const InsightScope& scope, const InsightQuery& query) {
  const ScopeWeights& w = query.weights;
  double weight = 1.0;
  if (scope.op_family.empty()) {
    weight *= w.general_family;
  } else if (scope.op_family != query.op_family) {
    return 0.0;
  }
  if (!scope.backend.empty() && !query.backend.empty() && scope.backend != query.backend) {
    return 0.0;
  }
  if (!scope.device.empty() && scope.device == query.device) {
    weight *= w.same_device;
  } else if (!scope.arch.empty() && scope.arch == query.arch) {
    weight *= w.same_arch;
  } else if (scope.device.empty() && scope.arch.empty()) {
    weight *= w.any_hardware;
  } else {
    weight *= w.other_arch;
  }
  if (!scope.compiler.empty() && !query.compiler.empty() && scope.compiler != query.compiler) {
    weight *= w.other_compiler;
  }
  if (query.size > 0) {
    double decades = 0;
    if (scope.size_min > 0 && query.size < scope.size_min) {
      decades = std::log10(scope.size_min / query.size);
    } else if (scope.size_max > 0 && query.size > scope.size_max) {
      decades = std::log10(query.size / scope.size_max);
    }
    weight *= 1.0 / (1.0 + w.size_decay * decades);
  }
  return weight;
}

}  // namespace kope::memory
