// GM on the CPU: storage for a program's tensors and how views address it.
//
// Intermediates and outputs get 64-byte aligned storage once per executor; inputs are
// read in place from the caller's HostTensors (bound per run). A view (alias_of >= 0)
// addresses its root's storage through elem_offset and strides (0 for broadcast dims).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/host_tensor.h"
#include "core/program.h"
#include "core/runtime/strided.h"

namespace pto::runtime {

struct GmLayout {
  int root = -1;            // tensor id owning the storage
  int64_t elem_offset = 0;  // into the root's storage
  Dims shape;
  Dims strides;
  DType dtype = DType::F32;
};

class GmSpace {
 public:
  explicit GmSpace(const Program& program);
  ~GmSpace();
  GmSpace(const GmSpace&) = delete;
  GmSpace& operator=(const GmSpace&) = delete;

  // Usage Error when the count, a shape or a dtype differs from the program's inputs.
  void bind_inputs(const std::vector<HostTensor>& inputs);
  std::vector<HostTensor> collect_outputs() const;

  const GmLayout& layout(int tensor) const { return layouts_.at(static_cast<size_t>(tensor)); }
  // Storage of the tensor's element 0 (its elem_offset applied).
  char* base(int tensor) const;

 private:
  struct AlignedFree {
    void operator()(char* p) const;
  };
  std::vector<GmLayout> layouts_;
  std::vector<char*> root_ptr_;                       // per tensor id (roots only)
  std::vector<std::unique_ptr<char, AlignedFree>> owned_;
  std::vector<int> inputs_;                           // root tensor per graph input
  std::vector<int> outputs_;                          // tensor per graph output
};

}  // namespace pto::runtime
