package query

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// constValue runs SELECT VALUE expr and returns its one result, or
// Undefined for none.
func constValue(t *testing.T, expr string) any {
	t.Helper()
	got, err := runValues("SELECT VALUE "+expr, nil, nil)
	require.NoError(t, err, expr)
	if len(got) == 0 {
		return Undefined
	}
	require.Len(t, got, 1)
	return got[0]
}

func TestDateTimeFunctions(t *testing.T) {
	undef := Undefined
	tests := []struct {
		expr string
		want any
	}{
		// DateTimeAdd: Cosmos DB's reference examples.
		{`DateTimeAdd("yyyy", 1, "2020-07-03T00:00:00.0000000")`, "2021-07-03T00:00:00.0000000Z"},
		{`DateTimeAdd("mm", 1, "2020-07-03T00:00:00.0000000")`, "2020-08-03T00:00:00.0000000Z"},
		{`DateTimeAdd("dd", 1, "2020-07-03T00:00:00.0000000")`, "2020-07-04T00:00:00.0000000Z"},
		{`DateTimeAdd("hh", 1, "2020-07-03T00:00:00.0000000")`, "2020-07-03T01:00:00.0000000Z"},
		{`DateTimeAdd("yyyy", -1, "2020-07-03T00:00:00.0000000")`, "2019-07-03T00:00:00.0000000Z"},
		{`DateTimeAdd("mm", -1, "2020-07-03T00:00:00.0000000")`, "2020-06-03T00:00:00.0000000Z"},
		{`DateTimeAdd("dd", -1, "2020-07-03T00:00:00.0000000")`, "2020-07-02T00:00:00.0000000Z"},
		{`DateTimeAdd("hh", -1, "2020-07-03T00:00:00.0000000")`, "2020-07-02T23:00:00.0000000Z"},
		{`DateTimeAdd("ss", 5 * -5, "2020-07-03T00:00:00.0000000")`, "2020-07-02T23:59:35.0000000Z"},
		{`DateTimeAdd("mm", 1, "2020-07-09T23:20:13.4575530Z")`, "2020-08-09T23:20:13.4575530Z"},
		{`DateTimeAdd("month", 1, "2021-01-31T10:00:00Z")`, "2021-02-28T10:00:00.0000000Z"},
		{`DateTimeAdd("yy", 1, "2020-02-29")`, "2021-02-28T00:00:00.0000000Z"},
		{`DateTimeAdd("ms", 1, "2020-01-01T00:00:00Z")`, "2020-01-01T00:00:00.0010000Z"},
		{`DateTimeAdd("mcs", 1, "2020-01-01T00:00:00Z")`, "2020-01-01T00:00:00.0000010Z"},
		{`DateTimeAdd("ns", 100, "2020-01-01T00:00:00Z")`, "2020-01-01T00:00:00.0000001Z"},
		{`DateTimeAdd("MINUTE", 90, "2020-01-01T00:00Z")`, "2020-01-01T01:30:00.0000000Z"},
		{`DateTimeAdd("yyyy", 1, "9999-06-01")`, undef},
		{`DateTimeAdd("dd", -1, "0001-01-01")`, undef},
		{`DateTimeAdd("week", 1, "2020-01-01")`, undef},
		{`DateTimeAdd("dd", "1", "2020-01-01")`, undef},
		{`DateTimeAdd("dd", 1, "2020-13-01")`, undef},
		{`DateTimeAdd("dd", 1, "2021-02-29")`, undef},
		{`DateTimeAdd("dd", 1, "2020-01-01T00:00:00+01:00")`, undef},
		{`DateTimeAdd("dd", 1, 20200101)`, undef},
		{`DateTimeAdd("dd", 1e300, "2020-01-01")`, undef},

		// DateTimeDiff counts the boundaries crossed.
		{`DateTimeDiff("yyyy", "2020-12-31T23:59:59.9999999Z", "2021-01-01T00:00:00Z")`, 1.0},
		{`DateTimeDiff("yyyy", "2021-01-01T00:00:00Z", "2020-12-31T23:59:59Z")`, -1.0},
		{`DateTimeDiff("mm", "2019-01-31", "2019-02-01")`, 1.0},
		{`DateTimeDiff("mm", "2018-03-05T05:00:00", "2019-02-04T16:00:00")`, 11.0},
		{`DateTimeDiff("dd", "2020-01-01T23:00:00Z", "2020-01-02T01:00:00Z")`, 1.0},
		{`DateTimeDiff("hh", "2020-01-01T00:59:00Z", "2020-01-01T01:00:00Z")`, 1.0},
		{`DateTimeDiff("mi", "2020-01-01T00:00:59Z", "2020-01-01T00:01:00Z")`, 1.0},
		{`DateTimeDiff("ss", "2020-01-01T00:00:00.9Z", "2020-01-01T00:00:01Z")`, 1.0},
		{`DateTimeDiff("ms", "2020-01-01T00:00:00Z", "2020-01-01T00:00:01Z")`, 1000.0},
		{`DateTimeDiff("mcs", "2020-01-01T00:00:00Z", "2020-01-01T00:00:00.001Z")`, 1000.0},
		{`DateTimeDiff("ns", "2020-01-01T00:00:00Z", "2020-01-01T00:00:00.0000001Z")`, 100.0},
		{`DateTimeDiff("dd", "1969-12-31T23:00:00Z", "1970-01-01T01:00:00Z")`, 1.0},
		{`DateTimeDiff("yyyy", "2028-01-01T01:02:03.1234527Z", "2020 - 01 - 03T01: 02:03.1234567Z")`, undef},

		// DateTimePart.
		{`DateTimePart("m", "2020-01-02T03:04:05.6789123Z")`, 1.0},
		{`DateTimePart("yyyy", "2020-01-02T03:04:05.6789123Z")`, 2020.0},
		{`DateTimePart("dd", "2020-01-02T03:04:05.6789123Z")`, 2.0},
		{`DateTimePart("hh", "2020-01-02T03:04:05.6789123Z")`, 3.0},
		{`DateTimePart("mi", "2020-01-02T03:04:05.6789123Z")`, 4.0},
		{`DateTimePart("ss", "2020-01-02T03:04:05.6789123Z")`, 5.0},
		{`DateTimePart("ms", "2020-01-02T03:04:05.6789123Z")`, 678.0},
		{`DateTimePart("mcs", "2020-01-02T03:04:05.6789123Z")`, 678912.0},
		{`DateTimePart("ns", "2020-01-02T03:04:05.6789123Z")`, 678912300.0},
		{`DateTimePart("ss", "1969-12-31T23:59:59.5Z")`, 59.0},
		{`DateTimePart("quarter", "2020-01-02")`, undef},

		// DateTimeFromParts: the reference examples.
		{`DateTimeFromParts(2017, 4, 20)`, "2017-04-20T00:00:00.0000000Z"},
		{`DateTimeFromParts(2017, 4, 20, 0, 0, 0, 0)`, "2017-04-20T00:00:00.0000000Z"},
		{`DateTimeFromParts(2017, 4, 20, 13, 15, 20, 3456789)`, "2017-04-20T13:15:20.3456789Z"},
		{`DateTimeFromParts(2017, 4, 20, 13, 15)`, "2017-04-20T13:15:00.0000000Z"},
		{`DateTimeFromParts(-2000, -5, -39)`, undef},
		{`DateTimeFromParts(2021, 2, 29)`, undef},
		{`DateTimeFromParts(2020, 1, 1.5)`, undef},
		{`DateTimeFromParts(2020, 1, 1, 24)`, undef},

		// DateTimeBin: the reference examples.
		{`DateTimeBin("2021-01-08T18:35:00.0000000", "dd")`, "2021-01-08T00:00:00.0000000Z"},
		{`DateTimeBin("2021-01-08T18:35:00.0000000", "hh")`, "2021-01-08T18:00:00.0000000Z"},
		{`DateTimeBin("2021-01-08T18:35:00.0000000", "ss")`, "2021-01-08T18:35:00.0000000Z"},
		{`DateTimeBin("2021-01-08T18:35:00.0000000", "hh", 5)`, "2021-01-08T15:00:00.0000000Z"},
		{`DateTimeBin("2021-01-08T18:35:00.0000000", "dd", 7)`, "2021-01-07T00:00:00.0000000Z"},
		{`DateTimeBin("2021-01-08T18:35:00.0000000", "dd", 7, "1601-01-01T00:00:00.0000000")`, "2021-01-04T00:00:00.0000000Z"},
		{`DateTimeBin("1969-12-31T23:59:00Z", "hh")`, "1969-12-31T23:00:00.0000000Z"},
		{`DateTimeBin("2021-01-08T18:35:00Z", "mm")`, undef},
		{`DateTimeBin("2021-01-08T18:35:00Z", "hh", 0)`, undef},

		// Ticks and timestamps are counted from the Unix epoch.
		{`DateTimeToTicks("2020-01-02T03:04:05Z")`, 15779342450000000.0},
		{`DateTimeToTicks("1970-01-01T00:00:00.0000001Z")`, 1.0},
		{`DateTimeToTimestamp("2020-07-09")`, 1594252800000.0},
		{`DateTimeToTimestamp("2020-07-09T23:20:13.4575530Z")`, 1594336813457.0},
		{`TicksToDateTime(15943368134575530)`, "2020-07-09T23:20:13.4575530Z"},
		{`TicksToDateTime(-1)`, "1969-12-31T23:59:59.9999999Z"},
		{`TicksToDateTime("1")`, undef},
		{`TicksToDateTime(1e30)`, undef},
		{`TimestampToDateTime(1594227912345)`, "2020-07-08T17:05:12.3450000Z"},
		{`TimestampToDateTime(0)`, "1970-01-01T00:00:00.0000000Z"},
		{`TimestampToDateTime(-62135596800001)`, undef},
		{`TimestampToDateTime(-62135596800000)`, "0001-01-01T00:00:00.0000000Z"},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) { assertConst(t, tc.expr, tc.want, 0) })
	}
}

