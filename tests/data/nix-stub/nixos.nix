# The NixOS options benchpipe's module sets, declared as NixOS declares them (a subset
# of each submodule's options), and the unit files NixOS renders from them
# (nixos/lib/systemd-lib.nix: one `Key=value` line per value, lists one line each,
# booleans as true/false, `path` as the service's PATH). `systemd.units.<name>.text`
# is where NixOS keeps a unit's text too.
{ config, lib, pkgs, ... }:
let
  inherit (lib) mkOption types;
  str = mkOption { type = types.str; };
  strDefault = d: mkOption { type = types.str; default = d; };
  strs = mkOption { type = types.listOf types.str; default = [ ]; };
  bool = d: mkOption { type = types.bool; default = d; };
  # A value of a unit file: what attrsToSection accepts.
  unitValue = x: builtins.isString x || builtins.isBool x || builtins.isInt x;
  unitOptions = mkOption {
    type = types.attrsOf (types.anything // {
      name = "systemd option";
      merge = path: values:
        if builtins.all (v: unitValue v || (builtins.isList v && builtins.all unitValue v)) values
        then types.anything.merge path values
        else throw "A definition for option `${builtins.concatStringsSep "." path}' is not a systemd value.";
    });
    default = { };
  };
  unitCommon = {
    enable = bool true;
    description = strDefault "";
    documentation = strs;
    wants = strs;
    requires = strs;
    after = strs;
    before = strs;
    partOf = strs;
    wantedBy = strs;
    unitConfig = unitOptions;
  };
  service = types.submodule {
    options = unitCommon // {
      path = mkOption { type = types.listOf types.package; default = [ ]; };
      environment = mkOption { type = types.attrsOf types.str; default = { }; };
      serviceConfig = unitOptions;
      script = strDefault "";
      startAt = strs;
      restartIfChanged = bool true;
    };
  };
  timer = types.submodule {
    options = unitCommon // { timerConfig = unitOptions; };
  };
  user = types.submodule {
    options = {
      isSystemUser = bool false;
      isNormalUser = bool false;
      group = strDefault "";
      extraGroups = strs;
      home = strDefault "/var/empty";
      createHome = bool false;
      description = strDefault "";
      uid = mkOption { type = types.nullOr types.int; default = null; };
    };
  };
  group = types.submodule {
    options = {
      gid = mkOption { type = types.nullOr types.int; default = null; };
      members = strs;
    };
  };

  toOption = x: if x == true then "true" else if x == false then "false" else toString x;
  section = name: attrs:
    "[${name}]\n" + lib.concatMapStrings
      (k: let v = attrs.${k}; in
        lib.concatMapStrings (x: "${k}=${toOption x}\n") (if builtins.isList v then v else [ v ]))
      (builtins.attrNames attrs);
  unitSection = u: lib.filterAttrs (_: v: v != "" && v != [ ]) {
    Description = u.description;
    Documentation = builtins.concatStringsSep " " u.documentation;
    Wants = builtins.concatStringsSep " " u.wants;
    Requires = builtins.concatStringsSep " " u.requires;
    After = builtins.concatStringsSep " " u.after;
    Before = builtins.concatStringsSep " " u.before;
    PartOf = builtins.concatStringsSep " " u.partOf;
  } // u.unitConfig;
  # NixOS puts these on every service's PATH, before the service's own `path`.
  defaultPath = [ pkgs.coreutils ];
  pathOf = s: builtins.concatStringsSep ":"
    (map (p: "${p}/bin") (defaultPath ++ s.path) ++ map (p: "${p}/sbin") (defaultPath ++ s.path));
  serviceText = s:
    section "Unit" (unitSection s) + "\n"
    + section "Service" ({
      Environment = map (k: "\"${k}=${(s.environment // { PATH = pathOf s; }).${k}}\"")
        (builtins.attrNames (s.environment // { PATH = pathOf s; }));
    } // s.serviceConfig);
  timerText = t: section "Unit" (unitSection t) + "\n" + section "Timer" t.timerConfig;
in
{
  options = {
    systemd.services = mkOption { type = types.attrsOf service; default = { }; };
    systemd.timers = mkOption { type = types.attrsOf timer; default = { }; };
    systemd.tmpfiles.rules = strs;
    systemd.units = mkOption {
      type = types.attrsOf (types.submodule { options.text = str; });
      default = { };
    };
    users.users = mkOption { type = types.attrsOf user; default = { }; };
    users.groups = mkOption { type = types.attrsOf group; default = { }; };
  };
  config.systemd.units =
    lib.mapAttrs' (n: s: lib.nameValuePair "${n}.service" { text = serviceText s; })
      (lib.filterAttrs (_: s: s.enable) config.systemd.services)
    // lib.mapAttrs' (n: t: lib.nameValuePair "${n}.timer" { text = timerText t; })
      (lib.filterAttrs (_: t: t.enable) config.systemd.timers);
}
