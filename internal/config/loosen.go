package config

import (
	"fmt"
	"strconv"
)

// strictness orders the values of each kind of setting, the strictest
// highest, by kind name: the orders of the settings table (settings.go).
var strictness = func() map[string]map[string]int {
	m := make(map[string]map[string]int, len(settingKinds))
	for _, k := range settingKinds {
		m[k.name] = k.order
	}
	return m
}()

// The kinds of setting whose values have a strictness order, for
// CompareStrictness.
const (
	// KindWrite is a write mode (policy.write, writePolicy): deny > ask > allow.
	KindWrite = "write"
	// KindUnknownArgs is an unknown-arguments mode: reject > warn > off.
	KindUnknownArgs = "unknownArgs"
	// KindBool is a flag whose true is the stricter value
	// (confirmDestructive): "true" > "false".
	KindBool = "bool"
	// KindEnforce is an enforcement mode (policy.enforce, a server's
	// enforce): enforce > shadow, since shadow lets a call the policy
	// refuses go ahead.
	KindEnforce = "enforce"
	// KindPin is a pinTools mode: deny > ask > off.
	KindPin = "pin"
)

// CompareStrictness compares two values of one kind of setting in the
// order the loader warns by: 1 when to is stricter than from (a
// tightening), -1 when it is less strict (a loosening), 0 when they are
// as strict. ok is false when the kind or either value is not one the
// order knows. Safe for concurrent use.
func CompareStrictness(kind, from, to string) (cmp int, ok bool) {
	order, ok := strictness[kind]
	if !ok {
		return 0, false
	}
	a, okA := order[from]
	b, okB := order[to]
	if !okA || !okB {
		return 0, false
	}
	switch {
	case b > a:
		return 1, true
	case b < a:
		return -1, true
	}
	return 0, true
}

// inForce is a setting's value before a layer, and where it came from.
type inForce struct {
	value string
	at    string // "file:line", "env $NAME", "flags" or "default"
}

func held(s *setting) inForce { return inForce{value: s.value, at: s.at.String()} }

// loosened lists, as warnings, every setting a later layer made less
// strict than it was before that layer. The first main file is the base
// (with the defaults under it); every later layer — another --config
// file, a conf.d file, the MCPX_POLICY_* environment, LoadOptions.Set —
// may loosen a setting, but never silently. A server's mode is compared
// with the mode the server had before the layer: its own, else the global
// one; an unknownArgsTools entry with the mode its tools had (checkEntries). Each warning is at the loosening value's origin and names the
// setting, both values and both origins.
func loosened(layers []*layer) []Warning {
	global := map[string]inForce{
		"write":              {DefaultWrite, "default"},
		"unknownArgs":        {DefaultUnknownArgs, "default"},
		"confirmDestructive": {strconv.FormatBool(DefaultConfirmDestructive), "default"},
		"enforce":            {DefaultEnforce, "default"},
	}
	serverWrite := map[string]inForce{}
	serverUnknownArgs := map[string]inForce{}
	serverEnforce := map[string]inForce{}
	// pinTools: a server's own mode replaces the pool's, which replaces
	// the default.
	poolPin := inForce{DefaultPinTools, "default"}
	serverPin := map[string]inForce{}
	var ws []Warning
	check := func(path, kind string, before inForce, after *setting) {
		if after == nil || strictness[kind][after.value] >= strictness[kind][before.value] {
			return
		}
		ws = append(ws, Warning{File: after.at.file, Line: after.at.line, Path: path,
			Msg: fmt.Sprintf("loosened from %s (%s) to %s by a later layer", before.value, before.at, after.value)})
	}
	effective := func(own map[string]inForce, name, key string) inForce {
		if v, ok := own[name]; ok {
			return v
		}
		return global[key]
	}
	// An unknownArgsTools entry of a later layer is compared with the mode
	// its tools had: an earlier entry of the same scope and pattern, else
	// the server's mode (for a pool entry, which comes before every
	// server's own mode, the strictest of them and the global one).
	poolToolModes := map[string]inForce{}   // pattern source -> last pool entry
	serverToolModes := map[string]inForce{} // server + "\x00" + source -> last entry
	checkEntries := func(entries []unknownArgsRef, earlier map[string]inForce, key func(string) string, fallback inForce) {
		for _, u := range entries {
			before, ok := earlier[key(u.pat.Source)]
			if !ok {
				before = fallback
			}
			check(u.at.path, KindUnknownArgs, before, &setting{value: u.mode, at: u.at})
		}
	}
	strictestUnknownArgs := func() inForce {
		best := global["unknownArgs"]
		for _, v := range serverUnknownArgs {
			if strictness[KindUnknownArgs][v.value] > strictness[KindUnknownArgs][best.value] {
				best = v
			}
		}
		return best
	}
	for i, l := range layers {
		if i > 0 {
			check("policy.write", KindWrite, global["write"], l.write)
			check("policy.unknownArgs", KindUnknownArgs, global["unknownArgs"], l.unknownArgs)
			check("policy.confirmDestructive", KindBool, global["confirmDestructive"], l.confirmDestructive)
			check("policy.enforce", KindEnforce, global["enforce"], l.enforce)
			checkEntries(l.pool.ua, poolToolModes, func(src string) string { return src }, strictestUnknownArgs())
			check("pool.pinTools", KindPin, poolPin, l.pool.pinTools)
			for _, s := range l.servers {
				check("servers."+s.name+".writePolicy", KindWrite, effective(serverWrite, s.name, "write"), s.writePolicy)
				check("servers."+s.name+".unknownArgs", KindUnknownArgs, effective(serverUnknownArgs, s.name, "unknownArgs"), s.unknownArgs)
				check("servers."+s.name+".enforce", KindEnforce, effective(serverEnforce, s.name, "enforce"), s.enforce)
				pinBefore, ok := serverPin[s.name]
				if !ok {
					pinBefore = poolPin
				}
				check("servers."+s.name+".pinTools", KindPin, pinBefore, s.pinTools)
				name := s.name
				checkEntries(s.ua, serverToolModes, func(src string) string { return name + "\x00" + src }, effective(serverUnknownArgs, s.name, "unknownArgs"))
			}
		}
		for _, u := range l.pool.ua {
			poolToolModes[u.pat.Source] = inForce{u.mode, u.at.String()}
		}
		for _, s := range l.servers {
			for _, u := range s.ua {
				serverToolModes[s.name+"\x00"+u.pat.Source] = inForce{u.mode, u.at.String()}
			}
		}
		if l.write != nil {
			global["write"] = held(l.write)
		}
		if l.unknownArgs != nil {
			global["unknownArgs"] = held(l.unknownArgs)
		}
		if l.confirmDestructive != nil {
			global["confirmDestructive"] = held(l.confirmDestructive)
		}
		if l.enforce != nil {
			global["enforce"] = held(l.enforce)
		}
		if l.pool.pinTools != nil {
			poolPin = held(l.pool.pinTools)
		}
		for _, s := range l.servers {
			if s.pinTools != nil {
				serverPin[s.name] = held(s.pinTools)
			}
			if s.writePolicy != nil {
				serverWrite[s.name] = held(s.writePolicy)
			}
			if s.unknownArgs != nil {
				serverUnknownArgs[s.name] = held(s.unknownArgs)
			}
			if s.enforce != nil {
				serverEnforce[s.name] = held(s.enforce)
			}
		}
	}
	return ws
}
