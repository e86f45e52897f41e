package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/open-policy-agent/opa/v1/rego"
)

// Value evaluates the Prepared's query (see WithQuery) once with input,
// JSON-compatible Go values, and returns the query's value as
// JSON-compatible Go values (numbers json.Number, sets as arrays). An
// undefined query is an error. It reads what the policy computes besides
// the decision — the config diff reads each tool's facts with it — and is
// not a way to decide a call: Decide is. Safe for concurrent use.
func (e *Prepared) Value(ctx context.Context, input any) (any, error) {
	rs, err := e.query.Eval(ctx, rego.EvalInput(input))
	if err != nil {
		return nil, fmt.Errorf("evaluate: %w", err)
	}
	if len(rs) != 1 || len(rs[0].Expressions) != 1 {
		return nil, errors.New("evaluate: the query is undefined")
	}
	return rs[0].Expressions[0].Value, nil
}
