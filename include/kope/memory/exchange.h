// Experience packs: the graph, or one op family's subgraph, as JSON lines.
//
// The first line is a header ({"type":"header","format":"kope-experience","version":1,...});
// every other line is one record: task, hardware, run, source, attempt, outcome, insight,
// evidence or used. Records refer to each other by content key (sources by content hash), never
// by store id, and every reference points to a record earlier in the file or to a node already
// in the importing store. docs/MEMORY_MODEL.md lists the fields.
//
// Import merges without duplicates: a record whose key the store holds already is the same node
// (its stored copy is kept); edges are added once. Insight counts are not read from the file:
// they follow from the evidence edges, so that packs from two teams add up. Import validates the
// whole file first and then writes it in one transaction: a malformed line gives an
// InvalidArgument naming the file and the line number, and nothing is imported.
// Thread safety: as GraphStore's.
#ifndef KOPE_MEMORY_EXCHANGE_H_
#define KOPE_MEMORY_EXCHANGE_H_

#include <cstdint>
#include <filesystem>
#include <map>
#include <ostream>
#include <string>

#include "kope/base/status.h"
#include "kope/memory/graph_store.h"

namespace kope::memory {

struct ExchangeReport {
  int64_t lines = 0;                       // lines read or written, the header included
  std::map<std::string, int64_t> records;  // by record type
  int64_t new_nodes = 0;                   // import: nodes the store did not hold before
  int64_t new_edges = 0;                   // import: evidence and used edges added
};

// Writes the export to `out`. An IoError if the stream fails.
Result<ExchangeReport> ExportJsonl(GraphStore& store, const ExportFilter& filter,
                                   std::ostream& out);
// Writes the export to `file` (replaced atomically: written beside it, then renamed).
Result<ExchangeReport> ExportJsonlFile(GraphStore& store, const ExportFilter& filter,
                                       const std::filesystem::path& file);

Result<ExchangeReport> ImportJsonlFile(GraphStore& store, const std::filesystem::path& file);

}  // namespace kope::memory

#endif  // KOPE_MEMORY_EXCHANGE_H_
