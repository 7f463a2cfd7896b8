#include "serve/job_store.h"

#include <sqlite3.h>

#include <chrono>
#include <cstdio>
#include <random>

#include "core/error.h"

namespace vidax::serve {

namespace {

int64_t now_unix() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A prepared statement, finalized on scope exit; binds and steps with errors naming the SQL.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) : db_(db), sql_(sql) {
    if (sqlite3_prepare_v2(db, sql, -1, &st_, nullptr) != SQLITE_OK)
      throw Error(msg() << "job database: cannot prepare `" << sql << "`: " << sqlite3_errmsg(db));
  }
  ~Stmt() { sqlite3_finalize(st_); }
  Stmt& bind(int i, const std::string& s) {
    sqlite3_bind_text(st_, i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& bind(int i, int64_t v) {
    sqlite3_bind_int64(st_, i, v);
    return *this;
  }
  // true: a row is ready; false: done.
  bool step() {
    const int rc = sqlite3_step(st_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw Error(msg() << "job database: `" << sql_ << "` failed: " << sqlite3_errmsg(db_));
  }
  std::string text(int col) const {
    const unsigned char* t = sqlite3_column_text(st_, col);
    return t ? std::string(reinterpret_cast<const char*>(t), static_cast<size_t>(sqlite3_column_bytes(st_, col)))
             : std::string();
  }
  int64_t integer(int col) const { return sqlite3_column_int64(st_, col); }

 private:
  sqlite3* db_;
  const char* sql_;
  sqlite3_stmt* st_ = nullptr;
};

void exec(sqlite3* db, const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string e = err ? err : "unknown error";
    sqlite3_free(err);
    throw Error(msg() << "job database: `" << sql << "` failed: " << e);
  }
}

constexpr const char* kColumns =
    "seq, id, status, model, prompt, spec, progress, created_at, completed_at, error_code, error_message, result";

Job row_to_job(const Stmt& s) {
  Job j;
  j.seq = s.integer(0);
  j.id = s.text(1);
  j.status = parse_status(s.text(2));
  j.model = s.text(3);
  j.prompt = s.text(4);
  j.spec = nlohmann::json::parse(s.text(5));
  j.progress = static_cast<int>(s.integer(6));
  j.created_at = s.integer(7);
  j.completed_at = s.integer(8);
  j.error_code = s.text(9);
  j.error_message = s.text(10);
  const std::string result = s.text(11);
  if (!result.empty()) j.result = nlohmann::json::parse(result);
  return j;
}

std::string select_sql(const std::string& where_and_order) {
  return std::string("SELECT ") + kColumns + " FROM jobs " + where_and_order;
}

}  // namespace

const char* status_name(Status s) {
  switch (s) {
    case Status::Queued: return "queued";
    case Status::InProgress: return "in_progress";
    case Status::Completed: return "completed";
    case Status::Failed: return "failed";
    case Status::Cancelled: return "cancelled";
  }
  return "?";
}

Status parse_status(const std::string& s) {
  for (Status v : {Status::Queued, Status::InProgress, Status::Completed, Status::Failed, Status::Cancelled})
    if (s == status_name(v)) return v;
  throw Error(msg() << "job database: unknown job status '" << s << "'");
}

bool is_finished(Status s) { return s == Status::Completed || s == Status::Failed || s == Status::Cancelled; }

std::string new_job_id() {
  static std::mutex mu;
  static std::random_device rd;
  std::lock_guard<std::mutex> lock(mu);
  std::string id = "video_";
  char hex[9];
  for (int i = 0; i < 4; ++i) {
    std::snprintf(hex, sizeof hex, "%08x", static_cast<unsigned>(rd()));
    id += hex;
  }
  return id;
}

bool is_job_id(const std::string& s) {
  if (s.size() != 6 + 32 || s.compare(0, 6, "video_") != 0) return false;
  for (size_t i = 6; i < s.size(); ++i)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
  return true;
}

JobStore::JobStore(const std::string& path) : path_(path) {
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    const std::string e = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    throw Error(msg() << "cannot open the job database " << path << ": " << e);
  }
  sqlite3_busy_timeout(db_, 5000);
  {
    Stmt wal(db_, "PRAGMA journal_mode=WAL");
    VIDAX_CHECK(wal.step() && wal.text(0) == "wal",
                "job database " << path << ": cannot switch to WAL mode (a file system without shared memory?)");
  }
  // NORMAL in WAL mode: a committed job survives a process kill; only a power loss may lose the last commits.
  exec(db_, "PRAGMA synchronous=NORMAL");
  exec(db_,
       "CREATE TABLE IF NOT EXISTS jobs ("
       " seq INTEGER PRIMARY KEY AUTOINCREMENT,"
       " id TEXT NOT NULL UNIQUE,"
       " status TEXT NOT NULL,"
       " model TEXT NOT NULL,"
       " prompt TEXT NOT NULL,"
       " spec TEXT NOT NULL,"
       " progress INTEGER NOT NULL DEFAULT 0,"
       " created_at INTEGER NOT NULL,"
       " completed_at INTEGER NOT NULL DEFAULT 0,"
       " error_code TEXT NOT NULL DEFAULT '',"
       " error_message TEXT NOT NULL DEFAULT '',"
       " result TEXT NOT NULL DEFAULT '')");
  // A database from before jobs had a result: the column is added ('' = none, as for an unfinished job).
  bool has_result = false;
  {
    Stmt cols(db_, "PRAGMA table_info(jobs)");
    while (cols.step()) has_result = has_result || cols.text(1) == "result";
  }
  if (!has_result) exec(db_, "ALTER TABLE jobs ADD COLUMN result TEXT NOT NULL DEFAULT ''");
  exec(db_, "CREATE INDEX IF NOT EXISTS jobs_status ON jobs(status, seq)");
}

