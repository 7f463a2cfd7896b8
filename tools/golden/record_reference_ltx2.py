"""Records a run of the OFFICIAL LTX-2 one-stage pipeline (TI2VidOneStagePipeline.__call__ with
images=[], ltx_pipelines/ti2vid_one_stage.py, Lightricks/LTX-2 400fd31) in vidax's record format,
version 2 (several latent streams: src/pipeline/record.h, docs/generate.md "Record and replay"), so
that `vidax generate --weights WEIGHTS --replay DIR` replays it: both recorded draws injected, each
step's video and audio latents compared.

The parts are the pipeline's own, built from a vidax LTX-2 checkpoint folder with a vidax_model.json
(`vidax make-demo DIR --model ltx2.3-tiny-demo`: the bundled checkpoint and its Gemma folder) as
TI2VidOneStagePipeline.__init__ builds them, at the record's dtype instead of its fixed bf16:

  * PromptEncoder(ModelPaths.from_monolith(checkpoint, gemma_root)): the official Gemma-3 loader,
    LTXGemmaTokenizer (LEFT padding to 1024), the feature extractor and the embeddings connectors
    read from the checkpoint. Two things the demo's text-only Gemma folder lacks are supplied, and
    neither is on the text path: a processor_config.json (the asset check requires it; the processor
    is built only for prompt enhancement, so its construction is skipped) and the SigLIP vision
    tower's weights (left on the meta device by the loader, which would make model.device "meta";
    filled with zeros: text prompts never run it). A real Gemma folder has both and is untouched.
  * DiffusionStage.from_checkpoint(checkpoint): the official LTXModel loaded from the checkpoint.
  * then __call__'s body from the prompts on, as tools/golden/ltx2_pipeline_t2v.py runs it:
    assert_resolution, torch.Generator(device).manual_seed(seed) shared by the GaussianNoiser,
    LTX2Scheduler.execute(steps), create_multimodal_guider_factory for each stream with the negative
    contexts, FactoryGuidedDenoiser, DiffusionStage.__call__ (the video noise drawn first, then the
    audio's; euler_denoising_loop with EulerDiffusionStep), max_batch_size 1. The decoders are not
    run: a record holds latents.

Guiders: the official LTX_2_3_PARAMS video / audio MultiModalGuiderParams, with stg_blocks [1] for a
tiny demo (its DiT has 2 blocks; vidax's ltx2.3-tiny-demo preset, src/models/ltx2/presets.cpp) or
--stg-blocks, and the video guider's cfg_scale := --guidance (vidax's --guidance). The negative prompt is the official
DEFAULT_NEGATIVE_PROMPT unless --negative-prompt is given.

--device cpu: a CPU torch.Generator (vidax draws the same numbers: the replay says its own draw
matches); --device cuda: the official CUDA generator (another stream, which the replay injects).
--precision bf16: every part in bf16, as the pipeline runs on a GPU (fp32 otherwise).

What is recorded (patchified states, batch of 1 dropped): noise.safetensors "video" [T_v, 128] and
"audio" [T_a, 128] (the noiser's draws, in the order drawn), step_NNNN.safetensors "video" / "audio"
(each EulerDiffusionStep result of step NNNN), final.safetensors "video" [128, F', H/32, W/32] and
"audio" [8, T, 16] (the stage's unpatchified states: what the decoders take).

Usage:
  /work/venv-golden/bin/python tools/golden/record_reference_ltx2.py --weights DEMO --out REC \
      [--device cpu|cuda] [--precision fp32|bf16] [--prompt ...] [--negative-prompt ...] \
      [--frames 9 --height 64 --width 64 --fps 24 --steps 4 --seed 42 --guidance 3] [--stg-blocks 1]
"""
import argparse
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import types

import torch
from safetensors.torch import save_file

