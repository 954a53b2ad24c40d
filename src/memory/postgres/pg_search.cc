// Full-text search and task similarity in the PostgreSQL store (tsvector, ts_rank).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include "kope/memory/text/text_similarity.h"
#include "pg_store_impl.h"

namespace kope::memory::postgres {
namespace {

constexpr size_t kMaxQueryWords = 32;

// The words of free text as a tsquery: each word quoted (so that no text is read as query
// syntax), joined by & or |. "" when the text has no words.
std::string FtsQuery(std::string_view text, bool match_all) {
  std::vector<std::string> words;
  std::string word;
  auto flush = [&] {
    if (!word.empty() && std::find(words.begin(), words.end(), word) == words.end() &&
        words.size() < kMaxQueryWords) {
      words.push_back(word);
    }
    word.clear();
  };
  for (char c : text) {
    unsigned char u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || u >= 0x80) {
      word.push_back(static_cast<char>(std::tolower(u)));
    } else {
      flush();
    }
  }
  flush();
  std::string query;
  for (const std::string& w : words) {
    if (!query.empty()) query += match_all ? " & " : " | ";
    query += "'" + w + "'";
  }
  return query;
}

std::string OneLine(std::string_view text, size_t max_chars = 160) {
  size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos) return "";
  text = text.substr(start);
  std::string line(text.substr(0, text.find('\n')));
  if (line.size() > max_chars) line = line.substr(0, max_chars - 3) + "...";
  return line;
}

struct KindSql {
  SearchKind kind;
  NodeKind node;
  const char* table;  // holds the generated tsvector column `fts`
  const char* row;    // by id: the text to show, the op family ('' for any)[, the classes]
};

constexpr KindSql kSearchSql[] = {
    {SearchKind::kAttempt, NodeKind::kAttempt, "attempts",
     "SELECT a.decision, t.op_family, a.classes FROM attempts a JOIN tasks t ON t.id = a.task_id "
     "WHERE a.id = ?"},
    {SearchKind::kInsight, NodeKind::kInsight, "insights",
     "SELECT text, op_family FROM insights WHERE id = ?"},
    {SearchKind::kError, NodeKind::kOutcome, "outcomes",
     "SELECT error_message, op_family FROM outcomes WHERE id = ?"},
    {SearchKind::kTask, NodeKind::kTask, "tasks",
     "SELECT name || ': ' || description, op_family FROM tasks WHERE id = ?"},
};

}  // namespace

Result<std::vector<SearchHit>> PostgresStore::Search(const SearchQuery& query) {
  std::lock_guard lock(mu_);
  std::string match = FtsQuery(query.text, query.match_all);
  std::vector<SearchHit> hits;
  if (match.empty() || query.limit <= 0) return hits;
  ReadSnapshot snapshot(*db_);
  KOPE_RETURN_IF_ERROR(snapshot.status());
  for (const KindSql& k : kSearchSql) {
    if (!query.kinds.empty() &&
        std::find(query.kinds.begin(), query.kinds.end(), k.kind) == query.kinds.end()) {
      continue;
    }
    // The newest `window` matches (the GIN index finds them), ranked by ts_rank.
    const std::string table = k.table;
    const std::string filter = k.kind == SearchKind::kError ? " AND error_message <> ''" : "";
    KOPE_ASSIGN_OR_RETURN(
        Query ranked,
        db_->Prepare("SELECT w.id, ts_rank(w.fts, to_tsquery('english', ?1)) AS rank FROM "
                     "(SELECT id, fts FROM " +
                     table + " WHERE fts @@ to_tsquery('english', ?1)" + filter +
                     " ORDER BY id DESC LIMIT ?2) w ORDER BY rank DESC, w.id"));
    ranked.Bind(1, match).Bind(2, std::max(query.window, query.limit));
    int taken = 0;
    while (taken < query.limit) {
      KOPE_ASSIGN_OR_RETURN(bool row, ranked.Step());
      if (!row) break;
      const NodeId id = ranked.Int(0);
      KOPE_ASSIGN_OR_RETURN(Query detail, db_->Prepare(k.row));
      detail.Bind(1, id);
      KOPE_ASSIGN_OR_RETURN(bool found, detail.Step());
      if (!found) continue;
      std::string_view family = detail.TextView(1);
      if (!query.op_family.empty() && family != query.op_family &&
          !(k.kind == SearchKind::kInsight && family.empty())) {
        continue;
      }
      hits.push_back({k.kind, {k.node, id}, ranked.Double(1), OneLine(detail.TextView(0))});
      ++taken;
    }
  }
  std::stable_sort(hits.begin(), hits.end(), [](const SearchHit& a, const SearchHit& b) {
    if (a.relevance != b.relevance) return a.relevance > b.relevance;
    if (a.kind != b.kind) return a.kind < b.kind;
    return a.node.id < b.node.id;
  });
  if (static_cast<int>(hits.size()) > query.limit) hits.resize(query.limit);
  return hits;
}

Result<std::vector<double>> PostgresStore::TextRelevance(SearchKind kind,
                                                         const std::vector<NodeId>& ids,
                                                         std::string_view text) {
  std::lock_guard lock(mu_);
  const KindSql* k = nullptr;
  for (const KindSql& candidate : kSearchSql) {
    if (candidate.kind == kind) k = &candidate;
  }
  if (k == nullptr) return Status::InvalidArgument("unknown search kind");
  ReadSnapshot snapshot(*db_);
  KOPE_RETURN_IF_ERROR(snapshot.status());
  std::vector<std::string> texts(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    KOPE_ASSIGN_OR_RETURN(Query q, db_->Prepare(k->row));
    q.Bind(1, ids[i]);
    KOPE_ASSIGN_OR_RETURN(bool found, q.Step());
    if (found) texts[i] = q.Text(0) + (kind == SearchKind::kAttempt ? " " + q.Text(2) : "");
  }
  std::vector<std::string_view> views(texts.begin(), texts.end());
  return LexicalBm25(views, text);
}

