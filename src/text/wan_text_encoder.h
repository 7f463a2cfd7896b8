// Wan's text conditioning, end to end (wan/modules/t5.py T5EncoderModel):
// tokenizer (clean='whitespace', text_len 512) -> UMT5-XXL encoder with the
// attention mask -> each prompt's output trimmed to its token count
// ([u[:v] for u, v in zip(context, seq_lens)]). The DiT zero-pads it back to
// text_len itself.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "text/t5_encoder.h"
#include "text/t5_tokenizer.h"

namespace vidax::text {

struct EncodedPrompts {
  std::vector<Tensor> context;  // per prompt [len_i, dim] (len_i includes </s>)
  std::vector<bool> truncated;  // the prompt was cut to text_len tokens (the CLI warns)
  std::vector<std::string> cleaned;
};

class WanTextEncoder {
 public:
  // checkpoint: models_t5_umt5-xxl-enc-bf16.pth, or a diffusers text_encoder/
  // directory (transformers names), read through the translator's
  // umt5-encoder component: strict, every checkpoint tensor must be an encoder
  // parameter and vice versa. cfg: nullopt = the checkpoint's metadata config,
  // else inferred from the tensor shapes. tokenizer: the google/umt5-xxl/ (or
  // tokenizer/) directory or its spiece.model.
  static WanTextEncoder open(const std::string& checkpoint, const std::string& tokenizer,
                             DType compute_dtype = DType::BF16, int64_t text_len = 512,
                             const std::optional<T5EncoderConfig>& cfg = std::nullopt);

  WanTextEncoder(T5Tokenizer tokenizer, T5Encoder encoder, int64_t text_len = 512);

  EncodedPrompts encode(const std::vector<std::string>& prompts) const;

  const T5Tokenizer& tokenizer() const { return tokenizer_; }
  const T5Encoder& encoder() const { return encoder_; }

 private:
  T5Tokenizer tokenizer_;
  T5Encoder encoder_;
  int64_t text_len_;
};

}  // namespace vidax::text
