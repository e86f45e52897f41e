package proxy

import (
	"os"
	"time"
)

// WithClock is opts with the session's clock set: now for the time, after
// for its timers (the relist spacing).
func WithClock(opts Options, now func() time.Time, after func(time.Duration) <-chan time.Time) Options {
	opts.now, opts.after = now, after
	return opts
}

// StdioOf is Stdio over in and out instead of the process's stdin and
// stdout.
func StdioOf(in, out *os.File) Conn { return stdio(in, out) }
