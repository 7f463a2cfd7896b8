#include "translate/source.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace vidax::translate {

const std::map<std::string, std::string>& TensorSource::metadata() const {
  static const std::map<std::string, std::string> empty;
  return empty;
}

void MemorySource::add(const std::string& name, DType dtype, const Shape& shape) {
  VIDAX_CHECK(!infos_.count(name), label_ << ": duplicate tensor name '" << name << "'");
  infos_[name] = TensorInfo{name, dtype, shape, label_};
}

void MemorySource::add(const std::string& name, const Tensor& t) {
  add(name, t.dtype(), t.shape());
  infos_[name].quant = t.quant();
  data_[name] = t;
}

void MemorySource::remove(const std::string& name) {
  VIDAX_CHECK(infos_.erase(name) == 1, label_ << ": no tensor '" << name << "' to remove");
  data_.erase(name);
}

std::vector<std::string> MemorySource::names() const {
  std::vector<std::string> out;
  out.reserve(infos_.size());
  for (const auto& [k, v] : infos_) out.push_back(k);
  return out;
}

const TensorInfo* MemorySource::find(const std::string& name) const {
  auto it = infos_.find(name);
  return it == infos_.end() ? nullptr : &it->second;
}

Tensor MemorySource::get(const std::string& name) const {
  VIDAX_CHECK(infos_.count(name), label_ << ": no tensor '" << name << "'");
  auto it = data_.find(name);
  VIDAX_CHECK(it != data_.end(), label_ << ": tensor '" << name << "' has a shape but no data (shape-only source)");
  return it->second;
}

SubsetSource::SubsetSource(std::shared_ptr<const TensorSource> base, std::function<bool(const std::string&)> keep,
                           std::string label)
    : base_(std::move(base)), label_(label.empty() ? base_->label() : std::move(label)) {
  for (const auto& n : base_->names())
    if (keep(n)) names_.push_back(n);
}

const TensorInfo* SubsetSource::find(const std::string& name) const {
  if (!std::binary_search(names_.begin(), names_.end(), name)) return nullptr;
  return base_->find(name);
}

Tensor SubsetSource::get(const std::string& name) const {
  VIDAX_CHECK(std::binary_search(names_.begin(), names_.end(), name), label_ << ": no tensor '" << name << "'");
  return base_->get(name);
}

static Shape parse_shape(const std::string& s, const std::string& where) {
  VIDAX_CHECK(s.size() >= 2 && s.front() == '[' && s.back() == ']', where << ": bad shape '" << s << "'");
  Shape out;
  std::string body = s.substr(1, s.size() - 2);
  std::stringstream ss(body);
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    VIDAX_CHECK(!tok.empty() && tok.find_first_not_of("0123456789") == std::string::npos,
                where << ": bad dimension '" << tok << "' in shape " << s);
    out.push_back(std::stoll(tok));
  }
  return out;
}

std::shared_ptr<MemorySource> read_key_list(const std::string& path) {
  std::ifstream f(path);
  VIDAX_CHECK(f, "cannot open key list " << path);
  auto src = std::make_shared<MemorySource>(path);
  std::string line;
  int lineno = 0;
  while (std::getline(f, line)) {
    ++lineno;
    if (line.empty() || line[0] == '#') continue;
    std::stringstream ss(line);
    std::string name, dtype, shape;
    std::getline(ss, name, '\t');
    std::getline(ss, dtype, '\t');
    std::getline(ss, shape, '\t');
    std::string where = path + ":" + std::to_string(lineno);
    DType dt;
    VIDAX_CHECK(dtype_from_name(dtype, &dt), where << ": unknown dtype '" << dtype << "'");
    src->add(name, dt, parse_shape(shape, where));
  }
  return src;
}

}  // namespace vidax::translate
