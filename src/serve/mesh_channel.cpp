#include "serve/mesh_channel.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "pipeline/generate.h"

namespace vidax::serve {

namespace {

constexpr uint64_t kJob = 1, kStop = 2;

// The header rank 0 broadcasts first: what follows and how large it is.
struct Header {
  uint64_t kind = 0, json_bytes = 0;
  uint64_t image[3] = {0, 0, 0}, last_image[3] = {0, 0, 0};  // C, H, W; 0 = none
};
constexpr size_t kHeaderWords = sizeof(Header) / sizeof(uint64_t);

void put_shape(const Tensor& t, uint64_t (&s)[3]) {
  if (!t.defined()) return;
  VIDAX_CHECK(t.dim() == 3, "a job's image must be [3, H, W], got " << t.str());
  for (int i = 0; i < 3; ++i) s[i] = static_cast<uint64_t>(t.size(i));
}

bool has_shape(const uint64_t (&s)[3]) { return s[0] && s[1] && s[2]; }

void broadcast_bytes(dist::Communicator& w, void* p, size_t n) {
  if (n) w.broadcast(p, n, DType::U8, 0);
}

// A tensor of the header's shape, filled from rank 0 (F32, as the images are).
Tensor receive_image(dist::Communicator& w, const uint64_t (&s)[3]) {
  if (!has_shape(s)) return Tensor();
  Tensor t = Tensor::empty({static_cast<int64_t>(s[0]), static_cast<int64_t>(s[1]), static_cast<int64_t>(s[2])},
                           DType::F32);
  w.broadcast(t.data_ptr(), static_cast<size_t>(t.numel()), DType::F32, 0);
  return t;
}

void send_image(dist::Communicator& w, const Tensor& image) {
  if (!image.defined()) return;
  Tensor c = image.to(DType::F32).contiguous();
  w.broadcast(c.data_ptr(), static_cast<size_t>(c.numel()), DType::F32, 0);
}

}  // namespace

MeshChannel::MeshChannel(dist::Communicator& world) : world_(world) {}

void MeshChannel::send_job(const MeshJob& job) {
  VIDAX_CHECK(rank() == 0, "only rank 0 sends jobs (this is rank " << rank() << ")");
  nlohmann::json shapes = nlohmann::json::array();
  for (const Tensor& k : job.key_images) {
    VIDAX_CHECK(k.defined() && k.dim() == 3, "a job's keyframe must be [3, H, W], got " << (k.defined() ? k.str() : "none"));
    shapes.push_back({k.size(0), k.size(1), k.size(2)});
  }
  const std::string text =
      nlohmann::json{{"id", job.id}, {"spec", job.spec}, {"unload", job.unload}, {"key_shapes", shapes}}.dump();
  Header h;
  h.kind = kJob;
  h.json_bytes = text.size();
  put_shape(job.image, h.image);
  put_shape(job.last_image, h.last_image);
  world_.broadcast_patient(&h, kHeaderWords, DType::U64, 0);
  broadcast_bytes(world_, const_cast<char*>(text.data()), text.size());
  send_image(world_, job.image);
  send_image(world_, job.last_image);
  for (const Tensor& k : job.key_images) send_image(world_, k);
}

void MeshChannel::send_stop() {
  VIDAX_CHECK(rank() == 0, "only rank 0 stops the others (this is rank " << rank() << ")");
  Header h;
  h.kind = kStop;
  world_.broadcast_patient(&h, kHeaderWords, DType::U64, 0);
}

std::optional<MeshJob> MeshChannel::receive() {
  VIDAX_CHECK(rank() != 0, "rank 0 sends the jobs; it does not receive them");
  Header h;
  world_.broadcast_patient(&h, kHeaderWords, DType::U64, 0);  // the wait between jobs: no spinning
  if (h.kind == kStop) return std::nullopt;
  VIDAX_CHECK(h.kind == kJob, "rank " << rank() << ": unknown message " << h.kind << " from rank 0");
  std::string text(h.json_bytes, '\0');
  broadcast_bytes(world_, text.data(), text.size());
  MeshJob job;
  const nlohmann::json j = nlohmann::json::parse(text);
  job.id = j.at("id");
  job.spec = j.at("spec");
  job.unload = j.at("unload").get<std::vector<std::string>>();
  job.image = receive_image(world_, h.image);
  job.last_image = receive_image(world_, h.last_image);
  for (const auto& sh : j.at("key_shapes")) {
    const uint64_t s3[3] = {sh.at(0).get<uint64_t>(), sh.at(1).get<uint64_t>(), sh.at(2).get<uint64_t>()};
    job.key_images.push_back(receive_image(world_, s3));
  }
  return job;
}

bool MeshChannel::agree_cancel(bool mine) {
  uint8_t flag = mine ? 1 : 0;
  world_.broadcast(&flag, 1, DType::U8, 0);
  return flag != 0;
}

std::string MeshChannel::agree_errors(const std::string& error) {
  const std::vector<std::string> all = world_.settle(error, kMaxMessage);
  std::vector<std::pair<int, std::string>> failed;
  for (int r = 0; r < size(); ++r)
    if (!all[static_cast<size_t>(r)].empty()) failed.emplace_back(r, all[static_cast<size_t>(r)]);
  if (failed.empty()) return "";
  const bool same = std::all_of(failed.begin(), failed.end(), [&](const auto& f) { return f.second == failed[0].second; });
  if (same && failed.size() == static_cast<size_t>(size())) return failed[0].second;
  std::string out;
  for (const auto& [r, m] : failed) out += (out.empty() ? "" : "; ") + ("rank " + std::to_string(r) + ": " + m);
  return out;
}

void MeshChannel::run_agreed(const std::function<void()>& f) {
  std::exception_ptr cancelled;
  std::string error;
  abandoned_.clear();
  try {
    f();
  } catch (const pipeline::Cancelled&) {
    cancelled = std::current_exception();
  } catch (const dist::PeerFailed& e) {
    abandoned_ = e.what();
  } catch (const std::exception& e) {
    error = e.what();
    if (error.empty()) error = "an error without a message";
  }
  if (world_.abandoned() && abandoned_.empty()) abandoned_ = "after another rank's failure notice: " + error;
  // A collective abandoned on another rank's failure notice (dist::PeerFailed, or whatever the
  // code it unwound through made of it): the failing rank's message is the job's, not this one.
  if (world_.abandoned()) {
    error.clear();
    cancelled = nullptr;
  }
  // This rank failed: wake the others wherever they wait (a collective of the model, the cancel
  // broadcast), then every rank agrees on a channel no job collective uses.
  if (!error.empty()) world_.report_failure(error);
  const std::string all = agree_errors(error);
  if (!all.empty()) throw Error(all);
  if (cancelled) std::rethrow_exception(cancelled);
}

void MeshChannel::check_same(const std::string& what, const std::string& mine) {
  uint64_t n = mine.size();
  world_.broadcast(&n, 1, DType::U64, 0);
  std::string root(n, '\0');
  if (rank() == 0) root = mine;
  broadcast_bytes(world_, root.data(), root.size());
  const std::string all =
      agree_errors(root == mine ? "" : what + " differ: rank 0 has " + root + ", this rank " + mine);
  VIDAX_CHECK(all.empty(), all);
}

}  // namespace vidax::serve
