"""Golden files for LTX-2 LoRAs (docs/lora.md, docs/models/ltx2.md): a tiny OFFICIAL ltx_core LTXModel
(Lightricks/LTX-2 400fd31, LTXModelConfigurator, the LTX-2.3-style config of ltx2_dit_av23: gated
attention, cross-attention AdaLN with the prompt AdaLN, bias-free video FFN; 1 block to keep the files small), a LoRA made the
way ltx-trainer makes one (peft LoraConfig(r, lora_alpha, target_modules) + get_peft_model, trainer.py
_setup_lora) on the trainer's module list for audio-video training with the FFNs (configs/t2v_lora.yaml's
"to_k", "to_q", "to_v", "to_out.0" -- every attention: video and audio self / text attention and both
cross-modal directions -- plus "ff.net.0.proj", "ff.net.2", "audio_ff.net.0.proj", "audio_ff.net.2"),
rank 4, lora_alpha 8 (alpha != rank), random A and B. Each golden is a kind ltx2.dit file whose params are
the BASE weights (official names): the engine must read the LoRA file and merge it to match `output.*`.

Files written to tests/golden/lora/ (golden <name>.safetensors next to <name>.lora.safetensors;
__metadata__.lora says the file and the scale):
  ltx2_lora_trainer   the file exactly as ltx-trainer's _save_checkpoint writes it:
                      get_peft_model_state_dict, "base_model.model." removed, "diffusion_model." added,
                      lora_A / lora_B, no alpha anywhere (the strategy's metadata only). Reference: ltx-core's
                      own LoRA fusion (loader/fuse_loras.apply_loras with the LTXV_LORA_COMFY_RENAMING_MAP
                      key ops, W + strength * B @ A: ltx-core applies no alpha / rank), aggregated in fp32
                      (the rule's own fp32 variant, as device_fuse_rule makes it), at strength 0.7.
  ltx2_lora_comfyui   the same A / B as a ComfyUI LoRA: diffusion_model.<module>.lora_down.weight /
                      .lora_up.weight / .alpha (= lora_alpha). Reference: the peft model itself (its LoRA
                      layers, scaling = scale * alpha / r, LoraLayer.scale_layer(1.3)) run forward.
Both check that the LoRA changes the output (a golden passes only when the LoRA was applied right).

Usage: /work/venv-golden/bin/python tools/golden/ltx2_lora.py [OUT_DIR]
"""
import dataclasses
import json
import os
import sys

import torch
from safetensors.torch import save_file

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ltx2_dit import AV, BASE, CONFIGURATORS, audio_positions, init_params, modality, video_positions  # noqa: E402

from ltx_core.loader.fuse_loras import apply_loras, bf16_fuse_rule  # noqa: E402
from ltx_core.loader.primitives import LoraStateDictWithStrength, StateDict  # noqa: E402
from ltx_core.loader.sd_ops import LTXV_LORA_COMFY_RENAMING_MAP  # noqa: E402
from peft import LoraConfig, get_peft_model, get_peft_model_state_dict  # noqa: E402
from peft.tuners.lora import LoraLayer  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "tests", "golden", "lora")
CFG = {**BASE, "apply_gated_attention": True, "cross_attention_adaln": True, "use_prompt_adaln_single": True,
       "ff_bias": False, "num_layers": 1}
TARGETS = ["to_k", "to_q", "to_v", "to_out.0", "ff.net.0.proj", "ff.net.2", "audio_ff.net.0.proj", "audio_ff.net.2"]
RANK, ALPHA = 4, 8


def build(seed):
    torch.manual_seed(seed)
    model = CONFIGURATORS[AV].from_metadata({"config": {"transformer": CFG}}).to_empty(device="cpu").float().eval()
    init_params(model)
    return model


def inputs(seed):
    torch.manual_seed(seed)
    tensors = {}
    f, h, w, frames, text = 2, 2, 2, 5, 4
    dv = CFG["num_attention_heads"] * CFG["attention_head_dim"]
    da = CFG["audio_num_attention_heads"] * CFG["audio_attention_head_dim"]
    sigma, asigma = torch.tensor([0.6]), torch.tensor([0.45])
    video = modality("video", torch.randn(1, f * h * w, CFG["in_channels"]), sigma, sigma[:, None].repeat(1, f * h * w),
                     video_positions(1, f, h, w, 24.0), torch.randn(1, text, dv), None, tensors)
    audio = modality("audio", torch.randn(1, frames, CFG["audio_in_channels"]), asigma, asigma[:, None].repeat(1, frames),
                     audio_positions(1, frames), torch.randn(1, text, da), None, tensors)
    return video, audio, tensors


def forward(model, video, audio):
    with torch.no_grad():
        vx, ax = model(video, audio, None)
    return vx.contiguous(), ax.contiguous()


