// Stand-in for PyTorch's at::PhiloxCudaState (ATen/cuda/PhiloxCudaState.h), with its layout, so
// that flash-attn's forward compiles without PyTorch. The stamped forward never uses dropout: the
// kernel only unpacks the (zero) seed and offset, as PyTorch's build does.
#pragma once
#include <cstdint>

namespace at {
struct PhiloxCudaState {
  PhiloxCudaState() = default;
  union Payload {
    uint64_t val;
    int64_t* ptr;
  };
  Payload seed_{};
  Payload offset_{};
  uint32_t offset_intragraph_ = 0;
  bool captured_ = false;
};
}  // namespace at
