// The server's jobs, kept in SQLite (WAL mode) in the data folder, so that a
// restart (even after SIGKILL) finds every job where it was: queued jobs stay
// queued and run, a job found in_progress is marked failed (docs/serve.md).
// One connection behind a mutex: the HTTP threads and the worker share it, and
// every method is one statement or one transaction.
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

struct sqlite3;

namespace vidax::serve {

// A job's life: queued -> in_progress -> completed | failed | cancelled.
// (queued -> cancelled on DELETE; in_progress -> queued when the server drains on SIGTERM.)
enum class Status { Queued, InProgress, Completed, Failed, Cancelled };
const char* status_name(Status s);  // "queued", "in_progress", ... (the API's words)
Status parse_status(const std::string& s);
bool is_finished(Status s);  // completed, failed or cancelled

struct Job {
  std::string id;  // server-made (new_job_id), checked by is_job_id before any use
  Status status = Status::Queued;
  std::string model, prompt;
  nlohmann::json spec;  // the validated request (video_request.h), what the worker runs
  int progress = 0;     // 0-100
  int64_t created_at = 0, completed_at = 0;  // unix seconds; completed_at 0 = not finished
  std::string error_code, error_message;     // for failed and cancelled jobs
  // What a completed job wrote (width, height, frames, fps, ...: the server's `result` object);
  // null until then.
  nlohmann::json result;
  int64_t seq = 0;  // insertion order: the queue's order and the list's cursor
};

// "video_" + 32 lowercase hex digits from the OS's random source.
std::string new_job_id();
// Exactly the shape new_job_id makes: the only ids the server turns into paths or queries.
bool is_job_id(const std::string& s);

class JobStore {
 public:
  // Opens (creating) the database file; WAL mode, a busy timeout, the schema.
  explicit JobStore(const std::string& path);
  ~JobStore();
  JobStore(const JobStore&) = delete;
  JobStore& operator=(const JobStore&) = delete;

  void insert(Job& job);  // sets job.seq
  std::optional<Job> get(const std::string& id);

  struct Page {
    std::vector<Job> jobs;
    bool has_more = false;
  };
  // Jobs after the job `after` (exclusive; "" = from the start) in insertion order, oldest
  // first or (descending) newest first. The caller checks that `after` exists.
  Page list(const std::string& after, int limit, bool descending);

  // The oldest queued job, now marked in_progress with progress 0 (one transaction).
  std::optional<Job> claim_next();
  void set_progress(const std::string& id, int progress);
  // Marks the job finished (completed, failed, cancelled) now, with its error when not completed
  // and, for a completed one, what it wrote (`result`, kept as Job::result).
  void finish(const std::string& id, Status status, const std::string& error_code = "",
              const std::string& error_message = "", const nlohmann::json& result = nullptr);
  void requeue(const std::string& id);             // back to queued, progress 0
  bool cancel_if_queued(const std::string& id, const std::string& message);  // true when it was queued
  bool remove(const std::string& id);              // true when a row was deleted
  // At start: every in_progress job (its server died mid-run) becomes failed with `message`.
  int fail_in_progress(const std::string& message);
  std::map<std::string, int64_t> count_by_status();
  int64_t count(Status s);

 private:
  std::mutex mu_;
  sqlite3* db_ = nullptr;
  std::string path_;
};

}  // namespace vidax::serve
