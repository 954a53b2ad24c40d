// ServeApi: the JSON endpoints of `kope serve`, as a function from a request to a response.
//
// Every page of the web view reads its data from these endpoints, and scripts can read the same
// (docs/SERVE_API.md lists them with their parameters and fields). The API reads the experience
// graph through the GraphStore interface only, and never writes to it. Each store query sees one
// consistent snapshot, so a store that a running episode is writing (SQLite in WAL mode) is read
// consistently; one response may combine several queries, and then sees the attempts recorded
// in between, never half of one.
//
// Failure behaviour: an unknown id is a 404 response, a malformed path or parameter a 400, a
// busy store a 503 and any other store failure a 500, each with a JSON body
// {"error": {"status": N, "message": "..."}}. Handle never throws.
//
// Thread safety: Handle may be called from several threads at once; the store serializes its
// queries (GraphStore's contract). The store is not owned and must outlive the ServeApi.
#ifndef KOPE_SERVE_API_H_
#define KOPE_SERVE_API_H_

#include <map>
#include <string>

#include "kope/memory/graph_store.h"

namespace kope::serve {

// A GET request: the path ("/api/runs/3") and the decoded query parameters.
struct ApiRequest {
  std::string path;
  std::map<std::string, std::string> params;
};

struct ApiResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
};

class ServeApi {
 public:
  explicit ServeApi(memory::GraphStore& store) : store_(store) {}

  // Answers one request under /api/; any other path is a 404.
  ApiResponse Handle(const ApiRequest& request) const;

 private:
  memory::GraphStore& store_;
};

}  // namespace kope::serve

#endif  // KOPE_SERVE_API_H_
