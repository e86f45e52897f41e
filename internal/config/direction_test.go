package config

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// undirected lists, for every struct type reachable from t through its
// fields (this package's types only), each field that declares no
// direction or one the walk does not know, and each declaration the walk
// cannot act on: an ordered field that is no row of the settings table, a
// loosens list whose entries it cannot read, an any value it cannot
// compare, a scope or each that holds no struct.
func undirected(t reflect.Type) []string {
	var out []string
	seen := map[reflect.Type]bool{}
	var visit func(t reflect.Type, table string)
	visit = func(t reflect.Type, table string) {
		if seen[t] {
			return
		}
		seen[t] = true
		for i := range t.NumField() {
			f := t.Field(i)
			where := t.Name() + "." + f.Name
			d := direction(f.Tag.Get("dir"))
			if !knownDirection(d) {
				out = append(out, fmt.Sprintf("%s declares no direction (dir tag %q; want one of %v)", where, d, directions))
				continue
			}
			elem := f.Type
			for elem.Kind() == reflect.Pointer || elem.Kind() == reflect.Slice || elem.Kind() == reflect.Array || elem.Kind() == reflect.Map {
				elem = elem.Elem()
			}
			inner := table
			switch d {
			case dirOrdered:
				tb, key := table, f.Tag.Get("key")
				if tb == "" {
					tb, key, _ = strings.Cut(key, ".")
				}
				if f.Type != reflect.TypeFor[*setting]() || scalarIn(tb, key) == nil {
					out = append(out, fmt.Sprintf("%s is ordered but no *setting of the settings table (%s.%s)", where, tb, key))
				}
			case dirLoosens:
				if f.Type.Kind() != reflect.Slice || !elem.Implements(reflect.TypeFor[listed]()) {
					out = append(out, fmt.Sprintf("%s loosens but is no list of entries the walk reads (listed)", where))
				}
			case dirAny:
				if !f.Type.Implements(reflect.TypeFor[replaced]()) {
					out = append(out, fmt.Sprintf("%s is any but no value the walk compares (replaced)", where))
				}
			case dirEntries:
				if f.Type != reflect.TypeFor[[]unknownArgsRef]() {
					out = append(out, fmt.Sprintf("%s holds entries but is no unknownArgsTools list", where))
				}
			case dirScope, dirEach:
				if elem.Kind() != reflect.Struct {
					out = append(out, fmt.Sprintf("%s is a %s but holds no struct", where, d))
				}
				if k := f.Tag.Get("key"); k != "" {
					inner = k
				}
			}
			if elem.Kind() == reflect.Struct && elem.PkgPath() == t.PkgPath() {
				visit(elem, inner)
			}
		}
	}
	visit(t, "")
	return out
}

