// A set of named tensors read from what publishers ship: one file
// (.safetensors, .pth/.pt/.bin from torch.save, .gguf with plain or block-quantized types), a sharded
// *.safetensors.index.json, or a directory of such files. Opening reads only
// headers; get() returns zero-copy views into the mmap'd files where the bytes
// are stored raw (safetensors; torch.save's uncompressed zip entries).
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace vidax::io {

struct TensorInfo {
  std::string name;
  DType dtype;  // U8 for a block-quantized tensor
  Shape shape;
  std::string file;  // the file that holds it
  QuantType quant = QuantType::None;  // GGUF Q8_0, Q4_K, ... (core/quant.h)
  // A scaled fp8/int8 weight (Tensor::scaled): its `<prefix>.scale_weight` is folded into it.
  bool scaled = false;
  size_t nbytes() const {
    if (quant == QuantType::None) return static_cast<size_t>(shape_numel(shape)) * dtype_size(dtype);
    if (shape.empty() || shape_numel(shape) == 0) return 0;
    return static_cast<size_t>(shape_numel(shape) / shape.back()) * quant_row_bytes(quant, shape.back());
  }
  std::string type_name() const {
    if (scaled) return std::string(dtype_name(dtype)) + "*scale";
    return quant == QuantType::None ? dtype_name(dtype) : quant_name(quant);
  }
};

class Checkpoint {
 public:
  // path: a file, a *.safetensors.index.json, or a directory (every
  // *.safetensors / *.pth / *.pt / *.bin / *.gguf file in it, not recursive;
  // a name found in two files is an error). A file's format is sniffed from
  // its first bytes, not its extension. torch.save files holding nested
  // containers flatten to dotted names ({"model": {"w": T}} -> "model.w").
  // Throws vidax::Error naming the file and the problem on malformed input.
  // Tensors from get() are read-only views of the mapped file where the bytes
  // allow (writing through them faults): clone() before modifying in place.
  static Checkpoint open(const std::string& path);

  std::vector<std::string> names() const;  // sorted
  bool contains(const std::string& name) const;
  const TensorInfo& info(const std::string& name) const;  // throws naming the key
  Tensor get(const std::string& name) const;              // throws naming the key
  size_t size() const;
  // safetensors __metadata__ (merged over files; empty for .pth).
  const std::map<std::string, std::string>& metadata() const;

  // The same tensors, but those io::quant_decision (io/quant_policy.h) picks for `type` and
  // `keep` does not name come block-quantized (ggml's reference quantizer, run at get()): how
  // `vidax parity --quantize` runs a golden file's weights. `quantized_names` lists them.
  Checkpoint quantized(QuantType type, const std::function<bool(const std::string&)>& keep = {},
                       std::vector<std::string>* quantized_names = nullptr) const;

  // The same, with the matrices io::quant_decision picks (as for a block type) quantized to a
  // scaled weight (Tensor::quantize_scaled: F8_E4M3, F8_E5M2 or I8) at get().
  Checkpoint scaled(DType type, const std::function<bool(const std::string&)>& keep = {},
                    std::vector<std::string>* quantized_names = nullptr) const;

  struct Impl;
 private:
  std::shared_ptr<Impl> impl_;
};

// The scaled-weight file convention (ComfyUI's "scaled fp8" files, docs/quantization.md): a
// weight `<p>.weight` in F8_E4M3, F8_E5M2 or I8 with a sibling `<p>.scale_weight` (F32, [] or [1]
// per tensor, [rows] per row) computes as weight * scale; a `scaled_fp8` marker tensor (any
// prefix) and `<p>.scale_input` (the activations' scale of fp8 matmuls) carry no weights.
// Returns the scale's name for a weight's name ("" when it does not end in ".weight").
std::string scale_name_for(const std::string& weight_name);
// The tensors to store for `name`: itself, or for a scaled tensor its values and its scale
// (and nothing else: the caller adds the marker).
void split_scaled(const std::string& name, const Tensor& t, std::map<std::string, Tensor>& out);

// Writes tensors (any dtype/strides; stored contiguous) with optional
// __metadata__, to a temporary file renamed into place.
void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

// The same, one tensor in memory at a time: the header from `tensors` (name, dtype, shape), then
// make(name) for each in the file's order (e.g. random weights of a model larger than memory).
struct TensorSpec {
  std::string name;
  DType dtype;
  Shape shape;
};
void save_safetensors_streamed(const std::string& path, const std::vector<TensorSpec>& tensors,
                               const std::function<Tensor(const std::string& name)>& make,
                               const std::map<std::string, std::string>& metadata = {});

}  // namespace vidax::io
