package redact

import (
	"strings"

	"github.com/mcpx/mcpx-policy/decision"
)

// Redact returns a copy of d fit to show on any surface: violation paths
// have their secret-shaped keys redacted; violation values, expected values
// and details are redacted and cut like arguments (a violation's value is
// judged by the last key of its path, so /token is a secret by name); and
// every message, detail text and string in details (of the reasons, the
// warnings and a shadow-mode decision's reasons) has the secrets found
// anywhere in d — and in args, when given — replaced (raw or escaped as in
// JSON text), then every secret shape. args are the call's unredacted
// arguments; nil is allowed and then only what d itself shows is known. d
// is not modified.
//
// One string per reason is kept as it is: the clear command of an
// UnknownOutcomePending reason (details "clear"), the accept command of a
// ToolDefinitionChanged one (details "accept"), the writes command of a
// LedgerUnreadable one (details "writes") and the approve command of a
// ConfirmationUnavailable one held for a person (details "approve"), each
// also where its message names it, when it is such a command (it starts
// with "mcpx-policy writes clear ", "mcpx-policy pins accept ",
// "mcpx-policy approve " or is "mcpx-policy writes" with or without
// flags). The process that decided built it from the server's and
// the tool's names, the definition's hash and its own state dir or config
// files (Engine.ClearCommand, Engine.AcceptCommand), none of them from the
// call's arguments, and a path that merely looks random (a mktemp
// directory) must not turn it into a command that finds nothing.
//
// Every surface function calls Redact(d, nil) itself; every caller that
// holds the arguments (the proxy, serve, eval, the decision log) calls
// Redact(d, call.Args) first, so that a secret echoed in an operator's
// message is caught even when no violation names it. Redacting twice
// changes nothing.
func Redact(d decision.Decision, args map[string]any) decision.Decision {
	return redactWith(newRedactorFor(d), d, args)
}

// newRedactorFor is a redactor for d, with a memo when d has reasons to
// search (an allow has none: nothing is searched, nothing to keep).
func newRedactorFor(d decision.Decision) *redactor {
	r := newRedactor()
	if echoes(d) {
		r.m = &memo{}
	}
	return r
}

// redactWith is Redact with the redactor r, new.
func redactWith(r *redactor, d decision.Decision, args map[string]any) decision.Decision {
	redactions.Add(1)
	if args != nil && echoes(d) {
		// the arguments are read for the secrets they hold by key name,
		// which only the reasons can echo: every element of an array, not
		// only those a rendering shows (a reason may echo any)
		r.everyItem = true
		r.value("", "", map[string]any(args), false)
		r.everyItem = false
	}
	// Pass 1: values, collecting secrets known by key name.
	out := d
	out.Reasons = redactReasons(r, d.Reasons)
	out.Warnings = redactReasons(r, d.Warnings)
	if d.Shadow != nil {
		sh := *d.Shadow
		sh.Reasons = redactReasons(r, d.Shadow.Reasons)
		out.Shadow = &sh
	}
	// Pass 2: free text, and every string again for secrets seen elsewhere.
	scrubReasons(r, out.Reasons, d.Reasons)
	scrubReasons(r, out.Warnings, d.Warnings)
	if out.Shadow != nil {
		scrubReasons(r, out.Shadow.Reasons, d.Shadow.Reasons)
	}
	return out
}

// echoes reports whether d has a reason, warning or shadowed reason: the
// only parts of a decision that echo the call's values.
func echoes(d decision.Decision) bool {
	return len(d.Reasons) > 0 || len(d.Warnings) > 0 || (d.Shadow != nil && len(d.Shadow.Reasons) > 0)
}

