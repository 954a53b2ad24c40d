#include "distribution.h"

#include <cmath>
#include <limits>
#include <optional>

#include "toml_fields.h"

namespace kope {

std::string_view DistributionKindName(Distribution::Kind kind) {
  switch (kind) {
    case Distribution::Kind::kNormal:
      return "normal";
    case Distribution::Kind::kUniform:
      return "uniform";
    case Distribution::Kind::kWide:
      return "wide";
    case Distribution::Kind::kNegative:
      return "negative";
    case Distribution::Kind::kTies:
      return "ties";
    case Distribution::Kind::kPositive:
      return "positive";
  }
  return "unknown";
}

namespace task_internal {
namespace {

using Kind = Distribution::Kind;

constexpr Kind kAllKinds[] = {Kind::kNormal,   Kind::kUniform, Kind::kWide,
                              Kind::kNegative, Kind::kTies,    Kind::kPositive};

std::optional<Kind> ParseKind(std::string_view name) {
  for (Kind kind : kAllKinds) {
    if (DistributionKindName(kind) == name) return kind;
  }
  return std::nullopt;
}

// "an i32", "a bf16": how a message names an input's dtype.
std::string WithArticle(DType dtype) {
  const std::string name(DTypeName(dtype));
  return (dtype == KOPE_BF16 || dtype == KOPE_BOOL ? "a " : "an ") + name;
}

// The largest finite value of a floating dtype, for the range of `wide`.
double LargestFinite(DType dtype) {
  switch (dtype) {
    case KOPE_F16:
      return 65504.0;
    case KOPE_F32:
    case KOPE_BF16:
      return std::numeric_limits<float>::max();
    default:
      return std::numeric_limits<double>::max();
  }
}

// The kind with its defaults for `dtype`.
Distribution Defaults(Kind kind, DType dtype) {
  Distribution d;
  d.kind = kind;
  if (kind == Kind::kUniform && !IsFloating(dtype)) d.high = dtype == KOPE_BOOL ? 2.0 : 100.0;
  if (kind == Kind::kPositive) {
    d.low = 0.1;
    d.high = 10.0;
  }
  if (kind == Kind::kWide && dtype == KOPE_F16) {  // 10^6 would overflow f16
    d.low_exp = -4.0;
    d.high_exp = 4.0;
  }
  return d;
}

Result<Kind> ReadKind(const toml::node& node, DType dtype, const std::string& path) {
  KOPE_ASSIGN_OR_RETURN(std::string name, AsString(node, path));
  std::optional<Kind> kind = ParseKind(name);
  if (!kind) {
    return FieldError(path, "unknown distribution '" + name +
                                "' (expected normal, uniform, wide, negative, ties or positive)");
  }
  if (!IsFloating(dtype) && *kind != Kind::kUniform) {
    return FieldError(path, "distribution '" + name + "' needs a floating dtype; " +
                                WithArticle(dtype) + " input takes uniform (integer low and high)");
  }
  return *kind;
}

// Reads `key` of `table` into `*out` when present: any finite number for
// floating inputs, an integer in the dtype's range for integer inputs.
Status ReadBound(const toml::table& table, std::string_view key, DType dtype,
                 const std::string& path, double* out) {
  const toml::node* node = table.get(key);
  if (node == nullptr) return Status::Ok();
  const std::string field = FieldPath(path, key);
  if (IsFloating(dtype)) {
    KOPE_ASSIGN_OR_RETURN(*out, AsNumber(*node, field));
    return Status::Ok();
  }
  if (!node->is_integer()) {
    return FieldError(field, "must be an integer for " + WithArticle(dtype) + " input, got " +
                                 std::string(TypeName(*node)));
  }
  const int64_t value = node->as_integer()->get();
  // high is exclusive, so one past the largest value is allowed; a bool is 0 or 1.
  const int64_t limit = dtype == KOPE_BOOL  ? 2
                        : dtype == KOPE_I32 ? (int64_t{1} << 31)
                                            : (int64_t{1} << 53);
  if (value < (dtype == KOPE_BOOL ? 0 : -limit) || value > limit) {
    return FieldError(field, std::to_string(value) + " is outside the range of " +
                                 std::string(DTypeName(dtype)) + " values that kope draws");
  }
  *out = static_cast<double>(value);
  return Status::Ok();
}

Status ReadNumber(const toml::table& table, std::string_view key, const std::string& path,
                  double* out) {
  const toml::node* node = table.get(key);
  if (node == nullptr) return Status::Ok();
  KOPE_ASSIGN_OR_RETURN(*out, AsNumber(*node, FieldPath(path, key)));
  return Status::Ok();
}

Status CheckRanges(const Distribution& d, DType dtype, const std::string& path) {
  switch (d.kind) {
    case Kind::kNormal:
    case Kind::kNegative:
      if (!(d.stddev > 0)) return FieldError(FieldPath(path, "stddev"), "must be > 0");
      return Status::Ok();
    case Kind::kUniform:
      if (!(d.low < d.high)) return FieldError(FieldPath(path, "high"), "must be > low");
      return Status::Ok();
    case Kind::kPositive:
      if (!(d.low > 0)) return FieldError(FieldPath(path, "low"), "must be > 0");
      if (!(d.low < d.high)) return FieldError(FieldPath(path, "high"), "must be > low");
      return Status::Ok();
    case Kind::kWide:
      if (!(d.low_exp <= d.high_exp)) {
        return FieldError(FieldPath(path, "high_exp"), "must be >= low_exp");
      }
      if (std::pow(10.0, d.high_exp) > LargestFinite(dtype)) {
        return FieldError(
            FieldPath(path, "high_exp"),
            "10^high_exp exceeds the largest finite " + std::string(DTypeName(dtype)) + " value");
      }
      return Status::Ok();
    case Kind::kTies:
      if (d.num_distinct < 1) return FieldError(FieldPath(path, "num_distinct"), "must be >= 1");
      return Status::Ok();
  }
  return Status::Ok();
}

Result<Distribution> ReadTable(const toml::table& table, DType dtype, const std::string& path) {
  KOPE_ASSIGN_OR_RETURN(const toml::node* kind_node, Required(table, path, "kind"));
  KOPE_ASSIGN_OR_RETURN(Kind kind, ReadKind(*kind_node, dtype, FieldPath(path, "kind")));
  Distribution d = Defaults(kind, dtype);
  switch (kind) {
    case Kind::kNormal:
      KOPE_RETURN_IF_ERROR(CheckKeys(table, path, {"kind", "mean", "stddev", "fan_in"}));
      KOPE_RETURN_IF_ERROR(ReadNumber(table, "mean", path, &d.mean));
      KOPE_RETURN_IF_ERROR(ReadNumber(table, "stddev", path, &d.stddev));
      break;
    case Kind::kNegative:
      KOPE_RETURN_IF_ERROR(CheckKeys(table, path, {"kind", "stddev"}));
      KOPE_RETURN_IF_ERROR(ReadNumber(table, "stddev", path, &d.stddev));
      break;
    case Kind::kUniform:
      KOPE_RETURN_IF_ERROR(CheckKeys(table, path, {"kind", "low", "high", "fan_in"}));
      KOPE_RETURN_IF_ERROR(ReadBound(table, "low", dtype, path, &d.low));
      KOPE_RETURN_IF_ERROR(ReadBound(table, "high", dtype, path, &d.high));
      break;
    case Kind::kPositive:
      KOPE_RETURN_IF_ERROR(CheckKeys(table, path, {"kind", "low", "high"}));
      KOPE_RETURN_IF_ERROR(ReadBound(table, "low", dtype, path, &d.low));
      KOPE_RETURN_IF_ERROR(ReadBound(table, "high", dtype, path, &d.high));
      break;
    case Kind::kWide:
      KOPE_RETURN_IF_ERROR(CheckKeys(table, path, {"kind", "low_exp", "high_exp"}));
      KOPE_RETURN_IF_ERROR(ReadNumber(table, "low_exp", path, &d.low_exp));
      KOPE_RETURN_IF_ERROR(ReadNumber(table, "high_exp", path, &d.high_exp));
      break;
    case Kind::kTies:
      KOPE_RETURN_IF_ERROR(CheckKeys(table, path, {"kind", "num_distinct"}));
      if (const toml::node* n = table.get("num_distinct")) {
        const std::string field = FieldPath(path, "num_distinct");
        KOPE_ASSIGN_OR_RETURN(int64_t count, AsInteger(*n, field));
        if (count < 1 || count > (int64_t{1} << 24)) {
          return FieldError(field, "must be between 1 and 2^24");
        }
        d.num_distinct = static_cast<int>(count);
      }
      break;
  }
  if (const toml::node* n = table.get("fan_in")) {
    const std::string field = FieldPath(path, "fan_in");
    if (!IsFloating(dtype)) {
      return FieldError(field, "scales drawn values: it needs a floating dtype, not " +
                                   std::string(DTypeName(dtype)));
    }
    KOPE_ASSIGN_OR_RETURN(d.fan_in, ReadExpr(*n, field));
  }
  KOPE_RETURN_IF_ERROR(CheckRanges(d, dtype, path));
  return d;
}

Result<Distribution> ReadOne(const toml::node& node, DType dtype, const std::string& path) {
  if (const auto* table = node.as_table()) return ReadTable(*table, dtype, path);
  if (node.is_string()) {
    KOPE_ASSIGN_OR_RETURN(Kind kind, ReadKind(node, dtype, path));
    return Defaults(kind, dtype);
  }
  return FieldError(path,
                    "expected a distribution name or a table, got " + std::string(TypeName(node)));
}

}  // namespace

std::vector<Distribution> DefaultDistributions(DType dtype) {
  if (!IsFloating(dtype)) return {Defaults(Kind::kUniform, dtype)};
  return {Defaults(Kind::kNormal, dtype), Defaults(Kind::kWide, dtype),
          Defaults(Kind::kNegative, dtype), Defaults(Kind::kTies, dtype)};
}

Result<std::vector<Distribution>> ReadDistributions(const toml::node& node, DType dtype,
                                                    const std::string& path) {
  std::vector<Distribution> out;
  if (const auto* array = node.as_array()) {
    if (array->empty()) return FieldError(path, "must not be empty (omit it for the defaults)");
    for (size_t i = 0; i < array->size(); ++i) {
      KOPE_ASSIGN_OR_RETURN(Distribution d, ReadOne(*array->get(i), dtype, IndexPath(path, i)));
      out.push_back(d);
    }
    return out;
  }
  KOPE_ASSIGN_OR_RETURN(Distribution d, ReadOne(node, dtype, path));
  out.push_back(d);
  return out;
}

}  // namespace task_internal
}  // namespace kope
