package engine

import (
	"reflect"
	"slices"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// A long string or an array is not a scalar, so santhosh's verdict on it
// is not kept (predicates.valid), and santhosh pays for every such value
// per rule: a validator and a scope per schema and per item, and two
// copies of every string it checks for a length (to count its runes, and
// as the content it would decode). A write tool's call carries about 1 KB
// of such values and meets a dozen rules on them.
//
// quickCheck is santhosh's verdict, computed directly, for the schemas made
// of a few keywords only: type, minLength, maxLength, pattern, minItems,
// maxItems, uniqueItems, prefixItems, items (draft 2020-12), contains,
// minContains, maxContains, minProperties,
// maxProperties, required, dependentRequired, properties, propertyNames,
// allOf, anyOf, oneOf, not, and the annotations.
// It is read from santhosh's own compiled schema (the same Regexp objects,
// the same limits), and it decides only strings, and arrays and objects
// of what it decides; on any other value, or a schema with any other keyword set, it
// says it cannot tell and santhosh decides (TestQuickCheckIsSanthosh and
// FuzzQuickCheck hold it to santhosh's verdict).
type quickCheck struct {
	typed        bool // a type keyword: only the types below are accepted
	str, arr     bool // the type keyword accepts strings, arrays
	obj          bool // the type keyword accepts objects
	minLen       int  // -1: none
	maxLen       int  // -1: none
	pattern      jsonschema.Regexp
	minItems     int // -1: none
	maxItems     int // -1: none
	unique       bool
	prefix       []*quickCheck
	items        *quickCheck // nil: none
	itemsUnknown bool        // an items schema quickCheck cannot read
	contains     *quickCheck // nil: none
	minContains  int         // -1: none
	maxContains  int         // -1: none
	allOf        []*quickCheck
	anyOf        []*quickCheck
	oneOf        []*quickCheck
	minProps     int // -1: none
	maxProps     int // -1: none
	required     []string
	depRequired  map[string][]string
	props        map[string]*quickCheck
	propNames    *quickCheck
	not          *quickCheck
}

// quickFields are the fields of a compiled schema quickCheck reads or that
// do not change a verdict (annotations, and santhosh's bookkeeping for the
// keywords quickCheck refuses). Any other field set, including one a later
// santhosh adds, makes quickOf refuse the schema.
var quickFields = map[string]bool{
	// read by quickCheck
	"DraftVersion": true, "Types": true, "MinLength": true, "MaxLength": true, "Pattern": true,
	"MinItems": true, "MaxItems": true, "UniqueItems": true, "Items2020": true, "Not": true,
	"PrefixItems": true, "Contains": true, "MinContains": true, "MaxContains": true,
	"AllOf": true, "AnyOf": true, "OneOf": true,
	"MinProperties": true, "MaxProperties": true, "Required": true, "DependentRequired": true,
	"Properties": true, "PropertyNames": true,
	// where the schema is and the resource it belongs to
	"Location": true, "up": true, "resource": true,
	// bookkeeping for $dynamicRef and the unevaluated* keywords, both refused
	"dynamicAnchors": true, "allPropsEvaluated": true, "allItemsEvaluated": true, "numItemsEvaluated": true,
	// annotations
	"Title": true, "Description": true, "Default": true, "Comment": true,
	"ReadOnly": true, "WriteOnly": true, "Examples": true, "Deprecated": true,
}

// quickDepth bounds how deep quickOf follows items and not.
const quickDepth = 8

// quickOf is the quickCheck of s, or nil when s has a keyword quickCheck
// does not read (then santhosh decides every value).
func quickOf(s *jsonschema.Schema) *quickCheck { return quickAt(s, 0) }

func quickAt(s *jsonschema.Schema, depth int) *quickCheck {
	if s == nil || depth > quickDepth || s.DraftVersion != 2020 {
		return nil
	}
	v := reflect.ValueOf(s).Elem()
	for i := 0; i < v.NumField(); i++ {
		if !quickFields[v.Type().Field(i).Name] && !v.Field(i).IsZero() {
			return nil
		}
	}
	q := &quickCheck{minLen: -1, maxLen: -1, minItems: -1, maxItems: -1, minProps: -1, maxProps: -1, minContains: -1, maxContains: -1,
		pattern: s.Pattern, unique: s.UniqueItems, required: s.Required, depRequired: s.DependentRequired}
	if s.Types != nil && !s.Types.IsEmpty() {
		q.typed = true
		types := s.Types.ToStrings()
		q.str = slices.Contains(types, "string")
		q.arr = slices.Contains(types, "array")
		q.obj = slices.Contains(types, "object")
	}
	for _, f := range []struct {
		from *int
		to   *int
	}{{s.MinLength, &q.minLen}, {s.MaxLength, &q.maxLen}, {s.MinItems, &q.minItems}, {s.MaxItems, &q.maxItems},
		{s.MinProperties, &q.minProps}, {s.MaxProperties, &q.maxProps},
		{s.MinContains, &q.minContains}, {s.MaxContains, &q.maxContains}} {
		if f.from != nil {
			if *f.from < 0 {
				return nil
			}
			*f.to = *f.from
		}
	}
	if s.Items2020 != nil {
		if q.items = quickAt(s.Items2020, depth+1); q.items == nil {
			q.itemsUnknown = true
		}
	}
	if s.Not != nil {
		if q.not = quickAt(s.Not, depth+1); q.not == nil {
			return nil
		}
	}
	if s.Contains != nil {
		if q.contains = quickAt(s.Contains, depth+1); q.contains == nil {
			return nil
		}
	}
	for _, l := range []struct {
		from []*jsonschema.Schema
		to   *[]*quickCheck
	}{{s.PrefixItems, &q.prefix}, {s.AllOf, &q.allOf}, {s.AnyOf, &q.anyOf}, {s.OneOf, &q.oneOf}} {
		for _, sub := range l.from {
			qs := quickAt(sub, depth+1)
			if qs == nil {
				return nil
			}
			*l.to = append(*l.to, qs)
		}
	}
	if s.PropertyNames != nil {
		if q.propNames = quickAt(s.PropertyNames, depth+1); q.propNames == nil {
			return nil
		}
	}
	if len(s.Properties) > 0 {
		q.props = make(map[string]*quickCheck, len(s.Properties))
		for name, sub := range s.Properties {
			if q.props[name] = quickAt(sub, depth+1); q.props[name] == nil {
				return nil
			}
		}
	}
	return q
}

// check is santhosh's verdict on v (valid), when known (decided).
func (q *quickCheck) check(v any) (valid, decided bool) {
	switch x := v.(type) {
	case string:
		if q.typed && !q.str {
			return false, true
		}
		if q.minLen >= 0 || q.maxLen >= 0 {
			n := utf8.RuneCountInString(x)
			if (q.minLen >= 0 && n < q.minLen) || (q.maxLen >= 0 && n > q.maxLen) {
				return false, true
			}
		}
		if q.pattern != nil && !q.pattern.MatchString(x) {
			return false, true
		}
	case []any:
		if q.typed && !q.arr {
			return false, true
		}
		if (q.minItems >= 0 && len(x) < q.minItems) || (q.maxItems >= 0 && len(x) > q.maxItems) {
			return false, true
		}
		if q.unique && len(x) > 1 {
			seen := make(map[string]struct{}, len(x))
			for _, e := range x {
				s, ok := e.(string)
				if !ok {
					return false, false
				}
				if _, dup := seen[s]; dup {
					return false, true
				}
				seen[s] = struct{}{}
			}
		}
		if valid, decided := q.checkItems(x); !valid || !decided {
			return valid, decided
		}
	case map[string]any:
		if valid, decided := q.checkObject(x); !valid || !decided {
			return valid, decided
		}
	default:
		return false, false
	}
	if valid, decided := q.checkOf(v); !valid || !decided {
		return valid, decided
	}
	if q.not != nil {
		ok, known := q.not.check(v)
		if !known {
			return false, false
		}
		if ok {
			return false, true
		}
	}
	return true, true
}

// checkObject is check on an object, without the not keyword.
func (q *quickCheck) checkObject(x map[string]any) (valid, decided bool) {
	if q.typed && !q.obj {
		return false, true
	}
	if (q.minProps >= 0 && len(x) < q.minProps) || (q.maxProps >= 0 && len(x) > q.maxProps) {
		return false, true
	}
	for _, name := range q.required {
		if _, ok := x[name]; !ok {
			return false, true
		}
	}
	for name, reqd := range q.depRequired {
		if _, ok := x[name]; !ok {
			continue
		}
		for _, r := range reqd {
			if _, ok := x[r]; !ok {
				return false, true
			}
		}
	}
	known := true
	for name, v := range x {
		if q.propNames != nil {
			ok, k := q.propNames.check(name)
			if k && !ok {
				return false, true
			}
			known = known && k
		}
		if sub := q.props[name]; sub != nil {
			ok, k := sub.check(v)
			if k && !ok {
				return false, true
			}
			known = known && k
		}
	}
	return known, known
}

// checkItems is check of prefixItems, items and contains on an array.
func (q *quickCheck) checkItems(x []any) (valid, decided bool) {
	evaluated := min(len(q.prefix), len(x))
	for i, e := range x[:evaluated] {
		ok, known := q.prefix[i].check(e)
		if !known {
			return false, false
		}
		if !ok {
			return false, true
		}
	}
	if q.itemsUnknown && len(x) > evaluated {
		return false, false
	}
	if q.items != nil {
		for _, e := range x[evaluated:] {
			ok, known := q.items.check(e)
			if !known {
				return false, false
			}
			if !ok {
				return false, true
			}
		}
	}
	if q.contains != nil {
		matched := 0
		for _, e := range x {
			ok, known := q.contains.check(e)
			if !known {
				return false, false
			}
			if ok {
				matched++
			}
		}
		if (q.minContains >= 0 && matched < q.minContains) || (q.minContains < 0 && matched == 0) ||
			(q.maxContains >= 0 && matched > q.maxContains) {
			return false, true
		}
	}
	return true, true
}

// checkOf is check of allOf, anyOf and oneOf on v.
func (q *quickCheck) checkOf(v any) (valid, decided bool) {
	count := func(subs []*quickCheck) (n int, known bool) {
		for _, sub := range subs {
			ok, k := sub.check(v)
			if !k {
				return 0, false
			}
			if ok {
				n++
			}
		}
		return n, true
	}
	n, known := count(q.allOf)
	if !known {
		return false, false
	}
	if n < len(q.allOf) {
		return false, true
	}
	if len(q.anyOf) > 0 {
		if n, known = count(q.anyOf); !known {
			return false, false
		}
		if n == 0 {
			return false, true
		}
	}
	if len(q.oneOf) > 0 {
		if n, known = count(q.oneOf); !known {
			return false, false
		}
		if n != 1 {
			return false, true
		}
	}
	return true, true
}