REF = "/work/ref/ltx2/packages"
LTX2_REPO = os.environ.get("LTX2_REPO", "/work/ref/ltx2")
sys.path.insert(0, os.environ.get("LTX2_PIPELINES", REF + "/ltx-pipelines/src"))
sys.path.insert(0, os.environ.get("LTX2_CORE", REF + "/ltx-core/src"))
# ltx_pipelines.utils imports its media I/O (OpenImageIO, ...) at module level; none of it runs here.
for _missing in ("OpenImageIO",):
    try:
        __import__(_missing)
    except ImportError:
        sys.modules[_missing] = types.ModuleType(_missing)

import ltx_core.text_encoders.gemma.encoders.base_encoder as base_encoder  # noqa: E402
from ltx_core.components.diffusion_steps import EulerDiffusionStep  # noqa: E402
from ltx_core.components.guiders import create_multimodal_guider_factory  # noqa: E402
from ltx_core.components.noisers import GaussianNoiser  # noqa: E402
from ltx_core.components.schedulers import LTX2Scheduler  # noqa: E402
from ltx_pipelines.utils.blocks import DiffusionStage, PromptEncoder  # noqa: E402
from ltx_pipelines.utils.constants import DEFAULT_NEGATIVE_PROMPT, LTX_2_3_PARAMS  # noqa: E402
from ltx_pipelines.utils.denoisers import FactoryGuidedDenoiser  # noqa: E402
from ltx_pipelines.utils.helpers import assert_resolution  # noqa: E402
from ltx_pipelines.utils.model_paths import ModelPaths  # noqa: E402
from ltx_pipelines.utils.types import ModalitySpec  # noqa: E402

FORMAT, FORMAT_VERSION = "vidax.record", 2
DEMO_STG_BLOCKS = [1]  # vidax's ltx2.3-tiny-demo preset (2 DiT blocks); the published models: LTX_2_3_PARAMS' [28]


class RecordingNoiser(GaussianNoiser):
    """GaussianNoiser that keeps each draw (_sample_noise), in the order drawn."""

    def __init__(self, generator, streams):
        super().__init__(generator)
        self.draws, self.streams = [], streams

    def _sample_noise(self, latent_state):
        noise = super()._sample_noise(latent_state)
        self.draws.append((self.streams[len(self.draws)], noise.detach().float().cpu().clone()))
        return noise


class RecordingEuler(EulerDiffusionStep):
    """EulerDiffusionStep (the stage's default stepper) that keeps each result, in call order
    (euler_denoising_loop steps the video state, then the audio state, at every step)."""

    def __init__(self):
        self.results = []

    def step(self, sample, denoised_sample, sigmas, step_index, **kw):
        out = super().step(sample, denoised_sample, sigmas, step_index, **kw)
        self.results.append((step_index, out.detach().float().cpu().clone()))
        return out


def materialize_meta(module):
    """Zeros for parameters and buffers the loader left on the meta device (the demo Gemma's
    vision tower: not on the text path)."""
    for mod in module.modules():
        for n, p in list(mod._parameters.items()):
            if p is not None and p.is_meta:
                mod._parameters[n] = torch.nn.Parameter(torch.zeros(p.shape, dtype=p.dtype), requires_grad=False)
        for n, b in list(mod._buffers.items()):
            if b is not None and b.is_meta:
                mod._buffers[n] = torch.zeros(b.shape, dtype=b.dtype)
    return module


def gemma_root_for(src, tmp):
    """The Gemma folder as the official loader reads it: `src` itself when it has a
    processor_config.json, else a copy with one (and the processor's construction skipped)."""
    if os.path.exists(os.path.join(src, "processor_config.json")):
        return src
    dst = os.path.join(tmp, os.path.basename(src.rstrip("/")))
    shutil.copytree(src, dst)
    with open(os.path.join(dst, "processor_config.json"), "w") as f:
        json.dump({"processor_class": "Gemma3Processor"}, f)
    base_encoder.build_gemma_processor = lambda *a, **k: None  # prompt enhancement only
    real = PromptEncoder._build_text_encoder
    PromptEncoder._build_text_encoder = lambda self: materialize_meta(real(self)).to(self._device)
    return dst


