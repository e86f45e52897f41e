package approval

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mcpx/mcpx-policy/internal/statedir"
)

// The log's format (docs/surfaces.md#asks-on-every-surface): a header line, then
// one compact JSON object a line, each a fact that happened under the
// store's lock, in order:
//
//	{"store":"mcpx-policy approvals","version":2}
//	{"op":"request","id":…,"sha256":…,…,"prompt":{…}}   a request opened
//	{"op":"approve","id":…,"at":…}                      a yes
//	{"op":"decline","id":…,"at":…}                      a no
//	{"op":"remove","id":…,"why":"used"}                 gone: used, void, declined, discarded, expired
//
// A compacted log holds the header and one request line per live request,
// its answer folded in (state, answered). A line is written whole, by one
// write(2), and is followed by an fdatasync before the operation returns;
// bytes after the last newline are a write a killed process left torn, and
// are ignored (and cut by the next writer).

// LogName is the log inside the state directory.
const LogName = "approvals.log"

// lockName is the lock file beside it: an exclusive flock on it serializes
// every change of LogName, a shared one every read.
const lockName = "approvals.lock"

// Version is the log format version this build reads and writes (the
// whole-file approvals.json of earlier builds was version 1). A log with a
// higher version is unreadable (ErrNewerVersion) and never written.
const Version = 2

// storeName is the header's "store".
const storeName = "mcpx-policy approvals"

// header is the log's first line.
var header = []byte(fmt.Sprintf(`{"store":%q,"version":%d}`+"\n", storeName, Version))

// The ops of a line.
const (
	opRequest = "request"
	opApprove = "approve"
	opDecline = "decline"
	opRemove  = "remove"
)

// Why a request was removed (a remove line's "why").
const (
	whyUsed      = "used"
	whyVoid      = "void"
	whyDeclined  = "declined"
	whyDiscarded = "discarded"
	whyExpired   = "expired"
)

var whys = []string{whyUsed, whyVoid, whyDeclined, whyDiscarded, whyExpired}

// requestLine is a request line as written.
type requestLine struct {
	Op string `json:"op"`
	Record
}

// answerLine is an approve or decline line.
type answerLine struct {
	Op string    `json:"op"`
	ID string    `json:"id"`
	At time.Time `json:"at"`
}

// removeLine is a remove line.
type removeLine struct {
	Op  string `json:"op"`
	ID  string `json:"id"`
	Why string `json:"why"`
}

// anyLine is every line as read: the fields of all of them.
type anyLine struct {
	Op string `json:"op"`
	Record
	At  time.Time `json:"at"`
	Why string    `json:"why"`
}

// encodeLine renders v as one line: compact JSON (a prompt's bytes
// compacted, its strings as given, no HTML escaping), a newline.
func encodeLine(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // one line, ending with a newline
		return nil, fmt.Errorf("approval: %w", err)
	}
	return b.Bytes(), nil
}

func requestOf(r Record) ([]byte, error) { return encodeLine(requestLine{Op: opRequest, Record: r}) }

func answerOf(op, id string, at time.Time) ([]byte, error) {
	return encodeLine(answerLine{Op: op, ID: id, At: at})
}

func removeOf(id, why string) ([]byte, error) {
	return encodeLine(removeLine{Op: opRemove, ID: id, Why: why})
}

// checkHeader checks the log's first line. A log a newer build wrote is an
// error matching ErrNewerVersion.
func checkHeader(b []byte) error {
	raw, err := statedir.CheckVersion(b, Version, ErrNewerVersion)
	if err != nil {
		return err
	}
	var store string
	if err := json.Unmarshal(raw["store"], &store); err != nil || store != storeName || len(raw) != 2 {
		return errors.New(`the first line is not {"store":"mcpx-policy approvals","version":2}`)
	}
	return nil
}

// decodeLine parses one line strictly: no unknown field, a known op, and
// what that op needs, well formed.
func decodeLine(b []byte) (anyLine, error) {
	var l anyLine
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return l, fmt.Errorf("not a line of the log: %w", err)
	}
	if dec.More() {
		return l, errors.New("more than one JSON value on a line")
	}
	if !hexID.MatchString(l.ID) {
		return l, fmt.Errorf("id %q is not 32 hex digits", l.ID)
	}
	switch l.Op {
	case opRequest:
		r := l.Record
		switch {
		case !hexSum.MatchString(r.SHA256):
			return l, fmt.Errorf("request %s: sha256 %q is not 64 hex digits", r.ID, r.SHA256)
		case r.State != Pending && r.State != Approved && r.State != Declined:
			return l, fmt.Errorf("request %s: unknown state %q", r.ID, r.State)
		case r.Expires.IsZero() || r.Created.IsZero() || r.Server == "" || r.Tool == "":
			return l, fmt.Errorf("request %s: server, tool, created and expires are required", r.ID)
		}
	case opApprove, opDecline:
		if l.At.IsZero() {
			return l, fmt.Errorf("%s %s: no time", l.Op, l.ID)
		}
	case opRemove:
		if !slices.Contains(whys, l.Why) {
			return l, fmt.Errorf("remove %s: unknown why %q", l.ID, l.Why)
		}
	default:
		return l, fmt.Errorf("unknown op %q", l.Op)
	}
	return l, nil
}
