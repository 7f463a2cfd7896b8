// Runs recorded programs through one PJRT client (docs/pjrt.md): lower (stablehlo.h), compile
// once per program (an in-memory table, then a compile cache on disk keyed by the program's hash
// and the plugin's versions), upload the weights once and keep them resident, execute, read back.
//
//   pjrt::Session& s = pjrt::Session::get(plugin_path);
//   Trace trace;  Tensor x_meta = Tensor::empty(x.shape(), x.dtype(), Device::Meta);
//   { RecordingScope rec(trace); y_meta = model.forward(x_meta, ...); }
//   std::vector<Tensor> y = s.run(trace, {y_meta}, {{x_meta, x}});
//
// A trace's Param records that are host tensors (CPU weights read by Meta ops) are uploaded at
// their first run and stay on the device for the session's life, keyed by the host tensor's
// identity (its buffer is held, so the key is never reused). Input records take the host
// tensor bound to their Meta tensor; a Param without values (a shape-only Meta weight) or an
// unbound Input is an error naming it.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/pjrt/plugin.h"
#include "backend/pjrt/stablehlo.h"

namespace vidax::pjrt {

struct SessionStats {
  int64_t compiles = 0;      // programs compiled by the plugin in this process
  int64_t disk_hits = 0;     // programs loaded from the compile cache on disk
  int64_t memory_hits = 0;   // runs of a program already loaded
  int64_t runs = 0;
  int64_t uploads = 0;       // parameter uploads (weights: once each)
  int64_t lowerings = 0;     // traces lowered to StableHLO (prepare)
  double lower_s = 0;        // seconds spent lowering
  double compile_s = 0;      // seconds in compile + cache loads
  double last_compile_s = 0;
};

// A trace lowered and compiled once (Session::prepare), to be run many times with new inputs
// (the denoise loop: one per shape, no lowering or compile per step). Holds no device memory of
// its own: the weights it reads are the session's resident buffers.
struct Program {
  Lowered lowered;
  std::string key;                         // the compile cache key (Session::cache_key)
  const Executable* exe = nullptr;         // owned by the session
  std::vector<const Buffer*> resident;     // per argument: the resident weight, or nullptr (an input)
};

class Session {
 public:
  // The process's session for this plugin (created at first use). cache_dir: the compile cache
  // ($VIDAX_PJRT_CACHE when set, else $XDG_CACHE_HOME/vidax/pjrt or ~/.cache/vidax/pjrt; "-" = none;
  // the tests set it to a temporary folder).
  static Session& get(const std::string& plugin_path);
  explicit Session(const std::string& plugin_path, std::string cache_dir = default_cache_dir());
  static std::string default_cache_dir();

  const Client& client() const { return *client_; }
  const SessionStats& stats() const { return stats_; }
  const std::string& cache_dir() const { return cache_dir_; }

  // Runs the part of `trace` that `outputs` (Meta tensors of the trace) depend on; `inputs` binds
  // each Input record's Meta tensor to its host value. Returns host tensors, one per output
  // (prepare + run: lowered each call, compiled once).
  std::vector<Tensor> run(const Trace& trace, const std::vector<Tensor>& outputs,
                          const std::vector<std::pair<Tensor, Tensor>>& inputs, const LowerOptions& opt = {});

  // Lowers the part of `trace` that `outputs` depend on, compiles it (or takes it from memory or
  // the compile cache on disk) and uploads the weights it reads that are not resident yet.
  // `inputs`: the Meta tensors that will be bound at each run (an Input record, or a Param the
  // caller binds); every other Param must have host values (uploaded once, kept resident).
  std::shared_ptr<const Program> prepare(const Trace& trace, const std::vector<Tensor>& outputs,
                                         const std::vector<Tensor>& inputs, const LowerOptions& opt = {});
  // Runs a prepared program: `inputs` binds each input's Meta tensor (those given to prepare) to
  // its host value for this run. Returns host tensors, one per output.
  std::vector<Tensor> run(const Program& program, const Trace& trace,
                          const std::vector<std::pair<Tensor, Tensor>>& inputs);

  // The cache key of a lowered program on this plugin: hash of the text + the plugin's versions.
  std::string cache_key(const std::string& mlir) const;

 private:
  const Executable& executable(const std::string& mlir);
  const Buffer& resident(const Trace& trace, const OpRecord& r);

  std::shared_ptr<Plugin> plugin_;
  std::unique_ptr<Client> client_;
  std::string cache_dir_;
  SessionStats stats_;
  std::map<std::string, Executable> programs_;
  struct Resident {
    std::shared_ptr<::vidax::Buffer> host;  // held: its address is the key
    Buffer device;
  };
  std::map<Trace::HostKey, Resident> params_;
};

// The trace id of a Meta tensor recorded in `trace` (an error naming it when it is not).
int64_t trace_id(const Trace& trace, const Tensor& t);

}  // namespace vidax::pjrt
