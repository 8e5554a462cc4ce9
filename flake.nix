{
  description = "benchpipe: declarative, reproducible benchmarking of single-board computers";

  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-24.11";

  outputs = { self, nixpkgs }:
    let
      inherit (nixpkgs) lib;
      systems = [ "x86_64-linux" "aarch64-linux" ];
      forAll = f: lib.genAttrs systems (system: f nixpkgs.legacyPackages.${system});

      # What cargo builds: the crate, its vendored libssh2 ([patch] in Cargo.toml) and
      # the files its tests read; not the example store, so a new store rebuilds nothing.
      crateSource = lib.fileset.toSource {
        root = ./.;
        fileset = lib.fileset.unions [
          ./Cargo.toml ./Cargo.lock ./src ./vendor ./benches ./tests ./pipeline ./scenarios ./boards
          ./examples/seeds
        ];
      };
      crate = pkgs: {
        pname = "benchpipe";
        version = "0.1.0";
        src = crateSource;
        cargoLock.lockFile = ./Cargo.lock;
        # ssh2 links the system OpenSSL through pkg-config; the vendored libssh2 and the
        # bundled liblzma and zstd are built with cc. LIBSSH2_SYS_USE_PKG_CONFIG stays
        # unset and no libssh2 is an input, so the patched copy in vendor/ is the one.
        nativeBuildInputs = [ pkgs.pkg-config ];
        buildInputs = [ pkgs.openssl pkgs.zlib ];
        meta = {
          description = "Declarative, reproducible benchmarking of single-board computers";
          mainProgram = "benchpipe";
          platforms = lib.platforms.linux;
        };
      };

      # The tools the recipes run and the tests use (`.ci/run` installs the same on Debian).
      # Not iozone: nixpkgs has it under an unfree licence, which it refuses by default
      # (the iozone recipes skip their cells where it is not installed).
      benchTools = pkgs: with pkgs; [
        openssh iproute2 util-linux procps fio xz time iperf3 iperf2 hdparm
        e2fsprogs btrfs-progs xfsprogs f2fs-tools gzip zstd zip bmaptool curl nginx samba
        stress-ng wrk apacheHttpd gawk sudo
        # lab images' FAT boot partition (mkfs.vfat), and the tests' first-boot files on it
        dosfstools mtools
      ];
    in
    {
      packages = forAll (pkgs: rec {
        benchpipe = pkgs.rustPlatform.buildRustPackage (crate pkgs // {
          # The tests need root, network namespaces, sshd and the tools: `.ci/run` runs
          # them; `checks.unit-tests` runs the ones that need none of it.
          doCheck = false;
        });
        default = benchpipe;

        # The committed example store's reports (examples/lab/): a pure function of the
        # scenarios, the recipes, the recorded boards and the store, so this rebuilds
        # them byte for byte anywhere; `checks.reports` compares them with the committed.
        reports = pkgs.runCommand "benchpipe-reports"
          {
            src = lib.fileset.toSource {
              root = ./.;
              fileset = lib.fileset.unions [ ./examples ./scenarios ./pipeline ];
            };
            nativeBuildInputs = [ benchpipe ];
          } ''
          bash "$src/examples/lab/render.sh" "$out"
        '';

        # The History example's reports (examples/history/: eight applies, a change at
        # the sixth), rebuilt the same way; `checks.history-reports` compares them.
        history-reports = pkgs.runCommand "benchpipe-history-reports"
          {
            src = lib.fileset.toSource {
              root = ./.;
              fileset = lib.fileset.unions [ ./examples/history ];
            };
            nativeBuildInputs = [ benchpipe ];
          } ''
          bash "$src/examples/history/render.sh" "$out"
        '';
      });

      checks = forAll (pkgs: {
        # The unit tests (`cargo test --lib`), which need no root; the one that makes a
        # loop device is left out. Beside sh and coreutils they run findmnt and setsid
        # (util-linux), ssh-keygen, mkfs.ext4 and the image compressors; a test that
        # would skip for a missing tool fails instead, as under `.ci/run`.
        unit-tests = pkgs.rustPlatform.buildRustPackage (crate pkgs // {
          pname = "benchpipe-unit-tests";
          cargoTestFlags = [ "--lib" ];
          checkFlags = [ "--skip=lab::down::tests::a_loop_device_backed_by_another_file_is_never_detached" ];
          nativeCheckInputs = with pkgs; [ openssh util-linux e2fsprogs xz gzip zstd zip ];
          BENCHPIPE_TESTS_MUST_RUN = "1";
        });

        # The committed reports are what the committed store renders to.
        reports = pkgs.runCommand "benchpipe-reports-match-committed"
          { nativeBuildInputs = [ pkgs.diffutils ]; } ''
          diff -r ${./examples/lab/reports} ${self.packages.${pkgs.stdenv.hostPlatform.system}.reports}
          touch $out
        '';
        history-reports = pkgs.runCommand "benchpipe-history-reports-match-committed"
          { nativeBuildInputs = [ pkgs.diffutils ]; } ''
          diff -r ${./examples/history/reports} ${self.packages.${pkgs.stdenv.hostPlatform.system}.history-reports}
          touch $out
        '';
      });

      devShells = forAll (pkgs: {
        default = pkgs.mkShell {
          packages = with pkgs; [ cargo rustc clippy rustfmt rust-analyzer pkg-config openssl zlib git ]
            ++ benchTools pkgs;
        };
      });

      nixosModules.default = import ./nix/module.nix self;
    };
}