// TestEveryFieldDeclaresADirection: every field of every struct a layer is
// made of — scalars, lists, rule lists, the ledger section and their parts
// — declares how a change a later layer makes to it moves strictness, in
// a form the merge's walk acts on; every row of the settings table is a
// declared field; every key a config file may write is a declared field's.
// And the check itself finds a field that declares nothing.
func TestEveryFieldDeclaresADirection(t *testing.T) {
	t.Parallel()
	for _, p := range undirected(reflect.TypeFor[layer]()) {
		t.Error(p)
	}

	// Every row of the settings table is reached as an ordered field.
	rows := map[*scalarDef]bool{}
	var keysOf func(t reflect.Type, table string, into map[string]direction)
	keysOf = func(t reflect.Type, table string, into map[string]direction) {
		for i := range t.NumField() {
			f := t.Field(i)
			d, key := direction(f.Tag.Get("dir")), f.Tag.Get("key")
			if d == dirScope && f.Anonymous {
				keysOf(f.Type, table, into)
				continue
			}
			if key != "" {
				into[key] = d
			}
			if d == dirOrdered {
				tb, k := table, key
				if tb == "" {
					tb, k, _ = strings.Cut(key, ".")
				}
				if r := scalarIn(tb, k); r != nil {
					rows[r] = true
				}
			}
		}
	}
	top, scopeKeys, serverKeysGot := map[string]direction{}, map[string]direction{}, map[string]direction{}
	keysOf(reflect.TypeFor[layer](), "", top)
	keysOf(reflect.TypeFor[scope](), "pool", scopeKeys)
	keysOf(reflect.TypeFor[serverLayer](), "servers", serverKeysGot)
	for _, d := range scalars {
		if !rows[d] {
			t.Errorf("settings table row %s is no declared field", d.path("<name>"))
		}
	}

	// Every key a file may write is declared, or is version (which
	// changes no decision).
	for _, k := range topKeys {
		if _, ok := top[k]; !ok && k != "version" && k != "policy" {
			t.Errorf("top-level key %s is no declared field", k)
		}
	}
	for _, k := range policyKeys {
		if _, ok := top["policy."+k]; !ok {
			t.Errorf("policy.%s is no declared field", k)
		}
	}
	for _, k := range poolKeys {
		if _, ok := scopeKeys[k]; !ok {
			t.Errorf("pool.%s is no declared field", k)
		}
	}
	for _, k := range serverKeys {
		if _, ok := serverKeysGot[k]; !ok {
			t.Errorf("servers.<name>.%s is no declared field", k)
		}
	}
	// The parts of the structured values: every key of a rule, an
	// unknownArgsTools entry and the ledger section is a field of the Go
	// value that holds it (a part: the value's own field declares).
	for _, c := range []struct {
		t    reflect.Type
		keys []string
	}{
		{reflect.TypeFor[ruleDef](), ruleKeys},
		{reflect.TypeFor[ledgerDef](), ledgerKeys},
	} {
		for _, k := range c.keys {
			if _, ok := c.t.FieldByName(k); !ok {
				t.Errorf("%s key %s is no field of %s", c.t.Name(), k, c.t.Name())
			}
		}
	}

	// The check fails on a field that declares nothing, or a direction it
	// does not know.
	type withHole struct {
		ok   *setting `dir:"ordered" key:"policy.write"`
		hole []string
		typo string `dir:"tighten"`
	}
	got := undirected(reflect.TypeFor[withHole]())
	if len(got) != 2 || !strings.Contains(got[0], "withHole.hole declares no direction") || !strings.Contains(got[1], `withHole.typo declares no direction (dir tag "tighten"`) {
		t.Errorf("the check missed an undeclared field: %q", got)
	}
	// and the merge treats such a field as any change a loosening
	if d := declared(reflect.TypeFor[withHole]()); d[1].dir != dirAny || d[2].dir != dirAny {
		t.Errorf("undeclared fields read as %v, %v; want any", d[1].dir, d[2].dir)
	}
}

// TestUndeclaredFieldIsALoosening: a field the walk meets without a
// direction it knows is compared whole, and any change a later layer makes
// to it is a warning (fail closed until the field declares one).
func TestUndeclaredFieldIsALoosening(t *testing.T) {
	t.Parallel()
	type odd struct {
		knob string
	}
	type holder struct {
		o odd `dir:"any-other"`
	}
	m := &merger{layerName: "conf.d/x.yaml"}
	before := holder{o: odd{knob: "a"}}
	after := holder{o: odd{knob: "b"}}
	m.checkStruct(reflect.ValueOf(&after).Elem(), reflect.ValueOf(&before).Elem(), walkAt{table: "x", prefix: "x"})
	if len(m.warnings) != 1 || m.warnings[0].File != "conf.d/x.yaml" || !strings.Contains(m.warnings[0].Msg, "any change counts as a loosening") {
		t.Errorf("warnings %v", m.warnings)
	}
	m.warnings = nil
	same := holder{o: odd{knob: "a"}}
	m.checkStruct(reflect.ValueOf(&same).Elem(), reflect.ValueOf(&before).Elem(), walkAt{table: "x", prefix: "x"})
	if len(m.warnings) != 0 {
		t.Errorf("an unchanged value warned: %v", m.warnings)
	}
}
