#include "exchange_record.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "kope/base/hash.h"

namespace kope::memory::exchange {
namespace {

using nlohmann::json;

// Typed access to a record's fields; the first problem is kept and reported once.
class Fields {
 public:
  Fields(const json& j, std::string_view type) : j_(j), type_(type) {}

  std::string Str(const char* name, bool required = true) {
    const json* v = Find(name, required);
    if (v == nullptr) return "";
    if (!v->is_string()) return Fail(name, "a string"), "";
    return v->get<std::string>();
  }
  double Num(const char* name, double fallback = 0) {
    const json* v = Find(name, false);
    if (v == nullptr || v->is_null()) return fallback;
    if (!v->is_number() || !std::isfinite(v->get<double>())) return Fail(name, "a number"), 0;
    return v->get<double>();
  }
  std::optional<double> OptNum(const char* name) {
    const json* v = Find(name, false);
    if (v == nullptr || v->is_null()) return std::nullopt;
    return Num(name);
  }
  int64_t Int(const char* name) {
    const json* v = Find(name, false);
    if (v == nullptr) return 0;
    if (!v->is_number_integer()) return Fail(name, "an integer"), 0;
    return v->get<int64_t>();
  }
  bool Bool(const char* name) {
    const json* v = Find(name, false);
    if (v == nullptr) return false;
    if (!v->is_boolean()) return Fail(name, "true or false"), false;
    return v->get<bool>();
  }
  std::string Key(const char* name, bool required = true) {
    const json* v = Find(name, required);
    if (v == nullptr || (!required && v->is_null())) return "";
    if (!v->is_string() || !IsValidKey(v->get<std::string>())) {
      return Fail(name, "a key of 32 lowercase hex digits"), "";
    }
    return v->get<std::string>();
  }
  std::string Object(const char* name) {
    const json* v = Find(name, false);
    if (v == nullptr) return "{}";
    if (!v->is_object()) return Fail(name, "a JSON object"), "{}";
    return v->dump();
  }
  std::vector<std::string> Strings(const char* name) {
    std::vector<std::string> out;
    const json* v = Find(name, false);
    if (v == nullptr) return out;
    if (!v->is_array()) return Fail(name, "a list of strings"), out;
    for (const json& e : *v) {
      if (!e.is_string()) return Fail(name, "a list of strings"), out;
      out.push_back(e.get<std::string>());
    }
    return out;
  }
  const json* Sub(const char* name) {
    const json* v = Find(name, true);
    if (v != nullptr && !v->is_object()) return Fail(name, "a JSON object"), nullptr;
    return v;
  }
  const Status& status() const { return status_; }