// assertConst checks SELECT VALUE expr against want (Undefined: no
// result); a number within tol relative to it (0: exactly).
func assertConst(t *testing.T, expr string, want any, tol float64) {
	t.Helper()
	got := constValue(t, expr)
	if isUndefined(want) {
		assert.True(t, isUndefined(got), "want undefined, got %v", got)
		return
	}
	if f, ok := want.(float64); ok && tol > 0 {
		g, ok := got.(float64)
		require.True(t, ok, "want a number, got %v", got)
		assert.InDelta(t, f, g, tol*max(f, 1))
		return
	}
	assert.Equal(t, want, got)
}

// TestClockFunctions: every clock function of one query reads one
// instant, and they agree with each other.
func TestClockFunctions(t *testing.T) {
	before := time.Now()
	got := constValue(t, `[GetCurrentDateTime(), GetCurrentDateTimeStatic(), TicksToDateTime(GetCurrentTicks()),
		GetCurrentTicks(), GetCurrentTicksStatic(), DateTimeToTicks(GetCurrentDateTime()),
		GetCurrentTimestamp(), GetCurrentTimestampStatic(), DateTimeToTimestamp(GetCurrentDateTime()),
		(SELECT VALUE GetCurrentDateTime())]`)
	after := time.Now()
	vs := got.([]any)
	require.Len(t, vs, 10)
	assert.Equal(t, vs[0], vs[1])
	// Ticks of today are past 2^53: as a number they keep their last
	// digit only to ±2 ticks, as in Cosmos DB.
	t0, err := time.Parse(time.RFC3339Nano, vs[0].(string))
	require.NoError(t, err)
	t2, err := time.Parse(time.RFC3339Nano, vs[2].(string))
	require.NoError(t, err)
	assert.LessOrEqual(t, max(t0.Sub(t2), t2.Sub(t0)), 200*time.Nanosecond)
	assert.Equal(t, vs[0], vs[9], "a subquery reads the query's instant")
	assert.Equal(t, vs[3], vs[4])
	assert.Equal(t, vs[3], vs[5])
	assert.Equal(t, vs[6], vs[7])
	assert.Equal(t, vs[6], vs[8])
	ts := t0
	assert.Len(t, vs[0].(string), len("2020-01-01T00:00:00.0000000Z"))
	assert.False(t, ts.Before(before.Truncate(100*time.Nanosecond)) || ts.After(after), "%v not in [%v, %v]", ts, before, after)

	// Over many documents, one instant.
	prog, err := Prepare(`SELECT DISTINCT VALUE GetCurrentTicks() FROM c`, nil)
	require.NoError(t, err)
	docs := make([]string, 300)
	for i := range docs {
		docs[i] = `{"id":"x"}`
	}
	out, err := prog.Values(context.Background(), docsOf(t, docs...))
	require.NoError(t, err)
	assert.Len(t, out, 1)

	_, err = Prepare(`SELECT VALUE GetCurrentTicks(1)`, nil)
	require.ErrorIs(t, err, ErrCompile)
}

