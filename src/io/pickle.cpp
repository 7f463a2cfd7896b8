#include "io/pickle.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <string_view>
#include <unordered_map>

#include "core/error.h"

namespace vidax::io::pickle {

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::None: return "None";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::Str: return "str";
    case Kind::Bytes: return "bytes";
    case Kind::Tuple: return "tuple";
    case Kind::List: return "list";
    case Kind::Dict: return "dict";
    case Kind::Set: return "set";
    case Kind::Global: return "global";
    case Kind::Storage: return "storage";
    case Kind::Tensor: return "tensor";
  }
  return "?";
}

namespace {

// ---- the allow-list (torch.load(weights_only=True)'s, minus what vidax cannot hold) ----
enum class G {
  OrderedDict, Size, CodecsEncode,
  RebuildTensor, RebuildTensorV2, RebuildTensorV3, RebuildParameter, RebuildParameterWithState,
  TypedStorage, UntypedStorage, DTypeObj,
};
struct AllowedGlobal { const char* name; G what; DType dtype; };
constexpr AllowedGlobal kAllowed[] = {
    {"collections.OrderedDict", G::OrderedDict, DType::U8},
    {"torch.Size", G::Size, DType::U8},
    {"_codecs.encode", G::CodecsEncode, DType::U8},
    {"torch._utils._rebuild_tensor", G::RebuildTensor, DType::U8},
    {"torch._utils._rebuild_tensor_v2", G::RebuildTensorV2, DType::U8},
    {"torch._utils._rebuild_tensor_v3", G::RebuildTensorV3, DType::U8},
    {"torch._utils._rebuild_parameter", G::RebuildParameter, DType::U8},
    {"torch._utils._rebuild_parameter_with_state", G::RebuildParameterWithState, DType::U8},
    {"torch.storage.UntypedStorage", G::UntypedStorage, DType::U8},
    {"torch.UntypedStorage", G::UntypedStorage, DType::U8},
    // Typed storages: the legacy class names torch.save still writes for the classic dtypes.
    {"torch.DoubleStorage", G::TypedStorage, DType::F64},
    {"torch.FloatStorage", G::TypedStorage, DType::F32},
    {"torch.HalfStorage", G::TypedStorage, DType::F16},
    {"torch.BFloat16Storage", G::TypedStorage, DType::BF16},
    {"torch.LongStorage", G::TypedStorage, DType::I64},
    {"torch.IntStorage", G::TypedStorage, DType::I32},
    {"torch.ShortStorage", G::TypedStorage, DType::I16},
    {"torch.CharStorage", G::TypedStorage, DType::I8},
    {"torch.ByteStorage", G::TypedStorage, DType::U8},
    {"torch.BoolStorage", G::TypedStorage, DType::Bool},
    {"torch.Float8_e4m3fnStorage", G::TypedStorage, DType::F8_E4M3},
    {"torch.Float8_e5m2Storage", G::TypedStorage, DType::F8_E5M2},
    // Old checkpoints saved from a GPU name the CUDA classes; the bytes are the same.
    {"torch.cuda.DoubleStorage", G::TypedStorage, DType::F64},
    {"torch.cuda.FloatStorage", G::TypedStorage, DType::F32},
    {"torch.cuda.HalfStorage", G::TypedStorage, DType::F16},
    {"torch.cuda.BFloat16Storage", G::TypedStorage, DType::BF16},
    {"torch.cuda.LongStorage", G::TypedStorage, DType::I64},
    {"torch.cuda.IntStorage", G::TypedStorage, DType::I32},
    {"torch.cuda.ShortStorage", G::TypedStorage, DType::I16},
    {"torch.cuda.CharStorage", G::TypedStorage, DType::I8},
    {"torch.cuda.ByteStorage", G::TypedStorage, DType::U8},
    {"torch.cuda.BoolStorage", G::TypedStorage, DType::Bool},
    // dtype objects (_rebuild_tensor_v3 passes one for dtypes without a typed storage class).
    {"torch.float64", G::DTypeObj, DType::F64},
    {"torch.float32", G::DTypeObj, DType::F32},
    {"torch.float16", G::DTypeObj, DType::F16},
    {"torch.bfloat16", G::DTypeObj, DType::BF16},
    {"torch.float8_e4m3fn", G::DTypeObj, DType::F8_E4M3},
    {"torch.float8_e5m2", G::DTypeObj, DType::F8_E5M2},
    {"torch.int64", G::DTypeObj, DType::I64},
    {"torch.int32", G::DTypeObj, DType::I32},
    {"torch.int16", G::DTypeObj, DType::I16},
    {"torch.int8", G::DTypeObj, DType::I8},
    {"torch.uint64", G::DTypeObj, DType::U64},
    {"torch.uint32", G::DTypeObj, DType::U32},
    {"torch.uint16", G::DTypeObj, DType::U16},
    {"torch.uint8", G::DTypeObj, DType::U8},
    {"torch.bool", G::DTypeObj, DType::Bool},
};

const AllowedGlobal* find_allowed(std::string_view name) {
  for (const auto& a : kAllowed)
    if (name == a.name) return &a;
  return nullptr;
}

// Opcode bytes (pickletools names).
namespace op {
constexpr uint8_t MARK = '(', STOP = '.', POP = '0', POP_MARK = '1', DUP = '2', INT = 'I', BININT = 'J',
                  BININT1 = 'K', BININT2 = 'M', NONE = 'N', BINPERSID = 'Q', REDUCE = 'R', BINSTRING = 'T',
                  SHORT_BINSTRING = 'U', BINUNICODE = 'X', APPEND = 'a', BUILD = 'b', GLOBAL = 'c', DICT = 'd',
                  EMPTY_DICT = '}', APPENDS = 'e', GET = 'g', BINGET = 'h', LONG_BINGET = 'j', LIST = 'l',
                  EMPTY_LIST = ']', PUT = 'p', BINPUT = 'q', LONG_BINPUT = 'r', SETITEM = 's', TUPLE = 't',
                  EMPTY_TUPLE = ')', SETITEMS = 'u', BINFLOAT = 'G', BINBYTES = 'B', SHORT_BINBYTES = 'C',
                  PROTO = 0x80, NEWOBJ = 0x81, EXT1 = 0x82, EXT2 = 0x83, EXT4 = 0x84, TUPLE1 = 0x85, TUPLE2 = 0x86,
                  TUPLE3 = 0x87, NEWTRUE = 0x88, NEWFALSE = 0x89, LONG1 = 0x8a, LONG4 = 0x8b,
                  SHORT_BINUNICODE = 0x8c, BINUNICODE8 = 0x8d, BINBYTES8 = 0x8e, EMPTY_SET = 0x8f,
                  ADDITEMS = 0x90, FROZENSET = 0x91, NEWOBJ_EX = 0x92, STACK_GLOBAL = 0x93, MEMOIZE = 0x94,
                  FRAME = 0x95, BYTEARRAY8 = 0x96;
}  // namespace op

constexpr size_t kMaxRank = 64;  // torch's own limit on tensor dimensions

class Reader {
 public:
  Reader(const uint8_t* data, size_t size, const std::string& where) : d_(data), n_(size), where_(where) {}

