# A stub of nixpkgs for tests/e2e/matrix_nix.sh: no packages, only the names tailor's
# emitted files use. It records what they pass: torch.override's arguments, the attributes
# overrideAttrs sets, the package set's config (import nixpkgs { config = ...; }) and the
# torch an extension package is built against. Everything it returns is plain data, so
# `nix-instantiate --eval --strict --json` prints it. The torch version is $STUB_TORCH_VERSION.
{ system ? "x86_64-linux", config ? { } }:
let
  version = builtins.getEnv "STUB_TORCH_VERSION";
  recorded = args: attrs: {
    inherit version system attrs;
    nixpkgsConfig = config;
    overrideArgs = args // (if args ? blas then { blas = args.blas.provider; } else { });
  };
  mkTorch = args: {
    inherit version;
    override = more: mkTorch (args // more);
    overrideAttrs = f: recorded args (f { passthru = { stub = true; }; });
  };
  mkExtension = name: {
    override = args: {
      extension = name;
      torch = args.torch;
    };
  };
  extensions = [ "torchvision" "torchaudio" "torch-scatter" "torch-sparse" "torch-cluster" "torch-spline-conv"
                 "xformers" "flash-attn" "bitsandbytes" "causal-conv1d" "mamba-ssm" ];
  pythonSet = { torch = mkTorch { }; } // builtins.listToAttrs (map (n: { name = n; value = mkExtension n; }) extensions);
  pythonSets = builtins.listToAttrs (map (minor: { name = "python3${minor}Packages"; value = pythonSet; })
    [ "9" "10" "11" "12" "13" "14" ]);
  callPackage = fn: extra:
    let f = if builtins.isPath fn then import fn else fn;
    in f (builtins.intersectAttrs (builtins.functionArgs f) pkgs // extra);
  pkgs = pythonSets // {
    inherit callPackage system config;
    blas = { override = a: { provider = a.blasProvider.name; }; };
    openblas = { name = "openblas"; };
    mkl = { name = "mkl"; };
  };
in
pkgs
