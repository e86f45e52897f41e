package engine

import (
	"encoding/json"

	"github.com/open-policy-agent/opa/v1/ast"
)

// noUnknownArgs is the Go form of predicates.no_unknown_args for the
// tool's facts (lib.tool.facts). It says yes when the tool's
// unknown-arguments mode is off, when the tool has no inputSchema, or when
// the schema is plain and closed (an object with a properties object, no
// patternProperties, $ref, allOf, anyOf or oneOf, additionalProperties
// absent or false), declares (or exempts) every argument, and every
// argument that is an object or an array either sits under a property
// schema with no "properties" key anywhere in it (the step walks no
// deeper) or is an object of scalars whose own plain schema declares each
// of its keys. Otherwise it says no and the step decides.
func noUnknownArgs(ga *callArgs, v, factsV ast.Value) bool {
	facts, ok := factsV.(ast.Object)
	if !ok {
		return false
	}
	tool, args, lite, ok := callTool(ga, v)
	if !ok {
		return false
	}
	mode, ok := field(facts, kUAMode).(ast.String)
	if !ok {
		return false
	}
	if mode == "off" {
		return true
	}
	props, known, ok := schemaProperties(tool)
	if !ok || known {
		return ok
	}
	exempt, _ := field(facts, kExempt).(ast.Set)
	if lite {
		return goArgsKnown(ga.goArgs, props, exempt, true)
	}
	ok = true
	args.Until(func(k, a *ast.Term) bool {
		sub := props.Get(k)
		if sub == nil {
			// an exempt key is not reported, and the step walks into an
			// argument only through its declared property schema
			ok = exempt != nil && exempt.Contains(k)
			return !ok
		}
		ok = nestedKnown(sub.Value, a.Value)
		return !ok
	})
	return ok
}

// noUnknownArgsOnce is noUnknownArgs, answered from ga when it was asked
// on the same input without the arguments before the evaluation (the
// facts are the tool's: a function of the config and the names).
func noUnknownArgsOnce(ga *callArgs, v, factsV ast.Value) bool {
	if ga.isLite() && ga.noUnknown != 0 {
		return ga.noUnknown == 1
	}
	return noUnknownArgs(ga, v, factsV)
}

// callTool reads the input v of the key predicates: its tool, and its
// arguments, or lite when the arguments are read from the caller's Go
// values (an input without them, in the common half). ok is false when v
// is not such an input.
func callTool(ga *callArgs, v ast.Value) (tool, args ast.Object, lite, ok bool) {
	in, ok := v.(ast.Object)
	if !ok {
		return nil, nil, false, false
	}
	tool, ok = field(in, kTool).(ast.Object)
	if !ok {
		return nil, nil, false, false
	}
	lite = in.Get(kArgs) == nil && ga.isLite()
	args, ok = field(in, kArgs).(ast.Object)
	if !ok && !lite {
		return nil, nil, false, false
	}
	return tool, args, lite, true
}

// schemaProperties is the properties object of tool's inputSchema when it
// is a plain closed schema (plainProperties). known is true when the tool
// has no inputSchema (no argument can be unknown); ok is false when the
// schema is neither absent nor plain (Rego decides).
func schemaProperties(tool ast.Object) (props ast.Object, known, ok bool) {
	switch s := field(tool, kInputSchema).(type) {
	case nil, ast.Null:
		return nil, true, true
	case ast.Object:
		props, ok := plainProperties(s)
		return props, false, ok
	}
	return nil, false, false
}

// nestedKeysKnown is the Go form of predicates.nested_keys_known: the tool
// has no inputSchema, or a plain closed one (plainProperties) under which
// every argument that is an object or an array either sits under a
// property schema with no "properties" key anywhere in it (the step does
// not walk into it) or is an object of scalars whose own plain schema
// declares each of its keys. Arguments the schema does not declare are
// not walked into either.
func nestedKeysKnown(ga *callArgs, v ast.Value) bool {
	tool, args, lite, ok := callTool(ga, v)
	if !ok {
		return false
	}
	props, known, ok := schemaProperties(tool)
	if !ok || known {
		return ok
	}
	if lite {
		return goArgsKnown(ga.goArgs, props, nil, false)
	}
	ok = true
	args.Until(func(k, a *ast.Term) bool {
		if sub := props.Get(k); sub != nil {
			ok = nestedKnown(sub.Value, a.Value)
		}
		return !ok
	})
	return ok
}