func TestBindClock(t *testing.T) {
	now := time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC)
	q := mustParse(t, `SELECT c.id, GetCurrentDateTime() AS t FROM c
		WHERE c.ts < GetCurrentTimestamp() AND EXISTS(SELECT VALUE 1 FROM x IN c.a WHERE x < GetCurrentTicksStatic())`)
	require.True(t, readsClock(q))
	require.True(t, bindClock(q, now))
	require.False(t, readsClock(q))
	text := FormatQuery(q)
	assert.Contains(t, text, `"2024-05-06T07:08:09.1234567Z"`)
	ms, err := runValues("SELECT VALUE "+Format(q.Where.(*Binary).L.(*Binary).R), nil, nil)
	require.NoError(t, err)
	assert.Equal(t, []any{1714979289123.0}, ms)
	assert.False(t, strings.Contains(strings.ToUpper(text), "GETCURRENT"), text)

	got, err := runValues(text, nil, []Doc{mustDoc(t, `{"id":"a","ts":1,"a":[1]}`)})
	require.NoError(t, err)
	assert.Equal(t, []any{map[string]any{"id": "a", "t": "2024-05-06T07:08:09.1234567Z"}}, got)

	plain := mustParse(t, `SELECT VALUE DateTimeAdd("dd", 1, c.t) FROM c`)
	assert.False(t, readsClock(plain))
	assert.False(t, bindClock(plain, now))
}
