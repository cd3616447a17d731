# A stub of nixpkgs for tests/e2e/matrix_nix.sh: no packages, only the names tailor's
# emitted files use. It records what they pass: torch.override's arguments (cudaPackages by
# its name, magma by the cudaPackages it got), the attributes overrideAttrs sets, the package
# set's config (import nixpkgs { config = ...; }) and the cudaPackages its overlays chose, and
# the torch an extension package is built against (in a package set: the set's own torch, after
# pythonPackagesExtensions). Everything it returns is plain data, so
# `nix-instantiate --eval --strict --json` prints it. The torch version is $STUB_TORCH_VERSION.
{ system ? "x86_64-linux", config ? { }, overlays ? [ ] }:
let
  version = builtins.getEnv "STUB_TORCH_VERSION";
  recorded = args: attrs: {
    inherit version system attrs;
    nixpkgsConfig = config;
    # The package set's cudaPackages after the overlays (null when none chose one).
    nixpkgsCuda = if pkgs ? cudaPackages then pkgs.cudaPackages.name else null;
    overrideArgs = args // (if args ? blas then { blas = args.blas.provider; } else { })
      // (if args ? cudaPackages then { cudaPackages = args.cudaPackages.name; } else { });
  };
  mkTorch = args: {
    inherit version;
    override = more: mkTorch (args // more);
    overrideAttrs = f: recorded args (f { passthru = { stub = true; }; });
  };
  # An extension in a package set takes the set's torch; .override { torch } another one.
  mkExtension = self: name: {
    extension = name;
    torch = self.torch;
    torchFrom = "the package set";
    override = args: {
      extension = name;
      torch = args.torch;
      torchFrom = "override";
    };
  };
  extensions = [ "torchvision" "torchaudio" "torch-scatter" "torch-sparse" "torch-cluster" "torch-spline-conv"
                 "xformers" "flash-attn" "bitsandbytes" "causal-conv1d" "mamba-ssm" ];
  # A Python package set: nixpkgs' own, then pkgs.pythonPackagesExtensions (self: super: { ... })
  # applied in order over it, each package seeing the final set, as nixpkgs does.
  pythonSet =
    let
      own = self: { torch = mkTorch { }; } // builtins.listToAttrs (map (n: { name = n; value = mkExtension self n; }) extensions);
      self = builtins.foldl' (super: extension: super // extension self super) (own self) pkgs.pythonPackagesExtensions;
    in
    self;
  pythonSets = builtins.listToAttrs (map (minor: { name = "python3${minor}Packages"; value = pythonSet; })
    [ "9" "10" "11" "12" "13" "14" ]);
  callPackage = fn: extra:
    let f = if builtins.isPath fn then import fn else fn;
    in f (builtins.intersectAttrs (builtins.functionArgs f) pkgs // extra);
  # nixpkgs' CUDA package sets by release: cudaPackages_11_0 .. cudaPackages_13_9, each its name.
  cudaSets = builtins.listToAttrs (builtins.concatMap (major: builtins.genList (minor:
    let name = "cudaPackages_${toString major}_${toString minor}"; in { inherit name; value = { inherit name; }; }) 10)
    [ 11 12 13 ]);
  # torch's magma: records the cudaPackages it was overridden with.
  magma = { "magma-cuda-static" = { override = a: { magmaCudaPackages = a.cudaPackages.name; }; }; };
  pkgs = builtins.foldl' (acc: overlay: acc // overlay pkgs acc) base overlays;
  base = pythonSets // cudaSets // magma // {
    inherit callPackage system config;
    pythonPackagesExtensions = [ ];
    blas = { override = a: { provider = a.blasProvider.name; }; };
    openblas = { name = "openblas"; };
    mkl = { name = "mkl"; };
  };
in
pkgs
