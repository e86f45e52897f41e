package regexneed

import (
	"fmt"
	"reflect"
	"regexp/syntax"
	"testing"
)

// TestOfKnownIsFresh: a need Of answers from its cache is the need found
// afresh, for expressions met before and after the cache is full.
func TestOfKnownIsFresh(t *testing.T) {
	fresh := func(expr string) Need {
		re, err := syntax.Parse(expr, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		return of(re.Simplify())
	}
	for round := 0; round < 2; round++ {
		for i := 0; i < maxKnown+20; i++ {
			expr := fmt.Sprintf(`(?i)key%d[a-c]+|tok(en)?%d`, i, i)
			got, err := Of(expr)
			if err != nil {
				t.Fatal(err)
			}
			if want := fresh(expr); !reflect.DeepEqual(got, want) {
				t.Fatalf("round %d, %s: %+v, want %+v", round, expr, got, want)
			}
		}
	}
	if _, err := Of(`(`); err == nil {
		t.Error("an expression that does not parse has a need")
	}
}
