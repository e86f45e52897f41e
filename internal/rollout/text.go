package rollout

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Text renders the diff for a person: what was compared, then each tool,
// server or the policy with its changes, one a line with its direction,
// then a count. oldName, newName and catalog name the inputs ("" without a
// catalog).
func (d Diff) Text(oldName, newName, catalog string) string {
	var b strings.Builder
	if d.Catalog {
		fmt.Fprintf(&b, "compared %s -> %s over the %d tools of the catalog %s\n", oldName, newName, d.Tools, catalog)
		if len(d.AsWritten) > 0 {
			fmt.Fprintf(&b, "not in the catalog, compared as written: %s\n", strings.Join(d.AsWritten, ", "))
		}
	} else {
		fmt.Fprintf(&b, "compared %s -> %s as written, per server (no --catalog: give one to compare what each of its tools gets)\n", oldName, newName)
	}
	last := "\x00"
	for _, c := range d.Changes {
		if s := subject(c); s != last {
			fmt.Fprintf(&b, "%s\n", s)
			last = s
		}
		fmt.Fprintf(&b, "  %-10s  %s\n", c.Direction, describe(c))
	}
	l, t, o := d.Count()
	switch n := len(d.Changes); n {
	case 0:
		b.WriteString("no change\n")
	case 1:
		fmt.Fprintf(&b, "1 change: %d loosening, %d tightening, %d other\n", l, t, o)
	default:
		fmt.Fprintf(&b, "%d changes: %d loosening, %d tightening, %d other\n", n, l, t, o)
	}
	return b.String()
}

func subject(c Change) string {
	switch {
	case c.Tool != "":
		return c.Server + "." + c.Tool
	case c.Server == "":
		return "policy"
	case c.Server == OtherServers:
		return "servers neither config names"
	}
	return "server " + c.Server
}

func describe(c Change) string {
	switch c.Field {
	case "hidden":
		if c.New == true {
			return "visible -> hidden"
		}
		text := "hidden -> visible"
		if c.Facts != nil {
			text += "; now " + factsText(*c.Facts)
		}
		return text
	case "write":
		if c.New == true {
			if c.Facts != nil {
				return "a read -> a write (write mode " + c.Facts.WriteMode + ")"
			}
			return "a read -> a write"
		}
		return "a write -> a read"
	case "writeMode":
		return fmt.Sprintf("write mode %v -> %v", c.Old, c.New)
	case "unknownArgs":
		return fmt.Sprintf("unknown arguments %v -> %v", c.Old, c.New)
	case "enforce":
		return fmt.Sprintf("enforcement %v -> %v", c.Old, c.New)
	case "pinTools":
		return fmt.Sprintf("pinTools %v -> %v", c.Old, c.New)
	case "exemptArg":
		if c.New == true {
			return fmt.Sprintf("argument %q now exempt from the unknown-arguments check", c.Item)
		}
		return fmt.Sprintf("argument %q no longer exempt from the unknown-arguments check", c.Item)
	case "hiddenPattern", "writePattern":
		what := map[string]string{"hiddenPattern": "hiddenTools", "writePattern": "writeTools"}[c.Field]
		if c.New == true {
			return fmt.Sprintf("%s pattern %q added", what, c.Item)
		}
		return fmt.Sprintf("%s pattern %q removed", what, c.Item)
	case "unknownArgsTool":
		return fmt.Sprintf("unknownArgsTools %q: %s -> %s", c.Item, modeOrNone(c.Old), modeOrNone(c.New))
	case "rule":
		return ruleText(c)
	case "confirmDestructive":
		return fmt.Sprintf("confirmDestructive %v -> %v", c.Old, c.New)
	case "label":
		if c.New == true {
			return fmt.Sprintf("label %q added", c.Item)
		}
		return fmt.Sprintf("label %q removed", c.Item)
	case "labelPattern", "budgetPattern":
		what := map[string]string{"labelPattern": "labels", "budgetPattern": "budget tools"}[c.Field]
		if c.New == true {
			return fmt.Sprintf("%s %q added", what, c.Item)
		}
		return fmt.Sprintf("%s %q removed", what, c.Item)
	case "budget", "flow":
		what := map[string]string{"budget": "budget", "flow": "flow rule"}[c.Field]
		switch {
		case c.Old == nil:
			return fmt.Sprintf("%s %s added: %s", what, c.Item, jsonText(c.New))
		case c.New == nil:
			return fmt.Sprintf("%s %s removed (was %s)", what, c.Item, jsonText(c.Old))
		}
		return fmt.Sprintf("%s %s: %s -> %s", what, c.Item, jsonText(c.Old), jsonText(c.New))
	case "override":
		switch {
		case c.Old == nil:
			return fmt.Sprintf("override %s added", c.Item)
		case c.New == nil:
			return fmt.Sprintf("override %s removed", c.Item)
		}
		return fmt.Sprintf("override %s changed", c.Item)
	}
	return fmt.Sprintf("%s %s: %s -> %s", c.Field, c.Item, jsonText(c.Old), jsonText(c.New))
}

func ruleText(c Change) string {
	or, _ := c.Old.(RuleInfo)
	nr, _ := c.New.(RuleInfo)
	switch {
	case c.Old == nil:
		return fmt.Sprintf("rule %s (%s) now applies", c.Item, nr.Origin)
	case c.New == nil:
		return fmt.Sprintf("rule %s (%s) no longer applies", c.Item, or.Origin)
	}
	var what []string
	if or.Package != nr.Package {
		what = append(what, "its schema changed")
	}
	if or.Pointer != nr.Pointer {
		what = append(what, fmt.Sprintf("argument %s -> %s", pointerText(or.Pointer), pointerText(nr.Pointer)))
	}
	if or.Required != nr.Required {
		what = append(what, fmt.Sprintf("required %v -> %v", or.Required, nr.Required))
	}
	if len(what) == 0 {
		what = append(what, fmt.Sprintf("tools %s -> %s", jsonText(or.Tools), jsonText(nr.Tools)))
	}
	return fmt.Sprintf("rule %s (%s): %s", c.Item, nr.Origin, strings.Join(what, ", "))
}

func factsText(f ToolFacts) string {
	parts := []string{"a read"}
	if f.Write {
		parts = []string{"a write (write mode " + f.WriteMode + ")"}
	}
	parts = append(parts, "unknown arguments "+f.UnknownArgs)
	if len(f.Rules) == 0 {
		parts = append(parts, "no argument rule")
	} else {
		parts = append(parts, "rules "+strings.Join(f.Rules, ", "))
	}
	return strings.Join(parts, ", ")
}

func pointerText(p string) string {
	if p == "" {
		return "(whole arguments)"
	}
	return p
}

func modeOrNone(v any) string {
	if v == nil {
		return "none (the server's mode)"
	}
	return fmt.Sprint(v)
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
