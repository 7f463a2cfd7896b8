#include "core/quant.h"

#include <algorithm>
#include <cctype>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "core/dtype.h"
#include "core/error.h"

namespace vidax {

namespace {

constexpr int QK = 32;    // QK4_0 .. QK8_0
constexpr int QKK = 256;  // QK_K
constexpr float kGroupMaxEps = 1e-15f;

// Block layouts (ggml-common.h), as byte offsets: every field is read and written with memcpy,
// so blocks inside an mmap'd file need no alignment.
//   Q4_0 (18): d f16 | qs[16]               Q4_1 (20): d f16 | m f16 | qs[16]
//   Q5_0 (22): d f16 | qh[4] | qs[16]       Q5_1 (24): d f16 | m f16 | qh[4] | qs[16]
//   Q8_0 (34): d f16 | qs[32] (int8)
//   Q2_K (84): scales[16] | qs[64] | d f16 | dmin f16
//   Q3_K (110): hmask[32] | qs[64] | scales[12] | d f16
//   Q4_K (144): d f16 | dmin f16 | scales[12] | qs[128]
//   Q5_K (176): d f16 | dmin f16 | scales[12] | qh[32] | qs[128]
//   Q6_K (210): ql[128] | qh[64] | scales[16] (int8) | d f16
constexpr QuantTraits kTraits[] = {
    {QuantType::Q4_0, "Q4_0", 2, QK, 18},   {QuantType::Q4_1, "Q4_1", 3, QK, 20},
    {QuantType::Q5_0, "Q5_0", 6, QK, 22},   {QuantType::Q5_1, "Q5_1", 7, QK, 24},
    {QuantType::Q8_0, "Q8_0", 8, QK, 34},   {QuantType::Q2_K, "Q2_K", 10, QKK, 84},
    {QuantType::Q3_K, "Q3_K", 11, QKK, 110}, {QuantType::Q4_K, "Q4_K", 12, QKK, 144},
    {QuantType::Q5_K, "Q5_K", 13, QKK, 176}, {QuantType::Q6_K, "Q6_K", 14, QKK, 210},
};

float rd_f16(const uint8_t* p) { uint16_t h; std::memcpy(&h, p, 2); return f16_to_f32(h); }
void wr_f16(uint8_t* p, float v) { const uint16_t h = f32_to_f16(v); std::memcpy(p, &h, 2); }
uint32_t rd_u32(const uint8_t* p) { uint32_t v; std::memcpy(&v, p, 4); return v; }

// ggml's nearest_int: round half to even through the 1.5 * 2^23 trick.
inline int nearest_int(float fval) {
  float val = fval + 12582912.f;
  int i;
  std::memcpy(&i, &val, sizeof(int));
  return (i & 0x007fffff) - 0x00400000;
}

// The 6-bit scale and min j (0..7) of a Q4_K / Q5_K block's 12 packed bytes.
inline void scale_min_k4(int j, const uint8_t* q, uint8_t* d, uint8_t* m) {
  if (j < 4) {
    *d = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *d = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4);
  }
}

// ---- dequantization: one block ----------------------------------------------------------

void deq_q4_0(const uint8_t* b, float* y) {
  const float d = rd_f16(b);
  const uint8_t* qs = b + 2;
  for (int j = 0; j < QK / 2; ++j) {
    y[j] = ((qs[j] & 0x0F) - 8) * d;
    y[j + QK / 2] = ((qs[j] >> 4) - 8) * d;
  }
}
void deq_q4_1(const uint8_t* b, float* y) {
  const float d = rd_f16(b), m = rd_f16(b + 2);
  const uint8_t* qs = b + 4;
  for (int j = 0; j < QK / 2; ++j) {
    y[j] = (qs[j] & 0x0F) * d + m;
    y[j + QK / 2] = (qs[j] >> 4) * d + m;
  }
}
void deq_q5_0(const uint8_t* b, float* y) {
  const float d = rd_f16(b);
  const uint32_t qh = rd_u32(b + 2);
  const uint8_t* qs = b + 6;
  for (int j = 0; j < QK / 2; ++j) {
    const uint8_t h0 = ((qh >> (j + 0)) << 4) & 0x10, h1 = (qh >> (j + 12)) & 0x10;
    y[j] = (((qs[j] & 0x0F) | h0) - 16) * d;
    y[j + QK / 2] = (((qs[j] >> 4) | h1) - 16) * d;
  }
}
void deq_q5_1(const uint8_t* b, float* y) {
  const float d = rd_f16(b), m = rd_f16(b + 2);
  const uint32_t qh = rd_u32(b + 4);
  const uint8_t* qs = b + 8;
  for (int j = 0; j < QK / 2; ++j) {
    const uint8_t h0 = ((qh >> (j + 0)) << 4) & 0x10, h1 = (qh >> (j + 12)) & 0x10;
    y[j] = ((qs[j] & 0x0F) | h0) * d + m;
    y[j + QK / 2] = ((qs[j] >> 4) | h1) * d + m;
  }
}
void deq_q8_0(const uint8_t* b, float* y) {
  const float d = rd_f16(b);
  const int8_t* qs = reinterpret_cast<const int8_t*>(b + 2);
  for (int j = 0; j < QK; ++j) y[j] = qs[j] * d;
}
void deq_q2_k(const uint8_t* b, float* y) {
  const uint8_t* scales = b;
  const uint8_t* q = b + 16;
  const float d = rd_f16(b + 80), mn = rd_f16(b + 82);
  int is = 0;
  for (int n = 0; n < QKK; n += 128) {
    int shift = 0;
    for (int j = 0; j < 4; ++j) {
      uint8_t sc = scales[is++];
      float dl = d * (sc & 0xF), ml = mn * (sc >> 4);
      for (int l = 0; l < 16; ++l) *y++ = dl * static_cast<int8_t>((q[l] >> shift) & 3) - ml;
      sc = scales[is++];
      dl = d * (sc & 0xF);
      ml = mn * (sc >> 4);
      for (int l = 0; l < 16; ++l) *y++ = dl * static_cast<int8_t>((q[l + 16] >> shift) & 3) - ml;
      shift += 2;
    }
    q += 32;
  }
}
// The 16 signed 6-bit scales of a Q3_K block (stored as 12 bytes: low nibbles, then 2-bit highs).
void q3k_scales(const uint8_t* s12, int8_t* out) {
  for (int j = 0; j < 16; ++j) {
    const int lo = j < 8 ? (s12[j] & 0xF) : (s12[j - 8] >> 4);
    const int hi = (s12[8 + j % 4] >> (2 * (j / 4))) & 3;
    out[j] = static_cast<int8_t>((lo | (hi << 4)) - 32);
  }
}
void deq_q3_k(const uint8_t* b, float* y) {
  const uint8_t* hm = b;
  const uint8_t* q = b + 32;
  int8_t sc[16];
  q3k_scales(b + 96, sc);
  const float d_all = rd_f16(b + 108);
  int is = 0;
  uint8_t m = 1;
  for (int n = 0; n < QKK; n += 128) {
    int shift = 0;
    for (int j = 0; j < 4; ++j) {
      float dl = d_all * sc[is++];
      for (int l = 0; l < 16; ++l)
        *y++ = dl * (static_cast<int8_t>((q[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4));
      dl = d_all * sc[is++];
      for (int l = 0; l < 16; ++l)
        *y++ = dl * (static_cast<int8_t>((q[l + 16] >> shift) & 3) - ((hm[l + 16] & m) ? 0 : 4));
      shift += 2;
      m <<= 1;
    }
    q += 32;
  }
}
void deq_q4_k(const uint8_t* b, float* y) {
  const float d = rd_f16(b), mn = rd_f16(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* q = b + 16;
  int is = 0;
  uint8_t sc, m;
  for (int j = 0; j < QKK; j += 64) {
    scale_min_k4(is + 0, scales, &sc, &m);
    const float d1 = d * sc, m1 = mn * m;
    scale_min_k4(is + 1, scales, &sc, &m);
    const float d2 = d * sc, m2 = mn * m;
    for (int l = 0; l < 32; ++l) *y++ = d1 * (q[l] & 0xF) - m1;
    for (int l = 0; l < 32; ++l) *y++ = d2 * (q[l] >> 4) - m2;
    q += 32;
    is += 2;
  }
}
void deq_q5_k(const uint8_t* b, float* y) {
  const float d = rd_f16(b), mn = rd_f16(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* qh = b + 16;
  const uint8_t* ql = b + 48;
  int is = 0;
  uint8_t sc, m, u1 = 1, u2 = 2;
  for (int j = 0; j < QKK; j += 64) {
    scale_min_k4(is + 0, scales, &sc, &m);
    const float d1 = d * sc, m1 = mn * m;
    scale_min_k4(is + 1, scales, &sc, &m);
    const float d2 = d * sc, m2 = mn * m;
    for (int l = 0; l < 32; ++l) *y++ = d1 * ((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
    for (int l = 0; l < 32; ++l) *y++ = d2 * ((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
    ql += 32;
    is += 2;
    u1 <<= 2;
    u2 <<= 2;
  }
}
void deq_q6_k(const uint8_t* b, float* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
  const float d = rd_f16(b + 208);
  for (int n = 0; n < QKK; n += 128) {
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int8_t q1 = static_cast<int8_t>((ql[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
      const int8_t q2 = static_cast<int8_t>((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int8_t q3 = static_cast<int8_t>((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int8_t q4 = static_cast<int8_t>((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[l + 0] = d * sc[is + 0] * q1;
      y[l + 32] = d * sc[is + 2] * q2;
      y[l + 64] = d * sc[is + 4] * q3;
      y[l + 96] = d * sc[is + 6] * q4;
    }
    y += 128;
    ql += 64;
    qh += 32;
    sc += 8;
  }
}

// ---- reference quantization: one block ---------------------------------------------------

void qnt_q4_0(const float* x, uint8_t* b) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < QK; ++j)
    if (amax < std::fabs(x[j])) { amax = std::fabs(x[j]); max = x[j]; }
  const float d = max / -8, id = d ? 1.0f / d : 0.0f;
  wr_f16(b, d);
  for (int j = 0; j < QK / 2; ++j) {
    const uint8_t a = std::min(15, static_cast<int>(static_cast<int8_t>(x[j] * id + 8.5f)));
    const uint8_t c = std::min(15, static_cast<int>(static_cast<int8_t>(x[j + QK / 2] * id + 8.5f)));
    b[2 + j] = static_cast<uint8_t>(a | (c << 4));
  }
}
void qnt_q4_1(const float* x, uint8_t* b) {
  float mn = FLT_MAX, mx = -FLT_MAX;
  for (int j = 0; j < QK; ++j) { if (x[j] < mn) mn = x[j]; if (x[j] > mx) mx = x[j]; }
  const float d = (mx - mn) / ((1 << 4) - 1), id = d ? 1.0f / d : 0.0f;
  wr_f16(b, d);
  wr_f16(b + 2, mn);
  for (int j = 0; j < QK / 2; ++j) {
    const uint8_t a = std::min(15, static_cast<int>(static_cast<int8_t>((x[j] - mn) * id + 0.5f)));
    const uint8_t c = std::min(15, static_cast<int>(static_cast<int8_t>((x[j + QK / 2] - mn) * id + 0.5f)));
    b[4 + j] = static_cast<uint8_t>(a | (c << 4));
  }
}
void qnt_q5_0(const float* x, uint8_t* b) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < QK; ++j)
    if (amax < std::fabs(x[j])) { amax = std::fabs(x[j]); max = x[j]; }
  const float d = max / -16, id = d ? 1.0f / d : 0.0f;
  wr_f16(b, d);
  uint32_t qh = 0;
  for (int j = 0; j < QK / 2; ++j) {
    const uint8_t a = std::min(31, static_cast<int>(static_cast<int8_t>(x[j] * id + 16.5f)));
    const uint8_t c = std::min(31, static_cast<int>(static_cast<int8_t>(x[j + QK / 2] * id + 16.5f)));
    b[6 + j] = static_cast<uint8_t>((a & 0x0F) | ((c & 0x0F) << 4));
    qh |= ((a & 0x10u) >> 4) << (j + 0);
    qh |= ((c & 0x10u) >> 4) << (j + QK / 2);
  }
  std::memcpy(b + 2, &qh, 4);
}
void qnt_q5_1(const float* x, uint8_t* b) {
  float mn = FLT_MAX, mx = -FLT_MAX;
  for (int j = 0; j < QK; ++j) { if (x[j] < mn) mn = x[j]; if (x[j] > mx) mx = x[j]; }
  const float d = (mx - mn) / ((1 << 5) - 1), id = d ? 1.0f / d : 0.0f;
  wr_f16(b, d);
  wr_f16(b + 2, mn);
  uint32_t qh = 0;
  for (int j = 0; j < QK / 2; ++j) {
    const uint8_t a = static_cast<uint8_t>((x[j] - mn) * id + 0.5f);
    const uint8_t c = static_cast<uint8_t>((x[j + QK / 2] - mn) * id + 0.5f);
    b[8 + j] = static_cast<uint8_t>((a & 0x0F) | ((c & 0x0F) << 4));
    qh |= ((a & 0x10u) >> 4) << (j + 0);
    qh |= ((c & 0x10u) >> 4) << (j + QK / 2);
  }
  std::memcpy(b + 4, &qh, 4);
}
void qnt_q8_0(const float* x, uint8_t* b) {
  float amax = 0.0f;
  for (int j = 0; j < QK; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / ((1 << 7) - 1), id = d ? 1.0f / d : 0.0f;
  wr_f16(b, d);
  for (int j = 0; j < QK; ++j) b[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(std::round(x[j] * id)));
}

// make_qx_quants with qw == NULL (Q6_K uses rmse_type 1).
float make_qx_quants(int n, int nmax, const float* x, int8_t* L, int rmse_type) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) { amax = ax; max = x[i]; }
  }
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.f;
  }
  float iscale = -nmax / max;
  if (rmse_type == 0) {
    for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(nmax + std::max(-nmax, std::min(nmax - 1, nearest_int(iscale * x[i]))));
    return 1 / iscale;
  }
  bool return_early = false;
  if (rmse_type < 0) { rmse_type = -rmse_type; return_early = true; }
  auto weight = [&](float xi) {
    return rmse_type == 1 ? xi * xi : rmse_type == 2 ? 1.f : rmse_type == 3 ? std::fabs(xi) : std::sqrt(std::fabs(xi));
  };
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = std::max(-nmax, std::min(nmax - 1, nearest_int(iscale * x[i])));
    L[i] = static_cast<int8_t>(l + nmax);
    const float w = weight(x[i]);
    sumlx += w * x[i] * l;
    suml2 += w * l * l;
  }
  float scale = suml2 ? sumlx / suml2 : 0.0f;
  if (return_early) return suml2 > 0 ? 0.5f * (scale + 1 / iscale) : 1 / iscale;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(nmax + 0.1f * is) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::max(-nmax, std::min(nmax - 1, nearest_int(iscale * x[i])));
      const float w = weight(x[i]);
      sumlx += w * x[i] * l;
      suml2 += w * l * l;
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i)
        L[i] = static_cast<int8_t>(nmax + std::max(-nmax, std::min(nmax - 1, nearest_int(iscale * x[i]))));
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// make_q3_quants (Q3_K's sub-block scales).
float make_q3_quants(int n, int nmax, const float* x, int8_t* L, bool do_rmse) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) { amax = ax; max = x[i]; }
  }
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.f;
  }
  const float iscale = -nmax / max;
  if (do_rmse) {
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::max(-nmax, std::min(nmax - 1, nearest_int(iscale * x[i])));
      L[i] = static_cast<int8_t>(l);
      const float w = x[i] * x[i];
      sumlx += w * x[i] * l;
      suml2 += w * l * l;
    }
    for (int itry = 0; itry < 5; ++itry) {
      int n_changed = 0;
      for (int i = 0; i < n; ++i) {
        const float w = x[i] * x[i];
        float slx = sumlx - w * x[i] * L[i];
        if (slx > 0) {
          float sl2 = suml2 - w * L[i] * L[i];
          int new_l = nearest_int(x[i] * sl2 / slx);
          new_l = std::max(-nmax, std::min(nmax - 1, new_l));
          if (new_l != L[i]) {
            slx += w * x[i] * new_l;
            sl2 += w * new_l * new_l;
            if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
              L[i] = static_cast<int8_t>(new_l);
              sumlx = slx;
              suml2 = sl2;
              ++n_changed;
            }
          }
        }
      }
      if (!n_changed) break;
    }
    for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(L[i] + nmax);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
  }
  for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(std::max(-nmax, std::min(nmax - 1, nearest_int(iscale * x[i]))) + nmax);
  return 1 / iscale;
}

// make_qkx2_quants: scale and min of an affine sub-block, searched over nstep+1 scales.
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* the_min,
                       uint8_t* Laux, float rmin, float rdelta, int nstep, bool use_mad) {
  float min = x[0], max = x[0];
  float sum_w = weights[0], sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    const float w = weights[i];
    sum_w += w;
    sum_x += w * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *the_min = -min;
    return 0.f;
  }
  float iscale = nmax / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    const int l = nearest_int(iscale * (x[i] - min));
    L[i] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
    float diff = scale * L[i] + min - x[i];
    diff = use_mad ? std::fabs(diff) : diff * diff;
    best_error += weights[i] * diff;
  }
  if (nstep < 1) {
    *the_min = -min;
    return scale;
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * is + nmax) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::max(0, std::min(nmax, nearest_int(iscale * (x[i] - min))));
      Laux[i] = static_cast<uint8_t>(l);
      const float w = weights[i];
      sum_l += w * l;
      sum_l2 += w * l * l;
      sum_xl += w * l * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur_error = 0;
      for (int i = 0; i < n; ++i) {
        float diff = this_scale * Laux[i] + this_min - x[i];
        diff = use_mad ? std::fabs(diff) : diff * diff;
        cur_error += weights[i] * diff;
      }
      if (cur_error < best_error) {
        for (int i = 0; i < n; ++i) L[i] = Laux[i];
        best_error = cur_error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *the_min = -min;
  return scale;
}

void qnt_q2_k(const float* x, uint8_t* b) {
  uint8_t L[QKK], Laux[16];
  float weights[16], mins[QKK / 16], scales[QKK / 16];
  const float q4scale = 15.f;
  uint8_t* bs = b;
  uint8_t* qs = b + 16;
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < QKK / 16; ++j) {
    for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
    scales[j] = make_qkx2_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux, -0.5f, 0.1f, 15, true);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  if (max_scale > 0) {
    const float iscale = q4scale / max_scale;
    for (int j = 0; j < QKK / 16; ++j) bs[j] = static_cast<uint8_t>(nearest_int(iscale * scales[j]));
    wr_f16(b + 80, max_scale / q4scale);
  } else {
    for (int j = 0; j < QKK / 16; ++j) bs[j] = 0;
    wr_f16(b + 80, 0.f);
  }
  if (max_min > 0) {
    const float iscale = q4scale / max_min;
    for (int j = 0; j < QKK / 16; ++j) bs[j] = static_cast<uint8_t>(bs[j] | (nearest_int(iscale * mins[j]) << 4));
    wr_f16(b + 82, max_min / q4scale);
  } else {
    wr_f16(b + 82, 0.f);
  }
  const float dd = rd_f16(b + 80), dmin = rd_f16(b + 82);
  for (int j = 0; j < QKK / 16; ++j) {
    const float d = dd * (bs[j] & 0xF);
    if (!d) continue;
    const float dm = dmin * (bs[j] >> 4);
    for (int ii = 0; ii < 16; ++ii) {
      const int l = nearest_int((x[16 * j + ii] + dm) / d);
      L[16 * j + ii] = static_cast<uint8_t>(std::max(0, std::min(3, l)));
    }
  }
  for (int j = 0; j < QKK; j += 128)
    for (int l = 0; l < 32; ++l)
      qs[j / 4 + l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
}

void qnt_q3_k(const float* x, uint8_t* b) {
  int8_t L[QKK];
  float scales[QKK / 16];
  uint8_t* hmask = b;
  uint8_t* qs = b + 32;
  uint8_t* s12 = b + 96;
  float max_scale = 0, amax = 0;
  for (int j = 0; j < QKK / 16; ++j) {
    scales[j] = make_q3_quants(16, 4, x + 16 * j, L + 16 * j, true);
    const float scale = std::fabs(scales[j]);
    if (scale > amax) { amax = scale; max_scale = scales[j]; }
  }
  std::memset(s12, 0, 12);
  if (max_scale) {
    const float iscale = -32.f / max_scale;
    for (int j = 0; j < QKK / 16; ++j) {
      int8_t l = static_cast<int8_t>(nearest_int(iscale * scales[j]));
      l = static_cast<int8_t>(std::max<int>(-32, std::min<int>(31, l)) + 32);
      if (j < 8) s12[j] = l & 0xF;
      else s12[j - 8] = static_cast<uint8_t>(s12[j - 8] | ((l & 0xF) << 4));
      l = static_cast<int8_t>(l >> 4);
      s12[j % 4 + 8] = static_cast<uint8_t>(s12[j % 4 + 8] | (l << (2 * (j / 4))));
    }
    wr_f16(b + 108, 1 / iscale);
  } else {
    wr_f16(b + 108, 0.f);
  }
  int8_t sc[16];
  q3k_scales(s12, sc);
  const float dd = rd_f16(b + 108);
  for (int j = 0; j < QKK / 16; ++j) {
    const float d = dd * sc[j];
    if (!d) continue;
    for (int ii = 0; ii < 16; ++ii) {
      const int l = std::max(-4, std::min(3, nearest_int(x[16 * j + ii] / d)));
      L[16 * j + ii] = static_cast<int8_t>(l + 4);
    }
  }
  std::memset(hmask, 0, QKK / 8);
  int m = 0;
  uint8_t hm = 1;
  for (int j = 0; j < QKK; ++j) {
    if (L[j] > 3) {
      hmask[m] |= hm;
      L[j] = static_cast<int8_t>(L[j] - 4);
    }
    if (++m == QKK / 8) { m = 0; hm = static_cast<uint8_t>(hm << 1); }
  }
  for (int j = 0; j < QKK; j += 128)
    for (int l = 0; l < 32; ++l)
      qs[j / 4 + l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
}

// Q4_K and Q5_K share the sub-block search and the 12-byte scale packing; nmax 15 or 31.
void qkx_scales(const float* x, int nmax, float rmin, int nstep, uint8_t* L, uint8_t* b) {
  uint8_t Laux[32];
  float weights[32], mins[QKK / 32], scales[QKK / 32];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < QKK / 32; ++j) {
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
    scales[j] = make_qkx2_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, rmin, 0.1f, nstep, false);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  uint8_t* s = b + 4;
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  for (int j = 0; j < QKK / 32; ++j) {
    uint8_t ls = static_cast<uint8_t>(nearest_int(inv_scale * scales[j]));
    uint8_t lm = static_cast<uint8_t>(nearest_int(inv_min * mins[j]));
    ls = std::min<uint8_t>(63, ls);
    lm = std::min<uint8_t>(63, lm);
    if (j < 4) {
      s[j] = ls;
      s[j + 4] = lm;
    } else {
      s[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
      s[j - 4] = static_cast<uint8_t>(s[j - 4] | ((ls >> 4) << 6));
      s[j - 0] = static_cast<uint8_t>(s[j - 0] | ((lm >> 4) << 6));
    }
  }
  wr_f16(b, max_scale / 63.f);
  wr_f16(b + 2, max_min / 63.f);
  const float dd = rd_f16(b), dmin = rd_f16(b + 2);
  uint8_t sc, m;
  for (int j = 0; j < QKK / 32; ++j) {
    scale_min_k4(j, s, &sc, &m);
    const float d = dd * sc;
    if (!d) continue;
    const float dm = dmin * m;
    for (int ii = 0; ii < 32; ++ii) {
      const int l = nearest_int((x[32 * j + ii] + dm) / d);
      L[32 * j + ii] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
    }
  }
}
void qnt_q4_k(const float* x, uint8_t* b) {
  uint8_t L[QKK];
  std::memset(b + 4, 0, 12);
  qkx_scales(x, 15, -1.f, 20, L, b);
  uint8_t* q = b + 16;
  for (int j = 0; j < QKK; j += 64) {
    for (int l = 0; l < 32; ++l) q[l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 4));
    q += 32;
  }
}
void qnt_q5_k(const float* x, uint8_t* b) {
  uint8_t L[QKK];
  std::memset(b + 4, 0, 12);
  qkx_scales(x, 31, -0.5f, 15, L, b);
  uint8_t* qh = b + 16;
  uint8_t* ql = b + 48;
  std::memset(qh, 0, QKK / 8);
  uint8_t m1 = 1, m2 = 2;
  for (int n = 0; n < QKK; n += 64) {
    for (int j = 0; j < 32; ++j) {
      int l1 = L[n + j], l2 = L[n + j + 32];
      if (l1 > 15) { l1 -= 16; qh[j] |= m1; }
      if (l2 > 15) { l2 -= 16; qh[j] |= m2; }
      ql[j] = static_cast<uint8_t>(l1 | (l2 << 4));
    }
    m1 = static_cast<uint8_t>(m1 << 2);
    m2 = static_cast<uint8_t>(m2 << 2);
    ql += 32;
  }
}
void qnt_q6_k(const float* x, uint8_t* b) {
  int8_t L[QKK];
  float scales[QKK / 16];
  float max_scale = 0, max_abs_scale = 0;
  for (int ib = 0; ib < QKK / 16; ++ib) {
    const float scale = make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib, 1);
    scales[ib] = scale;
    if (std::fabs(scale) > max_abs_scale) { max_abs_scale = std::fabs(scale); max_scale = scale; }
  }
  if (max_abs_scale < kGroupMaxEps) {
    std::memset(b, 0, 210);
    return;
  }
  int8_t* sc = reinterpret_cast<int8_t*>(b + 192);
  const float iscale = -128.f / max_scale;
  wr_f16(b + 208, 1 / iscale);
  for (int ib = 0; ib < QKK / 16; ++ib) sc[ib] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[ib])));
  const float dd = rd_f16(b + 208);
  for (int j = 0; j < QKK / 16; ++j) {
    const float d = dd * sc[j];
    if (!d) continue;
    for (int ii = 0; ii < 16; ++ii) {
      const int l = std::max(-32, std::min(31, nearest_int(x[16 * j + ii] / d)));
      L[16 * j + ii] = static_cast<int8_t>(l + 32);
    }
  }
  uint8_t* ql = b;
  uint8_t* qh = b + 128;
  for (int j = 0; j < QKK; j += 128) {
    for (int l = 0; l < 32; ++l) {
      const uint8_t q1 = L[j + l + 0] & 0xF, q2 = L[j + l + 32] & 0xF;
      const uint8_t q3 = L[j + l + 64] & 0xF, q4 = L[j + l + 96] & 0xF;
      ql[l + 0] = static_cast<uint8_t>(q1 | (q3 << 4));
      ql[l + 32] = static_cast<uint8_t>(q2 | (q4 << 4));
      qh[l] = static_cast<uint8_t>((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) | ((L[j + l + 64] >> 4) << 4) |
                                   ((L[j + l + 96] >> 4) << 6));
    }
    ql += 64;
    qh += 32;
  }
}

