#include "kope/memory/exchange.h"

#include <unistd.h>

#include <array>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <unordered_set>

#include "exchange_record.h"
#include "kope/base/hash.h"
#include "outcome_fields.h"

namespace kope::memory {
namespace {

using nlohmann::json;

json ObjectOrEmpty(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  return j.is_object() ? j : json::object();
}

// Writes records as JSON lines, turning store ids into content keys as it goes.
class JsonlSink final : public GraphSink {
 public:
  JsonlSink(std::ostream& out, ExchangeReport& report) : out_(out), report_(report) {}

  Status Emit(const char* type, json j) {
    j["type"] = type;
    out_ << j.dump(-1, ' ', false, json::error_handler_t::replace) << '\n';
    if (!out_) return Status::IoError("writing the export failed");
    ++report_.lines;
    if (std::string_view(type) != "header") ++report_.records[type];
    return Status::Ok();
  }

  Status OnTask(const TaskNode& t) override {
    keys_[Index(NodeKind::kTask)][t.id] = t.key;
    return Emit("task", {{"key", t.key},
                         {"name", t.name},
                         {"op_family", t.op_family},
                         {"description", t.description},
                         {"size", t.size},
                         {"spec_hash", t.spec_hash},
                         {"attrs", ObjectOrEmpty(t.attrs_json)},
                         {"created_at", t.created_at}});
  }
  Status OnHardware(const HardwareNode& h) override {
    keys_[Index(NodeKind::kHardware)][h.id] = h.key;
    return Emit("hardware", {{"key", h.key},
                             {"backend", h.backend},
                             {"device", h.device},
                             {"arch", h.arch},
                             {"attrs", ObjectOrEmpty(h.attrs_json)},
                             {"created_at", h.created_at}});
  }
  Status OnRun(const RunNode& r) override {
    keys_[Index(NodeKind::kRun)][r.id] = r.key;
    return Emit("run", {{"key", r.key},
                        {"task", KeyOf(NodeKind::kTask, r.task_id)},
                        {"hardware", KeyOf(NodeKind::kHardware, r.hardware_id)},
                        {"label", r.label},
                        {"compiler", r.compiler},
                        {"config", ObjectOrEmpty(r.config_json)},
                        {"started_at", r.started_at}});
  }
  Status OnSource(std::string_view hash, std::string_view text) override {
    return Emit("source", {{"hash", hash}, {"text", text}});
  }
  Status OnAttempt(const AttemptNode& a) override {
    keys_[Index(NodeKind::kAttempt)][a.id] = a.key;
    json parent = a.parent_id != 0 ? json(KeyOf(NodeKind::kAttempt, a.parent_id)) : json(nullptr);
    return Emit("attempt", {{"key", a.key},
                            {"run", KeyOf(NodeKind::kRun, a.run_id)},
                            {"parent", parent},
                            {"source", a.source_hash},
                            {"diff", a.diff},
                            {"decision", a.decision},
                            {"classes", a.classes},
                            {"proposer", a.proposer},
                            {"prompt_tokens", a.prompt_tokens},
                            {"completion_tokens", a.completion_tokens},
                            {"cost_usd", a.cost_usd},
                            {"created_at", a.created_at}});
  }
  Status OnOutcome(const OutcomeNode& o) override {
    keys_[Index(NodeKind::kOutcome)][o.id] = o.key;
    json j = OutcomeFields(o);
    j["attempt"] = KeyOf(NodeKind::kAttempt, o.attempt_id);
    return Emit("outcome", std::move(j));
  }
  Status OnInsight(const InsightNode& i) override {
    keys_[Index(NodeKind::kInsight)][i.id] = i.key;
    const InsightScope& s = i.scope;
    json scope = {{"op_family", s.op_family}, {"backend", s.backend},   {"device", s.device},
                  {"arch", s.arch},           {"compiler", s.compiler}, {"size_min", s.size_min},
                  {"size_max", s.size_max}};
    return Emit("insight", {{"key", i.key},
                            {"kind", i.kind},
                            {"text", i.text},
                            {"scope", scope},
                            {"classes", i.classes},
                            {"created_at", i.created_at},
                            {"updated_at", i.updated_at},
                            {"support", i.support},
                            {"contradiction", i.contradiction},
                            {"effect_size", i.effect_size}});
  }
  Status OnEvidence(const EvidenceEdge& e) override {
    return Emit("evidence", {{"insight", KeyOf(NodeKind::kInsight, e.insight_id)},
                             {"outcome", KeyOf(NodeKind::kOutcome, e.outcome_id)},
                             {"relation", EvidenceRelationName(e.relation)},
                             {"effect", e.effect},
                             {"created_at", e.created_at}});
  }
  Status OnUsed(const UsedEdge& e) override {
    json target = {{"kind", NodeKindName(e.target.kind)},
                   {"key", KeyOf(e.target.kind, e.target.id)}};
    json credit = e.credit.has_value() ? json(*e.credit) : json(nullptr);
    return Emit("used", {{"attempt", KeyOf(NodeKind::kAttempt, e.attempt_id)},
                         {"target", target},
                         {"section", e.section},
                         {"score", e.score},
                         {"tokens", e.tokens},
                         {"credit", credit}});
  }

