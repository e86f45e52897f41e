package rollout

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/jsonptr"
	"github.com/mcpx/mcpx-policy/internal/redact"
	"github.com/mcpx/mcpx-policy/internal/statedir"
)

// Defaults of a Recorder's caps.
const (
	// DefaultRecordMaxBytes caps the recorded files of a directory, in
	// bytes all together.
	DefaultRecordMaxBytes = 64 << 20
	// DefaultRecordMaxAge is how long a recorded call is kept.
	DefaultRecordMaxAge = 7 * 24 * time.Hour
)

// RedactSecrets, in RecorderOptions.Redact, names every argument whose key
// is a secret's name in the secret table (token, password, api_key,
// authorization and their kin: redact.SecretKey) or that a name beside it
// makes one ({"name": "DB_PASSWORD", "value": …}, ["--password", …]),
// replaced whole, and every secret-shaped part of a string (a token in a
// URL, a password in a command line), replaced by its marker
// (redact.RedactReplacing). It is the default.
const RedactSecrets = "@secrets"

// RedactedValue replaces a redacted argument in a recorded call.
const RedactedValue = "[REDACTED]"

// ErrRecordTooLarge: one recorded call is larger than the whole cap.
var ErrRecordTooLarge = errors.New("the recorded call is larger than the recording's size cap")

// Record is one recorded call: the call document `mcpx-policy eval`
// reads, plus when it was decided, how, and which arguments were redacted
// (JSON Pointers) before it was written.
type Record struct {
	Server    string              `json:"server"`
	Tool      decision.Tool       `json:"tool"`
	Args      map[string]any      `json:"args"`
	Surface   string              `json:"surface,omitempty"`
	Principal *decision.Principal `json:"principal,omitempty"`
	Mode      string              `json:"mode,omitempty"`
	// Session is the session the gateway kept the call under (its caller
	// and the session it named), so that a replay decides the calls of one
	// session as one: the labels data-flow rules remember are per session.
	Session  string            `json:"session,omitempty"`
	Time     string            `json:"time"`
	Decision decision.Recorded `json:"decision"`
	Redacted []string          `json:"redacted,omitempty"`
}

