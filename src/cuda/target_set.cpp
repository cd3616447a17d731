#include "cuda/target_set.h"

#include <algorithm>

namespace tailor::cuda {

TargetSet::TargetSet(std::vector<CudaTarget> list) : targets(std::move(list)) {
  std::sort(targets.begin(), targets.end());
  targets.erase(std::unique(targets.begin(), targets.end()), targets.end());
}

void TargetSet::add(const CudaTarget& target) {
  auto it = std::lower_bound(targets.begin(), targets.end(), target);
  if (it == targets.end() || *it != target) targets.insert(it, target);
}

void TargetSet::add(const TargetSet& other) {
  for (const auto& t : other.targets) add(t);
}

bool TargetSet::contains(const CudaTarget& target) const {
  return std::binary_search(targets.begin(), targets.end(), target);
}

std::vector<std::string> TargetSet::names() const {
  std::vector<std::string> out;
  for (const auto& t : targets) out.push_back(t.name());
  return out;
}

std::vector<ComputeCapability> TargetSet::capabilities() const {
  std::vector<ComputeCapability> out;
  for (const auto& t : targets)
    if (out.empty() || out.back() != t.cc) out.push_back(t.cc);
  return out;
}

}  // namespace tailor::cuda
