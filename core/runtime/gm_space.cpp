// GM tensor storage, input binding and output collection.
#include "core/runtime/gm_space.h"

#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "core/runtime/copy.h"

namespace pto::runtime {
namespace {

constexpr size_t kAlign = 64;

// Slot `index` of `list`, growing it; a second tensor for one slot is an error.
void claim(std::vector<int>& list, int index, int tensor, const char* role, const Program& p) {
  if (index < 0) internal_error(std::string("runtime: ") + role + " tensor '" + p.tensors[tensor].name + "' has no io_index");
  if (static_cast<int>(list.size()) <= index) list.resize(static_cast<size_t>(index) + 1, -1);
  if (list[index] >= 0)
    internal_error(std::string("runtime: ") + role + " " + std::to_string(index) + " is both '" +
                   p.tensors[list[index]].name + "' and '" + p.tensors[tensor].name + "'");
  list[index] = tensor;
}

// Alias chains end in the program's tensors (verified).
int root_of(const Program& p, int t) {
  while (p.tensors[t].alias_of >= 0) t = p.tensors[t].alias_of;
  return t;
}

}  // namespace

void GmSpace::AlignedFree::operator()(char* p) const { std::free(p); }

GmSpace::GmSpace(const Program& program) {
  const int n = static_cast<int>(program.tensors.size());
  layouts_.resize(static_cast<size_t>(n));
  root_ptr_.assign(static_cast<size_t>(n), nullptr);
  for (int t = 0; t < n; ++t) {
    const GmTensor& g = program.tensors[t];
    GmLayout& l = layouts_[t];
    l.root = root_of(program, t);
    l.shape = Dims::of(g.shape);
    l.dtype = g.dtype;
    const bool view = g.alias_of >= 0;
    l.elem_offset = view ? g.elem_offset : 0;
    l.strides = view && !g.strides.empty() ? Dims::of(g.strides) : row_major_strides(l.shape);
    if (l.strides.rank != l.shape.rank)
      internal_error("runtime: view '" + g.name + "' has strides " + shape_str(g.strides) + " for shape " + shape_str(g.shape));
    if (view && program.tensors[l.root].dtype != g.dtype)
      internal_error("runtime: view '" + g.name + "' changes dtype from its root's");

    if (g.role == TensorRole::Input && !view) claim(inputs_, g.io_index, t, "input", program);
    if (g.role == TensorRole::Output) claim(outputs_, g.io_index, t, "output", program);
    if (view || g.role == TensorRole::Input) continue;
    const size_t bytes = static_cast<size_t>(std::max<int64_t>(num_elements(g.shape) * dtype_size(g.dtype), 1));
    char* p = static_cast<char*>(std::aligned_alloc(kAlign, align_up(static_cast<int64_t>(bytes), kAlign)));
    if (!p) fail(ErrorCategory::Internal, "runtime: out of memory for tensor '" + g.name + "' (" + std::to_string(bytes) + " B)");
    std::memset(p, 0, bytes);
    owned_.emplace_back(p);
    root_ptr_[t] = p;
  }
  for (size_t i = 0; i < inputs_.size(); ++i)
    if (inputs_[i] < 0) internal_error("runtime: no tensor for graph input " + std::to_string(i));
  for (size_t i = 0; i < outputs_.size(); ++i)
    if (outputs_[i] < 0) internal_error("runtime: no tensor for graph output " + std::to_string(i));
}

GmSpace::~GmSpace() = default;

void GmSpace::bind_inputs(const std::vector<HostTensor>& inputs) {
  if (inputs.size() != inputs_.size())
    usage_error("run: expected " + std::to_string(inputs_.size()) + " inputs, got " + std::to_string(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const GmLayout& l = layouts_[inputs_[i]];
    if (inputs[i].shape() != l.shape.shape() || inputs[i].dtype() != l.dtype)
      usage_error("run: input " + std::to_string(i) + " is " + dtype_name(inputs[i].dtype()) + shape_str(inputs[i].shape()) +
                  ", the program expects " + dtype_name(l.dtype) + shape_str(l.shape.shape()));
    // Inputs are only read; the const_cast lets them share the storage pointer type.
    root_ptr_[inputs_[i]] = static_cast<char*>(const_cast<void*>(inputs[i].data()));
  }
}

char* GmSpace::base(int tensor) const {
  const GmLayout& l = layouts_[tensor];
  char* root = root_ptr_[l.root];
  if (!root) internal_error("runtime: tensor " + std::to_string(tensor) + " read before its input was bound");
  return root + l.elem_offset * dtype_size(l.dtype);
}

std::vector<HostTensor> GmSpace::collect_outputs() const {
  std::vector<HostTensor> out;
  out.reserve(outputs_.size());
  for (int t : outputs_) {
    const GmLayout& l = layouts_[t];
    HostTensor h(l.shape.shape(), l.dtype);
    const View dst{static_cast<char*>(h.data()), l.dtype, row_major_strides(l.shape)};
    const View src{base(t), l.dtype, l.strides};
    copy_window(dst, src, l.shape, false);
    out.push_back(std::move(h));
  }
  return out;
}

}  // namespace pto::runtime
