// `tailor stack --build`: every package a stack decided to build from source, built by
// build_extension in this process (no second tailor), for the stack's target GPUs and
// against the stack's torch interpreter, into one output folder, in dependency order.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "stack/stack.h"
#include "workflow/extension_build.h"

namespace tailor::workflow {

struct StackBuildOptions {
  std::string out_dir = "dist";
  std::string python;  ///< the interpreter asked for; the stack's --torch PYTHON wins
  builder::DisplayStyle display = builder::DisplayStyle::plain;
  std::FILE* status_out = stderr;
};

struct StackBuildOutcome {
  std::string package;
  ExtensionBuildResult result;
};

/// The ExtensionBuildOptions for one row of `stack` that must be built: its sdist, the
/// target's GPUs (as the user typed them, else the resolved compute capabilities), the
/// stack's interpreter, no package tests (the stack's verification imports them).
ExtensionBuildOptions stack_row_build_options(const stack::StackResult& stack,
                                              const stack::Row& row,
                                              const StackBuildOptions& options);

/// Builds the rows whose outcome is `build` (torch itself is never built here), stopping at
/// the first that does not end ok; `build` is build_extension (a fake in tests).
std::vector<StackBuildOutcome> build_stack_packages(
    const stack::StackResult& stack, const StackBuildOptions& options,
    const std::function<ExtensionBuildResult(const ExtensionBuildOptions&)>& build);

}  // namespace tailor::workflow
