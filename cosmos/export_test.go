package cosmos

import "github.com/docshard/docshard/internal/cursor"

// ForgetCursors drops the results s keeps for continuation tokens, so the
// next page of a locally evaluated query evaluates it again.
func ForgetCursors(s *Store) {
	s.cursors = cursor.NewSizedCache(s.opts.Cursors, maxCursorBytes, cursor.RowsSize)
}
