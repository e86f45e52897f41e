package config

import (
	"fmt"
	"strconv"
	"strings"
)

// One table of the scalar settings — the modes and flags each layer may
// set and a later layer replaces — that the YAML files, the MCPX_POLICY_*
// environment and LoadOptions.Set all read (docs/configuration.md). A
// setting's kind says how a value is spelled, normalized and ordered by
// strictness; its path says where it lives.

// settingKind is one kind of scalar setting.
type settingKind struct {
	// name is the kind's Kind* constant.
	name string
	// modes lists the canonical values for "want a mode (…)"; "" for a
	// flag (true or false), which YAML must write as a boolean.
	modes string
	// normalize maps a spelling to the canonical value.
	normalize func(string) (string, bool)
	// bad is the error for a value normalize refuses.
	bad func(string) string
	// order ranks the canonical values, the strictest highest.
	order map[string]int
}

// modeKind is a kind whose values are the modes values, each spelled only
// as itself; with offAliases, "off" is also spelled 0, false or no, in any
// case (YAML's booleans false and no included).
func modeKind(name string, values []string, offAliases bool, order map[string]int) *settingKind {
	modes := orList(values)
	also := ""
	if offAliases {
		also = "; off is also spelled 0, false or no"
	}
	return &settingKind{
		name:  name,
		modes: modes,
		normalize: func(s string) (string, bool) {
			for _, v := range values {
				if s == v {
					return s, true
				}
			}
			if offAliases {
				switch strings.ToLower(s) {
				case "0", "false", "no", "off":
					return "off", true
				}
			}
			return "", false
		},
		bad: func(s string) string {
			return fmt.Sprintf("unknown mode %q (want %s%s)", s, modes, also)
		},
		order: order,
	}
}

var (
	kindWrite = modeKind(KindWrite, []string{"ask", "allow", "deny"}, false,
		map[string]int{"allow": 0, "ask": 1, "deny": 2})
	kindUnknownArgs = modeKind(KindUnknownArgs, []string{"warn", "reject", "off"}, true,
		map[string]int{"off": 0, "warn": 1, "reject": 2})
	// kindEnforce: enforce (the default: decisions bite) or shadow
	// (docs/check-order.md#shadow-mode).
	kindEnforce = modeKind(KindEnforce, []string{EnforceOn, EnforceShadow}, false,
		map[string]int{EnforceShadow: 0, EnforceOn: 1})
	kindPin = modeKind(KindPin, []string{"ask", "deny", "off"}, true,
		map[string]int{"off": 0, "ask": 1, "deny": 2})
	kindBool = &settingKind{name: KindBool,
		normalize: normalizeBool, bad: badBool,
		order: map[string]int{"false": 0, "true": 1}}

	settingKinds = []*settingKind{kindWrite, kindUnknownArgs, kindBool, kindEnforce, kindPin}
)

// scalarDef is one row of the table.
type scalarDef struct {
	// scope is "policy" or "pool" for a global setting, "servers" for one
	// every server has.
	scope string
	// key is the setting's key in its scope's mapping.
	key  string
	kind *settingKind
	// slot is where a layer holds the setting (srv nil for a global one).
	slot func(l *layer, srv *serverLayer) **setting
	// def is a global setting's value when no layer sets it.
	def string
	// falls is, for a server setting, the global setting whose value is in
	// force for a server that sets none.
	falls *scalarDef
}

// path is the setting's config path; name is the server's, for a server
// setting.
func (d *scalarDef) path(name string) string {
	if d.scope == "servers" {
		return "servers." + name + "." + d.key
	}
	return d.scope + "." + d.key
}

// env is the environment form of the setting's name: the whole name of a
// global setting, the suffix after MCPX_POLICY_SERVERS_<NAME> of a
// server's.
func (d *scalarDef) env() string {
	if d.scope == "servers" {
		return "_" + strings.ToUpper(d.key)
	}
	return EnvPrefix + strings.ToUpper(d.scope+"_"+d.key)
}

// dataKey is the setting's key in its scope's object of
// data.mcpx.config (ADR 0001): a server setting has the key of the global
// setting it falls back to (writePolicy is "write").
func (d *scalarDef) dataKey() string {
	if d.falls != nil {
		return d.falls.key
	}
	return d.key
}

// inForce is d's value in sum, the layers merged so far (see merge), and
// where it came from: for a server setting, server's own value, else the
// value of the global setting it falls back to; for a global one, the
// value a layer set, else d.def.
func (d *scalarDef) inForce(sum *layer, server string) inForce {
	if d.scope == "servers" {
		if s := sum.find(server); s != nil {
			if v := *d.slot(sum, s); v != nil {
				return held(v)
			}
		}
		return d.falls.inForce(sum, "")
	}
	if v := *d.slot(sum, nil); v != nil {
		return held(v)
	}
	return inForce{value: d.def, at: "default"}
}

