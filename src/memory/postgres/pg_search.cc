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
  const char* table;    // holds the generated tsvector column `fts`
  const char* columns;  // the text to show, the op family ('' for any)[, the classes]
  const char* join;     // what `columns` read, joined to the ids of `w`
};

constexpr KindSql kSearchSql[] = {
    {SearchKind::kAttempt, NodeKind::kAttempt, "attempts", "a.decision, t.op_family, a.classes",
     "JOIN attempts a ON a.id = w.id JOIN tasks t ON t.id = a.task_id"},
    {SearchKind::kInsight, NodeKind::kInsight, "insights", "i.text, i.op_family",
     "JOIN insights i ON i.id = w.id"},
    {SearchKind::kError, NodeKind::kOutcome, "outcomes", "o.error_message, o.op_family",
     "JOIN outcomes o ON o.id = w.id"},
    {SearchKind::kTask, NodeKind::kTask, "tasks", "t.name || ': ' || t.description, t.op_family",
     "JOIN tasks t ON t.id = w.id"},
};

// The rows of ids (?1, an array), in their order, with their place in it: one statement.
std::string RowsSql(const KindSql& k) {
  return "SELECT w.ord, " + std::string(k.columns) +
         " FROM unnest(?::bigint[]) WITH ORDINALITY w(id, ord) " + k.join + " ORDER BY w.ord";
}

struct RowText {
  bool found = false;
  std::string text, family, classes;  // classes: an attempt's
};

// The texts and families of the ids' rows.
Result<std::vector<RowText>> RowTexts(Db& db, const KindSql& k, const std::vector<int64_t>& ids) {
  KOPE_ASSIGN_OR_RETURN(Query q, db.Prepare(RowsSql(k)));
  q.Bind(1, ArrayLiteral(ids));
  std::vector<RowText> rows(ids.size());
  while (true) {
    KOPE_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) return rows;
    const size_t at = static_cast<size_t>(q.Int(0) - 1);
    if (at >= rows.size()) continue;
    rows[at].found = true;
    rows[at].text = q.Text(1);
    if (k.kind == SearchKind::kAttempt) rows[at].classes = q.Text(3);
    rows[at].family = q.Text(2);
  }
}

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
    const std::string filter = k.kind == SearchKind::kError ? " AND r.error_message <> ''" : "";
    KOPE_ASSIGN_OR_RETURN(
        Query ranked,
        db_->Prepare("SELECT w.id, ts_rank(w.fts, to_tsquery('english', ?1)) AS rank FROM "
                     "(SELECT id, fts FROM " +
                     table + " r WHERE fts @@ to_tsquery('english', ?1)" + filter +
                     " ORDER BY id DESC LIMIT ?2) w ORDER BY rank DESC, w.id"));
    ranked.Bind(1, match).Bind(2, std::max(query.window, query.limit));
    std::vector<std::pair<NodeId, double>> order;
    while (true) {
      KOPE_ASSIGN_OR_RETURN(bool row, ranked.Step());
      if (!row) break;
      order.emplace_back(ranked.Int(0), ranked.Double(1));
    }
    // Their rows, `limit` at a time (in one statement each) until `limit` hits are in scope.
    const size_t batch = static_cast<size_t>(query.limit);
    int taken = 0;
    for (size_t from = 0; from < order.size() && taken < query.limit; from += batch) {
      std::vector<int64_t> ids;
      for (size_t i = from; i < std::min(order.size(), from + batch); ++i) {
        ids.push_back(order[i].first);
      }
      KOPE_ASSIGN_OR_RETURN(auto rows, RowTexts(*db_, k, ids));
      for (size_t i = 0; i < ids.size() && taken < query.limit; ++i) {
        const std::string& family = rows[i].family;
        if (!rows[i].found) continue;
        if (!query.op_family.empty() && family != query.op_family &&
            !(k.kind == SearchKind::kInsight && family.empty())) {
          continue;
        }
        hits.push_back({k.kind, {k.node, ids[i]}, order[from + i].second, OneLine(rows[i].text)});
        ++taken;
      }
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
  KOPE_ASSIGN_OR_RETURN(auto rows, RowTexts(*db_, *k, ids));
  std::vector<std::string> texts;
  texts.reserve(rows.size());
  for (RowText& row : rows) {
    texts.push_back(kind == SearchKind::kAttempt ? row.text + " " + row.classes : row.text);
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
  {
    // The family's tasks nearest in size on either side, and those of no size: one statement.
    static const std::string sized =
        "(" + select +
        "WHERE t.op_family = ?1 AND t.log_size >= ?2 ORDER BY t.log_size LIMIT ?3)"
        " UNION ALL (" +
        select +
        "WHERE t.op_family = ?1 AND t.log_size < ?2 ORDER BY t.log_size DESC LIMIT ?3)"
        " UNION ALL (" +
        select + "WHERE t.op_family = ?1 AND t.log_size IS NULL ORDER BY t.id LIMIT ?3)";
    static const std::string unsized =
        "(" + select +
        "WHERE t.op_family = ?1 AND t.log_size IS NULL ORDER BY t.id LIMIT ?2)"
        " UNION ALL (" +
        select + "WHERE t.op_family = ?1 ORDER BY t.id LIMIT ?2)";
    KOPE_ASSIGN_OR_RETURN(Query q, db_->Prepare(target.size > 0 ? sized : unsized));
    if (target.size > 0) {
      q.Bind(1, target.op_family).Bind(2, std::log10(target.size)).Bind(3, fetch);
    } else {
      q.Bind(1, target.op_family).Bind(2, fetch);
    }
    KOPE_RETURN_IF_ERROR(collect(q));
  }
  std::string match =
      FtsQuery(target.name + " " + target.op_family + " " + target.description, false);
  double best_text = 0;
  if (!match.empty()) {
    std::vector<std::pair<NodeId, double>> text_hits;
    {
      // Negated ranks, so that more negative is more similar (as SQLite's BM25).
      KOPE_ASSIGN_OR_RETURN(Query q,
                            db_->Prepare("SELECT t.id, -ts_rank(t.fts, q) AS rank FROM "
                                         "to_tsquery('english', ?1) q, tasks t WHERE t.fts @@ q "
                                         "ORDER BY rank, t.id LIMIT ?2"));
      q.Bind(1, match).Bind(2, fetch + 1);
      while (true) {
        KOPE_ASSIGN_OR_RETURN(bool row, q.Step());
        if (!row) break;
        if (q.Int(0) != task_id) text_hits.emplace_back(q.Int(0), q.Double(1));
      }
    }
    std::vector<int64_t> missing;
    for (const auto& [id, rank] : text_hits) {
      if (!candidates.contains(id)) missing.push_back(id);
    }
    if (!missing.empty()) {  // the text hits of other sizes, in one statement
      KOPE_ASSIGN_OR_RETURN(Query q,
                            db_->Prepare(select + "WHERE t.id = ANY(?::bigint[]) ORDER BY t.id"));
      q.Bind(1, ArrayLiteral(missing));
      KOPE_RETURN_IF_ERROR(collect(q));
    }
    for (const auto& [id, rank] : text_hits) {
      best_text = std::min(best_text, rank);
      auto it = candidates.find(id);
      if (it != candidates.end()) it->second.text = rank;
    }
  }
  return Ranked(std::move(candidates), target, best_text, limit);
}

}  // namespace kope::memory::postgres