  Unpickled run() {
    while (true) {
      VIDAX_CHECK(pos_ < n_, where_ << ": pickle ends without a STOP opcode (truncated?)");
      op_pos_ = pos_;
      const uint8_t code = d_[pos_++];
      if (code == op::STOP) break;
      step(code);
    }
    VIDAX_CHECK(!stack_.empty(), where_ << ": pickle STOP with an empty stack");
    out_.root = stack_.back();
    out_.end = pos_;
    return std::move(out_);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(msg() << where_ << ": pickle byte " << op_pos_ << ": " << what);
  }
  void need(size_t k) const {
    if (k > n_ - pos_) fail(msg() << "needs " << k << " more bytes, only " << (n_ - pos_) << " left (truncated?)");
  }
  uint64_t le(size_t k) {
    need(k);
    uint64_t v = 0;
    for (size_t i = k; i-- > 0;) v = (v << 8) | d_[pos_ + i];
    pos_ += k;
    return v;
  }
  std::string bytes(uint64_t k) {
    if (k > n_ - pos_) fail(msg() << "string of " << k << " bytes runs past the end (" << (n_ - pos_) << " left)");
    std::string s(reinterpret_cast<const char*>(d_ + pos_), static_cast<size_t>(k));
    pos_ += static_cast<size_t>(k);
    return s;
  }
  std::string line() {
    const void* nl = std::memchr(d_ + pos_, '\n', n_ - pos_);
    if (!nl) fail("unterminated text argument");
    size_t len = static_cast<size_t>(static_cast<const uint8_t*>(nl) - (d_ + pos_));
    std::string s(reinterpret_cast<const char*>(d_ + pos_), len);
    pos_ += len + 1;
    return s;
  }