 private:
  const json* Find(const char* name, bool required) {
    auto it = j_.find(name);
    if (it == j_.end()) {
      if (required) {
        Fail(name, "present");
      }
      return nullptr;
    }
    return &*it;
  }
  void Fail(const char* name, const char* expected) {
    if (status_.ok()) {
      status_ = Status::InvalidArgument(std::string(type_) + " record: field '" + name +
                                        "' must be " + expected);
    }
  }
  const json& j_;
  std::string_view type_;
  Status status_;
};

constexpr std::string_view kTypeNames[] = {"header",  "task",    "hardware", "run",      "source",
                                           "attempt", "outcome", "insight",  "evidence", "used"};

size_t Index(NodeKind kind) { return static_cast<size_t>(kind); }

// The header: a kope experience pack of a version this kope reads.
Status ParseHeader(Fields& f, const json& j) {
  if (f.Str("format") != kFormat && f.status().ok()) {
    return Status::InvalidArgument("not a kope experience pack (format '" +
                                   j.value("format", std::string()) + "')");
  }
  int64_t version = f.Int("version");
  if (f.status().ok() && version > kFormatVersion) {
    return Status::InvalidArgument("experience pack version " + std::to_string(version) +
                                   " is newer than this kope reads (" +
                                   std::to_string(kFormatVersion) + ")");
  }
  return f.status();
}

Status ParseTask(Fields& f, Record& r) {
  r.task.key = f.Key("key");
  r.task.name = f.Str("name");
  r.task.op_family = f.Str("op_family");
  r.task.description = f.Str("description", false);
  r.task.size = f.Num("size");
  r.task.spec_hash = f.Str("spec_hash", false);
  r.task.attrs_json = f.Object("attrs");
  r.task.created_at = f.Int("created_at");
  return f.status();
}

Status ParseHardware(Fields& f, Record& r) {
  r.hardware.key = f.Key("key");
  r.hardware.backend = f.Str("backend");
  r.hardware.device = f.Str("device");
  r.hardware.arch = f.Str("arch", false);
  r.hardware.attrs_json = f.Object("attrs");
  r.hardware.created_at = f.Int("created_at");
  return f.status();
}

Status ParseRun(Fields& f, Record& r) {
  r.run.key = f.Key("key");
  r.ref_a = f.Key("task");
  r.ref_b = f.Key("hardware");
  r.run.label = f.Str("label", false);
  r.run.compiler = f.Str("compiler", false);
  r.run.config_json = f.Object("config");
  r.run.started_at = f.Int("started_at");
  return f.status();
}

// A source: its text, which must match its hash.
Status ParseSource(Fields& f, Record& r) {
  r.source_hash = f.Key("hash");
  r.source_text = f.Str("text");
  if (f.status().ok() && ContentHash(r.source_text) != r.source_hash) {
    return Status::InvalidArgument("source record: the text does not match its hash " +
                                   r.source_hash);
  }
  return f.status();
}

Status ParseAttempt(Fields& f, Record& r) {
  r.attempt.key = f.Key("key");
  r.ref_a = f.Key("run");
  r.ref_b = f.Key("parent", false);
  r.attempt.source_hash = f.Key("source");
  r.attempt.diff = f.Str("diff", false);
  r.attempt.decision = f.Str("decision", false);
  r.attempt.classes = f.Strings("classes");
  r.attempt.proposer = f.Str("proposer", false);
  r.attempt.prompt_tokens = f.Int("prompt_tokens");
  r.attempt.completion_tokens = f.Int("completion_tokens");
  r.attempt.cost_usd = f.Num("cost_usd");  // absent from files written before costs were kept
  r.attempt.created_at = f.Int("created_at");
  return f.status();
}

// An outcome, with a verdict kope knows.
Status ParseOutcome(Fields& f, Record& r) {
  r.outcome.key = f.Key("key");
  r.ref_a = f.Key("attempt");
  r.outcome.stage = f.Str("stage");
  r.outcome.verdict = f.Str("verdict");
  if (f.status().ok() && !IsKnownVerdict(r.outcome.verdict)) {
    return Status::InvalidArgument("outcome record: unknown verdict '" + r.outcome.verdict + "'");
  }
  r.outcome.flagged = f.Bool("flagged");
  r.outcome.speedup = f.OptNum("speedup");
  r.outcome.time_ms = f.OptNum("time_ms");
  r.outcome.roofline = f.OptNum("roofline");
  r.outcome.error_message = f.Str("error_message", false);
  r.outcome.error_signature = f.Str("error_signature", false);
  r.outcome.evidence_json = f.Object("evidence");
  r.outcome.created_at = f.Int("created_at");
  return f.status();
}

// An insight and its scope (an object of its own).
Status ParseInsight(Fields& f, Record& r) {
  r.insight.key = f.Key("key");
  r.insight.kind = f.Str("kind");
  r.insight.text = f.Str("text");
  r.insight.classes = f.Strings("classes");
  r.insight.created_at = f.Int("created_at");
  r.insight.updated_at = f.Int("updated_at");
  if (const json* scope = f.Sub("scope"); scope != nullptr) {
    Fields s(*scope, "insight scope");
    r.insight.scope = {s.Str("op_family", false), s.Str("backend", false),  s.Str("device", false),
                       s.Str("arch", false),      s.Str("compiler", false), s.Num("size_min"),
                       s.Num("size_max")};
    KOPE_RETURN_IF_ERROR(s.status());
  }
  return f.status();
}

Status ParseEvidence(Fields& f, Record& r) {
  r.ref_a = f.Key("insight");
  r.ref_b = f.Key("outcome");
  std::string relation = f.Str("relation");
  if (f.status().ok()) {
    KOPE_ASSIGN_OR_RETURN(r.evidence.relation, ParseEvidenceRelation(relation));
  }
  r.evidence.effect = f.Num("effect", 1.0);
  r.evidence.created_at = f.Int("created_at");
  return f.status();
}

// A used edge; its target (an object of its own) is an insight or an attempt.
Status ParseUsed(Fields& f, Record& r) {
  r.ref_a = f.Key("attempt");
  if (const json* target = f.Sub("target"); target != nullptr) {
    Fields t(*target, "used target");
    std::string kind = t.Str("kind");
    r.ref_b = t.Key("key");
    KOPE_RETURN_IF_ERROR(t.status());
    KOPE_ASSIGN_OR_RETURN(r.used.target.kind, ParseNodeKind(kind));
    if (r.used.target.kind != NodeKind::kInsight && r.used.target.kind != NodeKind::kAttempt) {
      return Status::InvalidArgument("used record: the target must be an insight or an attempt");
    }
  }
  r.used.section = f.Str("section", false);
  r.used.score = f.Num("score");
  r.used.tokens = f.Int("tokens");
  r.used.credit = f.OptNum("credit");
  return f.status();
}

// The fields of a record of type `r.type`, from `j`; the first problem found.
Status ParseFields(Record& r, const json& j) {
  Fields f(j, RecordTypeName(r.type));
  switch (r.type) {
    case RecordType::kHeader:
      return ParseHeader(f, j);
    case RecordType::kTask:
      return ParseTask(f, r);
    case RecordType::kHardware:
      return ParseHardware(f, r);
    case RecordType::kRun:
      return ParseRun(f, r);
    case RecordType::kSource:
      return ParseSource(f, r);
    case RecordType::kAttempt:
      return ParseAttempt(f, r);
    case RecordType::kOutcome:
      return ParseOutcome(f, r);
    case RecordType::kInsight:
      return ParseInsight(f, r);
    case RecordType::kEvidence:
      return ParseEvidence(f, r);
    case RecordType::kUsed:
      return ParseUsed(f, r);
  }
  return f.status();
}

}  // namespace

std::string_view RecordTypeName(RecordType type) { return kTypeNames[static_cast<size_t>(type)]; }

Result<Record> ParseRecord(std::string_view line, bool first_line) {
  json j;
  try {
    j = json::parse(line);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number too large
    return Status::InvalidArgument(std::string("not valid JSON (") + e.what() + ")");
  }
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) {
    return Status::InvalidArgument("a record must be a JSON object with a string 'type'");
  }
  std::string type = j["type"].get<std::string>();
  Record r;
  bool known = false;
  for (size_t i = 0; i < std::size(kTypeNames); ++i) {
    if (kTypeNames[i] == type) {
      r.type = static_cast<RecordType>(i);
      known = true;
    }
  }
  if (!known) return Status::InvalidArgument("unknown record type '" + type + "'");
  if ((r.type == RecordType::kHeader) != first_line) {
    return Status::InvalidArgument(first_line ? "the first line must be the kope-experience header"
                                              : "a header is allowed on the first line only");
  }
  KOPE_RETURN_IF_ERROR(ParseFields(r, j));
  return r;
}

