package mcpxpolicy

import (
	"errors"

	"github.com/mcpx/mcpx-policy/internal/approval"
	"github.com/mcpx/mcpx-policy/internal/config"
	"github.com/mcpx/mcpx-policy/internal/pins"
	"github.com/mcpx/mcpx-policy/internal/render"
	"github.com/mcpx/mcpx-policy/internal/statedir"
)

// Errors of the SDK; match them with errors.Is. The three stores of the
// state dir — Writes, Approvals, Pins — share ErrUnreadable, ErrNotFound
// and ErrMismatch; each error's text says which store and what.
var (
	// ErrUnreadable: a store exists but cannot be used — a file that is
	// corrupt, of a newer version, or writable by others; a database that
	// does not answer. It is neither used nor overwritten: writes are
	// denied (LedgerUnreadable), asks cannot complete, calls to servers
	// that pin are refused, until an operator repairs it (Hint says how).
	ErrUnreadable = statedir.ErrUnreadable
	// ErrNotFound: no such unknown-outcome entry (Writes.Clear), approval
	// request (never made, already used — a replay —, or expired and
	// gone) or pin (Pins.Accept).
	ErrNotFound = statedir.ErrNotFound
	// ErrMismatch: what an operation names is in the store but not as
	// said: the sha256 an approver gives is not the request's, a call
	// decided with an approval has other arguments, server, tool or
	// principal, or asks for other reasons, than the call that was asked
	// about; the changed definition Pins.Accept names is not the one
	// waiting (it changed again since).
	ErrMismatch = statedir.ErrMismatch
	// ErrNotAsk: RequestApproval was given a decision that is not an ask.
	ErrNotAsk = render.ErrNotAsk
	// ErrApprovalExpired: the approval request's time ran out.
	ErrApprovalExpired = approval.ErrExpired
	// ErrApprovalPending: nobody has answered the approval request yet.
	ErrApprovalPending = approval.ErrNotApproved
	// ErrApprovalDeclined: the approval request was declined.
	ErrApprovalDeclined = approval.ErrDeclined
	// ErrApprovalsFull: Options.MaxApprovals requests are live already.
	ErrApprovalsFull = approval.ErrFull
	// ErrApprovalTooLarge: the prompt is too large to keep (a call with a
	// huge object among its arguments).
	ErrApprovalTooLarge = approval.ErrTooLarge
	// ErrApprovalRefused is matched, besides the specific error, by every
	// error of DecideApproved that is about the approval itself (not
	// found, expired, mismatched, pending or declined) rather than a
	// failure of the gate: the decision, a deny, says why.
	ErrApprovalRefused = approval.ErrRefused
	// ErrNothingToAccept: the tool's pin is the definition last seen.
	ErrNothingToAccept = pins.ErrNothingPending
)

// Hint says what an operator does about err, when err is about a store
// that cannot be used (ErrUnreadable): a chmod, a chown, moving a file
// aside, using the newer build that wrote it; "" when there is nothing to
// add to err.
func Hint(err error) string {
	var ue *statedir.UnreadableError
	if errors.As(err, &ue) {
		return ue.Hint
	}
	return ""
}

// ConfigError is one problem of a config that does not load: the file and
// line it is at (Line 0 when there is no line), the dotted config path
// ("servers.fs.argumentRules[0].tools[1]") and what is wrong and what is
// allowed. New, Reload, Check, BundleFiles and OpenWrites return every
// problem of a config at once; errors.As finds each *ConfigError.
type ConfigError struct {
	File string
	Line int
	Path string
	Msg  string
}

// Error renders "file:line: path: msg", dropping the parts that are empty.
func (e *ConfigError) Error() string {
	return (&config.ConfigError{File: e.File, Line: e.Line, Path: e.Path, Msg: e.Msg}).Error()
}

// configErrors is config.ConfigErrors as the SDK's *ConfigError values.
type configErrors struct {
	text string
	errs []error
}

func (e *configErrors) Error() string   { return e.text }
func (e *configErrors) Unwrap() []error { return e.errs }

// sdkError turns a config's load errors into *ConfigError values; any
// other error is returned as it is.
func sdkError(err error) error {
	var ces config.ConfigErrors
	if !errors.As(err, &ces) {
		return err
	}
	out := &configErrors{text: err.Error()}
	for _, c := range ces {
		out.errs = append(out.errs, &ConfigError{File: c.File, Line: c.Line, Path: c.Path, Msg: c.Msg})
	}
	return out
}
