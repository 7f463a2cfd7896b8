#include "dist/mpi_communicator.h"

#ifdef VIDAX_HAVE_MPI
#include <mpi.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"

namespace vidax::dist {

namespace {

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char buf[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, buf, &len);
  throw Error(msg() << "MPI " << what << " failed: " << std::string(buf, static_cast<size_t>(len)));
}

// Sum needs the element type; narrow floats are summed through f32.
MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::F64: return MPI_DOUBLE;
    case DType::F32: return MPI_FLOAT;
    case DType::I64: return MPI_INT64_T;
    case DType::I32: return MPI_INT32_T;
    case DType::I16: return MPI_INT16_T;
    case DType::I8: return MPI_INT8_T;
    case DType::U64: return MPI_UINT64_T;
    case DType::U32: return MPI_UINT32_T;
    case DType::U16: return MPI_UINT16_T;
    case DType::U8: case DType::Bool: return MPI_UINT8_T;
    default: return MPI_DATATYPE_NULL;
  }
}

// Failure recovery (Communicator::enable_failure_recovery), shared by a world and its splits.
// With it on, each collective is started non-blocking on staging copies of its buffers and
// waited for with MPI_Test, which also tests a receive posted on `notices`. A failing rank's
// report_failure sends its message there to every other rank; a rank that finds it abandons its
// collective (the request stays pending, its staging buffers are kept for good, since messages
// already under way may still land in them) and throws PeerFailed. settle() gathers every rank's
// outcome on `control`, which no job collective uses, and after a failure renews every
// communicator: a fresh duplicate of `control` for the world, each split made again on it in the
// order it was first made (the same colors and keys, so the same groups), a fresh `notices`.
// The old communicators are never freed: their context ids stay taken, so a stray message of an
// abandoned collective can match nothing on the new ones.
class MpiCommunicator;
struct Recovery {
  struct Split {
    int parent;  // index into `splits`, -1: the world
    int color, key;
    MpiCommunicator* live;  // null once destroyed
  };
  int world_rank = 0, world_size = 1;
  bool on = false;
  MPI_Comm control = MPI_COMM_NULL, notices = MPI_COMM_NULL;
  MPI_Request inbox_req = MPI_REQUEST_NULL;
  std::vector<char>* inbox = nullptr;
  bool tripped = false;  // a notice arrived since the last settle
  int from = -1;
  std::string notice;
  MpiCommunicator* world = nullptr;
  std::vector<Split> splits;
  std::vector<std::vector<char>*> kept;  // staging and notice buffers that pending operations may still touch
  std::vector<MPI_Comm> abandoned;       // communicators left alone after a failure

  static constexpr int kTag = 7;
  static constexpr size_t kNoticeBytes = 4096;

  void post_inbox() {
    inbox = new std::vector<char>(kNoticeBytes, '\0');
    kept.push_back(inbox);
    check(MPI_Irecv(inbox->data(), static_cast<int>(kNoticeBytes), MPI_BYTE, MPI_ANY_SOURCE, kTag, notices,
                    &inbox_req),
          "Irecv (failure notices)");
  }
  // True once another rank's failure notice is here (then `from` and `notice` say whose).
  bool notice_arrived() {
    if (!on) return false;
    if (tripped) return true;
    int done = 0;
    MPI_Status st;
    check(MPI_Test(&inbox_req, &done, &st), "Test (failure notices)");
    if (!done) return false;
    int n = 0;
    MPI_Get_count(&st, MPI_BYTE, &n);
    tripped = true;
    from = st.MPI_SOURCE;
    notice.assign(inbox->data(), static_cast<size_t>(std::max(0, n)));
    return true;
  }
};

