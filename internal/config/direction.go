package config

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"unsafe"
)

// direction is how a change that a later layer makes to one field of the
// configuration moves strictness. Every field of the structs a layer is
// made of declares one in its dir tag (config.go); the merge makes its
// loosening warnings from these declarations (merger.check), and
// TestEveryFieldDeclaresADirection fails on a field that declares none. A
// field whose tag the walk does not know is treated as dirAny: any change
// to it is a loosening (fail closed).
type direction string

const (
	// dirOrdered is a mode or flag of the settings table (settings.go),
	// whose kind orders its values: a less strict value loosens. key names
	// the setting's row.
	dirOrdered direction = "ordered"
	// dirTightens is a list every layer adds to, each entry a tightening
	// (a pattern that hides a tool or makes it a write, an argument rule,
	// an override that can only add denies and asks): a later layer can
	// add entries but never remove one, so it never loosens.
	dirTightens direction = "tightens"
	// dirLoosens is a list every layer adds to, each entry a loosening (an
	// argument key exempt from the unknown-arguments check): each entry a
	// later layer adds that was not in force is a warning. falls names the
	// layer-level field whose entries are in force for every scope too.
	dirLoosens direction = "loosens"
	// dirEntries is the unknownArgsTools list: each entry is a mode for
	// its tools, ordered as unknownArgs, compared with the mode those tools
	// had (merger.checkEntries).
	dirEntries direction = "entries"
	// dirAny is a value a later layer replaces whole, any change to which
	// is a loosening: the ledger section, where another store or another
	// target means the unknown outcomes recorded in the one before stop
	// blocking writes.
	dirAny direction = "any"
	// dirScope is a mapping of settings (the pool, a server's own): its
	// fields declare their own directions.
	dirScope direction = "scope"
	// dirEach is a list of scopes (the servers), each keyed by its name.
	dirEach direction = "each"
	// dirPart is part of a value whose containing field declares the
	// direction (a rule's schema: the rule list declares it; the ledger's
	// dsn: the ledger section does).
	dirPart direction = "part"
	// dirMeta is where a value came from (file, line, config path), or its
	// name: no setting.
	dirMeta direction = "meta"
)

// directions are the values a dir tag may hold.
var directions = []direction{dirOrdered, dirTightens, dirLoosens, dirEntries, dirAny, dirScope, dirEach, dirPart, dirMeta}

// fieldDecl is one field's declaration.
type fieldDecl struct {
	name  string // the Go field's name
	index int
	dir   direction
	// key is the field's config key: the whole path for a field of the
	// layer ("policy.write", "pool"), the key in its scope for one of a
	// scope or a server ("pinTools").
	key string
	// falls is, for a dirLoosens list, the name of the layer's field whose
	// entries are in force for every scope too.
	falls string
}

// declared reads the declarations of t's fields; a field with no dir tag,
// or one no direction names, is dirAny.
func declared(t reflect.Type) []fieldDecl {
	out := make([]fieldDecl, 0, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		d := fieldDecl{name: f.Name, index: i, dir: direction(f.Tag.Get("dir")), key: f.Tag.Get("key"), falls: f.Tag.Get("falls")}
		if !knownDirection(d.dir) {
			d.dir = dirAny
		}
		out = append(out, d)
	}
	return out
}

func knownDirection(d direction) bool {
	for _, k := range directions {
		if d == k {
			return true
		}
	}
	return false
}

var declCache sync.Map // reflect.Type -> []fieldDecl

func declsOf(t reflect.Type) []fieldDecl {
	if d, ok := declCache.Load(t); ok {
		return d.([]fieldDecl)
	}
	d := declared(t)
	declCache.Store(t, d)
	return d
}

// walkAt is where the merge's check is in the layer: the table scope of
// the settings met there ("" at the layer's top, where each key names its
// scope; "pool"; "servers"), the server's name and the config path of the
// mapping.
type walkAt struct {
	table, server, prefix string
}

// check compares every value l sets with the value in force before l
// (none of l's values is in m.sum yet), field by field as each declares
// its direction, and adds a warning for each loosening.
func (m *merger) check(l *layer) {
	m.checkStruct(reflect.ValueOf(l).Elem(), reflect.ValueOf(m.sum).Elem(), walkAt{})
}

// checkStruct checks the fields of v, a struct of the layer at at; sum is
// the same struct in the layers merged so far (invalid when they have
// none, such as a server no earlier layer named).
func (m *merger) checkStruct(v, sum reflect.Value, at walkAt) {
	for _, f := range declsOf(v.Type()) {
		fv := field(v, f.index)
		var before reflect.Value
		if sum.IsValid() {
			before = field(sum, f.index)
		}
		path := join(at.prefix, f.key)
		switch f.dir {
		case dirOrdered:
			m.checkOrdered(f, fv, at)
		case dirLoosens:
			m.checkLoosens(f, fv, before, path)
		case dirEntries:
			if at.server == "" {
				m.checkEntries(fv.Interface().([]unknownArgsRef), m.poolTools, "", m.strictestUnknownArgs())
			} else {
				m.checkEntries(fv.Interface().([]unknownArgsRef), m.serverTools, at.server+"\x00", serverUnknownArgs.inForce(m.sum, at.server))
			}
		case dirScope:
			inner := at
			if f.key != "" {
				inner = walkAt{table: f.key, prefix: f.key}
			}
			m.checkStruct(fv, before, inner)
		case dirEach:
			for i := range fv.Len() {
				s := fv.Index(i).Interface().(*serverLayer)
				var into reflect.Value
				if t := m.sum.find(s.name); t != nil {
					into = reflect.ValueOf(t).Elem()
				}
				m.server = s.name
				m.checkStruct(reflect.ValueOf(s).Elem(), into, walkAt{table: f.key, server: s.name, prefix: f.key + "." + s.name})
				m.server = ""
			}
		case dirAny:
			m.checkAny(fv, before, path)
		}
	}
}