JobStore::~JobStore() { sqlite3_close(db_); }

void JobStore::insert(Job& job) {
  std::lock_guard<std::mutex> lock(mu_);
  if (job.created_at == 0) job.created_at = now_unix();
  Stmt s(db_,
         "INSERT INTO jobs (id, status, model, prompt, spec, progress, created_at, completed_at, error_code,"
         " error_message) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)");
  s.bind(1, job.id).bind(2, std::string(status_name(job.status))).bind(3, job.model).bind(4, job.prompt);
  s.bind(5, job.spec.dump()).bind(6, static_cast<int64_t>(job.progress)).bind(7, job.created_at);
  s.bind(8, job.completed_at).bind(9, job.error_code).bind(10, job.error_message);
  s.step();
  job.seq = sqlite3_last_insert_rowid(db_);
}

std::optional<Job> JobStore::get(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s(db_, select_sql("WHERE id = ?1").c_str());
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  return row_to_job(s);
}

JobStore::Page JobStore::list(const std::string& after, int limit, bool descending) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string cursor =
      after.empty() ? "" : descending ? "WHERE seq < (SELECT seq FROM jobs WHERE id = ?1) "
                                      : "WHERE seq > (SELECT seq FROM jobs WHERE id = ?1) ";
  const std::string sql =
      select_sql(cursor + (descending ? "ORDER BY seq DESC" : "ORDER BY seq ASC") + " LIMIT ?2");
  Stmt s(db_, sql.c_str());
  if (!after.empty()) s.bind(1, after);
  s.bind(2, static_cast<int64_t>(limit) + 1);  // one more than asked says whether there is more
  Page p;
  while (s.step()) p.jobs.push_back(row_to_job(s));
  if (static_cast<int>(p.jobs.size()) > limit) {
    p.has_more = true;
    p.jobs.pop_back();
  }
  return p;
}

std::optional<Job> JobStore::claim_next() {
  std::lock_guard<std::mutex> lock(mu_);
  exec(db_, "BEGIN IMMEDIATE");
  try {
    std::optional<Job> j;
    {
      Stmt s(db_, select_sql("WHERE status = 'queued' ORDER BY seq ASC LIMIT 1").c_str());
      if (s.step()) j = row_to_job(s);
    }
    if (j) {
      Stmt u(db_, "UPDATE jobs SET status = 'in_progress', progress = 0 WHERE id = ?1");
      u.bind(1, j->id).step();
      j->status = Status::InProgress;
      j->progress = 0;
    }
    exec(db_, "COMMIT");
    return j;
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

void JobStore::set_progress(const std::string& id, int progress) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s(db_, "UPDATE jobs SET progress = ?2 WHERE id = ?1");
  s.bind(1, id).bind(2, static_cast<int64_t>(progress)).step();
}

void JobStore::finish(const std::string& id, Status status, const std::string& error_code,
                      const std::string& error_message, const nlohmann::json& result) {
  VIDAX_CHECK(is_finished(status), "JobStore::finish: " << status_name(status) << " is not a finished status");
  VIDAX_CHECK(result.is_null() || (status == Status::Completed && result.is_object()),
              "JobStore::finish: a result is an object, and only a completed job has one");
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s(db_,
         "UPDATE jobs SET status = ?2, completed_at = ?3, error_code = ?4, error_message = ?5, result = ?6,"
         " progress = CASE WHEN ?2 = 'completed' THEN 100 ELSE progress END WHERE id = ?1");
  s.bind(1, id).bind(2, std::string(status_name(status))).bind(3, now_unix()).bind(4, error_code);
  s.bind(5, error_message).bind(6, result.is_null() ? std::string() : result.dump()).step();
}

void JobStore::requeue(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s(db_, "UPDATE jobs SET status = 'queued', progress = 0, result = '' WHERE id = ?1");
  s.bind(1, id).step();
}

bool JobStore::cancel_if_queued(const std::string& id, const std::string& message) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s(db_,
         "UPDATE jobs SET status = 'cancelled', completed_at = ?2, error_code = 'cancelled', error_message = ?3"
         " WHERE id = ?1 AND status = 'queued'");
  s.bind(1, id).bind(2, now_unix()).bind(3, message).step();
  return sqlite3_changes(db_) == 1;
}

bool JobStore::remove(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s(db_, "DELETE FROM jobs WHERE id = ?1");
  s.bind(1, id).step();
  return sqlite3_changes(db_) == 1;
}

int JobStore::fail_in_progress(const std::string& message) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s(db_,
         "UPDATE jobs SET status = 'failed', completed_at = ?1, error_code = 'server_restarted',"
         " error_message = ?2 WHERE status = 'in_progress'");
  s.bind(1, now_unix()).bind(2, message).step();
  return sqlite3_changes(db_);
}

std::map<std::string, int64_t> JobStore::count_by_status() {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, int64_t> m;
  for (Status v : {Status::Queued, Status::InProgress, Status::Completed, Status::Failed, Status::Cancelled})
    m[status_name(v)] = 0;
  Stmt s(db_, "SELECT status, COUNT(*) FROM jobs GROUP BY status");
  while (s.step()) m[s.text(0)] = s.integer(1);
  return m;
}

int64_t JobStore::count(Status st) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s(db_, "SELECT COUNT(*) FROM jobs WHERE status = ?1");
  s.bind(1, std::string(status_name(st)));
  s.step();
  return s.integer(0);
}

}  // namespace vidax::serve