using DeqFn = void (*)(const uint8_t*, float*);
using QntFn = void (*)(const float*, uint8_t*);
struct Kernels { DeqFn deq; QntFn qnt; };
Kernels kernels(QuantType t) {
  switch (t) {
    case QuantType::Q4_0: return {deq_q4_0, qnt_q4_0};
    case QuantType::Q4_1: return {deq_q4_1, qnt_q4_1};
    case QuantType::Q5_0: return {deq_q5_0, qnt_q5_0};
    case QuantType::Q5_1: return {deq_q5_1, qnt_q5_1};
    case QuantType::Q8_0: return {deq_q8_0, qnt_q8_0};
    case QuantType::Q2_K: return {deq_q2_k, qnt_q2_k};
    case QuantType::Q3_K: return {deq_q3_k, qnt_q3_k};
    case QuantType::Q4_K: return {deq_q4_k, qnt_q4_k};
    case QuantType::Q5_K: return {deq_q5_k, qnt_q5_k};
    case QuantType::Q6_K: return {deq_q6_k, qnt_q6_k};
    case QuantType::None: break;
  }
  throw Error("quantized type None has no kernels");
}

}  // namespace

const QuantTraits& quant_traits(QuantType t) {
  for (const auto& q : kTraits)
    if (q.type == t) return q;
  throw Error("quant_traits: not a quantized type");
}