// checkOrdered compares a setting of the table with the value in force for
// it (scalarDef.inForce: a server's own, else the global one it falls back
// to, else the default).
func (m *merger) checkOrdered(f fieldDecl, fv reflect.Value, at walkAt) {
	table, key := at.table, f.key
	if table == "" {
		table, key, _ = strings.Cut(key, ".")
	}
	d := scalarIn(table, key)
	after, _ := fv.Interface().(*setting)
	if d == nil {
		// a mode the table does not know: any value is a loosening
		if after != nil {
			m.warn(after.at, join(at.prefix, f.key), "set by a later layer to %s; the setting declares no strictness order, so any change counts as a loosening", after.value)
		}
		return
	}
	m.loosens(d.path(at.server), d.kind, d.inForce(m.sum, at.server), after)
}

// listed is an entry of a dirLoosens list.
type listed interface {
	// entry is the entry's value as it is compared and shown, and where
	// it was written.
	entry() (string, origin)
}

func (a argRef) entry() (string, origin) { return a.name, a.at }

// loosensWhat says, by the key of a dirLoosens list, what one of its
// entries does.
var loosensWhat = map[string]string{
	"exemptArgs": "an argument key the unknown-arguments check never reports",
}

// checkLoosens warns for each entry of a dirLoosens list that was not in
// force before: not in before, the same list of the layers so far, nor in
// the layer-level list its falls names.
func (m *merger) checkLoosens(f fieldDecl, fv, before reflect.Value, path string) {
	held := map[string]bool{}
	addHeld := func(v reflect.Value) {
		for i := range v.Len() {
			if e, ok := v.Index(i).Interface().(listed); ok {
				s, _ := e.entry()
				held[s] = true
			}
		}
	}
	if before.IsValid() {
		addHeld(before)
	}
	if f.falls != "" {
		if sf, ok := reflect.TypeFor[layer]().FieldByName(f.falls); ok {
			addHeld(field(reflect.ValueOf(m.sum).Elem(), sf.Index[0]))
		}
	}
	key := f.key
	if i := strings.LastIndexByte(key, '.'); i >= 0 {
		key = key[i+1:]
	}
	what := loosensWhat[key]
	if what == "" {
		what = "an entry that loosens the policy"
	}
	for i := range fv.Len() {
		e, ok := fv.Index(i).Interface().(listed)
		if !ok {
			m.warn(origin{file: m.layerName}, path, "loosened by a later layer: adds an entry the walk cannot read, so it counts as a loosening")
			continue
		}
		s, o := e.entry()
		if held[s] {
			continue
		}
		held[s] = true
		m.warn(o, o.path, "loosened by a later layer: adds %q, %s", s, what)
	}
}

// field is field i of the addressable struct v, readable whether or not
// it is exported: the walk reads this package's own unexported fields.
func field(v reflect.Value, i int) reflect.Value {
	f := v.Field(i)
	return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
}

// replaced is a dirAny value a later layer sets whole.
type replaced interface {
	// origin is where the value was written.
	origin() origin
	// replaces says how the value differs from before, the value in force
	// until the layer (initial when none set it); "" when it does not.
	replaces(before replaced) string
	// initial is the value in force when no layer sets one.
	initial() replaced
}

// checkAny warns when a later layer's value of a dirAny field differs from
// the one in force before: the ledger section through its own comparison
// (replaced), any other field (one whose declaration the walk does not
// know) by its Go value.
func (m *merger) checkAny(fv, before reflect.Value, path string) {
	if fv.IsZero() {
		return // the layer does not set it
	}
	if r, ok := fv.Interface().(replaced); ok {
		was := r.initial()
		if before.IsValid() && !before.IsZero() {
			was = before.Interface().(replaced)
		}
		if msg := r.replaces(was); msg != "" {
			m.warn(r.origin(), path, "%s", msg)
		}
		return
	}
	if before.IsValid() && reflect.DeepEqual(before.Interface(), fv.Interface()) {
		return
	}
	m.warn(origin{file: m.layerName}, path, "changed by a later layer; the field declares no direction it is known by, so any change counts as a loosening")
}

// warn adds a warning at o.
func (m *merger) warn(o origin, path, format string, args ...any) {
	m.warnings = append(m.warnings, Warning{File: o.file, Line: o.line, Path: path, Msg: fmt.Sprintf(format, args...), server: m.server})
}
