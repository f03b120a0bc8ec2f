package emulator

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSystemProperties pins the ids derived from names (clients may keep
// them), and checks that an answered document carries exactly what
// withSystem adds.
func TestSystemProperties(t *testing.T) {
	cases := []struct {
		db, coll, body, pkText, id string
		collRID, self, want        string
	}{
		{"db", "coll", `{"id":"a","pk":"k"}`, `"k"`, "a", "FmP+on3-hPg=", "dbs/FmP+og==/colls/FmP+on3-hPg=/",
			`{"id":"a","pk":"k","_rid":"FmP+on3-hPjhq-77UEzdBA==","_self":"dbs/FmP+og==/colls/FmP+on3-hPg=/docs/FmP+on3-hPjhq-77UEzdBA==/","_attachments":"attachments/"}`},
		{"db", "coll", `{"id":"ü/x"}`, "undefined", "ü/x", "FmP+on3-hPg=", "dbs/FmP+og==/colls/FmP+on3-hPg=/",
			`{"id":"ü/x","_rid":"FmP+on3-hPhGTe5+lUa5Cw==","_self":"dbs/FmP+og==/colls/FmP+on3-hPg=/docs/FmP+on3-hPhGTe5+lUa5Cw==/","_attachments":"attachments/"}`},
		{"bench", "c", `{"id":"a","pk":"k"}`, `"k"`, "a", "dz3XvCh-7rg=", "dbs/dz3XvA==/colls/dz3XvCh-7rg=/",
			`{"id":"a","pk":"k","_rid":"dz3XvCh-7rjhq-77UEzdBA==","_self":"dbs/dz3XvA==/colls/dz3XvCh-7rg=/docs/dz3XvCh-7rjhq-77UEzdBA==/","_attachments":"attachments/"}`},
		{"bench", "c", `{"id":"long","k":"` + strings.Repeat("x", 300) + `"}`, `"` + strings.Repeat("x", 300) + `"`, "long", "dz3XvCh-7rg=", "dbs/dz3XvA==/colls/dz3XvCh-7rg=/", ""},
	}
	var rc refCache
	for _, tc := range cases {
		t.Run(tc.db+"/"+tc.coll+"/"+tc.id, func(t *testing.T) {
			ref := rc.get(tc.db, tc.coll)
			assert.Equal(t, newCollRef(tc.db, tc.coll), ref)
			assert.Equal(t, tc.collRID, ridString(ref.rid))
			assert.Equal(t, tc.self, ref.self)
			got := ref.withSystem([]byte(tc.body), tc.pkText, tc.id, 0)
			if tc.want != "" {
				assert.Equal(t, tc.want, string(got))
			}
			d := digest("doc", tc.pkText, tc.id) // the derivation, written out
			rid := append(append([]byte{}, ref.rid...), d[:8]...)
			rid[15] &^= 0xf0
			assert.Contains(t, string(got), `"_rid":"`+ridString(rid)+`"`)

			w := httptest.NewRecorder()
			c := &call{s: &Server{}, r: httptest.NewRequest(http.MethodGet, "/", nil)}
			c.rw.ResponseWriter = w
			c.w = &c.rw
			c.jsonDocument(http.StatusOK, ref, []byte(tc.body), tc.pkText, tc.id, 0, 1)
			assert.Equal(t, string(got), w.Body.String())
			assert.Equal(t, strconv.Itoa(len(got)), w.Header().Get("Content-Length"))
		})
	}
}

// TestSeqRIDs: the _rids of documents the store places in its read feed
// are their collection's id, then the place, and sort as the places do
// (the cosmos backend resumes a read feed after the last _rid taken);
// their last byte says a document.
func TestSeqRIDs(t *testing.T) {
	ref := newCollRef("db", "coll")
	seqs := []uint64{1, 2, 31, 32, 33, 1023, 1024, 1 << 20, 1<<35 - 1, 1 << 35, 1<<40 - 1, 1 << 40, 1<<45 - 1}
	assert.Equal(t, "FmP+on3-hPgAAAAAAAABAA==", string(appendSeqRID(nil, ref.rid, 1)), "pinned")
	prev := ""
	for _, seq := range seqs {
		text := string(appendSeqRID(nil, ref.rid, seq))
		assert.Greater(t, text, prev, "seq %d", seq)
		prev = text
		b, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(text, "-", "/"))
		require.NoError(t, err, text)
		require.Len(t, b, 16, text)
		assert.Equal(t, ref.rid, b[:8], "the collection's id first: %s", text)
		assert.Zero(t, b[15]&0xf0, "a document: %s", text)
		got := ref.withSystem([]byte(`{"id":"a"}`), "undefined", "a", seq)
		assert.Contains(t, string(got), `"_rid":"`+text+`","_self":"`+ref.self+"docs/"+text+`/"`)
	}
}