Status CheckReferences(const Record& r, GraphStore& store,
                       std::array<std::unordered_set<std::string>, 6>& seen,
                       std::unordered_set<std::string>& sources) {
  auto check = [&](NodeKind kind, const std::string& key) -> Status {
    if (key.empty() || seen[Index(kind)].count(key) > 0) return Status::Ok();
    Result<NodeId> id = store.FindByKey(kind, key);
    if (id.ok()) return Status::Ok();
    if (id.status().code() != StatusCode::kNotFound) return id.status();
    return Status::InvalidArgument(std::string(RecordTypeName(r.type)) + " record refers to " +
                                   std::string(NodeKindName(kind)) + " " + key +
                                   ", which is neither earlier in the file nor in the store");
  };
  switch (r.type) {
    case RecordType::kHeader:
      return Status::Ok();
    case RecordType::kTask:
      seen[Index(NodeKind::kTask)].insert(r.task.key);
      return Status::Ok();
    case RecordType::kHardware:
      seen[Index(NodeKind::kHardware)].insert(r.hardware.key);
      return Status::Ok();
    case RecordType::kRun:
      KOPE_RETURN_IF_ERROR(check(NodeKind::kTask, r.ref_a));
      KOPE_RETURN_IF_ERROR(check(NodeKind::kHardware, r.ref_b));
      seen[Index(NodeKind::kRun)].insert(r.run.key);
      return Status::Ok();
    case RecordType::kSource:
      sources.insert(r.source_hash);
      return Status::Ok();
    case RecordType::kAttempt:
      KOPE_RETURN_IF_ERROR(check(NodeKind::kRun, r.ref_a));
      KOPE_RETURN_IF_ERROR(check(NodeKind::kAttempt, r.ref_b));
      if (sources.count(r.attempt.source_hash) == 0 &&
          !store.GetSource(r.attempt.source_hash).ok()) {
        return Status::InvalidArgument("attempt record refers to source " + r.attempt.source_hash +
                                       ", which is neither earlier in the file nor in the store");
      }
      seen[Index(NodeKind::kAttempt)].insert(r.attempt.key);
      return Status::Ok();
    case RecordType::kOutcome:
      KOPE_RETURN_IF_ERROR(check(NodeKind::kAttempt, r.ref_a));
      seen[Index(NodeKind::kOutcome)].insert(r.outcome.key);
      return Status::Ok();
    case RecordType::kInsight:
      seen[Index(NodeKind::kInsight)].insert(r.insight.key);
      return Status::Ok();
    case RecordType::kEvidence:
      KOPE_RETURN_IF_ERROR(check(NodeKind::kInsight, r.ref_a));
      return check(NodeKind::kOutcome, r.ref_b);
    case RecordType::kUsed:
      KOPE_RETURN_IF_ERROR(check(NodeKind::kAttempt, r.ref_a));
      return check(r.used.target.kind, r.ref_b);
  }
  return Status::Ok();
}

