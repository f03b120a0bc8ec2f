package cosmos

import "github.com/docshard/docshard/internal/localquery"

// ForgetCursors drops the results s keeps for continuation tokens, so the
// next page of a locally evaluated query evaluates it again.
func ForgetCursors(s *Store) {
	s.cursors = localquery.NewCursors(s.opts.Cursors, maxCursorBytes)
}

// SetWholeQueries turns the use of docshard serve's query extension on or
// off (Open turns it on against serve), so a test or benchmark compares
// queries evaluated here with queries answered whole by the server.
func SetWholeQueries(s *Store, on bool) { s.wholeQueries = on }