  const Object& obj(ObjId id) const { return out_.objects[id]; }
  ObjId make(Object o) {
    if (out_.objects.size() >= std::numeric_limits<ObjId>::max()) fail("too many objects");
    out_.objects.push_back(std::move(o));
    return static_cast<ObjId>(out_.objects.size() - 1);
  }
  ObjId make(Kind k) { Object o; o.kind = k; return make(std::move(o)); }
  ObjId make_int(Kind k, int64_t v) { Object o; o.kind = k; o.i = v; return make(std::move(o)); }
  ObjId make_str(Kind k, std::string s) { Object o; o.kind = k; o.s = std::move(s); return make(std::move(o)); }
  void push(ObjId id) { stack_.push_back(id); }
  size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  ObjId pop() {
    if (stack_.size() <= floor()) fail("stack underflow");
    ObjId id = stack_.back();
    stack_.pop_back();
    return id;
  }
  ObjId top() const {
    if (stack_.size() <= floor()) fail("stack underflow");
    return stack_.back();
  }
  std::vector<ObjId> pop_mark() {
    if (marks_.empty()) fail("no MARK on the stack");
    size_t m = marks_.back();
    marks_.pop_back();
    std::vector<ObjId> items(stack_.begin() + static_cast<ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return items;
  }
  Object& mutable_obj(ObjId id, Kind want, const char* opname) {
    Object& o = out_.objects[id];
    if (o.kind != want) fail(msg() << opname << " on a " << kind_name(o.kind) << ", expected a " << kind_name(want));
    return o;
  }
  void memo_put(uint64_t idx) {
    if (idx > (uint64_t(1) << 32)) fail("memo index too large");
    memo_[idx] = top();
  }
  void memo_get(uint64_t idx) {
    auto it = memo_.find(idx);
    if (it == memo_.end()) fail(msg() << "memo key " << idx << " was never stored");
    push(it->second);
  }
  ObjId make_tuple(std::vector<ObjId> items) {
    Object o;
    o.kind = Kind::Tuple;
    o.items = std::move(items);
    return make(std::move(o));
  }
  // LONG1/LONG4: little-endian two's complement of any width; vidax keeps int64.
  ObjId make_long(uint64_t k) {
    if (k > 8) fail(msg() << "integer of " << k << " bytes does not fit in 64 bits");
    need(static_cast<size_t>(k));
    uint64_t v = 0;
    for (size_t i = static_cast<size_t>(k); i-- > 0;) v = (v << 8) | d_[pos_ + i];
    if (k > 0 && k < 8 && (d_[pos_ + k - 1] & 0x80)) v |= ~uint64_t(0) << (8 * k);  // sign-extend
    pos_ += static_cast<size_t>(k);
    return make_int(Kind::Int, static_cast<int64_t>(v));
  }
  ObjId make_global(const std::string& module, const std::string& name) {
    std::string full = module + "." + name;
    const AllowedGlobal* a = find_allowed(full);
    if (!a) fail(msg() << "refused global '" << full << "': not one of the tensor-rebuilding globals"
                        << " torch.load(weights_only=True) accepts (vidax never executes pickled code)");
    Object o;
    o.kind = Kind::Global;
    o.s = std::move(full);
    o.i = a - kAllowed;
    return make(std::move(o));
  }

  // Copies made from memoized objects are charged against a budget
  // proportional to the input, so a small pickle cannot demand quadratic work.
  void charge(size_t units) {
    budget_used_ += units;
    if (budget_used_ > 16 * n_ + (size_t(1) << 20)) fail("pickle demands too much copying (malicious input?)");
  }
  void step(uint8_t code);
  ObjId reduce(ObjId callable, ObjId args);
  ObjId persistent_load(ObjId pid);
  ObjId rebuild_tensor(const std::vector<ObjId>& a, G which);
  int64_t as_int(ObjId id, const char* what) const {
    const Object& o = obj(id);
    if (o.kind != Kind::Int && o.kind != Kind::Bool) fail(msg() << what << " must be an int, found " << kind_name(o.kind));
    return o.i;
  }
  std::vector<int64_t> as_int_tuple(ObjId id, const char* what) const {
    const Object& o = obj(id);
    if (o.kind != Kind::Tuple && o.kind != Kind::List)
      fail(msg() << what << " must be a tuple of ints, found " << kind_name(o.kind));
    std::vector<int64_t> v;
    for (ObjId e : o.items) v.push_back(as_int(e, what));
    return v;
  }
  const std::string& as_str(ObjId id, const char* what) const {
    const Object& o = obj(id);
    if (o.kind != Kind::Str) fail(msg() << what << " must be a str, found " << kind_name(o.kind));
    return o.s;
  }

  const uint8_t* d_;
  size_t n_;
  const std::string& where_;
  size_t pos_ = 0, op_pos_ = 0, budget_used_ = 0;
  std::vector<ObjId> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, ObjId> memo_;
  std::map<std::string, size_t> storage_by_key_;
  Unpickled out_;
};

void Reader::step(uint8_t code) {
  switch (code) {
    case op::PROTO: {
      uint64_t v = le(1);
      if (v > 5) fail(msg() << "unsupported pickle protocol " << v);
      return;
    }
    case op::FRAME: le(8); return;  // framing is only a read-ahead hint
    case op::MARK: marks_.push_back(stack_.size()); return;
    case op::POP: pop(); return;
    case op::POP_MARK: pop_mark(); return;
    case op::DUP: push(top()); return;
    case op::NONE: push(make(Kind::None)); return;
    case op::NEWTRUE: push(make_int(Kind::Bool, 1)); return;
    case op::NEWFALSE: push(make_int(Kind::Bool, 0)); return;
    case op::BININT: push(make_int(Kind::Int, static_cast<int32_t>(static_cast<uint32_t>(le(4))))); return;
    case op::BININT1: push(make_int(Kind::Int, static_cast<int64_t>(le(1)))); return;
    case op::BININT2: push(make_int(Kind::Int, static_cast<int64_t>(le(2)))); return;
    case op::LONG1: push(make_long(le(1))); return;
    case op::LONG4: push(make_long(le(4))); return;
    case op::INT: {  // protocol 0 text int; "00"/"01" are False/True
      std::string s = line();
      if (s == "00" || s == "01") { push(make_int(Kind::Bool, s == "01")); return; }
      char* end = nullptr;
      errno = 0;
      long long v = std::strtoll(s.c_str(), &end, 10);
      if (s.empty() || *end != '\0' || errno == ERANGE) fail(msg() << "bad INT argument '" << s << "'");
      push(make_int(Kind::Int, v));
      return;
    }
    case op::BINFLOAT: {
      uint64_t bits = 0;
      need(8);
      for (int i = 0; i < 8; ++i) bits = (bits << 8) | d_[pos_ + static_cast<size_t>(i)];  // big-endian
      pos_ += 8;
      Object o;
      o.kind = Kind::Float;
      std::memcpy(&o.f, &bits, 8);
      push(make(std::move(o)));
      return;
    }
    case op::BINUNICODE: push(make_str(Kind::Str, bytes(le(4)))); return;
    case op::SHORT_BINUNICODE: push(make_str(Kind::Str, bytes(le(1)))); return;
    case op::BINUNICODE8: push(make_str(Kind::Str, bytes(le(8)))); return;
    case op::BINSTRING: push(make_str(Kind::Str, bytes(le(4)))); return;  // Python 2 str
    case op::SHORT_BINSTRING: push(make_str(Kind::Str, bytes(le(1)))); return;
    case op::BINBYTES: push(make_str(Kind::Bytes, bytes(le(4)))); return;
    case op::SHORT_BINBYTES: push(make_str(Kind::Bytes, bytes(le(1)))); return;
    case op::BINBYTES8: push(make_str(Kind::Bytes, bytes(le(8)))); return;
    case op::BYTEARRAY8: push(make_str(Kind::Bytes, bytes(le(8)))); return;
    case op::EMPTY_TUPLE: push(make_tuple({})); return;
    case op::TUPLE: push(make_tuple(pop_mark())); return;
    case op::TUPLE1: { ObjId a = pop(); push(make_tuple({a})); return; }
    case op::TUPLE2: { ObjId b = pop(), a = pop(); push(make_tuple({a, b})); return; }
    case op::TUPLE3: { ObjId c = pop(), b = pop(), a = pop(); push(make_tuple({a, b, c})); return; }
    case op::EMPTY_LIST: push(make(Kind::List)); return;
    case op::LIST: { Object o; o.kind = Kind::List; o.items = pop_mark(); push(make(std::move(o))); return; }
    case op::APPEND: {
      ObjId v = pop();
      mutable_obj(top(), Kind::List, "APPEND").items.push_back(v);
      return;
    }
    case op::APPENDS: {
      std::vector<ObjId> items = pop_mark();
      auto& list = mutable_obj(top(), Kind::List, "APPENDS").items;
      list.insert(list.end(), items.begin(), items.end());
      return;
    }
    case op::EMPTY_DICT: push(make(Kind::Dict)); return;
    case op::DICT: {
      std::vector<ObjId> items = pop_mark();
      if (items.size() % 2) fail("DICT with an odd number of items");
      Object o;
      o.kind = Kind::Dict;
      o.items = std::move(items);
      push(make(std::move(o)));
      return;
    }
    case op::SETITEM: {
      ObjId v = pop(), k = pop();
      auto& d = mutable_obj(top(), Kind::Dict, "SETITEM").items;
      d.push_back(k);
      d.push_back(v);
      return;
    }
    case op::SETITEMS: {
      std::vector<ObjId> items = pop_mark();
      if (items.size() % 2) fail("SETITEMS with an odd number of items");
      auto& d = mutable_obj(top(), Kind::Dict, "SETITEMS").items;
      d.insert(d.end(), items.begin(), items.end());
      return;
    }
    case op::EMPTY_SET: push(make(Kind::Set)); return;
    case op::ADDITEMS: {
      std::vector<ObjId> items = pop_mark();
      auto& s = mutable_obj(top(), Kind::Set, "ADDITEMS").items;
      s.insert(s.end(), items.begin(), items.end());
      return;
    }
    case op::FROZENSET: { Object o; o.kind = Kind::Set; o.items = pop_mark(); push(make(std::move(o))); return; }
    case op::BINPUT: memo_put(le(1)); return;
    case op::LONG_BINPUT: memo_put(le(4)); return;
    case op::MEMOIZE: memo_put(memo_.size()); return;
    case op::PUT: {
      std::string s = line();
      char* end = nullptr;
      unsigned long long v = std::strtoull(s.c_str(), &end, 10);
      if (s.empty() || *end != '\0') fail(msg() << "bad PUT argument '" << s << "'");
      memo_put(v);
      return;
    }
    case op::BINGET: memo_get(le(1)); return;
    case op::LONG_BINGET: memo_get(le(4)); return;
    case op::GET: {
      std::string s = line();
      char* end = nullptr;
      unsigned long long v = std::strtoull(s.c_str(), &end, 10);
      if (s.empty() || *end != '\0') fail(msg() << "bad GET argument '" << s << "'");
      memo_get(v);
      return;
    }
    case op::GLOBAL: {
      std::string module = line();
      std::string name = line();
      push(make_global(module, name));
      return;
    }
    case op::STACK_GLOBAL: {
      ObjId name = pop(), module = pop();
      push(make_global(as_str(module, "STACK_GLOBAL module"), as_str(name, "STACK_GLOBAL name")));
      return;
    }
    case op::REDUCE: {
      ObjId args = pop(), callable = pop();
      push(reduce(callable, args));
      return;
    }
    case op::BUILD: {
      ObjId state = pop();
      (void)state;
      const Object& target = obj(top());
      // OrderedDict state dicts carry a `_metadata` attribute (module versions):
      // not weights, dropped. Anything else would need code to run.
      if (target.kind != Kind::Dict) fail(msg() << "BUILD on a " << kind_name(target.kind) << " is not supported");
      return;
    }
    case op::BINPERSID: { ObjId pid = pop(); push(persistent_load(pid)); return; }
    case op::NEWOBJ:
    case op::NEWOBJ_EX: {
      fail("NEWOBJ (instantiating a class) is refused: torch state dicts never need it");
    }
    case op::EXT1: case op::EXT2: case op::EXT4: fail("EXT (extension registry) opcodes are refused");
    case 'i': case 'o': fail("INST/OBJ (instantiating a class) is refused");
    case 'P': fail("PERSID (text persistent id) is not used by torch.save and is refused");
    default: fail(msg() << "unsupported pickle opcode 0x" << std::hex << int(code));
  }
}

ObjId Reader::reduce(ObjId callable, ObjId args_id) {
  const Object& c = obj(callable);
  if (c.kind != Kind::Global) fail(msg() << "REDUCE on a " << kind_name(c.kind) << ", not a global");
  const AllowedGlobal& g = kAllowed[c.i];
  const Object& args_obj = obj(args_id);
  if (args_obj.kind != Kind::Tuple) fail(msg() << "REDUCE arguments of " << g.name << " are not a tuple");
  const std::vector<ObjId> a = args_obj.items;  // copy: make() may reallocate objects
  switch (g.what) {
    case G::OrderedDict: {
      // OrderedDict.__reduce__ pickles as OrderedDict() followed by SETITEMS.
      if (!a.empty()) fail("OrderedDict with constructor arguments is not supported");
      return make(Kind::Dict);
    }
    case G::Size: {
      // Tuples are immutable: torch.Size((...)) is that same tuple (no copy).
      if (a.size() != 1 || obj(a[0]).kind != Kind::Tuple) fail("torch.Size takes one tuple");
      return a[0];
    }
    case G::CodecsEncode: {  // how protocol 2 pickles bytes: _codecs.encode(str, 'latin1')
      if (a.empty() || a.size() > 2) fail("_codecs.encode takes (str, encoding)");
      const std::string& text = as_str(a[0], "_codecs.encode argument");
      std::string enc = a.size() == 2 ? as_str(a[1], "_codecs.encode encoding") : "utf-8";
      if (enc == "utf-8" || enc == "utf8") { charge(text.size()); return make_str(Kind::Bytes, text); }
      if (enc != "latin1" && enc != "latin-1") fail(msg() << "_codecs.encode encoding '" << enc << "' is not supported");
      std::string out;
      for (size_t i = 0; i < text.size();) {  // UTF-8 code points <= 0xFF -> bytes
        uint8_t b = static_cast<uint8_t>(text[i]);
        if (b < 0x80) { out.push_back(static_cast<char>(b)); ++i; continue; }
        if ((b & 0xE0) == 0xC0 && i + 1 < text.size() && b <= 0xC3) {
          out.push_back(static_cast<char>(((b & 0x1F) << 6) | (static_cast<uint8_t>(text[i + 1]) & 0x3F)));
          i += 2;
          continue;
        }
        fail("_codecs.encode: text is not latin-1");
      }
      charge(out.size());
      return make_str(Kind::Bytes, std::move(out));
    }
    case G::RebuildTensor:
    case G::RebuildTensorV2:
    case G::RebuildTensorV3: return rebuild_tensor(a, g.what);
    case G::RebuildParameter:
    case G::RebuildParameterWithState: {
      if (a.empty() || obj(a[0]).kind != Kind::Tensor) fail(msg() << g.name << " expects a tensor first");
      return a[0];
    }
    case G::TypedStorage:
    case G::UntypedStorage:
    case G::DTypeObj: fail(msg() << g.name << " cannot be called");
  }
  fail("unreachable");
}

// ('storage', storage_type, key, location, numel[, view_metadata])
ObjId Reader::persistent_load(ObjId pid_id) {
  const Object& pid = obj(pid_id);
  if (pid.kind != Kind::Tuple || pid.items.size() < 5 || pid.items.size() > 6)
    fail("persistent id is not ('storage', type, key, location, numel)");
  const std::vector<ObjId> p = pid.items;
  if (as_str(p[0], "persistent id tag") != "storage") fail("persistent id tag is not 'storage'");
  const Object& type = obj(p[1]);
  if (type.kind != Kind::Global) fail("storage type is not a global");
  const AllowedGlobal& g = kAllowed[type.i];
  if (g.what != G::TypedStorage && g.what != G::UntypedStorage) fail(msg() << "'" << g.name << "' is not a storage type");
  std::string key = obj(p[2]).kind == Kind::Int ? std::to_string(obj(p[2]).i) : as_str(p[2], "storage key");
  (void)as_str(p[3], "storage location");
  int64_t numel = as_int(p[4], "storage numel");
  if (numel < 0) fail("negative storage size");
  if (p.size() == 6 && obj(p[5]).kind != Kind::None) fail("legacy storage views are not supported");
  StorageRef s;
  s.key = key;
  s.type = g.name;
  s.dtype = g.what == G::TypedStorage ? g.dtype : DType::U8;
  uint64_t nbytes = 0;
  if (__builtin_mul_overflow(uint64_t(numel), uint64_t(dtype_size(s.dtype)), &nbytes)) fail("storage size overflows");
  s.nbytes = nbytes;
  size_t idx;
  auto it = storage_by_key_.find(key);
  if (it != storage_by_key_.end()) {
    idx = it->second;
    const StorageRef& prev = out_.storages[idx];
    if (prev.nbytes != s.nbytes)
      fail(msg() << "storage '" << key << "' is declared with " << prev.nbytes << " and " << s.nbytes << " bytes");
  } else {
    idx = out_.storages.size();
    out_.storages.push_back(std::move(s));
    storage_by_key_[key] = idx;
  }
  return make_int(Kind::Storage, static_cast<int64_t>(idx));
}

// _rebuild_tensor(storage, offset, size, stride)
// _rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks[, metadata])
// _rebuild_tensor_v3(storage, offset, size, stride, requires_grad, hooks, dtype[, metadata])
ObjId Reader::rebuild_tensor(const std::vector<ObjId>& a, G which) {
  const size_t min_args = which == G::RebuildTensor ? 4 : which == G::RebuildTensorV2 ? 6 : 7;
  if (a.size() < min_args || a.size() > min_args + 1) fail(msg() << "tensor rebuild with " << a.size() << " arguments");
  const Object& st = obj(a[0]);
  if (st.kind != Kind::Storage) fail(msg() << "tensor rebuild from a " << kind_name(st.kind) << ", not a storage");
  TensorRef t;
  t.storage = static_cast<size_t>(st.i);
  const StorageRef& s = out_.storages[t.storage];
  t.dtype = s.dtype;
  if (which == G::RebuildTensorV3) {
    const Object& d = obj(a[6]);
    if (d.kind != Kind::Global || kAllowed[d.i].what != G::DTypeObj) fail("tensor dtype argument is not a torch dtype");
    t.dtype = kAllowed[d.i].dtype;
  } else if (s.type.find("UntypedStorage") != std::string::npos) {
    fail("an untyped storage needs _rebuild_tensor_v3 (with a dtype)");
  }
  t.offset = as_int(a[1], "storage offset");
  if (obj(a[2]).items.size() > kMaxRank || obj(a[3]).items.size() > kMaxRank)
    fail(msg() << "tensor rank above " << kMaxRank);
  t.shape = as_int_tuple(a[2], "tensor size");
  t.strides = as_int_tuple(a[3], "tensor stride");
  if (t.shape.size() != t.strides.size()) fail("tensor size and stride have different ranks");
  if (t.offset < 0) fail("negative storage offset");
  // The furthest element must lie inside the storage (checked with overflow care).
  const uint64_t es = dtype_size(t.dtype);
  uint64_t numel = 1, reach = static_cast<uint64_t>(t.offset);
  bool overflow = false;
  for (size_t i = 0; i < t.shape.size(); ++i) {
    if (t.shape[i] < 0 || t.strides[i] < 0) fail("negative tensor size or stride");
    overflow |= __builtin_mul_overflow(numel, uint64_t(t.shape[i]), &numel);
  }
  for (size_t i = 0; i < t.shape.size() && numel > 0; ++i) {
    uint64_t span = 0;
    overflow |= __builtin_mul_overflow(uint64_t(t.shape[i] - 1), uint64_t(t.strides[i]), &span);
    overflow |= __builtin_add_overflow(reach, span, &reach);
  }
  uint64_t end_bytes = 0;
  overflow |= __builtin_mul_overflow(reach + 1, es, &end_bytes);
  if (overflow || numel > uint64_t(INT64_MAX)) fail("tensor size overflows");
  if (numel > 0 && end_bytes > s.nbytes)
    fail(msg() << "tensor " << dtype_name(t.dtype) << shape_str(t.shape) << " at offset " << t.offset
               << " reaches byte " << end_bytes << " of storage '" << s.key << "', which holds " << s.nbytes);
  out_.tensors.push_back(std::move(t));
  return make_int(Kind::Tensor, static_cast<int64_t>(out_.tensors.size() - 1));
}

struct Flattener {
  const Unpickled& u;
  const std::string& where;
  std::vector<std::pair<std::string, size_t>> out;
  std::set<std::string> seen;
  size_t visits_left = 16 * u.objects.size() + 1024;  // shared sub-containers may be visited more than once
  static constexpr int kMaxDepth = 64;

