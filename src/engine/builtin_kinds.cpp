// The golden-file kinds `vidax parity` knows: the shared components' (rng, schedulers, text
// encoders), then every registered family's (engine/families.cpp). The parity core (src/parity)
// only holds the registry; each family's kinds live with the family, and this top layer, which
// may include them all, registers them (no static initializers in the layers below).
#include "engine/builtin_kinds.h"

#include <mutex>

#include "engine/families.h"
#include "models/hunyuan15/dit_parity.h"
#include "models/hunyuan15/text_byt5.h"
#include "models/hunyuan15/text_encoder.h"
#include "models/hunyuan15/vae_parity.h"
#include "models/ltx2/audio_processor.h"
#include "models/ltx2/audio_vae.h"
#include "models/ltx2/checkpoint_keys.h"
#include "models/ltx2/dit_parity.h"
#include "models/ltx2/pipeline_parity.h"
#include "models/ltx2/text_connector.h"
#include "models/ltx2/text_encoder.h"
#include "models/ltx2/upsampler.h"
#include "models/ltx2/video_vae.h"
#include "models/ltx2/vocoder.h"
#include "parity/parity.h"
#include "text/clip_text.h"
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
    for (const pipeline::Family* f : families()) f->register_parity_kinds();  // wan.*, hunyuan.dit, hunyuan.vae.*, hunyuan.text.*, hunyuan.pipeline.t2v
    vidax::hunyuan15::register_dit_parity_kinds();  // hunyuan1.5.dit (no HunyuanVideo 1.5 Family yet)
    vidax::hunyuan15::register_vae_parity_kinds();  // hunyuan1.5.vae.decode, hunyuan1.5.vae.encode
    vidax::hunyuan15::register_text_parity_kinds();  // hunyuan1.5.text.qwen
    vidax::hunyuan15::register_byt5_parity_kind();   // hunyuan1.5.text.byt5
    vidax::ltx2::register_vocoder_parity_kinds();  // ltx2.vocoder (no ltx2 Family yet)
    vidax::ltx2::register_audio_processor_parity_kind();  // ltx2.audio_processor
    vidax::ltx2::register_audio_vae_parity_kinds();  // ltx2.audio_vae.decode, ltx2.audio_vae.encode
    vidax::ltx2::register_dit_parity_kinds();  // ltx2.dit (no ltx2 Family yet)
    vidax::ltx2::register_pipeline_parity_kinds();  // ltx2.pipeline.t2v
    vidax::ltx2::register_video_vae_parity_kinds();  // ltx2.vae.decode, ltx2.vae.encode
    vidax::ltx2::register_text_parity_kinds();  // ltx2.text.gemma3
    vidax::ltx2::register_connector_parity_kind();  // ltx2.text.connector
    vidax::ltx2::register_upsampler_parity_kinds();  // ltx2.upsampler
  });
}

void register_builtin_components() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const pipeline::Family* f : families())
      for (const translate::Component* c : f->components()) translate::register_component(*c);
    translate::register_component(translate::t5::umt5_component());  // text encoders (text/)
    translate::register_component(text::llama_component());
    translate::register_component(text::qwen25_vl_text_component());
    translate::register_component(text::clip_text_component());
    // LTX-2's components (models/ltx2/checkpoint_keys.h) until the ltx2 Family lists them (a second
    // registration of the same component is a no-op).
    translate::register_component(ltx2::dit_component());
    translate::register_component(ltx2::video_vae_component());
    translate::register_component(ltx2::video_vae_encoder_component());
    translate::register_component(ltx2::video_vae_decoder_component());
    translate::register_component(ltx2::audio_vae_component());
    translate::register_component(ltx2::audio_vae_encoder_component());
    translate::register_component(ltx2::audio_vae_decoder_component());
    translate::register_component(ltx2::vocoder_component());
    translate::register_component(ltx2::vocoder_bwe_component());
  });
}

void register_builtins() {
  register_builtin_kinds();
  register_builtin_components();
}

}  // namespace vidax::engine
