package mcpxpolicy

import "github.com/mcpx/mcpx-policy/internal/statedir"

// ReadOperatorFile reads a file an operator trusts the process with — a
// token, a signing key, a claims file — with the checks the state dir's
// files get: a regular file (links followed; a FIFO is never waited on)
// owned by this process's user or by root, that no other user may write.
// With secret, exposed is a warning to print when other users may read it
// (group-readable is fine when root owns it), "" otherwise. At most limit
// bytes: a bigger file is an error. A file that fails a check is an
// *OperatorFileError with a hint; a missing one matches os.ErrNotExist.
// Safe for concurrent use.
func ReadOperatorFile(path string, secret bool, limit int64) (data []byte, exposed string, err error) {
	trust := statedir.Config
	if secret {
		trust = statedir.Secret
	}
	return statedir.ReadTrusted(path, trust, limit)
}

// OperatorFileError is a file ReadOperatorFile refuses (errors.As): Path,
// the cause (Err) and what an operator does about it (Hint).
type OperatorFileError = statedir.Error
