# The part of nixpkgs' lib that benchpipe's flake and NixOS module use, including a
# small module system: options with types and defaults, `mkIf` and `mkMerge` pushed
# down so that conditions may read `config`, definitions merged by type, an error for
# an option that does not exist, for a value of the wrong type and for conflicting
# values. Its names and semantics follow nixpkgs' (lib/modules.nix, lib/types.nix);
# it implements only what the flake needs, and refuses the rest rather than guess.
let
  inherit (builtins)
    all any attrNames concatMap concatStringsSep elem filter foldl' head isAttrs
    isBool isFunction isInt isList isPath isString length listToAttrs mapAttrs;

  genAttrs = names: f: listToAttrs (map (n: { name = n; value = f n; }) names);
  nameValuePair = name: value: { inherit name value; };
  mapAttrs' = f: set: listToAttrs (map (n: f n set.${n}) (attrNames set));
  mapAttrsToList = f: set: map (n: f n set.${n}) (attrNames set);
  filterAttrs = pred: set:
    listToAttrs (concatMap (n: if pred n set.${n} then [ (nameValuePair n set.${n}) ] else [ ]) (attrNames set));
  unique = foldl' (acc: x: if elem x acc then acc else acc ++ [ x ]) [ ];
  last = l: builtins.elemAt l (length l - 1);
  showPath = p: concatStringsSep "." p;

  mkIf = condition: content: { _type = "if"; inherit condition content; };
  mkMerge = contents: { _type = "merge"; inherit contents; };
  isOption = x: isAttrs x && (x._type or null) == "option";

  # At a level of attribute sets: mkIf and mkMerge pushed down to each attribute, so
  # which attributes are defined is known before any condition is evaluated.
  pushDown = d:
    if (d._type or null) == "if" then
      map (a: mapAttrs (_: v: mkIf d.condition v) a) (pushDown d.content)
    else if (d._type or null) == "merge" then concatMap pushDown d.contents
    else [ d ];

  # The definitions of one option: conditions evaluated, merges flattened.
  unIf = d:
    if (d._type or null) == "if" then
      (if d.condition then unIf d.content else [ ])
    else if (d._type or null) == "merge" then concatMap unIf d.contents
    else [ d ];

  evalOption = opt: defs: path:
    let values = concatMap unIf defs; in
    if length values == 0 then
      (if opt ? default then opt.default
       else throw "The option `${showPath path}' is used but not defined.")
    else opt.type.merge path values;

  evalTree = opts: defs: path:
    if isOption opts then evalOption opts defs path
    else
      let
        sets = concatMap pushDown defs;
        names = concatMap
          (s: if isAttrs s then attrNames s
              else throw "A definition of `${showPath path}' is not an attribute set.")
          sets;
        bad = filter (n: !(opts ? ${n})) names;
      in
      if bad != [ ] then throw "The option `${showPath (path ++ [ (head bad) ])}' does not exist."
      else mapAttrs
        (n: o: evalTree o (concatMap (s: if s ? ${n} then [ s.${n} ] else [ ]) sets) (path ++ [ n ]))
        opts;

  mergeDecls = a: b: a // mapAttrs
    (n: v:
      if !(a ? ${n}) then v
      else if isOption v || isOption a.${n} then throw "The option `${n}' is declared twice."
      else mergeDecls a.${n} v)
    b;

  mergeEqual = path: values:
    if all (v: v == head values) values then head values
    else throw "The option `${showPath path}' has conflicting definition values.";

  mkType = { name, check ? (_: true), merge ? mergeEqual }: {
    _type = "type";
    inherit name check;
    merge = path: values:
      if all check values then merge path values
      else throw "A definition for option `${showPath path}' is not of type `${name}'.";
  };

  mergeAttrs = t: path: values:
    let
      sets = concatMap pushDown values;
      names = unique (concatMap attrNames sets);
      defsOf = n: concatMap unIf (concatMap (s: if s ? ${n} then [ s.${n} ] else [ ]) sets);
    in
    listToAttrs (concatMap
      (n: let d = defsOf n; in
        if length d == 0 then [ ] else [ (nameValuePair n (t.merge (path ++ [ n ]) d)) ])
      names);

  mergeAnything = path: values:
    if all (v: isAttrs v && !(v ? outPath)) values then mergeAttrs types.anything path values
    else if all isList values then concatMap (x: x) values
    else mergeEqual path values;

  types = rec {
    str = mkType { name = "string"; check = isString; };
    bool = mkType { name = "boolean"; check = isBool; };
    int = mkType { name = "signed integer"; check = isInt; };
    package = mkType {
      name = "package";
      check = x: isAttrs x && (x.type or null) == "derivation";
    };
    anything = mkType { name = "anything"; merge = mergeAnything; };
    nullOr = t: mkType {
      name = "null or ${t.name}";
      check = x: x == null || t.check x;
    };
    listOf = t: mkType {
      name = "list of ${t.name}";
      check = isList;
      merge = path: values: map (x: t.merge path [ x ]) (concatMap (x: x) values);
    };
    nonEmptyListOf = t: mkType {
      name = "non-empty list of ${t.name}";
      check = x: isList x;
      merge = path: values:
        let l = (listOf t).merge path values; in
        if l == [ ] then throw "The option `${showPath path}' is an empty list." else l;
    };
    attrsOf = t: mkType {
      name = "attribute set of ${t.name}";
      check = isAttrs;
      merge = mergeAttrs t;
    };
    submodule = m: mkType {
      name = "submodule";
      check = isAttrs;
      merge = path: values: (evalModules { modules = [ m ] ++ values; prefix = path; }).config;
    };
  };

  mkOption = { type ? types.anything, ... }@a: a // { _type = "option"; inherit type; };
  mkEnableOption = name: mkOption {
    type = types.bool;
    default = false;
    example = true;
    description = "Whether to enable ${name}.";
  };
  literalExpression = text: { _type = "literalExpression"; inherit text; };

  evalModules = { modules, specialArgs ? { }, prefix ? [ ] }:
    let
      args = specialArgs // {
        inherit lib config options;
        name = if prefix == [ ] then "" else last prefix;
      };
      load = m:
        let v = if isFunction m then m args else if isPath m then load (import m) else m; in
        if v ? imports then throw "this stub's evalModules has no `imports`"
        else if v ? options || v ? config then
          { options = v.options or { }; config = v.config or { }; }
        else { options = { }; config = v; };
      loaded = map load modules;
      options = foldl' mergeDecls { } (map (m: m.options) loaded);
      config = evalTree options (map (m: m.config) loaded) prefix;
    in
    { inherit config options; };

  lib = {
    inherit genAttrs nameValuePair mapAttrs' mapAttrsToList filterAttrs unique
      mkIf mkMerge mkOption mkEnableOption literalExpression types evalModules;
    optionalAttrs = c: s: if c then s else { };
    optionals = c: l: if c then l else [ ];
    optional = c: x: if c then [ x ] else [ ];
    concatStringsSep = builtins.concatStringsSep;
    platforms.linux = [ "x86_64-linux" "aarch64-linux" ];
    concatMapStrings = f: l: builtins.concatStringsSep "" (map f l);
    # lib.fileset: a source of the named files under root. The stub takes the whole root,
    # after checking that every file named exists, as toSource does.
    fileset = {
      unions = paths: assert all (p: isPath p && builtins.pathExists p) paths; paths;
      toSource = { root, fileset }: assert isPath root && isList fileset; root;
    };
  };
in
lib
