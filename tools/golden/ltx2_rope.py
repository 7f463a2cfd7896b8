"""Reference positions, RoPE tables and rotated queries for the LTX-2 RoPE module
(src/models/ltx2/rope.h), from the official Lightricks/LTX-2 ltx-core (400fd31):
  - video positions: VideoLatentPatchifier.get_patch_grid_bounds -> get_pixel_coords(causal_fix=True)
    -> frame axis / fps, as VideoLatentTools.create_initial_state builds them ([B, 3, T, 2] bounds);
  - audio positions: AudioPatchifier.get_patch_grid_bounds (seconds, [B, 1, T, 2]);
  - precompute_freqs_cis with generate_freq_grid_np (the fp64 frequency build), use_middle_indices_grid,
    in the split and the interleaved layouts, for the video, the audio and the cross-modal temporal
    (video positions[:, 0:1], max_pos [max(20, 20)]) tables;
  - apply_rotary_emb of a random q [1, T, dim] with each table.

Written to tests/golden/ltx2/ltx2_rope.safetensors (metadata "cases": the case list as JSON).
Usage: PYTHONPATH=/work/ref/ltx2/packages/ltx-core/src python tools/golden/ltx2_rope.py [OUT_DIR]
"""
import json
import os
import sys

import torch
from safetensors.torch import save_file

from ltx_core.components.patchifiers import AudioPatchifier, VideoLatentPatchifier, get_pixel_coords
from ltx_core.model.transformer.rope import (LTXRopeType, apply_rotary_emb, generate_freq_grid_np,
                                             precompute_freqs_cis)
from ltx_core.types import AudioLatentShape, SpatioTemporalScaleFactors, VideoLatentShape

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "tests", "golden", "ltx2")


def video_positions(f, h, w, fps):
    bounds = VideoLatentPatchifier(patch_size=1).get_patch_grid_bounds(
        VideoLatentShape(batch=1, channels=8, frames=f, height=h, width=w))
    pos = get_pixel_coords(bounds, SpatioTemporalScaleFactors.default(), causal_fix=True).float()
    pos[:, 0, ...] = pos[:, 0, ...] / fps  # VideoLatentTools.create_initial_state
    return pos


def audio_positions(frames):
    return AudioPatchifier(patch_size=16).get_patch_grid_bounds(
        AudioLatentShape(batch=1, channels=8, frames=frames, mel_bins=16))


def main():
    torch.manual_seed(0)
    os.makedirs(OUT, exist_ok=True)
    t = {}
    cases = []
    vid = video_positions(3, 2, 3, 24.0)
    aud = audio_positions(7)
    t["video.positions"] = vid[0].contiguous()
    t["audio.positions"] = aud[0].contiguous()
    # (name, positions, dim, heads, max_pos); dims chosen so split pads (dim/2 > 3F) and interleaved pads
    # (dim % 6 != 0) on the video tables.
    specs = [("video", vid, 64, 2, [20, 2048, 2048]), ("video_pad", vid, 80, 4, [20, 2048, 2048]),
             ("audio", aud, 32, 2, [20]), ("cross", vid[:, 0:1], 32, 2, [20]),
             ("cross_audio", aud, 32, 2, [20])]
    for name, pos, dim, heads, max_pos in specs:
        q = torch.randn(1, pos.shape[2], dim)
        t[f"{name}.q"] = q
        for layout in (LTXRopeType.SPLIT, LTXRopeType.INTERLEAVED):
            cos, sin = precompute_freqs_cis(pos, dim=dim, out_dtype=torch.float32, theta=10000.0, max_pos=max_pos,
                                            use_middle_indices_grid=True, num_attention_heads=heads,
                                            rope_type=layout, freq_grid_generator=generate_freq_grid_np)
            key = f"{name}.{layout.value}"
            t[key + ".cos"] = cos[0].contiguous()
            t[key + ".sin"] = sin[0].contiguous()
            t[key + ".out"] = apply_rotary_emb(q, (cos, sin), layout).contiguous()
        cases.append({"name": name, "dim": dim, "heads": heads, "max_pos": max_pos})
    path = os.path.join(OUT, "ltx2_rope.safetensors")
    save_file(t, path, metadata={"reference": "Lightricks/LTX-2 400fd31 ltx_core rope.py + patchifiers.py",
                                 "cases": json.dumps(cases), "video": json.dumps({"f": 3, "h": 2, "w": 3, "fps": 24.0}),
                                 "audio": json.dumps({"frames": 7})})
    print("wrote", path, {k: list(v.shape) for k, v in t.items()})


if __name__ == "__main__":
    main()
