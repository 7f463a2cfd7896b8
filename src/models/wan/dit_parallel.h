// The Wan DiT on a device mesh (DESIGN.md principle 6; docs/parallelism.md):
//   tp (Megatron): heads and FFN channels split; the table below says which parameter is
//       split how. Embeddings, modulation tables, norm3 and the head are replicated.
//   sp (Ulysses):  tokens split between attention calls (nn/ulysses.h); WanDiT::forward takes
//       its chunk after patchifying and gathers the head's output (64 features per token
//       instead of dim = 1536/5120: gathering after the head moves dim/64 times less).
//   cfg:           the guidance branches, in the pipeline (nn/parallel_cfg.h), or the batch
//       entries of one forward in the wan.dit parity runner.
#pragma once
#include "dist/mesh.h"
#include "models/wan/dit_config.h"
#include "nn/parallel.h"

namespace vidax::wan {

// Megatron split of the official parameter names (self_attn, cross_attn, ffn of every block).
const nn::ShardTable& dit_tensor_parallel_table();

// Throws unless the config can be split over the mesh: num_heads divisible by tp*sp, ffn_dim by tp.
void check_mesh_fits(const DiTConfig& cfg, const dist::MeshShape& mesh);

}  // namespace vidax::wan