// RecorderOptions configure a Recorder.
type RecorderOptions struct {
	// Dir holds the recorded calls, one file each. It is made 0700 if
	// missing; an existing one must belong to this user and be closed to
	// group and others (mode 0700), as the arguments of calls are private.
	Dir string
	// MaxBytes caps the recorded files together; the oldest go first to
	// make room. 0 means DefaultRecordMaxBytes.
	MaxBytes int64
	// MaxAge is how long a recorded call is kept. 0 means
	// DefaultRecordMaxAge.
	MaxAge time.Duration
	// Redact says which arguments are replaced by RedactedValue before a
	// call is written: JSON Pointers from the arguments' root ("/env/TOKEN",
	// one place) and key names ("content": that key at any depth), and
	// RedactSecrets. Nil means [RedactSecrets]; an empty list redacts
	// nothing.
	Redact []string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// recordName is a recorded call's file name: its UTC time, to the
// nanosecond, and a random tag.
var recordName = regexp.MustCompile(`^(\d{8}T\d{6}\.\d{9}Z)-[0-9a-f]{8}\.json$`)

const nameTime = "20060102T150405.000000000Z"

type recordFile struct {
	name string
	at   time.Time
	size int64
}

// Recorder writes decided calls to a directory for `mcpx-policy replay`,
// within a size cap and an age cap: each Record first removes the files
// past the age cap and then the oldest until the new one fits. Only files
// it names (recordName) are ever removed. A record is written to a temp
// file and renamed into place, mode 0600, not fsynced: a crash may lose
// the last ones, never leave half of one. Safe for concurrent use; two
// processes may share a directory, each rescans it every minute.
type Recorder struct {
	opts    RecorderOptions
	dir     statedir.Dir
	redact  redaction
	mu      sync.Mutex
	files   []recordFile // oldest first
	total   int64
	scanned time.Time
}

// OpenRecorder checks (or makes) the directory, reads what it holds and
// applies the caps.
func OpenRecorder(opts RecorderOptions) (*Recorder, error) {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultRecordMaxBytes
	}
	if opts.MaxAge <= 0 {
		opts.MaxAge = DefaultRecordMaxAge
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Redact == nil {
		opts.Redact = []string{RedactSecrets}
	}
	red, err := parseRedaction(opts.Redact)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	dir := statedir.New(abs)
	if err := dir.Make(); err != nil {
		return nil, fmt.Errorf("record dir: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Stat(abs, &st); err != nil {
		return nil, fmt.Errorf("record dir: %w", err)
	}
	if st.Mode&0o077 != 0 {
		return nil, &statedir.Error{Path: abs, Err: fmt.Errorf("record dir %s is open to group or others (mode %04o): recorded calls hold their arguments", abs, st.Mode&0o7777), Hint: "run: chmod 700 " + abs}
	}
	r := &Recorder{opts: opts, dir: dir, redact: red}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.scan(); err != nil {
		return nil, err
	}
	r.prune(0)
	return r, nil
}

// Dir is the recording's directory.
func (r *Recorder) Dir() string { return r.dir.Path() }

// scan reads the directory's recorded files.
func (r *Recorder) scan() error {
	ents, err := os.ReadDir(r.dir.Path())
	if err != nil {
		return fmt.Errorf("record dir: %w", err)
	}
	r.files, r.total = r.files[:0], 0
	for _, e := range ents {
		m := recordName.FindStringSubmatch(e.Name())
		if m == nil || !e.Type().IsRegular() {
			continue
		}
		at, err := time.Parse(nameTime, m[1])
		if err != nil {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		r.files = append(r.files, recordFile{name: e.Name(), at: at, size: info.Size()})
		r.total += info.Size()
	}
	sort.Slice(r.files, func(i, j int) bool { return r.files[i].name < r.files[j].name })
	r.scanned = r.opts.Now()
	return nil
}

// prune removes the files past the age cap, then the oldest until room
// bytes more fit under the size cap.
func (r *Recorder) prune(room int64) {
	cutoff := r.opts.Now().Add(-r.opts.MaxAge)
	for len(r.files) > 0 && (r.files[0].at.Before(cutoff) || r.total+room > r.opts.MaxBytes) {
		f := r.files[0]
		if err := os.Remove(filepath.Join(r.dir.Path(), f.name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			break // it stays counted: the cap holds by not writing
		}
		r.files = r.files[1:]
		r.total -= f.size
	}
}

// Record writes one decided call: its arguments redacted as
// RecorderOptions.Redact says, its decision shown as every output shows it
// (shown, redacted with the call's arguments), revision the config
// revision that decided it, dispatched whether the gateway let it run and
// approved whether it ran with a person's approval that shown already
// shows used. A call larger than the whole cap is not written
// (ErrRecordTooLarge).
func (r *Recorder) Record(call decision.Call, shown redact.Decision, revision string, dispatched, approved bool) error {
	now := r.opts.Now().UTC()
	args, redacted, secrets := r.redact.apply(call.Args)
	d := shown.Doc()
	msg := d.First().Message
	for _, s := range secrets {
		msg = scrub(msg, s)
	}
	rec := Record{
		Server: call.Server, Tool: call.Tool, Args: args, Surface: call.Surface, Principal: call.Principal, Mode: call.Mode,
		Session: recordedSession(call),
		Time:    now.Format(time.RFC3339Nano),
		Decision: decision.Recorded{Outcome: d.Outcome, Step: d.Step, Code: d.First().Code, Message: msg,
			SHA256: d.Call.SHA256, Revision: revision, Dispatched: &dispatched, Approved: approved},
		Redacted: redacted,
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rec); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	size := int64(buf.Len())
	if size > r.opts.MaxBytes {
		return fmt.Errorf("%w (%d bytes, cap %d)", ErrRecordTooLarge, size, r.opts.MaxBytes)
	}
	var tag [4]byte
	rand.Read(tag[:])
	name := now.Format(nameTime) + "-" + hex.EncodeToString(tag[:]) + ".json"

	r.mu.Lock()
	defer r.mu.Unlock()
	if now.Sub(r.scanned) >= time.Minute {
		if err := r.scan(); err != nil {
			return err
		}
	}
	r.prune(size)
	if r.total+size > r.opts.MaxBytes {
		return fmt.Errorf("record: the directory stays above its size cap (a recorded file could not be removed)")
	}
	tmp := "." + name + ".tmp"
	f, _, err := r.dir.Open(tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL)
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	_, werr := f.Write(buf.Bytes())
	cerr := f.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(filepath.Join(r.dir.Path(), tmp), filepath.Join(r.dir.Path(), name))
	}
	if werr != nil {
		os.Remove(filepath.Join(r.dir.Path(), tmp))
		return fmt.Errorf("record: %w", werr)
	}
	r.files = append(r.files, recordFile{name: name, at: now, size: size})
	r.total += size
	return nil
}

// scrub replaces a redacted value in free text, raw and as it is escaped
// inside JSON text. Values shorter than 4 characters are left alone:
// replacing every "ab" would garble the message, and such values are
// whole arguments the record replaced anyway.
func scrub(text, secret string) string {
	if len(secret) < 4 {
		return text
	}
	text = strings.ReplaceAll(text, secret, RedactedValue)
	if b, err := json.Marshal(secret); err == nil {
		if esc := string(b[1 : len(b)-1]); esc != secret {
			text = strings.ReplaceAll(text, esc, RedactedValue)
		}
	}
	return text
}

// redaction is RecorderOptions.Redact, parsed.
type redaction struct {
	secrets  bool
	names    map[string]bool
	pointers map[string]bool // as written, unescaped tokens joined by \x00
}

func parseRedaction(specs []string) (redaction, error) {
	red := redaction{names: map[string]bool{}, pointers: map[string]bool{}}
	for _, s := range specs {
		switch {
		case s == RedactSecrets:
			red.secrets = true
		case s == "":
			return red, fmt.Errorf("an empty redaction (want a JSON Pointer such as /env/TOKEN, a key name, or %s)", RedactSecrets)
		case strings.HasPrefix(s, "/"):
			toks := strings.Split(s[1:], "/")
			for i, t := range toks {
				for j := 0; j < len(t); j++ {
					if t[j] == '~' && (j+1 >= len(t) || (t[j+1] != '0' && t[j+1] != '1')) {
						return red, fmt.Errorf("bad JSON Pointer %q: ~ must be followed by 0 or 1", s)
					}
				}
				toks[i] = jsonptr.Unescape(t)
			}
			red.pointers[strings.Join(toks, "\x00")] = true
		default:
			red.names[s] = true
		}
	}
	return red, nil
}

// apply returns a deep copy of args with the values to redact replaced,
// the JSON Pointers it replaced (sorted) and the strings it took out.
func (red redaction) apply(args map[string]any) (map[string]any, []string, []string) {
	var ptrs, secrets []string
	var walk func(v any, toks []string, key string, top bool) any
	walk = func(v any, toks []string, key string, top bool) any {
		if !top && (red.pointers[strings.Join(toks, "\x00")] || red.names[key] || (red.secrets && key != "" && redact.SecretKey(key))) {
			ptrs = append(ptrs, pointerOf(toks))
			secrets = append(secrets, leaves(v)...)
			return RedactedValue
		}
		switch t := v.(type) {
		case map[string]any:
			out := make(map[string]any, len(t))
			for k, e := range t {
				out[k] = walk(e, append(append([]string{}, toks...), k), k, false)
			}
			return out
		case []any:
			out := make([]any, len(t))
			for i, e := range t {
				out[i] = walk(e, append(append([]string{}, toks...), strconv.Itoa(i)), "", false)
			}
			return out
		}
		return v
	}
	out, _ := walk(map[string]any(args), nil, "", true).(map[string]any)
	if out == nil {
		out = map[string]any{}
	}
	if red.secrets {
		// By structure and by shape as every output: a value a name beside
		// it hides ({"name": "DB_PASSWORD", "value": …}) whole, the
		// secret-shaped parts of strings as markers.
		var more []string
		out, more = redact.RedactReplacing(out, RedactedValue)
		for _, p := range more {
			if !slices.Contains(ptrs, p) {
				ptrs = append(ptrs, p)
			}
		}
	}
	sort.Strings(ptrs)
	return out, ptrs, secrets
}

// leaves lists the strings and numbers in v, as text.
func leaves(v any) []string {
	switch t := v.(type) {
	case string:
		return []string{t}
	case json.Number:
		return []string{t.String()}
	case float64, int, int64:
		return []string{fmt.Sprint(t)}
	case map[string]any:
		var out []string
		for _, e := range t {
			out = append(out, leaves(e)...)
		}
		return out
	case []any:
		var out []string
		for _, e := range t {
			out = append(out, leaves(e)...)
		}
		return out
	}
	return nil
}

func pointerOf(toks []string) string { return jsonptr.Join(toks...) }

// recordedSession names call's session as the gateway kept it: its caller
// (a proxy's MCP session, serve's HTTP caller) and the session the call
// named, "" when it has neither.
func recordedSession(call decision.Call) string {
	switch {
	case call.Caller != "" && call.Session != "":
		return call.Caller + " " + call.Session
	case call.Session != "":
		return call.Session
	}
	return call.Caller
}