// TestReadBody: a body of its Content-Length is read into a buffer of that
// size; a short one is an error; a longer one (a handler called without
// net/http's server) or one without a length is read to its end; past
// maxBody it is http.MaxBytesError.
func TestReadBody(t *testing.T) {
	cases := []struct {
		name   string
		body   string
		length int64
		want   string
		err    string
	}{
		{"exact", `{"id":"a"}`, 10, `{"id":"a"}`, ""},
		{"no length", `{"id":"a"}`, -1, `{"id":"a"}`, ""},
		{"longer than its length", `{"id":"a"}xyz`, 10, `{"id":"a"}xyz`, ""},
		{"shorter than its length", `{"id"`, 10, "", "ended before its Content-Length (10 bytes)"},
		{"empty", ``, 0, ``, ""},
		{"large", strings.Repeat("x", presizeBody+1), presizeBody + 1, strings.Repeat("x", presizeBody+1), ""},
		{"large, shorter than its length", `{}`, presizeBody + 1, `{}`, ""}, // net/http's server refuses it; read as sent
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(tc.body))
			r.ContentLength = tc.length
			got, err := readBody(httptest.NewRecorder(), r)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(got))
		})
	}
	r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(make([]byte, maxBody+1)))
	_, err := readBody(httptest.NewRecorder(), r)
	var tooBig *http.MaxBytesError
	assert.True(t, errors.As(err, &tooBig), "%v", err)
}

// TestParseToken reads the Authorization token's fields, URL-encoded or
// not (a '+' of a token sent plain stays a '+').
func TestParseToken(t *testing.T) {
	cases := []struct {
		raw  string
		want token
	}{
		{"type%3Dmaster%26ver%3D1.0%26sig%3Dab%2Bc%2F%3D", token{"master", "1.0", "ab+c/="}},
		{"type=master&ver=1.0&sig=ab+c/=", token{"master", "1.0", "ab+c/="}},
		{"TYPE=master & Ver=1.0 & sig = x", token{"master", "1.0", "x"}},
		{"type=aad&ver=1.0&sig=eyJ0", token{"aad", "1.0", "eyJ0"}},
		{"sig=x", token{sig: "x"}},
		{"", token{}},
		{"%zz", token{}},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, parseToken(tc.raw), tc.raw)
	}
}

// TestParseDateReuse: the last date parsed is reused, the answer (or the
// error) the same as parsing it again.
func TestParseDateReuse(t *testing.T) {
	s := &Server{}
	for _, text := range []string{"Tue, 25 Nov 2026 08:00:00 GMT", "Tue, 25 Nov 2026 08:00:00 GMT", "not a date", "not a date", "Tue, 25 Nov 2026 08:00:01 GMT"} {
		want, wantErr := http.ParseTime(text)
		got, err := s.parseDate(text)
		assert.Equal(t, wantErr != nil, err != nil, text)
		assert.True(t, want.Equal(got), text)
	}
	assert.Equal(t, time.Date(2026, 11, 25, 8, 0, 1, 0, time.UTC), s.lastDate.Load().when)
}

// TestRefCacheBound: past maxCachedRefs collections, refs are computed
// each time, and still right.
func TestRefCacheBound(t *testing.T) {
	var rc refCache
	for i := range maxCachedRefs + 10 {
		coll := "c" + strconv.Itoa(i)
		require.Equal(t, newCollRef("db", coll), rc.get("db", coll))
	}
	assert.Len(t, rc.refs, maxCachedRefs)
	assert.Equal(t, newCollRef("db", "c4100"), rc.get("db", "c4100"))
}

// TestSignatureLengths: a signature of any length is compared, never
// decoded past its buffer.
func TestSignatureLengths(t *testing.T) {
	s, err := New(nil, nil)
	require.NoError(t, err)
	date := time.Now().UTC().Format(http.TimeFormat)
	good := base64.StdEncoding.EncodeToString(s.signature(nil, http.MethodGet, "dbs", "", date))
	for _, sig := range []string{"", "AAAA", strings.Repeat("A", 44), strings.Repeat("A", 88), strings.Repeat("A", 400), "!!!!"} {
		r := httptest.NewRequest(http.MethodGet, "/dbs", nil)
		r.Header.Set("x-ms-date", date)
		r.Header.Set("Authorization", "type=master&ver=1.0&sig="+sig)
		e := s.authorize(r, "dbs", "")
		require.NotNil(t, e, "%q", sig)
		assert.Equal(t, http.StatusUnauthorized, e.status)
	}
	r := httptest.NewRequest(http.MethodGet, "/dbs", nil)
	r.Header.Set("x-ms-date", date)
	r.Header.Set("Authorization", "type=master&ver=1.0&sig="+url.QueryEscape(good))
	assert.Nil(t, s.authorize(r, "dbs", ""))
}
