// The golden-file kinds `vidax parity` knows: the shared components' (rng, schedulers, text
// encoders), then every registered family's (engine/families.cpp). The parity core (src/parity)
// only holds the registry; each family's kinds live with the family, and this top layer, which
// may include them all, registers them (no static initializers in the layers below).
#include "engine/builtin_kinds.h"

#include <mutex>

#include "engine/families.h"
#include "models/hunyuan15/dit_parity.h"
#include "models/hunyuan15/pipeline_parity.h"
#include "models/hunyuan15/text_byt5.h"
#include "models/hunyuan15/text_encoder.h"
#include "models/hunyuan15/vae_parity.h"
#include "parity/parity.h"
#include "text/clip_text.h"
#include "text/gemma3_config.h"
#include "text/llama_config.h"
#include "text/qwen2_config.h"
#include "text/umt5_keys.h"
#include "translate/component.h"
#include "sched/parity_kinds.h"
#include "text/t5_parity_kind.h"

namespace vidax::engine {

void register_builtin_kinds() {
  static std::once_flag once;
  std::call_once(once, [] {
    vidax::register_rng_parity_kinds();        // rng.torch_cpu
    vidax::sched::register_parity_kinds();     // sched.flow_unipc, sched.flow_euler, sched.flow_dpmpp
    vidax::text::register_parity_kinds();      // t5.encoder
    for (const pipeline::Family* f : families()) f->register_parity_kinds();  // wan.*, hunyuan.dit, hunyuan.vae.*, hunyuan.text.*, hunyuan.pipeline.t2v, ltx2.*
    vidax::hunyuan15::register_dit_parity_kinds();  // hunyuan1.5.dit (no HunyuanVideo 1.5 Family yet)
    vidax::hunyuan15::register_vae_parity_kinds();  // hunyuan1.5.vae.decode, hunyuan1.5.vae.encode
    vidax::hunyuan15::register_text_parity_kinds();  // hunyuan1.5.text.qwen
    vidax::hunyuan15::register_byt5_parity_kind();   // hunyuan1.5.text.byt5
    vidax::hunyuan15::register_pipeline_parity_kinds();  // hunyuan1.5.pipeline.t2v
  });
}

void register_builtin_components() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const pipeline::Family* f : families())
      for (const translate::Component* c : f->components()) translate::register_component(*c);
    translate::register_component(translate::t5::umt5_component());  // text encoders (text/)
    translate::register_component(text::llama_component());
    translate::register_component(text::gemma3_component());
    translate::register_component(text::qwen25_vl_text_component());
    translate::register_component(text::clip_text_component());
  });
}

void register_builtins() {
  register_builtin_kinds();
  register_builtin_components();
}

}  // namespace vidax::engine