def save_golden(name, base_state, io, vx, ax, lora_file, scale, reference):
    tensors = {**base_state, **io, "output.video": vx, "output.audio": ax}
    meta = {"kind": "ltx2.dit", "config": json.dumps({**CFG, "model_type": AV}), "generator": "tools/golden/ltx2_lora.py",
            "reference": reference, "torch": torch.__version__, "lora": json.dumps({"file": lora_file, "scale": scale})}
    path = os.path.join(OUT, name + ".safetensors")
    save_file(tensors, path, metadata=meta)
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")


def main():
    os.makedirs(OUT, exist_ok=True)
    model = build(11)
    base_state = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    video, audio, io = inputs(12)
    base_v, base_a = forward(model, video, audio)

    # The trainer's adapter (trainer.py _setup_lora), then random A and B (a trained LoRA's are not zero).
    peft_model = get_peft_model(model, LoraConfig(r=RANK, lora_alpha=ALPHA, target_modules=TARGETS, lora_dropout=0.0,
                                                  init_lora_weights=True))
    torch.manual_seed(13)
    with torch.no_grad():
        for n, p in peft_model.named_parameters():
            if "lora_A" in n:
                p.copy_(torch.randn_like(p) / p.shape[1] ** 0.5)
            elif "lora_B" in n:
                p.copy_(0.5 * torch.randn_like(p) / p.shape[1] ** 0.5)
    # trainer.py _save_checkpoint's LoRA branch.
    sd = get_peft_model_state_dict(peft_model)
    sd = {k.replace("base_model.model.", "", 1): v for k, v in sd.items()}
    sd = {f"diffusion_model.{k}": v.to(torch.float32).contiguous() for k, v in sd.items()}
    modules = sorted({k.rsplit(".lora_", 1)[0] for k in sd})
    print(f"{len(modules)} LoRA modules, e.g. {modules[:3]}")
    assert len(modules) == 28 * CFG["num_layers"], len(modules)  # 6 attentions x 4 + 2 FFNs x 2 per block
    for stream in ("attn1", "audio_attn2", "audio_to_video_attn", "video_to_audio_attn", ".ff.", "audio_ff"):
        assert any(stream in m for m in modules), stream

    # 1. The trainer's file, fused by ltx-core (W + strength * B @ A), fp32 aggregation.
    trainer_file = "ltx2_lora_trainer.lora.safetensors"
    save_file(sd, os.path.join(OUT, trainer_file), metadata={})
    strength = 0.7
    lora_sd = {LTXV_LORA_COMFY_RENAMING_MAP.apply_to_key(k): v for k, v in sd.items()}
    fused = apply_loras(StateDict(dict(base_state), torch.device("cpu"), 0, {torch.float32}),
                        [LoraStateDictWithStrength(StateDict(lora_sd, torch.device("cpu"), 0, {torch.float32}), strength)],
                        fuse_rule=dataclasses.replace(bf16_fuse_rule, aggregation_dtype=torch.float32))
    ref = build(11)
    ref.load_state_dict(fused.sd, strict=True)
    tv, ta = forward(ref, video, audio)
    assert (tv - base_v).abs().max() > 1e-2 and (ta - base_a).abs().max() > 1e-2, "the LoRA does not change the output"
    save_golden("ltx2_lora_trainer", base_state, io, tv, ta, trainer_file, strength,
                "Lightricks/LTX-2 400fd31 ltx_core LTXModel + loader.fuse_loras.apply_loras (fp32 aggregation) of the "
                "ltx-trainer LoRA file")

    # 2. The same A / B as a ComfyUI file with alpha; reference: the peft model, scaled.
    comfy = {}
    for m in modules:
        comfy[f"{m}.lora_down.weight"] = sd[f"{m}.lora_A.weight"]
        comfy[f"{m}.lora_up.weight"] = sd[f"{m}.lora_B.weight"]
        comfy[f"{m}.alpha"] = torch.tensor(float(ALPHA))
    comfy_file = "ltx2_lora_comfyui.lora.safetensors"
    save_file(comfy, os.path.join(OUT, comfy_file))
    scale = 1.3
    for layer in peft_model.modules():
        if isinstance(layer, LoraLayer):
            layer.scale_layer(scale)
    cv, ca = forward(peft_model.base_model.model, video, audio)
    assert (cv - base_v).abs().max() > 1e-2 and (ca - base_a).abs().max() > 1e-2, "the LoRA does not change the output"
    save_golden("ltx2_lora_comfyui", base_state, io, cv, ca, comfy_file, scale,
                f"Lightricks/LTX-2 400fd31 ltx_core LTXModel under peft {__import__('peft').__version__} LoRA layers "
                f"(r {RANK}, lora_alpha {ALPHA}, scale_layer({scale}))")


if __name__ == "__main__":
    main()
