// The canonical answer to "which targets": a sorted, duplicate-free set of CudaTargets.
#pragma once
#include <string>
#include <vector>

#include "cuda/cuda_target.h"

namespace tailor::cuda {

struct TargetSet {
  std::vector<CudaTarget> targets;  ///< sorted, unique

  TargetSet() = default;
  explicit TargetSet(std::vector<CudaTarget> list);

  void add(const CudaTarget& target);
  void add(const TargetSet& other);
  bool contains(const CudaTarget& target) const;
  bool empty() const { return targets.empty(); }
  size_t size() const { return targets.size(); }
  std::vector<std::string> names() const;
  /// The distinct CCs named by any entry, ascending.
  std::vector<ComputeCapability> capabilities() const;
  bool operator==(const TargetSet&) const = default;
};

}  // namespace tailor::cuda
