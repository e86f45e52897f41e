package engine

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"hash"
	"math"
	"slices"
	"sync"
	"weak"
)

// A process reuses the policies it prepared, by a digest of all Prepare
// reads (the modules, the data, the schemas, the revision and the
// options), so preparing an equal policy again — a second Engine on one
// config, a reload that changed nothing, diff or replay comparing a config
// with itself — costs the digest, not a compile: a Prepared is safe for
// concurrent use and its caches never change a decision, so engines may
// share one. Two Prepares of one policy at the same time compile it once.
//
// What it keeps: the digests of the last reuseEntries policies, each with
// a weak pointer to its Prepared (found while an engine still uses it),
// and the last one prepared or found, held, so a process keeps at most one
// compiled policy beyond those its engines use (5½ MiB for a small
// config). Only small policies take part (digested text ≤ reuseMaxBytes:
// the policy's own modules are 128 KiB, bench's M workload of 20 servers
// 400 KiB), so a benchmark of a large config's compile compiles it each
// time. A policy whose data holds a value the digest cannot read exactly
// (a Go type other than JSON's) is never reused.
const (
	reuseEntries  = 8
	reuseMaxBytes = 256 << 10
)

var reused reuseCache

type reuseCache struct {
	mu      sync.Mutex
	entries []*reuseEntry // most recent first
	last    *Prepared
}

type reuseEntry struct {
	key  [sha256.Size]byte
	done chan struct{} // closed once p and err are set
	p    weak.Pointer[Prepared]
	err  error
}

// prepareReusing is prepare, answered from the cache when an equal policy
// was prepared last (or is being prepared now).
func prepareReusing(ctx context.Context, pol Policy, s settings) (*Prepared, error) {
	key, ok := policyDigest(pol, s)
	if !ok {
		return prepare(ctx, pol, s)
	}
	r := &reused
	r.mu.Lock()
	if i := slices.IndexFunc(r.entries, func(e *reuseEntry) bool { return e.key == key }); i >= 0 {
		e := r.entries[i]
		copy(r.entries[1:i+1], r.entries[:i])
		r.entries[0] = e
		r.mu.Unlock()
		select {
		case <-e.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if p := e.p.Value(); e.err == nil && p != nil {
			r.mu.Lock()
			r.last = p
			r.mu.Unlock()
			return p, nil
		}
		// the other Prepare failed (its context ended, say) or its policy
		// is gone: this one compiles, and keeps, its own
		r.mu.Lock()
		r.entries = slices.DeleteFunc(r.entries, func(x *reuseEntry) bool { return x == e })
	}
	e := &reuseEntry{key: key, done: make(chan struct{})}
	r.entries = slices.Insert(r.entries, 0, e)
	if len(r.entries) > reuseEntries {
		clear(r.entries[reuseEntries:])
		r.entries = r.entries[:reuseEntries]
	}
	r.mu.Unlock()
	p, err := prepare(ctx, pol, s)
	if err == nil {
		e.p = weak.Make(p)
	}
	e.err = err
	close(e.done)
	r.mu.Lock()
	if err != nil {
		r.entries = slices.DeleteFunc(r.entries, func(x *reuseEntry) bool { return x == e })
	} else {
		r.last = p
	}
	r.mu.Unlock()
	return p, err
}

// policyDigest is the sha256 of everything prepare reads from p and s, in
// an encoding that keeps each value's Go type and exact bytes (JSON would
// not: it folds invalid UTF-8 and drops the difference between 1 and
// "1"-as-json.Number). ok is false when p holds a value of another type
// or the policy is larger than reuseMaxBytes.
func policyDigest(p Policy, s settings) (key [sha256.Size]byte, ok bool) {
	d := digester{h: sha256.New()}
	d.str(s.query)
	d.bool(s.memoFunctions)
	d.str(p.Revision)
	names := make([]string, 0, len(p.Modules))
	for n := range p.Modules {
		names = append(names, n)
	}
	slices.Sort(names)
	d.len(len(names))
	for _, n := range names {
		d.str(n)
		d.str(p.Modules[n])
	}
	d.value(p.Data)
	d.value(p.Schemas)
	if d.bad || d.n > reuseMaxBytes {
		return key, false
	}
	d.h.Sum(key[:0])
	return key, true
}

// digester writes a typed, length-prefixed encoding of a value into h.
type digester struct {
	h   hash.Hash
	n   int
	bad bool
	buf [9]byte
}

func (d *digester) tag(t byte, n uint64) {
	d.buf[0] = t
	binary.BigEndian.PutUint64(d.buf[1:], n)
	d.h.Write(d.buf[:])
	d.n += len(d.buf)
}

func (d *digester) len(n int) { d.tag('#', uint64(n)) }

func (d *digester) str(s string) {
	d.tag('s', uint64(len(s)))
	d.h.Write([]byte(s))
	d.n += len(s)
}

func (d *digester) bool(b bool) {
	if b {
		d.tag('b', 1)
	} else {
		d.tag('b', 0)
	}
}

func (d *digester) value(v any) {
	if d.bad || d.n > reuseMaxBytes {
		d.bad = true
		return
	}
	switch v := v.(type) {
	case nil:
		d.tag('0', 0)
	case bool:
		d.bool(v)
	case string:
		d.str(v)
	case json.Number:
		d.tag('N', 0)
		d.str(string(v))
	case float64:
		d.tag('f', math.Float64bits(v))
	case int:
		d.tag('i', uint64(v))
	case int64:
		d.tag('I', uint64(v))
	case []any:
		d.tag('[', uint64(len(v)))
		for _, x := range v {
			d.value(x)
		}
	case []string:
		d.tag('S', uint64(len(v)))
		for _, x := range v {
			d.str(x)
		}
	case map[string]any:
		d.tag('{', uint64(len(v)))
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			d.str(k)
			d.value(v[k])
		}
	default:
		d.bad = true
	}
}