  void walk(ObjId id, const std::string& name, int depth) {
    const Object& o = u.objects[id];
    VIDAX_CHECK(visits_left-- > 0, where << ": pickle structure too large to flatten (shared containers?)");
    if (depth > kMaxDepth) throw Error(msg() << where << ": containers nested deeper than " << kMaxDepth << " at '" << name << "'");
    auto child = [&](const std::string& k) { return name.empty() ? k : name + "." + k; };
    switch (o.kind) {
      case Kind::Tensor:
        VIDAX_CHECK(seen.insert(name).second, where << ": two tensors flatten to the name '" << name << "'");
        out.emplace_back(name, static_cast<size_t>(o.i));
        return;
      case Kind::Dict:
        for (size_t i = 0; i + 1 < o.items.size(); i += 2) {
          const Object& k = u.objects[o.items[i]];
          std::string key;
          if (k.kind == Kind::Str) key = k.s;
          else if (k.kind == Kind::Int) key = std::to_string(k.i);
          else {
            const Kind vk = u.objects[o.items[i + 1]].kind;
            VIDAX_CHECK(vk != Kind::Tensor && vk != Kind::Dict && vk != Kind::List && vk != Kind::Tuple,
                        where << ": a " << kind_name(k.kind) << " dict key under '" << name
                              << "' cannot name the tensors below it");
            continue;
          }
          walk(o.items[i + 1], child(key), depth + 1);
        }
        return;
      case Kind::List:
      case Kind::Tuple:
        for (size_t i = 0; i < o.items.size(); ++i) walk(o.items[i], child(std::to_string(i)), depth + 1);
        return;
      default: return;  // numbers, strings, None, ...: not weights
    }
  }
};

}  // namespace

Unpickled unpickle(const uint8_t* data, size_t size, const std::string& where) {
  return Reader(data, size, where).run();
}

std::vector<std::pair<std::string, size_t>> flatten_tensors(const Unpickled& u, const std::string& where) {
  Flattener f{u, where, {}, {}};
  f.walk(u.root, "", 0);
  return std::move(f.out);
}

}  // namespace vidax::io::pickle
