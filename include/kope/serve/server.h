// Server: `kope serve`'s HTTP server, the web view's pages and the JSON API over one store.
//
// It serves the pages (small HTML, JavaScript and CSS files built into the binary), the syntax
// highlighter from the machine's highlight.js installation (Debian's libjs-highlight.js; pages
// show plain source without it) and ServeApi's endpoints under /api/. It answers GET (and HEAD)
// only; it never writes to the store.
//
// Access. By default it listens on the loopback interface only. Listening on any other address
// needs a token: then every request must carry it, as `Authorization: Bearer TOKEN`, as the
// query parameter `token=TOKEN` (the link to give a browser; the answer sets a cookie so that
// the page's own requests carry it), or as that cookie. A request without it gets 401.
//
// Lifetime and threads: Start binds the port and serves on background threads until Stop (or
// destruction). The store is not owned and must outlive the server; its queries are serialized
// by the store. Start fails with InvalidArgument for a non-loopback address without a token and
// with Unavailable when the address cannot be bound.
#ifndef KOPE_SERVE_SERVER_H_
#define KOPE_SERVE_SERVER_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "kope/base/status.h"
#include "kope/memory/graph_store.h"

namespace kope::serve {

struct ServerOptions {
  std::string bind = "127.0.0.1";
  int port = 8765;  // 0: any free port (see Server::port)
  std::string token;
  // Where highlight.min.js and styles/ are found.
  std::string highlight_dir = "/usr/share/javascript/highlight.js";
  // Called on a server thread for every request before it is answered (access logs).
  std::function<void(std::string_view method, std::string_view path)> on_request;
};

// True for 127.0.0.0/8, ::1 and "localhost".
bool IsLoopbackAddress(std::string_view address);

class Server {
 public:
  static Result<std::unique_ptr<Server>> Start(memory::GraphStore& store,
                                               const ServerOptions& options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // The port it listens on (the chosen one when options.port was 0).
  int port() const;
  // Stops listening and waits for the requests in flight. Idempotent.
  void Stop();

 private:
  struct State;
  explicit Server(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace kope::serve

#endif  // KOPE_SERVE_SERVER_H_
