"""Golden file for the Wan 2.1 I2V image encoder (kind wan.clip.visual): the OFFICIAL
CLIPModel.visual (wan/modules/clip.py: bicubic resize to image_size, Normalize, then
XLMRobertaCLIP.visual(x, use_31_block=True)) on a tiny XLMRobertaCLIP with the real structure
(class token, pre-norm, GELU blocks, the last block dropped; a tiny XLM-RoBERTa text tower too,
whose keys the engine must ignore by name), random weights, on the CPU in fp32.

Deviations, none in the math: flash_attention (CUDA) -> an fp32 softmax attention with the same
contract; torchvision is not installed in the golden venv, so `torchvision.transforms` is a stub
whose Normalize does what T.Normalize does on a tensor (x.sub_(mean[:, None, None]).div_(std[:, None,
None])) and CLIPModel's __init__ (which builds the ViT-H and loads a .pth) is replaced by assigning
the tiny model and that transform; torch.cuda.amp.autocast is inactive on the CPU (fp32 run).

Writes tests/golden/wan_clip_visual_tiny.safetensors: config = XLMRobertaCLIP's init args; the
whole state dict (visual.*, textual.*, log_scale) under its own names; input.videos [N, 3, 1, H, W]
(the frames CLIPModel.visual takes, in [-1, 1]) -> output [N, tokens, vision_dim].

Usage: WAN21_REPO=/work/ref/Wan2.1 python tools/golden/wan_clip.py
"""
import json
import os
import sys
import types

import torch
from safetensors.torch import save_file

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
OUT = os.path.join(ROOT, "tests", "golden", "wan_clip_visual_tiny.safetensors")


def stub_torchvision():
    """torchvision.transforms as clip.py / image2video.py use it (Compose, Resize, ToTensor, Normalize,
    InterpolationMode; functional.to_tensor, center_crop), enough to import them. Only Normalize and
    to_tensor / center_crop are ever called, and they are written as torchvision writes them."""
    if "torchvision" in sys.modules:
        return
    import transformers  # noqa: F401  (reads which packages exist before the stub is in place)
    import transformers.utils.import_utils  # noqa: F401
    tv = types.ModuleType("torchvision")
    T = types.ModuleType("torchvision.transforms")
    TF = types.ModuleType("torchvision.transforms.functional")

    class Compose:
        def __init__(self, transforms):
            self.transforms = transforms

    class Normalize:
        def __init__(self, mean, std):
            self.mean, self.std = mean, std

        def __call__(self, x):
            mean = torch.as_tensor(self.mean, dtype=x.dtype, device=x.device)
            std = torch.as_tensor(self.std, dtype=x.dtype, device=x.device)
            return x.sub_(mean.view(-1, 1, 1)).div_(std.view(-1, 1, 1))

    class Unused:
        def __init__(self, *a, **k):
            pass

    T.Compose, T.Normalize, T.Resize, T.ToTensor = Compose, Normalize, Unused, Unused
    T.InterpolationMode = types.SimpleNamespace(BICUBIC="bicubic")

    def to_tensor(pic):  # PIL RGB -> [3, H, W] float in [0, 1], as torchvision's to_tensor
        import numpy as np
        img = torch.from_numpy(np.array(pic, dtype=np.uint8, copy=True))
        img = img.view(pic.size[1], pic.size[0], 3).permute((2, 0, 1)).contiguous()
        return img.to(dtype=torch.get_default_dtype()).div(255)

    def center_crop(img, output_size):  # tensor form; pads with zeros when the crop is larger
        h, w = (output_size, output_size) if isinstance(output_size, int) else output_size[:2]
        H, W = img.shape[-2:]
        if h > H or w > W:
            pl, pt = (w - W) // 2 if w > W else 0, (h - H) // 2 if h > H else 0
            pr, pb = (w - W + 1) // 2 if w > W else 0, (h - H + 1) // 2 if h > H else 0
            img = torch.nn.functional.pad(img, [pl, pr, pt, pb])
            H, W = img.shape[-2:]
            if h == H and w == W:
                return img
        top, left = int(round((H - h) / 2.0)), int(round((W - w) / 2.0))
        return img[..., top:top + h, left:left + w]

    TF.to_tensor, TF.center_crop = to_tensor, center_crop
    T.functional = TF
    tv.transforms = T
    sys.modules.update({"torchvision": tv, "torchvision.transforms": T, "torchvision.transforms.functional": TF})


