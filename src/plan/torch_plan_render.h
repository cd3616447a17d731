// Renderers of one TorchPlan: human text, JSON (with an `env` object holding every
// variable), a standalone POSIX-bash script whose exported environment equals the plan's
// env, and a builder Dockerfile on a base whose glibc matches the wanted manylinux tag.
// None of them decides anything: they only print what resolve_torch_plan decided.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "plan/torch_plan.h"

namespace tailor::plan {

std::string render_plan_text(const TorchPlan& plan);
nlohmann::json plan_to_json(const TorchPlan& plan);
/// Sourcing it (`. plan.sh`) only exports the env; executing it runs the steps.
std::string render_plan_script(const TorchPlan& plan);
std::string render_plan_dockerfile(const TorchPlan& plan);
/// "error: cuda: ... (fix: ...)" lines, one per problem.
std::string render_problems(const TorchPlan& plan);

/// The distro image whose glibc matches the plan's manylinux tag (newest not above it).
const DistroImage* builder_distro(const TorchPlan& plan, const TorchCatalog& catalog);

}  // namespace tailor::plan