 private:
  static size_t Index(NodeKind kind) { return static_cast<size_t>(kind); }
  std::string KeyOf(NodeKind kind, NodeId id) {
    auto& map = keys_[Index(kind)];
    auto it = map.find(id);
    return it != map.end() ? it->second : std::string();
  }

  std::ostream& out_;
  ExchangeReport& report_;
  std::array<std::unordered_map<NodeId, std::string>, 6> keys_;
};

int64_t NodeCount(const StoreStats& s) {
  return s.tasks + s.hardware + s.runs + s.attempts + s.outcomes + s.insights;
}

// Reads `file` line by line, handing each parsed record to `visit` with its line number.
template <typename Visit>
Status ForEachRecord(const std::filesystem::path& file, ExchangeReport* report, Visit visit) {
  std::ifstream in(file);
  if (!in) return Status::IoError("cannot read '" + file.string() + "'");
  std::string line;
  int64_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    Result<exchange::Record> record = exchange::ParseRecord(line, number == 1);
    if (!record.ok()) {
      return Status::InvalidArgument(file.string() + ":" + std::to_string(number) + ": " +
                                     record.status().message() + "; nothing was imported");
    }
    Status status = visit(*record, number);
    if (!status.ok()) {
      return Status(status.code(), file.string() + ":" + std::to_string(number) + ": " +
                                       status.message() + "; nothing was imported");
    }
    if (report != nullptr) {
      ++report->lines;
      if (record->type != exchange::RecordType::kHeader) {
        ++report->records[std::string(exchange::RecordTypeName(record->type))];
      }
    }
  }
  if (in.bad()) return Status::IoError("reading '" + file.string() + "' failed");
  return Status::Ok();
}

// A header may carry the content hash of every line after it (a pack file does): a file whose
// body differs was damaged after it was written.
Status CheckContentHash(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return Status::IoError("cannot read '" + file.string() + "'");
  std::string header;
  std::getline(in, header);
  json j = json::parse(header, nullptr, false);
  if (!j.is_object() || !j.contains("content_hash")) return Status::Ok();
  std::string body((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!j["content_hash"].is_string() || ContentHash(body) != j["content_hash"]) {
    return Status::Corruption(file.string() +
                              ": damaged: its records do not match the content hash in its "
                              "header; nothing was imported");
  }
  return Status::Ok();
}

}  // namespace

Result<ExchangeReport> ExportJsonl(GraphStore& store, const ExportFilter& filter,
                                   std::ostream& out) {
  ExchangeReport report;
  JsonlSink sink(out, report);
  KOPE_RETURN_IF_ERROR(sink.Emit("header", {{"format", exchange::kFormat},
                                            {"version", exchange::kFormatVersion},
                                            {"op_family", filter.op_family},
                                            {"exported_at", NowMillis()}}));
  KOPE_RETURN_IF_ERROR(store.Export(filter, sink));
  out.flush();
  if (!out) return Status::IoError("writing the export failed");
  return report;
}

Result<ExchangeReport> ExportJsonlFile(GraphStore& store, const ExportFilter& filter,
                                       const std::filesystem::path& file) {
  std::filesystem::path temp = file;
  temp += ".tmp-" + std::to_string(::getpid());
  Result<ExchangeReport> report = Status::Internal("export did not run");
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) return Status::IoError("cannot write '" + temp.string() + "'");
    report = ExportJsonl(store, filter, out);
  }
  std::error_code ec;
  if (!report.ok()) {
    std::filesystem::remove(temp, ec);
    return report.status().WithContext("exporting to '" + file.string() + "'");
  }
  std::filesystem::rename(temp, file, ec);
  if (ec) {
    std::filesystem::remove(temp, ec);
    return Status::IoError("cannot move the export into '" + file.string() + "': " + ec.message());
  }
  return report;
}

Result<ExchangeReport> ImportJsonlFile(GraphStore& store, const std::filesystem::path& file) {
  KOPE_RETURN_IF_ERROR(CheckContentHash(file));
  // Pass 1: every line parses and every reference resolves, before anything is written.
  {
    std::array<std::unordered_set<std::string>, 6> seen;
    std::unordered_set<std::string> sources;
    KOPE_RETURN_IF_ERROR(ForEachRecord(file, nullptr, [&](const exchange::Record& r, int64_t) {
      return exchange::CheckReferences(r, store, seen, sources);
    }));
  }
  KOPE_ASSIGN_OR_RETURN(StoreStats before, store.Stats());
  ExchangeReport report;
  KOPE_RETURN_IF_ERROR(store.Write([&](GraphWriter& writer) {
    report = ExchangeReport();
    exchange::Resolver resolver(writer);
    return ForEachRecord(file, &report, [&](const exchange::Record& r, int64_t) {
      return exchange::Apply(r, writer, resolver);
    });
  }));
  KOPE_ASSIGN_OR_RETURN(StoreStats after, store.Stats());
  report.new_nodes = NodeCount(after) - NodeCount(before);
  report.new_edges =
      after.evidence_edges + after.used_edges - before.evidence_edges - before.used_edges;
  return report;
}

}  // namespace kope::memory