// keptCommand is the detail key and the command of reason rs that Redact
// keeps as it is — the clear command of an UnknownOutcomePending, the
// accept command of a ToolDefinitionChanged, the writes command of a
// LedgerUnreadable, the approve command of a held ConfirmationUnavailable
// —, or "", "".
func keptCommand(rs decision.Reason) (key, cmd string) {
	var prefix string
	switch rs.Code {
	case decision.UnknownOutcomePending:
		key, prefix = "clear", "mcpx-policy writes clear "
	case decision.ToolDefinitionChanged:
		key, prefix = "accept", "mcpx-policy pins accept "
	case decision.LedgerUnreadable:
		key, prefix = "writes", "mcpx-policy writes"
	case decision.ConfirmationUnavailable:
		key, prefix = "approve", "mcpx-policy approve "
	default:
		return "", ""
	}
	c, _ := rs.Details[key].(string)
	if c != prefix && !strings.HasPrefix(c, strings.TrimSuffix(prefix, " ")+" ") {
		return "", ""
	}
	return key, c
}

// keptLink is the approvals page's link of a held ConfirmationUnavailable
// reason (details "page"), which Redact keeps as it is besides its
// command: the process that held the ask built it from its own page's
// URL and the request's id, and an id merely looks random. "" for any
// other reason, or a page that is not an http(s) URL.
func keptLink(rs decision.Reason) string {
	if rs.Code != decision.ConfirmationUnavailable {
		return ""
	}
	if _, cmd := keptCommand(rs); cmd == "" {
		return ""
	}
	p, _ := rs.Details["page"].(string)
	if !strings.HasPrefix(p, "http://") && !strings.HasPrefix(p, "https://") {
		return ""
	}
	return p
}

// textKeeping is r.text(s) with every occurrence of each kept string left
// as it is.
func textKeeping(r *redactor, s string, kept ...string) string {
	for len(kept) > 0 && kept[0] == "" {
		kept = kept[1:]
	}
	if len(kept) == 0 {
		return r.text(s)
	}
	parts := strings.Split(s, kept[0])
	for i, p := range parts {
		parts[i] = textKeeping(r, p, kept[1:]...)
	}
	return strings.Join(parts, kept[0])
}

func redactReasons(r *redactor, in []decision.Reason) []decision.Reason {
	if in == nil {
		return nil
	}
	out := make([]decision.Reason, len(in))
	for i, rs := range in {
		o := rs
		if rs.Violations != nil {
			o.Violations = make([]decision.Violation, len(rs.Violations))
			for j, v := range rs.Violations {
				nv := v
				key := lastToken(v.Path)
				if markerRE.MatchString(key) {
					key = "" // the policy redacted a secret-shaped key: its value is judged by itself
				}
				nv.Path = r.pointer(v.Path)
				nv.Value = r.value(nv.Path, key, v.Value, r.namedAt(nv.Path))
				nv.Expected = r.value("", "", v.Expected, false)
				o.Violations[j] = nv
			}
		}
		if rs.Details != nil {
			o.Details, _ = r.value("", "", map[string]any(rs.Details), false).(map[string]any)
		}
		out[i] = o
	}
	return out
}

// scrubReasons is pass 2 over rs, the pass-1 copies of orig.
func scrubReasons(r *redactor, rs, orig []decision.Reason) {
	for i := range rs {
		key, kept := keptCommand(orig[i])
		link := keptLink(orig[i])
		rs[i].Message = textKeeping(r, rs[i].Message, kept, link)
		for j := range rs[i].Violations {
			v := &rs[i].Violations[j]
			v.Value = scrubTree(r, v.Value)
			v.Expected = scrubTree(r, v.Expected)
			v.Detail = r.text(v.Detail)
			v.Rule.Description = r.text(v.Rule.Description)
		}
		if rs[i].Details != nil {
			rs[i].Details, _ = scrubTree(r, rs[i].Details).(map[string]any)
			if kept != "" {
				rs[i].Details[key] = kept
			}
			if link != "" {
				rs[i].Details["page"] = link
			}
		}
	}
}

// scrubTree applies r.text to every string of a tree that pass 1 copied.
func scrubTree(r *redactor, v any) any {
	switch t := v.(type) {
	case string:
		if markerRE.MatchString(t) {
			return t
		}
		s, _ := cut(r.text(t))
		return s
	case map[string]any:
		for k, e := range t {
			t[k] = scrubTree(r, e)
		}
		return t
	case []any:
		for i, e := range t {
			t[i] = scrubTree(r, e)
		}
		return t
	default:
		return v
	}
}
