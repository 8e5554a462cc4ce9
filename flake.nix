{
  description = "benchpipe: declarative, reproducible benchmarking of single-board computers";

  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-24.11";

  outputs = { self, nixpkgs }:
    let
      systems = [ "x86_64-linux" "aarch64-linux" ];
      forAll = f: nixpkgs.lib.genAttrs systems (system: f nixpkgs.legacyPackages.${system});
      # The scenarios whose reports `nix build .#reports` renders from the committed
      # store. The lab's scenario needs `benchpipe lab up` first, so it is not here.
      reportScenarios = [ "localhost" ];
    in
    {
      packages = forAll (pkgs: rec {
        benchpipe = pkgs.rustPlatform.buildRustPackage {
          pname = "benchpipe";
          version = "0.1.0";
          src = self;
          cargoLock.lockFile = ./Cargo.lock;
          nativeBuildInputs = [ pkgs.pkg-config ];
          buildInputs = [ pkgs.openssl pkgs.zlib ];
          # The tests need root, network namespaces, sshd and fio: `.ci/run` runs them.
          doCheck = false;
        };
        default = benchpipe;

        # Reports are a pure function of the scenario files and the store, so this
        # rebuilds them byte for byte anywhere.
        reports = pkgs.runCommand "benchpipe-reports" { nativeBuildInputs = [ benchpipe ]; } ''
          cd ${self}
          mkdir -p $out
          benchpipe report --store results --out $out \
            ${builtins.concatStringsSep " " (map (s: "scenarios/${s}.toml") reportScenarios)}
        '';
      });

      devShells = forAll (pkgs: {
        default = pkgs.mkShell {
          nativeBuildInputs = [ pkgs.cargo pkgs.rustc pkgs.clippy pkgs.rustfmt pkgs.pkg-config ];
          buildInputs = [ pkgs.openssl pkgs.zlib ];
        };
      });
    };
}