def git_commit(repo):
    if os.environ.get("LTX2_COMMIT"):
        return os.environ["LTX2_COMMIT"]
    try:
        return subprocess.check_output(["git", "-C", repo, "rev-parse", "--short", "HEAD"], text=True,
                                       stderr=subprocess.DEVNULL).strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--weights", required=True, help="vidax LTX-2 checkpoint folder with vidax_model.json")
    ap.add_argument("--out", required=True, help="the record folder to create (must not exist, or be empty)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--precision", default="fp32", choices=["fp32", "bf16"])
    ap.add_argument("--prompt", default="a red panda climbing a bamboo tree in the snow")
    ap.add_argument("--negative-prompt", default="")
    ap.add_argument("--frames", type=int, default=9)
    ap.add_argument("--height", type=int, default=64)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--fps", type=float, default=24.0)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--guidance", type=float, default=3.0, help="the video guider's cfg_scale")
    ap.add_argument("--stg-blocks", type=int, nargs="*", default=None,
                    help="the guiders' STG blocks (default: [1] for a tiny demo, else LTX_2_3_PARAMS')")
    a = ap.parse_args()

    out = a.out.rstrip("/")
    if os.path.lexists(out) and (not os.path.isdir(out) or os.listdir(out)):
        sys.exit(f"--out {out}: exists and is not an empty folder; a record is never overwritten")
    with open(os.path.join(a.weights, "vidax_model.json")) as f:
        info = json.load(f)
    model_name = info["model"]
    checkpoint = os.path.join(a.weights, info["checkpoint"])
    device = torch.device(a.device)
    dtype = torch.float32 if a.precision == "fp32" else torch.bfloat16
    torch.set_num_threads(min(2, torch.get_num_threads()))
    negative = a.negative_prompt or DEFAULT_NEGATIVE_PROMPT
    stg = a.stg_blocks if a.stg_blocks is not None else (
        DEMO_STG_BLOCKS if model_name.endswith("tiny-demo") else LTX_2_3_PARAMS.video_guider_params.stg_blocks)
    video_guider = dataclasses.replace(LTX_2_3_PARAMS.video_guider_params, cfg_scale=a.guidance, stg_blocks=stg)
    audio_guider = dataclasses.replace(LTX_2_3_PARAMS.audio_guider_params, stg_blocks=stg)

    tmp_gemma = tempfile.mkdtemp(prefix="ltx2-gemma-")
    try:
        paths = ModelPaths.from_monolith(checkpoint, gemma_root_for(os.path.join(a.weights, info["gemma_root"]),
                                                                    tmp_gemma))
        prompt_encoder = PromptEncoder(paths, dtype=dtype, device=device)
        stage = DiffusionStage.from_checkpoint(paths.transformer(), dtype=dtype, device=device)
        with torch.inference_mode():
            # TI2VidOneStagePipeline.__call__ with images=[] (no duration predictor: num_frames given).
            assert_resolution(height=a.height, width=a.width, is_two_stage=False)
            generator = torch.Generator(device=device).manual_seed(a.seed)
            noiser = RecordingNoiser(generator, ["video", "audio"])
            ctx_p, ctx_n = prompt_encoder([a.prompt, negative])
            v_context_p, a_context_p = ctx_p.video_encoding, ctx_p.audio_encoding
            v_context_n, a_context_n = ctx_n.video_encoding, ctx_n.audio_encoding
            sigmas = LTX2Scheduler().execute(steps=a.steps).to(dtype=torch.float32, device=device)
            video_guider_factory = create_multimodal_guider_factory(params=video_guider, negative_context=v_context_n)
            audio_guider_factory = create_multimodal_guider_factory(params=audio_guider, negative_context=a_context_n)
            stepper = RecordingEuler()
            video_state, audio_state = stage(
                denoiser=FactoryGuidedDenoiser(v_context=v_context_p, a_context=a_context_p,
                                               video_guider_factory=video_guider_factory,
                                               audio_guider_factory=audio_guider_factory),
                sigmas=sigmas, noiser=noiser, width=a.width, height=a.height, frames=a.frames, fps=a.fps,
                video=ModalitySpec(context=v_context_p, conditionings=[]), audio=ModalitySpec(context=a_context_p),
                stepper=stepper, max_batch_size=1)
    finally:
        shutil.rmtree(tmp_gemma, ignore_errors=True)
    assert [s for s, _ in noiser.draws] == ["video", "audio"], [s for s, _ in noiser.draws]
    assert len(stepper.results) == 2 * a.steps, len(stepper.results)
    steps = []
    for i in range(a.steps):
        (iv, v), (ia, au) = stepper.results[2 * i], stepper.results[2 * i + 1]
        assert iv == ia == i, (iv, ia, i)
        steps.append({"video": v.squeeze(0).contiguous(), "audio": au.squeeze(0).contiguous()})
    final = {"video": video_state.latent.detach().float().cpu().squeeze(0).contiguous(),
             "audio": audio_state.latent.detach().float().cpu().squeeze(0).contiguous()}
    timesteps = [float(s) for s in sigmas[:-1].cpu().tolist()]

    tmp = os.path.join(os.path.dirname(os.path.abspath(out)), "." + os.path.basename(out) + f".partial-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    meta = {"format": FORMAT}
    save_file({s: t.squeeze(0).contiguous() for s, t in noiser.draws}, os.path.join(tmp, "noise.safetensors"), meta)
    index_steps = []
    for i, s in enumerate(steps, 1):
        name = f"step_{i:04d}.safetensors"
        save_file(s, os.path.join(tmp, name), meta)
        index_steps.append({"step": i, "timestep": timesteps[i - 1],
                            "latents": {k: {"file": name, "tensor": k} for k in ("audio", "video")}, "noise": None})
    save_file(final, os.path.join(tmp, "final.safetensors"), meta)
    index = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "producer": {"name": "reference",
                     "code": "Lightricks/LTX-2 TI2VidOneStagePipeline.__call__ (ltx_pipelines/ti2vid_one_stage.py)",
                     "repo": LTX2_REPO, "commit": git_commit(LTX2_REPO),
                     "script": "tools/golden/record_reference_ltx2.py", "torch_version": torch.__version__,
                     "device": str(device), "generator": f"torch.Generator(device='{device.type}')",
                     "guiders": {"video": dataclasses.asdict(video_guider), "audio": dataclasses.asdict(audio_guider)}},
        "model": model_name,
        "family": "ltx2",
        "precision": a.precision,
        "request": {"prompt": a.prompt, "negative_prompt": a.negative_prompt, "frames": a.frames,
                    "height": a.height, "width": a.width, "steps": a.steps, "seed": a.seed,
                    "guidance": a.guidance, "shift": 1.0, "sampler": "euler", "cfg_from_step": 0,
                    "cfg_to_step": -1, "cfg_scale": 1.0, "fps": a.fps},
        "negative_prompt_used": negative,
        "noise_from": "seed",
        "timesteps": timesteps,
        "streams": [{"name": k, "shape": list(steps[0][k].shape), "final_shape": list(final[k].shape)}
                    for k in ("video", "audio")],
        "noise": [{"stream": s, "file": "noise.safetensors", "tensor": s} for s, _ in noiser.draws],
        "steps": index_steps,
        "final": {k: {"file": "final.safetensors", "tensor": k} for k in ("audio", "video")},
    }
    with open(os.path.join(tmp, "record.json"), "w") as f:
        json.dump(index, f, indent=1, ensure_ascii=False)
        f.write("\n")
    for name in os.listdir(tmp):
        os.chmod(os.path.join(tmp, name), 0o644)
    os.chmod(tmp, 0o755)
    if os.path.isdir(out):
        os.rmdir(out)  # empty (checked above)
    os.rename(tmp, out)
    print("recorded", a.steps, "steps of", model_name, "(video", tuple(steps[0]["video"].shape), "audio",
          tuple(steps[0]["audio"].shape), ") on", device, "into", out)


if __name__ == "__main__":
    main()
