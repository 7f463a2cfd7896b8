// Record and replay of a run (`vidax generate --record DIR` / `--replay DIR`; docs/generate.md,
// "Record and replay"; docs/parity.md, "Record and replay").
//
// A record is a folder: record.json (the index) and safetensors files of F32 tensors:
//   noise.safetensors      "noise"   the initial latent (drawn from the seed, or the --noise file)
//   step_NNNN.safetensors  "latent"  the latent after step NNNN (1-based), and "noise" when the
//                                    sampler drew fresh noise during that step (lightx2v)
//   final.safetensors      "latents" the final latent (what the VAE decodes)
// The same files come from the reference pipeline (tools/golden/record_reference.py), so a
// reference run, on its own device and generator, replays here: the replay injects the recorded
// noise in place of every draw, runs the recorded request and compares each step's latent with
// the record, stopping at the first step beyond the bound.
//
// A run with several latent streams (a family that owns its run: LTX-2's video and audio) writes
// format version 2 (Events::on_stream_*): the same files, each holding one tensor per stream under
// the stream's name (noise.safetensors: every initial draw, in the order drawn; step_NNNN: each
// stream's latent after the step; final: each stream's final latent), and the index lists the
// streams (name, shape, final_shape). A one-latent run still writes version 1; both are read.
#pragma once
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"
#include "pipeline/generate.h"

namespace vidax::io {
class PendingOutput;
}

namespace vidax::pipeline {

inline constexpr const char* kRecordFormat = "vidax.record";
inline constexpr int kRecordFormatVersion = 1;
inline constexpr int kRecordFormatVersionStreams = 2;  // several latent streams (see above)
inline constexpr const char* kRecordIndex = "record.json";

// The request's sampling settings under request_from_json's field names (prompt,
// negative_prompt, frames, height, width, steps, seed, guidance, shift, sampler) plus the
// truncated-CFG range (cfg_from_step, cfg_to_step).
nlohmann::json request_to_json(const Request& r);

// What the index says besides the tensors: who made it, which model, at what precision.
struct RecordHeader {
  nlohmann::json producer;  // {"name": "vidax", "version": ...} or the reference script's
  std::string model;        // the variant (vidax models), e.g. "wan2.1-tiny-demo"
  std::string family;       // e.g. "wan"
  std::string precision;    // fp32 | bf16: the denoiser's compute precision
  nlohmann::json request;   // request_to_json
  bool noise_from_seed = true;  // false: the initial noise came from a file (or another generator)
};

// Writes a record while a run goes: each tensor into a hidden folder `.DIR.partial-PID` beside
// DIR as it comes, the index and the final latent at commit(), then the folder renamed to DIR.
// Nothing of a failed or interrupted run is left (the destructor removes the partial folder).
class RecordWriter {
 public:
  // Refuses, naming DIR: an existing DIR that is not an empty folder (a record is never
  // overwritten: remove it first), a link, a missing parent folder.
  explicit RecordWriter(std::string dir);
  ~RecordWriter();
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;

  // Chains on_noise and on_latent onto `ev` (any callbacks already there still run first).
  void attach(Events& ev);
  // The final latent and the index (header, the run's timesteps, negative prompt used, each
  // step's files), then the rename into place. Returns the index written.
  nlohmann::json commit(const RecordHeader& header, const Result& result);
  const std::string& dir() const { return dir_; }

