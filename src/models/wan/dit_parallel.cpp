#include "models/wan/dit_parallel.h"

namespace vidax::wan {

const nn::ShardTable& dit_tensor_parallel_table() {
  using nn::Split;
  static const nn::ShardTable table = [] {
    nn::ShardTable t;
    for (const char* attn : {".self_attn.", ".cross_attn."}) {
      const std::string a = attn;
      // Column-parallel projections: rows of W and b (whole heads); their q/k norm gains alike.
      for (const char* p : {"q", "k", "v", "k_img", "v_img"}) {
        t.push_back({a + p + ".weight", Split::Rows});
        t.push_back({a + p + ".bias", Split::Rows});
      }
      for (const char* n : {"norm_q", "norm_k", "norm_k_img"}) t.push_back({a + n + ".weight", Split::Rows});
      // Row-parallel output projection: columns of W; its bias stays whole (added once after the sum).
      t.push_back({a + "o.weight", Split::Columns});
    }
    t.push_back({".ffn.0.weight", Split::Rows});
    t.push_back({".ffn.0.bias", Split::Rows});
    t.push_back({".ffn.2.weight", Split::Columns});
    return t;
  }();
  return table;
}

void check_mesh_fits(const DiTConfig& cfg, const dist::MeshShape& m) {
  VIDAX_CHECK(cfg.num_heads % (m.tp * m.sp) == 0,
              "--mesh " << m.str() << ": the DiT's " << cfg.num_heads << " heads are not divisible by tp*sp = "
                        << m.tp * m.sp << " (tensor parallelism splits heads, Ulysses splits them again)");
  VIDAX_CHECK(cfg.ffn_dim % m.tp == 0,
              "--mesh " << m.str() << ": ffn_dim " << cfg.ffn_dim << " is not divisible by tp = " << m.tp);
}

}  // namespace vidax::wan
