// Per-op timing for `vidax bench --profile`: a Backend that forwards every op to
// the CPU backend and accumulates wall and process-CPU time per op name and per
// class (GEMM, attention, norms/elementwise, layout copies and casts). Time spent
// outside the op set (host code, allocation) is what remains of the step.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace vidax::pipeline {

struct OpTime {
  int64_t calls = 0;
  double wall = 0, cpu = 0;
  // Multiply-add FLOPs (2 per MAC) the op executed: GEMMs (linear*, matmul), attention (q k^T and
  // p v over the keys kv_lens leaves), convolutions; 0 for every other op.
  double flops = 0;
};

struct OpProfile {
  std::map<std::string, OpTime> ops;  // by op name (linear, attention, layer_norm_modulate, ...)
  double total_wall = 0, total_cpu = 0;  // the profiled region, ops and everything between them
  // Class of an op name: gemm | attention | norms_elementwise | layout_copies | other.
  static const char* op_class(const std::string& op);
  double total_flops() const;  // the sum of every op's flops
  nlohmann::json to_json() const;  // {"ops": {...}, "classes": {...}, "summary": {class: cpu share}}
};

// Routes CPU ops through a timing backend for its lifetime.
class ScopedOpProfiler {
 public:
  explicit ScopedOpProfiler(OpProfile& profile);
  ~ScopedOpProfiler();
  ScopedOpProfiler(const ScopedOpProfiler&) = delete;
  ScopedOpProfiler& operator=(const ScopedOpProfiler&) = delete;

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace vidax::pipeline
