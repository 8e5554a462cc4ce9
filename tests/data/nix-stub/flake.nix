{
  # Offline stand-in for nixpkgs (tests/it/nix.rs): just enough of it to evaluate
  # benchpipe's flake.nix and its NixOS module with Debian's nix-bin, which cannot fetch
  # nixpkgs here. It began as ../shared/nix-stub/flake.nix and grew what the flake uses:
  # the packages the dev shell names, lib.fileset, and a small module system
  # (lib.evalModules, lib.nixosSystem) with the NixOS options the module sets, which
  # refuses an option that does not exist, a value of the wrong type and conflicting
  # definitions, and renders systemd units the way NixOS does. Nothing here builds:
  # every package is a derivation that only echoes.
  outputs = { self }:
    let
      lib = import ./lib.nix;
      mk = name: attrs: builtins.derivation ({
        inherit name;
        system = "x86_64-linux";
        builder = "/bin/sh";
        args = [ "-c" "echo stub > $out" ];
      } // attrs);
      # The packages benchpipe's flake names; any other name fails evaluation, as a
      # misspelt attribute of real nixpkgs would.
      tools = [
        "pkg-config" "openssl" "zlib" "cargo" "rustc" "clippy" "rustfmt" "rust-analyzer"
        "openssh" "iproute2" "util-linux" "procps" "coreutils" "fio" "xz" "time" "iperf3"
        "iperf2" "hdparm" "e2fsprogs" "btrfs-progs" "xfsprogs" "f2fs-tools" "gzip"
        "zstd" "zip" "bmaptool" "curl" "nginx" "samba" "stress-ng" "wrk" "apacheHttpd"
        "gawk" "sudo" "git" "diffutils" "dosfstools" "mtools"
      ];
      # Inputs are forced, so a misspelt package fails here as it would in nixpkgs.
      packages = l: assert builtins.all (p: p ? outPath) l; l;
      pkgsFor = system:
        builtins.listToAttrs (map (n: { name = n; value = mk n { }; }) tools) // {
          stdenv.hostPlatform.system = system;
          rustPlatform.buildRustPackage = a:
            assert builtins.isString a.pname && builtins.isString a.version;
            assert builtins.pathExists a.cargoLock.lockFile;
            mk "${a.pname}-${a.version}" {
              inputs = packages (a.nativeBuildInputs or [ ] ++ a.buildInputs or [ ]
                ++ a.nativeCheckInputs or [ ]);
            };
          runCommand = name: env: script:
            assert builtins.isString script;
            mk name { inputs = packages (env.nativeBuildInputs or [ ]); };
          mkShell = a: mk "shell" { inputs = packages (a.packages or [ ]); };
        };
    in
    {
      lib = lib // {
        nixosSystem = { system, modules, specialArgs ? { } }:
          lib.evalModules {
            modules = modules ++ [ (import ./nixos.nix) ];
            specialArgs = { pkgs = pkgsFor system; } // specialArgs;
          };
      };
      legacyPackages.x86_64-linux = pkgsFor "x86_64-linux";
      legacyPackages.aarch64-linux = pkgsFor "aarch64-linux";
    };
}
