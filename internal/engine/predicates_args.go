package engine

import (
	"context"
	"encoding/json"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
)

// callArgs ties an evaluation's input arguments (the "args" object the
// engine built) to the caller's decoded arguments it was converted from,
// so that the rules predicates hand santhosh, which reads Go values, the
// caller's own values instead of converting the AST back. The two are the
// same JSON: the AST was built from these values for this evaluation
// (identity of the object checked). A Go value that is not decoded JSON
// fails santhosh's validation: a no, and Rego decides.
type callArgs struct {
	ast      ast.Value // nil before the input holds the arguments (lite)
	goArgs   map[string]any
	lite     bool     // the input has no arguments yet: read goArgs
	verdicts verdicts // package → verdict on these arguments
	// noUnknown is noUnknownArgs on the input without the arguments
	// (lite), once asked before the evaluation (decidePlanned): 0 not
	// asked, 1 yes, 2 no
	noUnknown uint8
	// commonFacts are the tool's facts the common_case builtin held on
	// (planned.go: what a common document met is kept with)
	commonFacts ast.Value
}

// isLite reports whether the evaluation's input leaves the arguments out
// and the predicates read the caller's (Prepared.evaluate's first query).
func (ga *callArgs) isLite() bool { return ga != nil && ga.lite }

type callArgsKey struct{}

// withCallArgs notes on ctx the evaluation's arguments (input.args as
// built, and what it was built from).
func withCallArgs(ctx context.Context, args ast.Value, goArgs map[string]any) context.Context {
	return context.WithValue(ctx, callArgsKey{}, &callArgs{ast: args, goArgs: goArgs, verdicts: verdicts{}})
}

func goArgsOf(bctx rego.BuiltinContext) *callArgs {
	if bctx.Context == nil {
		return nil
	}
	ga, _ := bctx.Context.Value(callArgsKey{}).(*callArgs)
	return ga
}

// reader returns the reader of input in's arguments: the caller's values
// when in has none yet (lite) or holds the object built from them, else
// the AST converted value by value. ok is false when in has no arguments
// object.
func (ga *callArgs) reader(in ast.Object) (argReader, bool) {
	argsT := in.Get(kArgs)
	if argsT == nil {
		if ga.isLite() {
			return argReader{goArgs: ga.goArgs, native: true, verdicts: ga.verdicts}, true
		}
		return argReader{}, false
	}
	if _, ok := argsT.Value.(ast.Object); !ok {
		return argReader{}, false
	}
	if ga != nil && ga.goArgs != nil && ga.ast == argsT.Value {
		return argReader{goArgs: ga.goArgs, native: true, verdicts: ga.verdicts}, true
	}
	return argReader{ast: argsT}, true
}

// argReader reads rule targets from the arguments, along a rule's paths
// as object.get does for the rules step: from the caller's decoded values
// (native) or from the input's AST.
type argReader struct {
	ast      *ast.Term
	goArgs   map[string]any
	native   bool
	verdicts verdicts // nil: keep none
}

// verdicts are a package's verdicts on the values of one call's
// arguments: allValid when every value its rules check is valid, else the
// index of the first rule whose value is not (rules before it have valid
// values; the refusal builder does not ask santhosh about them again).
type verdicts map[string]int

// allValid is a package's verdict when every value it checks is valid.
const allValid = -1

// read returns the value a rule checks, converted for santhosh. fine is
// false when the rule is not in the shape the step reads, more than one
// path finds a value, or the value is not JSON.
func (a argReader) read(rule *ast.Term) (value any, present, fine bool) {
	r, ok := rule.Value.(ast.Object)
	if !ok {
		return nil, false, false
	}
	paths, ok := field(r, kPaths).(*ast.Array)
	if !ok {
		return nil, false, false
	}
	for i := 0; i < paths.Len(); i++ {
		path, ok := paths.Elem(i).Value.(*ast.Array)
		if !ok {
			return nil, false, false
		}
		v, found, known := a.at(path)
		if !known {
			return nil, false, false
		}
		if !found {
			continue
		}
		if present {
			return nil, false, false
		}
		value, present = v, true
	}
	return value, present, true
}

// at follows path: found tells whether a value is there; known is false
// when the caller's values hold a Go type the AST reading cannot be
// mirrored for.
func (a argReader) at(path *ast.Array) (v any, found, known bool) {
	if !a.native {
		curr := a.ast
		for j := 0; j < path.Len() && curr != nil; j++ {
			curr = curr.Get(path.Elem(j))
		}
		if curr == nil {
			return nil, false, true
		}
		doc, ok := toGo(curr.Value, 0)
		return doc, true, ok
	}
	var curr any = a.goArgs
	for j := 0; j < path.Len(); j++ {
		// as ast.Term.Get: a string key of an object, an integer index of
		// an array; anything else finds nothing
		switch c := curr.(type) {
		case map[string]any:
			k, ok := path.Elem(j).Value.(ast.String)
			if !ok {
				return nil, false, true
			}
			if curr, ok = c[string(k)]; !ok {
				return nil, false, true
			}
		case []any:
			n, ok := path.Elem(j).Value.(ast.Number)
			if !ok {
				return nil, false, true
			}
			i, ok := n.Int()
			if !ok || i < 0 || i >= len(c) {
				return nil, false, true
			}
			curr = c[i]
		case nil, bool, string, json.Number, float64, float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
			return nil, false, true
		default:
			return nil, false, false
		}
	}
	return curr, true, true
}

// toGo converts a JSON value of the input to what santhosh validates:
// numbers as json.Number with their exact text. Anything that is not JSON
// is not ok.
func toGo(v ast.Value, depth int) (any, bool) {
	if depth > maxDepth {
		return nil, false
	}
	switch x := v.(type) {
	case ast.Null:
		return nil, true
	case ast.Boolean:
		return bool(x), true
	case ast.Number:
		return json.Number(x), true
	case ast.String:
		return string(x), true
	case *ast.Array:
		out := make([]any, x.Len())
		for i := range out {
			e, ok := toGo(x.Elem(i).Value, depth+1)
			if !ok {
				return nil, false
			}
			out[i] = e
		}
		return out, true
	case ast.Object:
		out := make(map[string]any, x.Len())
		ok := true
		x.Until(func(k, e *ast.Term) bool {
			ks, isString := k.Value.(ast.String)
			if !isString {
				ok = false
				return true
			}
			var ev any
			ev, ok = toGo(e.Value, depth+1)
			out[string(ks)] = ev
			return !ok
		})
		return out, ok
	}
	return nil, false
}
