package approval

import (
	"fmt"
	"regexp"
	"strings"
)

var (
	hexID  = regexp.MustCompile(`^[0-9a-f]{32}$`)
	hexSum = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// SurfaceOf is the surface a caller's requests count under: Caller up to
// its first ':' ("daemon" for "daemon:127.0.0.1"), the whole of it when it
// has none.
func SurfaceOf(caller string) string {
	s, _, _ := strings.Cut(caller, ":")
	return s
}

// CallerKey is what one caller's requests are counted by: r's Caller and
// Principal.
func CallerKey(r Record) string { return r.Caller + "\x00" + r.Principal }

// AskKey is what makes two asks the same ask: r's SHA256 and Binding.
func AskKey(r Record) string { return r.SHA256 + "\x00" + r.Binding }

// Counts are the live requests a store holds, as Admit weighs them: in
// all, of r's surface, of r's caller.
type Counts struct {
	Live, Surface, Caller int
}

// Admit says whether a new request r fits under l given the live requests
// c: nil, or an error matching ErrFull that names the cap reached and who
// reached it.
func (l Limits) Admit(r Record, c Counts) error {
	switch {
	case c.Caller >= l.MaxPerCaller:
		return fmt.Errorf("%w: %d from this caller (%s), the most one caller may keep; answer or decline them, or let them expire",
			ErrFull, c.Caller, describeCaller(r))
	case c.Surface >= l.MaxPerSurface:
		return fmt.Errorf("%w: %d asked over %s, the most one surface may keep (half of the store's %d); answer or decline them, or let them expire",
			ErrFull, c.Surface, SurfaceOf(r.Caller), l.MaxLive)
	case c.Live >= l.MaxLive:
		return fmt.Errorf("%w: %d, the most the store keeps; answer or decline them, or let them expire", ErrFull, c.Live)
	}
	return nil
}

func describeCaller(r Record) string {
	if r.Principal == "" {
		return r.Caller
	}
	return fmt.Sprintf("%s, principal %q", r.Caller, r.Principal)
}
