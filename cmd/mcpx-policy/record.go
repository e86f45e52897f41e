package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
)

// recordFlags are the --record flags of serve and proxy.
type recordFlags struct {
	dir      *string
	redact   stringList
	maxBytes byteSize
	maxAge   *time.Duration
}

func addRecordFlags(fs *flag.FlagSet) *recordFlags {
	r := &recordFlags{maxBytes: mcpxpolicy.DefaultRecordMaxBytes}
	r.dir = fs.String("record", "", "record every decided call in this directory, for 'mcpx-policy replay'")
	fs.Var(&r.redact, "record-redact", "redact this argument in recorded calls: a JSON Pointer (/env/TOKEN), a key name, or "+mcpxpolicy.RedactSecrets+" (repeatable; default "+mcpxpolicy.RedactSecrets+")")
	fs.Var(&r.maxBytes, "record-max-bytes", "cap on the recorded files together (suffix KiB, MiB or GiB); the oldest go first")
	r.maxAge = fs.Duration("record-max-age", mcpxpolicy.DefaultRecordMaxAge, "how long a recorded call is kept")
	return r
}

// open opens the recorder, nil without --record; its callback records a
// decision, whether it was dispatched and approved, and logs a failure (a
// recording never stops a call).
func (r *recordFlags) open(eng *mcpxpolicy.Engine, logger *slog.Logger) (func(call decision.Call, shown mcpxpolicy.Redacted, dispatched, approved bool), error) {
	if *r.dir == "" {
		if len(r.redact) > 0 {
			return nil, errors.New("--record-redact needs --record DIR")
		}
		return nil, nil
	}
	if *r.maxAge <= 0 {
		return nil, errors.New("--record-max-age must be more than 0")
	}
	var redact []string
	if len(r.redact) > 0 {
		redact = []string{}
		for _, v := range r.redact {
			if v != "@none" {
				redact = append(redact, v)
			}
		}
	}
	rec, err := mcpxpolicy.OpenRecorder(mcpxpolicy.RecorderOptions{Dir: *r.dir, MaxBytes: int64(r.maxBytes), MaxAge: *r.maxAge, Redact: redact})
	if err != nil {
		return nil, err
	}
	logger.Info("recording decided calls", "dir", absPath(*r.dir), "max_bytes", int64(r.maxBytes), "max_age", r.maxAge.String())
	return func(call decision.Call, shown mcpxpolicy.Redacted, dispatched, approved bool) {
		if err := rec.Record(call, shown, eng.Revision(), dispatched, approved); err != nil {
			logger.Warn("a decided call was not recorded", "server", call.Server, "tool", call.Tool.Name, "err", err)
		}
	}, nil
}

// byteSize is a flag of bytes: a number, optionally with KiB, MiB or GiB.
type byteSize int64

func (b *byteSize) String() string { return strconv.FormatInt(int64(*b), 10) }

func (b *byteSize) Set(s string) error {
	mult := int64(1)
	for suffix, m := range map[string]int64{"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30} {
		if strings.HasSuffix(s, suffix) {
			s, mult = strings.TrimSuffix(s, suffix), m
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return fmt.Errorf("want a size in bytes above 0, optionally with KiB, MiB or GiB")
	}
	*b = byteSize(n * mult)
	return nil
}