void Resolver::Note(NodeKind kind, const std::string& key, NodeId id) {
  ids_[Index(kind)][key] = id;
}

Result<NodeId> Resolver::Resolve(NodeKind kind, const std::string& key) {
  auto& map = ids_[Index(kind)];
  auto it = map.find(key);
  if (it != map.end()) return it->second;
  Result<NodeId> id = writer_.FindByKey(kind, key);
  if (!id.ok()) return id.status();
  map.emplace(key, *id);
  return *id;
}

Status Apply(const Record& r, GraphWriter& writer, Resolver& resolver) {
  switch (r.type) {
    case RecordType::kHeader:
      return Status::Ok();
    case RecordType::kTask: {
      KOPE_ASSIGN_OR_RETURN(NodeId id, writer.PutTask(r.task));
      resolver.Note(NodeKind::kTask, r.task.key, id);
      return Status::Ok();
    }
    case RecordType::kHardware: {
      KOPE_ASSIGN_OR_RETURN(NodeId id, writer.PutHardware(r.hardware));
      resolver.Note(NodeKind::kHardware, r.hardware.key, id);
      return Status::Ok();
    }
    case RecordType::kRun: {
      RunNode run = r.run;
      KOPE_ASSIGN_OR_RETURN(run.task_id, resolver.Resolve(NodeKind::kTask, r.ref_a));
      KOPE_ASSIGN_OR_RETURN(run.hardware_id, resolver.Resolve(NodeKind::kHardware, r.ref_b));
      KOPE_ASSIGN_OR_RETURN(NodeId id, writer.PutRun(run));
      resolver.Note(NodeKind::kRun, run.key, id);
      return Status::Ok();
    }
    case RecordType::kSource:
      return writer.PutSource(r.source_text).status();
    case RecordType::kAttempt: {
      AttemptNode attempt = r.attempt;
      KOPE_ASSIGN_OR_RETURN(attempt.run_id, resolver.Resolve(NodeKind::kRun, r.ref_a));
      if (!r.ref_b.empty()) {
        KOPE_ASSIGN_OR_RETURN(attempt.parent_id, resolver.Resolve(NodeKind::kAttempt, r.ref_b));
      }
      KOPE_ASSIGN_OR_RETURN(NodeId id, writer.PutAttempt(attempt, ""));
      resolver.Note(NodeKind::kAttempt, attempt.key, id);
      return Status::Ok();
    }
    case RecordType::kOutcome: {
      OutcomeNode outcome = r.outcome;
      KOPE_ASSIGN_OR_RETURN(outcome.attempt_id, resolver.Resolve(NodeKind::kAttempt, r.ref_a));
      KOPE_ASSIGN_OR_RETURN(NodeId id, writer.PutOutcome(outcome));
      resolver.Note(NodeKind::kOutcome, outcome.key, id);
      return Status::Ok();
    }
    case RecordType::kInsight: {
      KOPE_ASSIGN_OR_RETURN(NodeId id, writer.PutInsight(r.insight));
      resolver.Note(NodeKind::kInsight, r.insight.key, id);
      return Status::Ok();
    }
    case RecordType::kEvidence: {
      EvidenceEdge edge = r.evidence;
      KOPE_ASSIGN_OR_RETURN(edge.insight_id, resolver.Resolve(NodeKind::kInsight, r.ref_a));
      KOPE_ASSIGN_OR_RETURN(edge.outcome_id, resolver.Resolve(NodeKind::kOutcome, r.ref_b));
      return writer.AddEvidence(edge).status();
    }
    case RecordType::kUsed: {
      UsedEdge edge = r.used;
      KOPE_ASSIGN_OR_RETURN(edge.attempt_id, resolver.Resolve(NodeKind::kAttempt, r.ref_a));
      KOPE_ASSIGN_OR_RETURN(edge.target.id, resolver.Resolve(edge.target.kind, r.ref_b));
      return writer.AddUsed(edge).status();
    }
  }
  return Status::Ok();
}

}  // namespace kope::memory::exchange