const char* quant_name(QuantType t) { return t == QuantType::None ? "" : quant_traits(t).name; }

const QuantTraits* quant_from_ggml_id(uint32_t id) {
  for (const auto& q : kTraits)
    if (q.ggml_id == id) return &q;
  return nullptr;
}

bool quant_from_name(std::string_view s, QuantType* out) {
  std::string u(s);
  for (auto& c : u) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const auto& q : kTraits)
    if (u == q.name) { *out = q.type; return true; }
  return false;
}

std::string quant_names_list() {
  std::string s;
  for (const auto& q : kTraits) {
    if (!s.empty()) s += ", ";
    for (const char* p = q.name; *p; ++p) s += static_cast<char>(std::tolower(static_cast<unsigned char>(*p)));
  }
  return s;
}

bool quant_fits_row(QuantType t, int64_t n) { return n > 0 && n % quant_traits(t).block == 0; }

size_t quant_row_bytes(QuantType t, int64_t n) {
  const QuantTraits& q = quant_traits(t);
  VIDAX_CHECK(n >= 0 && n % q.block == 0, q.name << ": a row of " << n << " values is not a multiple of the "
                                                  << q.block << "-value block");
  return static_cast<size_t>(n / q.block) * static_cast<size_t>(q.block_bytes);
}

