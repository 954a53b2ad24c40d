#include "ranking.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "kope/memory/text/text_similarity.h"
#include "text.h"

namespace kope::context::internal {
namespace {

constexpr double kMillisPerDay = 86400e3;

bool Ranked(Section s) {
  return s == Section::kInsights || s == Section::kExemplars || s == Section::kFailureRules;
}

// At most this many candidates of a section go on to rendering and packing.
int SectionLimit(Section s) {
  switch (s) {
    case Section::kLineage:
      return 64;
    case Section::kAlternatives:
      return 40;
    case Section::kInsights:
      return 24;
    case Section::kExemplars:
      return 10;
    case Section::kFailureRules:
      return 12;
    case Section::kProfile:
      return 1;
    default:
      return 1 << 20;
  }
}

double StepScore(const Candidate& c) {
  // Closer to the node counts more; so does a step with a large effect, for better or worse.
  const double closeness = 0.3 + 0.7 / (1.0 + 0.5 * std::max(0, c.depth - 1));
  double effect = 0.5;  // a failed or unmeasured step
  const auto& o = c.attempt->outcome;
  if (o && o->speedup && c.parent_speedup && *c.parent_speedup > 0 && *o->speedup > 0) {
    effect = std::min(1.0, std::abs(std::log(*o->speedup / *c.parent_speedup)) * 4);
  }
  return closeness * (1.0 + effect);
}

double AlternativeScore(const Candidate& c) {
  const auto& o = c.attempt->outcome;
  if (!o) return 0.9;                                   // not evaluated yet
  if (o->verdict != memory::kVerdictValid) return 1.1;  // a failure not to repeat
  if (o->speedup && c.parent_speedup && *o->speedup > *c.parent_speedup) return 1.2;  // a win
  return 1.0;
}

}  // namespace

Status ScoreCandidates(memory::GraphStore& store, const State& state,
                       std::vector<Candidate>& candidates, const RankingWeights& weights) {
  // Text similarity to the state: BM25 over the candidates of each ranked section (insights,
  // exemplars, failure rules and fixes), the section's candidates being the corpus, divided by
  // the best score of the section.
  std::string query;
  for (const std::string& w : state.query_words) query += w + " ";
  for (Section section : {Section::kInsights, Section::kExemplars, Section::kFailureRules}) {
    std::vector<std::string> texts;
    std::vector<size_t> at;
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (candidates[i].section != section) continue;
      std::string text;
      for (const std::string& w : candidates[i].words) text += w + " ";
      texts.push_back(std::move(text));
      at.push_back(i);
    }
    std::vector<std::string_view> documents(texts.begin(), texts.end());
    std::vector<double> similarity = memory::LexicalBm25(documents, query);
    double best = 0;
    for (double s : similarity) best = std::max(best, s);
    for (size_t k = 0; k < at.size(); ++k) {
      candidates[at[k]].text_similarity = best > 0 ? similarity[k] / best : 0.0;
    }
  }

  std::vector<memory::NodeRef> targets;
  for (const Candidate& c : candidates) {
    if (Ranked(c.section)) targets.push_back(c.node);
  }
  std::map<std::pair<memory::NodeKind, memory::NodeId>, memory::UsageStats> usage;
  if (!targets.empty()) {
    KOPE_ASSIGN_OR_RETURN(std::vector<memory::UsageStats> stats, store.Usage(targets));
    for (const memory::UsageStats& s : stats) usage[{s.target.kind, s.target.id}] = s;
  }

  for (Candidate& c : candidates) {
    switch (c.section) {
      case Section::kLineage:
        c.score = StepScore(c);
        continue;
      case Section::kAlternatives:
        c.score = AlternativeScore(c);
        continue;
      case Section::kProfile:
        c.score = 1.0;
        continue;
      default:
        break;
    }
    const double relevance =
        c.relevance * (weights.text_floor + (1 - weights.text_floor) * c.text_similarity);
    const double age_days =
        std::max<double>(0, static_cast<double>(state.now - c.time) / kMillisPerDay);
    const double recency =
        weights.recency_floor +
        (1 - weights.recency_floor) * std::exp2(-age_days / weights.recency_half_life_days);
    double usefulness = 1.0;
    double explore = weights.exploration;
    auto it = usage.find({c.node.kind, c.node.id});
    if (it != usage.end()) {
      const memory::UsageStats& u = it->second;
      const double mean = u.credit / static_cast<double>(u.credited + 1);
      usefulness = std::exp(
          std::clamp(weights.credit_gain * mean, -weights.credit_limit, weights.credit_limit));
      explore = weights.exploration / std::sqrt(1.0 + static_cast<double>(u.shown));
    }
    c.score = relevance * recency * (c.evidence * usefulness + explore);
  }
  return Status::Ok();
}

void Diversify(std::vector<Candidate>& candidates, const RankingWeights& weights) {
  std::map<Section, std::vector<Candidate>> by_section;
  for (Candidate& c : candidates) by_section[c.section].push_back(std::move(c));
  candidates.clear();
  for (auto& [section, list] : by_section) {
    std::sort(list.begin(), list.end(), [](const Candidate& a, const Candidate& b) {
      if (a.score != b.score) return a.score > b.score;
      return a.node.id < b.node.id;
    });
    const bool structural = section == Section::kLineage || section == Section::kProfile;
    if (structural) {
      // The path to the node is not diversified: every step is part of how it came to be.
      if (static_cast<int>(list.size()) > SectionLimit(section)) list.resize(SectionLimit(section));
      for (Candidate& c : list) candidates.push_back(std::move(c));
      continue;
    }
    const double top = list.empty() ? 1.0 : std::max(list.front().score, 1e-12);
    const size_t limit = static_cast<size_t>(SectionLimit(section));
    std::vector<Candidate> selected;
    std::vector<bool> taken(list.size(), false);
    // For each candidate, its highest similarity to a selected item, and which one.
    std::vector<double> similarity(list.size(), 0.0);
    std::vector<size_t> similar_to(list.size(), 0);
    while (selected.size() < limit) {
      double best_value = -1e300;
      size_t best = list.size();
      for (size_t i = 0; i < list.size(); ++i) {
        if (taken[i]) continue;
        const double value =
            weights.mmr_lambda * list[i].score / top - (1 - weights.mmr_lambda) * similarity[i];
        if (value > best_value) {  // strict: ties keep the earlier (higher score, lower id)
          best_value = value;
          best = i;
        }
      }
      if (best == list.size()) break;
      taken[best] = true;
      if (!selected.empty() && similarity[best] >= weights.duplicate_similarity) {
        selected[similar_to[best]].duplicates.push_back(list[best].node.id);
        continue;
      }
      list[best].score *= 1 - weights.redundancy_penalty * similarity[best];
      selected.push_back(std::move(list[best]));
      const Candidate& added = selected.back();
      for (size_t i = 0; i < list.size(); ++i) {
        if (taken[i]) continue;
        double sim = Jaccard(list[i].words, added.words);
        const auto& a = list[i].attempt;
        if (a && added.attempt && !a->attempt.source_hash.empty() &&
            a->attempt.source_hash == added.attempt->attempt.source_hash) {
          sim = 1.0;
        }
        if (sim > similarity[i]) {
          similarity[i] = sim;
          similar_to[i] = selected.size() - 1;
        }
      }
    }
    int64_t rank = 0;
    for (Candidate& c : selected) {
      std::sort(c.duplicates.begin(), c.duplicates.end());
      if (Ranked(section)) c.order = rank++;
      candidates.push_back(std::move(c));
    }
  }
}

}  // namespace kope::context::internal
