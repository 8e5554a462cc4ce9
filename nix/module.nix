# The NixOS module (flake output nixosModules.default): scheduled lab runs, a systemd
# service running `benchpipe apply` and a timer starting it. `self` is the flake.
self:
{ config, lib, pkgs, ... }:
let
  cfg = config.services.benchpipe;
  inherit (lib) mkIf mkOption types;

  # systemd splits ExecStart= itself and expands `%` specifiers and `$` variables:
  # every word is quoted for it (as nixpkgs' utils.escapeSystemdExecArg does).
  execArg = s: builtins.replaceStrings [ "%" "$" ] [ "%%" "$$" ] (builtins.toJSON (toString s));
  execArgs = args: builtins.concatStringsSep " " (map execArg args);

  # apply keeps its image downloads beside the store (`results/` -> `image-cache/`).
  imageCache = "${dirOf cfg.store}/image-cache";

  # A run on remote boards needs the network and nothing else of the machine; as root
  # it may be running a `localhost` board (mkfs, mount, the kernel log) or the virtual
  # lab, so it is only kept off the rest of the system where that cannot break it.
  confined = cfg.user != "root";
in
{
  options.services.benchpipe = {
    enable = lib.mkEnableOption "scheduled benchpipe runs: `benchpipe apply` on a timer";

    package = mkOption {
      type = types.package;
      default = self.packages.${pkgs.stdenv.hostPlatform.system}.default;
      defaultText = lib.literalExpression "benchpipe.packages.\${system}.default";
      description = "The benchpipe package to run.";
    };

    workspace = mkOption {
      type = types.str;
      example = "/srv/benchpipe";
      description = ''
        The benchpipe project the runs use: its `boards/`, `pipeline/` and `scenarios/`.
        The service runs in it, so relative scenario paths are relative to it.
      '';
    };

    scenarios = mkOption {
      type = types.nonEmptyListOf types.str;
      example = [ "scenarios/lab.toml" "scenarios/lab-storage.toml" ];
      description = "The scenario files each run applies, relative to `workspace` or absolute.";
    };

    schedule = mkOption {
      type = types.str;
      default = "daily";
      example = "Sun *-*-* 03:00:00";
      description = ''
        When to run: a systemd calendar event (OnCalendar=, see systemd.time(7)). A run
        missed while the machine was off starts at the next boot. A run still going when
        the next is due goes on alone (systemd does not start a running service again),
        and `apply` takes the store's lock: an apply started by hand meanwhile is
        refused and leaves the store as it was.
      '';
    };

    store = mkOption {
      type = types.str;
      default = "/var/lib/benchpipe/results";
      description = "The results store (`--store`). Image downloads go to `image-cache/` beside it.";
    };

    reportsDir = mkOption {
      type = types.str;
      default = "/var/lib/benchpipe/reports";
      description = "Where each run writes the scenarios' reports (`--out`).";
    };

    user = mkOption {
      type = types.str;
      default = "benchpipe";
      description = ''
        The user the runs run as; `benchpipe` is created when it is the default. It needs
        read access to the workspace and to the boards' SSH identity files. Only `root`
        can run a `localhost` board or the virtual lab; other users get a confined
        service (no capabilities, read-only system, the network only).
      '';
    };

    group = mkOption {
      type = types.str;
      default = "benchpipe";
      description = "The group of the runs and of the store and reports directories.";
    };

    extraArgs = mkOption {
      type = types.listOf types.str;
      default = [ ];
      example = [ "--on-drift" "keep" ];
      description = "More arguments to `benchpipe apply`, before the scenario files.";
    };

    historyCheck = mkOption {
      type = types.bool;
      default = true;
      description = ''
        After a run that ended well, run `benchpipe history --fail-on regression` on the
        same scenarios: the unit fails (exit 3) when the newest run starts a significant
        change for the worse in a metric, and the finding is written to
        `reportsDir`/findings.json for whatever alerts on a failed unit.
      '';
    };

    path = mkOption {
      type = types.listOf types.package;
      default = with pkgs; [ openssh iperf3 iperf2 curl samba wrk apacheHttpd ];
      defaultText = lib.literalExpression "with pkgs; [ openssh iperf3 iperf2 curl samba wrk apacheHttpd ]";
      description = "Controller-side tools the recipes run (iperf3 clients, curl, smbclient, wrk, ab).";
    };
  };

  config = mkIf cfg.enable {
    users.users = lib.optionalAttrs (cfg.user == "benchpipe") {
      benchpipe = {
        isSystemUser = true;
        group = cfg.group;
        home = "/var/lib/benchpipe";
        createHome = true;
        description = "benchpipe scheduled runs";
      };
    };
    users.groups = lib.optionalAttrs (cfg.group == "benchpipe") { benchpipe = { }; };

    # Only directories benchpipe owns: never the store's parent, which may be anyone's.
    systemd.tmpfiles.rules = [
      "d ${cfg.store} 0750 ${cfg.user} ${cfg.group} -"
      "d ${imageCache} 0750 ${cfg.user} ${cfg.group} -"
      "d ${cfg.reportsDir} 0755 ${cfg.user} ${cfg.group} -"
    ];

    systemd.services.benchpipe = {
      description = "benchpipe: apply the scheduled scenarios";
      wants = [ "network-online.target" ];
      after = [ "network-online.target" ];
      path = cfg.path;
      # Started by the timer (or by hand); never at boot on its own.
      serviceConfig = {
        Type = "oneshot";
        User = cfg.user;
        Group = cfg.group;
        WorkingDirectory = cfg.workspace;
        # --yes: a timer has no terminal to answer apply's question before the first
        # format or flash of a board the store has never recorded.
        ExecStart = execArgs ([ "${cfg.package}/bin/benchpipe" "apply" "--quiet" "--yes"
          "--store" cfg.store "--out" cfg.reportsDir ] ++ cfg.extraArgs ++ cfg.scenarios);
        # SIGTERM is apply's Ctrl-C: it ends the run in flight on the boards, stops the
        # services it started and keeps every finished run; give it time to, and only
        # then kill what is left. Stopped that way is no failure; a failed cell (exit
        # 1), an unreachable board or bad input is.
        KillMode = "mixed";
        TimeoutStopSec = "5min";
        SuccessExitStatus = [ 143 ];
        UMask = "0027";
        NoNewPrivileges = true;
        LockPersonality = true;
        RestrictRealtime = true;
        RestrictSUIDSGID = true;
        SystemCallArchitectures = "native";
      } // lib.optionalAttrs cfg.historyCheck {
        ExecStartPost = execArgs ([ "${cfg.package}/bin/benchpipe" "history" "--fail-on"
          "regression" "--findings" "${cfg.reportsDir}/findings.json" "--store" cfg.store ]
          ++ cfg.scenarios);
      } // lib.optionalAttrs confined {
        ProtectSystem = "strict";
        ReadWritePaths = [ cfg.store imageCache cfg.reportsDir ];
        ProtectHome = "read-only";
        PrivateTmp = true;
        PrivateDevices = true;
        ProtectKernelTunables = true;
        ProtectKernelModules = true;
        ProtectKernelLogs = true;
        ProtectControlGroups = true;
        ProtectClock = true;
        ProtectHostname = true;
        ProtectProc = "invisible";
        RestrictNamespaces = true;
        MemoryDenyWriteExecute = true;
        CapabilityBoundingSet = "";
        # SSH and HTTP to the boards; netlink for the resolver's address lookups.
        RestrictAddressFamilies = [ "AF_UNIX" "AF_INET" "AF_INET6" "AF_NETLINK" ];
        SystemCallFilter = [ "@system-service" ];
      };
    };

    systemd.timers.benchpipe = {
      description = "benchpipe: scheduled runs";
      wantedBy = [ "timers.target" ];
      timerConfig = {
        OnCalendar = cfg.schedule;
        Persistent = true;
        Unit = "benchpipe.service";
      };
    };
  };
}
