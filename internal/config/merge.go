package config

import "fmt"

// merge sums the layers, in order, into one (see Load): the lists of
// every layer add up, the servers in order of first appearance, and each
// setting of the settings table (settings.go), global or a server's, is
// the value of the last layer that set it; the defaults are the table's
// (scalarDef.inForce).
//
// It also returns, as warnings, every setting a later layer made less
// strict than it was before that layer, as each field declares its
// direction (direction.go): a mode by its kind's strictness order, an
// exemptArgs entry by being added, the ledger section by any change.
// The first layer is the base (with the defaults under it); every later
// one — another --config file, a conf.d file, the MCPX_POLICY_*
// environment, LoadOptions.Set — may loosen a setting, but never
// silently. A server's setting is compared with the value in force for
// the server before the layer: its own, else the global one it falls back
// to; an unknownArgsTools entry with the mode its tools had
// (checkEntries). Each warning is at the loosening value's origin and
// names the setting, both values and both origins.
func merge(layers []*layer) (*layer, []Warning) {
	m := &merger{sum: &layer{source: "merged"}, poolTools: map[string]inForce{}, serverTools: map[string]inForce{}}
	for i, l := range layers {
		m.layerName = l.source
		if i > 0 {
			m.check(l)
		}
		m.add(l)
	}
	return m.sum, m.warnings
}

// merger is a merge under way.
type merger struct {
	sum       *layer // the layers so far
	layerName string // the source of the layer being merged
	server    string // the server whose settings check is at, "" elsewhere
	warnings  []Warning
	// the last unknownArgsTools entry of each pattern source: the pool's,
	// and each server's by server name + "\x00" + source
	poolTools, serverTools map[string]inForce
}

// loosens adds a warning when after, a later layer's value of the
// setting at path, is less strict than before.
func (m *merger) loosens(path string, kind *settingKind, before inForce, after *setting) {
	if after == nil || kind.order[after.value] >= kind.order[before.value] {
		return
	}
	m.warnings = append(m.warnings, Warning{File: after.at.file, Line: after.at.line, Path: path,
		Msg: fmt.Sprintf("loosened from %s (%s) to %s by a later layer", before.value, before.at, after.value), server: m.server})
}

// checkEntries compares each unknownArgsTools entry of a later layer with
// the mode its tools had: the earlier entry of the same scope and pattern
// (earlier, by prefix + pattern source), else fallback, the mode in force
// for the scope — for the pool, whose entries come before every server's
// own mode, the strictest of them and the global one.
func (m *merger) checkEntries(entries []unknownArgsRef, earlier map[string]inForce, prefix string, fallback inForce) {
	for _, u := range entries {
		before, ok := earlier[prefix+u.pat.Source]
		if !ok {
			before = fallback
		}
		m.loosens(u.at.path, kindUnknownArgs, before, &setting{value: u.mode, at: u.at})
	}
}

// strictestUnknownArgs is the strictest unknownArgs mode in force: the
// global one or a server's own, the first of equals.
func (m *merger) strictestUnknownArgs() inForce {
	order := kindUnknownArgs.order
	best := policyUnknownArgs.inForce(m.sum, "")
	for _, s := range m.sum.servers {
		if v := s.unknownArgs; v != nil && order[v.value] > order[best.value] {
			best = held(v)
		}
	}
	return best
}

// add merges l into m.sum.
func (m *merger) add(l *layer) {
	sum := m.sum
	for _, d := range scalars {
		if d.scope != "servers" {
			if v := *d.slot(l, nil); v != nil {
				*d.slot(sum, nil) = v
			}
		}
	}
	sum.exemptArgs = append(sum.exemptArgs, l.exemptArgs...)
	sum.overrides = append(sum.overrides, l.overrides...)
	if l.ledger != nil {
		sum.ledger = l.ledger // replaced whole
	}
	sum.pool.add(l.pool)
	for _, u := range l.pool.ua {
		m.poolTools[u.pat.Source] = inForce{u.mode, u.at.String()}
	}
	for _, s := range l.servers {
		into := sum.server(s.name)
		for _, d := range scalars {
			if d.scope == "servers" {
				if v := *d.slot(l, s); v != nil {
					*d.slot(sum, into) = v
				}
			}
		}
		into.add(s.scope)
		for _, u := range s.ua {
			m.serverTools[s.name+"\x00"+u.pat.Source] = inForce{u.mode, u.at.String()}
		}
	}
}
