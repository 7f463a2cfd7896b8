"""Golden files for kind `hunyuan1.5.image.siglip` (docs/parity.md): HunyuanVideo 1.5's image encoder as
the i2v pipeline runs it, the official VisionEncoder (hyvideo/models/vision_encoder/__init__.py,
Tencent-Hunyuan/HunyuanVideo-1.5 60783e7) loaded the way _load_vision_encoder loads it:
SiglipVisionModel.from_pretrained(<folder>, subfolder="image_encoder") and
SiglipImageProcessor.from_pretrained(<folder>, subfolder="feature_extractor") (transformers), then
VisionEncoder.encode_images(image) on an [H, W, 3] uint8 numpy picture: the processor's preprocess
(resize to its size, bicubic, antialiased, on the uint8 tensor; the fused rescale + normalize, fp32),
SiglipVisionModel(pixel_values).last_hidden_state (post_layernorm applied; the pooling head runs but
its output is not used).

A tiny random SigLIP (hidden 24, 2 heads, 2 layers, 24 x 24 pixels in 8 x 8 patches: 9 tokens, the
pooling head on as the published siglip-so400m's config), saved with save_pretrained under
image_encoder/ and feature_extractor/ of a temporary folder, fp32 on the CPU (the pipeline loads it in
fp16: vision_encoder_precision="fp16"; fp32 here).

Files (tests/golden/hunyuan15/):
  hy15_siglip.safetensors        a 40 x 64 picture (resized down to 24 x 24, antialiased)
  hy15_siglip_small.safetensors  a 16 x 20 picture (resized up)
Tensors: the model's state_dict (vision_model.*, the head included: unread, ignored by name),
input.image [H, W, 3] U8 -> inter.pixel_values [1, 3, 24, 24] (the processor's output),
output [1, 9, 24] (last_hidden_state).
Config: {"vision": image_encoder/config.json, "processor": feature_extractor/preprocessor_config.json}.

Usage: HUNYUAN15_REPO=/work/ref/hunyuan15 /work/venv-golden/bin/python tools/golden/hunyuan15_siglip.py [OUT_DIR]
"""
import json
import os
import sys
import tempfile

import numpy as np
import torch
import transformers
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hunyuan_reference  # noqa: E402

hunyuan_reference.HUNYUAN_REPO = os.environ.get("HUNYUAN15_REPO", "/work/ref/hunyuan15")
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "tests", "golden", "hunyuan15")
REFERENCE = "Tencent-Hunyuan/HunyuanVideo-1.5 60783e7 hyvideo/models/vision_encoder/__init__.py"

# SiglipVisionConfig fields (the published image_encoder/config.json's: gelu_pytorch_tanh, eps 1e-6,
# the pooling head), tiny widths.
VISION = dict(hidden_size=24, intermediate_size=40, num_hidden_layers=2, num_attention_heads=2, num_channels=3,
              image_size=24, patch_size=8, hidden_act="gelu_pytorch_tanh", layer_norm_eps=1e-6, vision_use_head=True)
# The published feature_extractor/preprocessor_config.json's fields, at the tiny size.
PROCESSOR = dict(do_resize=True, size={"height": 24, "width": 24}, resample=3, do_rescale=True,
                 rescale_factor=1 / 255, do_normalize=True, image_mean=[0.5, 0.5, 0.5], image_std=[0.5, 0.5, 0.5])


def import_vision_encoder():
    commons = hunyuan_reference.package("hyvideo.commons")
    if not hasattr(commons, "PRECISION_TO_TYPE"):
        commons.PRECISION_TO_TYPE = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
    return hunyuan_reference.load("hyvideo.models.vision_encoder")


def build_folder(root, seed):
    """A tiny random SigLIP written as the published vision_encoder/siglip/ folder."""
    torch.manual_seed(seed)
    model = transformers.SiglipVisionModel(transformers.SiglipVisionConfig(**VISION)).eval()
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for n, p in model.named_parameters():  # every parameter matters: norms and biases non-trivial
            scale = 0.02 if "position" in n else (0.3 if p.dim() > 1 else 0.1)
            base = 1.0 if n.endswith("layer_norm1.weight") or n.endswith("layer_norm2.weight") or \
                n.endswith("post_layernorm.weight") or n.endswith("layernorm.weight") else 0.0
            p.copy_(base + scale * torch.randn(p.shape, generator=g))
    model.save_pretrained(os.path.join(root, "image_encoder"))
    transformers.SiglipImageProcessor(**PROCESSOR).save_pretrained(os.path.join(root, "feature_extractor"))
    return model


def encode(folder, image):
    """The official VisionEncoder as _load_vision_encoder makes it, fp32; its preprocess and forward."""
    ve_mod = import_vision_encoder()
    ve = ve_mod.VisionEncoder(vision_encoder_type="siglip", vision_encoder_precision="fp32",
                              vision_encoder_path=folder)
    pixels = ve.processor.preprocess(images=image, return_tensors="pt")["pixel_values"]
    with torch.no_grad():
        out = ve.encode_images(image).last_hidden_state
    return ve, pixels, out


def write(name, image, seed):
    torch.set_num_threads(2)
    with tempfile.TemporaryDirectory() as root:
        build_folder(root, seed)
        ve, pixels, out = encode(root, image)
        with open(os.path.join(root, "image_encoder", "config.json")) as f:
            vision_cfg = json.load(f)
        with open(os.path.join(root, "feature_extractor", "preprocessor_config.json")) as f:
            proc_cfg = json.load(f)
        tensors = {k: v.detach().float().contiguous() for k, v in ve.model.state_dict().items()}
    tensors["input.image"] = torch.from_numpy(np.ascontiguousarray(image))
    tensors["inter.pixel_values"] = pixels.float().contiguous()
    tensors["output"] = out.float().contiguous()
    meta = {"kind": "hunyuan1.5.image.siglip", "config": json.dumps({"vision": vision_cfg, "processor": proc_cfg}),
            "torch_version": torch.__version__, "transformers_version": transformers.__version__,
            "generator": "tools/golden/hunyuan15_siglip.py", "reference": REFERENCE}
    path = os.path.join(OUT, name)
    save_file(tensors, path, metadata=meta)
    print(f"wrote {path} ({os.path.getsize(path)} bytes); output {tuple(out.shape)} |out| {out.norm():.4f}")


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(5)
    write("hy15_siglip.safetensors", rng.integers(0, 256, (40, 64, 3), dtype=np.uint8), 11)
    write("hy15_siglip_small.safetensors", rng.integers(0, 256, (16, 20, 3), dtype=np.uint8), 12)


if __name__ == "__main__":
    main()
