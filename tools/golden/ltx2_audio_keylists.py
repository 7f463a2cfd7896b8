"""Key lists (state dict name -> shape) of the LTX-2 audio VAE halves and the vocoder as the OFFICIAL
ltx_core classes build them (Lightricks/LTX-2 400fd31, from $LTX2_CORE) with the configurators'
defaults, on the meta device: AudioEncoderConfigurator / AudioDecoderConfigurator.from_metadata with an
empty `audio_vae` dict, X.
Written to tests/translate/data/ltx2_audio_keys.json; tests/translate/test_ltx2_keys.cpp checks the
ltx2-audio-vae* and ltx2-vocoder components against them.

Usage: /work/venv-golden/bin/python tools/golden/ltx2_audio_keylists.py [OUT_DIR]
"""
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.environ.get("LTX2_CORE", "/work/ref/ltx2/packages/ltx-core/src"))
from ltx_core.model.audio_vae.model_configurator import (  # noqa: E402
    AudioDecoderConfigurator,
    AudioEncoderConfigurator,
    VocoderConfigurator,
)

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "tests", "translate", "data")


def main():
    # The vocoder configurator checks resblock "1" and stereo (its only fixed values).
    meta = {"config": {"audio_vae": {}, "vocoder": {"resblock": "1", "stereo": True}}}
    with torch.device("meta"):
        enc = AudioEncoderConfigurator.from_metadata(meta)
        dec = AudioDecoderConfigurator.from_metadata(meta)
        voc = VocoderConfigurator.from_metadata(meta)
    out = {name: {k: list(v.shape) for k, v in m.state_dict().items()}
           for name, m in (("audio_vae_encoder", enc), ("audio_vae_decoder", dec), ("vocoder", voc))}
    path = os.path.join(OUT, "ltx2_audio_keys.json")
    with open(path, "w") as f:
        json.dump({"source": "Lightricks/LTX-2 400fd31 ltx_core configurators, default configs", **out}, f,
                  indent=0, sort_keys=True)
        f.write("\n")
    print(f"wrote {path}: " + ", ".join(f"{k} {len(v)} keys" for k, v in out.items()))


if __name__ == "__main__":
    main()
