// The environment that makes a build's output independent of the run and of the work folder
// (SOURCE_DATE_EPOCH, nvcc's -objtemp and fixed seed, prefix maps), added to a plan's
// variables before its steps run; the one loader of data/build/reproducible.toml.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "cuda/cuda_version.h"

namespace tailor::builder {

/// Variables that make a build's output independent of the run and of the work folder,
/// added to `env` (appended to flags it already holds): SOURCE_DATE_EPOCH (setuptools'
/// zip times, compilers' __DATE__/__TIME__); nvcc's -objtemp, which names its intermediate
/// files after the object instead of the process id (the name lands in the object's symbol
/// table); and -ffile-prefix-map=<source_dir>=. for gcc (CFLAGS, CXXFLAGS) and nvcc's host
/// compiler, so __FILE__ in assertions does not carry the work folder.
/// `nvcc_objtemp` false leaves -objtemp out: sccache runs nvcc's steps itself in its own
/// temporary folder and cleans it, and -objtemp puts them beside the object, which sccache
/// then loses (the link finds no .o).
/// With the build's nvcc release (`nvcc`, e.g. 13.0), also nvcc's fixed random seed
/// (nvcc_reproducible_flags), so a unit's internal symbol names carry no process id.
/// A variable the plan leaves unset is appended to `caller_env`'s value (the build inherits
/// the caller's environment).
void add_reproducible_build_env(std::map<std::string, std::string>& env,
                                const std::map<std::string, std::string>& caller_env,
                                int64_t source_date_epoch, const std::string& source_dir,
                                bool nvcc_objtemp = true,
                                std::optional<cuda::CudaVersion> nvcc = std::nullopt);

/// The nvcc flags, from data/build/reproducible.toml, that fix cudafe++'s module id: without
/// them a unit with no external non-template definition of its own gets the process id in
/// its internal symbols' names (cuda_fp16's static functions in the cubin). Empty for an
/// nvcc older than the data's min_nvcc, or an unknown one (nullopt).
std::string nvcc_reproducible_flags(std::optional<cuda::CudaVersion> nvcc);

}  // namespace tailor::builder