void dequantize_row(QuantType t, const void* src, float* dst, int64_t n) {
  const QuantTraits& q = quant_traits(t);
  quant_row_bytes(t, n);
  const DeqFn f = kernels(t).deq;
  const uint8_t* b = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n / q.block; ++i) f(b + i * q.block_bytes, dst + i * q.block);
}

void dequantize_row_bf16(QuantType t, const void* src, uint16_t* dst, int64_t n) {
  const QuantTraits& q = quant_traits(t);
  quant_row_bytes(t, n);
  const DeqFn f = kernels(t).deq;
  const uint8_t* b = static_cast<const uint8_t*>(src);
  float tmp[QKK];
  for (int64_t i = 0; i < n / q.block; ++i) {
    f(b + i * q.block_bytes, tmp);
    uint16_t* d = dst + i * q.block;
    for (int j = 0; j < q.block; ++j) d[j] = f32_to_bf16(tmp[j]);
  }
}

void quantize_row(QuantType t, const float* src, void* dst, int64_t n) {
  const QuantTraits& q = quant_traits(t);
  quant_row_bytes(t, n);
  const QntFn f = kernels(t).qnt;
  uint8_t* b = static_cast<uint8_t*>(dst);
  for (int64_t i = 0; i < n / q.block; ++i) f(src + i * q.block, b + i * q.block_bytes);
}

}  // namespace vidax
