// The runner of parity kind `rng.torch_cpu` (DESIGN.md par. 4): regenerates
// every output.* tensor of the golden file with TorchGenerator.
//   output.randn.<seed>.<AxBxC>.<dtype>          manual_seed(seed); randn(shape, dtype)
//   output.randn_seq.<seed>.<i>.<AxBxC>.<dtype>  call i of consecutive randn calls after
//                                                one manual_seed(seed) (calls 0..i-1 are
//                                                the file's randn_seq.<seed>.<j<i> entries)
// bf16/f16 results are returned as F32, as the golden stores them.
#include <map>
#include <sstream>

#include "core/rng.h"
#include "parity/parity.h"
#include "sched/parity_runners.h"

namespace vidax {
namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, sep)) parts.push_back(part);
  return parts;
}

Shape parse_shape(const std::string& name, const std::string& s) {
  Shape shape;
  for (const auto& p : split(s, 'x')) {
    VIDAX_CHECK(!p.empty() && p.find_first_not_of("0123456789") == std::string::npos,
                "rng.torch_cpu: tensor " << name << ": bad shape '" << s << "' (expected e.g. 16x3x6x10)");
    shape.push_back(std::stoll(p));
  }
  return shape;
}

uint64_t parse_seed(const std::string& name, const std::string& s) {
  VIDAX_CHECK(!s.empty() && s.find_first_not_of("0123456789") == std::string::npos,
              "rng.torch_cpu: tensor " << name << ": bad seed '" << s << "'");
  return std::stoull(s);
}

Tensor as_stored(const Tensor& t) {
  return (t.dtype() == DType::BF16 || t.dtype() == DType::F16) ? t.to(DType::F32) : t;
}

}  // namespace

parity::Produced run_rng_torch_cpu(const parity::Golden& g, const parity::Options&) {
  TorchGeneratorOptions opt;
  VIDAX_CHECK(g.config.contains("torch_version"), g.path << ": rng.torch_cpu config needs \"torch_version\"");
  opt.version = parse_torch_version(g.config.at("torch_version").get<std::string>());
  const std::string kernel = g.config.value("cpu_kernel", std::string("avx2"));
  VIDAX_CHECK(kernel == "avx2" || kernel == "default",
              g.path << ": cpu_kernel '" << kernel << "' (expected \"avx2\" or \"default\")");
  opt.kernel = kernel == "avx2" ? TorchCpuKernel::Avx2 : TorchCpuKernel::Default;

  parity::Produced out;
  // seed -> (call index -> (name, shape, dtype)), replayed in order on one generator.
  std::map<std::string, std::map<int, std::tuple<std::string, Shape, DType>>> sequences;
  for (const auto& name : g.file.names()) {
    if (name.rfind("output.", 0) != 0) continue;
    auto p = split(name, '.');
    if (p.size() == 5 && p[1] == "randn") {
      TorchGenerator gen(parse_seed(name, p[2]), opt);
      out[name] = as_stored(gen.randn(parse_shape(name, p[3]), dtype_parse(p[4])));
    } else if (p.size() == 6 && p[1] == "randn_seq") {
      parse_seed(name, p[2]);
      sequences[p[2]][std::stoi(p[3])] = {name, parse_shape(name, p[4]), dtype_parse(p[5])};
    } else {
      throw Error(msg() << g.path << ": rng.torch_cpu: unexpected tensor " << name
                        << " (expected output.randn.<seed>.<AxB>.<dtype> or output.randn_seq.<seed>.<i>.<AxB>.<dtype>)");
    }
  }
  for (const auto& [seed, calls] : sequences) {
    TorchGenerator gen(parse_seed(seed, seed), opt);
    int expected_index = 0;
    for (const auto& [i, call] : calls) {
      VIDAX_CHECK(i == expected_index, g.path << ": randn_seq." << seed << " lacks call " << expected_index);
      ++expected_index;
      const auto& [name, shape, dtype] = call;
      out[name] = as_stored(gen.randn(shape, dtype));
    }
  }
  return out;
}

}  // namespace vidax
