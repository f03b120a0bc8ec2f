package cosmos

import "github.com/docshard/docshard/internal/localquery"

// ForgetCursors drops the results s keeps for continuation tokens, so the
// next page of a locally evaluated query evaluates it again.
func ForgetCursors(s *Store) {
	s.cursors = localquery.NewCursors(s.opts.Cursors, maxCursorBytes)
}
