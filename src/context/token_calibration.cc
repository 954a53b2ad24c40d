// TokenCalibration: per-model (estimate, reported) observations in a JSON file shared by the
// processes that use one store.
//
//   {"format": "kope-token-calibration", "version": 1,
//    "models": {"gpt-4o": [[estimate, reported], ...], ...}}   (oldest first)
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>

#include "kope/base/file.h"
#include "kope/context/token_counter.h"
#include "kope/memory/store_location.h"

namespace kope::context {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using SampleMap = std::map<std::string, std::vector<TokenSample>, std::less<>>;

constexpr std::string_view kFormat = "kope-token-calibration";

Status Errno(const std::string& what, const fs::path& path) {
  return Status::IoError(what + " " + path.string() + ": " + std::strerror(errno));
}

// An exclusive flock on `path`, released (and the descriptor closed) at destruction.
class FileLock {
 public:
  static Result<std::unique_ptr<FileLock>> Acquire(const fs::path& path) {
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return Errno("cannot open the lock file", path);
    while (::flock(fd, LOCK_EX) != 0) {
      if (errno != EINTR) {
        Status s = Errno("cannot lock", path);
        ::close(fd);
        return s;
      }
    }
    return std::unique_ptr<FileLock>(new FileLock(fd));
  }
  ~FileLock() {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_;
};

void Trim(std::vector<TokenSample>& samples) {
  if (samples.size() > static_cast<size_t>(kMaxSamplesPerModel)) {
    samples.erase(samples.begin(),
                  samples.end() - static_cast<std::ptrdiff_t>(kMaxSamplesPerModel));
  }
}

Result<SampleMap> ReadFile(const fs::path& path) {
  SampleMap samples;
  // No file yet is an empty calibration. A file once there stays there (writers replace it by
  // rename), so a read after ReadFileText found it cannot miss it.
  Result<std::string> text = ReadFileText(path);
  if (!text.ok() && text.status().code() == StatusCode::kNotFound) return samples;
  KOPE_RETURN_IF_ERROR(text.status());
  json j = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  auto corrupt = [&](const std::string& why) {
    return Status::Corruption(path.string() + ": not a token calibration file (" + why + ")");
  };
  if (j.is_discarded() || !j.is_object()) return corrupt("not a JSON object");
  if (j.value("format", "") != kFormat) return corrupt("format is not " + std::string(kFormat));
  if (!j.contains("models") || !j["models"].is_object()) return corrupt("no models object");
  for (const auto& [model, list] : j["models"].items()) {
    if (!list.is_array()) return corrupt("models." + model + " is not a list");
    std::vector<TokenSample>& out = samples[model];
    for (const json& pair : list) {
      if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number_integer() ||
          !pair[1].is_number_integer()) {
        return corrupt("models." + model + " holds something other than [estimate, reported]");
      }
      out.push_back({pair[0].get<int64_t>(), pair[1].get<int64_t>()});
    }
    Trim(out);
  }
  return samples;
}

Status WriteFile(const fs::path& path, const SampleMap& samples) {
  json models = json::object();
  for (const auto& [model, list] : samples) {
    json pairs = json::array();
    for (const TokenSample& s : list) pairs.push_back({s.estimate, s.reported});
    models[model] = std::move(pairs);
  }
  json j = {{"format", kFormat}, {"version", 1}, {"models", std::move(models)}};
  const std::string text = j.dump(1) + "\n";
  const fs::path tmp = path.string() + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("cannot create", tmp);
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      Status s = Errno("cannot write", tmp);
      ::close(fd);
      ::unlink(tmp.c_str());
      return s;
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    Status s = Errno("cannot flush", tmp);
    ::unlink(tmp.c_str());
    return s;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Status s = Errno("cannot replace", path);
    ::unlink(tmp.c_str());
    return s;
  }
  return Status::Ok();
}

}  // namespace

Status TokenCalibration::Load() {
  if (path_.empty()) return Status::Ok();
  KOPE_ASSIGN_OR_RETURN(SampleMap samples, ReadFile(path_));
  std::lock_guard lock(mu_);
  samples_ = std::move(samples);
  return Status::Ok();
}

Status TokenCalibration::Record(std::string_view model, int64_t estimate, int64_t reported) {
  if (model.empty()) return Status::InvalidArgument("token calibration: empty model name");
  if (estimate <= 0 || reported < kMinReportedTokens) return Status::Ok();
  std::lock_guard lock(mu_);
  const TokenSample sample{estimate, reported};
  if (path_.empty()) {
    auto& list = samples_[std::string(model)];
    list.push_back(sample);
    Trim(list);
    return Status::Ok();
  }
  std::error_code ec;
  if (path_.has_parent_path()) fs::create_directories(path_.parent_path(), ec);
  KOPE_ASSIGN_OR_RETURN(std::unique_ptr<FileLock> file_lock,
                        FileLock::Acquire(path_.string() + ".lock"));
  // Merge into what the file holds now: other processes may have recorded since Load().
  KOPE_ASSIGN_OR_RETURN(SampleMap merged, ReadFile(path_));
  auto& list = merged[std::string(model)];
  list.push_back(sample);
  Trim(list);
  KOPE_RETURN_IF_ERROR(WriteFile(path_, merged));
  samples_ = std::move(merged);
  return Status::Ok();
}

TokenCounter TokenCalibration::CounterFor(std::string_view model) const {
  std::lock_guard lock(mu_);
  auto exact = samples_.find(model);
  if (exact != samples_.end()) return CounterFromSamples(exact->second);
  const std::vector<TokenSample>* best = nullptr;
  size_t best_length = 0;
  for (const auto& [name, list] : samples_) {
    if (!name.empty() && model.substr(0, name.size()) == name && name.size() > best_length) {
      best = &list;
      best_length = name.size();
    }
  }
  return best != nullptr ? CounterFromSamples(*best) : TokenCounter{};
}

std::map<std::string, TokenCounter> TokenCalibration::Counters() const {
  std::lock_guard lock(mu_);
  std::map<std::string, TokenCounter> out;
  for (const auto& [name, list] : samples_) out[name] = CounterFromSamples(list);
  return out;
}

Result<fs::path> CalibrationPathFor(std::string_view store_location) {
  if (store_location.rfind("postgres://", 0) == 0 ||
      store_location.rfind("postgresql://", 0) == 0) {
    KOPE_ASSIGN_OR_RETURN(std::string default_location, memory::DefaultStoreLocation());
    return fs::path(default_location).parent_path() / "tokens.json";
  }
  if (store_location.empty()) return Status::InvalidArgument("empty store location");
  return fs::path(std::string(store_location) + ".tokens.json");
}

}  // namespace kope::context