namespace {

struct SimilarCandidate {
  TaskNode task;
  double text = 0;  // negated rank: more negative is more similar
};

// The candidates scored (half the family, 0.3 the size's closeness on a log scale, 0.2 the text
// relative to the best match) and the best `limit` of them.
std::vector<SimilarTask> Ranked(std::map<NodeId, SimilarCandidate> candidates,
                                const TaskNode& target, double best_text, int limit) {
  std::vector<SimilarTask> out;
  for (auto& [id, c] : candidates) {
    double family = c.task.op_family == target.op_family ? 1.0 : 0.0;
    double size = 0.5;
    if (c.task.size > 0 && target.size > 0) {
      size = 1.0 / (1.0 + std::abs(std::log10(c.task.size) - std::log10(target.size)));
    }
    double text = best_text < 0 ? c.text / best_text : 0.0;
    out.push_back({std::move(c.task), 0.5 * family + 0.3 * size + 0.2 * text});
  }
  std::sort(out.begin(), out.end(), [](const SimilarTask& a, const SimilarTask& b) {
    if (a.score != b.score) return a.score > b.score;
    return a.task.id < b.task.id;
  });
  if (static_cast<int>(out.size()) > std::max(0, limit)) out.resize(std::max(0, limit));
  return out;
}

}  // namespace

Result<std::vector<SimilarTask>> PostgresStore::SimilarTasks(NodeId task_id, int limit) {
  std::lock_guard lock(mu_);
  ReadSnapshot snapshot(*db_);
  KOPE_RETURN_IF_ERROR(snapshot.status());
  KOPE_ASSIGN_OR_RETURN(TaskNode target, GetTask(task_id));
  const int fetch = std::max(50, 4 * limit);
  std::map<NodeId, SimilarCandidate> candidates;
  auto collect = [&](Query& q) -> Status {
    while (true) {
      KOPE_ASSIGN_OR_RETURN(bool row, q.Step());
      if (!row) return Status::Ok();
      TaskNode t = ReadTask(q, 0);
      if (t.id != task_id) candidates.emplace(t.id, SimilarCandidate{std::move(t), 0});
    }
  };
  const std::string select = "SELECT " + std::string(kTaskColumns) + " FROM tasks t ";
  if (target.size > 0) {
    const double log_size = std::log10(target.size);
    for (const char* tail :
         {"WHERE t.op_family = ?1 AND t.log_size >= ?2 ORDER BY t.log_size LIMIT ?3",
          "WHERE t.op_family = ?1 AND t.log_size < ?2 ORDER BY t.log_size DESC LIMIT ?3"}) {
      KOPE_ASSIGN_OR_RETURN(Query q, db_->Prepare(select + tail));
      q.Bind(1, target.op_family).Bind(2, log_size).Bind(3, fetch);
      KOPE_RETURN_IF_ERROR(collect(q));
    }
  }
  {
    KOPE_ASSIGN_OR_RETURN(Query q,
                          db_->Prepare(select + "WHERE t.op_family = ?1 AND t.log_size IS NULL "
                                                "ORDER BY t.id LIMIT ?2"));
    q.Bind(1, target.op_family).Bind(2, fetch);
    KOPE_RETURN_IF_ERROR(collect(q));
  }
  if (target.size <= 0) {
    KOPE_ASSIGN_OR_RETURN(Query q,
                          db_->Prepare(select + "WHERE t.op_family = ?1 ORDER BY t.id LIMIT ?2"));
    q.Bind(1, target.op_family).Bind(2, fetch);
    KOPE_RETURN_IF_ERROR(collect(q));
  }
  std::string match =
      FtsQuery(target.name + " " + target.op_family + " " + target.description, false);
  double best_text = 0;
  if (!match.empty()) {
    std::vector<std::pair<NodeId, double>> text_hits;
    {
      // Negated ranks, so that more negative is more similar (as SQLite's BM25).
      KOPE_ASSIGN_OR_RETURN(
          Query q, db_->Prepare("SELECT id, -ts_rank(fts, to_tsquery('english', ?1)) AS rank "
                                "FROM tasks WHERE fts @@ to_tsquery('english', ?1) "
                                "ORDER BY rank, id LIMIT ?2"));
      q.Bind(1, match).Bind(2, fetch + 1);
      while (true) {
        KOPE_ASSIGN_OR_RETURN(bool row, q.Step());
        if (!row) break;
        if (q.Int(0) != task_id) text_hits.emplace_back(q.Int(0), q.Double(1));
      }
    }
    for (const auto& [id, rank] : text_hits) {
      best_text = std::min(best_text, rank);
      auto it = candidates.find(id);
      if (it == candidates.end()) {
        KOPE_ASSIGN_OR_RETURN(TaskNode t, GetTask(id));
        it = candidates.emplace(id, SimilarCandidate{std::move(t), 0}).first;
      }
      it->second.text = rank;
    }
  }
  return Ranked(std::move(candidates), target, best_text, limit);
}

}  // namespace kope::memory::postgres