def fp32_attention(q, k, v, q_lens=None, k_lens=None, **kw):
    """flash_attention's contract ([B, L, N, D] in and out), in fp32, no masking (CLIP has none)."""
    out = torch.nn.functional.scaled_dot_product_attention(
        q.float().transpose(1, 2), k.float().transpose(1, 2), v.float().transpose(1, 2))
    return out.transpose(1, 2).contiguous().type_as(q)


def load_clip_module():
    stub_torchvision()
    from wan_reference import load
    torch.cuda.current_device = lambda: "cpu"
    clip_mod = load("wan.modules.clip")
    clip_mod.flash_attention = fp32_attention
    return clip_mod


def randomize_clip(model, gen):
    """Norms 1/0, biases N(0, 0.02), embeddings N(0, 0.1..1), weights N(0, 1/fan_in)."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.fill_(0.0 if name.endswith(".bias") else 1.0)
            elif name.endswith(".bias"):
                p.copy_(torch.randn(p.shape, generator=gen) * 0.02)
            elif "cls_embedding" in name or "pos_embedding" in name:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.1)
            elif name == "log_scale":
                p.fill_(4.6052)
            else:
                fan_in = p[0].numel() if p.dim() > 1 else 1
                p.copy_(torch.randn(p.shape, generator=gen) / fan_in ** 0.5)


def clip_model(clip_mod, model):
    """CLIPModel without its __init__ (which builds the ViT-H on CUDA and loads the .pth)."""
    cm = clip_mod.CLIPModel.__new__(clip_mod.CLIPModel)
    cm.dtype = torch.float32
    cm.device = torch.device("cpu")
    cm.model = model
    T = sys.modules["torchvision.transforms"]
    cm.transforms = T.Compose([T.Resize(None), T.ToTensor(),
                               T.Normalize(mean=[0.48145466, 0.4578275, 0.40821073],
                                           std=[0.26862954, 0.26130258, 0.27577711])])
    return cm


# The tiny architecture: XLMRobertaCLIP init args (clip_xlm_roberta_vit_h_14's, shrunk).
CONFIG = dict(embed_dim=16, image_size=56, patch_size=14, vision_dim=32, vision_mlp_ratio=4, vision_heads=2,
              vision_layers=3, vision_pool="token", vision_pre_norm=True, vision_post_norm=False,
              activation="gelu", vocab_size=64, max_text_len=16, type_size=1, pad_id=1, text_dim=16,
              text_heads=2, text_layers=1, text_post_norm=True, text_dropout=0.0, attn_dropout=0.0,
              proj_dropout=0.0, embedding_dropout=0.0, norm_eps=1e-5)


def main():
    clip_mod = load_clip_module()
    gen = torch.Generator().manual_seed(20260)
    model = clip_mod.XLMRobertaCLIP(**CONFIG).eval().requires_grad_(False)
    randomize_clip(model, gen)
    cm = clip_model(clip_mod, model)
    # Two frames of another size and aspect ratio than image_size (one down-, one up-sampled axis).
    videos = (torch.rand(2, 3, 1, 40, 72, generator=gen) * 2 - 1)
    with torch.no_grad():
        out = cm.visual([v for v in videos.clone()])
    tensors = {k: v.contiguous() for k, v in model.state_dict().items()}
    tensors["input.videos"] = videos.contiguous()
    tensors["output"] = out.float().contiguous()
    meta = {"kind": "wan.clip.visual", "config": json.dumps(CONFIG), "precision": "fp32",
            "torch_version": torch.__version__}
    save_file(tensors, OUT, meta)
    print("wrote", OUT, "output", list(out.shape), float(out.abs().mean()))


if __name__ == "__main__":
    main()