// The global settings, named for the server settings that fall back to
// them.
var (
	policyWrite = &scalarDef{scope: "policy", key: "write", kind: kindWrite, def: DefaultWrite,
		slot: func(l *layer, _ *serverLayer) **setting { return &l.write }}
	policyConfirmDestructive = &scalarDef{scope: "policy", key: "confirmDestructive", kind: kindBool,
		def:  strconv.FormatBool(DefaultConfirmDestructive),
		slot: func(l *layer, _ *serverLayer) **setting { return &l.confirmDestructive }}
	policyUnknownArgs = &scalarDef{scope: "policy", key: "unknownArgs", kind: kindUnknownArgs, def: DefaultUnknownArgs,
		slot: func(l *layer, _ *serverLayer) **setting { return &l.unknownArgs }}
	policyEnforce = &scalarDef{scope: "policy", key: "enforce", kind: kindEnforce, def: DefaultEnforce,
		slot: func(l *layer, _ *serverLayer) **setting { return &l.enforce }}
	poolPinTools = &scalarDef{scope: "pool", key: "pinTools", kind: kindPin, def: DefaultPinTools,
		slot: func(l *layer, _ *serverLayer) **setting { return &l.pool.pinTools }}
	serverUnknownArgs = &scalarDef{scope: "servers", key: "unknownArgs", kind: kindUnknownArgs, falls: policyUnknownArgs,
		slot: func(_ *layer, s *serverLayer) **setting { return &s.unknownArgs }}
	serverPinTools = &scalarDef{scope: "servers", key: "pinTools", kind: kindPin, falls: poolPinTools,
		slot: func(_ *layer, s *serverLayer) **setting { return &s.pinTools }}
)

// scalars is the table, in the order errors list the settings and the
// merge visits them.
var scalars = []*scalarDef{
	policyWrite,
	policyConfirmDestructive,
	policyUnknownArgs,
	policyEnforce,
	poolPinTools,
	{scope: "servers", key: "writePolicy", kind: kindWrite, falls: policyWrite,
		slot: func(_ *layer, s *serverLayer) **setting { return &s.writePolicy }},
	serverUnknownArgs,
	{scope: "servers", key: "enforce", kind: kindEnforce, falls: policyEnforce,
		slot: func(_ *layer, s *serverLayer) **setting { return &s.enforce }},
	serverPinTools,
}

// scalarIn returns the row of key in scope ("policy", "pool" or
// "servers"); nil when key is no scalar setting there.
func scalarIn(scope, key string) *scalarDef {
	for _, d := range scalars {
		if d.scope == scope && d.key == key {
			return d
		}
	}
	return nil
}

// fromString reads a setting's value from the environment or the flags:
// normalized, or reported to c at src and nil.
func (d *scalarDef) fromString(c *collector, src, path, v string) *setting {
	n, ok := d.kind.normalize(v)
	if !ok {
		c.add(src, 0, path, "%s", d.kind.bad(v))
		return nil
	}
	return &setting{value: n, at: origin{file: src, path: path}}
}

// set stores s (nil when the value was bad) in l.
func (d *scalarDef) set(l *layer, server string, s *setting) {
	var srv *serverLayer
	if d.scope == "servers" {
		srv = l.server(server)
	}
	*d.slot(l, srv) = s
}

// envHelp and setHelp name every setting the environment and the flags
// set, for the error of a name that is none of them.
func envHelp() string {
	var globals, suffixes []string
	for _, d := range scalars {
		if d.scope == "servers" {
			suffixes = append(suffixes, d.env())
		} else {
			globals = append(globals, d.env())
		}
	}
	return "the environment sets " + strings.Join(globals, ", ") + " and " +
		EnvPrefix + "SERVERS_<NAME>" + orList(suffixes)
}

func serverEnvHelp() string {
	var suffixes []string
	for _, d := range scalars {
		if d.scope == "servers" {
			suffixes = append(suffixes, d.env())
		}
	}
	return "a server's environment settings end in " + orList(suffixes)
}

func setHelp() string {
	paths := make([]string, len(scalars))
	for i, d := range scalars {
		paths[i] = d.path("<name>")
	}
	return "flags set " + strings.Join(paths[:len(paths)-1], ", ") + " and " + paths[len(paths)-1]
}

// orList is "a, b, c or d".
func orList(xs []string) string {
	if len(xs) < 2 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}

func normalizeBool(s string) (string, bool) {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return "", false
	}
	return strconv.FormatBool(b), true
}

func badBool(s string) string { return fmt.Sprintf("want true or false, got %q", s) }

// dataValue is the canonical value v as data.mcpx.config holds it: a
// flag as a boolean, a mode as its string.
func (k *settingKind) dataValue(v string) any {
	if k.modes == "" {
		return v == "true"
	}
	return v
}
