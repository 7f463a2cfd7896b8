// The lowering: a recorded SSA program (backend/recording.h) -> one StableHLO module as MLIR
// text, in the generic op syntax (`"stablehlo.add"(%a, %b) : (...) -> ...`) and the attribute
// spellings that every plugin of docs/pjrt.md parses (StableHLO 1.13 to 1.20).
//
// Only the records the outputs depend on are lowered. The function's arguments are the Input and
// Param records reached, in trace order (Lowered::args); Constants are inlined. Each op computes
// as the CPU backend does: operands widened to the compute dtype (f64 when the output or an
// operand is F64, else f32), reductions (norm statistics, softmax, GEMM accumulation) in fp32
// always, one conversion into the output's dtype. Dot products carry precision HIGHEST in
// validation mode (LowerOptions::highest, the default): XLA's default rounds fp32 operands to
// bf16 on some devices. Attention never builds the Lq x Lk score matrix when the keys exceed one
// block: a stablehlo.while over key blocks with an online softmax (running max and sum in fp32).
//
// An op outside the lowered set is an Error naming it (docs/pjrt.md lists the set).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "backend/recording.h"

namespace vidax::pjrt {

struct LowerOptions {
  bool highest = true;            // dot precision HIGHEST (validation); false: DEFAULT
  int64_t attention_block = 0;    // keys per block of the online softmax; 0: sized to ~256 MiB of scores
};

struct Lowered {
  std::string mlir;
  std::vector<int64_t> args;      // trace ids of the function's arguments, in order
  std::vector<TensorDesc> arg_descs;
  std::vector<int64_t> outputs;   // trace ids of the results, in order
  std::vector<TensorDesc> out_descs;
  std::vector<std::string> ops;   // the op names lowered (for tests and messages)
};

Lowered lower_to_stablehlo(const Trace& trace, const std::vector<int64_t>& outputs, const LowerOptions& opt = {});

// The op names (OpKind::Op) the lowering supports, sorted.
std::vector<std::string> lowered_op_names();

}  // namespace vidax::pjrt