// goArgsKnown is the argument check of noUnknownArgs (top: every key
// declared or exempt too) and nestedKeysKnown on the caller's decoded
// arguments: a declared argument's value passes nestedKnownGo.
func goArgsKnown(args map[string]any, props ast.Object, exempt ast.Set, top bool) bool {
	for k, a := range args {
		sub := lookup(props, k)
		if sub == nil {
			if top && !setHas(exempt, k) {
				return false
			}
			continue
		}
		if !nestedKnownGo(sub.Value, a) {
			return false
		}
	}
	return true
}

// nestedKnownGo is nestedKnown for a decoded value a: the Go types the
// engine converts to scalars are scalars, map[string]any an object,
// []any an array; any other type is a no.
func nestedKnownGo(sub ast.Value, a any) bool {
	switch x := a.(type) {
	case nil, bool, string, json.Number, float64, int, int64:
		return true
	case []any:
		return !namesProperties(sub, 0)
	case map[string]any:
		if !namesProperties(sub, 0) {
			return true
		}
		nested, plain := plainProperties(sub)
		if !plain {
			return false
		}
		for kk, xv := range x {
			switch xv.(type) {
			case nil, bool, string, json.Number, float64, int, int64:
			default:
				return false
			}
			if lookup(nested, kk) == nil {
				return false
			}
		}
		return true
	}
	return false
}

// lookup is o[k] for a Go string key, with the key's interned term
// (keyTerm): argument names repeat, and a schema's property names are
// interned the same way when it is converted.
func lookup(o ast.Object, k string) *ast.Term { return o.Get(keyTerm(k)) }

// setHas reports whether set s holds the string k.
func setHas(s ast.Set, k string) bool {
	found := false
	if s != nil {
		s.Until(func(t *ast.Term) bool {
			str, isString := t.Value.(ast.String)
			found = isString && string(str) == k
			return found
		})
	}
	return found
}

// nestedKnown reports that the step finds no unknown key inside argument
// value a whose property schema is sub (noUnknownArgs's container check).
func nestedKnown(sub, a ast.Value) bool {
	switch a.(type) {
	case ast.Object, *ast.Array:
	default:
		return true
	}
	if !namesProperties(sub, 0) {
		return true
	}
	obj, isObj := a.(ast.Object)
	if !isObj {
		return false
	}
	nested, plain := plainProperties(sub)
	if !plain {
		return false
	}
	ok := true
	obj.Until(func(kk, x *ast.Term) bool {
		switch x.Value.(type) {
		case ast.String, ast.Number, ast.Boolean, ast.Null:
			ok = nested.Get(kk) != nil
		default:
			ok = false
		}
		return !ok
	})
	return ok
}

// plainProperties is the properties object of a plain closed schema
// (lib.tool's plain_properties).
func plainProperties(v ast.Value) (ast.Object, bool) {
	s, ok := v.(ast.Object)
	if !ok {
		return nil, false
	}
	if ap := s.Get(kAdditional); ap != nil {
		if b, ok := ap.Value.(ast.Boolean); !ok || bool(b) {
			return nil, false
		}
	}
	for _, k := range openSchemaKeys {
		if s.Get(k) != nil {
			return nil, false
		}
	}
	props, ok := field(s, kProperties).(ast.Object)
	return props, ok
}

// namesProperties reports whether some object key in v is "properties"
// (the unknown-arguments step walks into an argument only then).
// Undecided (too deep) counts as yes.
func namesProperties(v ast.Value, depth int) bool {
	if depth > maxDepth {
		return true
	}
	found := false
	switch x := v.(type) {
	case ast.Object:
		x.Until(func(k, e *ast.Term) bool {
			ks, isString := k.Value.(ast.String)
			found = (isString && ks == "properties") || namesProperties(e.Value, depth+1)
			return found
		})
	case *ast.Array:
		for i := 0; i < x.Len() && !found; i++ {
			found = namesProperties(x.Elem(i).Value, depth+1)
		}
	case ast.Set:
		return true
	}
	return found
}