 private:
  void write(const std::string& file, const std::map<std::string, Tensor>& tensors);
  std::string dir_;
  std::unique_ptr<io::PendingOutput> out_;
  Shape shape_;
  bool have_noise_ = false;
  std::map<int, Tensor> pending_noise_;  // step -> the noise drawn during it, until its latent comes
  nlohmann::json steps_ = nlohmann::json::array();
  // Several streams (version 2): the draws until the first step writes them, each stream's shape.
  StreamTensors stream_noise_;
  bool stream_noise_written_ = false;
  std::vector<std::pair<std::string, Shape>> stream_shapes_;
  StreamTensors stream_final_;
  nlohmann::json stream_index(const nlohmann::json& common);
};

// One latent stream of a version-2 record: its name, the shape of its per-step latents and of its
// final latent (LTX-2: the patchified state [T, 128] and the decoders' [128, F', h, w] / [8, T, 16]).
struct RecordStream {
  std::string name;
  Shape shape, final_shape;
};

// A record read back: the index, checked, and its tensors (loaded when read).
struct Record {
  std::string dir;
  nlohmann::json index;
  RecordHeader header;
  std::vector<double> timesteps;
  Shape latent_shape;
  Tensor noise;                      // the initial latent
  std::vector<Tensor> latents;       // latents[i] after step i+1
  std::map<int, Tensor> step_noise;  // step (1-based) -> the sampler's draw during it
  Tensor final_latents;
  // Version 2 (several streams); empty for a version-1 record. The fields above are then unset.
  std::vector<RecordStream> streams;
  StreamTensors stream_noise;                         // every initial draw, in the order drawn
  std::vector<std::map<std::string, Tensor>> stream_latents;  // [i]: each stream after step i+1
  std::map<std::string, Tensor> stream_final;
  bool has_streams() const { return !streams.empty(); }
  std::string stream_names() const;  // "video, audio" (version 1: "one latent")
};

// Reads and checks DIR: the format and version, every field the replay needs (named when
// missing or of the wrong type), every file and tensor the index names, each tensor's shape
// against latent_shape, one latent per step. Throws vidax::Error naming DIR, the file and the field.
Record read_record(const std::string& dir);

// The request a record ran (request_from_json over the index's request, plus the CFG range).
Request record_request(const Record& rec, const std::string& default_negative_prompt);

// One compared step (0 = the final latent), measured by parity::compare.
struct StepError {
  int step = 0;
  std::string stream;  // the stream compared (a version-2 record); empty for one latent
  double timestep = 0;
  double max_abs = 0, mean_abs = 0, rel_l2 = 0;
  bool ok = true;
};

struct ReplayReport {
  double tolerance = 0;  // the bound on each step's relative L2
  // The seed's own CPU draw against the recorded initial noise: true = bit-identical (a CPU
  // generator's record); false = the record's noise came from elsewhere (a CUDA generator, a
  // file), injected either way.
  bool noise_matches_seed = false;
  std::vector<StepError> steps;  // in order; the last is the first beyond the bound when diverged
  std::optional<StepError> final;  // several streams: the one with the largest rel_l2
  std::vector<StepError> finals;   // several streams: each stream's final latent
  int diverged_at = 0;  // 0 = every step within the bound
  nlohmann::json to_json() const;
};

// Thrown by the replay's on_latent at the first step beyond the bound (the report says which).
class ReplayDiverged : public Error {
 public:
  using Error::Error;
};

// The default bound on a step's relative L2: the parity contract's (parity::default_rtol,
// docs/parity.md), 1e-5 when both the record and the replay ran fp32, 1e-2 when either ran bf16.
double default_replay_tolerance(const std::string& record_precision, const std::string& replay_precision);

// Replays a record: request.noise := the recorded noise, re-noising draws replaced by the
// recorded ones, each step's latent compared (max-abs, mean-abs, relative L2). The request must
// be the record's (record_request); its schedule is checked against the recorded timesteps here.
// A version-2 record (several streams) is replayed through Events::on_stream_*: each initial
// draw replaced by the recorded one of the same stream (in the same order), each step's
// timestep checked and every stream's latent compared (all of a step's streams are measured
// before a divergence stops the run). A record of one latent replayed by a run of several
// streams, or the reverse, or another stream set, is refused naming both.
class Replayer {
 public:
  Replayer(const Record& rec, Request& request, double tolerance);
  // Sets replace_noise and chains on_latent (which throws ReplayDiverged past the bound, and
  // vidax::Error when the run draws noise where the record has none, or the reverse), and the
  // stream events likewise.
  void attach(Events& ev);
  // Compares the final latent (after a run that finished).
  void finish(const Result& result);
  const ReplayReport& report() const { return report_; }

 private:
  const Record& rec_;
  ReplayReport report_;
  std::map<int, bool> drawn_;  // steps whose recorded noise the run took
  size_t stream_draws_ = 0;    // initial draws taken (several streams)
  bool noise_checked_ = false;  // several streams: noise_matches_seed set from the run's own draws
  StreamTensors final_;        // several streams: the run's final latents (on_stream_final)
  void check_stream_set(const StreamTensors& got, const char* what) const;
};

}  // namespace vidax::pipeline