class MpiCommunicator final : public Communicator {
 public:
  using Communicator::all_gather;
  using Communicator::all_to_all;
  // `split`: index of this communicator in rec->splits, -1 for the world.
  MpiCommunicator(MPI_Comm comm, bool owned, std::shared_ptr<Recovery> rec, int split)
      : comm_(comm), owned_(owned), rec_(std::move(rec)), split_(split) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  ~MpiCommunicator() override {
    if (split_ >= 0) rec_->splits[static_cast<size_t>(split_)].live = nullptr;
    if (rec_->world == this) rec_->world = nullptr;
    // After a failure the handle is a renewed one; an abandoned one is never freed (see Recovery).
    if (owned_) MPI_Comm_free(&comm_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend_name() const override { return "mpi"; }

  void all_reduce_sum(void* buf, size_t n, DType dtype) override {
    MPI_Datatype t = mpi_type(dtype);
    if (t != MPI_DATATYPE_NULL) {
      all_reduce(buf, n, dtype_size(dtype), t);
      return;
    }
    // bf16/f16/fp8: sum in f32, round once (same as NCCL's bf16 sum up to order).
    std::vector<float> tmp(n);
    convert(buf, dtype, tmp.data(), DType::F32, n);
    all_reduce(tmp.data(), n, sizeof(float), MPI_FLOAT);
    convert(tmp.data(), DType::F32, buf, dtype, n);
  }
  void all_gather(const void* in, void* out, size_t n, DType dtype) override {
    const size_t bytes = n * dtype_size(dtype);
    const int c = count(bytes);
    collective("Allgather", in, bytes, out, bytes * static_cast<size_t>(size_), false,
               [&](const void* i, void* o) { return MPI_Allgather(i, c, MPI_BYTE, o, c, MPI_BYTE, comm_); },
               [&](const void* i, void* o, MPI_Request* r) { return MPI_Iallgather(i, c, MPI_BYTE, o, c, MPI_BYTE, comm_, r); });
  }
  void all_to_all(const void* in, void* out, size_t n, DType dtype) override {
    const size_t bytes = n * dtype_size(dtype);
    const int c = count(bytes);
    collective("Alltoall", in, bytes * static_cast<size_t>(size_), out, bytes * static_cast<size_t>(size_), false,
               [&](const void* i, void* o) { return MPI_Alltoall(i, c, MPI_BYTE, o, c, MPI_BYTE, comm_); },
               [&](const void* i, void* o, MPI_Request* r) { return MPI_Ialltoall(i, c, MPI_BYTE, o, c, MPI_BYTE, comm_, r); });
  }
  void broadcast(void* buf, size_t n, DType dtype, int root) override {
    const size_t bytes = n * dtype_size(dtype);
    const int c = count(bytes);
    collective("Bcast", buf, bytes, buf, bytes, false,
               [&](const void*, void* o) { return MPI_Bcast(o, c, MPI_BYTE, root, comm_); },
               [&](const void*, void* o, MPI_Request* r) { return MPI_Ibcast(o, c, MPI_BYTE, root, comm_, r); });
  }
  void broadcast_patient(void* buf, size_t n, DType dtype, int root) override {
    const size_t bytes = n * dtype_size(dtype);
    const int c = count(bytes);
    // Open MPI's blocking calls poll without sleeping: an idle follower would keep a core busy.
    collective("Ibcast", buf, bytes, buf, bytes, true, nullptr,
               [&](const void*, void* o, MPI_Request* r) { return MPI_Ibcast(o, c, MPI_BYTE, root, comm_, r); });
  }
  void barrier() override {
    collective("Barrier", nullptr, 0, nullptr, 0, false, [&](const void*, void*) { return MPI_Barrier(comm_); },
               [&](const void*, void*, MPI_Request* r) { return MPI_Ibarrier(comm_, r); });
  }
  std::unique_ptr<Communicator> split(int color, int key) override {
    MPI_Comm sub;
    check(MPI_Comm_split(comm_, color, key, &sub), "Comm_split");
    rec_->splits.push_back({split_, color, key, nullptr});
    auto c = std::make_unique<MpiCommunicator>(sub, true, rec_, static_cast<int>(rec_->splits.size() - 1));
    rec_->splits.back().live = c.get();
    return c;
  }
  [[noreturn]] void abort(const std::string& message) override {
    std::fprintf(stderr, "vidax: error on rank %d: %s\n", rank_, message.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::abort();
  }

  void enable_failure_recovery() override {
    VIDAX_CHECK(split_ < 0, "failure recovery is enabled on the world, not on a split of it");
    Recovery& r = *rec_;
    if (r.on) return;
    check(MPI_Comm_dup(comm_, &r.control), "Comm_dup (control)");
    check(MPI_Comm_dup(comm_, &r.notices), "Comm_dup (failure notices)");
    r.post_inbox();
    r.on = true;
  }
  void report_failure(const std::string& message) override {
    Recovery& r = *rec_;
    if (!r.on) return;
    auto* text = new std::vector<char>(message.begin(), message.begin() + static_cast<long>(std::min(message.size(), Recovery::kNoticeBytes)));
    r.kept.push_back(text);
    for (int dest = 0; dest < r.world_size; ++dest) {
      if (dest == r.world_rank) continue;
      MPI_Request req;
      check(MPI_Isend(text->data(), static_cast<int>(text->size()), MPI_BYTE, dest, Recovery::kTag, r.notices, &req),
            "Isend (failure notice)");
      MPI_Request_free(&req);  // it completes on its own; `text` is kept
    }
  }
  bool abandoned() const override { return rec_->tripped; }
  std::vector<std::string> settle(const std::string& error, size_t max_bytes) override {
    Recovery& r = *rec_;
    if (!r.on) return Communicator::settle(error, max_bytes);
    VIDAX_CHECK(split_ < 0, "settle() is called on the world");
    // One slot per rank: a status byte (0 ok, 1 failed, 2 abandoned a collective) and the message.
    const size_t slot = max_bytes + 2;
    std::vector<char> mine(slot, '\0'), all(slot * static_cast<size_t>(size_), '\0');
    const bool tripped = r.tripped;
    mine[0] = !error.empty() ? 1 : tripped ? 2 : 0;
    const std::string text = !error.empty() ? error
                             : tripped      ? "abandoned a collective on rank " + std::to_string(r.from) +
                                                  "'s failure notice: " + r.notice
                                            : "";
    std::memcpy(mine.data() + 1, text.data(), std::min(text.size(), max_bytes));
    check(MPI_Allgather(mine.data(), count(slot), MPI_BYTE, all.data(), count(slot), MPI_BYTE, r.control),
          "Allgather (settle)");
    bool any = false, failed = false;
    for (int k = 0; k < size_; ++k) {
      const char st = all[static_cast<size_t>(k) * slot];
      any = any || st != 0;
      failed = failed || st == 1;
    }
    std::vector<std::string> out;
    for (int k = 0; k < size_; ++k) {
      const char* p = all.data() + static_cast<size_t>(k) * slot;
      // An abandoned rank's text is only its error when no rank reported one.
      out.emplace_back(p[0] == 1 || (p[0] == 2 && !failed) ? std::string(p + 1) : std::string());
    }
    if (any) renew();
    return out;
  }

 private:
  using Blocking = std::function<int(const void* in, void* out)>;
  using Starter = std::function<int(const void* in, void* out, MPI_Request*)>;

  void all_reduce(void* buf, size_t n, size_t elem, MPI_Datatype t) {
    const int c = count(n);
    collective("Allreduce", buf, n * elem, buf, n * elem, false,
               [&](const void*, void* o) { return MPI_Allreduce(MPI_IN_PLACE, o, c, t, MPI_SUM, comm_); },
               [&](const void*, void* o, MPI_Request* r) { return MPI_Iallreduce(MPI_IN_PLACE, o, c, t, MPI_SUM, comm_, r); });
  }

  // One collective. `in` == `out` for the in-place ones (one staging buffer). Without recovery:
  // `blocking` when given (else `start` waited for with sleeps: `patient`); with it, `start` on
  // staging copies, waited for while watching the failure notices.
  void collective(const char* what, const void* in, size_t in_bytes, void* out, size_t out_bytes, bool patient,
                  const Blocking& blocking, const Starter& start) {
    Recovery& r = *rec_;
    if (split_ >= 0) fire_test_fault(r.world_rank);
    if (!r.on) {
      if (blocking && !patient) {
        check(blocking(in, out), what);
        return;
      }
      MPI_Request req;
      check(start(in, out, &req), what);
      wait(req, what, true, nullptr, nullptr);
      return;
    }
    if (r.notice_arrived()) throw PeerFailed(r.from, r.notice);  // a failure came first: do not start
    const bool inplace = in == out;
    auto* stage_out = new std::vector<char>(std::max<size_t>(out_bytes, 1));
    std::vector<char>* stage_in = nullptr;
    if (inplace) {
      if (out_bytes) std::memcpy(stage_out->data(), out, out_bytes);
    } else {
      stage_in = new std::vector<char>(std::max<size_t>(in_bytes, 1));
      if (in_bytes) std::memcpy(stage_in->data(), in, in_bytes);
    }
    MPI_Request req;
    const int rc = start(inplace ? stage_out->data() : stage_in->data(), stage_out->data(), &req);
    if (rc != MPI_SUCCESS) {
      delete stage_in;
      delete stage_out;
      check(rc, what);
    }
    wait(req, what, patient, stage_in, stage_out);  // throws PeerFailed, keeping the buffers
    if (out_bytes) std::memcpy(out, stage_out->data(), out_bytes);
    delete stage_in;
    delete stage_out;
  }

  // Waits for `req`: spins first, then sleeps between tests (always when `patient`), watching the
  // failure notices when recovery is on.
  void wait(MPI_Request& req, const char* what, bool patient, std::vector<char>* a, std::vector<char>* b) {
    Recovery& r = *rec_;
    useconds_t pause = 50;
    for (long tries = 0;; ++tries) {
      int done = 0;
      check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), what);
      if (done) return;
      if (r.notice_arrived()) {
        // The request stays pending for good: its buffers are kept (messages may still land).
        if (a) r.kept.push_back(a);
        if (b) r.kept.push_back(b);
        throw PeerFailed(r.from, r.notice);
      }
      if (patient || tries > 20000) {
        usleep(pause);
        pause = std::min<useconds_t>(pause * 2, patient ? 10000 : 1000);
      }
    }
  }

  // After a failure (settle, every rank): every communicator continues on a fresh one.
  void renew() {
    Recovery& r = *rec_;
    MPI_Comm fresh;
    check(MPI_Comm_dup(r.control, &fresh), "Comm_dup (renewing the world)");
    std::vector<MPI_Comm> made(r.splits.size(), MPI_COMM_NULL);
    for (size_t i = 0; i < r.splits.size(); ++i) {
      const Recovery::Split& s = r.splits[i];
      MPI_Comm parent = s.parent < 0 ? fresh : made[static_cast<size_t>(s.parent)];
      if (parent == MPI_COMM_NULL) continue;
      check(MPI_Comm_split(parent, s.color, s.key, &made[i]), "Comm_split (renewing a group)");
    }
    if (r.world) r.world->swap(fresh);
    else r.abandoned.push_back(fresh);
    for (size_t i = 0; i < r.splits.size(); ++i) {
      if (made[i] == MPI_COMM_NULL) continue;
      if (r.splits[i].live) r.splits[i].live->swap(made[i]);
      else r.abandoned.push_back(made[i]);  // a group destroyed since: made again only for its children
    }
    r.abandoned.push_back(r.notices);
    check(MPI_Comm_dup(r.control, &r.notices), "Comm_dup (renewing the failure notices)");
    r.post_inbox();  // the old receive stays pending on the old channel (its buffer is kept)
    r.tripped = false;
    r.from = -1;
    r.notice.clear();
  }
  // Takes `fresh` as this communicator's; the old handle is left alone (never freed).
  void swap(MPI_Comm fresh) {
    if (comm_ != MPI_COMM_WORLD) rec_->abandoned.push_back(comm_);
    comm_ = fresh;
    owned_ = false;  // a renewed communicator, like an abandoned one, is never freed
  }

  static int count(size_t n) {
    VIDAX_CHECK(n <= static_cast<size_t>(INT32_MAX), "MPI message of " << n << " elements is too large");
    return static_cast<int>(n);
  }
  MPI_Comm comm_;
  bool owned_;
  std::shared_ptr<Recovery> rec_;
  int split_;
  int rank_ = 0, size_ = 1;
};

void finalize_mpi() {
  int fin = 0;
  MPI_Finalized(&fin);
  if (!fin) MPI_Finalize();
}

}  // namespace

std::unique_ptr<Communicator> make_mpi_world() {
  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited) {
    int provided = 0;
    // SERIALIZED, not FUNNELED: `vidax serve`'s rank 0 talks to the other ranks from its worker
    // thread (its main thread serves HTTP); one thread at a time makes the calls.
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "Init_thread");
    if (provided < MPI_THREAD_SERIALIZED)  // a warning only: one-thread commands (generate) still run
      std::fprintf(stderr, "vidax: warning: this MPI gives thread level %d, below MPI_THREAD_SERIALIZED, which "
                           "`vidax serve --mesh` needs\n", provided);
    std::atexit(finalize_mpi);
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  auto rec = std::make_shared<Recovery>();
  MPI_Comm_rank(MPI_COMM_WORLD, &rec->world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &rec->world_size);
  auto w = std::make_unique<MpiCommunicator>(MPI_COMM_WORLD, false, rec, -1);
  rec->world = w.get();
  return w;
}

}  // namespace vidax::dist
#endif
